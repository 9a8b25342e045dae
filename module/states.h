/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The state of a task seen outside a tracepoint (the snapshot).  The rule
 * for a sleeping task's __state is linux-states.h's, shared with the BPF
 * program.
 */
#ifndef TASKSTATE_STATES_H
#define TASKSTATE_STATES_H

#include <linux/sched.h>
#include "compat.h"
#include "word.h"
#include "linux-states.h"

/**
 * ts_state_of() - the state of a task not being switched now
 * @t: the task
 *
 * The state of a task that is not passing through a tracepoint right now,
 * for the snapshot taken when tracking starts (ts_snapshot()):
 *  - on a CPU is RUNNING whatever __state says (a task about to sleep
 *    still runs, and its switch-out will say so);
 *  - still queued on a run queue is RUNNABLE whatever __state says: a task
 *    preempted between set_current_state(TASK_(UN)INTERRUPTIBLE) (or the
 *    RT lock-wait state) and schedule() keeps that state but stays queued,
 *    since __schedule() does not dequeue on preemption; it runs again
 *    without a wakeup.  Common on PREEMPT_RT and preempt=full.  A task
 *    that 6.12's delayed dequeue keeps queued while it sleeps
 *    (se.sched_delayed) is not runnable, and ts_task_queued() says so;
 *  - otherwise __state tells.
 * on_cpu, on_rq and __state are read without the run queue lock: a task
 * changing state meanwhile passes a tracepoint, whose probe writes the
 * word (the snapshot only fills an empty one).  One change passes none:
 * on 6.12+ the end of a delayed dequeue clears se.sched_delayed, then
 * on_rq, under the run queue lock of a CPU the sleeping task is not on.
 * A snapshot whose reads fall between those two stores (a few
 * instructions) calls the sleeper RUNNABLE, and since its wakeup then
 * writes RUNNABLE too (no change, no store), the word stays so until the
 * task next runs.  The module cannot take that lock (task_rq_lock() is
 * not exported); the window is documented in docs/design.md.
 * TASKSTATE_NONE for a task not yet woken for the first time:
 * sched_wakeup_new will write its word.
 *
 * Context: process context, under rcu_read_lock().
 * Return: its TASKSTATE_* state.
 */
static inline unsigned int ts_state_of(struct task_struct *t)
{
	unsigned int st;

	/*
	 * exit_notify() sets exit_state once, from 0 to EXIT_ZOMBIE or
	 * EXIT_DEAD, with a plain store under tasklist_lock, and the kernel
	 * reads it without that lock in many places.  Either value read here
	 * is right: before it, the exiting task runs (RUNNING, or RUNNABLE
	 * if preempted), and its final switch writes DEAD.  data_race():
	 * KCSAN reported this read against that store (kcsan flavour,
	 * ts_attach's TRACKs racing exits); the store is the kernel's.
	 */
	if (data_race(READ_ONCE(t->exit_state)))
		return TASKSTATE_DEAD;
	if (ts_task_on_cpu(t))
		return TASKSTATE_RUNNING;
	/*
	 * Pairs with the smp_store_release(&prev->on_cpu, 0) in 6.1's
	 * finish_task(): a task seen off its CPU is seen with the on_rq and
	 * __state its switch-out left (deactivate_task() and the sleep state
	 * come before that store).  Without it a weakly ordered CPU (arm64)
	 * may read on_rq from before the switch-out, and call a task that
	 * went to sleep RUNNABLE: its wakeup, writing RUNNABLE too, would not
	 * correct that until it ran.
	 */
	smp_rmb();
	st = ts_task_state(t);
	if (st & TASK_NEW)
		return TASKSTATE_NONE;
	if (ts_task_queued(t))
		return TASKSTATE_RUNNABLE;
	return ts_state_from_linux(st);
}

#endif /* TASKSTATE_STATES_H */
