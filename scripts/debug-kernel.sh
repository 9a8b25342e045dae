#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build one of taskstate's debug kernels from the unpacked linux-source-6.1
# (scripts/setup.sh unpacks it into the cache), once per machine:
#
#   scripts/debug-kernel.sh debug|kcsan     -> prints the kernel release
#
# The configuration is x86_64 defconfig + kvm_guest.config, then
# scripts/kconfig/base.config and scripts/kconfig/FLAVOUR.config merged on
# top.  The build lives in the cache, outside the repository
# ($CACHE/debug-kernels/FLAVOUR, about 3 GB), keyed by the sha256 of the
# two fragments and this script: it is rebuilt when one of them changes,
# and otherwise this only prints the release.  A fresh build takes about
# 15 minutes on two cores (make -j of the CPUs).  Modules are built
# against that directory (scripts/build-module.sh), and the guest boots
# its bzImage (scripts/vm-run.sh); 9p and virtio are built in.
set -euo pipefail

flavour=$1
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
src=$CACHE/linux-source-6.1
frag=$top/scripts/kconfig
out=$CACHE/debug-kernels/$flavour
case $flavour in
debug|kcsan) ;;
*) echo "debug-kernel: unknown flavour $flavour (debug, kcsan)" >&2; exit 2 ;;
esac
[ -f "$src/Makefile" ] || { echo "debug-kernel: no $src (run make deps)" >&2; exit 2; }

key=$(cat "$frag/base.config" "$frag/$flavour.config" "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ] && [ -f "$out/arch/x86/boot/bzImage" ]; then
	cat "$out/include/config/kernel.release"
	exit 0
fi

log() { printf 'debug-kernel: %s\n' "$*" >&2; }
log "building the $flavour kernel in $out (about 15 min)"
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s)
mk() { make -s -C "$src" O="$out" "$@"; }
mk defconfig kvm_guest.config >&2
echo "CONFIG_LOCALVERSION=\"-ts-$flavour\"" > "$out/local.config"
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
	"$frag/base.config" "$frag/$flavour.config" "$out/local.config" >&2
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
