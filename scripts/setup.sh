#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package the build, the tests and the benchmarks need,
# and unpack what cannot be installed on an amd64 host (the i386 kernel image,
# busybox:i386, the kernel source) into a cache outside the repository.
# Idempotent: when everything is present it only checks and returns.
#
# Usage: scripts/setup.sh        (root; `make deps` runs it)
set -euo pipefail

CACHE=${TASKSTATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskstate}
STAMP=$CACHE/setup.done
SELF_SUM=$(sha256sum "$0" | cut -d' ' -f1)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SELF_SUM" ]; then
	exit 0
fi

log() { printf 'setup: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root (apt-get)"; exit 1; }
export DEBIAN_FRONTEND=noninteractive

# apt-get update tolerates a partial failure: the i386 security index is
# sometimes mid-sync on the mirror, and the main index suffices.
apt_update() { apt-get update -qq >/dev/null 2>&1 || apt-get update -qq || true; }

if ! dpkg --print-foreign-architectures | grep -qx i386; then
	dpkg --add-architecture i386
	apt_update
fi

AMD64_PKGS=(
	build-essential bc kmod
	linux-image-amd64 linux-headers-amd64
	linux-image-rt-amd64 linux-headers-rt-amd64
	linux-headers-686:i386
	linux-source-6.1
	qemu-system-x86 busybox-static
	gcc-i686-linux-gnu libc6-dev-i386-cross
	bpftrace linux-perf stress-ng rt-tests
	gnuplot-nox dkms xz-utils cpio
)

missing=()
for p in "${AMD64_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt_update
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$CACHE"

# The kernel source, for kselftest_harness.h, kselftest.h and checkpatch.pl.
src_tar=$(ls /usr/src/linux-source-6.1.tar.xz)
if [ ! -f "$CACHE/linux-source-6.1/.unpacked" ] ||
   [ "$src_tar" -nt "$CACHE/linux-source-6.1/.unpacked" ]; then
	log "unpacking $src_tar"
	rm -rf "$CACHE/linux-source-6.1"
	tar -C "$CACHE" -xf "$src_tar"
	touch "$CACHE/linux-source-6.1/.unpacked"
fi

# The i386 kernel image and busybox cannot be installed next to the amd64
# ones (their dependencies are not multi-arch): download and unpack them.
# The 686 image must match the installed 686 headers.
hdr686=$(dpkg-query -W -f='${Depends}' linux-headers-686:i386 |
	 grep -o 'linux-headers-[0-9.-]*-686' | head -n1)
img686=${hdr686/headers/image}
unpack_i386() {	# package, destination
	local pkg=$1 dst=$2
	[ -f "$dst/.unpacked" ] && return 0
	log "unpacking $pkg into $dst"
	rm -rf "$dst" "$CACHE/dl"
	mkdir -p "$dst" "$CACHE/dl"
	(cd "$CACHE/dl" && apt-get download -qq "$pkg:i386" >/dev/null)
	dpkg-deb -x "$CACHE"/dl/*.deb "$dst"
	rm -rf "$CACHE/dl"
	touch "$dst/.unpacked"
}
unpack_i386 "$img686" "$CACHE/i386/$img686"
unpack_i386 busybox-static "$CACHE/i386/busybox-static"

echo "$SELF_SUM" > "$STAMP"
log "all present"
