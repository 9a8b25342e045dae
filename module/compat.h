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

#include <linux/mm.h>
#include <linux/sched.h>

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
#ifdef TS_HAVE_SCHED_DELAYED
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

/* 6.3 made vma->vm_flags read-only, behind vm_flags_set()/_clear(). */
static inline void ts_vm_flags_set(struct vm_area_struct *vma,
				   unsigned long flags)
{
#ifdef TS_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void ts_vm_flags_clear(struct vm_area_struct *vma,
				     unsigned long flags)
{
#ifdef TS_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* TASKSTATE_COMPAT_H */
