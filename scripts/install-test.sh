#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make install` and `make uninstall` of the top Makefile, into a DESTDIR
# with PREFIX=/usr, run on a copy of the sources (the work tree gets no
# build products).  After install: the module under
# DESTDIR/lib/modules/KVER/ with that kernel's vermagic, in DESTDIR's
# modules.dep (depmod -b), the uapi header, libtaskstate.a, libtaskstate.h
# and bin/taskstate, and a program builds against the installed headers
# and library (static and shared), the pkg-config file and the man pages.
# After uninstall: all of them gone.  And make install-bpf: the BPF
# loader and its systemd unit, clean for systemd-analyze, and
# uninstall-bpf.  Prints TAP; exits
# non-zero on any failure.  Needs no root and changes nothing outside its
# temporary directory.
#
#   scripts/install-test.sh [KVER...]   (default: Debian's 6.1 amd64 kernel,
#                                        and the 6.12 one from backports
#                                        when its headers are installed)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"

if [ $# -gt 0 ]; then
	kvers=("$@")
else
	k61=$("$top/scripts/kernels.sh" amd64) || bail "no 6.1 amd64 kernel (run make deps)"
	kvers=("$k61")
	k612=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
	       sed -n 's/^linux-headers-\(6\.12\.[^ ]*[0-9]-amd64\) .* ok installed$/\1/p' |
	       sort -V | tail -n1)
	[ -z "$k612" ] || kvers+=("$k612")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The sources `make install` needs, without build products.
stage() {	# directory
	mkdir -p "$1"
	(cd "$top" && cp Makefile Kbuild dkms.conf "$1/" &&
	 find module include lib tools man -name build -prune -o -type f \
	      \( -name '*.[ch]' -o -name Makefile -o -name '*.kbuild' \
	         -o -name '*.map' -o -name '*.pc.in' -o -name 'taskstate.[14]' \
	         -o -path 'man/man3/*.3' \
	         -o -path 'tools/completion/*' \) \
	      -exec cp --parents -t "$1/" {} +)
}

# A user of the installed library: headers and archive from DESTDIR only.
cat > "$tmp/user.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libtaskstate.h>

int main(void)
{
	__u64 w = taskstate_pack(TASKSTATE_BLOCKED, 42);
	struct taskstate_entry e = { .tid = 1 };

	/* No device here: the call fails with -errno, errno untouched. */
	setenv("TASKSTATE_DEV", "/nonexistent", 1);
	return strcmp(taskstate_state_name(taskstate_state(w)), "BLOCKED") != 0 ||
	       taskstate_sample(taskstate_open(), &e, NULL, 1) != -EBADF;
}
EOF

echo "# make install / uninstall, DESTDIR PREFIX=/usr, on ${kvers[*]}"
start=$(date +%s)

for k in "${kvers[@]}"; do
	src=$tmp/src-$k
	dest=$tmp/root-$k
	mods=$dest/lib/modules/$k
	usr=$dest/usr
	files=("$usr/bin/taskstate" "$usr/lib/libtaskstate.a"
	       "$usr/lib/libtaskstate.so.0" "$usr/lib/libtaskstate.so"
	       "$usr/lib/pkgconfig/libtaskstate.pc"
	       "$usr/include/libtaskstate.h" "$usr/include/linux/taskstate.h"
	       "$usr/share/man/man1/taskstate.1" "$usr/share/man/man4/taskstate.4"
	       "$usr/share/bash-completion/completions/taskstate")
	for f in "$top"/man/man3/*.3; do
		files+=("$usr/share/man/man3/${f##*/}")
	done
	args=(DESTDIR="$dest" PREFIX=/usr KERNELRELEASE="$k")
	stage "$src"

	make -C "$src" "${args[@]}" install > "$tmp/install.log" 2>&1
	rc=$?
	[ $rc = 0 ] || tail -n 30 "$tmp/install.log" | comment
	ok $rc "$k: make install"

	ko=$(find "$mods" -name 'taskstate.ko*' 2>/dev/null)
	[ -n "$ko" ] && [ "$(echo "$ko" | wc -l)" = 1 ]
	ok $? "$k: module installed (${ko#"$dest"})"

	vm=$(modinfo -F vermagic "${ko:-/nonexistent}" 2>/dev/null)
	[ "${vm%% *}" = "$k" ]
	ok $? "$k: module vermagic '$vm'"

	[ -n "$ko" ] && grep -q "^${ko#"$mods"/}:" "$mods/modules.dep" 2>/dev/null &&
		[ "$(modinfo -b "$dest" -k "$k" -F filename taskstate 2>/dev/null)" = "$ko" ]
	ok $? "$k: in DESTDIR's modules.dep"

	rc=0
	for f in "${files[@]}"; do
		[ -s "$f" ] || { echo "# missing: ${f#"$dest"}"; rc=1; }
	done
	[ -x "$usr/bin/taskstate" ] || rc=1
	cmp -s "$usr/include/linux/taskstate.h" "$top/include/uapi/linux/taskstate.h" || rc=1
	ok $rc "$k: bin/taskstate, lib/libtaskstate.{a,so,so.0}, libtaskstate.pc, the headers, the man pages ($(ls "$top"/man/man3/*.3 | wc -l) in man3)"

	cc -I"$usr/include" -o "$tmp/user" "$tmp/user.c" "$usr/lib/libtaskstate.a" \
		> "$tmp/cc.log" 2>&1 && "$tmp/user"
	rc=$?
	[ $rc = 0 ] || comment < "$tmp/cc.log"
	ok $rc "$k: a program builds and runs against the installed header and library"

	make -C "$src" "${args[@]}" uninstall > "$tmp/uninstall.log" 2>&1
	rc=$?
	[ $rc = 0 ] || tail -n 30 "$tmp/uninstall.log" | comment
	ok $rc "$k: make uninstall"

	left=$(find "$mods" -name 'taskstate.ko*' 2>/dev/null)
	[ -z "$left" ] && ! grep -q taskstate "$mods/modules.dep" 2>/dev/null
	rc=$?
	[ $rc = 0 ] || echo "# left: ${left#"$dest"}"
	ok $rc "$k: module gone, and from modules.dep"

	rc=0
	for f in "${files[@]}"; do
		[ ! -e "$f" ] || { echo "# left: ${f#"$dest"}"; rc=1; }
	done
	ok $rc "$k: user-space files gone"
done

# The BPF backend's loader and unit (make install-bpf), once, where its
# build tools are (not in the 5.10 and 7.2 chroots, which have no bpf/).
if [ -d "$top/bpf" ] && command -v clang bpftool > /dev/null 2>&1; then
	src=$tmp/src-bpf dest=$tmp/root-bpf
	stage "$src"
	(cd "$top" && cp --parents -t "$src/" bpf/Makefile bpf/*.c \
		systemd/taskstate-bpf.service)
	unit=$dest/lib/systemd/system/taskstate-bpf.service
	make -C "$src" DESTDIR="$dest" PREFIX=/usr install-bpf > "$tmp/install.log" 2>&1 &&
		[ -x "$dest/usr/bin/taskstate-bpf" ] && [ -s "$unit" ] &&
		grep -qx 'ExecStart=/usr/bin/taskstate bpf load' "$unit"
	rc=$?
	[ $rc = 0 ] || tail -n 30 "$tmp/install.log" | comment
	ok $rc "make install-bpf: bin/taskstate-bpf and taskstate-bpf.service, its commands in BINDIR"
	# Clean for systemd-analyze, its commands pointed into DESTDIR (the
	# taskstate command from the work tree's build) and without the man
	# page it documents (not installed here).
	make -s -C "$top/tools" O="$tmp/cli" "$tmp/cli/taskstate" > "$tmp/cc.log" 2>&1
	sed -e "s|/usr/bin/taskstate|$tmp/cli/taskstate|" -e '/^Documentation=/d' \
		"$unit" > "$tmp/taskstate-bpf.service"
	systemd-analyze verify "$tmp/taskstate-bpf.service" > "$tmp/verify" 2>&1
	[ ! -s "$tmp/verify" ]
	rc=$?
	comment < "$tmp/verify"
	# Negative control: a misspelt key is reported.
	mkdir -p "$tmp/bad"
	sed 's/^RemainAfterExit=/RemainAfterExitt=/' "$tmp/taskstate-bpf.service" \
		> "$tmp/bad/taskstate-bpf.service"
	systemd-analyze verify "$tmp/bad/taskstate-bpf.service" 2>&1 | grep -q RemainAfterExitt || rc=1
	ok $rc "systemd-analyze verify: taskstate-bpf.service is clean (and a misspelt key is reported)"
	make -C "$src" DESTDIR="$dest" PREFIX=/usr uninstall-bpf > /dev/null 2>&1 &&
		[ ! -e "$dest/usr/bin/taskstate-bpf" ] && [ ! -e "$unit" ]
	ok $? "make uninstall-bpf: both gone"
else
	skip "make install-bpf" "no clang and bpftool here"
fi

tap_done install-test "$start"
