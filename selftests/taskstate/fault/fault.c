// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection for the tests: linked into fi/taskstate.ko only
 * (Kbuild, TS_FAULT_INJECT; fault.h says what each knob is for).  The
 * parameters are taskstate's: /sys/module/taskstate/parameters/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/sched/clock.h>
#include <uapi/linux/taskstate.h>

static unsigned int snapshot_delay_ms;
module_param(snapshot_delay_ms, uint, 0644);
MODULE_PARM_DESC(snapshot_delay_ms, "Fault-injection build: TRACK sleeps this long (ms, at most 10000, as set when the call began) between its grace period and its snapshot");

static unsigned int newtask_delay_us;
module_param(newtask_delay_us, uint, 0644);
MODULE_PARM_DESC(newtask_delay_us, "Fault-injection build: busy-wait this long (us, at most 10000) in the task_newtask probe between its look at the parent's slot and the child's insert");

static bool map_enodev;
module_param(map_enodev, bool, 0644);
MODULE_PARM_DESC(map_enodev, "Fault-injection build: mmap() fails with ENODEV as where user space cannot load a 64-bit word whole");

static unsigned long long proc_exited_start_ns;
module_param(proc_exited_start_ns, ullong, 0644);
MODULE_PARM_DESC(proc_exited_start_ns, "Fault-injection build: each new process record starts every exited total at this many ns instead of 0");

static unsigned long long proc_hold_max_ns;
module_param(proc_hold_max_ns, ullong, 0644);
MODULE_PARM_DESC(proc_hold_max_ns, "Fault-injection build: the longest hold of the table lock (interrupts off) by a PROCESS walk, in ns (local_clock()); write 0 to start again");

static unsigned int proc_hold_max_threads;
module_param(proc_hold_max_threads, uint, 0644);
MODULE_PARM_DESC(proc_hold_max_threads, "Fault-injection build: the most threads a PROCESS walk counted in one hold of the table lock; write 0 to start again");

static u64 proc_hold_since;	/* under ts_lock */

/**
 * ts_fault_snapshot_delay() - how long this TRACK holds its snapshot
 *
 * Read when the call begins, so that a test can set the next call's
 * delay while this one waits.
 *
 * Context: process context.
 * Return: snapshot_delay_ms, at most 10000.
 */
unsigned int ts_fault_snapshot_delay(void)
{
	return min(READ_ONCE(snapshot_delay_ms), 10000U);
}

/**
 * ts_fault_sleep() - TRACK's hold between its grace period and snapshot
 * @ms: from ts_fault_snapshot_delay() at the call's start; 0 holds not
 *
 * Context: process context, may sleep; no lock held.
 */
void ts_fault_sleep(unsigned int ms)
{
	if (ms)
		msleep(ms);
}

/**
 * ts_fault_newtask_delay() - widen the newtask probe's window
 *
 * Between the probe's lockless look at the parent's slot and the child's
 * insert, a few instructions otherwise: at most 10 ms, as it spins with
 * preemption off inside clone().
 *
 * Context: the task_newtask probe (preemption disabled); does not sleep.
 */
void ts_fault_newtask_delay(void)
{
	unsigned int us = min(READ_ONCE(newtask_delay_us), 10000U);

	if (us)
		udelay(us);
}

/**
 * ts_fault_map_enodev() - refuse mmap() as if words could not be mapped
 *
 * Context: process context (mmap()).
 * Return: map_enodev.
 */
bool ts_fault_map_enodev(void)
{
	return READ_ONCE(map_enodev);
}

/**
 * ts_fault_proc_start() - where a new process record's exited totals start
 * @exited_ns: the record's TASKSTATE_MAP_NR_TOTALS exited totals, zeroed
 *
 * Context: under ts_lock (a raw spinlock, interrupts off); does not sleep.
 */
void ts_fault_proc_start(u64 *exited_ns)
{
	u64 ns = READ_ONCE(proc_exited_start_ns);
	unsigned int i;

	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		exited_ns[i] = ns;
}

/**
 * ts_fault_proc_hold_begin() - a PROCESS walk took the table lock
 *
 * Context: under ts_lock (a raw spinlock, interrupts off).
 */
void ts_fault_proc_hold_begin(void)
{
	proc_hold_since = local_clock();
}

/**
 * ts_fault_proc_hold_end() - a PROCESS walk drops the table lock
 * @nr: the threads it counted in this hold
 *
 * Context: under ts_lock (a raw spinlock, interrupts off).
 */
void ts_fault_proc_hold_end(unsigned int nr)
{
	u64 ns = local_clock() - proc_hold_since;

	if (ns > READ_ONCE(proc_hold_max_ns))
		WRITE_ONCE(proc_hold_max_ns, ns);
	if (nr > READ_ONCE(proc_hold_max_threads))
		WRITE_ONCE(proc_hold_max_threads, nr);
}
