#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build taskstate.ko and the test module taskstate_torture.ko for one
# Debian kernel, out of a copy of the sources so that several kernels can
# be built side by side:
#
#   scripts/build-module.sh KVER OUTDIR     -> OUTDIR/*.ko
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
rm -rf "$src"
mkdir -p "$src/selftests/taskstate"
cp -r "$top/Kbuild" "$top/module" "$top/include" "$src/"
cp -r "$top/selftests/taskstate/torture" "$src/selftests/taskstate/"
# shellcheck disable=SC2086
for m in "$src" "$src/selftests/taskstate/torture"; do
	make -s -C "$kdir" M="$m" "${cross[@]}" ${TS_KBUILD_ARGS:-} modules
done
cp "$src/taskstate.ko" "$src/selftests/taskstate/torture/taskstate_torture.ko" "$out/"
