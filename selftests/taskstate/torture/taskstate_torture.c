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
 * mode=2 tortures the user-space side of the mapping instead: the word
 * is the first entry (struct taskstate_map_entry, gen 1) of a page that
 * /dev/taskstate_torture maps read-only, written with ts_word_store();
 * no kernel reader runs.  Loading waits (up to 30 s) for a process to
 * map the page, writes for ms, then sets the entry's gen to 2 so the
 * reader (selftests' ts_torture_map) knows the run is over; the mapping
 * holds the module until it is unmapped.
 *
 * mode=3 does the same for the per-state totals: the writer changes the
 * mapped entry with the module's own ts_pub_set() (entry.h) through a
 * fixed cycle RUNNING, RUNNABLE, SLEEPING, BLOCKED, one every
 * TORTURE_STEP ns of a made-up clock, so a reader can tell from a word's
 * since-time alone which totals belong to it (ts_torture_map totals).
 *
 * The run happens at load; results are in the read-only parameters.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "compat.h"
#include "entry.h"

static int mode;
module_param(mode, int, 0444);
MODULE_PARM_DESC(mode, "0: the module's word helpers, 1: plain 64-bit accesses (negative control), 2: helpers, read from user space through a mapping, 3: per-state totals (ts_pub_set()), read through a mapping");

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

/* entry.h's switch: this module keeps the totals (mode=3). */
bool ts_totals = true;

/* mode=3: the made-up clock's start and step (uapi: ts_torture_map.c). */
#define TORTURE_T0	1000
#define TORTURE_STEP	1000

static struct ts_word word;
static bool stop;
static atomic_long_t nr_reads, nr_torn;

/* mode=2: the mapped entry, and whether a process has mapped it. */
static struct taskstate_map_entry *mapped;
static atomic_t nr_mapped;

static int torture_mmap(struct file *file, struct vm_area_struct *vma)
{
	int ret;

	if (!mapped || (vma->vm_flags & (VM_WRITE | VM_EXEC)))
		return -EACCES;
	ts_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	ret = remap_vmalloc_range(vma, mapped, vma->vm_pgoff);
	if (!ret)
		atomic_inc(&nr_mapped);
	return ret;
}

static const struct file_operations torture_fops = {
	.owner = THIS_MODULE,
	.mmap = torture_mmap,
};

static struct miscdevice torture_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "taskstate_torture",
	.fops = &torture_fops,
	.mode = 0444,
};

/* mode=2: the device, and a reader that mapped it; 0 or -errno. */
static int torture_map_setup(void)
{
	unsigned int i;
	int ret;

	mapped = vmalloc_user(PAGE_SIZE);
	if (!mapped)
		return -ENOMEM;
	/* A consistent pair (0 and 0 is not) before anyone can map it. */
	if (mode == 3)
		ts_pub_first((struct ts_pub *)mapped,
			     taskstate_pack(TASKSTATE_RUNNING, TORTURE_T0));
	else
		ts_word_store((struct ts_word *)&mapped->word,
			      (u64)~0U << 32);
	mapped->gen = 1;
	ret = misc_register(&torture_dev);
	if (ret) {
		vfree(mapped);
		mapped = NULL;
		return ret;
	}
	for (i = 0; i < 1500 && !atomic_read(&nr_mapped); i++)
		msleep(20);
	if (!atomic_read(&nr_mapped)) {
		pr_err("mode=2: nobody mapped /dev/taskstate_torture\n");
		misc_deregister(&torture_dev);
		vfree(mapped);
		mapped = NULL;
		return -ETIMEDOUT;
	}
	return 0;
}

/* mode=3: the totals' writer, through the cycle of four states. */
static int totals_writer_fn(void *unused)
{
	static const unsigned int cycle[4] = {
		TASKSTATE_RUNNING, TASKSTATE_RUNNABLE,
		TASKSTATE_SLEEPING, TASKSTATE_BLOCKED,
	};
	struct ts_pub *p = (struct ts_pub *)mapped;
	u64 k = 0;

	while (!READ_ONCE(stop)) {
		k++;
		ts_pub_set(p, cycle[k % 4], TORTURE_T0 + k * TORTURE_STEP);
		if (!(k & 0xffff))
			cond_resched();
	}
	writes = k;
	return 0;
}

static int writer_fn(void *unused)
{
	struct ts_word *w = mapped ? (struct ts_word *)&mapped->word : &word;
	u32 i = 0;

	while (!READ_ONCE(stop)) {
		u64 v;

		i++;
		v = ((u64)~i << 32) | i;
		if (mode == 1)
			WRITE_ONCE(word.v.counter, v);
		else
			ts_word_store(w, v);
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
	static_assert(sizeof(struct ts_pub) == TASKSTATE_MAP_ENTRY_SIZE);

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
	if (mode == 2 || mode == 3) {
		ret = torture_map_setup();
		if (ret) {
			kfree(tasks);
			return ret;
		}
	}
	/* 0 and 0 would be a consistent pair; start from one. */
	ts_word_store(&word, ((u64)~0U << 32) | 0);
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (cpu && (mode == 2 || mode == 3))
			continue;	/* the reader is in user space */
		t = kthread_create(cpu ? reader_fn :
				   mode == 3 ? totals_writer_fn : writer_fn,
				   NULL, "ts_torture/%u", cpu);
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
			if (tasks[cpu])
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
	if (mapped) {
		/* the reader's signal to stop: the entry changed hands */
		smp_wmb();
		WRITE_ONCE(mapped->gen, 2);
		/*
		 * A failed load would free the module under the mapping:
		 * stay loaded; the reader sees too few reads and fails.
		 */
		ret = 0;
	}
	reads = atomic_long_read(&nr_reads);
	torn = atomic_long_read(&nr_torn);
	pr_info("mode=%d: %lu writes, %lu reads, %lu torn\n", mode, writes,
		reads, torn);
	return ret;
}

/* A mapping holds the module (fops owner), so none is left here. */
static void __exit torture_exit(void)
{
	if (mapped) {
		misc_deregister(&torture_dev);
		vfree(mapped);
	}
}

module_init(torture_init);
module_exit(torture_exit);
MODULE_DESCRIPTION("taskstate test: torn-word torture of the store helper");
MODULE_LICENSE("GPL");
