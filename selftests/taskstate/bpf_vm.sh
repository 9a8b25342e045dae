# SPDX-License-Identifier: GPL-2.0
#
# The BPF backend in a test guest, as run_vm.sh's sections bpf and
# bpf_full (sourced: its ok, not_ok, check, run, TS_KO, TS_BIN, TS_OUT).
# The boot is made with lockdown=integrity (bpf_full) or
# lockdown=confidentiality (bpf) on the command line, scripts/check.sh's
# bpf and bpf-conf boots.  The premise is checked first, that the module
# cannot load; then `taskstate bpf` loads the backend, the CLI is held to
# the /proc letter of threads in known states, and (bpf_full) the C
# suites of states, totals and the mapping run over the library's BPF
# backend.

T=$TS_BIN/taskstate

# The state `taskstate show` gives thread $1, lower case, or "none".
bpf_state_of() {
	"$T" show -t "$1" 2>/dev/null |
		awk -v t="$1" '$1 == t { print $3; found = 1 } END { if (!found) print "none" }'
}

# Is thread $1 listed by `taskstate show`?
listed() {
	[ "$(bpf_state_of "$1")" != none ]
}
unlisted() {
	! listed "$1"
}

# /proc/$1/stat's state letter.
proc_letter() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}

# Does thread $1's word agree with its /proc letter?  Retried for a
# moment: a state read just before a change may disagree once.
bpf_agrees() {	# tid want-letter want-state...
	tid=$1 letter=$2
	shift 2
	tries=0
	while [ $tries -lt 20 ]; do
		got=$(bpf_state_of "$tid") l=$(proc_letter "$tid")
		for want in "$@"; do
			[ "$l" = "$letter" ] && [ "$got" = "$want" ] && return 0
		done
		tries=$((tries + 1))
		sleep 0.1
	done
	echo "# tid $tid: /proc says '$l', taskstate says '$got' (want $letter: $*)"
	return 1
}

section_bpf() { bpf_run 0; }
# ... and the C suites over it too (the integrity boots).
section_bpf_full() { bpf_run 1; }

bpf_run() {	# 1: the suites too
	suites=$1
	lockdown=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/security/lockdown 2>/dev/null)
	echo "# lockdown: ${lockdown:-none}"
	check "the premise: booted in lockdown (integrity or confidentiality)" \
		[ "$lockdown" = integrity -o "$lockdown" = confidentiality ]
	check "the premise: insmod taskstate.ko is refused (EPERM)" \
		sh -c "! insmod '$TS_KO' 2> '$TS_OUT/insmod.err' &&
		       grep -q 'Operation not permitted' '$TS_OUT/insmod.err' &&
		       ! grep -q '^taskstate ' /proc/modules"

	"$T" bpf status > "$TS_OUT/bpf-status" 2>&1
	rc=$?
	check "taskstate bpf status before load: not loaded, exit 3" \
		sh -c "[ $rc = 3 ] && grep -qx 'not loaded' '$TS_OUT/bpf-status'"
	"$T" info > /dev/null 2> "$TS_OUT/bpf-err"
	rc=$?
	check "taskstate info without a backend: exit 1, naming taskstate bpf load" \
		sh -c "[ $rc = 1 ] && grep -q 'taskstate bpf load' '$TS_OUT/bpf-err'"
	if ! "$T" bpf load 2> "$TS_OUT/bpf-load.err"; then
		cat "$TS_OUT/bpf-load.err"
		not_ok "taskstate bpf load"
		return
	fi
	ok "taskstate bpf load (lockdown=$lockdown)"
	"$T" bpf load 2> "$TS_OUT/bpf-err"
	rc=$?
	check "a second load is refused: exit 1, already loaded" \
		sh -c "[ $rc = 1 ] && grep -q 'already loaded' '$TS_OUT/bpf-err'"
	check "taskstate info: backend bpf, every thread tracked, mapped reads" \
		sh -c "'$T' info > '$TS_OUT/bpf-info' &&
		       grep -qx 'backend: bpf' '$TS_OUT/bpf-info' &&
		       grep -qx 'track_all: 1' '$TS_OUT/bpf-info' &&
		       grep -qx 'watch_reads: mmap' '$TS_OUT/bpf-info'"

	# Threads in known states, started after the load (the probes) and
	# one from before it (the snapshot: this shell).
	sleep 60 &
	sleeper=$!
	sh -c 'while :; do :; done' &
	spinner=$!
	sleep 60 &
	stopped=$!
	kill -STOP $stopped
	# A zombie: a child its parent (an exec'd sleep) never reaps.
	sh -c 'true & exec sleep 60' &
	reaper=$!
	sleep 0.5
	zombie=$(cat /proc/$reaper/task/$reaper/children 2>/dev/null | tr -d ' ')
	check "a sleeping thread (S) reads sleeping" bpf_agrees $sleeper S sleeping
	check "a spinning thread (R) reads running or runnable" \
		bpf_agrees $spinner R running runnable
	check "a stopped thread (T) reads stopped" bpf_agrees $stopped T stopped
	check "an unreaped child (Z) reads dead" bpf_agrees "$zombie" Z dead
	check "a thread from before the load (the snapshot) is tracked" \
		sh -c "[ \"\$('$T' show -t 1 | awk '\$1 == 1 { print \$3 }')\" = sleeping ]"

	# The totals, through the mapping (top reads them there).
	check "top: the spinner's interval is running or runnable, the sleeper's sleeping" \
		sh -c "'$T' top -n 1 -d 1 -t $spinner,$sleeper > '$TS_OUT/bpf-top' &&
		       awk '\$1 == $spinner && \$4 + \$5 > 95 { a = 1 }
			    \$1 == $sleeper && \$6 > 95 { b = 1 }
			    END { exit !(a && b) }' '$TS_OUT/bpf-top'" ||
		cat "$TS_OUT/bpf-top"
	check "metrics: the sleeper's process has one sleeping thread" \
		sh -c "'$T' metrics -p $sleeper |
		       grep -q 'taskstate_threads{pid=\"$sleeper\",comm=\"sleep\",state=\"sleeping\"} 1'"
	check "track of a tracked thread: nothing to do" "$T" track -t $sleeper
	"$T" untrack -t $sleeper
	check "untrack: the thread is not listed any more" unlisted $sleeper
	"$T" track -t $sleeper
	check "track again: listed, sleeping, since the call" bpf_agrees $sleeper S sleeping
	"$T" track -t 999999 2> "$TS_OUT/bpf-err"
	rc=$?
	check "track of no such thread: exit 1, ESRCH" \
		sh -c "[ $rc = 1 ] && grep -q 'No such process' '$TS_OUT/bpf-err'"
	kill -CONT $stopped
	kill $sleeper $spinner $stopped $reaper 2>/dev/null
	wait $sleeper $spinner $stopped $reaper 2>/dev/null

	# Entries come back when threads are freed: 300 short processes.
	stat() { awk -v k="$1" '$1 == k { print $2 }' "$TS_OUT/bpf-status"; }
	"$T" bpf status > "$TS_OUT/bpf-status"
	given=$(stat tracked) freed=$(stat freed)
	i=0
	while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done
	sleep 1
	"$T" bpf status > "$TS_OUT/bpf-status"
	sed 's/^/# /' "$TS_OUT/bpf-status"
	check "300 processes: each given an entry, and each entry given back" \
		[ $(($(stat tracked) - given)) -ge 300 -a $(($(stat freed) - freed)) -ge 300 ]
	check "none missed: full and tid 0" \
		[ "$(stat full)$(stat tid)" = 00 ]

	# Root's alone: the pins are 0600 in a 0700 directory.  As nobody
	# with util-linux's setpriv, or where busybox's cannot change ids,
	# with ts_scope --nobody; from a directory nobody can read.
	d=$(mktemp -d /tmp/ts-bpf.XXXXXX)
	chmod 755 "$d"
	cp "$T" "$TS_BIN/ts_scope" "$d/"
	if setpriv --help 2>&1 | grep -q -- --reuid; then
		set -- setpriv --reuid=65534 --regid=65534 --clear-groups
	else
		set -- "$d/ts_scope" --nobody
	fi
	"$@" "$d/taskstate" info > /dev/null 2> "$TS_OUT/bpf-err"
	rc=$?
	check "as nobody: taskstate info is refused (exit 1, EACCES), naming the pins" \
		sh -c "[ $rc = 1 ] && grep -q 'Permission denied.*sys/fs/bpf/taskstate' '$TS_OUT/bpf-err'" ||
		cat "$TS_OUT/bpf-err"
	rm -rf "$d"

	# Its tids are the initial pid namespace's: the library refuses
	# (EPERM) in any other, with or without a /proc of its own.
	if unshare --help 2>&1 | grep -q -- --mount-proc; then
		for opt in "" --mount-proc; do
			unshare -p -f $opt "$T" info > /dev/null 2> "$TS_OUT/bpf-err"
			rc=$?
			check "in a new pid namespace${opt:+ with its own /proc}: refused (EPERM)" \
				sh -c "[ $rc = 1 ] && grep -q 'Operation not permitted' '$TS_OUT/bpf-err'" ||
				cat "$TS_OUT/bpf-err"
		done
	else
		skip "in a new pid namespace: refused" "no util-linux unshare in this guest"
	fi

	# The suites, over the library's BPF backend: the /proc letter and
	# schedstat oracles, the totals, the mapping.  What only the module
	# has, they skip, saying so.
	if [ "$suites" = 1 ]; then
		for t in ts_states ts_totals ts_mmap ts_cli ts_proc; do
			run "$TS_BIN/$t"
		done
		# The Prometheus pipeline needs the host's programs.
		if [ -f "$(dirname "$0")/ts_metrics.sh" ]; then
			TS_BIN=$TS_BIN run sh "$(dirname "$0")/ts_metrics.sh"
		else
			skip "ts_metrics" "no host root in this guest"
		fi
	fi

	# Process records: taskstate run's report (a second of sleep in a
	# child of the program), and --per-thread's clear refusal.
	"$T" run sh -c 'sleep 1 & wait' > /dev/null 2> "$TS_OUT/bpf-run"
	check "taskstate run: a child's second of sleep in its children's row" \
		awk '$1 == "their" { ok = $6 >= 1 && $6 < 30 } END { exit !ok }' "$TS_OUT/bpf-run"
	"$T" run --per-thread true > /dev/null 2> "$TS_OUT/bpf-err"
	rc=$?
	check "taskstate run --per-thread: refused, saying the module logs exits" \
		sh -c "[ $rc != 0 ] && grep -q 'needs the module' '$TS_OUT/bpf-err'"
	check "taskstate bpf unload" "$T" bpf unload

	# Only what TRACK asks: a process, its children too, and UNTRACK.
	check "taskstate bpf load --track-all 0: nothing tracked, nothing attached" \
		sh -c "'$T' bpf load --track-all 0 && '$T' info | grep -qx 'track_all: 0' &&
		       [ \"\$('$T' show | wc -l)\" = 1 ] &&
		       '$T' bpf status | grep -qx 'attached 0'"
	sh -c 'sleep 60 & exec sleep 60' &
	parent=$!
	sleep 0.3
	child=$(cat /proc/$parent/task/$parent/children 2>/dev/null | tr -d ' ')
	sleep 60 &
	other=$!
	"$T" track -p $parent
	check "track -p: the process tracked, its existing child and others not" \
		sh -c "[ \"$(bpf_state_of $parent) $(bpf_state_of $child) $(bpf_state_of $other)\" = 'sleeping none none' ]"
	# Its new children are: a shell that forks once told to, tracked
	# before it does.
	kill $parent
	go=$TS_OUT/bpf-go
	rm -f "$go"
	sh -c "while [ ! -e '$go' ]; do sleep 0.1; done; sleep 60 & wait" &
	parent2=$!
	"$T" track -p $parent2
	touch "$go"
	sleep 0.5
	late=$(cat /proc/$parent2/task/$parent2/children 2>/dev/null | tr -d ' ')
	check "a child the tracked process starts after TRACK is tracked" \
		sh -c "[ -n '$late' ] && [ \"$(bpf_state_of "${late:-0}")\" = sleeping ]"
	check "while something is tracked, the programs are attached" \
		sh -c "'$T' bpf status | grep -qx 'attached 1'"
	"$T" untrack -p $parent2
	check "untrack -p: gone" unlisted $parent2
	"$T" untrack -p $late
	check "the last untrack detaches the programs" \
		sh -c "'$T' bpf status | grep -qx 'attached 0' &&
		       '$T' bpf status | grep -qx 'threads 0'"
	kill $parent2 $late $child $other 2>/dev/null
	# A process whose threads come and go while it is tracked and
	# untracked (6.1's process iterator stops at a thread reaped under
	# it; a fork in flight gets its entry after UNTRACK passed it): its
	# long-lived threads all tracked, then none.  python3: the host's,
	# amd64 guests only.
	if command -v python3 > /dev/null; then
		python3 -c '
import threading, time
def idle():
    while True:
        time.sleep(1)
for _ in range(8):
    threading.Thread(target=idle, daemon=True).start()
print(" ".join(str(t.native_id) for t in threading.enumerate()[1:]), flush=True)
while True:
    ts = [threading.Thread(target=lambda: None) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    time.sleep(0.002)
' > "$TS_OUT/bpf-churn" &
		churner=$!
		sleep 1
		"$T" track -p $churner
		sleep 0.3
		missing=0
		for tid in $(cat "$TS_OUT/bpf-churn") $churner; do
			listed $tid || missing=$((missing + 1))
		done
		check "track -p of a process churning threads: its 9 long-lived threads all tracked" \
			[ $missing = 0 ]
		"$T" untrack -p $churner
		sleep 0.3
		check "untrack -p of it: none of its threads left tracked" \
			sh -c "[ \"\$('$T' show -p $churner | wc -l)\" = 1 ]"
		kill $churner
		wait $churner 2>/dev/null
	else
		skip "track and untrack of a process churning threads" "no python3 in this guest"
	fi
	check "unload (--track-all 0)" "$T" bpf unload
	"$T" bpf status > /dev/null
	rc=$?
	check "after unload: status exit 3, the pins gone, info fails" \
		sh -c "[ $rc = 3 ] && [ ! -e /sys/fs/bpf/taskstate ] &&
		       ! '$T' info 2> /dev/null"
}
