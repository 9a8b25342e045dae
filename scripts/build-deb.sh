#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make deb`: the Debian binary packages taskstate-dkms, taskstate-tools,
# libtaskstate0 and libtaskstate-dev (debian/), unsigned, into build/deb/,
# then lintian over them (errors and warnings fail; info and pedantic
# tags are printed, explained).  The build runs on a copy of the tree (build/deb/src):
# dpkg-buildpackage writes next to its source directory and cleans it.
#
#   scripts/build-deb.sh [--no-lintian] [OUTDIR]     (default OUTDIR: build/deb)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
lintian=1
if [ "${1:-}" = --no-lintian ]; then
	lintian=0
	shift
fi
out=$(mkdir -p "${1:-$top/build/deb}" && cd "${1:-$top/build/deb}" && pwd)
src=$out/src

for t in dpkg-buildpackage dh dh_dkms; do
	command -v "$t" >/dev/null ||
		{ echo "build-deb: $t is missing (run make deps)" >&2; exit 1; }
done

rm -rf "$src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
# The tree as it is now, committed or not, without build products: git's
# view of it where there is one.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	 while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	 cpio -0 -pdm --quiet "$src")
else
	(cd "$top" && tar -c --exclude=./build --exclude='*.o' --exclude='*.ko' . |
	 tar -C "$src" -x)
fi

start=$(date +%s)
(cd "$src" && dpkg-buildpackage -b -us -uc -j"$(nproc)") > "$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log" >&2; echo "build-deb: failed, log: $out/build.log" >&2; exit 1; }
echo "build-deb: built in $(( $(date +%s) - start )) s:"
(cd "$out" && ls -1 ./*.deb)

if [ $lintian = 1 ]; then
	command -v lintian >/dev/null ||
		{ echo "build-deb: lintian is missing (run make deps)" >&2; exit 1; }
	changes=$(ls "$out"/*.changes)
	echo "build-deb: lintian $changes"
	lintian --info --display-info --pedantic --fail-on error,warning "$changes"
fi
