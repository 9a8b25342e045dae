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

# Stop it with SIGINT, as a user would, and wait for it to exit, but not
# for ever: bpftrace 0.17 can fail to exit after its SIGINT, which would
# hold the guest until the VM's timeout.  After 60 s: log what it is
# doing, SIGKILL it (its programs and maps go with its file descriptors),
# and give it 30 s more to go before giving up on the run.
tracer_stop() {
	kill -INT "$tracer_pid"
	if ! tracer_wait 300; then
		log "$tracer_pid did not exit 60 s after SIGINT: state $(tracer_state), wchan $(cat "/proc/$tracer_pid/wchan" 2>/dev/null); SIGKILL"
		cat "/proc/$tracer_pid/stack" 2>/dev/null
		kill -KILL "$tracer_pid"
		tracer_wait 150 || die "$tracer_pid did not exit after SIGKILL"
	fi
	wait "$tracer_pid"
	tracer_pid=
}

# The tracer's state (/proc/PID/stat's third field), or nothing if gone.
tracer_state() {
	sed 's/^.*) \([A-Za-z]\).*/\1/' "/proc/$tracer_pid/stat" 2>/dev/null
}

# Wait up to N fifths of a second for the tracer to exit (gone, or a
# zombie bash has not reaped yet).
tracer_wait() {	# n
	local n=$1 st

	while :; do
		st=$(tracer_state)
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		[ "$n" -gt 0 ] || return 1
		n=$((n - 1))
		sleep 0.2
	done
}
