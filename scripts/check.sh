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
pass() {
	ok 0 "$*"
	passed=$((passed + 1))
}
fail() {
	ok 1 "$*"
	echo "not ok - $*" >> "$failures"
}

count() {	# TAP file
	local p f s
	p=$(grep -E '^ok ' "$1" | grep -vc '# SKIP')
	s=$(grep -E '^ok .*# SKIP' "$1" | grep -c .)
	f=$(grep -cE '^not ok ' "$1")
	grep -E '^not ok ' "$1" | sed "s|^|$1: |" >> "$failures"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# The user-space side, once: native for the amd64 guests (which run the
# host's programs), static i686 for the 686 guest and the -m32 ABI test,
# static aarch64 for the arm64 guest (only when it is tested).
build_userspace() {
	make -s -C "$top/tools" O="$build/bin64" all &&
	make -s -C "$top/selftests/taskstate" O="$build/bin64" &&
	make -s -C "$top/tools" O="$build/bin32" "${CROSS32[@]}" all &&
	make -s -C "$top/selftests/taskstate" O="$build/bin32" "${CROSS32[@]}" ||
		return 1
	case " $KERNELS " in
	*" arm64 "*|*-arm64" "*)
		make -s -C "$top/tools" O="$build/bin-arm64" "${CROSSARM64[@]}" all &&
		make -s -C "$top/selftests/taskstate" O="$build/bin-arm64" \
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
	rm -rf "$res"
	mkdir -p "$res"
	case $kver in
	*-686*|*-arm64)
		# No host programs in this guest: everything goes to the share.
		case $kver in
		*-686*) cp -r "$build/bin32" "$res/bin" ;;
		*) cp -r "$build/bin-arm64" "$res/bin" ;;
		esac
		cp -r "$out"/*.ko "$out/fi" "$top/selftests/taskstate/run_vm.sh" "$res/"
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
	"$top/scripts/vm-run.sh" --quiet --timeout "$tmo" --append "$append" \
		--accel "$accel" "$kver" "$res" "$script" || rc=$?
	cat "$res/output.log" 2>/dev/null
	count "$res/output.log" 2>/dev/null
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

run_kernel() {	# flavour
	local kver out start warn
	kver=$("$top/scripts/kernels.sh" "$1") || { fail "$1: no kernel"; return; }
	out=$build/$kver
	echo "# === $kver ($1) ==="
	start=$(date +%s)
	if ! TS_KBUILD_ARGS=W=1 "$top/scripts/build-module.sh" "$kver" "$out" \
	     > "$build/build-$kver.log" 2>&1; then
		cat "$build/build-$kver.log"
		fail "$kver: module build"
		return
	fi
	echo "# $kver: module build (W=1) $(( $(date +%s) - start )) s"
	warn=$(grep -i 'warning' "$build/build-$kver.log")
	if [ -n "$warn" ]; then
		echo "$warn" | sed 's/^/# /'
		fail "$kver: W=1 build without warnings"
	else
		pass "$kver: W=1 build without warnings"
	fi
	start=$(date +%s)
	# Torn 64-bit words need two vCPUs really in parallel: the torture
	# section boots with multi-threaded TCG, and only it.  Multi-threaded
	# TCG livelocks now and then when the kernel patches its text
	# (text_poke_bp: tracepoints enabled or disabled, by the module or by
	# bpftrace): seen under a context-switch load, at a bpftrace attach,
	# and at an rmmod right after the bpftrace test on the RT kernel, both
	# vCPUs executing and no guest watchdog firing.  Every section that
	# loads taskstate or runs bpftrace boots single-threaded.
	boot "$kver" "$out" torture tcg torture
	# The module DKMS built from the taskstate-dkms package (deb-test,
	# 6.1 and 6.12 amd64): a smoke test in this same boot, before
	# lockdown, which must stay last.
	deb=
	[ -f "$build/deb/vm/$kver/taskstate.ko" ] && deb=deb
	# The suite as kselftest installs it (ksft-test, host programs: the
	# amd64-family boots).
	ksft=
	case $kver in *-686*|*-arm64) ;; *)
		[ -x "$build/ksft-install/run_kselftest.sh" ] && ksft=kselftest ;;
	esac
	boot "$kver" "$out" main tcg,thread=single \
		"track_all track_none params review stuck $ksft busy $deb lockdown"
	boot "$kver" "$out" cycles tcg,thread=single "cycles soak"
	echo "# $kver: three boots $(( $(date +%s) - start )) s"
}

# Host-side tests: DKMS on the 6.1 and 6.12 headers, make install, the
# Debian packages, the man pages.
run_host_test() {	# dkms-test | install-test | deb-test | man-test
	local start=$SECONDS
	local tap=$build/$1.tap rc
	echo "# === $1 ==="
	"$top/scripts/$1.sh" > "$tap" 2>&1
	rc=$?
	cat "$tap"
	count "$tap"
	# A bail-out before any test line is a failure too.
	[ $rc = 0 ] || grep -q '^not ok ' "$tap" || fail "$1 (status $rc)"
	echo "# $1: $((SECONDS - start)) s"
}

# The same tests for the kernels whose headers live in a debootstrap
# chroot (amd64-5.10, amd64-7.2), inside that chroot: its compiler, its
# dkms and kmod, on a copy of the sources.  The chroot's kernel gets a
# module index first, as an installed kernel has.
run_chroot_host_test() {	# dkms-test | install-test, flavour
	local kver croot d tap rc
	kver=$("$top/scripts/kernels.sh" "$2") || { fail "$1 $2: no kernel"; return; }
	tap=$build/$1-$kver.tap
	for croot in "$CACHE"/chroot/*; do
		[ -d "$croot/usr/src/linux-headers-$kver" ] && break
	done
	echo "# === $1 ($2, in ${croot##*/}) ==="
	d=/tmp/taskstate-hosttest.$$
	rm -rf "${croot:?}$d"
	mkdir -p "$croot$d"
	(cd "$top" && cp -r Kbuild Makefile dkms.conf module include man scripts "$croot$d/" &&
	 find lib tools -name build -prune -o -type f -exec cp --parents -t "$croot$d/" {} +)
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		mount -t proc proc "$1/proc"
		chroot "$1" depmod "$3"
		chroot "$1" bash "$2/scripts/$4.sh" "$3"' \
		sh "$croot" "$d" "$kver" "$1" > "$tap" 2>&1
	rc=$?
	rm -rf "${croot:?}$d"
	cat "$tap"
	count "$tap"
	[ $rc = 0 ] || grep -q '^not ok ' "$tap" || fail "$1 $kver (status $rc)"
}

mkdir -p "$build"
# Only what deb-test and ksft-test build in this run goes into the boots.
rm -rf "$build/deb/vm" "$build/ksft-install"

# The unit tests of the library and of the command's formatting (no module).
for unit in lib:test_lib tools:test_format; do
	echo "# === ${unit#*:} ==="
	make -s -C "$top/${unit%:*}" O="$build/${unit#*:}" check > "$build/${unit#*:}.tap" 2>&1
	rc=$?
	cat "$build/${unit#*:}.tap"
	count "$build/${unit#*:}.tap"
	[ $rc = 0 ] || grep -q '^not ok ' "$build/${unit#*:}.tap" || fail "${unit#*:} (status $rc)"
done

# The index the probes look tasks up in (module/index.h), in user space,
# with 64- and 32-bit pointers.
for cc in cc i686-linux-gnu-gcc; do
	echo "# === test_index ($cc) ==="
	tap=$build/test_index-$cc.tap
	run=""
	# A host kernel without 32-bit x86 support (IA32_EMULATION off, as
	# in CI's VMs) cannot run the i686 build: qemu's user mode can.
	if [ $cc != cc ] && ! "$CACHE/i386/busybox-static/bin/busybox" true 2>/dev/null; then
		run=qemu-i386-static
		echo "# this host does not run i386 binaries: under $run"
	fi
	make -s -C "$top/bench" O="$build/test_index-$cc" CC=$cc RUN=$run \
		EXTRA_LDFLAGS="$([ $cc = cc ] || echo -static)" test-index > "$tap" 2>&1
	rc=$?
	cat "$tap"
	count "$tap"
	[ $rc = 0 ] || grep -q '^not ok ' "$tap" || fail "test_index $cc (status $rc)"
done

if [ -n "$HOST_TESTS" ]; then
	for t in $HOST_TESTS; do
		run_host_test "$t"
		case $t in dkms-test|install-test) ;; *) continue ;; esac
		for k in $KERNELS; do
			case $k in
			amd64-5.10|amd64-7.2) run_chroot_host_test "$t" "$k" ;;
			esac
		done
	done
fi
if build_userspace; then
	check_i686_read
	for k in $KERNELS; do
		run_kernel "$k"
	done
else
	fail "user-space build"
fi
case " $KERNELS " in
*" amd64 "*)
	if [ "${BENCH:-1}" != 0 ]; then
		echo "# === bench --quick ==="
		if "$top/scripts/bench.sh" --quick > "$build/bench-quick.log" 2>&1; then
			pass "bench --quick: every scenario ran ($build/bench-quick-run/REPORT.md)"
		else
			tail -n 20 "$build/bench-quick.log"
			fail "bench --quick (log: $build/bench-quick.log)"
		fi
	fi
	# The counted cost of tracking: one boot, a TAP line (COUNT=0: none).
	if [ "${COUNT:-1}" != 0 ]; then
		"$top/scripts/count.sh" --guard > "$build/count-guard.log" 2>&1
		line=$(grep -E '^(not )?ok ([0-9]+ |- )counted' "$build/count-guard.log" | tail -n 1)
		desc=$(echo "$line" | sed -E 's/^(not )?ok ([0-9]+ |- )//')
		case $line in
		ok*) pass "$desc" ;;
		"not ok "*) fail "$desc" ;;
		*) tail -n 20 "$build/count-guard.log"
		   fail "counted pipe guard: no result (log: $build/count-guard.log)" ;;
		esac
	fi
	;;
esac
if [ -s "$failures" ]; then
	echo "# failed:"
	sed 's/^/#   /' "$failures"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ] && [ $passed -gt 0 ]
