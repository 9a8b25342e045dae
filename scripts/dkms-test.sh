#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The DKMS packaging, on the host (nothing is loaded or booted): for each
# kernel, dkms add / build / install / remove of taskstate, with checks that
# the module lands in /lib/modules/KVER/updates/dkms with that kernel's
# vermagic and that depmod indexed it; and a W=1 build of the module that
# must print no warning.  Prints TAP; exits non-zero on any failure.
#
#   scripts/dkms-test.sh [KVER...]      (root; default: Debian's 6.1 amd64
#                                         kernel and the 6.12 one from
#                                         bookworm-backports, see setup.sh)
#
# It owns the DKMS registration taskstate/<version of dkms.conf>: one left
# from an earlier run is removed first, and everything is removed at exit.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
name=taskstate
ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$top/dkms.conf")
arch=$(uname -m)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"

[ "$(id -u)" = 0 ] || bail "must run as root (dkms)"
command -v dkms >/dev/null || bail "dkms is not installed (run make deps)"
[ -n "$ver" ] || bail "no PACKAGE_VERSION in dkms.conf"

# The 6.12 headers setup.sh installs from bookworm-backports (the newest
# if several are), e.g. 6.12.95+deb12-amd64.
kver_612() {
	dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
		sed -n 's/^linux-headers-\(6\.12\.[^ ]*[0-9]-amd64\) .* ok installed$/\1/p' |
		sort -V | tail -n1 | grep .
}

if [ $# -gt 0 ]; then
	kvers=("$@")
else
	k61=$("$top/scripts/kernels.sh" amd64) || bail "no 6.1 amd64 kernel (run make deps)"
	k612=$(kver_612) || bail "no 6.12 amd64 headers (run make deps)"
	kvers=("$k61" "$k612")
fi
for k in "${kvers[@]}"; do
	[ -d "/lib/modules/$k/build" ] || bail "no headers for $k in /lib/modules/$k/build"
done

ts_lock "$TS_SYSTEM_LOCK"
tmp=$(mktemp -d)
declare -A had_moddep

# A kernel with headers but no image has no modules.dep; dkms install's
# depmod creates one.  Remove what depmod created for such a kernel, so
# that the tree is left as the packages made it.
cleanup() {
	local k
	if [ -n "$(dkms status "$name/$ver" 2>/dev/null)" ]; then
		dkms remove "$name/$ver" --all >/dev/null 2>&1
	fi
	rm -rf "/usr/src/$name-$ver" "$tmp"
	for k in "${!had_moddep[@]}"; do
		[ "${had_moddep[$k]}" = 1 ] ||
			rm -f "/lib/modules/$k"/modules.{alias,builtin.alias,builtin,dep,symbols}.bin \
			      "/lib/modules/$k"/modules.{alias,dep,devname,softdep,symbols}
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$(dkms status "$name/$ver" 2>/dev/null)" ]; then
	echo "# removing $name/$ver left in DKMS by an earlier run"
	dkms remove "$name/$ver" --all >/dev/null 2>&1
fi
rm -rf "/usr/src/$name-$ver"
for k in "${kvers[@]}"; do
	had_moddep[$k]=0
	[ -e "/lib/modules/$k/modules.dep" ] && had_moddep[$k]=1
done

# What a DKMS source package holds: no build products, no user space.
stage() {	# directory
	mkdir -p "$1"
	(cd "$top" && cp Kbuild Makefile dkms.conf "$1/" &&
	 find module include -type f \( -name '*.[ch]' -o -name '*.kbuild' \) \
	      -exec cp --parents {} "$1/" \;)
}

echo "# $name $ver on ${kvers[*]}"
start=$(date +%s)

# dkms add copies the staged tree to /usr/src/taskstate-VER.
stage "$tmp/$name-$ver"
dkms add "$tmp/$name-$ver" > "$tmp/add.log" 2>&1
rc=$?
if [ $rc != 0 ] || [ ! -f "/usr/src/$name-$ver/dkms.conf" ]; then
	rc=1
	comment < "$tmp/add.log"
fi
ok $rc "dkms add $name/$ver"
[ $rc = 0 ] || exit 1

for k in "${kvers[@]}"; do
	log=/var/lib/dkms/$name/$ver/$k/$arch/log/make.log
	dkms build "$name/$ver" -k "$k" > "$tmp/build.log" 2>&1
	rc=$?
	if [ $rc != 0 ]; then
		comment < "$tmp/build.log"
		comment 2>/dev/null < "/var/lib/dkms/$name/$ver/build/make.log"
	elif grep -i 'warning:' "$log" | comment | grep .; then
		rc=1
	fi
	ok $rc "dkms build -k $k (no compiler warning)"

	dkms install "$name/$ver" -k "$k" > "$tmp/install.log" 2>&1
	rc=$?
	[ $rc = 0 ] && dkms status "$name/$ver" -k "$k" 2>/dev/null | grep -q ': installed' || rc=1
	[ $rc = 0 ] || comment < "$tmp/install.log"
	ok $rc "dkms install -k $k"

	# Compressed if the kernel's own modules are (6.12: taskstate.ko.xz).
	ko=$(find "/lib/modules/$k/updates/dkms" -maxdepth 1 -name "$name.ko*" 2>/dev/null | head -n1)
	[ -n "$ko" ]
	ok $? "$k: module installed in /lib/modules/$k/updates/dkms/ (${ko##*/})"

	vm=$(modinfo -F vermagic "${ko:-/nonexistent}" 2>/dev/null)
	[ "${vm%% *}" = "$k" ]
	ok $? "$k: modinfo vermagic '$vm'"

	# (By real path: with a merged /usr, kmod 34 names /usr/lib/modules.)
	[ -n "$ko" ] && [ "$(readlink -f "$(modinfo -k "$k" -F filename "$name" 2>/dev/null)")" = \
		"$(readlink -f "$ko")" ]
	ok $? "$k: depmod indexed it (modinfo -k $k $name)"
done

dkms remove "$name/$ver" --all > "$tmp/remove.log" 2>&1
rc=$?
left=$(ls /lib/modules/*/updates/dkms/"$name".ko* 2>/dev/null)
if [ $rc = 0 ] && [ -z "$left" ] && [ -z "$(dkms status "$name/$ver" 2>/dev/null)" ]; then
	for k in "${kvers[@]}"; do
		! modinfo -k "$k" "$name" >/dev/null 2>&1 || rc=1
	done
else
	rc=1
fi
[ $rc = 0 ] || { comment < "$tmp/remove.log"; echo "$left" | comment; }
ok $rc "dkms remove $name/$ver --all: module and registration gone"
rm -rf "/usr/src/$name-$ver"

# W=1 through the top Makefile's module target, as a user builds it.
# -Wmissing-format-attribute is a W=1 flag on 6.1 and 6.12 alike: its
# presence shows W=1 reached the compiler.
for k in "${kvers[@]}"; do
	src=$tmp/w1-$k
	stage "$src"
	make -C "$src" KERNELRELEASE="$k" W=1 module > "$tmp/w1.log" 2>&1
	rc=$?
	if [ $rc != 0 ] || [ ! -f "$src/$name.ko" ]; then
		rc=1
		comment < "$tmp/w1.log"
	fi
	if [ $rc = 0 ] && ! grep -q -- -Wmissing-format-attribute "$src/module/.main.o.cmd"; then
		echo "# W=1 did not reach the compiler"
		rc=1
	fi
	if grep -i 'warning:' "$tmp/w1.log" | comment | grep .; then
		rc=1
	fi
	ok $rc "$k: W=1 build without warnings"
done

tap_done dkms-test "$start"
