/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference taskstate cares about, as small inline
 * wrappers; the rest of the module never tests for a version.  Features
 * are detected in Kbuild (grep on the kernel headers), not by version.
 *
 * Supported: 5.18 and later (sched_switch passes prev_state; an older
 * kernel fails the check_trace_callback_type_sched_switch() check in
 * probes.c at build time, and dkms.conf does not try).  Tested on 6.1 in
 * the VM, built on 6.12.
 */
#ifndef TASKSTATE_COMPAT_H
#define TASKSTATE_COMPAT_H

#include <linux/sched.h>

/* The freezer's own state appeared in 6.1; before it, frozen was a flag. */
#ifndef TASK_FROZEN
#define TASK_FROZEN 0
#endif

/*
 * Is @prev, which sched_switch is switching out, still queued on its run
 * queue (preempted, or its sleep was cancelled by a pending signal)?
 * sched_switch calls it with the run queue lock held, which serialises
 * on_rq; the snapshot (ts_state_of()) without it, as a hint.
 *
 * 6.1: __schedule() dequeues a task that goes to sleep before the
 * tracepoint (deactivate_task() clears on_rq), but passes the sleep state
 * it read even when signal_pending_state() kept the task runnable.
 * 6.12+ (EEVDF delayed dequeue): a sleeping fair task may stay on_rq with
 * se.sched_delayed set; it is not runnable (as task_is_runnable() says).
 */
static inline bool ts_task_queued(const struct task_struct *prev)
{
#ifdef TS_HAVE_SCHED_DELAYED
	return READ_ONCE(prev->on_rq) && !READ_ONCE(prev->se.sched_delayed);
#else
	return READ_ONCE(prev->on_rq);
#endif
}

/*
 * Is @t on a CPU right now?  Exact where the wakeup probe uses it:
 * ttwu_runnable() holds the run queue lock that prepare_task() and
 * finish_task() change on_cpu under, and the other wakeup paths waited for
 * it to clear (or run on @t's own CPU).  Without such a lock (the
 * snapshot taken when tracking starts) it is only a hint, and the next
 * switch of @t corrects what it got wrong.
 */
static inline bool ts_task_on_cpu(const struct task_struct *t)
{
#ifdef CONFIG_SMP
	return READ_ONCE(t->on_cpu);
#else
	return t == current;
#endif
}

/*
 * Queue the RCU callback that makes a released slot reusable.  Kernels
 * with lazy RCU (6.2+, CONFIG_RCU_LAZY=y in Debian's 6.12 and later) batch
 * plain call_rcu() callbacks for up to about 10 s, during which a dead
 * task's slot cannot be reused: under fork and exit churn the table can
 * fill with them.  call_rcu_hurry() opts out of the batching.
 */
#ifdef TS_HAVE_CALL_RCU_HURRY
#define ts_call_rcu	call_rcu_hurry
#else
#define ts_call_rcu	call_rcu
#endif

#endif /* TASKSTATE_COMPAT_H */
