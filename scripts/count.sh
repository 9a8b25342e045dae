#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The counted benchmark: guest instructions per operation, counted by a
# TCG plugin (bench/tscount.c) in one boot of Debian 6.1 amd64, under
# each configuration of the module.  Where timing is noisy, the count of
# a span is not: a pipe round trip counts the same, to the instruction,
# from run to run, whatever the host's load (docs/performance.md).
#
#   scripts/count.sh [--quick] [--guard] [--686] [--out DIR]
#                    [--configs "N E T A S z Q B L P p"] [--ops "pipe pipe_thr ..."]
#                    [--report FILE]
#
# What runs, inside one boot (bench/count-guest.sh): for each
# configuration in turn, bench/count (the driver) runs each operation in
# marked spans, pinned to CPU 1, which the kernel command line isolates
# (isolcpus=1 irqaffinity=0: no unbound kernel work, no device interrupts
# there); the guest turns the scheduler's WAKEUP_PREEMPTION off, ASLR
# off, and waits for its random number generator (count-guest.sh says
# why).
#
#   N  module not loaded
#   E  loaded (track_all=0), nothing tracked
#   T  loaded (track_all=0), the benchmark's process tracked
#   A  loaded with track_all=1: every thread tracked
#   S  A, with the benchmark run as nobody: its descriptor scoped, its
#      mapping its own pages (pipe, sample, mapread)
#   z  A with totals=0
#   Q  A with the design the packed word replaced: state and time as two
#      fields under a seqcount (bench/kmod/word.h scheme 2, the module
#      built with TS_WRITE_SCHEME=2; no mapping: pipe, pipe_thr, fork,
#      thread, sample)
#   B  bench/taskstate.bt under bpftrace, no module
#   L  bench/tsbpf.bpf.c: the libbpf equivalent (tp_btf programs, task
#      storage: word and totals of every thread), no module
#   P  taskstate's BPF backend (bpf/, `taskstate bpf load`): every thread
#      tracked, no module; sample and mapread through the library's
#      backend (user space: no ioctl)
#   p  the BPF backend loaded with --track-all 0, nothing tracked
#
# Operations: empty (the loop alone), pipe (round trip between two
# processes), pipe_thr (between two threads), fork (fork+exit+wait),
# thread (pthread create+join), sample (one SAMPLE ioctl), mapread (one
# mapped read), debugfs (one read of the debugfs file, 1,000 threads
# more tracked); the last three only where the module tracks the caller.
#
# Results in $out (default build/count-run): spans.txt (the plugin's),
# manifest.txt (which spans belong to which run), the profiles, and
# REPORT.md (bench/count.py), whose tables docs/performance.md quotes.
# --686: the Debian 6.1 686 guest instead (qemu-system-i386, the same
# plugin): the driver built static for i386, the guest side
# bench/count-guest-686.sh in its busybox initramfs; configurations N E A
# z Q (default N A Q), operations empty pipe pipe_thr (default empty
# pipe).
# --guard: only N, A, P and p, the pinned pipe, and three TAP lines: A/N
# against COUNT_GUARD_LIMIT (default 1.051, where 1.0486 is measured: 30
# instructions more a round trip, 8 a probe call, fail it); P/N, the BPF
# backend's, against COUNT_GUARD_BPF_LIMIT (default 1.13); p/N, the BPF
# backend tracking nothing, against COUNT_GUARD_IDLE_LIMIT (default 1.01).
# scripts/check.sh runs this.
#
# Knobs: COUNT_SPANS (spans of one operation, for the short operations),
# COUNT_LONG ("LOOPS SPANS" for fork and thread; their estimate is the
# 10% quantile of spans of one operation, bench/count.py says why), COUNT_DEBUGFS (the same
# for debugfs), COUNT_TIMEOUT (s), COUNT_COMMAND (the command the report
# names), COUNT_MEM (default 1: the plugin also counts the loads and
# stores of module-area code and the distinct lines they touch; 0: not;
# the instruction counts are the same either way),
# COUNT_GUARD_LIMIT, COUNT_APPEND (more kernel command line).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
out=$build/count-run
configs="N E T A S z Q B L P p"
ops="empty pipe pipe_thr fork thread sample mapread debugfs"
guard=0 quick=0 report='' i686=0 asked_configs='' asked_ops=''
cmd_args="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--guard) guard=1 ;;
	--out) out=$2; shift ;;
	--686) i686=1 ;;
	--configs) configs=$2; asked_configs=1; shift ;;
	--ops) ops=$2; asked_ops=1; shift ;;
	--report) report=$2; shift ;;
	-h|--help) sed -n '4,/^set -euo/{/^set -euo/d;p}' "$0"; exit 0 ;;
	*) echo "count: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
if [ $guard = 1 ]; then
	configs="N A P p" ops="empty pipe"
	out=$build/count-guard
fi
if [ $i686 = 1 ]; then
	[ -n "$asked_configs" ] || configs="N A Q"
	[ -n "$asked_ops" ] || ops="empty pipe"
	out=$build/count-run-686
fi
if [ $quick = 1 ]; then
	: "${COUNT_SPANS:=60}" "${COUNT_LONG:=1 60}" "${COUNT_DEBUGFS:=1 5}"
fi
: "${COUNT_SPANS:=400}" "${COUNT_LONG:=1 400}" "${COUNT_DEBUGFS:=1 30}"
: "${COUNT_TIMEOUT:=1500}" "${COUNT_MEM:=1}"
: "${COUNT_GUARD_LIMIT:=1.051}" "${COUNT_GUARD_BPF_LIMIT:=1.13}"
: "${COUNT_GUARD_IDLE_LIMIT:=1.01}"
bin=$build/count-bin
ko=$build/count-ko
if [ $guard = 1 ]; then
	bin=$build/count-guard-bin
	ko=$build/count-guard-ko
fi
log() { echo "# count: $(date +%T) $*"; }

kver=$("$top/scripts/kernels.sh" amd64)
[ $i686 = 0 ] || { kver=$("$top/scripts/kernels.sh" 686); bin=$bin-686 ko=$ko-686; }
log "building the module for $kver, the tools, the driver and the plugin"
"$top/scripts/build-module.sh" "$kver" "$ko" 2>&1 | { grep -v 'Skipping BTF' || true; }
[ -f "$ko/taskstate.ko" ] || { echo "count: module build failed" >&2; exit 1; }
if [ $i686 = 1 ]; then
	# The plugin for the host's QEMU; the driver static, for busybox.
	make -s -C "$top/bench" O="$bin" tscount
	make -s -C "$top/tools" O="$bin/i386" CC=i686-linux-gnu-gcc \
		EXTRA_LDFLAGS=-static all
	make -s -C "$top/bench" O="$bin/i386" CC=i686-linux-gnu-gcc \
		EXTRA_LDFLAGS=-static count
else
	make -s -C "$top/tools" O="$bin" all
	make -s -C "$top/bench" O="$bin" count tscount
fi
case " $configs " in *" L "*) make -s -C "$top/bench" O="$bin" tsbpf ;; esac
case " $configs " in *" P "*|*" p "*) make -s -C "$top/bpf" O="$bin" ;; esac
case " $configs " in *" Q "*)
	log "building the seqcount scheme's module (Q)"
	TS_KBUILD_ARGS="TS_WRITE_SCHEME=2" "$top/scripts/build-module.sh" \
		"$kver" "$ko-seq" 2>&1 | { grep -v 'Skipping BTF' || true; }
	[ -f "$ko-seq/taskstate.ko" ] ||
		{ echo "count: seqcount module build failed" >&2; exit 1; }
	;;
esac

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
guest=$out/../count-guest-$$.sh
if [ $i686 = 1 ]; then
	# The busybox guest runs what is in $out (/results there).
	cp "$bin/i386/count" "$ko/taskstate.ko" \
		"$top/bench/count-guest-setup.sh" "$out/"
	case " $configs " in *" Q "*) mkdir "$out/seq" && cp "$ko-seq/taskstate.ko" "$out/seq/" ;; esac
	{
		echo "export COUNT_CONFIGS=\"$configs\" COUNT_OPS=\"$ops\" COUNT_SPANS=$COUNT_SPANS"
		cat "$top/bench/count-guest-686.sh"
	} > "$guest"
else
cat > "$guest" <<EOF
export COUNT_BIN=$bin COUNT_KO=$ko/taskstate.ko COUNT_BT=$top/bench/taskstate.bt
export COUNT_KO_SEQ=$ko-seq/taskstate.ko
export COUNT_CONFIGS="$configs" COUNT_OPS="$ops"
export COUNT_SPANS=$COUNT_SPANS COUNT_LONG="$COUNT_LONG" COUNT_DEBUGFS="$COUNT_DEBUGFS"
exec bash $top/bench/count-guest.sh
EOF
fi
log "booting $kver with the plugin (progress: $out/output.log)"
t0=$(date +%s)
rc=0
QEMU_EXTRA="-plugin $bin/tscount.so,out=$out/spans.txt,prof=1,mem=$COUNT_MEM" \
	"$top/scripts/vm-run.sh" --quiet --timeout "$COUNT_TIMEOUT" \
	--accel "tcg" \
	--append "$([ $i686 = 1 ] || echo 'tsc=reliable clocksource=tsc ')isolcpus=1 irqaffinity=0${COUNT_APPEND:+ $COUNT_APPEND}" \
	"$kver" "$out" "$guest" || rc=$?
rm -f "$guest"
log "guest done in $(( $(date +%s) - t0 )) s, status $rc"
if [ $rc != 0 ]; then
	tail -n 30 "$out/output.log" 2>/dev/null || true
	exit 1
fi
cp "$ko/taskstate.ko" "$out/"	# the attribution reads the module that ran
args=(--run "$out" --ko "$out/taskstate.ko"
      --command "${COUNT_COMMAND:-scripts/count.sh${cmd_args:+ $cmd_args}}")
[ $guard = 0 ] || args+=(--guard "$COUNT_GUARD_LIMIT" --guard-bpf "$COUNT_GUARD_BPF_LIMIT"
			  --guard-idle "$COUNT_GUARD_IDLE_LIMIT")
args+=(--report "${report:-$out/REPORT.md}")
python3 "$top/bench/count.py" "${args[@]}"
