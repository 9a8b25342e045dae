#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of scripts/count.sh --686: bench/count-guest.sh's run
# for the Debian 6.1 686 guest, whose script runs in the busybox
# initramfs (scripts/vm-run.sh): the static i386 driver, the modules and
# this script in $TS_OUT.  The same settling and setup
# (count-guest-setup.sh, also in $TS_OUT), pinned to CPU 1;
# configurations N (not loaded), E (loaded, nothing tracked), A (every
# thread tracked), z (A with totals=0) and Q (A with the seqcount pair),
# operations empty, pipe and pipe_thr: what runs without the host's
# tools.
out=$TS_OUT
log() { echo "# $(date +%T) $*"; }
die() { log "FATAL: $*"; exit 1; }

mount -t debugfs none /sys/kernel/debug 2>/dev/null
# count.sh put it beside this run's files.
# shellcheck source=count-guest-setup.sh
. "$out/count-guest-setup.sh"

unload() {
	for _ in 1 2 3 4 5; do
		rmmod taskstate 2>/dev/null && return
		sleep 1
	done
	die "rmmod taskstate"
}

for cfg in $COUNT_CONFIGS; do
	log "configuration $cfg"
	case $cfg in
	N) ;;
	E) insmod "$out/taskstate.ko" track_all=0 || die "insmod" ;;
	A) insmod "$out/taskstate.ko" track_all=1 || die "insmod" ;;
	z) insmod "$out/taskstate.ko" track_all=1 totals=0 || die "insmod" ;;
	Q) insmod "$out/seq/taskstate.ko" track_all=1 || die "insmod" ;;
	*) die "configuration $cfg: not in this guest" ;;
	esac
	sync
	sleep 3
	for op in $COUNT_OPS; do
		"$out/count" --warm 20 "$op" 1 "$COUNT_SPANS" > /tmp/count.log 2>&1 ||
			{ cat /tmp/count.log; die "count $cfg $op"; }
		"$out/count" --dump
		echo "$cfg $op 1 $COUNT_SPANS" >> "$out/manifest.txt"
		sync
		sleep 1.5
	done
	[ "$cfg" = N ] || unload
	sync
	sleep 3
done
log "done"
