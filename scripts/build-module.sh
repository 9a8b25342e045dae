#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build taskstate.ko and the test modules taskstate_torture.ko and
# taskstate_qsleeper.ko for one Debian kernel, and the fault-injection
# build of taskstate (TS_FAULT_INJECT, for the tests only) as
# OUTDIR/fi/taskstate.ko, out of a copy of the sources so that several
# kernels can be built side by side:
#
#   scripts/build-module.sh KVER OUTDIR     -> OUTDIR/*.ko, OUTDIR/fi/*.ko
#
# The -686 kernels are built with the i686 cross compiler.  Extra make
# arguments (W=1, EXTRA_CFLAGS=...) come from $TS_KBUILD_ARGS.
set -euo pipefail

kver=$1
mkdir -p "$2"
out=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || { echo "build-module: no headers for $kver in $kdir (run make deps)" >&2; exit 2; }

cross=()
case $kver in
*-686*) cross=(ARCH=x86 CROSS_COMPILE=i686-linux-gnu-) ;;
esac

src=$out/src
rm -rf "$src" "$src-fi"
mkdir -p "$src/selftests/taskstate" "$src-fi" "$out/fi"
cp -r "$top/Kbuild" "$top/module" "$top/include" "$src/"
cp -r "$top/Kbuild" "$top/module" "$top/include" "$src-fi/"
cp -r "$top/selftests/taskstate/torture" "$src/selftests/taskstate/"
# shellcheck disable=SC2086
for m in "$src" "$src/selftests/taskstate/torture"; do
	make -s -C "$kdir" M="$m" "${cross[@]}" ${TS_KBUILD_ARGS:-} modules
done
# shellcheck disable=SC2086
make -s -C "$kdir" M="$src-fi" "${cross[@]}" ${TS_KBUILD_ARGS:-} \
	TS_FAULT_INJECT=1 modules
cp "$src/taskstate.ko" "$src/selftests/taskstate/torture/taskstate_torture.ko" \
   "$src/selftests/taskstate/torture/taskstate_qsleeper.ko" "$out/"
cp "$src-fi/taskstate.ko" "$out/fi/"
