#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of scripts/bench.sh: runs inside one Debian 6.1 amd64
# boot (scripts/vm-run.sh, a chroot of the host root) and writes raw
# numbers to $TS_OUT.  Not meant to be run by hand; scripts/bench.sh
# passes everything through the environment:
#
#   BENCH_BIN        tools build dir (taskstate CLI, readers, ts_pingpong)
#   BENCH_KO_A|B|C   taskstate.ko built with TS_WRITE_SCHEME=2|1|0, TS_BENCH=1
#   BENCH_BT         the bpftrace script (bench/taskstate.bt)
#   BENCH_ROUNDS     interleaved rounds of the context-switch benchmarks
#   BENCH_PIPE_LOOPS, BENCH_XPIPE_LOOPS   perf bench sched pipe -l, pinned
#                    to CPU 0 / across CPUs 0,1
#   BENCH_HACKBENCH  hackbench arguments
#   BENCH_PIPE_REPS  pinned pipe runs per configuration block
#   BENCH_PIPE_CAP, BENCH_XPIPE_CAP, BENCH_HACKBENCH_CAP   time caps (s)
#   BENCH_PROBE_ITERS, BENCH_PROBE_REPS   scenario 3
#   BENCH_READERS_ARGS                    extra arguments of readers
#   BENCH_MUTEX_ARGS                      extra arguments of mutex (scenario 6)
#   BENCH_ONLY       mutex: scenario 6 alone
#   BENCH_BUDGET_S   stop starting new rounds after this many seconds
#   BENCH_TMPFS      1: run perf and hackbench from a tmpfs copy
#   BENCH_BT_TMPFS   1: also bpftrace (~200 MB, mostly LLVM and clang)
#
# Files written: guest-env.txt, runs.csv
# (bench,config,round,value,unit,cut,t0,t1),
# probe.csv, readers.csv/.txt, mutex.csv/.txt, and progress on stdout (output.log).
set -u
out=$TS_OUT
bin=$BENCH_BIN
cs=/sys/devices/system/clocksource/clocksource0
export BPFTRACE_MAP_KEYS_MAX=65536

# shellcheck source=guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

# ---- the environment, and the clock this whole run depends on ----
{
	echo "guest_kernel=$(uname -r)"
	echo "guest_cmdline=$(cat /proc/cmdline)"
	echo "clocksource_start=$(cat $cs/current_clocksource)"
	echo "clocksource_available=$(cat $cs/available_clocksource)"
	echo "guest_cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
	echo "guest_ncpu=$(nproc)"
	echo "guest_mem_kb=$(awk '/MemTotal/ {print $2}' /proc/meminfo)"
	echo "guest_meltdown=$(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null)"
	echo "perf_version=$(perf --version 2>&1 | head -n1)"
	echo "bpftrace_version=$(bpftrace --version 2>&1 | head -n1)"
} > "$out/guest-env.txt"
# The host writes its clock into $out/hostclock every half second: the
# offset lets the host's contention log be matched with these runs.
if [ -f "$out/hostclock" ]; then
	echo "host_minus_guest_s=$(awk -v g="$(date +%s.%N)" '{ printf "%.3f", $1 - g }' "$out/hostclock")" >> "$out/guest-env.txt"
fi
cat "$out/guest-env.txt"
[ "$(cat $cs/current_clocksource)" = tsc ] ||
	die "clocksource is $(cat $cs/current_clocksource), not tsc"
lsmod | grep -q '^taskstate ' && die "taskstate already loaded"

# ---- the pipe benchmark: perf, or ts_pingpong if perf does not work ----
if perf bench sched pipe -l 10 >/dev/null 2>&1; then
	pipe_tool=perf
elif [ -x "$bin/ts_pingpong" ]; then
	pipe_tool=ts_pingpong
	log "perf bench sched pipe FAILED in the guest; falling back to ts_pingpong"
else
	die "perf bench sched pipe fails and no ts_pingpong"
fi
echo "pipe_tool=$pipe_tool" >> "$out/guest-env.txt"

# One benchmark run, under a time cap: sets val (empty if none), cut (1 if
# killed at the cap: such a run has no value, and the report counts it),
# and rt0/rt1 (guest wall clock; the host's contention log is matched
# against them).  Every run starts through a shell that, under T, first
# tracks its own process (children and threads inherit) and then execs
# the benchmark.
run_capped() {	# cap awk-program command...
	local cap=$1 prog=$2 o rc
	local pre=(sh -c 'exec "$@"' sh)
	shift 2
	[ "$cfg" = T ] &&
		pre=(sh -c "$bin/taskstate track -p \$\$ >/dev/null || exit 99; exec \"\$@\"" sh)
	rt0=$(date +%s.%N)
	o=$(timeout "$cap" "${pre[@]}" "$@" 2>&1)
	rc=$?
	rt1=$(date +%s.%N)
	cut=0 val=
	if [ $rc = 124 ]; then
		cut=1
		return
	fi
	val=$(echo "$o" | awk "$prog")
	[ -n "$val" ] || echo "$o" | tail -n 5
}

# us per round trip
pipe_bench() {	# cpus loops cap [-T]
	if [ $pipe_tool = perf ]; then
		run_capped "$3" '/usecs\/op/ { print $1 }' taskset -c "$1" "${perf_cmd[@]}" bench sched pipe -l "$2" ${4:+"$4"}
	else
		# ts_pingpong runs for a time: about as long as perf would.
		run_capped "$3" '/round trips/ { if ($2 > 0) print 1e6 / $2 }' \
			taskset -c "$1" "$bin/ts_pingpong" 1
	fi
}

spawn_bench() {	# fork|thread iterations cap
	run_capped "$3" '/^us\/op/ { print $2 }' "$bin/spawn" "$1" "$2"
}

hack_bench() {	# cap
	# shellcheck disable=SC2086
	run_capped "$1" '/^Time:/ { print $2 }' "${hb_cmd[@]}" $BENCH_HACKBENCH
}

record() {	# bench round unit   (val, cut, rt0, rt1 from run_capped)
	if [ $cut = 1 ]; then
		log "$1 under $cfg (round $2) killed at its time cap"
	elif [ -z "$val" ]; then
		log "no result for $1 under $cfg (round $2)"
		fails=$((fails + 1))
	fi
	echo "$1,$cfg,$2,$val,$3,$cut,$rt0,$rt1" >> "$out/runs.csv"
}

meta() {	# name round value unit
	echo "$1,$cfg,$2,$3,$4,0,," >> "$out/runs.csv"
}

# Programs started again and again are copied, with their libraries, to a
# tmpfs once: through the 9p root every start pages them in over virtio
# again (perf: ~35 MB, over 10 s per start on a busy host; bpftrace:
# ~200 MB of LLVM and clang).  Same binaries; only their loading changes.
to_tmpfs() {	# program array-name: sets the array to the command that runs the copy
	local p d=/tmp/tsbin f
	local -n cmd=$2
	p=$(command -v "$1") || die "no $1"
	mkdir -p $d/lib
	for f in $(ldd "$p" | awk '/=>/ { print $3 }'); do
		[ -e "$d/lib/${f##*/}" ] || cp "$f" $d/lib/ || die "copying $f"
	done
	cp "$p" $d/ || die "copying $p"
	cmd=(env LD_LIBRARY_PATH=$d/lib "$d/${p##*/}")
}
perf_cmd=(perf) hb_cmd=(hackbench) bt_cmd=(bpftrace)
if [ "${BENCH_TMPFS:-1}" = 1 ]; then
	t0=$SECONDS
	to_tmpfs perf perf_cmd
	to_tmpfs hackbench hb_cmd
	echo "perf_hackbench_tmpfs_copy_s=$((SECONDS - t0))" >> "$out/guest-env.txt"
	log "perf, hackbench and their libraries copied to tmpfs in $((SECONDS - t0)) s"
fi
if [ "${BENCH_BT_TMPFS:-0}" = 1 ]; then
	t0=$SECONDS
	to_tmpfs bpftrace bt_cmd
	echo "bpftrace_tmpfs_copy_s=$((SECONDS - t0))" >> "$out/guest-env.txt"
	log "bpftrace and its libraries copied to tmpfs in $((SECONDS - t0)) s"
fi
bt_start() {
	local t0=$SECONDS
	tracer_start "${bt_cmd[@]}" "$BENCH_BT"
	meta bpftrace_attach_s "$r" $((SECONDS - t0)) s
}

bt_stop() {
	tracer_stop
	grep -i 'error\|lost' /tmp/bt.log && log "bpftrace reported the above"
}

setup() {
	case $cfg in
	N) ;;
	E|T) ts_load "$BENCH_KO_C" track_all=0 ;;
	A) ts_load "$BENCH_KO_C" track_all=1 ;;
	a) ts_load "$BENCH_KO_A" track_all=1 ;;
	b) ts_load "$BENCH_KO_B" track_all=1 ;;
	z) ts_load "$BENCH_KO_C" track_all=1 totals=0 ;;
	B) bt_start ;;
	esac
	sleep 0.5
}

teardown() {
	case $cfg in
	N) ;;
	B) bt_stop; sleep 0.5 ;;
	*) ts_unload ;;
	esac
	sleep 0.5
}

# Scenarios 3, 1+2 and 4, unless only scenario 6 was asked for (the
# bodies are not indented, to keep this diff small).
if [ -z "${BENCH_ONLY:-}" ]; then
# ---- 3. the probe's own cost, at load (bench_iters) ----
log "scenario 3: probe microbenchmark, $BENCH_PROBE_REPS x 4 loads, bench_iters=$BENCH_PROBE_ITERS"
echo "scheme,rep,iters,empty_ns,clock_ns,tracked_ns,untracked_ns" > "$out/probe.csv"
for rep in $(seq 1 "$BENCH_PROBE_REPS"); do
	for s in a b c z; do
		totals=1
		case $s in a) ko=$BENCH_KO_A ;; b) ko=$BENCH_KO_B ;; c) ko=$BENCH_KO_C ;;
		z) ko=$BENCH_KO_C totals=0 ;; esac
		ts_load "$ko" track_all=1 totals=$totals bench_iters="$BENCH_PROBE_ITERS"
		echo "$s,$rep,$BENCH_PROBE_ITERS,$(cat /sys/module/taskstate/parameters/bench_ns)" >> "$out/probe.csv"
		ts_unload
	done
done
cat "$out/probe.csv"

# ---- 1. + 2. context-switch benchmarks, configurations interleaved ----
# N E T A B: scenario 1 (E T A with the product's scheme 0 build);
# a b: scenario 2's seqcount and xchg builds (pinned pipe only); its (c),
# the product's plain store, is A's run of the same round; z: the product
# with per-state totals off (totals=0, pinned pipe only).
configs=(N E T A B a b z)
echo "bench,config,round,value,unit,cut,t0,t1" > "$out/runs.csv"
fails=0
log "scenarios 1+2: $BENCH_ROUNDS rounds of ${configs[*]} (start rotates by round)"
rounds_t0=$SECONDS
for r in $(seq 1 "$BENCH_ROUNDS"); do
	if [ $r -gt 1 ] && [ $((SECONDS - rounds_t0)) -ge "${BENCH_BUDGET_S:-100000}" ]; then
		log "time budget of ${BENCH_BUDGET_S}s used up: stopping after $((r - 1)) rounds"
		break
	fi
	t0=$SECONDS
	for i in "${!configs[@]}"; do
		cfg=${configs[$(( (i + r - 1) % ${#configs[@]} ))]}
		t1=$SECONDS
		setup
		for k in $(seq 1 "${BENCH_PIPE_REPS:-1}"); do
			pipe_bench 0 "$BENCH_PIPE_LOOPS" "$BENCH_PIPE_CAP"
			record pipe_pinned "$r" us/op
		done
		case $cfg in
		[NETAB])
			pipe_bench 0,1 "$BENCH_XPIPE_LOOPS" "$BENCH_XPIPE_CAP"
			record pipe_2cpu "$r" us/op
			# Threads of one process: no mm switch, so no CR3
			# write (and no TLB flush) between the two ends.
			if [ $pipe_tool = perf ]; then
				pipe_bench 0 "$BENCH_PIPE_LOOPS" "$BENCH_PIPE_CAP" -T
				record pipe_thr "$r" us/op
			fi
			hack_bench "$BENCH_HACKBENCH_CAP"
			record hackbench "$r" s
			# Fork and exit: the newtask and free probes.
			spawn_bench fork "$BENCH_FORK_N" "$BENCH_HACKBENCH_CAP"
			record fork_exit "$r" us/op
			spawn_bench thread "$BENCH_THREAD_N" "$BENCH_HACKBENCH_CAP"
			record thread_cj "$r" us/op
			;;
		esac
		teardown
		meta config_s "$r" $((SECONDS - t1)) s
	done
	echo "rounds_done=$r" > "$out/rounds.txt"
	log "round $r/$BENCH_ROUNDS done in $((SECONDS - t0)) s"
	awk -F, -v r="$r" '$3 == r && $1 !~ /_s$/ { printf "%s/%s=%s ", $1, $2, $4 }' "$out/runs.csv"
	echo
done

# ---- 4. readers ----
log "scenario 4: readers"
cfg=A
ts_load "$BENCH_KO_C" track_all=1
# shellcheck disable=SC2086
"$bin/readers" ${BENCH_READERS_ARGS:-} --csv "$out/readers.csv" \
	--rounds-csv "$out/readers-rounds.csv" > "$out/readers.txt" 2>&1 ||
	{ cat "$out/readers.txt"; die "readers failed"; }
cat "$out/readers.txt"
ts_unload
fi
fails=${fails:-0}

# ---- 6. the adaptive mutex of examples/, and the stuck detector ----
log "scenario 6: mutexes (bench/mutex.c)"
ts_load "$BENCH_KO_C" track_all=1
# shellcheck disable=SC2086
"$bin/mutex" ${BENCH_MUTEX_ARGS:-} --csv "$out/mutex.csv" > "$out/mutex.txt" 2>&1 ||
	{ cat "$out/mutex.txt"; die "mutex failed"; }
cat "$out/mutex.txt"
ts_unload

echo "clocksource_end=$(cat $cs/current_clocksource)" >> "$out/guest-env.txt"
[ "$(cat $cs/current_clocksource)" = tsc ] || die "clocksource changed during the run"
log "done, $fails missing results"
[ $fails = 0 ]
