#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel release a test flavour boots, from the installed packages and
# the cache scripts/setup.sh fills:
#   scripts/kernels.sh FLAVOUR  ->  e.g. 6.1.0-57-amd64
#
#   amd64, rt-amd64  bookworm's 6.1 (installed)
#   686              bookworm's 6.1 686 (headers installed, image cached)
#   amd64-6.12       bookworm-backports' 6.12 (headers installed)
#   amd64-5.10       bullseye's 5.10 (chroot and image cached)
#   amd64-7.2        sid's newest, 7.2 (chroot and image cached)
#   arm64            bookworm's 6.1 arm64 (headers and image cached)
#   debug, kcsan     6.1 from linux-source-6.1 with lockdep, KASAN,
#                    kmemleak... or with KCSAN (scripts/debug-kernel.sh
#                    builds it into the cache the first time, ~15 min)
#   proxy            7.2 from sid's linux-source-7.2 with proxy execution
#                    (CONFIG_SCHED_PROXY_EXEC), built the same way in the
#                    sid chroot (~25 min)
#
# A release given as is (6.1.0-57-amd64) is printed back.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

case $1 in
amd64|rt-amd64) pkg=linux-image-$1 ;;
686) pkg=linux-headers-686:i386 ;;
amd64-5.10|amd64-6.12|amd64-7.2|arm64)
	kver=$(cat "$CACHE/kernels/$1" 2>/dev/null) ||
		{ echo "kernels: no $1 kernel in $CACHE/kernels (run make deps)" >&2; exit 2; }
	echo "$kver"
	exit 0
	;;
debug|kcsan|proxy) exec "$(dirname "$0")/debug-kernel.sh" "$1" ;;
[0-9]*.*-*) echo "$1"; exit 0 ;;
*) echo "kernels: unknown flavour $1 (one of: $TS_FLAVOURS)" >&2; exit 2 ;;
esac
# (make demo installs the headers alone: they name the same release.)
{ dpkg-query -W -f='${Depends}' "$pkg" 2>/dev/null
  case $1 in amd64|rt-amd64) dpkg-query -W -f='${Depends}' "linux-headers-$1" 2>/dev/null ;; esac; } |
	grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+-[0-9]\+-'"${1}" | head -n1 | grep . ||
	{ echo "kernels: $pkg is not installed (run make deps)" >&2; exit 2; }
