# SPDX-License-Identifier: GPL-2.0
#
# Sourced by bench/guest.sh and bench/count-guest.sh, inside the guest:
# the log lines, the module's load and unload, and a tracer started in
# the background (bpftrace or the libbpf equivalent) waited for until it
# has attached.

log() { echo "# $(date +%T) $*"; }
die() { log "FATAL: $*"; exit 1; }

ts_load() {	# ko params...
	insmod "$@" || die "insmod $*"
}

# The probes' delayed detach holds the module for up to a second after
# the last untrack.
ts_unload() {
	local i
	for i in 1 2 3 4 5; do
		rmmod taskstate 2>/dev/null && return
		sleep 1
	done
	die "rmmod taskstate"
}

# Start CMD... in the background, its output in /tmp/bt.log, and wait up
# to 300 s for the line it prints once attached (bpftrace: "Attaching N
# probes", tsbpf: "Attached").  Sets tracer_pid.
tracer_pid=
tracer_start() {	# cmd...
	local i
	: > /tmp/bt.log
	"$@" > /tmp/bt.log 2>&1 &
	tracer_pid=$!
	for i in $(seq 1 1500); do
		grep -q '^Attach' /tmp/bt.log && return
		kill -0 $tracer_pid 2>/dev/null || break
		sleep 0.2
	done
	cat /tmp/bt.log
	die "$1 did not attach"
}

tracer_stop() {
	kill -INT $tracer_pid
	wait $tracer_pid
	tracer_pid=
}
