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
	gnuplot-nox python3 dkms xz-utils cpio
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

# Linux 6.12 headers from bookworm-backports, for the DKMS build test
# (scripts/dkms-test.sh).  The backports suite is added, in a list file of
# its own, on the mirror this machine already uses for the release itself,
# read from its apt sources: the repository names no host.  The versioned
# headers package is installed, not the linux-headers-amd64 meta package,
# which must keep tracking the 6.1 kernel the VM tests boot.
# shellcheck source=/dev/null
BPO=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")-backports
BPO_LIST=/etc/apt/sources.list.d/taskstate-backports.list

# "deb [signed-by=FILE] URI <release>-backports main", from the first apt
# source (deb822 or one-line) that serves the release itself.
bpo_source_line() {
	local rel=${BPO%-backports} f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v rel="$rel" -v bpo="$BPO" '
		BEGIN { RS = ""; FS = "\n" }
		{
			delete k
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^#/ || $i !~ /^[A-Za-z-]+:/)
					continue
				key = tolower(substr($i, 1, index($i, ":") - 1))
				val = substr($i, index($i, ":") + 1)
				gsub(/^[ \t]+|[ \t]+$/, "", val)
				k[key] = val
			}
			if (tolower(k["enabled"]) == "no" ||
			    (" " k["types"] " ") !~ / deb / ||
			    (" " k["suites"] " ") !~ (" " rel " "))
				next
			split(k["uris"], u, /[ \t]+/)
			opt = k["signed-by"] ~ /^\// ? "[signed-by=" k["signed-by"] "] " : ""
			print "deb " opt u[1] " " bpo " main"
			exit
		}' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		[ "$f" != "$BPO_LIST" ] || continue
		awk -v rel="$rel" -v bpo="$BPO" '
		$1 != "deb" { next }
		{
			i = 2; opt = ""
			if ($2 ~ /^\[/) {
				while (i <= NF && $i !~ /\]$/)
					opt = opt $(i++) " "
				opt = opt $(i++) " "
			}
			if ($(i + 1) == rel) {
				print "deb " opt $i " " bpo " main"
				exit
			}
		}' "$f"
	done
}

# Write the list file unless another source already has the suite.
bpo_source() {
	local line
	if grep -qsE "^[^#]*[[:space:]]$BPO([[:space:]]|$)" \
	   /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	   /etc/apt/sources.list.d/*.sources --exclude="${BPO_LIST##*/}"; then
		return 0
	fi
	line=$(bpo_source_line | head -n1)
	[ -n "$line" ] || { log "no apt source for ${BPO%-backports} to derive $BPO from"; exit 1; }
	if [ "$(cat "$BPO_LIST" 2>/dev/null)" != "$line" ]; then
		log "adding $BPO in $BPO_LIST"
		echo "$line" > "$BPO_LIST"
	fi
}

have_headers_612() {
	dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
		grep -qE '^linux-headers-6\.12\.[^ ]*[0-9]-amd64 .* ok installed$'
}

bpo_source
if ! have_headers_612; then
	apt_update
	bpo_ver=$(apt-cache madison linux-headers-amd64 |
		  awk -F' *[|] *' -v s="$BPO/" 'index($3, s) { print $2; exit }')
	hdr612=$(apt-cache show "linux-headers-amd64=${bpo_ver:-none}" 2>/dev/null |
		 sed -n 's/^Depends: \(linux-headers-[^ ,]*\).*/\1/p' | head -n1)
	case $hdr612 in
	linux-headers-6.12.*) ;;
	*) log "no 6.12 linux-headers-amd64 in $BPO (found '${bpo_ver:-none}')"; exit 1 ;;
	esac
	# By name and without -t: "-t $BPO" would also move the installed
	# linux-image-amd64, linux-headers-amd64, linux-perf... to 6.12.  The
	# package and what it depends on (its kbuild, its common headers, its
	# kernel image) exist only in backports, so apt finds them there.
	log "installing $hdr612 from $BPO"
	apt-get install -y -qq --no-install-recommends "$hdr612" >/dev/null
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
