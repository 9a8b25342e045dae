// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: can a reader see a torn word?
 *
 * One kthread on CPU 0 keeps writing words whose two 32-bit halves encode
 * the same counter (high = ~low); one kthread on every other CPU keeps
 * reading and counts words whose halves disagree.  With mode=0 both sides
 * use the module's own ts_word_store()/ts_word_load(): there must be no
 * torn word, on 32-bit as on 64-bit.  mode=1 uses plain 64-bit accesses
 * instead (WRITE_ONCE()/READ_ONCE() of a u64), the negative control: on
 * 32-bit they are two 32-bit accesses and the test sees them tear, which
 * shows it can.
 *
 * The run happens at load; results are in the read-only parameters.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include "word.h"

static int mode;
module_param(mode, int, 0444);
MODULE_PARM_DESC(mode, "0: the module's word helpers, 1: plain 64-bit accesses (negative control)");

static unsigned int ms = 1000;
module_param(ms, uint, 0444);
MODULE_PARM_DESC(ms, "How long to run, in milliseconds (default 1000)");

static unsigned long writes, reads, torn;
module_param(writes, ulong, 0444);
MODULE_PARM_DESC(writes, "Result: words written");
module_param(reads, ulong, 0444);
MODULE_PARM_DESC(reads, "Result: words read");
module_param(torn, ulong, 0444);
MODULE_PARM_DESC(torn, "Result: words read whose halves disagree");

static struct ts_word word;
static bool stop;
static atomic_long_t nr_reads, nr_torn;

static int writer_fn(void *unused)
{
	u32 i = 0;

	while (!READ_ONCE(stop)) {
		u64 v;

		i++;
		v = ((u64)~i << 32) | i;
		if (mode)
			WRITE_ONCE(word.v.counter, v);
		else
			ts_word_store(&word, v);
		if (!(i & 0xffff))
			cond_resched();
	}
	writes = i;
	return 0;
}

static int reader_fn(void *unused)
{
	unsigned long n = 0, bad = 0;

	while (!READ_ONCE(stop)) {
		u64 v;

		if (mode)
			v = READ_ONCE(word.v.counter);
		else
			v = ts_word_load(&word);
		bad += (u32)(v >> 32) != (u32)~(u32)v;
		if (!(++n & 0xffff))
			cond_resched();
	}
	atomic_long_add(n, &nr_reads);
	atomic_long_add(bad, &nr_torn);
	return 0;
}

static int __init torture_init(void)
{
	struct task_struct **tasks;
	unsigned int cpu;
	int ret = 0;

	if (num_online_cpus() < 2) {
		pr_err("needs two CPUs\n");
		return -EOPNOTSUPP;
	}
	tasks = kcalloc(nr_cpu_ids, sizeof(*tasks), GFP_KERNEL);
	if (!tasks)
		return -ENOMEM;
	/* 0 and 0 would be a consistent pair; start from one. */
	ts_word_store(&word, ((u64)~0U << 32) | 0);
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		t = kthread_create(cpu ? reader_fn : writer_fn, NULL,
				   "ts_torture/%u", cpu);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		get_task_struct(t);
		kthread_bind(t, cpu);
		tasks[cpu] = t;
	}
	if (!ret) {
		for_each_online_cpu(cpu)
			wake_up_process(tasks[cpu]);
		msleep(ms);
	}
	WRITE_ONCE(stop, true);
	for_each_online_cpu(cpu) {
		if (!tasks[cpu])
			continue;
		kthread_stop(tasks[cpu]);
		put_task_struct(tasks[cpu]);
	}
	kfree(tasks);
	reads = atomic_long_read(&nr_reads);
	torn = atomic_long_read(&nr_torn);
	pr_info("mode=%d: %lu writes, %lu reads, %lu torn\n", mode, writes,
		reads, torn);
	return ret;
}

static void __exit torture_exit(void)
{
}

module_init(torture_init);
module_exit(torture_exit);
MODULE_DESCRIPTION("taskstate test: torn-word torture of the store helper");
MODULE_LICENSE("GPL");
