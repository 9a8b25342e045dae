#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: for each kernel in $KERNELS, build taskstate against its
# headers, boot it under QEMU, load the module, run the selftests, unload,
# and check the kernel log.  Prints the TAP of every kernel and, last,
# one line "N passed, N failed, N skipped".  Exits non-zero on any
# failure, timeout or missing report.
#
#   KERNELS="amd64 rt-amd64 686 amd64-5.10 amd64-6.12 amd64-7.2 arm64 \
#            debug kcsan proxy" scripts/check.sh
#
# (flavours: scripts/kernels.sh; a kernel release works too).
#
# When amd64 is among the kernels, the benchmarks also run once, for a
# few iterations each (scripts/bench.sh --quick, 1-5 min), so they cannot
# rot: a pass means every scenario produced its numbers, not that a target
# was met.  BENCH=0 leaves them out.  There too, one more boot counts the
# guest instructions of a pinned pipe round trip with every thread tracked
# against the module not loaded (scripts/count.sh --guard), and fails if
# the ratio passes its limit: counted, not timed, so a loaded host cannot
# move it.  COUNT=0 leaves it out.
# The job_* functions run through run_jobs()' eval, which shellcheck
# cannot follow:
# shellcheck disable=SC2317
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"
# Unset or "all": every kernel; set but empty: none (host tests only).
KERNELS=$(ts_flavours) || exit 2
HOST_TESTS=${HOST_TESTS-$TS_HOST_TESTS}
VM_TIMEOUT=${VM_TIMEOUT:-1500}
# The debug kernels run the same suite several times slower (KASAN,
# lockdep, KCSAN under emulation).
VM_TIMEOUT_DEBUG=${VM_TIMEOUT_DEBUG:-7200}
# The VM runner (a stand-in in check_retry()'s test).
VM_RUN=${VM_RUN:-$top/scripts/vm-run.sh}
CROSS32=(CC=i686-linux-gnu-gcc EXTRA_LDFLAGS=-static)
CROSSARM64=(CC=aarch64-linux-gnu-gcc EXTRA_LDFLAGS=-static)

# What must never appear in a test boot's kernel log: any report of the
# debug kernels' checkers too (lockdep, KASAN, KCSAN: "BUG: KCSAN:",
# RCU, DEBUG_OBJECTS, DEBUG_LIST; kmemleak's verdict is run_vm.sh's
# leak check, whose scans at the start may log leaks from the boot).
BAD='BUG:|WARNING:|Oops|Kernel panic|Call Trace|'\
'sleeping function called from invalid context|circular locking|'\
'recursive locking|inconsistent lock state|lockdep is turned off|'\
'DEBUG_LOCKS_WARN_ON|KASAN|UBSAN|'\
'rcu: INFO|soft lockup|blocked for more than|general protection fault[:,]|'\
'ODEBUG|list_add corruption|list_del corruption'

# KCSAN's reports, out of a kernel log (the kcsan kernel).  A report is
# the module's when one of the two racing accesses is in module code: the
# first frame under "read/write ... to 0x..." ends in [taskstate...]
# (the module or a test module).  Otherwise both accesses are the
# kernel's own, though the module may have led there (its probes and
# readers read the clock with ktime_get_boot_fast_ns(), whose latch
# reader races with timekeeping_update() by design; a copy_to_user() can
# fault and flush a TLB): those are listed by title, not failed, for no
# annotation in the module could touch them.  Only lines of the report's
# own shapes are taken into it: another CPU's line printed in the middle
# goes on to the BAD check.  A report cut short (no closing line) counts
# as the module's.  Prints the log without KCSAN reports; appends the
# module's reports to OURS and the others' titles to KERNEL.
kcsan_split() {	# log ours kernel
	awk -v ours="$2" -v kernel="$3" '
	{ sub(/\r$/, "") }	# the serial console ends lines in CR LF
	/BUG: KCSAN:/ { inb = 1; blk = ""; mine = 0; want = 0; title = $0 }
	!inb { print; next }
	{
		line = $0
		sub(/^\[[ 0-9.]*\] */, "", line)
		frame = line ~ /^ *[^ ]+\+0x[0-9a-f]+\/0x[0-9a-f]+/
		if (line ~ / to 0x[0-9a-f]+ of [0-9]+ bytes by /)
			want = 1
		else if (want && frame) {
			if (line ~ /\[taskstate/)
				mine = 1
			want = 0
		} else if (!frame && line !~ /^$|BUG: KCSAN:|^value changed|^bits changed|^Reported by|^CPU: |^Hardware name|reordered|^=+$/) {
			print	# not part of the report: another CPU
			next
		}
		blk = blk $0 "\n"
		if (line ~ /^=+$/) {
			if (mine) {
				printf "%s", blk >> ours
			} else {
				sub(/^.*BUG: KCSAN: /, "", title)
				sub(/\+0x[0-9a-f]+\/0x[0-9a-f]+/, "", title)
				print title >> kernel
			}
			inb = 0
		}
	}
	END { if (inb) printf "%s", blk >> ours }' "$1"
}

# This script's own results, in lib.sh's TAP (ok counts failed); with
# the counts of every TAP file it reads (count()).
passed=0 skipped=0
# Every failure is listed again just above the summary, so the tail of
# a long log (all CI keeps) names what failed.
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
# Inside a job (run_jobs) the lines only go to the job's log, which the
# scheduler counts when the job ends.
in_job=
pass() {
	ok 0 "$*"
	[ -n "$in_job" ] || passed=$((passed + 1))
}
fail() {
	ok 1 "$*"
	[ -n "$in_job" ] || echo "not ok - $*" >> "$failures"
}

# Where the time went: one row per step, printed as a table at the end
# (and by .ci/run, with its own setup).
profile=$build/profile.tsv
prof() {	# seconds, step
	printf '%s\t%s\n' "$1" "$2" >> "$profile"
}

count() {	# TAP file [name in the failure list]
	local p f s
	p=$(grep -E '^ok ' "$1" | grep -vc '# SKIP')
	s=$(grep -E '^ok .*# SKIP' "$1" | grep -c .)
	f=$(grep -cE '^not ok ' "$1")
	grep -E '^not ok ' "$1" | sed "s|^|${2:-$1}: |" >> "$failures"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# The user-space side, once: native for the amd64 guests (which run the
# host's programs), static i686 for the 686 guest and the -m32 ABI test,
# static aarch64 for the arm64 guest (only when it is tested).
build_userspace() {
	local jobs
	jobs=$(nproc)
	make -s -j"$jobs" -C "$top/tools" O="$build/bin64" all &&
	make -s -j"$jobs" -C "$top/bpf" O="$build/bin64" &&
	make -s -j"$jobs" -C "$top/selftests/taskstate" O="$build/bin64" &&
	make -s -j"$jobs" -C "$top/tools" O="$build/bin32" "${CROSS32[@]}" all &&
	make -s -j"$jobs" -C "$top/selftests/taskstate" O="$build/bin32" "${CROSS32[@]}" ||
		return 1
	case " $KERNELS " in
	*" arm64 "*|*-arm64" "*)
		make -s -j"$jobs" -C "$top/tools" O="$build/bin-arm64" "${CROSSARM64[@]}" all &&
		make -s -j"$jobs" -C "$top/bpf" O="$build/bin-arm64" "${CROSSARM64[@]}" \
			SYSROOT="$CACHE/arm64/bpf-sysroot" &&
		make -s -j"$jobs" -C "$top/selftests/taskstate" O="$build/bin-arm64" \
			"${CROSSARM64[@]}"
		;;
	esac
}

# The uapi header's mapped read on i686, as gcc compiles it (-O0, -O2,
# -O2 -msse2): one 8-byte load (x87 fild or SSE movq), never a
# cmpxchg8b or another locked instruction, which would write to the
# read-only page and fault.
check_i686_read() {
	local o=$build/i686-map-read.o opt
	for opt in -O0 -O2 "-O2 -msse2"; do
		# shellcheck disable=SC2086
		printf '%s\n' '#include <linux/taskstate.h>' \
			'int rd(const struct taskstate_map_entry *e, __u32 g, __u64 *w)' \
			'{ return taskstate_map_entry_read(e, g, w); }' |
			i686-linux-gnu-gcc $opt -I"$top/include/uapi" -x c -c -o "$o" - ||
			{ fail "i686 mapped read ($opt): build"; return; }
		if i686-linux-gnu-objdump -d "$o" | grep -qE 'cmpxchg8b|lock' ||
		   ! i686-linux-gnu-objdump -d "$o" | grep -qE 'fildll|movq'; then
			i686-linux-gnu-objdump -d "$o"
			fail "i686 mapped read ($opt): one plain 8-byte load"
		else
			pass "i686 mapped read ($opt): one plain 8-byte load"
		fi
	done
}

# One boot: run run_vm.sh's SECTIONS (all if empty) under ACCEL.
boot() {	# kver out name accel sections
	local kver=$1 out=$2 name=$3 accel=$4 sections=$5
	local res=$out/results-$name script=$out/guest-$name.sh start rc=0
	local tmo=$VM_TIMEOUT append=""
	case $kver in *-ts-*) tmo=$VM_TIMEOUT_DEBUG ;; esac
	# The kernel's own races (see kcsan_split()) must not end the boot.
	# A log buffer that holds every report of an hour's boot.
	case $kver in *-ts-*) append="log_buf_len=64M" ;; esac
	case $kver in *-ts-kcsan) append+=" panic_on_warn=0" ;; esac
	# The BPF backend's boots: where no module may load.
	case $name in
	bpf) append+=" lockdown=integrity" ;;
	bpf-conf) append+=" lockdown=confidentiality" ;;
	esac
	rm -rf "$res"
	mkdir -p "$res"
	case $kver in
	*-686*|*-arm64)
		# No host programs in this guest: everything goes to the share.
		case $kver in
		*-686*) cp -r "$build/bin32" "$res/bin" ;;
		*) cp -r "$build/bin-arm64" "$res/bin" ;;
		esac
		cp -r "$out"/*.ko "$out/fi" "$top/selftests/taskstate/run_vm.sh" \
			"$top/selftests/taskstate/bpf_vm.sh" "$res/"
		cat > "$script" <<-EOF
		TS_KO=/results/taskstate.ko TS_TORTURE_KO=/results/taskstate_torture.ko \
		TS_BIN=/results/bin TS_OUT=/results TS_SECTIONS="$sections" \
		sh /results/run_vm.sh
		EOF
		;;
	*)
		cat > "$script" <<-EOF
		TS_KO=$out/taskstate.ko TS_TORTURE_KO=$out/taskstate_torture.ko \
		TS_BIN=$build/bin64 TS_BIN32=$build/bin32 TS_OUT=\$TS_OUT \
		TS_DEB_DIR=$build/deb/vm TS_KSFT=$build/ksft-install \
		TS_SECTIONS="$sections" sh $top/selftests/taskstate/run_vm.sh
		EOF
		;;
	esac
	start=$(date +%s)
	# A guest that dies before its script starts has loaded nothing of
	# ours (vm-run.sh: OUTDIR/started): the kernel's own flake, booted
	# once more, its console kept.  One that dies later is never retried.
	rm -f "$res/console-flake.log"
	"$VM_RUN" --quiet --timeout "$tmo" --append "$append" \
		--accel "$accel" "$kver" "$res" "$script" || rc=$?
	if [ $rc != 0 ] && [ ! -e "$res/started" ]; then
		mv "$res/console.log" "$res/console-flake.log"
		echo "# $kver ($name): kernel flake: the guest died (status $rc) before its script started; booting once more ($res/console-flake.log):"
		grep -E "$BAD" "$res/console-flake.log" | head -n 5 | sed 's/^/#   /'
		rc=0
		"$VM_RUN" --quiet --timeout "$tmo" --append "$append" \
			--accel "$accel" "$kver" "$res" "$script" || rc=$?
	fi
	cat "$res/output.log" 2>/dev/null
	echo "# $kver ($name): guest status $rc, $(( $(date +%s) - start )) s"
	[ $rc = 0 ] || fail "$kver ($name): guest did not finish (status $rc, see $res/console.log)"
	rm -f "$res/kcsan-module.txt" "$res/kcsan-kernel.txt"
	{
		[ ! -f "$res/dmesg.txt" ] || kcsan_split "$res/dmesg.txt" \
			"$res/kcsan-module.txt" "$res/kcsan-kernel.txt"
		# The console has the same reports, without their stacks.
		[ ! -f "$res/console.log" ] ||
			kcsan_split "$res/console.log" /dev/null /dev/null
	} > "$res/log-checked.txt"
	# The log taken at the end must start at boot: a log buffer that
	# wrapped would have lost reports (the console has no stacks).
	if [ -f "$res/dmesg.txt" ] &&
	   ! head -n 1 "$res/dmesg.txt" | grep -q '^\[ *0\.000000\]'; then
		echo "the kernel log buffer wrapped: reports may be lost" \
			>> "$res/kcsan-module.txt"
	fi
	if [ -s "$res/kcsan-kernel.txt" ]; then
		echo "# $kver ($name): $(wc -l < "$res/kcsan-kernel.txt") KCSAN reports of races between two kernel accesses (not the module's), by title:"
		sort "$res/kcsan-kernel.txt" | uniq -c | sed 's/^/#   /'
	fi
	# (The command line names hung_task_panic, softlockup_panic...)
	if grep -hE "$BAD" "$res/log-checked.txt" | grep -v 'ommand line:' ||
	   { [ -s "$res/kcsan-module.txt" ] && cat "$res/kcsan-module.txt"; }; then
		fail "$kver ($name): kernel log clean"
	else
		pass "$kver ($name): kernel log clean"
	fi
}

# boot()'s retry, with a stand-in for vm-run.sh: a guest that dies before
# its script starts is booted once more (and passes if that boot passes);
# one that dies after is a failure, booted once.
check_retry() {
	local d=$build/retry-test stub out
	rm -rf "$d"
	mkdir -p "$d/out"
	stub=$d/vm-run
	# shellcheck disable=SC2016
	printf '%s\n' '#!/bin/sh' 'eval "res=\${$(($# - 1))}"' \
		'echo x >> "$STUB_DIR/calls"' \
		'n=$(wc -l < "$STUB_DIR/calls")' \
		'rm -f "$res/started"' \
		'echo "[    0.000000] Linux version stub" > "$res/dmesg.txt"' \
		'if [ "$n" -le "$STUB_EARLY" ]; then' \
		'  echo "Oops: int3: 0000 [#1] sched_clock_cpu" > "$res/console.log"; exit 130; fi' \
		': > "$res/started"; echo "booted" > "$res/console.log"' \
		'echo "ok 1 stub test" > "$res/output.log"' \
		'[ "$STUB_LATE" = 1 ] && exit 130; exit 0' > "$stub"
	chmod +x "$stub"
	: > "$d/script"
	retry_case() {	# early late: boots that die before / after the start
		rm -f "$d/calls"
		(in_job=1 VM_RUN=$stub
		 export STUB_DIR=$d STUB_EARLY=$1 STUB_LATE=$2
		 boot 6.1.0-0-amd64 "$d/out" stub tcg "") > "$d/log" 2>&1
		sed 's/^/#   /' "$d/log"
		calls=$(wc -l < "$d/calls")
	}
	retry_case 1 0
	if [ "$calls" = 2 ] && grep -q 'kernel flake' "$d/log" &&
	   ! grep -q '^not ok' "$d/log" &&
	   grep -q int3 "$d/out/results-stub/console-flake.log"; then
		pass "boot: a kernel that dies before the script is booted once more, its console kept"
	else
		fail "boot: a kernel that dies before the script is booted once more, its console kept ($calls boots)"
	fi
	retry_case 2 0
	if [ "$calls" = 2 ] && grep -q '^not ok .*guest did not finish' "$d/log"; then
		pass "boot: a kernel that dies twice before the script fails"
	else
		fail "boot: a kernel that dies twice before the script fails ($calls boots)"
	fi
	retry_case 0 1
	if [ "$calls" = 1 ] && grep -q '^not ok .*guest did not finish' "$d/log" &&
	   ! grep -q 'kernel flake' "$d/log"; then
		pass "boot: a guest that dies after its script started is a failure, never retried"
	else
		fail "boot: a guest that dies after its script started is a failure, never retried ($calls boots)"
	fi
}

# A host step whose output is TAP, in the parent: printed and counted, a
# failure if it ends non-zero without a failed line, a row in the profile.
tap_step() {	# name tap command...
	local name=$1 tap=$2 t rc
	shift 2
	echo "# === $name ==="
	t=$(date +%s)
	"$@" > "$tap" 2>&1
	rc=$?
	cat "$tap"
	count "$tap"
	[ "$rc" = 0 ] || grep -q '^not ok ' "$tap" || fail "$name (status $rc)"
	prof $(( $(date +%s) - t )) "host: $name"
}

# --- the jobs: each kernel's steps, the host tests, the benchmarks --------
# Each job runs in the background with its output in build/jobs/NAME.log,
# which run_jobs() prints and counts when the job ends.

kver_of() {	# flavour: the release its build job resolved
	cat "$build/jobs/kver-$1" 2>/dev/null
}

job_build() {	# flavour
	local kver out warn
	kver=$("$top/scripts/kernels.sh" "$1") || { fail "$1: no kernel"; return; }
	echo "$kver" > "$build/jobs/kver-$1"
	out=$build/$kver
	if ! TS_KBUILD_ARGS=W=1 "$top/scripts/build-module.sh" "$kver" "$out" \
	     > "$build/build-$kver.log" 2>&1; then
		cat "$build/build-$kver.log"
		rm -f "$out/taskstate.ko"
		fail "$kver: module build"
		return
	fi
	warn=$(grep -i 'warning' "$build/build-$kver.log")
	if [ -n "$warn" ]; then
		echo "$warn" | sed 's/^/# /'
		fail "$kver: W=1 build without warnings"
	else
		pass "$kver: W=1 build without warnings"
	fi
}

# One of a kernel's three boots, once its module is built (a failed build
# was counted by its own job).
job_boot() {	# flavour name
	local kver out deb ksft
	kver=$(kver_of "$1")
	out=$build/$kver
	if [ -z "$kver" ] || [ ! -f "$out/taskstate.ko" ]; then
		echo "# $1 ($2): not booted, no module was built"
		return
	fi
	case $2 in
	torture)
		# Torn 64-bit words need two vCPUs really in parallel: the
		# torture boot runs with multi-threaded TCG, alone on the
		# host (run_jobs), and only it.  Multi-threaded TCG livelocks
		# now and then when the kernel patches its text (text_poke_bp:
		# tracepoints enabled or disabled, by the module or by
		# bpftrace): seen under a context-switch load, at a bpftrace
		# attach, and at an rmmod right after the bpftrace test on the
		# RT kernel, both vCPUs executing and no guest watchdog
		# firing.  Every boot that loads taskstate or runs bpftrace is
		# single-threaded, one host thread for its two vCPUs.
		boot "$kver" "$out" torture tcg torture
		;;
	main)
		# The module DKMS built from the taskstate-dkms package
		# (deb-test, 6.1 and 6.12 amd64): a smoke test in this same
		# boot, before lockdown, which must stay last.
		deb=
		[ -f "$build/deb/vm/$kver/taskstate.ko" ] && deb=deb
		# The suite as kselftest installs it (ksft-test, host
		# programs: the amd64-family boots).
		ksft=
		case $kver in *-686*|*-arm64) ;; *)
			[ -x "$build/ksft-install/run_kselftest.sh" ] && ksft=kselftest ;;
		esac
		boot "$kver" "$out" main tcg,thread=single \
			"track_all track_none params review stuck $ksft busy $deb lockdown"
		;;
	cycles)
		boot "$kver" "$out" cycles tcg,thread=single "cycles soak"
		;;
	bpf)
		boot "$kver" "$out" "$2" tcg,thread=single bpf_full
		;;
	bpf-conf)
		boot "$kver" "$out" "$2" tcg,thread=single bpf
		;;
	esac
}

# Where the BPF backend runs (bpf_vm.sh, in boots made with lockdown) and
# where it does not, said as a skip.
bpf_flavour() {	# flavour: prints why not, or nothing
	case $1 in
	amd64|rt-amd64|amd64-6.12|amd64-7.2|arm64) ;;
	686) echo "i686's 6.1 has no BTF: no CO-RE, no tp_btf" ;;
	amd64-5.10) echo "5.10's BPF has no atomic fetch-add, exchange or compare-and-exchange (5.12), which the program's claims and stores use" ;;
	debug|kcsan|proxy) echo "this kernel is built without BTF (scripts/kconfig/base.config: CONFIG_DEBUG_INFO_NONE)" ;;
	*) echo "the BPF backend is not tried on this kernel" ;;
	esac
}

job_bpf_skip() {	# flavour
	echo "ok - $1: the BPF backend # SKIP $(bpf_flavour "$1")"
}

# Host-side tests: DKMS on the 6.1 and 6.12 headers, make install, the
# Debian packages, the man pages, the docs, kselftest's install.
job_host() {	# dkms-test | install-test | deb-test | man-test | ...
	local tap=$build/$1.tap rc
	"$top/scripts/$1.sh" 2>&1 | tee "$tap"
	rc=${PIPESTATUS[0]}
	# A bail-out before any test line is a failure too.
	[ "$rc" = 0 ] || grep -q '^not ok ' "$tap" || fail "$1 (status $rc)"
}

# The same tests for the kernels whose headers live in a debootstrap
# chroot (amd64-5.10, amd64-7.2), inside that chroot: its compiler, its
# dkms and kmod, on a copy of the sources.  The chroot's kernel gets a
# module index first, as an installed kernel has.
job_chroot_host() {	# dkms-test | install-test, flavour
	local kver croot d rc tap
	kver=$("$top/scripts/kernels.sh" "$2") || { fail "$1 $2: no kernel"; return; }
	tap=$build/$1-$kver.tap
	for croot in "$CACHE"/chroot/*; do
		[ -d "$croot/usr/src/linux-headers-$kver" ] && break
	done
	echo "# $1 ($2, in ${croot##*/})"
	d=/tmp/taskstate-hosttest.$$.$BASHPID
	rm -rf "${croot:?}$d"
	mkdir -p "$croot$d"
	(cd "$top" && cp -r Kbuild Makefile dkms.conf module include man scripts "$croot$d/" &&
	 find lib tools -name build -prune -o -type f -exec cp --parents -t "$croot$d/" {} +)
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		mount -t proc proc "$1/proc"
		chroot "$1" depmod "$3"
		chroot "$1" bash "$2/scripts/$4.sh" "$3"' \
		sh "$croot" "$d" "$kver" "$1" 2>&1 | tee "$tap"
	rc=${PIPESTATUS[0]}
	rm -rf "${croot:?}$d"
	[ "$rc" = 0 ] || grep -q '^not ok ' "$tap" || fail "$1 $kver (status $rc)"
}

job_bench() {
	if "$top/scripts/bench.sh" --quick > "$build/bench-quick.log" 2>&1; then
		pass "bench --quick: every scenario ran ($build/bench-quick-run/REPORT.md)"
	else
		tail -n 20 "$build/bench-quick.log"
		fail "bench --quick (log: $build/bench-quick.log)"
	fi
}

# The counted cost of tracking, the module's and the BPF backend's (every
# thread, and nothing, tracked): one boot, three TAP lines.
job_count() {
	# Not n: pass() and fail() count their TAP lines in it (lib.sh's ok()).
	local line desc results=0
	"$top/scripts/count.sh" --guard > "$build/count-guard.log" 2>&1
	while read -r line; do
		desc=$(echo "$line" | sed -E 's/^(not )?ok ([0-9]+ |- )//')
		case $line in
		ok*) pass "$desc" ;;
		*) fail "$desc" ;;
		esac
		results=$((results + 1))
	done < <(grep -E '^(not )?ok ([0-9]+ |- )counted' "$build/count-guard.log")
	if [ $results != 3 ]; then
		tail -n 20 "$build/count-guard.log"
		fail "counted pipe guard: $results results of 3 (log: $build/count-guard.log)"
	fi
}

# The job list, in the order the jobs start: NAME, SLOTS (host cores it
# keeps busy; "all": it runs alone), the jobs it must start after (done,
# passed or not; names not in the list count as done), and its command.
job_name=() job_slots=() job_after=() job_cmd=()
add_job() {	# name slots after command
	job_name+=("$1") job_slots+=("$2") job_after+=("$3") job_cmd+=("$4")
}

# Runs the list on LANES host cores (default: every core): a job starts,
# in list order, once the jobs it comes after are done and it fits in the
# free cores; a ready job that does not fit holds back those after it, so
# a job that runs alone is not starved.  Each job's log is printed and
# counted when it ends, with a line of its time in the profile.
run_jobs() {
	local lanes=${LANES:-$(nproc)} free i j pid rc need running=0 start after
	local -A state=() job_of=() need_of=() t0=()
	[ "$lanes" -ge 1 ] 2>/dev/null || lanes=1
	free=$lanes
	start=$(date +%s)
	for i in "${!job_name[@]}"; do state[$i]=pending; done
	while :; do
		for i in "${!job_name[@]}"; do
			[ "${state[$i]}" = pending ] || continue
			IFS=';' read -ra after <<< "${job_after[$i]}"
			for j in "${after[@]}"; do
				job_done "$j" || continue 2
			done
			need=${job_slots[$i]}
			[ "$need" = all ] || [ "$need" -gt "$lanes" ] && need=$lanes
			[ "$need" -le "$free" ] || break
			free=$((free - need)) running=$((running + 1))
			state[$i]=running
			echo "# started: ${job_name[$i]}"
			(in_job=1; eval "${job_cmd[$i]}") > "$build/jobs/$i.log" 2>&1 &
			job_of[$!]=$i need_of[$!]=$need t0[$!]=$(date +%s)
		done
		[ "$running" -gt 0 ] || break
		wait -n -p pid "${!job_of[@]}"
		rc=$?
		i=${job_of[$pid]}
		free=$((free + need_of[$pid])) running=$((running - 1))
		state[$i]="done"
		echo "done" > "$build/jobs/$i.done"
		prof $(( $(date +%s) - t0[$pid] )) "${job_name[$i]}"
		echo "# === ${job_name[$i]} ($(( $(date +%s) - t0[$pid] )) s) ==="
		cat "$build/jobs/$i.log"
		count "$build/jobs/$i.log" "${job_name[$i]}"
		[ $rc = 0 ] || fail "${job_name[$i]}: job exited with $rc"
		unset "job_of[$pid]" "need_of[$pid]" "t0[$pid]"
	done
	for i in "${!job_name[@]}"; do
		[ "${state[$i]}" = "done" ] || fail "${job_name[$i]}: never started (it comes after a job not in the list?)"
	done
	prof $(( $(date +%s) - start )) "the jobs above, on $lanes host cores (wall)"
}
job_done() {	# name
	local i
	for i in "${!job_name[@]}"; do
		[ "${job_name[$i]}" = "$1" ] || continue
		[ -e "$build/jobs/$i.done" ]
		return
	done
	return 0
}

# The run, in a function: bash has read all of it before it starts, so a
# checkout that changes while make check runs cannot change what it runs.
main() {
	mkdir -p "$build"
	# Only what deb-test and ksft-test build in this run goes into the boots.
	rm -rf "$build/deb/vm" "$build/ksft-install" "$build/jobs"
	mkdir -p "$build/jobs"
	: > "$profile"

	# The unit tests of the library and of the command's formatting (no module).
	tap_step test_lib "$build/test_lib.tap" \
		make -s -C "$top/lib" O="$build/test_lib" check
	tap_step test_format "$build/test_format.tap" \
		make -s -C "$top/tools" O="$build/test_format" check

	# The index the probes look tasks up in (module/index.h), in user space,
	# with 64- and 32-bit pointers.
	for cc in cc i686-linux-gnu-gcc; do
		run=""
		# A host kernel without 32-bit x86 support (IA32_EMULATION off, as
		# in CI's VMs) cannot run the i686 build: qemu's user mode can.
		if [ $cc != cc ] && ! "$CACHE/i386/busybox-static/bin/busybox" true 2>/dev/null; then
			run=qemu-i386-static
			echo "# this host does not run i386 binaries: under $run"
		fi
		tap_step "test_index ($cc)" "$build/test_index-$cc.tap" \
			make -s -C "$top/bench" O="$build/test_index-$cc" CC=$cc RUN=$run \
			EXTRA_LDFLAGS="$([ $cc = cc ] || echo -static)" test-index
	done

	# The jobs.  First the kernels' module builds and their torture boots
	# (each alone), then the host tests and the main and cycles boots, as
	# many at a time as there are cores.  The amd64-family main boots load
	# what ksft-test installed, and the 6.1 and 6.12 ones what deb-test
	# built (job_boot).
	for k in $KERNELS; do
		add_job "$k: module build" 1 "" "job_build $k"
	done
	for k in $KERNELS; do
		add_job "$k: torture boot" all "$k: module build" "job_boot $k torture"
	done
	# The host tests.  Those that change the machine (DKMS, install, the
	# packages) take its lock in turn: one after the other, in one lane.
	after_host=
	for t in $HOST_TESTS; do
		case $t in
		dkms-test|install-test|deb-test)
			add_job "host: $t" 1 "$after_host" "job_host $t"
			after_host="host: $t"
			for k in $KERNELS; do
				case $t:$k in
				dkms-test:amd64-5.10|dkms-test:amd64-7.2|install-test:amd64-5.10|install-test:amd64-7.2)
					add_job "host: $t ($k)" 1 "$after_host" "job_chroot_host $t $k"
					after_host="host: $t ($k)"
					;;
				esac
			done
			;;
		*) add_job "host: $t" 1 "" "job_host $t" ;;
		esac
	done
	for k in $KERNELS; do
		case $k in
		amd64|amd64-6.12) loads="host: deb-test;host: ksft-test" ;;
		686|arm64) loads= ;;
		*) loads="host: ksft-test" ;;
		esac
		add_job "$k: main boot" 1 "$k: module build;$loads" "job_boot $k main"
	done
	for k in $KERNELS; do
		add_job "$k: cycles boot" 1 "$k: module build" "job_boot $k cycles"
	done
	for k in $KERNELS; do
		if [ -n "$(bpf_flavour "$k")" ]; then
			add_job "$k: bpf" 1 "" "job_bpf_skip $k"
			continue
		fi
		add_job "$k: bpf boot" 1 "$k: module build" "job_boot $k bpf"
		add_job "$k: bpf-conf boot" 1 "$k: module build" "job_boot $k bpf-conf"
	done
	case " $KERNELS " in
	*" amd64 "*)
		[ "${COUNT:-1}" = 0 ] || add_job "counted guard" 1 "" job_count
		[ "${BENCH:-1}" = 0 ] || add_job "bench --quick" 1 "" job_bench
		;;
	esac

	t=$(date +%s)
	if build_userspace; then
		prof $(( $(date +%s) - t )) "host: user-space build"
		check_i686_read
		check_retry
		run_jobs
	else
		fail "user-space build"
	fi
	if grep -h 'kernel flake:' "$build"/jobs/*.log 2>/dev/null | grep -q .; then
		echo "# kernel flakes (each booted once more):"
		grep -h 'kernel flake:' "$build"/jobs/*.log | sed 's/^# /#   /'
	fi
	echo "# where the time went (s):"
	awk -F '\t' '{ printf "#   %6d  %s\n", $1, $2 }' "$profile"
	if [ -s "$failures" ]; then
		echo "# failed:"
		sed 's/^/#   /' "$failures"
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
}

main "$@"
exit
