#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages the build, the tests and the benchmarks need,
# and unpack what cannot be installed on an amd64 host (the i386 kernel image,
# busybox:i386, the kernel source) into a cache outside the repository:
# only what is asked for.  Idempotent: when everything is present it only
# checks and returns.
#
# Usage: scripts/setup.sh [demo]      (root)
#
#   demo   what `make demo` needs alone: the compiler, the 6.1 amd64 kernel
#          and headers, QEMU, busybox (a few hundred MB, no kernel source)
#   (none) what `make check` needs for $KERNELS (unset or all: the ten) and
#          $HOST_TESTS (default: scripts/lib.sh's TS_HOST_TESTS),
#          and the benchmarks unless BENCH=0: `make deps` prepares all.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
STAMP=$CACHE/setup.done
MODE=${1:-check}
if [ "$MODE" = demo ]; then
	WANT=" amd64 " TESTS=" " BENCHES=0
else
	WANT=" $(ts_flavours) "
	TESTS=" ${HOST_TESTS-$TS_HOST_TESTS} "
	BENCHES=${BENCH:-1}
fi
want() { case $WANT in *" $1 "*) return 0 ;; esac; return 1; }
want_test() { case $TESTS in *" $1 "*) return 0 ;; esac; return 1; }
chroots=""
if want amd64-5.10; then chroots+=" bullseye"; fi
if want amd64-7.2 || want proxy; then chroots+=" sid"; fi
SELF_SUM=$({ cat "$0"; echo "$MODE|$WANT|$TESTS|$BENCHES"; } | sha256sum | cut -d' ' -f1)

done_before() { [ -f "$STAMP" ] && grep -qx "$SELF_SUM" "$STAMP"; }
done_before && exit 0

log() { printf 'setup: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root (apt-get)"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
# One setup at a time fills the cache; a second finds it filled.
mkdir -p "$CACHE"
ts_lock "$CACHE/setup.lock"
done_before && exit 0

# apt-get update tolerates a partial failure: the i386 security index is
# sometimes mid-sync on the mirror, and the main index suffices.
apt_update() { apt-get update -qq >/dev/null 2>&1 || apt-get update -qq || true; }
# Waiting (up to 10 minutes) for another apt user of the machine rather
# than failing on its lock.
apt_install() {
	apt-get install -y -qq --no-install-recommends \
		-o DPkg::Lock::Timeout=600 "$@" >/dev/null
}

if want 686 && ! dpkg --print-foreign-architectures | grep -qx i386; then
	dpkg --add-architecture i386
	apt_update
fi

# The demo: build the module and the command (gcc, make and libc6-dev:
# not build-essential's g++), boot the 6.1 kernel (its image unpacked
# below, not installed: no initramfs of its own to make).
AMD64_PKGS=(
	gcc make libc6-dev kmod cpio xz-utils
	linux-headers-amd64
	qemu-system-x86 busybox-static
)
if [ "$MODE" != demo ]; then
	AMD64_PKGS+=(linux-image-amd64)
	# make check on any kernel: the kselftest harness and checkpatch
	# (linux-source), the 32-bit builds and the index test (check.sh),
	# bpftrace (ts_bpftrace), the Prometheus pipeline (ts_metrics.sh),
	# a real sandbox for the scoped descriptor (ts_scope in bubblewrap),
	# the BPF backend (bpf/: clang, libbpf-dev, bpftool).
	AMD64_PKGS+=(build-essential bc python3 pkg-config man-db linux-source-6.1
		gcc-i686-linux-gnu libc6-dev-i386-cross qemu-user-static bpftrace
		prometheus prometheus-node-exporter curl bubblewrap
		clang libbpf-dev bpftool)
	if want rt-amd64; then AMD64_PKGS+=(linux-image-rt-amd64 linux-headers-rt-amd64); fi
	if want 686; then AMD64_PKGS+=(linux-headers-686:i386); fi
	if want arm64; then
		AMD64_PKGS+=(qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
	fi
	if want amd64-5.10 || want amd64-7.2 || want proxy; then AMD64_PKGS+=(debootstrap); fi
	if want debug || want kcsan; then AMD64_PKGS+=(flex bison libelf-dev libssl-dev); fi
	if want_test deb-test; then AMD64_PKGS+=(debhelper dh-dkms lintian dkms); fi
	if want_test dkms-test || want_test install-test; then AMD64_PKGS+=(dkms); fi
	# kselftest's install target copies with rsync.
	if want_test ksft-test; then AMD64_PKGS+=(rsync); fi
	if [ "$BENCHES" != 0 ] && want amd64; then
		# make bench's counted part builds a libbpf equivalent.
		AMD64_PKGS+=(linux-perf stress-ng rt-tests gnuplot-nox clang libbpf-dev)
	fi
fi

missing=()
for p in "${AMD64_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	apt_update
	apt_install "${missing[@]}"
fi

# Download PKGs (name[:arch]) with GET (apt-get, or papt_get: the private
# apt below) and unpack them into DST, once: DST/.unpacked marks a
# complete unpack.
unpack_debs() {	# get, destination, package...
	local get=$1 dst=$2 dl deb
	shift 2
	[ -f "$dst/.unpacked" ] && return 0
	log "unpacking $* into $dst"
	dl=$(mktemp -d "$CACHE/dl.XXXXXX")
	(cd "$dl" && "$get" -o APT::Sandbox::User=root download -qq "$@" >/dev/null) ||
		{ rm -rf "$dl"; log "cannot download $*"; exit 1; }
	rm -rf "$dst"
	mkdir -p "$dst"
	for deb in "$dl"/*.deb; do
		dpkg-deb -x "$deb" "$dst"
	done
	rm -rf "$dl"
	touch "$dst/.unpacked"
}

if [ "$MODE" = demo ]; then
	# The image of the 6.1 kernel the headers are for, unless installed
	# (scripts/vm-run.sh boots either).
	k61=$("$(dirname "$0")/kernels.sh" amd64)
	[ -e "/boot/vmlinuz-$k61" ] ||
		unpack_debs apt-get "$CACHE/images/$k61" "linux-image-$k61"
	echo "$SELF_SUM" >> "$STAMP"
	log "all present (demo)"
	exit 0
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

if want amd64-6.12 || want_test dkms-test; then
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
		apt_install "$hdr612"
	fi
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
if want 686; then
	hdr686=$(dpkg-query -W -f='${Depends}' linux-headers-686:i386 |
		 grep -o 'linux-headers-[0-9.-]*-686' | head -n1)
	img686=${hdr686/headers/image}
	unpack_debs apt-get "$CACHE/i386/$img686" "$img686:i386"
	unpack_debs apt-get "$CACHE/i386/busybox-static" busybox-static:i386
fi

# --- The kernel matrix beyond bookworm's own (scripts/kernels.sh) --------
# Each flavour's kernel release goes into $CACHE/kernels/FLAVOUR.
#  amd64-6.12  bookworm-backports' 6.12: its headers (above) are built with
#              bookworm's gcc-12, so the host builds it; its image comes
#              with the headers (or is unpacked into $CACHE/images/KVER).
#  amd64-5.10  bullseye's 5.10, built in a bullseye chroot (gcc-10);
#  amd64-7.2   sid's newest, built in a sid chroot (gcc-16).  Both images
#              are unpacked into $CACHE/images/KVER.
#  proxy       sid's linux-source-7.2, unpacked into the cache, built
#              there by scripts/debug-kernel.sh in the same sid chroot,
#              which gets what a kernel build needs besides.
#  arm64       bookworm's 6.1 arm64 image, headers and busybox, unpacked
#              into $CACHE/arm64/, cross-built on the host.
# Packages of other suites and architectures come through a private apt
# configuration ($CACHE/apt: its own source list, index lists and empty
# dpkg status), so the host's apt never sees them.  The mirror is the one
# the host uses for its own release, read from its apt sources.
mkdir -p "$CACHE/kernels" "$CACHE/images" "$CACHE/arm64" "$CACHE/chroot"
REL=${BPO%-backports}
MIRROR=$(bpo_source_line | head -n1 | sed 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/')
[ -n "$MIRROR" ] || { log "no apt source for $REL to take the mirror from"; exit 1; }
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

PAPT=$CACHE/apt
papt() {	# apt-get | apt-cache, then arguments
	local cmd=$1
	shift
	"$cmd" -q -o Dir::Etc::SourceList="$PAPT/sources.list" \
		-o Dir::Etc::SourceParts="$PAPT/parts" \
		-o Dir::State::Lists="$PAPT/lists" \
		-o Dir::State::status="$PAPT/status" \
		-o Dir::Cache="$PAPT/cache" -o APT::Sandbox::User=root \
		-o APT::Architectures::=amd64 -o APT::Architectures::=arm64 \
		"$@"
}
mkdir -p "$PAPT/parts" "$PAPT/lists/partial" "$PAPT/cache/archives/partial"
touch "$PAPT/status"
papt_sources=$(printf 'deb [arch=%s signed-by=%s] %s %s main\n' \
	amd64 "$KEYRING" "$MIRROR" bullseye \
	amd64 "$KEYRING" "$MIRROR" sid \
	arm64 "$KEYRING" "$MIRROR" "$REL")
# Once per setup.sh run that gets here: only when something changed, and
# only for the kernels that need these lists.
if { want amd64-5.10 || want amd64-7.2 || want arm64 || want proxy; } && {
   [ "$(cat "$PAPT/sources.list" 2>/dev/null)" != "$papt_sources" ] ||
   [ -z "$(find "$PAPT/lists" -maxdepth 1 -name '*Packages*' -mmin -720)" ]; }; then
	echo "$papt_sources" > "$PAPT/sources.list"
	log "updating the private apt lists in $PAPT"
	# As apt_update: a suite mid-sync on the mirror fails one index.
	papt apt-get update -qq >/dev/null 2>&1 || papt apt-get update -qq || true
fi

# The release the meta package META (e.g. linux-image-amd64) depends on.
meta_release() {	# meta package, suffix (amd64, arm64)
	papt apt-cache show "$1" 2>/dev/null |
		sed -n 's/^Depends: .*linux-\(image\|headers\)-\([0-9][^ ,]*-'"$2"'\).*/\2/p' |
		sort -V | tail -n1 | grep .
}

papt_get() { papt apt-get "$@"; }

# A kernel image package and the linux-* packages of the same release it
# depends on (sid splits the kernel into linux-binary-KVER and
# linux-modules-KVER under linux-image-KVER).
image_pkgs() {	# kver, suffix (:arm64 or empty)
	local kver=$1 arch=$2
	echo "linux-image-$kver$arch"
	papt apt-cache show "linux-image-$kver$arch" 2>/dev/null |
		sed -n 's/^Depends: //p' | head -n1 | tr ',' '\n' |
		sed -n 's/^ *\(linux-[a-z]*-'"$kver"'\)\( .*\)\{0,1\}$/\1'"$arch"'/p' |
		grep -v "^linux-headers"
}

# A kernel booted from the cache needs modules.dep only for modprobe; the
# VM runner insmods by path.  sid's packages put the modules under
# /usr/lib/modules; vm-run.sh looks in both places.
unpack_image() {	# flavour, kver
	local kver=$2
	# shellcheck disable=SC2046
	unpack_debs papt_get "$CACHE/images/$kver" $(image_pkgs "$kver" "")
	echo "$kver" > "$CACHE/kernels/$1"
}

# amd64-6.12: the backports image that matches the installed headers.
if want amd64-6.12; then
	k612=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
	       sed -n 's/^linux-headers-\(6\.12\.[^ ]*[0-9]-amd64\) .* ok installed$/\1/p' |
	       sort -V | tail -n1)
	[ -n "$k612" ] || { log "no 6.12 headers installed"; exit 1; }
	[ -e "/boot/vmlinuz-$k612" ] ||
		unpack_debs apt-get "$CACHE/images/$k612" "linux-image-$k612"
	echo "$k612" > "$CACHE/kernels/amd64-6.12"
fi

# A debootstrap chroot of SUITE with COMPILER, make and the headers of
# KVER, and what the DKMS and install tests need there (dkms, gcc,
# libc6-dev, kmod), made once (into a temporary directory, renamed when
# complete) and brought to KVER's headers when the suite moves on.
make_chroot() {	# suite, compiler package, kver, extra package...
	local suite=$1 cc=$2 kver=$3 dir=$CACHE/chroot/$1 start p missing=()
	local pkgs=("$cc" make "linux-headers-$kver" dkms gcc libc6-dev kmod "${@:4}")
	if [ -f "$dir/.complete" ]; then
		for p in "${pkgs[@]}"; do
			# shellcheck disable=SC2016
			chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
				grep -q 'ok installed' || missing+=("$p")
		done
	fi
	if [ ! -f "$dir/.complete" ]; then
		log "creating the $suite chroot in $dir (debootstrap)"
		start=$(date +%s)
		rm -rf "$dir" "$dir.new"
		debootstrap --variant=minbase --keyring="$KEYRING" \
			--include="$(IFS=,; echo "${pkgs[*]}")" \
			"$suite" "$dir.new" "$MIRROR" > "$CACHE/chroot/$suite.log" 2>&1 ||
			{ log "debootstrap $suite failed: $CACHE/chroot/$suite.log"; exit 1; }
		chroot "$dir.new" apt-get clean
		echo "$(( $(date +%s) - start ))" > "$dir.new/.seconds"
		touch "$dir.new/.complete"
		mv "$dir.new" "$dir"
		log "$suite chroot made in $(cat "$dir/.seconds") s"
	elif [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]} in the $suite chroot"
		# As debootstrap: a mirror snapshot older than its Valid-Until.
		chroot "$dir" apt-get -o Acquire::Check-Valid-Until=false update -qq >/dev/null
		chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install \
			-y -qq --no-install-recommends "${missing[@]}" >/dev/null
		chroot "$dir" apt-get clean
	fi
}

# The compiler the headers of KVER were made with (gcc-10 for bullseye's
# 5.10, gcc-16 for sid's 7.2), from their dependencies.
headers_gcc() {	# kver
	papt apt-cache show "linux-headers-$1" "linux-kbuild-${1%-amd64}" 2>/dev/null |
		sed -n 's/^Depends: //p' | grep -o 'gcc-[0-9][0-9]*' | head -n1 | grep . ||
		echo gcc
}

if want amd64-5.10; then
	k510=$(meta_release linux-headers-amd64/bullseye amd64) ||
		{ log "no linux-headers-amd64 in bullseye"; exit 1; }
	make_chroot bullseye "$(headers_gcc "$k510")" "$k510"
	unpack_image amd64-5.10 "$k510"
fi

# What a kernel build needs besides the compiler (the proxy flavour;
# openssl makes the module signing key, certs/Makefile).
KBUILD_PKGS=(bc bison flex libelf-dev libssl-dev openssl perl python3 cpio)
if want amd64-7.2 || want proxy; then
	ksid=$(meta_release linux-headers-amd64/sid amd64) ||
		{ log "no linux-headers-amd64 in sid"; exit 1; }
	extra=()
	if want proxy; then extra=("${KBUILD_PKGS[@]}"); fi
	make_chroot sid "$(headers_gcc "$ksid")" "$ksid" "${extra[@]}"
	if want amd64-7.2; then unpack_image amd64-7.2 "$ksid"; fi
fi

# proxy: sid's kernel source of the 7.2 series, unpacked into the cache
# (scripts/debug-kernel.sh builds it), once: .unpacked names the package
# version, so a newer upload is unpacked again.
if want proxy; then
	psrc=linux-source-7.2
	pver=$(papt apt-cache show "$psrc" 2>/dev/null | sed -n 's/^Version: //p' |
	       sort -V | tail -n1)
	[ -n "$pver" ] || { log "no $psrc in sid"; exit 1; }
	if [ "$(cat "$CACHE/$psrc/.unpacked" 2>/dev/null)" != "$pver" ]; then
		log "unpacking $psrc $pver into $CACHE/$psrc"
		dl=$(mktemp -d "$CACHE/dl.XXXXXX")
		(cd "$dl" && papt apt-get download -qq "$psrc=$pver" >/dev/null) ||
			{ rm -rf "$dl"; log "cannot download $psrc"; exit 1; }
		dpkg-deb -x "$dl"/*.deb "$dl/x"
		rm -rf "${CACHE:?}/$psrc"
		tar -C "$CACHE" -xf "$dl/x/usr/src/$psrc.tar.xz"
		rm -rf "$dl"
		echo "$pver" > "$CACHE/$psrc/.unpacked"
	fi
fi

# arm64: image, headers (made self-contained: their Makefile includes the
# common headers by absolute path, rewritten to the cache; their scripts
# are the host's linux-kbuild of the same major version) and busybox.
if want arm64; then
	karm=$(meta_release linux-image-arm64:arm64/"$REL" arm64) ||
		{ log "no linux-image-arm64 in $REL"; exit 1; }
	unpack_debs papt_get "$CACHE/arm64/image-$karm" "linux-image-$karm:arm64"
	hdr=$CACHE/arm64/headers-$karm
	unpack_debs papt_get "$hdr" "linux-headers-$karm:arm64" "linux-headers-${karm%-arm64}-common"
	kb=$(readlink "$hdr/usr/src/linux-headers-$karm/scripts")	# ../../lib/linux-kbuild-X/scripts
	kb=${kb#../../lib/}
	kb=${kb%%/*}
	[ -d "/usr/lib/$kb" ] || { log "arm64 headers want /usr/lib/$kb: not installed"; exit 1; }
	mkdir -p "$hdr/usr/lib"
	ln -sfn "/usr/lib/$kb" "$hdr/usr/lib/$kb"
	sed -i "s|^include /usr/src/|include $hdr/usr/src/|" \
		"$hdr/usr/src/linux-headers-$karm/Makefile"
	unpack_debs papt_get "$CACHE/arm64/busybox-static" busybox-static:arm64
	# The BPF backend's loader for that guest, static: arm64's libbpf
	# and what it links (bpf/Makefile's SYSROOT).
	unpack_debs papt_get "$CACHE/arm64/bpf-sysroot" libbpf-dev:arm64 \
		libelf-dev:arm64 zlib1g-dev:arm64 libzstd-dev:arm64
	echo "$karm" > "$CACHE/kernels/arm64"
fi

echo "$SELF_SUM" >> "$STAMP"
log "all present"
