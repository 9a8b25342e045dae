#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build one of taskstate's own kernels, once per machine:
#
#   scripts/debug-kernel.sh debug|kcsan|proxy     -> prints the kernel release
#
#   debug, kcsan  from the unpacked linux-source-6.1, built on the host
#   proxy         from the unpacked linux-source-7.2, built in the sid
#                 chroot with its compiler (scripts/setup.sh makes both);
#                 the chroot sees the source and the build directory
#                 bind-mounted at their own paths, in a private mount
#                 namespace
#
# The configuration is x86_64 defconfig + kvm_guest.config, then
# scripts/kconfig/base.config and scripts/kconfig/FLAVOUR.config merged on
# top.  The build lives in the cache, outside the repository
# ($CACHE/debug-kernels/FLAVOUR, about 3 GB), keyed by the sha256 of the
# two fragments and this script: it is rebuilt when one of them changes,
# and otherwise this only prints the release.  A fresh build takes about
# 15 minutes on two cores (make -j of the CPUs; proxy about 25).  Modules
# are built against that directory (scripts/build-module.sh), and the
# guest boots its bzImage (scripts/vm-run.sh); 9p and virtio are built in.
set -euo pipefail

flavour=$1
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
src=$CACHE/linux-source-6.1
frag=$top/scripts/kconfig
out=$CACHE/debug-kernels/$flavour
croot=""
case $flavour in
debug|kcsan) ;;
proxy)
	src=$CACHE/linux-source-7.2
	croot=$CACHE/chroot/sid
	[ -f "$croot/.complete" ] ||
		{ echo "debug-kernel: no sid chroot in $croot (run make deps)" >&2; exit 2; }
	;;
*) echo "debug-kernel: unknown flavour $flavour (debug, kcsan, proxy)" >&2; exit 2 ;;
esac
[ -f "$src/Makefile" ] || { echo "debug-kernel: no $src (run make deps)" >&2; exit 2; }

key=$(cat "$frag/base.config" "$frag/$flavour.config" "$0" | sha256sum | cut -d' ' -f1)
built() {
	[ "$(cat "$out/.key" 2>/dev/null)" = "$key" ] &&
		[ -f "$out/arch/x86/boot/bzImage" ] || return
	cat "$out/include/config/kernel.release"
}
built && exit 0
# One build at a time: a second run waits for the first and finds the
# kernel built, instead of removing the tree under it.
mkdir -p "$CACHE/debug-kernels"
ts_lock "$CACHE/debug-kernels/$flavour.lock" >&2
built && exit 0

log() { printf 'debug-kernel: %s\n' "$*" >&2; }
log "building the $flavour kernel in $out (about 15 min)"
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s)
# The fragments are copied next to the build, which the chroot sees.
cp "$frag/base.config" "$frag/$flavour.config" "$out/"
if [ -n "$croot" ]; then
	# shellcheck disable=SC2016
	inchroot() {
		cd / && unshare --mount --propagation private sh -ec '
			croot=$1 src=$2 out=$3
			shift 3
			mount -t proc proc "$croot/proc"
			for d in "$src" "$out"; do
				mkdir -p "$croot$d"
				mount --bind "$d" "$croot$d"
			done
			chroot "$croot" "$@"' sh "$croot" "$src" "$out" "$@"
	}
	# The chroot's gcc, as for the modules (scripts/build-module.sh): the
	# same compiler text, so that Kbuild sees no other compiler there.
	mk() { inchroot make -s -C "$src" O="$out" "$@"; }
else
	inchroot() { "$@"; }
	mk() { make -s -C "$src" O="$out" "$@"; }
fi
mk defconfig kvm_guest.config >&2
echo "CONFIG_LOCALVERSION=\"-ts-$flavour\"" > "$out/local.config"
inchroot "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
	"$out/base.config" "$out/$flavour.config" "$out/local.config" >&2
mk olddefconfig >&2
# Every option the fragments ask for must have survived olddefconfig.
missing=0
for f in "$frag/base.config" "$frag/$flavour.config"; do
	while IFS= read -r line; do
		case $line in
		CONFIG_*=n)	# off, or not even offered
			! grep -q "^${line%=n}=" "$out/.config" && continue ;;
		CONFIG_*) grep -qxF "$line" "$out/.config" && continue ;;
		*) continue ;;
		esac
		log "not as asked: $line"
		missing=1
	done < "$f"
done
[ $missing = 0 ] || { log "configuration incomplete"; exit 1; }
mk -j"$(nproc)" bzImage modules >&2
echo "$key" > "$out/.key"
log "built in $(( $(date +%s) - start )) s"
cat "$out/include/config/kernel.release"
