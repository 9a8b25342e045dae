// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: a thread that is queued on a run queue while its __state
 * says it sleeps.
 *
 * A kernel thread bound to one CPU sets TASK_INTERRUPTIBLE and then keeps
 * running (a sleep it never completes): whenever it is preempted there,
 * by cond_resched() on a voluntary-preemption kernel or by an interrupt
 * on a fully preemptible one, __schedule() leaves it queued, with
 * __state still TASK_INTERRUPTIBLE, and it runs again without a wakeup.
 * That is the window between set_current_state() and schedule() that
 * every sleeping kernel path has, held open.  With another task busy on
 * the same CPU it spends about half its time preempted there.  taskstate
 * must never show it SLEEPING: it is RUNNING or RUNNABLE throughout.
 *
 * Its tid is in the read-only parameter tid.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/task.h>

static unsigned int cpu;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU the thread is bound to (default 0)");

static int tid;
module_param(tid, int, 0444);
MODULE_PARM_DESC(tid, "Result: the thread's tid");

static struct task_struct *ts_qsleeper;

static int qsleeper_fn(void *unused)
{
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		/*
		 * Preempted here: queued, __state TASK_INTERRUPTIBLE.  The
		 * _tasks_rcu_qs variant also reports a quiescent state to
		 * RCU-tasks, which a task that is only ever preempted would
		 * otherwise hold up (synchronize_rcu_tasks(): ftrace, BPF).
		 */
		cond_resched_tasks_rcu_qs();
		cpu_relax();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

static int __init qsleeper_init(void)
{
	struct task_struct *t;

	if (cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	t = kthread_create(qsleeper_fn, NULL, "ts_qsleeper");
	if (IS_ERR(t))
		return PTR_ERR(t);
	get_task_struct(t);
	kthread_bind(t, cpu);
	tid = t->pid;
	ts_qsleeper = t;
	wake_up_process(t);
	return 0;
}

static void __exit qsleeper_exit(void)
{
	kthread_stop(ts_qsleeper);
	put_task_struct(ts_qsleeper);
}

module_init(qsleeper_init);
module_exit(qsleeper_exit);
MODULE_DESCRIPTION("taskstate test: a thread preempted while its state says it sleeps");
MODULE_LICENSE("GPL");
