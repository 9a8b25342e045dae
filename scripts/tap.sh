# SPDX-License-Identifier: GPL-2.0
#
# TAP helpers for the host-side test scripts (sourced by dkms-test.sh and
# install-test.sh).  They count into $n and $failed.

n=0 failed=0

ok() {		# status, description
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}
comment() { sed 's/^/# /'; }
bail() { echo "Bail out! $*"; exit 1; }
