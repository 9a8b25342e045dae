// SPDX-License-Identifier: GPL-2.0
/*
 * Bench builds only (`make bench`, TS_BENCH=1): at load, time bench_iters
 * calls of the sched_switch probe body, with both tasks tracked (two
 * words written per call, as in a real switch between tracked threads)
 * and with neither tracked (the lookup misses), against a bare clock
 * read and an empty loop.  Preemption is off so no real switch
 * interleaves.  The results are the bench_ns parameter of taskstate.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/moduleparam.h>
#include <linux/preempt.h>
#include <linux/sched/task.h>
#include <linux/timekeeping.h>
#include "../../module/compat.h"
#include "../../module/table.h"

static unsigned int bench_iters;
module_param(bench_iters, uint, 0444);
MODULE_PARM_DESC(bench_iters, "Bench build: probe body calls to time at load (0: none)");

static unsigned long bench_ns[4];
static unsigned int bench_nr = ARRAY_SIZE(bench_ns);
module_param_array(bench_ns, ulong, &bench_nr, 0444);
MODULE_PARM_DESC(bench_ns, "Bench build, result: ns for bench_iters of: empty loop, clock read, probe (tracked), probe (untracked)");

static void (*ts_bench_switch)(void *data, TS_SWITCH_PROBE_ARGS);

/**
 * ts_bench_set_probe() - the sched_switch probe the benchmark calls
 * @probe: probes.c's ts_probe_switch()
 *
 * Context: module load, before any probe is attached.
 */
void ts_bench_set_probe(void *probe)
{
	ts_bench_switch = probe;
}

/**
 * ts_bench_probe() - time the probe body, if bench_iters asks for it
 *
 * Runs only if current is tracked (track_all=1): the tracked case writes
 * its words.
 *
 * Context: module load, process context; disables preemption while it
 * times.
 */
void ts_bench_probe(void)
{
	struct task_struct *idle = &init_task;	/* never in the table */
	unsigned int i, n = bench_iters;
	u64 t[5], sink = 0;

	if (!n || !ts_bench_switch || !ts_lookup(current))
		return;
	preempt_disable();
	t[0] = ktime_get_ns();
	for (i = 0; i < n; i++)
		barrier();
	t[1] = ktime_get_ns();
	for (i = 0; i < n; i++)
		sink += ktime_get_boot_fast_ns();
	t[2] = ktime_get_ns();
	for (i = 0; i < n; i++)
		TS_SWITCH_CALL(ts_bench_switch, NULL, true, current, current,
			       TASK_RUNNING);
	t[3] = ktime_get_ns();
	for (i = 0; i < n; i++)
		TS_SWITCH_CALL(ts_bench_switch, NULL, true, idle, idle,
			       TASK_RUNNING);
	t[4] = ktime_get_ns();
	preempt_enable();
	for (i = 0; i < ARRAY_SIZE(bench_ns); i++)
		bench_ns[i] = t[i + 1] - t[i];
	pr_info("bench: %u iterations, sink %llu\n", n, sink & 1);
}
