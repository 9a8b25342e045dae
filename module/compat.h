/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference taskstate cares about, as small inline
 * wrappers; the rest of the module never tests LINUX_VERSION_CODE.
 *
 * Supported: 6.1 (tested in the VM) up to 6.12 (build-tested).  The
 * sched_switch prototype with prev_state, which the probes rely on, exists
 * since 5.18.
 */
#ifndef TASKSTATE_COMPAT_H
#define TASKSTATE_COMPAT_H

#include <linux/sched.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 18, 0)
#error "taskstate needs Linux 5.18 or later (sched_switch with prev_state)"
#endif

/* The freezer's own state appeared in 6.1; before it, frozen was a flag. */
#ifndef TASK_FROZEN
#define TASK_FROZEN 0
#endif

/*
 * Is @prev, which sched_switch is switching out, still queued on its run
 * queue (preempted, or its sleep was cancelled by a pending signal)?
 * Called with the run queue lock held, which serialises on_rq.
 *
 * 6.1: __schedule() dequeues a task that goes to sleep before the
 * tracepoint (deactivate_task() clears on_rq), but passes the sleep state
 * it read even when signal_pending_state() kept the task runnable.
 * 6.12+ (EEVDF delayed dequeue): a sleeping fair task may stay on_rq with
 * se.sched_delayed set; it is not runnable (as task_is_runnable() says).
 */
static inline bool ts_task_queued(const struct task_struct *prev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	return READ_ONCE(prev->on_rq) && !prev->se.sched_delayed;
#else
	return READ_ONCE(prev->on_rq);
#endif
}

/* Is @t on a CPU right now?  Racy by nature; for the initial snapshot. */
static inline bool ts_task_on_cpu(const struct task_struct *t)
{
#ifdef CONFIG_SMP
	return READ_ONCE(t->on_cpu);
#else
	return t == current;
#endif
}

#endif /* TASKSTATE_COMPAT_H */
