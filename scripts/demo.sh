#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: build taskstate for Debian's 6.1 amd64 kernel, boot it in
# QEMU, load the module, start a small workload (a context-switch ping-pong,
# a sleeper, a stopped process) and print the debugfs table and
# `taskstate show`, `taskstate top` and `taskstate metrics` for it.
# Needs only what `scripts/setup.sh demo` installs.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kver=$("$top/scripts/kernels.sh" "${KERNEL:-amd64}")
out=$top/build/$kver
bin=$top/build/bin64

"$top/scripts/build-module.sh" "$kver" "$out"
make -s -C "$top/tools" O="$bin" all
# The workload alone, without the selftests' harness (linux-source):
# `make demo` needs no more than setup.sh demo installs.
${CC:-cc} -O2 -pthread -D_GNU_SOURCE -I"$top/lib" -I"$top/include/uapi" \
	-o "$bin/ts_pingpong" "$top/selftests/taskstate/ts_pingpong.c" "$bin/libtaskstate.a"

cat > "$out/demo.sh" <<GUEST
set -e
insmod $out/taskstate.ko
$bin/ts_pingpong 8 > /dev/null &
sleep 30 &
sleeper=\$!
sleep 30 &
stopped=\$!
sleep 1
kill -STOP \$stopped
echo "### /sys/kernel/debug/taskstate: the first lines, then the workload"
head -n 4 /sys/kernel/debug/taskstate
grep -E " (ts_pingpong|sleep|sh)\\\$" /sys/kernel/debug/taskstate
echo
echo "### taskstate show -p \$stopped"
$bin/taskstate show -p \$stopped
echo
echo "### taskstate top -n 1 (where the last second went)"
$bin/taskstate top -n 1 | head -n 12
echo
echo "### taskstate metrics -p \$stopped (for Prometheus)"
$bin/taskstate metrics -p \$stopped | grep -E '^taskstate_(threads|oldest_seconds)\\{.*state="stopped"'
echo
echo "### taskstate info"
$bin/taskstate info
kill -9 \$sleeper \$stopped
wait \$sleeper \$stopped 2>/dev/null || true
rmmod taskstate
GUEST

if ! "$top/scripts/vm-run.sh" --quiet --timeout 300 "$kver" "$out/demo" \
	"$out/demo.sh"; then
	cat "$out/demo/output.log" >&2
	echo "demo failed; console log: $out/demo/console.log" >&2
	exit 1
fi
cat "$out/demo/output.log"
