# SPDX-License-Identifier: GPL-2.0
#
# Sourced (POSIX sh) by bench/count-guest.sh and bench/count-guest-686.sh,
# inside the guest, with $out and die() defined: what makes a count
# repeat to the instruction, and the guest's description for the report
# (guest-env.txt); an empty manifest.txt.
: "${out:?count-guest-setup.sh: \$out is not set}"
cat /proc/kallsyms > "$out/kallsyms.txt"
# Until the kernel's random number generator is ready, every task
# created draws its stack canary through a path that mixes and reseeds
# (blake2s: some 9,000 instructions a thread create in 6.1 under TCG,
# where no RDRAND feeds it); a read of /dev/random waits for it.
head -c 1 /dev/random > /dev/null || die "/dev/random"
# The same addresses in every run: where the stack and heap fall decides
# how many pages, so page faults (copy-on-write after fork), a loop
# touches.
echo 0 > /proc/sys/kernel/randomize_va_space || die "cannot turn ASLR off"
# One scheduler path per operation: without wakeup preemption a woken
# task waits for the waker to block, where otherwise CFS's choice depends
# on the tasks' run times in ns, so on the emulation's speed, and a
# round trip takes one of two paths of different length.
echo NO_WAKEUP_PREEMPTION > /sys/kernel/debug/sched/features ||
	die "cannot turn wakeup preemption off"
{
	echo "guest_kernel=$(uname -r)"
	echo "guest_cmdline=$(cat /proc/cmdline)"
	echo "guest_ncpu=$(nproc)"
	echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	echo "sched_features=$(cat /sys/kernel/debug/sched/features)"
	echo "randomize_va_space=$(cat /proc/sys/kernel/randomize_va_space)"
	# What the guest's CPU model makes the kernel add (return thunks,
	# retpolines): part of every configuration's count, the module's too.
	echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	for f in /sys/devices/system/cpu/vulnerabilities/*; do
		echo "vulnerability_${f##*/}=$(cat "$f")"
	done
} > "$out/guest-env.txt"
: > "$out/manifest.txt"
