#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel release a test flavour boots, from the installed packages:
#   scripts/kernels.sh amd64|rt-amd64|686   ->  e.g. 6.1.0-57-amd64
# A release given as is (6.1.0-57-amd64) is printed back.
set -euo pipefail

case $1 in
amd64|rt-amd64) pkg=linux-image-$1 ;;
686) pkg=linux-headers-686:i386 ;;
*-*-*) echo "$1"; exit 0 ;;
*) echo "kernels: unknown flavour $1 (amd64, rt-amd64, 686)" >&2; exit 2 ;;
esac
dpkg-query -W -f='${Depends}' "$pkg" 2>/dev/null |
	grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+-[0-9]\+-'"${1}" | head -n1 | grep . ||
	{ echo "kernels: $pkg is not installed (run make deps)" >&2; exit 2; }
