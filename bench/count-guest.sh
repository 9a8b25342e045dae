#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of scripts/count.sh: one Debian 6.1 amd64 boot with the
# tscount plugin loaded in QEMU.  For each configuration in $COUNT_CONFIGS
# and each operation in $COUNT_OPS, bench/count runs marked spans, then
# marks a profile dump: $COUNT_SPANS spans of one operation (the short
# ones: pipe, pipe_thr, sample, mapread), $COUNT_LONG ("LOOPS SPANS") for
# fork and thread, $COUNT_DEBUGFS for debugfs.  Short spans: a timer tick
# lands in a span with the odds of the span's wall time over 4 ms, and the
# guest's wall time stretches with the host's load.  Writes
# manifest.txt ("CONFIG OP LOOPS SPANS" per run, in the order of the
# plugin's spans and dumps), kallsyms.txt, and per loaded configuration
# the module's section addresses (sections-CONFIG.txt).
set -u
out=$TS_OUT
bin=$COUNT_BIN
# shellcheck source=guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
[ "$(cat $cs)" = tsc ] || die "clocksource $(cat $cs), not tsc"
sysctl -qw net.core.bpf_jit_kallsyms=1 2>/dev/null || true
# shellcheck source=count-guest-setup.sh
. "$(dirname "$0")/count-guest-setup.sh"

# Settle: let what a load or unload queued (RCU callbacks, the snapshot's
# grace periods, the probes' delayed detach, deferred frees) run out.
settle() {
	sync
	sleep "${1:-2}"
}

setup() {
	case $1 in
	N) ;;
	E|T) ts_load "$COUNT_KO" track_all=0 ;;
	A|S) ts_load "$COUNT_KO" track_all=1 ;;
	z) ts_load "$COUNT_KO" track_all=1 totals=0 ;;
	Q) ts_load "$COUNT_KO_SEQ" track_all=1 ;;
	# On CPU 0: only its programs run on the benchmark's CPU.
	B) BPFTRACE_MAP_KEYS_MAX=65536 tracer_start taskset -c 0 bpftrace "$COUNT_BT" ;;
	L) tracer_start taskset -c 0 "$bin/tsbpf" "$bin/tsbpf.bpf.o" ;;
	P) taskset -c 0 "$bin/taskstate" bpf load || die "taskstate bpf load" ;;
	p) taskset -c 0 "$bin/taskstate" bpf load --track-all 0 || die "taskstate bpf load" ;;
	esac
	# The BPF programs' JIT images by name, for the attribution.
	[ "$1" = B ] || [ "$1" = L ] || [ "$1" = P ] || [ "$1" = p ] &&
		grep -E ' (bpf_prog_|bpf_trampoline)' /proc/kallsyms > "$out/kallsyms-$1.txt"
	if [ -d /sys/module/taskstate/sections ]; then
		for f in /sys/module/taskstate/sections/.text*; do
			echo "${f##*/} $(cat "$f")"
		done > "$out/sections-$1.txt"
		grep '\[taskstate\]' /proc/kallsyms > "$out/kallsyms-$1.txt"
	fi
	settle 3
}

teardown() {
	case $1 in
	N) ;;
	B|L) tracer_stop ;;
	P|p) "$bin/taskstate" bpf unload || die "taskstate bpf unload" ;;
	*) ts_unload ;;
	esac
	settle 3
}

for cfg in $COUNT_CONFIGS; do
	log "configuration $cfg"
	setup "$cfg"
	for op in $COUNT_OPS; do
		args=()
		case $cfg.$op in
		[NEzBLp].sample|[NEzBLp].mapread|[NEzBLPp].debugfs) continue ;;
		# As nobody: its own descriptor is scoped; no debugfs.
		S.debugfs|S.fork|S.thread) continue ;;
		# The seqcount scheme's entry is not the uapi's: no mapping.
		Q.mapread|Q.debugfs) continue ;;
		esac
		[ "$cfg" = T ] && args+=(--track)
		run=("$bin/count")
		[ "$cfg" = S ] &&
			run=(setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/count")
		# shellcheck disable=SC2086
		case $op in
		fork|thread) set -- $COUNT_LONG 20 ;;
		debugfs) set -- $COUNT_DEBUGFS 2 ;;
		*) set -- 1 "$COUNT_SPANS" 20 ;;
		esac
		"${run[@]}" "${args[@]}" --warm "$3" "$op" "$1" "$2" > /tmp/count.log 2>&1 ||
			{ cat /tmp/count.log; die "count $cfg $op"; }
		"$bin/count" --dump
		echo "$cfg $op $1 $2" >> "$out/manifest.txt"
		# The detach a second after the last untrack (T), the exits.
		settle 1.5
	done
	teardown "$cfg"
done
log "done"
