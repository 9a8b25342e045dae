#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a Debian kernel under QEMU (TCG) with a busybox initramfs, run one
# command inside, bring its exit status back, power off.
#
#   scripts/vm-run.sh [options] KVER OUTDIR SCRIPT
#
#   KVER    a Debian kernel release (scripts/kernels.sh FLAVOUR prints
#           one): 6.1.0-57-amd64, 6.1.0-57-rt-amd64, 6.12.95+deb12-amd64,
#           5.10.0-32-amd64, 7.2.13+deb14-amd64 (qemu-system-x86_64),
#           6.1.0-50-686 (qemu-system-i386), 6.1.0-50-arm64
#           (qemu-system-aarch64, -M virt), 6.1.NNN-ts-debug and
#           6.1.NNN-ts-kcsan, 7.2.NN-ts-proxy (the kernels
#           scripts/debug-kernel.sh builds into the cache; virtio and 9p
#           built in)
#   OUTDIR  a host directory, shared writable with the guest at /results
#   SCRIPT  a shell script run inside the guest.  amd64: in a chroot of the
#           host root (read-only 9p), so every host program is there, with
#           OUTDIR at /tmp/results.  686 and arm64: in the initramfs
#           (busybox), which cannot run the host's programs, with OUTDIR at
#           /results: put static i386 / aarch64 programs into OUTDIR.
#           $TS_OUT names the writable directory in all.
#
# Options: --timeout SEC (default 600)  --append "ARGS" (kernel command line)
#          --mem MB (default 1024; 2048 for debug and kcsan: KASAN's
#          shadow, kmemleak's metadata) --quiet (console log only in the file)
#          --accel ACCEL (default tcg; tcg,thread=single: one host thread)
#
# The exit status is SCRIPT's.  It travels over its own channel, the file
# OUTDIR/status: the host writes a pessimistic 130 before the boot and the
# guest the real status after SCRIPT, so a guest that panics, hangs or dies
# never reads as success.  Test boots use panic=-1 oops=panic
# panic_on_warn=1 softlockup_panic=1 hung_task_panic=1, so a kernel BUG,
# WARN, soft lockup or hung task ends the guest at once.  The
# console log is kept in OUTDIR/console.log and the guest's kernel log in
# OUTDIR/dmesg.txt.  Exit 124 means the hard timeout fired.  The guest
# creates OUTDIR/started just before it starts SCRIPT: a guest that died
# without it died in the kernel's boot or its /init, before anything
# SCRIPT loads.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
timeout=600 append="" mem="" quiet=0 accel=tcg
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--) shift; break ;;
	-*) echo "vm-run: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 3 ] || { sed -n '4,/^set -euo/{/^set -euo/d;p}' "$0" >&2; exit 2; }
kver=$1 out=$2 script=$3

qemu_machine=() console=ttyS0 vmlinuz="" moddir=""
case $kver in
*-ts-debug|*-ts-kcsan|*-ts-proxy)
	root=/
	vmlinuz=$CACHE/debug-kernels/${kver##*-ts-}/arch/x86/boot/bzImage
	moddir=/	# nothing to load: virtio and 9p are built in
	qemu=qemu-system-x86_64
	busybox=/bin/busybox
	chroot_host=1
	case $kver in *-ts-proxy) ;; *) mem=${mem:-2048} ;; esac
	;;
*-686*)
	root=$CACHE/i386/linux-image-$kver
	qemu=qemu-system-i386
	busybox=$CACHE/i386/busybox-static/bin/busybox
	chroot_host=0
	;;
*-arm64)
	root=$CACHE/arm64/image-$kver
	qemu=qemu-system-aarch64
	qemu_machine=(-M virt -cpu cortex-a57)
	console=ttyAMA0
	busybox=$CACHE/arm64/busybox-static/bin/busybox
	chroot_host=0
	;;
*)
	# Installed on the host, or unpacked into the cache (scripts/setup.sh).
	root=/
	[ -e "/boot/vmlinuz-$kver" ] || root=$CACHE/images/$kver
	qemu=qemu-system-x86_64
	busybox=/bin/busybox
	chroot_host=1
	;;
esac
mem=${mem:-1024}
# sid's kernel packages keep the kernel and modules in /usr/lib/modules.
if [ -z "$vmlinuz" ]; then
	vmlinuz=$root/boot/vmlinuz-$kver
	moddir=$root/lib/modules/$kver/kernel
	[ -e "$vmlinuz" ] || vmlinuz=$root/usr/lib/modules/$kver/vmlinuz
	[ -e "$moddir" ] || moddir=$root/usr/lib/modules/$kver/kernel
fi
for f in "$vmlinuz" "$moddir" "$busybox" "$script"; do
	[ -e "$f" ] || { echo "vm-run: missing $f (run make deps)" >&2; exit 2; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/status" "$out/started" "$out/console.log" "$out/dmesg.txt"
echo 130 > "$out/status"
cp "$script" "$out/cmd.sh"

# The initramfs: busybox, the modules 9p needs, and /init.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The guest's / : an unprivileged user must get through it (ts_scope).
chmod 755 "$work"
mkdir -p "$work"/{bin,dev,proc,sys,mnt,results,tmp,lib/modules}
cp "$busybox" "$work/bin/busybox"
: > "$work/lib/modules/order"	# none for the debug kernels (built in)
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
	 virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
	[ "$moddir" != / ] || break
	f=$(find "$moddir" -name "$m.ko*" | head -n1)
	# Built in on some kernels, modules on others: absent is fine.
	[ -n "$f" ] || continue
	case $f in
	*.xz) xz -dc "$f" > "$work/lib/modules/$m.ko" ;;
	*.zst) zstd -qdc "$f" > "$work/lib/modules/$m.ko" ;;
	*) cp "$f" "$work/lib/modules/$m.ko" ;;
	esac
	echo "$m" >> "$work/lib/modules/order"
done

cat > "$work/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in \$(cat /lib/modules/order); do insmod /lib/modules/\$m.ko; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /results
echo 130 > /results/status
if [ $chroot_host = 1 ]; then
	# cache=loose: the guest keeps what it read of the host's tree
	# (9p's documentation: for read-only mounts of files that do not
	# change meanwhile; the host writes only to the results share, and
	# to build products no running guest reads).  Every program start
	# otherwise asks the host for each file it opens.
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /mnt
	mount -t proc proc /mnt/proc
	mount -t sysfs sys /mnt/sys
	mount -t devtmpfs dev /mnt/dev
	mkdir -p /mnt/dev/pts /mnt/dev/shm
	mount -t devpts devpts /mnt/dev/pts
	mount -t tmpfs tmp /mnt/dev/shm
	mount -t tmpfs tmp /mnt/tmp
	mount -t tmpfs run /mnt/run
	mount -t debugfs debugfs /mnt/sys/kernel/debug
	mount -t tracefs tracefs /mnt/sys/kernel/tracing
	mount -t securityfs securityfs /mnt/sys/kernel/security
	mkdir /mnt/tmp/results
	mount --bind /results /mnt/tmp/results
	: > /results/started
	# The host's tree becomes the root of a mount namespace of its own,
	# as switch_root makes it, not a chroot: the kernel makes no user
	# namespace inside a chroot (current_chrooted()), and the scoped
	# descriptor's tests run in new user and pid namespaces.
	TS_OUT=/tmp/results unshare -m --propagation private \
		nsenter --mount=/proc/self/ns/mnt sh -c 'cd /mnt &&
		mount -o move /mnt / &&
		exec chroot . /bin/sh -c "cd /tmp && sh /tmp/results/cmd.sh"' \
		> /results/output.log 2>&1
else
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t tracefs tracefs /sys/kernel/tracing
	mount -t securityfs securityfs /sys/kernel/security
	mount -t tmpfs tmp /tmp
	mkdir -p /dev/pts
	mount -t devpts devpts /dev/pts
	: > /results/started
	(cd /results && TS_OUT=/results sh /results/cmd.sh) > /results/output.log 2>&1
fi
rc=\$?
dmesg > /results/dmesg.txt
echo \$rc > /results/status
sync
poweroff -f
EOF
chmod +x "$work/init"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd"

fsdevs=(-fsdev "local,id=res,path=$out,security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=res,mount_tag=results)
if [ $chroot_host = 1 ]; then
	fsdevs+=(-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
		 -device virtio-9p-pci,fsdev=root,mount_tag=hostroot)
fi

# Every way a test boot can go wrong ends it: a panic, an oops, a WARN, a
# soft lockup, a task hung for 120 s.
cmdline="console=$console quiet panic=-1 oops=panic panic_on_warn=1"
cmdline+=" softlockup_panic=1 hung_task_panic=1 $append"
timeout -k 10 "$timeout" "$qemu" "${qemu_machine[@]}" -accel "$accel" -nographic -no-reboot \
	-m "$mem" -smp 2 -kernel "$vmlinuz" -initrd "$work/initrd" \
	-append "$cmdline" "${fsdevs[@]}" ${QEMU_EXTRA:-} </dev/null >"$out/console.log" 2>&1 &
qpid=$!
[ $quiet = 1 ] || tail -n +1 -f --pid=$qpid "$out/console.log"
rc=0
wait $qpid || rc=$?
if [ $rc = 124 ]; then
	echo "vm-run: $kver: timed out after ${timeout}s" >&2
	exit 124
fi
status=$(cat "$out/status" 2>/dev/null || echo 130)
[ "$status" = 0 ] || echo "vm-run: $kver: guest status $status" >&2
exit "$status"
