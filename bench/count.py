#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The counted benchmark's report (scripts/count.sh runs this).

Reads a run directory: spans.txt (the tscount plugin's lines "span SEQ
VCPU INSNS KINSNS" and "dump K"), manifest.txt ("CONFIG OP LOOPS SPANS",
one per run of bench/count, in order), and for attribution the profiles
spans.txt.prof.K ("VADDR NINSNS EXECS"), kallsyms.txt, kallsyms-CONFIG.txt
and sections-CONFIG.txt (the module's symbols and sections as loaded).

Per configuration and operation, each span gives instructions per
operation (the span's count less the empty loop's span, over the
operations in it).  What lands in a span besides the operation (a
timer tick, RCU's callbacks) only adds, so for an operation whose path is
fixed (pipe, pipe_thr, sample, mapread) the estimate is the floor: the
least span count that at least FLOOR_REPEATS spans had exactly (many
do).  fork and thread run in spans of one operation: deferred work (a
timer tick, RCU callbacks freeing tasks, exit's) lands in some spans and
only adds, while the path of one fork itself moves by a few tens of
instructions (allocator caches), so that no count repeats reliably:
their estimate is a low quantile of the spans (QUANTILE_OPS), a span
without deferred work in it.  A debugfs read of thousands
of lines never repeats exactly: its estimate is the median.  The spread
is that of the spans' middle half, relative to the estimate.

  count.py --run DIR [--report FILE] [--guard LIMIT] [--ko FILE] [--json FILE]

--ko: the module that ran (default DIR/taskstate.ko, which scripts/count.sh
copies there), for the attribution inside it.
"""
import argparse
import bisect
import json
import os
import statistics
import subprocess
import sys

NAMES = {
    'N': 'not loaded',
    'E': 'loaded, nothing tracked',
    'T': "the benchmark's threads tracked",
    'A': 'every thread tracked (track_all=1)',
    'S': 'A, the benchmark as nobody (a scoped descriptor)',
    'z': 'every thread tracked, totals=0',
    'Q': 'A, state and time under a seqcount (the design the word replaced)',
    'B': 'bpftrace (bench/taskstate.bt)',
    'L': 'libbpf tp_btf (bench/tsbpf)',
    'P': "taskstate's BPF backend (bpf/, taskstate bpf load)",
    'p': 'the BPF backend with --track-all 0, nothing tracked',
}
OPS = {
    'empty': 'the loop alone',
    'pipe': 'pipe round trip, two processes, one CPU',
    'pipe_thr': 'pipe round trip, two threads, one CPU',
    'fork': 'fork + exit + wait',
    'thread': 'pthread create + join',
    'sample': 'one SAMPLE ioctl (1 tid)',
    'mapread': 'one mapped read',
    'debugfs': 'one debugfs read, 1,000+ threads tracked',
}
MEDIAN_OPS = ('debugfs',)
# The quantile of the spans each is estimated by: the least span for fork
# (no shorter path of its was seen, and its whole distribution shifts
# between boots by up to 1%, its least span by 0.3%), the 10% one for
# thread (a rare span some 1,000 instructions shorter than the rest).
QUANTILE_OPS = {'fork': 0.0, 'thread': 0.10}
FLOOR_REPEATS = 3
KERNEL_HALF = 0xffff800000000000


def load_runs(run):
    manifest = []
    with open(os.path.join(run, 'manifest.txt')) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                manifest.append((p[0], p[1], int(p[2]), int(p[3])))
    runs, cur = [], []
    with open(os.path.join(run, 'spans.txt')) as f:
        for line in f:
            p = line.split()
            if p and p[0] == 'span':
                m = tuple(int(x) for x in p[5:8]) if len(p) >= 8 else None
                cur.append((int(p[2]), int(p[3]), int(p[4]), m, None))
            elif p and p[0] == 'lines' and cur:
                # The (instruction, line) pairs of the span just read.
                pairs = None if p[2:3] == ['overflow'] else \
                    [tuple(int(x, 16) for x in w.split(':')) for w in p[2:]]
                cur[-1] = cur[-1][:4] + (pairs,)
            elif p and p[0] == 'dump':
                runs.append((cur, int(p[1])))
                cur = []
    if len(runs) != len(manifest):
        print('count.py: %d runs in the manifest, %d in spans.txt: the '
              'first %d only' % (len(manifest), len(runs),
                                 min(len(runs), len(manifest))),
              file=sys.stderr)
    out = {}
    for (cfg, op, loops, nspans), (spans, dump) in zip(manifest, runs):
        if len(spans) != nspans:
            sys.exit('count.py: %s %s: %d spans, %d expected'
                     % (cfg, op, len(spans), nspans))
        if len(set(s[0] for s in spans)) != 1:
            sys.exit('count.py: %s %s: spans on more than one vCPU' % (cfg, op))
        out[(cfg, op)] = {'spans': [s[1] for s in spans], 'dump': dump,
                          'loops': loops, 'nspans': nspans,
                          'mem': [(s[1], s[3]) for s in spans if s[3]],
                          'pairs': [(s[1], s[4]) for s in spans
                                    if s[4] is not None]}
    return out


def estimates(runs):
    """{(cfg, op): (estimate, spread, median, min, max)} per operation."""
    res = {}
    for (cfg, op), r in runs.items():
        empty = runs.get((cfg, 'empty'))
        base = min(empty['spans']) if empty and op != 'empty' else 0
        per = sorted((s - base) / r['loops'] for s in r['spans'])
        med = statistics.median(per)
        est, at_floor = med, None
        if op in QUANTILE_OPS:
            est = per[int(QUANTILE_OPS[op] * (len(per) - 1))]
        elif op not in MEDIAN_OPS:
            # The floor: the least span count that FLOOR_REPEATS spans
            # had exactly (a rare shorter span is not the operation's).
            counts = {}
            for x in r['spans']:
                counts[x] = counts.get(x, 0) + 1
            floor = [x for x in sorted(counts) if counts[x] >= FLOOR_REPEATS]
            if floor:
                est = (floor[0] - base) / r['loops']
                at_floor = counts[floor[0]]
        n = len(per)
        mid = per[n // 4: n - n // 4] or per
        spread = (mid[-1] - mid[0]) / est if est else 0.0
        res[(cfg, op)] = (est, spread, med, per[0], per[-1], at_floor)
    return res


# ---- attribution ----

class Symbols:
    def __init__(self, path, extra=()):
        syms = []
        for p in [path] + list(extra):
            if not os.path.exists(p):
                continue
            with open(p) as f:
                for line in f:
                    a = line.split()
                    if len(a) >= 3 and a[1] in 'tTwW':
                        v = int(a[0], 16)
                        if v >= KERNEL_HALF:
                            syms.append((v, a[2]))
        syms.sort()
        self.addr = [s[0] for s in syms]
        self.name = [s[1] for s in syms]

    def lookup(self, v):
        i = bisect.bisect_right(self.addr, v) - 1
        return self.name[i] if i >= 0 else '?'


def profile(run, dump):
    prof = {}
    p = os.path.join(run, 'spans.txt.prof.%d' % dump)
    if not os.path.exists(p):
        return prof
    with open(p) as f:
        for line in f:
            a = line.split()
            v, n, e = int(a[0], 16), int(a[1]), int(a[2])
            prof[v] = prof.get(v, 0) + n * e
    return prof


def module_text(run, cfg):
    p = os.path.join(run, 'sections-%s.txt' % cfg)
    secs = {}
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                a = line.split()
                secs[a[0]] = int(a[1], 16)
    return secs


# What part of the hot path an instruction of the module is, from the
# innermost inlined function addr2line names.
PARTS = [
    ('ts_index_', 'lookup (index.h)'),
    ('ts_lookup', 'lookup (index.h)'),
    ('ts_pub_add', 'word store and totals (entry.h)'),
    ('ts_pub_first', 'word store and totals (entry.h)'),
    ('ts_pub_set', 'word store and totals (entry.h)'),
    ('ts_word_', 'word store and totals (entry.h)'),
    ('ts_u64_', 'word store and totals (entry.h)'),
    ('ts_set', 'word store and totals (entry.h)'),
    ('ts_prev_state', 'prev state (probes.c)'),
    ('ts_state_from_linux', 'prev state (probes.c)'),
    ('ts_task_queued', 'prev state (probes.c)'),
    ('ts_task_on_cpu', 'probe body (probes.c)'),
    ('ts_probe_', 'probe body (probes.c)'),
]


def inlined(ko, offsets):
    """{offset: [function, ...]} for .text offsets of the module, the
    innermost inlined function first, through addr2line."""
    if not ko or not os.path.exists(ko) or not offsets:
        return {}
    try:
        o = subprocess.run(['addr2line', '-e', ko, '-j', '.text', '-i',
                            '-f', '-a'] +
                           ['0x%x' % x for x in sorted(offsets)],
                           capture_output=True, text=True,
                           check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {}
    # -a prints each address, then its (function, file:line) pairs.
    res, cur = {}, None
    for line in o:
        if line.startswith('0x'):
            cur = int(line, 16)
            res[cur] = []
        elif cur is not None and not line.startswith('/') and ':' not in line:
            res[cur].append(line)
    return res


def classify_module(ko, offsets):
    """{offset: part} for .text offsets of the module, through addr2line."""
    res = {}
    for off, funcs in inlined(ko, offsets).items():
        res[off] = next((p for fn in funcs for k, p in PARTS
                         if fn.startswith(k)), 'probe body (probes.c)')
    return res


MODULES_START = 0xffffffffc0000000
# What a line the probes touched holds, by the code that touched it: a
# stack operation (push, pop, call, ret or the return thunk's jmp, an
# operand on %rsp) touches the stack; any other access, the first kind
# its inlined functions name; a line in the module area is the module's
# own variables.
LINE_KINDS = [
    (('ts_pub_', 'ts_word_', 'ts_u64_'), 'entry: word and totals (entry.h)'),
    (('ts_index_', 'ts_lookup'), 'index bucket (index.h)'),
    (('ts_task_queued', 'ts_prev_state', 'ts_task_on_cpu'),
     'task_struct: on_rq, on_cpu'),
]
STACK_OPS = ('push', 'pop', 'call', 'ret', 'jmp', 'leave')


def stack_ops(ko):
    """{.text offset} of the module's instructions that touch the stack."""
    try:
        o = subprocess.run(['objdump', '-d', '-j', '.text', ko],
                           capture_output=True, text=True,
                           check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return None
    res = set()
    for line in o:
        p = line.split('\t')
        if len(p) < 3 or not p[0].strip().endswith(':'):
            continue
        insn = p[2].split()
        if insn and (insn[0].startswith(STACK_OPS) or '%rsp' in p[2]):
            res.add(int(p[0].strip()[:-1], 16))
    return res


def lines_touched(run, runs, ko, cfg, op):
    """([(kind, lines)], (least, most)) of the spans that counted the
    floor of (cfg, op): the distinct lines the module-area code of one
    of them touched, by kind, and the least and most lines of them all;
    None without the pairs or the module's symbols."""
    r = runs.get((cfg, op))
    base = module_text(run, cfg).get('.text')
    if not r or not r['pairs'] or base is None or not ko:
        return None
    counts = {}
    for x in r['spans']:
        counts[x] = counts.get(x, 0) + 1
    floor = min((x for x in counts if counts[x] >= FLOOR_REPEATS),
                default=None)
    spans = [p for x, p in r['pairs'] if x == floor and p]
    if not spans:
        return None
    pairs = spans[0]
    offs = {i - base for i, _ in pairs if i >= base}
    funcs, stack = inlined(ko, offs), stack_ops(ko)
    if not funcs or stack is None:
        return None
    kinds_of = {}
    for insn, line in pairs:
        if line >= MODULES_START:
            kind = "the module's own variables (the probes' index geometry)"
        elif insn - base in stack:
            kind = "stack (the probes' frames)"
        else:
            fns = funcs.get(insn - base, [])
            kind = next((k for pre, k in LINE_KINDS for fn in fns
                         if fn.startswith(pre)), 'other')
        kinds_of.setdefault(line, set()).add(kind)
    kinds = {}
    for line, ks in kinds_of.items():
        kind = ' and '.join(sorted(ks))
        kinds[kind] = kinds.get(kind, 0) + 1
    nlines = [len({line for _, line in p}) for p in spans]
    return (sorted(kinds.items(), key=lambda kv: -kv[1]),
            (min(nlines), max(nlines)))


KERNEL_PARTS = [
    (('ktime_get_boot_fast_ns', 'ktime_get_mono_fast_ns', 'read_tsc',
      'bpf_ktime_get_boot_ns'), 'clock read (ktime_get_boot_fast_ns, read_tsc)'),
    (('__x86_indirect_thunk_', '__x86_return_thunk'),
     'indirect-call thunks (the clocksource read; BPF: the program call)'),
    (('__schedule', 'ttwu_do_wakeup', 'wake_up_new_task', 'try_to_wake_up',
      '__traceiter_', '__SCT__tp_func_', '__bpf_trace_'),
     'tracepoint call sites (static key and call in __schedule, ttwu_do_wakeup)'),
    (('bpf_trace_run', 'migrate_disable', 'migrate_enable', '__rcu_read_lock',
      '__rcu_read_unlock', 'trace_call_bpf', 'perf_trace_',
      'perf_swevent_'),
     'BPF dispatch (bpf_trace_run or perf_trace_* and trace_call_bpf, '
     'migrate_disable, RCU)'),
    (('bpf_prog_', 'bpf_', '__bpf', 'htab_', 'array_map_', '__htab',
      'bpf_local_storage', 'jhash', 'alloc_htab_elem', 'lookup_elem_raw',
      'check_and_free_fields', '__copy_map_value', 'pcpu_freelist',
      '__pcpu_freelist'), 'BPF program, helpers and maps'),
]


def attribute(run, runs, ko, base_cfg, cfg, op):
    """Per operation, instructions added in @cfg over @base_cfg, by part."""
    b, c = runs.get((base_cfg, op)), runs.get((cfg, op))
    if not b or not c:
        return None
    pb, pc = profile(run, b['dump']), profile(run, c['dump'])
    if not pb or not pc:
        return None
    nb, nc = b['loops'] * b['nspans'], c['loops'] * c['nspans']
    syms = Symbols(os.path.join(run, 'kallsyms.txt'),
                   [os.path.join(run, 'kallsyms-%s.txt' % cfg)])
    secs = module_text(run, cfg)
    text = secs.get('.text')
    modparts = {}
    if text is not None:
        offs = [v - text for v in pc if 0 <= v - text < (1 << 20)]
        modparts = classify_module(ko, offs)
    parts, bysym = {}, {}

    def add(v, insns, sign):
        if v < KERNEL_HALF:
            part, sym = 'user space', 'user'
        else:
            sym = syms.lookup(v)
            part = None
            if text is not None and v - text in modparts:
                part = modparts[v - text]
            elif text is not None and 0 <= v - text < (1 << 20):
                part = 'module, other'
            else:
                for names, p in KERNEL_PARTS:
                    if any(sym.startswith(n) for n in names):
                        part = p
                        break
            if part is None:
                part = 'rest of the kernel (ticks and other noise)'
        parts[part] = parts.get(part, 0) + sign * insns
        bysym[sym] = bysym.get(sym, 0) + sign * insns

    for v, i in pc.items():
        add(v, i / nc, 1)
    for v, i in pb.items():
        add(v, i / nb, -1)
    return parts, bysym


def fmt(x):
    return '{:,.0f}'.format(x)


def memory(runs, res):
    """Per (cfg, op) of a floor estimate: the module area's accesses,
    stores and distinct lines in the spans that counted the floor."""
    rows = {}
    for key, r in runs.items():
        if not r['mem'] or res[key][5] is None:
            continue
        base = None
        counts = {}
        for x in r['spans']:
            counts[x] = counts.get(x, 0) + 1
        floor = min(x for x in counts if counts[x] >= FLOOR_REPEATS)
        ms = [m for x, m in r['mem'] if x == floor]
        if ms:
            rows[key] = tuple(statistics.median(m[i] for m in ms) / r['loops']
                              for i in range(3))
    return rows


def report(a, runs, res, mem_rows=None):
    cfgs = [c for c in 'NETASzQBLPp' if any(k[0] == c for k in res)]
    ops = [o for o in OPS if any(k[1] == o for k in res) and o != 'empty']
    L = []
    L.append('# Counted cost: guest instructions per operation\n')
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rel = os.path.relpath(os.path.abspath(a.run), top)
    L.append('Command: `%s`. Run directory: `%s`.\n'
             % (a.command, a.run if rel.startswith('..') else rel))
    env = os.path.join(a.run, 'guest-env.txt')
    kv = {}
    if os.path.exists(env):
        with open(env) as f:
            kv = dict(l.rstrip('\n').split('=', 1) for l in f if '=' in l)
        L.append('Guest: %s, command line `%s`.\n' % (
            kv.get('guest_kernel', '?'), kv.get('guest_cmdline', '?')))
    # The plugin's module and kernel address ranges are x86-64's.
    amd64 = not kv.get('guest_kernel', '').endswith('-686')
    L.append('Instructions per operation executed by the benchmark\'s CPU '
             '(the empty loop\'s span subtracted), from %s spans of %s '
             'operations; in parentheses the ratio to "not loaded" and the '
             'instructions added; in square brackets how many spans counted '
             'exactly the floor, or after ± half the relative spread of the '
             'spans\' middle half (quantile and median estimates).\n'
             % ('/'.join(sorted(set(str(r['nspans']) for r in runs.values()))),
                '/'.join(sorted(set(str(r['loops']) for r in runs.values())))))
    L.append('| operation | ' + ' | '.join('%s: %s' % (c, NAMES[c]) for c in cfgs) + ' |')
    L.append('|---' * (len(cfgs) + 1) + '|')
    for op in ops:
        row = [OPS[op]]
        n = res.get(('N', op))
        for c in cfgs:
            r = res.get((c, op))
            if not r:
                row.append('-')
                continue
            s = fmt(r[0])
            if n and c != 'N':
                s += ' (%.3f, %+d)' % (r[0] / n[0], round(r[0] - n[0]))
            if r[5]:
                s += ' [%d]' % r[5]
            else:
                s += ' ±%.2f%%' % (100 * r[1] / 2)
            row.append(s)
        L.append('| ' + ' | '.join(row) + ' |')
    L.append('')
    L.append('Estimate: the floor (least span count that %d spans had '
             'exactly) for fixed-path operations, a low quantile of the '
             'spans for %s, the median for %s.\n'
             % (FLOOR_REPEATS,
                ', '.join('%s (%s)' % (op, 'the least' if q == 0 else
                                       '%d%%' % round(100 * q))
                          for op, q in QUANTILE_OPS.items()),
                ', '.join(MEDIAN_OPS)))
    if not amd64:
        L.append('Where the instructions go and what memory they touch: '
                 'amd64 guests only (the plugin tells kernel, module and '
                 'user addresses apart by x86-64\'s ranges).\n')
        mem_rows = None
    if mem_rows:
        L.append('## Memory accesses of module-area code (modules, BPF JIT '
                 'images), per operation\n')
        L.append('Counted by the plugin (mem=1) in the spans that counted the '
                 'floor: loads and stores made by instructions in the module '
                 'area, and the distinct 64-byte lines they touched, the '
                 'stack included.\n')
        L.append('| configuration | operation | accesses | stores | distinct lines |')
        L.append('|---|---|---|---|---|')
        order = lambda kv: ('NETASzQBLPp'.index(kv[0][0]), list(OPS).index(kv[0][1]))
        for (cfg, op), (acc, st, ln) in sorted(mem_rows.items(), key=order):
            if acc:
                L.append('| %s | %s | %.0f | %.0f | %.0f |'
                         % (NAMES[cfg], OPS[op], acc, st, ln))
        L.append('')
    lt = amd64 and lines_touched(a.run, runs, a.ko, 'A', 'pipe')
    if lt:
        kinds, (least, most) = lt
        L.append('## Lines the module\'s code touched: pipe round trip, A\n')
        L.append('The first span that counted the floor: its distinct '
                 '64-byte lines, by what the code that touched each holds '
                 '(a stack operation: the stack; otherwise the inlined '
                 'function addr2line names; the module\'s own variables by '
                 'address). The spans that counted the floor touched %d to '
                 '%d lines.\n' % (least, most))
        L.append('| line holds | lines |')
        L.append('|---|---|')
        for k, n in kinds:
            L.append('| %s | %d |' % (k, n))
        L.append('| total | %d |' % sum(n for _, n in kinds))
        L.append('')
    # E adds nothing (the probes are detached), T runs A's code.
    for cfg in [c for c in cfgs if c in 'AzBLP' and amd64]:
        att = attribute(a.run, runs, a.ko, 'N', cfg, 'pipe')
        if not att:
            continue
        parts, bysym = att
        L.append('## Where the added instructions go: pipe round trip, %s against not loaded\n' % cfg)
        L.append('From the plugin\'s per-TB profile of all spans, per round '
                 'trip: the spans with a tick or other work in them are in '
                 'it too, so the total differs from the floor\'s by that '
                 'noise, which lands in the last row.\n')
        L.append('| part | added instructions |')
        L.append('|---|---|')
        for p, v in sorted(parts.items(), key=lambda x: -abs(x[1])):
            if abs(v) >= 0.5:
                L.append('| %s | %+.0f |' % (p, v))
        L.append('| total of the profile | %+.0f |' % sum(parts.values()))
        if ('N', 'pipe') in res and (cfg, 'pipe') in res:
            L.append('| floor difference (exact) | %+.0f |'
                     % (res[(cfg, 'pipe')][0] - res[('N', 'pipe')][0]))
        L.append('')
        L.append('By symbol (|added| >= 5):\n')
        L.append('| symbol | added |')
        L.append('|---|---|')
        for s, v in sorted(bysym.items(), key=lambda x: -abs(x[1])):
            if abs(v) >= 5:
                L.append('| %s | %+.0f |' % (s, v))
        L.append('')
    text = '\n'.join(L) + '\n'
    if a.report:
        with open(a.report, 'w') as f:
            f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--run', required=True)
    ap.add_argument('--report')
    ap.add_argument('--ko')
    ap.add_argument('--command', default='scripts/count.sh')
    ap.add_argument('--guard', type=float)
    ap.add_argument('--guard-bpf', type=float)
    ap.add_argument('--guard-idle', type=float)
    ap.add_argument('--json')
    a = ap.parse_args()
    if not a.ko and os.path.exists(os.path.join(a.run, 'taskstate.ko')):
        a.ko = os.path.join(a.run, 'taskstate.ko')
    runs = load_runs(a.run)
    res = estimates(runs)
    mem_rows = memory(runs, res)
    for (cfg, op), (est, spread, med, lo, hi, fl) in sorted(res.items()):
        print('# %s %-9s %10.1f  spread %.4f  median %10.1f  min %10.1f  max %10.1f  at floor %s'
              % (cfg, op, est, spread, med, lo, hi, fl))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'%s.%s' % k: v for k, v in res.items()}, f, indent=1)
    if a.guard is not None:
        rc = 0
        for cfg, limit, what in (('A', a.guard, 'every thread tracked'),
                                 ('P', a.guard_bpf, "the BPF backend's, every thread tracked"),
                                 ('p', a.guard_idle, 'the BPF backend tracking nothing')):
            if limit is None:
                continue
            n = res.get(('N', 'pipe'))
            t = res.get((cfg, 'pipe'))
            if not n or not t:
                print('not ok - counted pinned pipe %s/N: no result' % cfg)
                rc = 1
                continue
            ratio = t[0] / n[0]
            ok = ratio <= limit
            print('%s - counted pinned pipe, %s / not loaded: '
                  '%.4f (%.0f / %.0f instructions per round trip, limit %.3f)'
                  % ('ok' if ok else 'not ok', what, ratio, t[0], n[0], limit))
            rc |= 0 if ok else 1
        return rc
    sys.stdout.write(report(a, runs, res, mem_rows))
    return 0


if __name__ == '__main__':
    sys.exit(main())
