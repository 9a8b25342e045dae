#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a test guest (dash, or busybox sh on the 686 initramfs):
# loads taskstate, runs the selftests and the checks that need a shell,
# unloads.  Prints TAP; scripts/check.sh counts it and checks the kernel
# log afterwards.
#
# Environment:
#   TS_KO          taskstate.ko
#   TS_TORTURE_KO  taskstate_torture.ko (taskstate_qsleeper.ko and
#                  taskstate_kmutex.ko beside it)
#   TS_FI_KO       optional: the fault-injection build of taskstate.ko
#                  (default: fi/taskstate.ko beside TS_KO)
#   TS_BIN         the test programs and the taskstate CLI
#   TS_BIN32       optional: 32-bit builds of ts_abi, to run on a 64-bit kernel
#   TS_OUT         a writable directory
#   TS_DEB_DIR     optional: what scripts/deb-test.sh kept of the packages
#                  (KVER/taskstate.ko, KVER/build-id.note, root/usr/...)
#   TS_KSFT        optional: the suite as kselftest installs it, with its
#                  run_kselftest.sh (scripts/ksft-test.sh)
#   TS_SECTIONS    optional: which sections to run (default: all, in order):
#                  track_all track_none params review stuck torture busy
#                  cycles soak deb lockdown; and kselftest, and bpf (in a
#                  boot made with lockdown: bpf_vm.sh)
#   TS_SOAK_S      optional: how long the soak runs (default 60 s in the
#                  debug kernels, 15 s elsewhere)

n=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n $*"; }
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
loaded() { grep -q "^$1 " /proc/modules; }
bits=32
case $(uname -m) in x86_64|aarch64) bits=64 ;; esac
TS_FI_KO=${TS_FI_KO:-$(dirname "$TS_KO")/fi/taskstate.ko}
TS_QSLEEPER_KO=$(dirname "$TS_TORTURE_KO")/taskstate_qsleeper.ko
TS_KMUTEX_KO=$(dirname "$TS_TORTURE_KO")/taskstate_kmutex.ko

# A kselftest binary prints its own TAP; add a line only if it died
# without reporting a failure (a crash, a hang cut short).
# Each run says how long it took (check.sh's profile reads these lines).
run() {
	run_t0=$(date +%s)
	out=$("$@" 2>&1)
	rc=$?
	echo "$out"
	echo "# took $(( $(date +%s) - run_t0 )) s: $*"
	case $rc in
	0|4) ;;
	*) echo "$out" | grep -q '^not ok' || not_ok "$* exited with $rc" ;;
	esac
}

echo "# kernel $(uname -r), $bits-bit, clocksource" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"

# --- track_all=1 (the default) --------------------------------------------
section_track_all() {
	# Never both backends at once (the BPF backend: bpf_vm.sh).
	if [ -x "$TS_BIN/taskstate-bpf" ] && [ -e /sys/kernel/btf/vmlinux ]; then
		"$TS_BIN/taskstate" bpf load
		check "insmod while the BPF backend is loaded: EBUSY, saying why" \
			sh -c "! insmod '$TS_KO' 2> '$TS_OUT/insmod.err' &&
			       grep -q 'busy' '$TS_OUT/insmod.err' &&
			       dmesg | grep -q 'taskstate: the BPF backend is loaded'"
		"$TS_BIN/taskstate" bpf unload
	else
		skip "insmod while the BPF backend is loaded" "no BPF backend here (no BTF, or not built)"
	fi
	check "load (track_all=1)" insmod "$TS_KO"
	run "$TS_BIN/ts_states"
	run "$TS_BIN/ts_abi"
	[ -n "${TS_BIN32:-}" ] && run "$TS_BIN32/ts_abi"
	run "$TS_BIN/ts_mmap"
	[ -n "${TS_BIN32:-}" ] && run "$TS_BIN32/ts_mmap"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_totals"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_proc"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_cli"
	# The Prometheus pipeline needs the host's programs (not in the
	# 686 and arm64 initramfs, which have no copy of the script).
	if [ -f "$(dirname "$0")/ts_metrics.sh" ]; then
		TS_BIN=$TS_BIN run sh "$(dirname "$0")/ts_metrics.sh"
	else
		skip "ts_metrics" "no host root in this guest"
	fi
	run "$TS_BIN/ts_mutex"
	[ -n "${TS_BIN32:-}" ] && run "$TS_BIN32/ts_mutex"
	check "examples/stuck_pool finds its stuck worker" \
		"$TS_BIN/stuck_pool" 4 200 5
	run "$TS_BIN/ts_bpftrace"
	run "$TS_BIN/ts_timens"
	run "$TS_BIN/ts_attach"
	run "$TS_BIN/ts_attach" churn_occupancy
	run "$TS_BIN/ts_mmap" failed_exec_from_thread_keeps_its_tid
	scope_suites
	check "unload" rmmod taskstate
}

# --- track_all=0: only what is asked for through /dev/taskstate -----------
section_track_none() {
	check "load (track_all=0)" insmod "$TS_KO" track_all=0
	check "nothing tracked at load, header only (track_all=0)" \
		test "$(wc -l < /sys/kernel/debug/taskstate)" -eq 1
	run "$TS_BIN/ts_states"
	run "$TS_BIN/ts_abi"
	run "$TS_BIN/ts_mmap"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_totals"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_proc"
	TS_BIN=$TS_BIN run "$TS_BIN/ts_cli"
	run "$TS_BIN/ts_mutex"
	check "examples/stuck_pool finds its stuck worker (track_all=0)" \
		"$TS_BIN/stuck_pool" 4 200 5
	run "$TS_BIN/ts_timens"
	run "$TS_BIN/ts_attach"
	run "$TS_BIN/ts_attach" untrack_process_racing_clone
	run "$TS_BIN/ts_mmap" failed_exec_from_thread_keeps_its_tid
	scope_suites
	detach_queue
	check "unload (track_all=0)" rmmod taskstate
}

# The scoped descriptor (ts_scope): started as root, its tests become
# nobody (a root-owned set-user-ID copy of it beside it, for the exec
# that leaves the scope); as nobody in new user and pid namespaces; in
# bubblewrap with only the device bound in; and after the administrator
# turned unprivileged opens off, and on again.  From a directory nobody
# can read, as TS_BIN may not be.
scope_suites() {
	# As nobody, with util-linux's setpriv; busybox's cannot change ids,
	# and the test does it itself.
	as_nobody() {
		if setpriv --help 2>&1 | grep -q -- --reuid; then
			setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
		else
			"$d/ts_scope" --nobody "$@"
		fi
	}
	d=$(mktemp -d /tmp/ts-scope.XXXXXX)
	chmod 755 "$d"
	cp "$TS_BIN/ts_scope" "$TS_BIN/stuck_pool" "$TS_BIN/taskstate" "$d/" &&
		cp "$d/ts_scope" "$d/ts_scope_suid" &&
		chmod 4755 "$d/ts_scope_suid"
	TS_SUID_SELF=$d/ts_scope_suid run "$d/ts_scope"
	TS_SUID_SELF=$d/ts_scope_suid run as_nobody \
		unshare -Urpf --mount-proc "$d/ts_scope"
	# A thread pool watching its own workers through its mapping, as a
	# user in a container: it says "no mapping" when it falls back.
	pool_maps() {
		out=$("$@" 2>&1)
		rc=$?
		echo "$out" | sed 's/^/# /'
		[ "$rc" -eq 0 ] && ! echo "$out" | grep -q "^no mapping"
	}
	check "examples/stuck_pool as nobody in new user and pid namespaces, through its mapping" \
		pool_maps as_nobody unshare -Urpf --mount-proc "$d/stuck_pool" 4 200 5
	# taskstate run for a user in a container: a 1 s sleep, as sleeping,
	# in the sums; with --per-thread (OPT) in the sleep's own row, from
	# the scoped log of exits.
	run_sleeps() {
		opt=$1
		shift
		out=$("$@" -J $opt -- sleep 1 2>&1)
		rc=$?
		echo "$out" | sed 's/^/# /'
		row='.*"totals":{[^}]*"sleeping_ns":\([0-9]*\).*}}$'
		[ -n "$opt" ] &&
			row='.*"comm":"sleep","totals":{[^}]*"sleeping_ns":\([0-9]*\).*'
		ns=$(echo "$out" | sed -n "s/$row/\\1/p")
		[ "$rc" -eq 0 ] && [ -n "$ns" ] && [ "$ns" -ge 900000000 ] &&
			[ "$ns" -le 1500000000 ]
	}
	check "taskstate run as nobody in new user and pid namespaces: 1 s asleep" \
		run_sleeps "" as_nobody unshare -Urpf --mount-proc "$d/taskstate" run
	check "taskstate run --per-thread as nobody in new user and pid namespaces: the sleep's thread 1 s asleep" \
		run_sleeps --per-thread as_nobody unshare -Urpf --mount-proc \
		"$d/taskstate" run
	if command -v bwrap > /dev/null; then
		bw() {
			as_nobody bwrap --ro-bind / / --dev /dev \
				--dev-bind /dev/taskstate /dev/taskstate \
				--proc /proc --unshare-user --unshare-pid \
				--die-with-parent "$@"
		}
		run bw "$d/ts_scope"
		check "examples/stuck_pool as nobody in bubblewrap, through its mapping" \
			pool_maps bw "$d/stuck_pool" 4 200 5
	else
		skip "ts_scope and stuck_pool in bubblewrap" "no bwrap in this guest"
	fi
	p=/sys/module/taskstate/parameters/unprivileged
	echo 0 > $p && run "$d/ts_scope" open_follows_the_unprivileged_switch
	echo 1 > $p && run "$d/ts_scope" open_follows_the_unprivileged_switch
	rm -rf "$d"
}

# The detach work waits for grace periods: it must run on system_long_wq
# (events_long), not on system_wq (events), whose per-CPU workers short
# work items share.  Seen in the workqueue_queue_work trace event, which
# names the queue from 5.19 on (5.10 prints a pointer: skipped there).
detach_queue() {
	t=/sys/kernel/tracing
	ev=$t/events/workqueue/workqueue_queue_work
	if [ ! -w $ev/enable ]; then
		skip "detach work on system_long_wq" "no workqueue trace event"
		return
	fi
	echo 0 > $t/tracing_on
	echo > $t/trace
	echo 1 > $ev/enable
	echo 1 > $t/tracing_on
	sleep 30 & p=$!
	"$TS_BIN/taskstate" track "$p" > /dev/null
	"$TS_BIN/taskstate" untrack "$p" > /dev/null
	kill "$p"
	for i in $(seq 1 50); do	# detached a second after the untrack
		grep -q ts_detach_fn $t/trace && break
		sleep 0.1
	done
	echo 0 > $ev/enable
	grep ts_detach_fn $t/trace > "$TS_OUT/detach-queue.txt"
	echo > $t/trace
	sed 's/^/# /' "$TS_OUT/detach-queue.txt"
	if grep -q 'workqueue=[0-9a-fx]* ' "$TS_OUT/detach-queue.txt"; then
		skip "detach work on system_long_wq" "trace event without the queue's name"
		return
	fi
	check "detach work on system_long_wq" sh -c '
		grep -q "workqueue=events_long " "$1" &&
		! grep -v "workqueue=events_long " "$1" | grep -q .' sh \
		"$TS_OUT/detach-queue.txt"
}

# --- races that need a load or a special build, each under its load -----
section_review() {
	# The newtask probe's race with UNTRACK, its window widened to 200 us
	# by the fault-injection build, a TRACK's snapshot held while the
	# thread is untracked and tracked again, process totals started
	# near the edge where they saturate, and PROCESS's holds of the
	# table lock timed.
	if check "load fault-injection build (track_all=0)" \
	   insmod "$TS_FI_KO" track_all=0 newtask_delay_us=200; then
		run "$TS_BIN/ts_attach" untrack_process_racing_clone \
			snapshot_leaves_a_younger_slot
		run "$TS_BIN/ts_proc" process_totals_saturate_instead_of_wrapping \
			process_walk_holds_the_lock_for_a_chunk
		run "$TS_BIN/ts_mmap" mmap_is_enodev_without_whole_word_loads
		check "unload fault-injection build" rmmod taskstate
	fi
	# nr_untracked, with a table small enough to fill.
	if check "load (track_all=0 max_threads=64)" \
	   insmod "$TS_KO" track_all=0 max_threads=64; then
		run "$TS_BIN/ts_attach" nr_untracked_counts_threads
		check "unload (max_threads=64)" rmmod taskstate
	fi
	# Walks over a full table: SAMPLE and debugfs reschedule per chunk.
	if check "load (max_threads=2048)" insmod "$TS_KO" max_threads=2048; then
		run "$TS_BIN/ts_attach" long_walks_with_full_table
		check "unload (max_threads=2048)" rmmod taskstate
	fi
	# The snapshot of a thread preempted between set_current_state()
	# and schedule(), in both modes.
	if check "load taskstate_qsleeper" insmod "$TS_QSLEEPER_KO"; then
		qtid=$(cat /sys/module/taskstate_qsleeper/parameters/tid)
		for all in 1 0; do
			insmod "$TS_KO" track_all=$all
			TS_QSLEEPER_TID=$qtid TS_QSLEEPER_CPU=0 \
				run "$TS_BIN/ts_attach" snapshot_of_queued_sleeper
			rmmod taskstate
		done
		check "unload taskstate_qsleeper" rmmod taskstate_qsleeper
	fi
	# A thread blocked on a kernel mutex that a kernel thread holds
	# (proxy execution keeps it queued), in both modes.
	if check "load taskstate_kmutex" insmod "$TS_KMUTEX_KO"; then
		for all in 1 0; do
			insmod "$TS_KO" track_all=$all
			run "$TS_BIN/ts_kmutex"
			rmmod taskstate
		done
		check "unload taskstate_kmutex" rmmod taskstate_kmutex
	fi
}

# --- threads stuck before tracking began show their age ------------------
section_stuck() {
	for t in stuck_threads_show_their_age \
		 woken_thread_shows_time_since_wakeup; do
		TS_LOAD_CMD="insmod $TS_KO" run "$TS_BIN/ts_stuck" $t
		check "unload (stuck, track_all=1, $t)" rmmod taskstate
	done
	if check "load (stuck, track_all=0)" insmod "$TS_KO" track_all=0; then
		run "$TS_BIN/ts_stuck"
		check "unload (stuck, track_all=0)" rmmod taskstate
	fi
}

# --- the suite as kselftest installs it: its runner runs a test ----------
section_kselftest() {
	if [ -z "${TS_KSFT:-}" ] || [ ! -x "$TS_KSFT/run_kselftest.sh" ]; then
		skip "run_kselftest.sh" "no kselftest install (scripts/ksft-test.sh)"
		return
	fi
	if check "load (kselftest)" insmod "$TS_KO"; then
		run "$TS_KSFT/run_kselftest.sh" -t taskstate:ts_timens
		check "unload (kselftest)" rmmod taskstate
	fi
}

# --- bad parameters are refused -------------------------------------------
section_params() {
	check "kmemleak's reports sorted by module range (made-up report)" \
		leak_sort_selftest
	check "max_threads=1 refused" \
		sh -c "! insmod '$TS_KO' max_threads=1 2>/dev/null"
	check "nothing left after refused load" \
		sh -c '! grep -q "^taskstate " /proc/modules'
	# Without per-state totals: refused where asked for, "-" in debugfs.
	if check "load (totals=0)" insmod "$TS_KO" totals=0; then
		run "$TS_BIN/ts_totals" totals_follow_info
		run "$TS_BIN/ts_proc" process_follows_info
		check "debugfs shows no totals (totals=0)" \
			sh -c 'sed -n 2p /sys/kernel/debug/taskstate |
			       grep -qE "^ *1 .* - +- +- +- +- +[^ ]"'
		check "unload (totals=0)" rmmod taskstate
	fi
}

# --- torn words: the store helper never tears; plain stores do on 32-bit --
torture() {
	insmod "$TS_TORTURE_KO" mode="$1" ms=1000 || return 1
	p=/sys/module/taskstate_torture/parameters
	torn=$(cat $p/torn) reads=$(cat $p/reads)
	rmmod taskstate_torture
	echo "# mode=$1: $reads reads, $torn torn"
	[ "$reads" -gt 100000 ] || return 1
	[ "$2" = 0 ] && [ "$torn" -eq 0 ] && return 0
	[ "$2" = some ] && [ "$torn" -gt 0 ] && return 0
	return 1
}
# The mapping: the kernel writes with the helper, user space reads the
# mapped page with the uapi header's protocol (atomic) or with two 32-bit
# loads (split, the negative control: it tears on 64-bit too).  With
# mode 3 the kernel changes the per-state totals with ts_pub_set() and
# user space reads them with the uapi protocol (totals) or without its
# invariant (wordonly, the negative control): counted are the sets read
# that do not belong to their word.
torture_map() {	# reader expect [mode [ms]]
	"$TS_BIN/ts_torture_map" "$1" > "$TS_OUT/torture_map.out" 2>&1 &
	reader=$!
	insmod "$TS_TORTURE_KO" mode="${3:-2}" ms="${4:-1000}" ||
		{ kill "$reader"; return 1; }
	wait "$reader" || return 1
	rmmod taskstate_torture || return 1
	set -- "$1" "$2" $(cat "$TS_OUT/torture_map.out")
	echo "# mapped, $1 reads: $4 reads, $6 ${5:-torn}${8:+, $8 retried}"
	[ "$3" = reads ] || return 1
	# "none": over enough reads to mean it; "some": any is the proof.
	[ "$2" = 0 ] && [ "$4" -gt 100000 ] && [ "$6" -eq 0 ] && return 0
	[ "$2" = some ] && [ "$4" -gt 0 ] && [ "$6" -gt 0 ] && return 0
	return 1
}
section_torture() {
	check "no torn word through the store helper ($bits-bit)" torture 0 0
	if [ "$bits" = 32 ]; then
		check "plain 64-bit stores do tear on 32-bit (negative control)" \
			torture 1 some
	else
		check "plain 64-bit stores do not tear on 64-bit" torture 1 0
	fi
	check "no torn word read through the mapping ($bits-bit)" \
		torture_map atomic 0
	check "two 32-bit loads of the mapped word do tear (negative control)" \
		torture_map split some
	check "no per-state totals read that disagree with their word ($bits-bit)" \
		torture_map totals 0 3 4000
	check "an unchanged word alone accepts wrong totals (negative control)" \
		torture_map wordonly some 3 4000
}

# --- unload while readers are busy -----------------------------------------
section_busy() {
	insmod "$TS_KO"
	exec 3</dev/taskstate
	check "rmmod refused while /dev/taskstate is open" \
		sh -c '! rmmod taskstate 2>/dev/null'
	check "module still loaded and working" "$TS_BIN/taskstate" info
	exec 3<&-
	check "rmmod after close" rmmod taskstate

	# A mapping whose fd is closed holds the module just the same.
	insmod "$TS_KO"
	"$TS_BIN/ts_maphold" > "$TS_OUT/maphold.out" &
	hold=$!
	for i in $(seq 1 100); do
		grep -q mapped "$TS_OUT/maphold.out" 2>/dev/null && break
		sleep 1
	done
	check "ts_maphold mapped and closed its fd" grep -q mapped "$TS_OUT/maphold.out"
	check "rmmod refused while mapped (fd closed)" \
		sh -c '! rmmod taskstate 2>/dev/null'
	kill "$hold"
	check "mapping readable until munmap" wait "$hold"
	check "rmmod after munmap" rmmod taskstate

	insmod "$TS_KO"
	for i in 1 2; do
		(while :; do cat /sys/kernel/debug/taskstate > /dev/null 2>&1; done) &
		eval "reader$i=$!"
	done
	sleep 1
	unloaded=no
	for i in $(seq 1 200); do
		rmmod taskstate 2>/dev/null && { unloaded=yes; break; }
	done
	kill "$reader1" "$reader2"
	wait "$reader1" "$reader2" 2>/dev/null
	check "rmmod while debugfs readers loop" test $unloaded = yes
	if loaded taskstate; then rmmod taskstate; fi
}

# --- 50 load/unload cycles under a context-switch load ---------------------
# The load runs on CPU 0, the cycles on CPU 1, and check.sh gives this
# section a single-threaded TCG boot of its own: under QEMU's
# multi-threaded TCG, patching kernel text (what registering a tracepoint
# probe does) while the other vCPU context-switches flat out hangs the
# guest in text_poke_bp() waiting for that vCPU -- reproduced with ftrace
# alone (echo 1 > events/sched/sched_switch/enable), no module loaded.
section_cycles() {
	taskset -c 0 "$TS_BIN/ts_pingpong" > "$TS_OUT/pingpong.log" &
	load=$!
	taskset -p -c 1 $$ > /dev/null
	check "50 load/unload cycles under load" "$TS_BIN/ts_modcycle" "$TS_KO" 50
	taskset -p -c 0-1 $$ > /dev/null
	kill "$load"
	wait "$load"
	cat "$TS_OUT/pingpong.log"
}

# --- everything hostile at once, with unload/load cycles ------------------
section_soak() {
	secs=${TS_SOAK_S:-15}
	case $(uname -r) in *-ts-*) secs=${TS_SOAK_S:-60} ;; esac
	insmod "$TS_KO" 2>/dev/null
	run "$TS_BIN/ts_soak" -d "$secs" -k "$TS_KO"
	# Whatever state the cycles left it in: tracking a new thread works.
	check "tracking works after the soak" sh -c '
		sleep 30 & p=$!
		rc=1
		if "$1/taskstate" track -p "$p" > /dev/null; then
			for i in $(seq 1 50); do	# until it sleeps
				"$1/taskstate" show -p "$p" > "$2/soak-show.txt"
				grep -q " sleeping " "$2/soak-show.txt" &&
					{ rc=0; break; }
				sleep 0.1
			done
			sed "s/^/# /" "$2/soak-show.txt"
		fi
		kill $p; exit $rc' sh "$TS_BIN" "$TS_OUT"
	check "unload after the soak" rmmod taskstate
}

# --- kmemleak (the debug kernel): nothing the module allocated is left ----
# Cleared before the first section, scanned once the module is unloaded
# (at the end, or before lockdown, which closes debugfs' writable files).
# kmemleak reports an object unreferenced for 5 s and more whose contents
# stayed the same over a scan: so two scans.  A leak is ours when a frame
# of its backtrace is in one of our modules: [taskstate...] while loaded,
# and once unloaded a bare address, which modrange_save() recorded the
# range of before each rmmod (/proc/modules: name, size, base).  A bare
# address in no recorded range (a load rmmod did not see: ts_soak's own
# cycles) counts as ours too: only our modules are unloaded in these
# boots.  Leaks with kernel frames only are listed, not failed.
KMEMLEAK=/sys/kernel/debug/kmemleak
MODRANGES=$TS_OUT/modranges
modrange_save() {
	grep '^taskstate' /proc/modules 2>/dev/null |
		while read -r name size _ _ _ base _; do
			echo "$name $size $base"
		done >> "$MODRANGES"
}
rmmod() { modrange_save; command rmmod "$@"; }

# Sort a kmemleak report (file $1) by the ranges in $2: prints every leak,
# "# ours:" or "# kernel's:" before each, then "ours N kernel N".
leak_sort() {
	awk -v ranges="$2" '
	function hex(s,   i, c, n) {
		n = 0
		for (i = 1; i <= length(s); i++) {
			c = index("0123456789abcdef", substr(s, i, 1))
			if (!c)
				return -1
			n = n * 16 + c - 1
		}
		return n
	}
	# The high digits as text, the low 32 bits as a number (exact in awk).
	function in_range(a,   i, h, l) {
		a = tolower(a); sub(/^0x/, "", a)
		h = substr(a, 1, length(a) - 8); l = hex(substr(a, length(a) - 7))
		for (i = 1; i <= nr; i++)
			if (h == hi[i] && l >= lo[i] && l < lo[i] + sz[i])
				return nm[i]
		return ""
	}
	function flush() {
		if (blk == "")
			return
		if (who != "") {
			ours++
			print "# ours (" who "):"
		} else {
			kern++
			print "# kernel'"'"'s:"
		}
		printf "%s", blk
		blk = ""
	}
	BEGIN {
		while ((getline line < ranges) > 0) {
			split(line, f, " ")
			a = tolower(f[3]); sub(/^0x/, "", a)
			nr++; nm[nr] = f[1]; sz[nr] = f[2] + 0
			hi[nr] = substr(a, 1, length(a) - 8)
			lo[nr] = hex(substr(a, length(a) - 7))
		}
	}
	/^unreferenced object/ { flush(); who = "" }
	{ blk = blk "#   " $0 "\n" }
	/\[taskstate/ { who = "taskstate, loaded" }
	/\] 0x[0-9a-fA-F]+$/ && who == "" {
		who = in_range($NF)
		if (who == "")
			who = "a module unloaded unseen"
	}
	END { flush(); print "ours " ours + 0 " kernel " kern + 0 }' "$1"
}

# leak_sort on a made-up report: a kernel-only leak, one whose frame lies
# in a recorded range of an unloaded module, one in no recorded range.
leak_sort_selftest() {
	printf '%s\n' 'taskstate 16384 0xffffffffc0a00000' > "$TS_OUT/ls-ranges"
	cat > "$TS_OUT/ls-report" <<-EOF
	unreferenced object 0xffff888003a1c000 (size 64):
	  backtrace:
	    [<ffffffff812a3b4c>] __kmem_cache_alloc_node+0x1bc/0x2e0
	    [<ffffffff81b2c3d4>] kobject_uevent_env+0x1d4/0x7c0
	unreferenced object 0xffff888003a1c100 (size 128):
	  backtrace:
	    [<ffffffff812a3b4c>] __kmem_cache_alloc_node+0x1bc/0x2e0
	    [<ffffffffc0a03f10>] 0xffffffffc0a03f10
	unreferenced object 0xffff888003a1c200 (size 32):
	  backtrace:
	    [<ffffffffc0b01000>] 0xffffffffc0b01000
	EOF
	leak_sort "$TS_OUT/ls-report" "$TS_OUT/ls-ranges" > "$TS_OUT/ls-out"
	sed 's/^/# /' "$TS_OUT/ls-out"
	grep -qx 'ours 2 kernel 1' "$TS_OUT/ls-out" &&
		grep -q '^# ours (taskstate):' "$TS_OUT/ls-out" &&
		grep -q '^# ours (a module unloaded unseen):' "$TS_OUT/ls-out"
}

leak_check() {
	[ -w $KMEMLEAK ] || return 0
	if loaded taskstate; then rmmod taskstate; fi
	sleep 6
	if ! { echo scan > $KMEMLEAK && echo scan > $KMEMLEAK; } 2>/dev/null; then
		not_ok "kmemleak: nothing leaked # kmemleak is off (see dmesg)"
		return
	fi
	cat $KMEMLEAK > "$TS_OUT/kmemleak.txt"
	touch "$MODRANGES"
	leak_sort "$TS_OUT/kmemleak.txt" "$MODRANGES" > "$TS_OUT/kmemleak-sorted.txt"
	sed '$d' "$TS_OUT/kmemleak-sorted.txt"
	echo "# kmemleak: $(tail -n 1 "$TS_OUT/kmemleak-sorted.txt")"
	check "kmemleak: nothing leaked by taskstate" \
		grep -q '^ours 0 ' "$TS_OUT/kmemleak-sorted.txt"
	echo clear > $KMEMLEAK
}

# --- the module DKMS built from the taskstate-dkms package (deb-test) -----
# Loaded as it is, and read with the packaged command and library.
section_deb() {
	kver=$(uname -r)
	ko=${TS_DEB_DIR:-}/$kver/taskstate.ko
	if [ -z "${TS_DEB_DIR:-}" ] || [ ! -f "$ko" ]; then
		skip "package-built module" "no $ko (deb-test did not run)"
		return
	fi
	root=$TS_DEB_DIR/root
	lib=$(dirname "$(find "$root/usr/lib" -name 'libtaskstate.so.0' | head -n1)")
	pcli() { LD_LIBRARY_PATH=$lib "$root/usr/bin/taskstate" "$@"; }
	check "load the module dkms built from taskstate-dkms ($kver)" insmod "$ko"
	check "the loaded module is that file (build-id)" \
		cmp -s /sys/module/taskstate/notes/.note.gnu.build-id \
		"$TS_DEB_DIR/$kver/build-id.note"
	check "packaged taskstate runs with the packaged libtaskstate.so.0" \
		sh -c "LD_LIBRARY_PATH=$lib ldd $root/usr/bin/taskstate | grep -q '$lib/libtaskstate.so.0'"
	check "packaged taskstate info: ABI version 1, threads tracked" \
		sh -c "LD_LIBRARY_PATH=$lib $root/usr/bin/taskstate info > $TS_OUT/deb-info.txt &&
		       grep -qx 'abi_version: 1' $TS_OUT/deb-info.txt &&
		       ! grep -qx 'nr_tracked: 0' $TS_OUT/deb-info.txt"
	# init sleeps: one row, SLEEPING, AGE as a duration.
	pcli show -p 1 > "$TS_OUT/deb-show.txt" 2>&1
	sed 's/^/# /' "$TS_OUT/deb-show.txt"
	check "packaged taskstate show -p 1: init sleeping" \
		awk 'NR == 1 { h = ($4 == "SINCE" && $5 == "AGE") }
		     NR == 2 { r = ($1 == 1 && $3 == "sleeping" && $5 ~ /^[0-9.]+[a-z]+([0-9][0-9][a-z])?$/) }
		     END { exit !(h && r && NR == 2) }' "$TS_OUT/deb-show.txt"
	check "debugfs table of the package-built module" \
		sh -c 'head -n 2 /sys/kernel/debug/taskstate | grep -q "^ *1 "'
	check "unload the package-built module" rmmod taskstate
}

# --- lockdown: last, it cannot be undone in this boot ----------------------
section_lockdown() {
	insmod "$TS_KO"
	lockdown=/sys/kernel/security/lockdown
	if [ -w $lockdown ] && echo integrity > $lockdown 2>/dev/null; then
		echo "# lockdown: $(cat $lockdown)"
		check "debugfs table readable under lockdown" \
			sh -c 'head -n 2 /sys/kernel/debug/taskstate | grep -q "^ *1 "'
		check "/dev/taskstate works under lockdown" \
			"$TS_BIN/taskstate" show -p 1
	else
		skip "lockdown" "no lockdown LSM in this kernel"
	fi
	check "unload under lockdown" rmmod taskstate
}

# --- bpf: the BPF backend, in a boot made with lockdown ---------------------
# (TEST_PROGS_EXTENDED installs it beside this file.)
. "$(dirname "$0")/bpf_vm.sh"

if [ -w $KMEMLEAK ]; then	# what the boot leaked is not ours
	echo scan > $KMEMLEAK
	echo scan > $KMEMLEAK
	echo clear > $KMEMLEAK
fi
leaks_checked=no
for section in ${TS_SECTIONS:-track_all track_none params review stuck torture busy cycles soak deb lockdown}; do
	if [ "$section" = lockdown ]; then
		leak_check
		leaks_checked=yes
	fi
	section_t0=$(date +%s)
	"section_$section"
	echo "# section $section took $(( $(date +%s) - section_t0 )) s"
done
[ $leaks_checked = yes ] || leak_check
echo "# done: $n shell checks"
