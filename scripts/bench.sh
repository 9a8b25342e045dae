#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: the benchmarks of taskstate, and their report.
#
#   scripts/bench.sh            full run (~15-20 min): writes bench/REPORT.md
#                               and bench/bench.png
#   scripts/bench.sh --quick    (or BENCH_QUICK=1) every scenario for a few
#                               iterations (~2 min), so the benchmarks cannot
#                               rot; writes build/bench-quick-run/REPORT.md
#                               and never touches bench/
#   scripts/bench.sh --count    the counted benchmark alone (scripts/count.sh,
#                               ~8 min): guest instructions per operation,
#                               writes bench/REPORT-count.md; a full run
#                               runs it too, after the timed one
#   scripts/bench.sh --only mutex [--quick]
#                               scenario 6 alone, in its own boot (~5 min;
#                               quick: ~1 min): writes bench/REPORT-mutex.md
#                               (quick: build/bench-mutex-quick-run/REPORT.md)
#
# What runs (bench/REPORT.md explains the results):
#  host   5. bench/ubench: user-space cost of the write/read schemes;
#            bench/tbench: the table's lookup and store per switch, old
#            (chained) layout against module/index.h, 10^3 to 10^6 threads
#  guest  one boot of Debian 6.1 amd64 under QEMU TCG with
#         "tsc=reliable clocksource=tsc" (the run fails if the guest's
#         clocksource is not tsc), bench/guest.sh inside:
#         3. the probe microbenchmark of the TS_BENCH builds (bench_ns)
#         1. perf bench sched pipe pinned to CPU 0 and across CPUs 0,1,
#            pinned with two threads (-T), hackbench, and bench/spawn
#            (fork+exit+wait, pthread create+join), under
#            N (no module), E (track_all=0, nothing tracked),
#            T (track_all=0, the benchmark's threads tracked),
#            A (track_all=1), B (bench/taskstate.bt, bpftrace)
#         2. the pinned pipe under the write schemes a (seqcount pair),
#            b (xchg), c (plain store, the product: A's runs)
#            1 and 2 interleaved in rounds: N E T A B a b, N E T A B a b...
#         4. bench/readers: taskstate_sample() against /proc stat and getppid(),
#            a located read through the mapping, and a scan of every
#            thread through the mapping against LIST
#         6. bench/mutex: the adaptive mutex of examples/ against glibc's
#            mutexes and a spin lock, 4 and 8 threads, short and long
#            critical sections; taskstate_stuck_check()'s cost per thread
#  host   bench/analyze.py: medians, spread, ratios, targets -> REPORT.md,
#         bench/plot.gp -> the PNG
#
# Knobs (environment): BENCH_ROUNDS, BENCH_PIPE_LOOPS, BENCH_PIPE_REPS (pinned
# pipe runs per configuration block), BENCH_XPIPE_LOOPS,
# BENCH_HACKBENCH, BENCH_FORK_N and BENCH_THREAD_N (bench/spawn
# iterations), BENCH_PROBE_ITERS, BENCH_PROBE_REPS, BENCH_MEM (MB),
# BENCH_ACCEL (QEMU -accel; tcg, or tcg,thread=single for --quick),
# BENCH_TIMEOUT (s), BENCH_BUDGET_S (no new round after that many seconds
# of rounds), BENCH_TMPFS, BENCH_BT_TMPFS (run perf and hackbench, and
# bpftrace, from a tmpfs copy in the guest), BENCH_HOST_REPS, BENCH_PIPE_CAP,
# BENCH_XPIPE_CAP, BENCH_HACKBENCH_CAP (s, program start included; a run
# killed there has no value and is counted).  Exit status: 0 if every
# scenario produced its numbers (targets missed do not fail the run),
# non-zero otherwise.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
quick=${BENCH_QUICK:-0}
only=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--count) COUNT_COMMAND="make bench-count" exec "$(dirname "$0")/count.sh" \
		--report "$(cd "$(dirname "$0")/.." && pwd)/bench/REPORT-count.md" ;;
	--only) only=${2:-}; shift
		[ "$only" = mutex ] || { echo "bench: --only mutex" >&2; exit 2; } ;;
	-h|--help) sed -n '4,/^set -euo/{/^set -euo/d;p}' "$0"; exit 0 ;;
	*) echo "bench: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$quick" = 0 ] || quick=1

if [ $quick = 1 ]; then
	base=$build/bench-quick
	: "${BENCH_ROUNDS:=1}" "${BENCH_PIPE_LOOPS:=1000}" "${BENCH_XPIPE_LOOPS:=100}"
	: "${BENCH_HACKBENCH:=-g 1 -l 20}" "${BENCH_PROBE_ITERS:=20000}"
	: "${BENCH_PROBE_REPS:=1}" "${BENCH_TIMEOUT:=600}" "${BENCH_BUDGET_S:=60}"
	: "${BENCH_BT_TMPFS:=0}" "${BENCH_HOST_REPS:=1}"
	: "${BENCH_PIPE_CAP:=60}" "${BENCH_XPIPE_CAP:=60}" "${BENCH_HACKBENCH_CAP:=60}"
	: "${BENCH_PIPE_REPS:=1}" "${BENCH_FORK_N:=100}" "${BENCH_THREAD_N:=200}"
	readers_args=--quick ubench_args=--quick mutex_args="--quick --stuck 100"
	report_dir=$base-run
else
	base=$build/bench
	: "${BENCH_ROUNDS:=11}" "${BENCH_PIPE_LOOPS:=10000}" "${BENCH_XPIPE_LOOPS:=2000}"
	: "${BENCH_HACKBENCH:=-g 2 -l 200}" "${BENCH_PROBE_ITERS:=200000}"
	: "${BENCH_PROBE_REPS:=5}" "${BENCH_TIMEOUT:=2700}" "${BENCH_BUDGET_S:=900}"
	: "${BENCH_BT_TMPFS:=1}" "${BENCH_HOST_REPS:=3}"
	: "${BENCH_PIPE_CAP:=30}" "${BENCH_XPIPE_CAP:=12}" "${BENCH_HACKBENCH_CAP:=12}"
	: "${BENCH_PIPE_REPS:=2}" "${BENCH_FORK_N:=1000}" "${BENCH_THREAD_N:=2000}"
	readers_args="--threads 10000" ubench_args="" mutex_args="--stuck 1000"
	report_dir=$top/bench
fi
: "${BENCH_MEM:=1536}"
# Scenario 6 alone starts no perf, hackbench or bpftrace.
[ -z "$only" ] || { : "${BENCH_TMPFS:=0}"; BENCH_BT_TMPFS=0; }
# A smoke run needs no parallel vCPUs: single-threaded TCG, which does not
# hang where multi-threaded TCG once did (a full run stuck at a bpftrace
# attach, both vCPUs spinning; see README, Performance).
if [ $quick = 1 ]; then
	: "${BENCH_ACCEL:=tcg,thread=single}"
else
	: "${BENCH_ACCEL:=tcg}"
fi
[ -z "$only" ] || base=$base-$only
run=$base-run
bin=$base-bin
start=$(date +%s)
log() { echo "# bench: $(date +%T) $*"; }

kver=$("$top/scripts/kernels.sh" amd64)
rm -rf "$run"
mkdir -p "$run/host" "$run/vm" "$bin"

# ---- builds ----
log "building module variants for $kver"
variants="a:2 b:1 c:0"
[ -z "$only" ] || variants=c:0
for v in $variants; do
	TS_KBUILD_ARGS="TS_WRITE_SCHEME=${v#*:} TS_BENCH=1" \
		"$top/scripts/build-module.sh" "$kver" "$base-${v%%:*}" 2>&1 |
		{ grep -v 'Skipping BTF' || true; }
	[ -f "$base-${v%%:*}/taskstate.ko" ] || { echo "bench: module build failed" >&2; exit 1; }
done
log "building user space"
make -s -C "$top/tools" O="$bin" all
cc -O2 -g -Wall -Wextra -std=gnu11 -I"$top/lib" -I"$top/include/uapi" \
	-o "$bin/readers" "$top/bench/readers.c" "$bin/libtaskstate.a" -pthread
make -s -C "$top/bench" ubench tbench O="$bin"
cc -O2 -g -Wall -Wextra -std=gnu11 -I"$top/lib" -I"$top/include/uapi" \
	-I"$top/examples" -o "$bin/mutex" "$top/bench/mutex.c" \
	"$top/examples/adaptive_mutex.c" "$bin/libtaskstate.a" -pthread
cc -O2 -g -Wall -Wextra -std=gnu11 -o "$bin/spawn" "$top/bench/spawn.c" -pthread
# Only needed if perf does not run in the guest; best effort.
make -s -C "$top/selftests/taskstate" O="$bin" "$bin/ts_pingpong" >/dev/null 2>&1 ||
	echo "bench: (ts_pingpong not built: only a fallback)"

# ---- the host ----
# Other engineers boot QEMU guests on the same 2 cores: log, twice a
# second, how many QEMU processes run (ours is one of them while the guest
# runs) and the load; the report marks the runs that overlapped another
# guest.  The same loop writes the host's clock where the guest reads it,
# to align the two clocks.
monitor() {
	while :; do
		echo "$(date +%s.%N) $(pgrep -c qemu-system || true) $(cut -d' ' -f1,4 /proc/loadavg)"
		date +%s.%N > "$run/vm/hostclock.new" && mv "$run/vm/hostclock.new" "$run/vm/hostclock"
		sleep 0.5
	done >> "$run/host/monitor.txt"
}
monitor &
mon_pid=$!
trap 'kill $mon_pid 2>/dev/null || true' EXIT

{
	echo "host_cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
	echo "host_ncpu=$(nproc)"
	echo "host_kernel=$(uname -srm)"
	echo "host_os=$(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "qemu=$(qemu-system-x86_64 --version | head -n1)"
	echo "gcc=$(gcc --version | head -n1)"
	echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "qemu_procs_start=$(pgrep -c qemu-system || true)"
	echo "git=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "quick=$quick"
	echo "kver=$kver"
	echo "rounds=$BENCH_ROUNDS"
	echo "pipe_loops=$BENCH_PIPE_LOOPS"
	echo "pipe_reps=$BENCH_PIPE_REPS"
	echo "xpipe_loops=$BENCH_XPIPE_LOOPS"
	echo "hackbench=$BENCH_HACKBENCH"
	echo "probe_iters=$BENCH_PROBE_ITERS"
	echo "probe_reps=$BENCH_PROBE_REPS"
	echo "budget_s=$BENCH_BUDGET_S"
	echo "caps_s=$BENCH_PIPE_CAP $BENCH_XPIPE_CAP $BENCH_HACKBENCH_CAP"
	echo "mem_mb=$BENCH_MEM"
	echo "accel=$BENCH_ACCEL"
	echo "start=$(date -u +%FT%TZ)"
} > "$run/host/env.txt"

if [ -z "$only" ]; then
log "5. ubench on the host"
# shellcheck disable=SC2086
"$bin/ubench" $ubench_args --csv "$run/host/ubench.csv" > "$run/host/ubench.txt"
cat "$run/host/ubench.txt"
log "5. tbench on the host"
# shellcheck disable=SC2086
"$bin/tbench" $ubench_args --csv "$run/host/tbench.csv" > "$run/host/tbench.txt"
# Cache misses, where this host's PMU can count them (a VM often cannot).
if perf stat -x, -e cache-misses,cache-references true 2>&1 |
   grep -q 'not supported\|not counted\|<not'; then
	echo "perf stat: cache-misses not countable on this host" >> "$run/host/tbench.txt"
else
	perf stat -e cache-misses,cache-references -- "$bin/tbench" --quick \
		2>&1 >/dev/null | grep -E 'cache' >> "$run/host/tbench.txt" || true
fi
cat "$run/host/tbench.txt"

log "host baselines (no module, no emulation): pipe, hackbench, readers --no-dev"
echo "bench,config,round,value,unit" > "$run/host/native.csv"
for r in $(seq 1 "$BENCH_HOST_REPS"); do
	v=$(taskset -c 0 perf bench sched pipe -l $((BENCH_PIPE_LOOPS * 5)) 2>&1 | awk '/usecs\/op/ { print $1 }')
	echo "pipe_pinned,host,$r,$v,us/op" >> "$run/host/native.csv"
	v=$(taskset -c 0,1 perf bench sched pipe -l $((BENCH_XPIPE_LOOPS * 5)) 2>&1 | awk '/usecs\/op/ { print $1 }')
	echo "pipe_2cpu,host,$r,$v,us/op" >> "$run/host/native.csv"
	# shellcheck disable=SC2086
	v=$(hackbench $BENCH_HACKBENCH 2>&1 | awk '/^Time:/ { print $2 }')
	echo "hackbench,host,$r,$v,s" >> "$run/host/native.csv"
done
# shellcheck disable=SC2086
"$bin/readers" --no-dev $readers_args --csv "$run/host/readers.csv" > "$run/host/readers.txt" 2>&1 ||
	echo "bench: host readers failed (see $run/host/readers.txt)"
cat "$run/host/native.csv" "$run/host/readers.txt"
fi

# ---- the guest ----
guest=$run/guest.sh
cat > "$guest" <<EOF
export BENCH_BIN=$bin BENCH_BT=$top/bench/taskstate.bt
export BENCH_KO_A=$base-a/taskstate.ko BENCH_KO_B=$base-b/taskstate.ko BENCH_KO_C=$base-c/taskstate.ko
export BENCH_ROUNDS=$BENCH_ROUNDS BENCH_PIPE_LOOPS=$BENCH_PIPE_LOOPS BENCH_XPIPE_LOOPS=$BENCH_XPIPE_LOOPS
export BENCH_HACKBENCH="$BENCH_HACKBENCH" BENCH_PROBE_ITERS=$BENCH_PROBE_ITERS BENCH_PROBE_REPS=$BENCH_PROBE_REPS
export BENCH_FORK_N=$BENCH_FORK_N BENCH_THREAD_N=$BENCH_THREAD_N
export BENCH_ONLY="$only" BENCH_READERS_ARGS="$readers_args" BENCH_MUTEX_ARGS="$mutex_args" BENCH_BUDGET_S=$BENCH_BUDGET_S BENCH_BT_TMPFS=$BENCH_BT_TMPFS
export BENCH_TMPFS=${BENCH_TMPFS:-1} BENCH_PIPE_REPS=$BENCH_PIPE_REPS BENCH_PIPE_CAP=$BENCH_PIPE_CAP BENCH_XPIPE_CAP=$BENCH_XPIPE_CAP BENCH_HACKBENCH_CAP=$BENCH_HACKBENCH_CAP
exec bash $top/bench/guest.sh
EOF
log "booting $kver (progress: $run/vm/output.log)"
vm_start=$(date +%s)
rc=0
"$top/scripts/vm-run.sh" --quiet --timeout "$BENCH_TIMEOUT" --mem "$BENCH_MEM" \
	--accel "$BENCH_ACCEL" \
	--append "tsc=reliable clocksource=tsc" "$kver" "$run/vm" "$guest" || rc=$?
cat "$run/vm/output.log" 2>/dev/null || true
{
	echo "vm_s=$(( $(date +%s) - vm_start ))"
	echo "vm_status=$rc"
	echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "qemu_procs_end=$(pgrep -c qemu-system || true)"
	echo "end=$(date -u +%FT%TZ)"
	echo "total_s=$(( $(date +%s) - start ))"
} >> "$run/host/env.txt"
if grep -hE 'BUG:|WARNING:|Oops|Call Trace' "$run/vm/dmesg.txt" "$run/vm/console.log" 2>/dev/null; then
	echo "bench: the guest's kernel log shows the above" >&2
	rc=1
fi

# ---- the report ----
if [ $quick = 1 ]; then
	cmd="scripts/bench.sh --quick"
else
	cmd="make bench"
fi
if [ -n "$only" ]; then
	report_dir=$run
elif [ $rc != 0 ] && [ $quick = 0 ]; then
	# Keep the last good bench/REPORT.md: report this failed run aside.
	report_dir=$run
	echo "bench: the guest failed (status $rc): report in $run, bench/ untouched" >&2
fi
log "writing $report_dir/REPORT.md"
arc=0
if [ -n "$only" ]; then
	cmd="scripts/bench.sh --only $only"
	[ $quick = 0 ] || cmd="$cmd --quick"
	python3 "$top/bench/analyze.py" --run "$run" --out "$report_dir" \
		--command "$cmd" --only "$only" || arc=$?
	if [ $quick = 0 ] && [ $rc = 0 ]; then
		cp "$run/REPORT.md" "$top/bench/REPORT-$only.md"
		log "wrote bench/REPORT-$only.md"
	fi
else
	python3 "$top/bench/analyze.py" --run "$run" --out "$report_dir" \
		--command "$cmd" --plot "$top/bench/plot.gp" || arc=$?
fi
crc=0
if [ $quick = 0 ] && [ -z "$only" ]; then
	log "the counted benchmark (scripts/count.sh)"
	COUNT_COMMAND="make bench" "$top/scripts/count.sh" \
		--report "$top/bench/REPORT-count.md" > "$run/count.log" 2>&1 || crc=$?
	tail -n 5 "$run/count.log"
fi
log "done in $(( $(date +%s) - start )) s: guest status $rc, report status $arc, count status $crc"
[ $rc = 0 ] && [ $arc = 0 ] && [ $crc = 0 ]
