/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Linux task states to taskstate states: the one rule, written once for
 * both backends.  The module includes it after <linux/sched.h> (states.h);
 * the BPF program (bpf/taskstate.bpf.c) after defining the TASK_* bits of
 * the kernels it runs on itself, having no kernel headers.  It needs the
 * TASK_* and TASKSTATE_* constants and nothing else.  docs/design.md has
 * the same mapping as a table (scripts/doc-test.sh keeps the two in step).
 */
#ifndef TASKSTATE_LINUX_STATES_H
#define TASKSTATE_LINUX_STATES_H

/**
 * ts_state_from_linux() - the taskstate state of a sleeping task's __state
 * @st: the __state (sched_switch's prev_state)
 *
 * Map a sleeping task's __state (as sched_switch passes it in prev_state).
 * Modifier bits (TASK_WAKEKILL, TASK_FREEZABLE, __TASK_FREEZABLE_UNSAFE)
 * do not change the class; TASK_NOLOAD turns an uninterruptible wait into
 * TASK_IDLE, which is not a blocked task.  Tested in this order because
 * the bits combine: TASK_KILLABLE is WAKEKILL|UNINTERRUPTIBLE, TASK_STOPPED
 * is WAKEKILL|__TASK_STOPPED, TASK_IDLE is UNINTERRUPTIBLE|NOLOAD.
 *
 * Context: any.
 * Return: TASKSTATE_SLEEPING, _BLOCKED, _STOPPED, _TRACED or _DEAD.
 */
static inline unsigned int ts_state_from_linux(unsigned int st)
{
	if (st & TASK_DEAD)
		return TASKSTATE_DEAD;
	if (st & __TASK_TRACED)
		return TASKSTATE_TRACED;
	if (st & (__TASK_STOPPED | TASK_FROZEN))
		return TASKSTATE_STOPPED;
	if (st & (TASK_INTERRUPTIBLE | TASK_PARKED))
		return TASKSTATE_SLEEPING;
	if (st & TASK_UNINTERRUPTIBLE)
		return (st & TASK_NOLOAD) ? TASKSTATE_SLEEPING :
					    TASKSTATE_BLOCKED;
	if (st & TASK_RTLOCK_WAIT)
		return TASKSTATE_BLOCKED;
	/* TASK_RUNNING, TASK_WAKING, TASK_NEW */
	return TASKSTATE_RUNNABLE;
}

#endif /* TASKSTATE_LINUX_STATES_H */
