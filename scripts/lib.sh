# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the scripts (POSIX sh, so that make and dash can source it
# too): the cache, the test flavours and the TAP helpers.

# What scripts/setup.sh fills and the scripts read, outside the tree.
CACHE=${TASKSTATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskstate}

# Every test flavour, in make check's order (scripts/kernels.sh says what
# each boots; `make check KERNELS=all` runs them all).
TS_FLAVOURS="amd64 rt-amd64 686 amd64-5.10 amd64-6.12 amd64-7.2 arm64 debug kcsan proxy"
# $KERNELS as a list of flavours: unset or "all" is every flavour, empty
# is none; a name that is not a flavour is an error, not a silent no-op.
ts_flavours() {
	set -f
	# shellcheck disable=SC2086
	case ${KERNELS-all} in
	all) set -- $TS_FLAVOURS ;;
	*) set -- $KERNELS ;;
	esac
	set +f
	for k; do
		case " $TS_FLAVOURS " in
		*" $k "*) ;;
		*) echo "unknown kernel flavour '$k' in KERNELS (all, or of: $TS_FLAVOURS)" >&2
		   return 1 ;;
		esac
	done
	echo "$*"
}
# Held from the call until the script exits, on fd 9: a test that changes
# what every run on the machine shares (the dpkg database, DKMS's tree and
# /lib/modules: TS_SYSTEM_LOCK; the source tree in the cache) waits for
# another run's to finish, so that two runs of make check on one machine
# do not install and purge the same packages under each other.
TS_SYSTEM_LOCK=/run/lock/taskstate-system.lock
[ -d /run/lock ] || TS_SYSTEM_LOCK=/tmp/taskstate-system.lock
ts_lock() {	# lock file
	exec 9> "$1" || return
	flock -n 9 && return
	echo "# waiting for another run to release $1"
	flock 9
}
# make check's host tests (scripts/NAME.sh, each prints TAP).
TS_HOST_TESTS="dkms-test install-test deb-test man-test doc-test ksft-test"

# The one TAP dialect of this tree, as kselftest prints it (run_vm.sh,
# which runs where this file is not, prints the same):
#   ok N description
#   not ok N description
#   ok N description # SKIP why
#   # a comment
#   1..N                      (at the end)
#   Bail out! why
# Each script numbers its own lines; n, failed and skipped count them.
n=0 failed=0 skipped=0

ok() {		# status, description
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}
skip() {	# description, why
	n=$((n + 1)) skipped=$((skipped + 1))
	echo "ok $n $1 # SKIP $2"
}
comment() { sed 's/^/# /'; }
bail() { echo "Bail out! $*"; exit 1; }
# The plan and a summary comment; the status: 0 if nothing failed.
tap_done() {	# name, start (date +%s) or empty
	echo "1..$n"
	echo "# $1: $((n - failed - skipped)) passed, $failed failed," \
		"$skipped skipped${2:+, $(( $(date +%s) - $2 )) s}"
	[ "$failed" = 0 ]
}
