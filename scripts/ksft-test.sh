#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The selftests as a kernel tree's suite: placed at
# tools/testing/selftests/taskstate of the unpacked linux-source-6.1 (a
# tree of links to selftests/taskstate, cp -rs), they build with
#   make -C tools/testing/selftests TARGETS=taskstate
# and install with its `install` target (what the kernel's
# `make kselftest-install` runs) into a directory whose run_kselftest.sh
# lists and runs every TEST_GEN_PROGS of the Makefile.  A copy without
# links must name the repository (TASKSTATE_TOP), or the build stops.
# No module is loaded on the host: the installed runner must run a test,
# which skips for want of /dev/taskstate.  Prints TAP; exits
# non-zero on any failure.  The install is kept in build/ksft-install,
# where make check's amd64 boots run its run_kselftest.sh (run_vm.sh's
# kselftest section); the rest goes into a temporary directory, and the
# placed suite is removed again.
#
#   scripts/ksft-test.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"
start=$(date +%s)

ksft=$CACHE/linux-source-6.1/tools/testing/selftests
[ -f "$ksft/lib.mk" ] || bail "no $ksft/lib.mk (run make deps)"
command -v rsync > /dev/null || bail "rsync is missing (lib.mk installs with it)"
ts_lock "$CACHE/ksft-test.lock"
place=$ksft/taskstate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$place"' EXIT
rm -rf "$place"

# What the Makefile says runs (lib.mk's emit_tests, standalone).
want=$(make -s --no-print-directory -C "$top/selftests/taskstate" \
	O="$tmp/standalone" COLLECTION=taskstate emit_tests | sort)
comment <<< "$want"

# A copy: the repository cannot be found through it.
cp -r "$top/selftests/taskstate" "$place"
make -C "$ksft" O="$tmp/copy" TARGETS=taskstate FORCE_TARGETS=1 \
	> "$tmp/copy.log" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q 'is not the taskstate tree: set TASKSTATE_TOP' "$tmp/copy.log"; then
	ok 0 "a copy without TASKSTATE_TOP stops, naming it"
else
	tail -n 10 "$tmp/copy.log" | comment
	ok 1 "a copy without TASKSTATE_TOP stops, naming it"
fi
rm -rf "$place"

# Links: built and installed as the kernel tree's own suites are.
cp -rs "$top/selftests/taskstate" "$place"
make -C "$ksft" O="$tmp/obj" TARGETS=taskstate FORCE_TARGETS=1 \
	> "$tmp/build.log" 2>&1
rc=$?
[ $rc = 0 ] || tail -n 30 "$tmp/build.log" | comment
ok $rc "make -C tools/testing/selftests TARGETS=taskstate"
missing=""
for t in $want; do
	[ -x "$tmp/obj/kselftest/taskstate/${t#taskstate:}" ] || missing+=" ${t#taskstate:}"
done
ok $(( ${#missing} != 0 )) "every TEST_GEN_PROGS built${missing:+ (missing:$missing)}"

inst=$top/build/ksft-install
rm -rf "$inst"
make -C "$ksft" O="$tmp/obj" TARGETS=taskstate FORCE_TARGETS=1 \
	KSFT_INSTALL_PATH="$inst" install > "$tmp/install.log" 2>&1
rc=$?
[ $rc = 0 ] || tail -n 30 "$tmp/install.log" | comment
ok $rc "make -C tools/testing/selftests TARGETS=taskstate install"
listed=$("$inst/run_kselftest.sh" -l 2>/dev/null | sort)
if [ -n "$want" ] && [ "$listed" = "$want" ]; then
	ok 0 "run_kselftest.sh -l lists the Makefile's TEST_GEN_PROGS"
else
	diff <(echo "$want") <(echo "$listed") | comment
	ok 1 "run_kselftest.sh -l lists the Makefile's TEST_GEN_PROGS"
fi
extra=""
for f in settings taskstate run_vm.sh ts_metrics.sh ts_stuck ts_soak \
	 ts_pingpong ts_modcycle ts_maphold ts_torture_map stuck_pool; do
	[ -e "$inst/taskstate/$f" ] || extra+=" $f"
done
ok $(( ${#extra} != 0 )) "installed beside them: settings, the command, run_vm.sh and the helpers${extra:+ (missing:$extra)}"

# The runner runs a test: here, with no module, ts_abi skips every test
# (no /dev/taskstate), and its report comes through the runner.
if [ -e /dev/taskstate ]; then
	skip "run_kselftest.sh runs ts_abi" "/dev/taskstate exists on this host"
else
	"$inst/run_kselftest.sh" -t taskstate:ts_abi > "$tmp/run.log" 2>&1
	grep -E '^(not )?ok 1 selftests|Totals:' "$tmp/run.log" | comment
	grep -q '^ok 1 selftests: taskstate: ts_abi' "$tmp/run.log" &&
		grep -qE '^# # Totals: pass:0 fail:0 .*skip:[1-9]' "$tmp/run.log" &&
		grep -q 'is taskstate loaded?' "$tmp/run.log"
	ok $? "run_kselftest.sh runs ts_abi (every test skips: no module on the host)"
fi

tap_done ksft-test "$start"
