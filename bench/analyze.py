#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw numbers of one scripts/bench.sh run into REPORT.md and a PNG.

  analyze.py --run DIR --out DIR --command CMD [--plot plot.gp]

DIR (the run) holds host/env.txt, host/ubench.{csv,txt} and vm/ (the
guest's guest-env.txt, runs.csv, probe.csv, readers.csv/.txt).  Exits
non-zero if a scenario left no numbers (what `make check` relies on in
quick mode); missed targets are reported, not failures.
"""
import argparse
import csv
import os
import random
import statistics
import subprocess
import sys

CONFIGS = {
    "N": "module not loaded",
    "E": "loaded, track_all=0, nothing tracked",
    "T": "loaded, track_all=0, the benchmark's threads tracked",
    "A": "loaded, track_all=1 (every thread)",
    "B": "bpftrace equivalent (bench/taskstate.bt), no module",
    "a": "scheme a: seqcount pair (TS_WRITE_SCHEME=2), track_all=1",
    "b": "scheme b: xchg (TS_WRITE_SCHEME=1), track_all=1",
    "c": "scheme c: plain store (TS_WRITE_SCHEME=0, the product), track_all=1 = A",
    "z": "scheme c with per-state totals off (totals=0), track_all=1",
}
BENCHES = {
    "pipe_pinned": "perf bench sched pipe, taskset -c 0 (us per round trip)",
    "pipe_2cpu": "perf bench sched pipe, taskset -c 0,1 (us per round trip)",
    "pipe_thr": "perf bench sched pipe -T (two threads of one process), "
                "taskset -c 0 (us per round trip)",
    "hackbench": "hackbench (s per run)",
    "fork_exit": "bench/spawn fork: fork, child _exit, waitpid (us per op)",
    "thread_cj": "bench/spawn thread: pthread_create, join (us per op)",
}
SCHEME_NAMES = {"a": "a seqcount pair (2)", "b": "b xchg (1)",
                "c": "c plain store (0, product)",
                "z": "z = c with totals=0 (no per-state totals)"}

problems = []


def read_env(path):
    env = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k] = v
    except OSError:
        problems.append("missing " + path)
    return env


def read_csv(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        problems.append("missing " + path)
        return []


def med(v):
    return statistics.median(v)


def quartiles(v):
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def boot_ratio(x, n, iters=4000, seed=1):
    """95% bootstrap interval of median(x) / median(n)."""
    if len(x) < 2 or len(n) < 2:
        r = med(x) / med(n)
        return r, r
    rng = random.Random(seed)
    rs = []
    for _ in range(iters):
        bx = [rng.choice(x) for _ in x]
        bn = [rng.choice(n) for _ in n]
        rs.append(med(bx) / med(bn))
    rs.sort()
    return rs[int(0.025 * iters)], rs[int(0.975 * iters) - 1]


def boot_added(t, b, n, iters=4000, seed=2):
    """(median(t) - median(n)) / (median(b) - median(n)), and a 95% interval."""
    def f(tt, bb, nn):
        d = med(bb) - med(nn)
        return (med(tt) - med(nn)) / d if d > 0 else float("nan")
    est = f(t, b, n)
    if min(len(t), len(b), len(n)) < 2:
        return est, est, est
    rng = random.Random(seed)
    rs = []
    for _ in range(iters):
        v = f([rng.choice(t) for _ in t], [rng.choice(b) for _ in b],
              [rng.choice(n) for _ in n])
        if v == v:
            rs.append(v)
    if len(rs) < iters * 0.9:
        return est, float("nan"), float("nan")
    rs.sort()
    return est, rs[int(0.025 * len(rs))], rs[int(0.975 * len(rs)) - 1]


def fmt(x, nd=3):
    if x is None or x != x:
        return "n/a"
    return f"{x:.{nd}f}"


def verdict_le(est, lo, hi, limit):
    """Target 'est <= limit', with a 95% interval [lo, hi]."""
    if est != est:
        return "not measured"
    if hi == hi and hi <= limit:
        return "**met**"
    if lo == lo and lo > limit:
        return "**not met**"
    if est <= limit:
        return "met at the median; not resolved (interval crosses the target)"
    return "not met at the median; not resolved (interval crosses the target)"


MUTEX_LOCKS = ("amutex", "pthread", "adaptive_np", "spin")
MUTEX_LABELS = {
    "amutex": "(a) adaptive mutex, examples/ (spins while the owner RUNS)",
    "pthread": "(b) glibc pthread_mutex, default",
    "adaptive_np": "(c) glibc PTHREAD_MUTEX_ADAPTIVE_NP",
    "spin": "(d) spin lock (test-and-test-and-set, pause)",
}


def read_mutex(path):
    """vm/mutex.csv: the lock rows, then (with --stuck) the stuck rows."""
    locks, stuck, hdr = [], [], None
    try:
        with open(path) as f:
            for line in f:
                cells = line.rstrip("\n").split(",")
                if cells[0] in ("lock", "stuck") and not cells[1][:1].isdigit():
                    hdr = cells
                    continue
                if hdr is None or len(cells) != len(hdr):
                    continue
                (stuck if hdr[0] == "stuck" else locks).append(dict(zip(hdr, cells)))
    except OSError:
        pass
    return locks, stuck


def mutex_section(run, quick, w, targets):
    """Scenario 6: lines through w(), its targets appended to targets."""
    locks, stuck = read_mutex(os.path.join(run, "vm/mutex.csv"))
    w("## 6. The adaptive mutex (examples/) and the stuck detector\n")
    if not locks:
        problems.append("no mutex results (scenario 6)")
        w("not measured\n")
        return
    cases = sorted({(int(r["threads"]), r["cs"]) for r in locks},
                   key=lambda c: (c[0], c[1] != "short"))
    by = {}
    for r in locks:
        by.setdefault((int(r["threads"]), r["cs"], r["lock"]), {})[int(r["rep"])] = r
    mapped = {r["mapped"] for r in locks if r["lock"] == "amutex"}
    w("`bench/mutex.c` in the guest (2 vCPUs), module loaded with "
      "track_all=1.  Each case: T threads loop lock, critical section, "
      "unlock, work outside; both are busy loops calibrated at start: "
      "*short* = 200 ns inside, 1 us outside; *long* = 10 us inside, 20 us "
      "outside.  T = 4 and 8 are 2x and 4x the vCPUs (oversubscribed: "
      "owners are preempted holding the lock).  Acquire latency: "
      "CLOCK_MONOTONIC before lock() to after it, every acquisition.  The "
      "four locks of a case run back to back, in an order rotated by "
      "repetition; throughput is the median over repetitions, p99 the "
      "median of the repetitions' p99s; a ratio is the median over "
      "repetitions of the ratio within the repetition (side by side on "
      "the shared host).  The amutex's waiters read owners through the "
      f"mapping: {'yes' if mapped == {'1'} else 'NO (' + str(mapped) + ')'}; "
      "(a)'s acquisitions after a spin, futex sleeps, and spins cut "
      "short by its 100 us bound: per acquisition.\n")
    if mapped != {"1"}:
        problems.append("mutex: the adaptive mutex ran without the mapping")
    w("| threads | cs | lock | ops/s | p99 acquire (ns) [worst rep] | p50 (ns) | (a)/this ops/s | this/(a) p99 | (a) spun, slept, spin cut |")
    w("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for t, cs in cases:
        reps = sorted(by.get((t, cs, "amutex"), {}))
        for lk in MUTEX_LOCKS:
            d = by.get((t, cs, lk), {})
            if not d:
                problems.append(f"mutex: no {lk} result for T={t} {cs}")
                continue
            ops = med([float(r["ops_per_s"]) for r in d.values()])
            p99 = med([float(r["p99_ns"]) for r in d.values()])
            p99max = max(float(r["p99_ns"]) for r in d.values())
            p50 = med([float(r["p50_ns"]) for r in d.values()])
            a = by.get((t, cs, "amutex"), {})
            rt = [float(a[r]["ops_per_s"]) / float(d[r]["ops_per_s"])
                  for r in reps if r in d and float(d[r]["ops_per_s"]) > 0]
            rp = [float(d[r]["p99_ns"]) / float(a[r]["p99_ns"])
                  for r in reps if r in d and float(a[r]["p99_ns"]) > 0]
            summary[(t, cs, lk)] = (med(rt) if rt else float("nan"),
                                    min(rt) if rt else float("nan"),
                                    max(rt) if rt else float("nan"),
                                    med(rp) if rp else float("nan"))
            extra = ""
            if lk == "amutex":
                extra = (f"{med([float(r['spun_per_op']) for r in d.values()]):.3f}, "
                         f"{med([float(r['sleeps_per_op']) for r in d.values()]):.3f}, "
                         f"{med([float(r.get('spin_limit_per_op', 'nan')) for r in d.values()]):.3f}")
            ratio = "1" if lk == "amutex" else (
                f"{summary[(t, cs, lk)][0]:.2f} [{summary[(t, cs, lk)][1]:.2f}-"
                f"{summary[(t, cs, lk)][2]:.2f}]")
            prat = "1" if lk == "amutex" else f"{summary[(t, cs, lk)][3]:.2f}"
            w(f"| {t} | {cs} | {MUTEX_LABELS[lk]} | {ops:.0f} | {p99:.0f} [{p99max:.0f}] | "
              f"{p50:.0f} | {ratio} | {prat} | {extra} |")
    w("")
    # Targets: (a) at least as fast as the best of (b)-(d) everywhere;
    # clearly (>= 1.10x) ahead of (b) and (c) when oversubscribed 4x.
    for t, cs in cases:
        r = {lk: summary.get((t, cs, lk)) for lk in MUTEX_LOCKS[1:]}
        if None in r.values():
            continue
        best = min(r, key=lambda lk: r[lk][0])
        v = r[best]
        if quick:
            verdict = "not judged (quick mode)"
        elif v[1] >= 1.0:
            verdict = "met"
        elif v[2] < 1.0:
            verdict = "**not met**"
        else:
            verdict = ("not resolved (median " +
                       ("above" if v[0] >= 1.0 else "below") + " 1)")
        targets.append((f"Mutex T={t} {cs}: (a) ops/s >= the best of (b)-(d)",
                        f"(a)/{best} {v[0]:.2f} [{v[1]:.2f}-{v[2]:.2f}]", verdict))
    tmax = max(t for t, _ in cases)
    for t, cs in cases:
        if t != tmax:
            continue
        for lk in ("pthread", "adaptive_np"):
            v = summary.get((t, cs, lk))
            if not v:
                continue
            verdict = ("not judged (quick mode)" if quick else
                       "met" if v[1] >= 1.10 else
                       "**not met**" if v[2] < 1.10 else
                       "not resolved")
            targets.append((f"Mutex T={t} {cs}: (a) >= 1.10x {lk} ops/s "
                            "(oversubscribed)",
                            f"{v[0]:.2f} [{v[1]:.2f}-{v[2]:.2f}]", verdict))
    w("Ratios: median over repetitions [min-max].  Targets: (a) counts as "
      "at least as fast as the best of (b)-(d) when its ratio to that lock "
      "is >= 1 in every repetition, and as clearly ahead of (b) and (c) "
      "when it is >= 1.10 in every repetition at T = 4x the vCPUs.\n")
    if stuck:
        w("**taskstate_stuck_check()** over N located threads, all SLEEPING "
          "(blocked in read()), threshold 100 ms, against one SAMPLE ioctl "
          "for the same tids (taskstate_sample()); best of the repetitions:\n")
        w("| threads | located | reported stuck | ns per thread checked | SAMPLE ioctl, ns per thread |")
        w("|---|---|---|---|---|")
        for r in stuck:
            w(f"| {r['threads']} | {r['located']} | {r['stuck']} | "
              f"{float(r['check_ns_per_thread']):.1f} | "
              f"{float(r['sample_ns_per_thread']):.1f} |")
            if r["located"] != r["threads"] or r["stuck"] != r["threads"]:
                problems.append("stuck: not every thread located and reported")
        w("")
    else:
        problems.append("no stuck-detector result (scenario 6)")
    try:
        with open(os.path.join(run, "vm/mutex.txt")) as f:
            w("The guest's output:\n\n```\n" + f.read().rstrip() + "\n```\n")
    except OSError:
        pass


def write_report(out, L, targets):
    """Write out/REPORT.md from lines L, its problems section last, and
    print the targets and problems; the exit status: 1 if any problem."""
    if problems:
        L.append("## Problems in this run\n")
        L += [f"- {p}" for p in problems]
        L.append("")
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(L))
    for t, m_, v_ in targets:
        print(f"  {t}: {m_}: {v_}")
    for p in problems:
        print("analyze: PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


def mutex_only_report(args, run, out, henv, genv, quick):
    """REPORT.md of scenario 6 alone: targets, machine, the section."""
    targets, body = [], []
    mutex_section(run, quick, body.append, targets)
    if genv.get("clocksource_start") != "tsc":
        problems.append("guest clocksource was not tsc")
    L = [f"# taskstate benchmarks: scenario 6 alone\n",
         f"Generated by `{args.command}` from git `{henv.get('git', '?')}`.  "
         "The full report, with this section as its section 6, is "
         "bench/REPORT.md from `make bench`.\n"]
    if quick:
        L.append("> **QUICK MODE**: these numbers mean nothing.\n")
    L += ["## Targets\n", "| target | measured | verdict |", "|---|---|---|"]
    L += [f"| {t} | {m_} | {v_} |" for t, m_, v_ in targets]
    L += ["", "## Machine\n",
          f"Host: {henv.get('host_cpu', '?')}, {henv.get('host_ncpu', '?')} cores "
          "shared with other engineers' QEMU guests; load average at start "
          f"{henv.get('load_start', '?')}, at end {henv.get('load_end', '?')}; "
          f"other QEMU processes at start {henv.get('qemu_procs_start', '?')}.  "
          f"Guest: {genv.get('guest_kernel', '?')}, {genv.get('guest_ncpu', '?')} vCPUs, "
          f"{henv.get('qemu', '?')} `-accel {henv.get('accel', '?')}`, clocksource "
          f"{genv.get('clocksource_start', '?')}.\n"]
    L += body
    return write_report(out, L, targets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--plot")
    ap.add_argument("--only", choices=["mutex"],
                    help="a run of scenario 6 alone (scripts/bench.sh --only mutex)")
    args = ap.parse_args()
    run, out = args.run, args.out
    os.makedirs(out, exist_ok=True)

    henv = read_env(os.path.join(run, "host/env.txt"))
    genv = read_env(os.path.join(run, "vm/guest-env.txt"))
    if args.only == "mutex":
        return mutex_only_report(args, run, out, henv, genv,
                                 henv.get("quick") == "1")
    runs = read_csv(os.path.join(run, "vm/runs.csv"))
    probe = read_csv(os.path.join(run, "vm/probe.csv"))
    readers = read_csv(os.path.join(run, "vm/readers.csv"))
    ubench = read_csv(os.path.join(run, "host/ubench.csv"))
    native = {}
    for row in read_csv(os.path.join(run, "host/native.csv")):
        if row["value"]:
            native.setdefault(row["bench"], []).append(float(row["value"]))
    hreaders = {row["test"]: float(row["median_ns"])
                for row in read_csv(os.path.join(run, "host/readers.csv"))}
    quick = henv.get("quick") == "1"

    # ---- raw runs: data[bench][config] = {round: value} ----
    # The host's contention log: (time, QEMU processes running).
    mon = []
    try:
        with open(os.path.join(run, "host/monitor.txt")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 2:
                    mon.append((float(p[0]), int(p[1])))
    except (OSError, ValueError):
        pass
    offset = float(genv.get("host_minus_guest_s", "nan"))

    def others_during(t0, t1):
        """Other QEMU processes (ours excluded) seen on the host during
        [t0, t1] of the guest's clock; None if unknown."""
        if not mon or offset != offset or not t0 or not t1:
            return None
        a, b = float(t0) + offset - 0.5, float(t1) + offset + 0.5
        seen = [n for t, n in mon if a <= t <= b]
        return max(seen) - 1 if seen else None

    data, attach, cfg_s, flags, cuts = {}, [], {}, {}, {}
    for row in runs:
        if row["bench"] == "bpftrace_attach_s":
            attach.append(float(row["value"]))
            continue
        if row["bench"] == "config_s":
            cfg_s.setdefault(row["config"], []).append(float(row["value"]))
            continue
        is_cut = row.get("cut") == "1"
        if is_cut:
            cuts.setdefault(row["bench"], {}).setdefault(row["config"], []).append(
                (int(row["round"]), others_during(row.get("t0"), row.get("t1"))))
            continue
        if not row["value"]:
            problems.append(f"no value for {row['bench']} {row['config']} "
                            f"round {row['round']}")
            continue
        # Key: (round, repetition in that round).
        dd = data.setdefault(row["bench"], {}).setdefault(row["config"], {})
        key = (int(row["round"]),
               sum(1 for k in dd if k[0] == int(row["round"])))
        dd[key] = float(row["value"])
        flags.setdefault(row["bench"], {}).setdefault(row["config"], {})[
            key] = (False,
                                  others_during(row.get("t0"), row.get("t1")))
    if "pipe_pinned" in data and "A" in data["pipe_pinned"]:
        data["pipe_pinned"]["c"] = dict(data["pipe_pinned"]["A"])
        flags["pipe_pinned"]["c"] = dict(flags["pipe_pinned"]["A"])
        if "A" in cuts.get("pipe_pinned", {}):
            cuts["pipe_pinned"]["c"] = list(cuts["pipe_pinned"]["A"])
    for bench in BENCHES:
        want = "NETABabcz" if bench == "pipe_pinned" else "NETAB"
        for c in want:
            if c not in data.get(bench, {}):
                problems.append(f"no runs of {bench} under {c}")

    def vals(bench, c, clean=False):
        d = data.get(bench, {}).get(c, {})
        fl = flags.get(bench, {}).get(c, {})
        return [v for r, v in d.items()
                if not clean or fl.get(r, (False, None))[1] == 0]

    def nflag(bench, c, i, pred):
        return sum(1 for f in flags.get(bench, {}).get(c, {}).values()
                   if pred(f[i]))

    def ratio(bench, c, base="N", clean=False):
        x, n = vals(bench, c, clean), vals(bench, base, clean)
        if not x or not n:
            return float("nan"), float("nan"), float("nan")
        lo, hi = boot_ratio(x, n)
        return med(x) / med(n), lo, hi

    def round_ratios(bench, c, base):
        """X(round)/base(same round), each the mean of its runs in that round."""
        d = data.get(bench, {})
        def per_round(x):
            out = {}
            for (r, _), v in d.get(x, {}).items():
                out.setdefault(r, []).append(v)
            return {r: statistics.mean(v) for r, v in out.items()}
        xc, xb = per_round(c), per_round(base)
        return [xc[r] / xb[r] for r in xc if r in xb]

    def paired(bench, c, base="N"):
        rs = round_ratios(bench, c, base)
        if not rs:
            return float("nan"), float("nan"), float("nan")
        q1, q3 = quartiles(rs)
        return med(rs), q1, q3

    def paired_ci(bench, c, base="N", iters=4000, seed=3):
        """Median of the per-round ratios, and a 95% bootstrap interval
        (resampling rounds)."""
        rs = round_ratios(bench, c, base)
        if len(rs) < 2:
            v = rs[0] if rs else float("nan")
            return v, v, v
        rng = random.Random(seed)
        bs = sorted(med([rng.choice(rs) for _ in rs]) for _ in range(iters))
        return med(rs), bs[int(0.025 * iters)], bs[int(0.975 * iters) - 1]

    # ---- probe microbenchmark ----
    pstat = {}
    for row in probe:
        it = int(row["iters"])
        for k in ("empty_ns", "clock_ns", "tracked_ns", "untracked_ns"):
            pstat.setdefault(row["scheme"], {}).setdefault(k, []).append(
                int(row[k]) / it)
    for s in "abcz":
        if s not in pstat:
            problems.append(f"no probe microbenchmark for scheme {s}")

    # ---- readers ----
    rd = {}
    for row in readers:
        key = row["test"] if row["test"] != "sample" else f"sample{row['n']}"
        rd[key] = {k: float(row[k]) for k in
                   ("n", "median_ns", "min_ns", "max_ns", "ns_per_tid",
                    "ratio_to_getppid", "found")}
    rrounds = {}
    for row in read_csv(os.path.join(run, "vm/readers-rounds.csv")):
        key = row["test"] if row["test"] != "sample" else f"sample{row['n']}"
        rrounds.setdefault(key, {})[int(row["round"])] = float(row["ns"])

    def rpaired(a, b, scale=1.0):
        """Median, min, max over rounds of a(round) * scale / b(round)."""
        ra, rb = rrounds.get(a, {}), rrounds.get(b, {})
        v = [ra[r] * scale / rb[r] for r in ra if r in rb]
        return (med(v), min(v), max(v)) if v else (float("nan"),) * 3

    for k in ("getppid", "ioctl_nop", "sample0", "sample1", "sample16",
              "sample256", "sample4096", "proc_orc", "proc_pread",
              "mapped", "map_scan", "list"):
        if k not in rd:
            problems.append(f"no reader result {k}")
    for k, v in rd.items():
        if k.startswith("sample") and k != "sample0" and v["found"] != v["n"]:
            problems.append(f"readers {k}: only {int(v['found'])} of "
                            f"{int(v['n'])} tids found (not tracked?)")
    if not ubench:
        problems.append("no ubench results")
    if genv.get("clocksource_start") != "tsc" or \
       genv.get("clocksource_end") != "tsc":
        problems.append("guest clocksource not tsc throughout: "
                        f"{genv.get('clocksource_start')} -> "
                        f"{genv.get('clocksource_end')}")

    # ---- targets ----
    targets = []
    def clean_note(c, limit):
        x, n = vals("pipe_pinned", c, True), vals("pipe_pinned", "N", True)
        if len(x) < 3 or len(n) < 3:
            return (f"; runs without another guest on the host: too few "
                    f"({len(x)} {c}, {len(n)} N)")
        r = ratio("pipe_pinned", c, clean=True)
        return (f"; only runs without another guest on the host ({len(x)} "
                f"{c}, {len(n)} N): {fmt(r[0])} (CI {fmt(r[1])}-{fmt(r[2])}, "
                f"{verdict_le(*r, limit).replace('**', '')})")

    def paired_note(c, limit):
        p = paired_ci("pipe_pinned", c)
        return (f"; paired within rounds: {fmt(p[0])} (CI {fmt(p[1])}-"
                f"{fmt(p[2])}, {verdict_le(*p, limit).replace('**', '')})")

    # The limits set for the probes' cost.
    for c, what, limit in (("A", "Every thread tracked", 1.05),
                           ("T", "Tracking the benchmark's threads", 1.03),
                           ("E", "Nothing tracked", 1.005)):
        r = ratio("pipe_pinned", c)
        targets.append((f"{what}, pinned pipe: {c}/N <= {limit}",
                        f"{fmt(r[0])} (95% CI {fmt(r[1])}-{fmt(r[2])})"
                        + paired_note(c, limit) + clean_note(c, limit),
                        verdict_le(*r, limit)))
    r = ratio("pipe_thr", "T")
    targets.append(("Tracking the benchmark's threads, two-thread pipe (-T): "
                    "T/N <= 1.03",
                    f"{fmt(r[0])} (95% CI {fmt(r[1])}-{fmt(r[2])})",
                    verdict_le(*r, 1.03)))
    for b, what in (("fork_exit", "fork+exit+wait"),
                    ("thread_cj", "pthread create+join")):
        a_r = ratio(b, "A")
        targets.append((f"Every thread tracked, {what}: A/N <= 1.03",
                        f"{fmt(a_r[0])} (95% CI {fmt(a_r[1])}-{fmt(a_r[2])})",
                        verdict_le(*a_r, 1.03)))
    if all(vals("pipe_pinned", c) for c in "TBN"):
        ad = boot_added(vals("pipe_pinned", "T"), vals("pipe_pinned", "B"),
                        vals("pipe_pinned", "N"))
    else:
        ad = (float("nan"),) * 3
    if all(len(vals("pipe_pinned", c, True)) >= 3 for c in "TBN"):
        adc = boot_added(vals("pipe_pinned", "T", True),
                         vals("pipe_pinned", "B", True),
                         vals("pipe_pinned", "N", True))
        adn = (f"; only runs without another guest on the host: "
               f"{fmt(adc[0], 2)} (CI {fmt(adc[1], 2)} to {fmt(adc[2], 2)})")
    else:
        adn = "; too few runs without another guest on the host to say"
    targets.append(("Module's added cost vs bpftrace's, pinned pipe: "
                    "(T-N)/(B-N) <= 0.25",
                    f"{fmt(ad[0], 2)} (95% CI {fmt(ad[1], 2)} to {fmt(ad[2], 2)})"
                    + adn,
                    verdict_le(*ad, 0.25)))

    def pmed(s, k):
        v = pstat.get(s, {}).get(k)
        return (med(v), min(v), max(v)) if v else (float("nan"),) * 3

    def cmp_no_costlier(x, y):
        """scheme x no costlier than y, per switch (probe body, tracked)."""
        mx, lx, hx = pmed(x, "tracked_ns")
        my, ly, hy = pmed(y, "tracked_ns")
        if mx != mx or my != my:
            return "n/a", "not measured"
        rx, rlo, rhi = ratio("pipe_pinned", x, y)
        meas = (f"probe {fmt(mx, 1)} vs {fmt(my, 1)} ns/switch "
                f"({x}/{y} = {fmt(mx / my, 3)}); pinned pipe {x}/{y} = "
                f"{fmt(rx)} (CI {fmt(rlo)}-{fmt(rhi)})")
        if mx <= my:
            v = "**met**"
        elif lx > hy:
            v = "**not met**"
        else:
            v = "equal within noise (ranges of the loads overlap)"
        return meas, v

    uw = {row["scheme"]: float(row["median"]) for row in ubench
          if row.get("metric") == "write_ns"}
    # kernel scheme -> ubench scheme with the same store
    umap = {"a": "b_seqcount_plain", "b": "d_packed_seqcst",
            "c": "a_packed_relaxed"}

    def host_note(x, y):
        ux, uy = uw.get(umap[x]), uw.get(umap[y])
        if ux is None or uy is None:
            return "", ""
        note = (f"; host ubench write: {x} {ux:.2f} ns vs {y} {uy:.2f} ns "
                f"({x}/{y} = {ux / uy:.2f})")
        hv = ("; on the host's CPU (ubench) " +
              ("also met" if ux <= uy else f"**not met**: {x} costs "
               f"{ux / uy:.1f}x {y} per write"))
        return note, hv

    m, v = cmp_no_costlier("c", "b")
    hn, hv = host_note("c", "b")
    targets.append(("Per switch, (c) plain store no costlier than (b) xchg",
                    m + hn, f"in the guest: {v}{hv}"))
    m, v = cmp_no_costlier("b", "a")
    hn, hv = host_note("b", "a")
    targets.append(("Per switch, (b) xchg no costlier than (a) seqcount pair",
                    m + hn, f"in the guest: {v}{hv}"))
    if all(k in rrounds for k in ("getppid", "sample1", "proc_orc",
                                  "sample256")):
        s1 = rd["sample1"]
        r1, r1b, r1w = rpaired("sample1", "getppid")
        nop = (f"; an ioctl the module rejects at once costs "
               f"{fmt(rpaired('ioctl_nop', 'getppid')[0], 2)}x"
               if "ioctl_nop" in rrounds else "")
        targets.append(("One ioctl sample (1 tid) <= 1.3x getppid()",
                        f"{fmt(r1, 2)}x (rounds {fmt(r1b, 2)}-{fmt(r1w, 2)})"
                        + nop, verdict_le(r1, r1b, r1w, 1.3)))
        ro, rob, row_ = rpaired("proc_orc", "sample1")
        v = ("**met**" if rob >= 20 else "**not met**" if row_ < 20 else
             ("met" if ro >= 20 else "not met") +
             " at the median; not resolved (rounds cross the target)")
        targets.append(("One ioctl sample >= 20x faster than open+read+close "
                        "of /proc/<pid>/task/<tid>/stat",
                        f"{fmt(ro, 1)}x faster (rounds {fmt(rob, 1)}-{fmt(row_, 1)})", v))
        rb, rbb, rbw = rpaired("sample256", "sample1", 1 / 256)
        targets.append(("Per-tid cost in a 256-tid batch <= 0.1x a single sample",
                        f"{fmt(rb, 3)}x (rounds {fmt(rbb, 3)}-{fmt(rbw, 3)}; "
                        f"{fmt(rd['sample256']['ns_per_tid'], 1)} ns/tid vs "
                        f"{fmt(s1['median_ns'], 0)} ns)",
                        verdict_le(rb, rbb, rbw, 0.1)))
        if "mapped" in rrounds:
            rm, rmb, rmw = rpaired("sample1", "mapped")
            v = ("**met**" if rmb >= 50 else "**not met**" if rmw < 50 else
                 ("met" if rm >= 50 else "not met") +
                 " at the median; not resolved (rounds cross the target)")
            g = rpaired("mapped", "getppid")[0]
            targets.append(("A located read through the mapping >= 50x "
                            "cheaper than a 1-tid SAMPLE ioctl",
                            f"{fmt(rm, 0)}x cheaper (rounds {fmt(rmb, 0)}-"
                            f"{fmt(rmw, 0)}; {fmt(rd['mapped']['median_ns'], 1)} ns"
                            f" vs {fmt(s1['median_ns'], 0)} ns; "
                            f"{fmt(g, 3)}x getppid())", v))
        if "map_scan" in rrounds and "list" in rrounds:
            rs = rpaired("map_scan", "list")
            targets.append(("Scan of every tracked thread: mapping vs LIST "
                            "(no target; reported)",
                            f"{fmt(rs[0], 2)}x LIST's time (rounds "
                            f"{fmt(rs[1], 2)}-{fmt(rs[2], 2)}); a scan of "
                            f"every entry (max_threads) found "
                            f"{int(rd['map_scan']['found'])} owned, LIST "
                            f"returned {int(rd['list']['found'])}; "
                            f"{fmt(rd['map_scan']['median_ns'] / 1000, 0)} us"
                            f" vs {fmt(rd['list']['median_ns'] / 1000, 0)} us",
                            "reported"))
    else:
        for t in ("One ioctl sample (1 tid) <= 1.3x getppid()",
                  "One ioctl sample >= 20x faster than /proc stat",
                  "Per-tid cost in a 256-tid batch <= 0.1x a single sample",
                  "A located read through the mapping >= 50x cheaper than "
                  "a 1-tid SAMPLE ioctl"):
            targets.append((t, "n/a", "not measured"))

    # ---- plot data ----
    pdir = os.path.join(run, "plot")
    os.makedirs(pdir, exist_ok=True)
    def nan(x, nd=4):
        return fmt(x, nd) if x == x else "NaN"
    with open(os.path.join(pdir, "pinned.dat"), "w") as f:
        f.write("# config, ratio to N lo hi (95% CI), paired ratio lo hi\n")
        for c in "ETABabc":
            f.write(f"{c} " + " ".join(nan(x) for x in
                                       ratio("pipe_pinned", c) +
                                       paired_ci("pipe_pinned", c)) + "\n")
    with open(os.path.join(pdir, "multi.dat"), "w") as f:
        f.write("# config, then pipe_2cpu and hackbench: ratio lo hi\n")
        for c in "ETAB":
            f.write(f"{c} " + " ".join(nan(x) for b in ("pipe_2cpu", "hackbench")
                                       for x in ratio(b, c)) + "\n")
    with open(os.path.join(pdir, "probe.dat"), "w") as f:
        f.write("# scheme, then per measure: median min max (ns per call)\n")
        for s in "abc":
            cols = []
            for k in ("empty_ns", "clock_ns", "tracked_ns", "untracked_ns"):
                cols += [fmt(x, 3) if x == x else "NaN" for x in pmed(s, k)]
            f.write(s + " " + " ".join(cols) + "\n")
    with open(os.path.join(pdir, "readers.dat"), "w") as f:
        for k, lab in (("getppid", "getppid"), ("ioctl_nop", "ioctl-nop"),
                       ("sample0", "sample-0"), ("sample1", "sample-1"),
                       ("sample16", "sample-16"), ("sample256", "sample-256"),
                       ("sample4096", "sample-4096"),
                       ("proc_pread", "proc-pread"), ("proc_orc", "proc-o+r+c")):
            if k in rd:
                v = rd[k]
                r = v["ratio_to_getppid"]
                per = (f"{r / v['n']:.4f}" if k.startswith("sample")
                       and k != "sample0" else "NaN")
                f.write(f"{lab} {r:.4f} {per}\n")
    png = os.path.join(out, "bench.png")
    if args.plot:
        title = (f"taskstate bench{' (QUICK: numbers meaningless)' if quick else ''}"
                 f" - guest {genv.get('guest_kernel', '?')} under QEMU TCG, "
                 f"clocksource {genv.get('clocksource_start', '?')}; host "
                 f"{henv.get('host_cpu', '?')} x{henv.get('host_ncpu', '?')}")
        try:
            subprocess.run(["gnuplot", "-e", f"datadir='{pdir}'; "
                            f"outfile='{png}'; maintitle='{title}'",
                            args.plot], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            problems.append(f"gnuplot failed: {e}")

    mlines = []
    mutex_section(run, quick, mlines.append, targets)

    # ---- the report ----
    L = []
    w = L.append
    w("# taskstate benchmarks\n")
    if quick:
        w("> **QUICK MODE** (`scripts/bench.sh --quick`): a few iterations of "
          "every scenario so the benchmarks cannot rot. These numbers mean "
          "nothing; the real report is bench/REPORT.md from `make bench`.\n")
    w(f"Generated by `{args.command}` from git `{henv.get('git', '?')}`; "
      f"total runtime {henv.get('total_s', '?')} s (of which the guest, "
      f"boot to power-off, {henv.get('vm_s', '?')} s).  Raw data: `build/{os.path.basename(run)}/` "
      "(not committed); the per-run values are in the appendix.\n")
    w("![chart](bench.png)\n")

    w("## Targets\n")
    w("Context-switch ratios are ratios of medians; their 95% intervals "
      "are bootstrapped (4000 resamples of each configuration's runs).  The "
      "verdict is taken on that ratio of medians; the *paired* figure (the "
      "median over rounds of X/N within the same round, rounds resampled "
      "for its interval) is given beside it because it cancels the slow "
      "swings of the shared host between rounds.  "
      "Reader ratios are medians over rounds of the ratio within a round "
      "(the tests of a round run back to back), with the rounds' extremes.  "
      "A target counts as met or not met only when the whole interval is on "
      "one side of it; otherwise it is *not resolved* by this run and the "
      "median decides the wording.\n")
    if quick:
        targets = [(t, m_, "not judged (quick mode)") for t, m_, _ in targets]
    w("| target | measured | verdict |")
    w("|---|---|---|")
    for t, m_, v_ in targets:
        w(f"| {t} | {m_} | {v_} |")
    w("")

    w("## Machine\n")
    w("| | |")
    w("|---|---|")
    rows = [
        ("host CPU", f"{henv.get('host_cpu', '?')}, {henv.get('host_ncpu', '?')} cores "
         "(shared with other engineers' QEMU guests)"),
        ("host kernel / OS", f"{henv.get('host_kernel', '?')} / {henv.get('host_os', '?')}"),
        ("host load average (1/5/15 min)", f"start {henv.get('load_start', '?')}, "
         f"end {henv.get('load_end', '?')}"),
        ("other QEMU processes on the host", f"at start {henv.get('qemu_procs_start', '?')}, "
         f"at end {henv.get('qemu_procs_end', '?')}"),
        ("emulator", f"{henv.get('qemu', '?')}, `-accel tcg -smp 2 -m {henv.get('mem_mb', '?')}`"),
        ("guest kernel", f"{genv.get('guest_kernel', '?')} (Debian), "
         f"CPU \"{genv.get('guest_cpu', '?')}\" x{genv.get('guest_ncpu', '?')}, "
         f"meltdown: {genv.get('guest_meltdown', '?')}"),
        ("guest command line", f"`{genv.get('guest_cmdline', '?')}`"),
        ("guest clocksource", f"{genv.get('clocksource_start', '?')} at start, "
         f"{genv.get('clocksource_end', '?')} at end (available: "
         f"{genv.get('clocksource_available', '?')})"),
        ("tools", f"{genv.get('perf_version', '?')}; {genv.get('bpftrace_version', '?')}; "
         f"pipe benchmark: {genv.get('pipe_tool', '?')}; {henv.get('gcc', '?')}"),
        ("parameters", f"{henv.get('rounds', '?')} rounds asked, time budget "
         f"{henv.get('budget_s', '?')} s; pinned pipe -l "
         f"{henv.get('pipe_loops', '?')} x{henv.get('pipe_reps', '1')} per block, 2-CPU pipe -l {henv.get('xpipe_loops', '?')}, "
         f"hackbench `{henv.get('hackbench', '?')}`; probe bench_iters="
         f"{henv.get('probe_iters', '?')} x{henv.get('probe_reps', '?')} loads per scheme"),
        ("reproduce", f"`{args.command}` (as root, in the repository; it "
         "runs `scripts/bench.sh`" + (" --quick" if quick else "") +
         " after `make deps`); knobs in the header of scripts/bench.sh" +
         ("" if quick else "; `scripts/bench.sh --quick` is the smoke run "
          "(1-5 minutes, by the host's load) that `make check` can call")),
    ]
    for k, v in rows:
        w(f"| {k} | {v} |")
    w("")
    if genv.get("pipe_tool") and genv.get("pipe_tool") != "perf":
        w("**perf bench sched pipe did not work in the guest: the pipe "
          "numbers come from selftests' ts_pingpong instead.**\n")

    def factor(guest, host):
        return f"{guest / host:.1f}x" if guest and host else "not measured"
    tcg = []
    if vals("pipe_pinned", "N") and native.get("pipe_pinned"):
        tcg.append(f"pinned pipe round trip {med(vals('pipe_pinned', 'N')):.1f} us "
                   f"vs {med(native['pipe_pinned']):.1f} us "
                   f"({factor(med(vals('pipe_pinned', 'N')), med(native['pipe_pinned']))})")
    if "getppid" in rd and "getppid" in hreaders:
        tcg.append(f"getppid() {rd['getppid']['median_ns']:.0f} ns vs "
                   f"{hreaders['getppid']:.0f} ns "
                   f"({factor(rd['getppid']['median_ns'], hreaders['getppid'])})")
    if "proc_orc" in rd and "proc_orc" in hreaders:
        tcg.append(f"open+read+close of /proc stat {rd['proc_orc']['median_ns']:.0f} ns "
                   f"vs {hreaders['proc_orc']:.0f} ns "
                   f"({factor(rd['proc_orc']['median_ns'], hreaders['proc_orc'])})")
    tcg_line = "; ".join(tcg) if tcg else "not measured"
    cl = pmed("c", "clock_ns")[0] - pmed("c", "empty_ns")[0]
    clock_line = (f"{cl:.0f} ns per `ktime_get_boot_fast_ns()` in section 3, "
                  "net of the loop" if cl == cl else "not measured")
    w("## What TCG does to these numbers\n")
    w("""Everything in the guest runs under QEMU's TCG, a dynamic binary
translator, not on a hardware-virtualised CPU.  Relative costs there are
not those of hardware:

- **Syscalls, interrupts, page-table and TLB work are emulated.**  A
  `syscall`/`sysret` pair, `swapgs`, a CR3 write or a TLB flush each go
  through QEMU helpers and flush or refill its software TLB.  Measured in
  this run, guest against host (the host is not necessarily bare metal;
  see its kernel above): """ + tcg_line + """.  A fixed
  per-switch cost in the probe is therefore a *smaller* fraction of a TCG
  context switch than of a real one: the ratios to N here understate the
  relative overhead on hardware.  The absolute probe cost (section 3) is
  the number to carry over, not the ratio; overhead on hardware is
  **not measured**.
- **Clock reads.**  With `clocksource=tsc`, `rdtsc` is emulated by a
  QEMU helper (""" + clock_line + """); under the guest's default HPET
  every kernel clock read would be an emulated MMIO device access and would
  dominate every probe (not measured here: no guest of this run uses HPET).
  That is why every guest here is checked to run on tsc.
- **Atomics and barriers.**  Under multi-threaded TCG a `lock`ed
  instruction or `xchg` is translated to a host atomic operation (often
  through a helper call), plain loads and stores inline; the gap between
  (b) xchg and (c) plain store in the guest is not the gap a real CPU
  shows.  The host
  microbenchmark (section 5) measures that on real hardware.
- **Cross-CPU wakeups.**  A wakeup of an idle vCPU is an emulated IPI
  plus waking a host thread that sits in `hlt`; the host has 2 cores that
  run both vCPUs *and* other engineers' guests, so the 2-CPU pipe is
  dominated by host scheduling and is the noisiest number here.
- **Caches are not modelled.**  TCG does not model the cache misses a
  table lookup or the word store would take on hardware; cache effects of
  the module's table are **not measured** by any guest number here.
- **No hardware-virtualisation numbers**: KVM does not work on this
  machine, so native-like context-switch overhead is **not measured**.
""")

    w("## 1. Context-switch overhead\n")
    w(f"One boot; configurations interleaved in every round (order "
      f"N E T A B a b, rotated by one each round), module loaded and "
      f"unloaded and bpftrace started and stopped between runs.  Ratio = "
      f"median / median of N, 95% bootstrap interval; *paired* = median and "
      f"IQR of the per-round ratio X(round)/N(same round), which removes slow "
      f"drift of the host.  Lower is better.\n")
    for b, desc in BENCHES.items():
        w(f"### {desc}\n")
        w("| config | runs | killed at cap | runs with other guests on the host | median | IQR | min | max "
          "| ratio to N (95% CI) | paired ratio [IQR] | ratio to N, runs without another guest |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for c in "NETAB":
            v = vals(b, c)
            if not v:
                w(f"| {c}: {CONFIGS[c]} | 0 | | | not measured | | | | | | |")
                continue
            q1, q3 = quartiles(v)
            r = ratio(b, c)
            p = paired(b, c)
            nc = len(cuts.get(b, {}).get(c, []))
            no = nflag(b, c, 1, lambda o: o is not None and o > 0)
            nu = nflag(b, c, 1, lambda o: o is None)
            ol = [f[1] for f in flags.get(b, {}).get(c, {}).values()
                  if f[1] is not None]
            mo = f", mean {statistics.mean(ol):.1f} guests" if ol else ""
            cv, cn = vals(b, c, True), vals(b, "N", True)
            if len(cv) >= 3 and len(cn) >= 3:
                rc_ = ratio(b, c, clean=True)
                cl = f"{fmt(rc_[0])} ({fmt(rc_[1])}-{fmt(rc_[2])}), n={len(cv)}"
            else:
                cl = f"too few (n={len(cv)})"
            w(f"| {c}: {CONFIGS[c]} | {len(v)} | {nc} | {no}{mo}{f' ({nu} unknown)' if nu else ''} "
              f"| {fmt(med(v))} | {fmt(q1)}-{fmt(q3)} "
              f"| {fmt(min(v))} | {fmt(max(v))} | {fmt(r[0])} ({fmt(r[1])}-{fmt(r[2])}) "
              f"| {fmt(p[0])} [{fmt(p[1])}-{fmt(p[2])}] | {cl} |")
        if native.get(b):
            hv = native[b]
            w(f"| host, native, no module (not TCG; reference only) | {len(hv)} | | "
              f"| {fmt(med(hv))} | | {fmt(min(hv))} | {fmt(max(hv))} | | | |")
        if all(vals(b, c) for c in "TBN"):
            a2 = boot_added(vals(b, "T"), vals(b, "B"), vals(b, "N"))
            a3 = boot_added(vals(b, "A"), vals(b, "B"), vals(b, "N"))
            w(f"\nAdded cost relative to bpftrace's: (T-N)/(B-N) = {fmt(a2[0], 2)} "
              f"(95% CI {fmt(a2[1], 2)} to {fmt(a2[2], 2)}); (A-N)/(B-N) = "
              f"{fmt(a3[0], 2)} (95% CI {fmt(a3[1], 2)} to {fmt(a3[2], 2)}).\n")
        nv = vals(b, "N")
        if b == "pipe_pinned" and nv and "c" in pstat:
            tr = pmed("c", "tracked_ns")[0]
            ut = pmed("c", "untracked_ns")[0]
            op = med(nv) * 1000
            w(f"What the probe's own cost (section 3) predicts, derived, not "
              f"measured: a pinned pipe round trip is 2 context switches and "
              f"2 wakeups, so at most 4 probe calls.  Tracked, each costs at "
              f"most about a switch probe with two words written "
              f"({tr:.0f} ns): <= {4 * tr:.0f} ns per {op / 1000:.1f} us round "
              f"trip, **+{100 * 4 * tr / op:.2f}%** (T, A).  Nothing tracked, "
              f"each is at most the untracked probe ({ut:.0f} ns, and E returns "
              f"before the lookup): **+{100 * 4 * ut / op:.2f}%** (E).  The "
              f"benchmark's noise (N's spread below) is far larger than "
              f"either, so E/N and T/N above are limited by the host, not by "
              f"the module; a measured excess over these figures that is "
              f"resolved from 1.0 would point at costs outside the probe body "
              f"(the tracepoint call itself, TLB or translation effects under "
              f"TCG): the -T table below compares the same probes without "
              f"switches between processes.\n")
        if b == "pipe_thr" and all(vals(x, c) for x in ("pipe_pinned", b)
                                   for c in "NTA"):
            def added(x, c):
                return med(vals(x, c)) - med(vals(x, "N"))
            w(f"Processes against threads, the same probes and the same 4 "
              f"calls per round trip: the module adds "
              f"{added('pipe_pinned', 'T'):.2f} us (T) and "
              f"{added('pipe_pinned', 'A'):.2f} us (A) per round trip between "
              f"two processes, {added(b, 'T'):.2f} us (T) and "
              f"{added(b, 'A'):.2f} us (A) between two threads (differences "
              f"of medians).  A switch between processes writes CR3, and "
              f"QEMU's x86 emulation empties its whole software TLB on a "
              f"CR3 write, the kernel's global pages included (hardware keeps "
              f"them); after each such switch every page a probe touches (for "
              f"each task: a hash bucket, its slot and its word, three pages; "
              f"the module's data and text) costs a page-table walk in the "
              f"emulator.  Between threads there is no CR3 write.  So the "
              f"pinned pipe's excess over the probe's own cost above is, on "
              f"this evidence, the emulator's TLB model, which hardware "
              f"does not share; on hardware it is **not measured**.  Fewer "
              f"pages per probe call would lower it here.\n")
        if nv:
            q1, q3 = quartiles(nv)
            w(f"Spread of N alone: IQR {fmt(100 * (q3 - q1) / med(nv), 1)}% of "
              f"its median, min-max {fmt(100 * (max(nv) - min(nv)) / med(nv), 1)}%.\n")
    allf = [f for b in flags.values() for c in b.values() for f in c.values()]
    allc = [x for b in cuts.values() for c in b.values() for x in c]
    if allf or allc:
        w(f"Contention: {sum(1 for f in allf if f[1])} of {len(allf)} guest "
          f"runs with a result overlapped at least one other engineer's QEMU "
          f"guest on the host (from the host's log, twice a second; "
          f"{sum(1 for f in allf if f[1] is None)} unknown).  "
          f"{len(allc)} runs were killed at their time cap "
          f"({henv.get('caps_s', '?')} s for pinned pipe, 2-CPU pipe, "
          "hackbench, counting the program's start) and have no value: "
          f"{sum(1 for x in allc if x[1])} of them overlapped another guest.  "
          "Runs "
          "that need both vCPUs (2-CPU pipe, hackbench) slow down by up to "
          "10x when another guest competes for the 2 host cores: those two "
          "benchmarks measure the host's scheduler more than the module.\n")
    nrounds = len({k[0] for b in data.values() for c in b.values() for k in c})
    w(f"Rounds completed: {nrounds} of {henv.get('rounds', '?')} asked "
      f"(budget {henv.get('budget_s', '?')} s for the rounds).  Wall time "
      "per configuration block, median s: " +
      ", ".join(f"{c} {med(v):.0f}" for c, v in sorted(cfg_s.items())) + ".\n")
    if attach:
        w(f"bpftrace took {min(attach):.0f}-{max(attach):.0f} s (median "
          f"{med(attach):.0f} s) to attach in each B block; it attaches 5 "
          "probes: sched_switch, sched_wakeup, sched_wakeup_new (map "
          "updates) and sched_process_free (delete), the same events the "
          "module hooks.  bpftrace tracks *every* thread, so its cost "
          "compares with A as much as with T; both ratios are above.\n")

    w("## 2. Write schemes in the kernel\n")
    w("The pinned pipe with three builds of the module, each with "
      "track_all=1, interleaved with the rest in the same boot. (c) is the "
      "product's store and the same runs as A; (z) is (c) loaded with "
      "totals=0, without the per-state totals.  The per-switch probe cost "
      "of each build is in section 3.\n")
    w("| scheme | runs | median us/op | ratio to N (95% CI) | ratio to c (95% CI) | ratio to b (95% CI) |")
    w("|---|---|---|---|---|---|")
    for s in "abcz":
        v = vals("pipe_pinned", s)
        if not v:
            w(f"| {SCHEME_NAMES[s]} | 0 | not measured | | | |")
            continue
        rn, rc, rb = (ratio("pipe_pinned", s, base) for base in "Ncb")
        w(f"| {SCHEME_NAMES[s]} | {len(v)} | {fmt(med(v))} | {fmt(rn[0])} "
          f"({fmt(rn[1])}-{fmt(rn[2])}) | {fmt(rc[0])} ({fmt(rc[1])}-{fmt(rc[2])}) "
          f"| {fmt(rb[0])} ({fmt(rb[1])}-{fmt(rb[2])}) |")
    w("")

    w("## 3. The probe's own cost\n")
    w(f"The TS_BENCH builds time, at load with preemption off, bench_iters "
      f"calls of each (module parameter bench_ns): an empty loop, a clock "
      f"read (`ktime_get_boot_fast_ns()`), the sched_switch probe body with "
      f"prev and next tracked (two words written) and with neither tracked "
      f"(the lookup misses).  ns per call, including the loop (the empty "
      f"loop's cost); median over {henv.get('probe_reps', '?')} loads per "
      f"scheme, [min-max].  Clocksource: {genv.get('clocksource_start', '?')}."
      f"\n")
    w("| scheme | empty loop | clock read | probe, tracked | probe, untracked | tracked minus clock |")
    w("|---|---|---|---|---|---|")
    for s in "abcz":
        if s not in pstat:
            w(f"| {SCHEME_NAMES[s]} | not measured | | | | |")
            continue
        cells = []
        for k in ("empty_ns", "clock_ns", "tracked_ns", "untracked_ns"):
            m0, lo, hi = pmed(s, k)
            cells.append(f"{fmt(m0, 1)} [{fmt(lo, 1)}-{fmt(hi, 1)}]")
        net = pmed(s, "tracked_ns")[0] - pmed(s, "clock_ns")[0]
        w(f"| {SCHEME_NAMES[s]} | " + " | ".join(cells) + f" | {fmt(net, 1)} |")
    w("""
Under TCG with tsc the clock read is one emulated `rdtsc` and is the
largest single part of the tracked probe.  With the guest's default HPET
each read would be an emulated device access instead (not measured here);
that is why the guests are booted with `tsc=reliable clocksource=tsc`, and
the run fails if the clocksource is anything else.
Per-state totals: every build keeps them by default; z is the
product's build loaded with totals=0, so c against z (here and in section
2) is what the totals cost: per changed word, one more 8-byte load and
store in the entry's cache line (and on arm64 two store barriers).
The seqcount build (a) has no snapshot at load, so its words start at NONE;
the loop writes both words every call in every build (prev becomes
RUNNABLE, next RUNNING, the same task), so all three do the same stores.
""")

    w("## 4. Readers\n")
    w("`bench/readers.c` in the guest, module loaded with track_all=1, "
      "extra sleeping threads with 16 KiB stacks (4096 in a quick run, "
      "10,000 in a full one, so that the scans see a 10,000-thread table); "
      "each test timed with "
      "CLOCK_MONOTONIC over ~10 ms rounds (2 ms in quick mode), the "
      "tests interleaved round by round; ns per call: median over rounds "
      "[min-max]; ratio to getppid: median over rounds of the ratio to "
      "getppid's time in the same round.\n")
    w("| test | tids per call | ns per call | ns per tid | ratio to getppid | tids found | host ns per call (no module) |")
    w("|---|---|---|---|---|---|---|")
    labels = {"getppid": "getppid() (null syscall)",
              "ioctl_nop": "ioctl the module rejects (-ENOTTY): syscall, fd, LSM, dispatch",
              "sample0": "TASKSTATE_IOC_SAMPLE, count 0: + argument copy in/out",
              "proc_orc": "open+read+close /proc/<pid>/task/<tid>/stat",
              "proc_pread": "pread() of a held /proc/.../stat fd",
              "mapped": "ts_map_read() of a located thread: no syscall",
              "map_scan": "scan of the whole mapping (ts_map_entry() each)",
              "list": "TASKSTATE_IOC_LIST of every tracked thread"}
    for k in ("getppid", "ioctl_nop", "sample0", "sample1", "sample16",
              "sample256", "sample4096", "proc_pread", "proc_orc",
              "mapped", "map_scan", "list"):
        if k not in rd:
            w(f"| {k} | | not measured | | | | |")
            continue
        v = rd[k]
        lab = labels.get(k, f"ts_sample(), one TASKSTATE_IOC_SAMPLE")
        is_s = (k.startswith("sample") and k != "sample0") or k in (
            "mapped", "map_scan", "list")
        found = int(v["found"]) if v["found"] >= 0 and is_s else "-"
        n_ = int(v['n']) if is_s else "-"
        per = fmt(v['ns_per_tid'], 1) if is_s else "-"
        w(f"| {lab} | {n_} | {fmt(v['median_ns'], 0)} "
          f"[{fmt(v['min_ns'], 0)}-{fmt(v['max_ns'], 0)}] | {per} "
          f"| {fmt(v['ratio_to_getppid'], 2)} | {found} "
          f"| {fmt(hreaders[k], 0) if k in hreaders else '-'} |")
    if all(k in rd for k in ("getppid", "ioctl_nop", "sample0", "sample1",
                             "sample256")):
        g, nop, s0, s1 = (rd[k]["median_ns"] for k in
                          ("getppid", "ioctl_nop", "sample0", "sample1"))
        w(f"""
Where a 1-tid sample's {s1:.0f} ns go (differences of medians): the
null syscall {g:.0f} ns; the ioctl path up to the module's switch (fd
lookup, LSM hook, vfs_ioctl, the indirect call) +{nop - g:.0f} ns; the
argument struct in and out (get_user, copy_struct_from_user,
copy_to_user) +{s0 - nop:.0f} ns; one entry copied in and out and looked
up (find_pid_ns, pid_task, the table's hash, task_tgid_nr_ns) +{s1 - s0:.0f} ns.
In a 256-tid batch each further tid costs
{(rd['sample256']['median_ns'] - s0) / 256:.0f} ns.  So an ioctl-based
reader cannot reach 1.3x getppid() on this guest whatever the module does
after its switch: the bare ioctl is already {rd['ioctl_nop']['ratio_to_getppid']:.2f}x
(median of the per-round ratios, as in the targets).  Under TCG
every kernel instruction is translated code, and the syscall entry and exit
are emulated; on hardware the ratios would differ (not measured).
""")

    w("## 5. Host user-space microbenchmark (bench/ubench, native)\n")
    w("Run on the host, not in a guest.  Note its letters are its own: "
      "ubench's (a) is the packed word with a plain store (the kernel "
      "scenario's c), its (d) the xchg store (kernel b), its (b)/(c) "
      "seqcount writers (the kernel's scheme a, raw_write_seqcount_begin/"
      "end, is its (b): plain increments and smp_wmb).  Ratios to its (a).  "
      "Single-thread costs include the loop; *contended* has a writer on "
      "one CPU and a reader checking every value on the other; torn reads "
      "must be 0 except in the negative control (e).\n")
    if ubench:
        keep = ("write_ns", "read_ns", "contended_read_ns_p50",
                "contended_retries_per_read", "contended_writes_per_s",
                "contended_torn_reads")
        w("| scheme | metric | median | min | max | unit | ratio to (a) |")
        w("|---|---|---|---|---|---|---|")

        def g(x):
            try:
                return f"{float(x):.4g}"
            except ValueError:
                return x
        for row in ubench:
            if row["scheme"] == "env" or row["metric"] not in keep:
                continue
            w(f"| {row['scheme']} | {row['metric']} | {g(row['median'])} | {g(row['lo'])} "
              f"| {g(row['hi'])} | {row['unit']} | {g(row['ratio_to_a'])} |")
        w("")
        w("The full output (all metrics are in the CSV, "
          f"`build/{os.path.basename(run)}/host/ubench.csv`):\n")
        try:
            with open(os.path.join(run, "host/ubench.txt")) as f:
                w("```\n" + f.read().rstrip() + "\n```\n")
        except OSError:
            pass
    else:
        w("not measured\n")

    w("## 5b. Host table microbenchmark (bench/tbench, native)\n")
    w("The sched_switch probe's memory work, compiled in user space: find "
      "both tasks' entries and store their words and totals, the chained "
      "layout kept in bench/tbench.c for comparison (*old*: bucket head, chain "
      "node, entry) against module/index.h (*new*: one bucket, the entry).  "
      "*warm*: two tasks switching; *cold*: random pairs of the N tracked "
      "tasks; *miss*: random untracked tasks.  *lines*: module cache lines "
      "a tracked task's lookup and store read, counted, not timed.  "
      "Side by side in one run, rounds interleaved; median [min-max].\n")
    try:
        with open(os.path.join(run, "host/tbench.txt")) as f:
            w("```\n" + f.read().rstrip() + "\n```\n")
    except OSError:
        w("not measured\n")

    L.extend(mlines)

    w("## Appendix: every run\n")
    for b in BENCHES:
        d = data.get(b, {})
        rounds = sorted({k[0] for c in d.values() for k in c})
        if not rounds:
            continue
        w(f"### {b}\n")
        w("| config | " + " | ".join(f"r{r}" for r in rounds) + " |")
        w("|---|" + "---|" * len(rounds))
        for c in "NETABab":
            if c in d:
                cells = []
                for r in rounds:
                    ks = sorted(k for k in d[c] if k[0] == r)
                    cells.append(" / ".join(
                        fmt(d[c][k], 2) + ("*" if flags.get(b, {}).get(c, {}).get(
                            k, (False, None))[1] else "") for k in ks))
                w(f"| {c} | " + " | ".join(cells) + " |")
        w("")
        kc = {c: [x[0] for x in v] for c, v in cuts.get(b, {}).items()}
        w("*: another QEMU guest ran on the host during the run.  Killed at "
          "the cap (no value): " + (", ".join(
              f"{c} in round {', '.join(map(str, v))}" for c, v in
              sorted(kc.items())) if kc else "none") + ".\n")
    if probe:
        w("### probe microbenchmark (bench_ns, total ns for bench_iters calls)\n")
        w("| scheme | load | iters | empty | clock | tracked | untracked |")
        w("|---|---|---|---|---|---|---|")
        for row in probe:
            w(f"| {row['scheme']} | {row['rep']} | {row['iters']} | {row['empty_ns']} "
              f"| {row['clock_ns']} | {row['tracked_ns']} | {row['untracked_ns']} |")
        w("")
    return write_report(out, L, targets)


if __name__ == "__main__":
    sys.exit(main())
