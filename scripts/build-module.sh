#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build taskstate.ko and the test modules taskstate_torture.ko,
# taskstate_qsleeper.ko and taskstate_kmutex.ko for one Debian kernel,
# and the fault-injection build of taskstate (TS_FAULT_INJECT, for the
# tests only) as OUTDIR/fi/taskstate.ko, out of a copy of the sources so
# that several kernels can be built side by side:
#
#   scripts/build-module.sh KVER OUTDIR     -> OUTDIR/*.ko, OUTDIR/fi/*.ko
#
# Each kernel is built with the compiler its headers were made for:
#  - headers installed on the host (/lib/modules/KVER/build: bookworm's
#    6.1 and backports' 6.12, gcc-12): on the host; the -686 ones with the
#    i686 cross compiler;
#  - -arm64: the headers unpacked in the cache, with aarch64-linux-gnu-gcc;
#  - -ts-debug, -ts-kcsan: the debug kernels' build trees in the cache
#    (scripts/debug-kernel.sh), on the host;
#  - -ts-proxy: its build tree in the cache, in the sid chroot it was
#    built in (gcc-16), which sees the tree and its source bind-mounted
#    at their own paths;
#  - headers in a debootstrap chroot of their suite (bullseye's 5.10 with
#    gcc-10, sid's 7.2 with gcc-16, scripts/setup.sh makes them): inside
#    that chroot, in a private mount namespace with /proc mounted (7.x's
#    objtool reads /proc/self/limits).
# Extra make arguments (W=1, EXTRA_CFLAGS=...) come from $TS_KBUILD_ARGS.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
kver=$1
mkdir -p "$2"
out=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)

cross=() croot="" binds=""
kdir=/lib/modules/$kver/build
case $kver in
*-686*) cross=(ARCH=x86 CROSS_COMPILE=i686-linux-gnu-) ;;
*-arm64)
	cross=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	kdir=$CACHE/arm64/headers-$kver/usr/src/linux-headers-$kver
	;;
*-ts-debug|*-ts-kcsan) kdir=$CACHE/debug-kernels/${kver##*-ts-} ;;
*-ts-proxy)
	kdir=$CACHE/debug-kernels/proxy
	croot=$CACHE/chroot/sid
	binds="$CACHE/linux-source-7.2 $kdir"
	;;
esac
if [ -z "$croot" ] && [ ! -d "$kdir" ]; then
	for c in "$CACHE"/chroot/*/; do
		if [ -f "$c/.complete" ] && [ -d "$c/usr/src/linux-headers-$kver" ]; then
			croot=${c%/}
			kdir=/usr/src/linux-headers-$kver
			break
		fi
	done
	[ -n "$croot" ] || { echo "build-module: no headers for $kver (run make deps)" >&2; exit 2; }
fi

# The sources, in the chroot when building there.  fi/ is the same
# module built with TS_FAULT_INJECT, for the tests.
if [ -n "$croot" ]; then
	csrc=/tmp/taskstate-build.$$
	src=$croot$csrc
	trap 'rm -rf "$src"' EXIT
else
	src=$out/src
fi
rm -rf "$src"
# The module, with the build variants' sources (Kbuild pulls them in only
# for TS_BENCH, TS_WRITE_SCHEME or TS_FAULT_INJECT).
for d in "$src" "$src/fi"; do
	mkdir -p "$d/bench" "$d/selftests/taskstate"
	cp -r "$top/Kbuild" "$top/module" "$top/include" "$d/"
	cp -r "$top/bench/kmod" "$d/bench/"
	cp -r "$top/selftests/taskstate/fault" "$d/selftests/taskstate/"
done
cp -r "$top/selftests/taskstate/torture" "$src/selftests/taskstate/"
if [ -n "$croot" ]; then
	# shellcheck disable=SC2016,SC2086
	unshare --mount --propagation private sh -ec '
		croot=$1 kdir=$2 src=$3 binds=$4
		shift 4
		mount -t proc proc "$croot/proc"
		for d in $binds; do
			mkdir -p "$croot$d"
			mount --bind "$d" "$croot$d"
		done
		for m in "$src" "$src/selftests/taskstate/torture"; do
			chroot "$croot" make -s -C "$kdir" M="$m" "$@" modules
		done
		chroot "$croot" make -s -C "$kdir" M="$src/fi" "$@" \
			TS_FAULT_INJECT=1 modules' sh "$croot" "$kdir" "$csrc" "$binds" \
		${TS_KBUILD_ARGS:-}
	rm -rf "$out/src"
	cp -r "$src" "$out/src"
else
	# shellcheck disable=SC2086
	for m in "$src" "$src/selftests/taskstate/torture"; do
		make -s -C "$kdir" M="$m" "${cross[@]}" ${TS_KBUILD_ARGS:-} modules
	done
	# shellcheck disable=SC2086
	make -s -C "$kdir" M="$src/fi" "${cross[@]}" ${TS_KBUILD_ARGS:-} \
		TS_FAULT_INJECT=1 modules
fi
mkdir -p "$out/fi"
cp "$out/src/taskstate.ko" "$out/src/selftests/taskstate/torture/taskstate_torture.ko" \
   "$out/src/selftests/taskstate/torture/taskstate_qsleeper.ko" \
   "$out/src/selftests/taskstate/torture/taskstate_kmutex.ko" "$out/"
cp "$out/src/fi/taskstate.ko" "$out/fi/"
