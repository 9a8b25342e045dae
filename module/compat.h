/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference taskstate cares about, as small inline
 * wrappers and macros; the rest of the module never tests for a version.
 * Features are detected in features.kbuild (grep on the kernel headers),
 * never by version; docs/design.md ("Kernel differences") lists every
 * TS_HAVE_* flag and what it changes, and scripts/doc-test.sh checks that
 * the list matches features.kbuild.
 * A detection that goes wrong cannot go unnoticed: the
 * check_trace_callback_type_*() checks in probes.c and the field accesses
 * below stop the build.
 *
 * Tested in the VM (make check): 5.10, 6.1, 6.12 and 7.2 on amd64, 7.2
 * with proxy execution, 6.1 PREEMPT_RT, 6.1 on 686 and arm64.
 */
#ifndef TASKSTATE_COMPAT_H
#define TASKSTATE_COMPAT_H

#include <linux/mm.h>
#include <linux/sched.h>
#ifdef TS_HAVE_TASK_EXEC_STATE
#include <linux/sched/exec_state.h>
#else
#include <linux/sched/coredump.h>
#include <linux/sched/task.h>
#endif

/*
 * Architectures.  The probes store a word plainly (64-bit: WRITE_ONCE();
 * 32-bit: atomic64_set()) while the snapshot may fill the same, empty,
 * word with atomic64_try_cmpxchg() (word.h), and readers, the mapping's
 * too, load it whole.  That needs:
 *  - a 64-bit cmpxchg that is one atomic instruction or an LL/SC loop, so
 *    that a plain store racing it is never lost.  Everywhere 64-bit but
 *    PA-RISC, whose cmpxchg is a load and a store under a hashed spinlock
 *    (arch/parisc/lib/bitops.c) that a plain store does not take: refused
 *    at build time.  32-bit kernels store with atomic64_set(), the same
 *    family as the cmpxchg, lock-based or not, so they are consistent.
 *  - for the mapping (mmap.c, ts_map_word_whole()), a 64-bit kernel store
 *    that user space can load whole: not so with CONFIG_GENERIC_ATOMIC64
 *    (32-bit MIPS, PowerPC, RISC-V, SPARC, ARC without LL/SC, ...), whose
 *    atomic64_set() is two 32-bit stores under a kernel spinlock: mmap()
 *    fails with ENODEV there; the ioctls, which read under the same lock,
 *    work.
 * Built and tested (make check): x86-64, x86-32 (686: cmpxchg8b in the
 * kernel, an 8-byte x87/SSE load in user space), arm64.
 */
#if defined(CONFIG_PARISC) && defined(CONFIG_64BIT)
#error "taskstate: 64-bit cmpxchg is lock-based on PA-RISC; a plain store racing it could be lost"
#endif

/**
 * ts_map_word_whole() - can user space load a word the kernel stores whole?
 *
 * Can user space load a word the kernel stores whole (see above)?
 *
 * Context: any.
 * Return: false with CONFIG_GENERIC_ATOMIC64, true elsewhere.
 */
static inline bool ts_map_word_whole(void)
{
	return !IS_ENABLED(CONFIG_GENERIC_ATOMIC64);
}

/* The freezer's own state appeared in 6.1; before it, frozen was a flag. */
#ifndef TASK_FROZEN
#define TASK_FROZEN 0
#endif

/* PREEMPT_RT's sleeping spinlock wait appeared in 5.15. */
#ifndef TASK_RTLOCK_WAIT
#define TASK_RTLOCK_WAIT 0
#endif

/**
 * ts_task_state() - a task's __state
 * @t: the task
 *
 * A task's state word: task_struct.state became __state in 5.14.
 *
 * Context: any.
 * Return: __state (state before 5.14).
 */
static inline unsigned int ts_task_state(const struct task_struct *t)
{
#ifdef TS_HAVE_TASK_STATE_U
	return READ_ONCE(t->__state);
#else
	return READ_ONCE(t->state);
#endif
}

/*
 * The sched_switch probe's arguments.  TS_SWITCH_PROBE_ARGS is its
 * parameter list, TS_SWITCH_CALL() a direct call of it, and
 * TS_SWITCH_PREV_STATE, inside the probe, the state prev is switching out
 * in.
 *
 * 5.18 and later pass that state (prev_state), read in __schedule() before
 * the task is dequeued.  Before 5.18 there is no such argument and the
 * probe reads prev->state itself, as the kernel's own trace event did;
 * this is racy, which is why 5.18 added the argument (commit fa2c3254d7cf,
 * "sched/tracing: Don't re-read p->state when emitting sched_switch
 * event").  Once __schedule() has dequeued prev, a wakeup on another CPU
 * may already run try_to_wake_up() for it: it sets prev->state to
 * TASK_WAKING (then TASK_RUNNING) while prev is still on its CPU, before
 * the tracepoint.  The probe then reads a running state and writes
 * RUNNABLE where the task went to sleep.  What a reader sees: a sleep too
 * short to matter (the wakeup was already under way when the task
 * switched out) reads as RUNNABLE from the switch on, with no SLEEPING or
 * BLOCKED word in between; the time stays right.  Never the reverse: a
 * runnable task is never reported asleep.
 */
#ifdef TS_HAVE_SWITCH_PREV_STATE
#define TS_SWITCH_PROBE_ARGS	bool preempt, struct task_struct *prev, \
				struct task_struct *next, \
				unsigned int prev_state
#define TS_SWITCH_CALL(probe, data, preempt, prev, next, prev_state) \
	probe(data, preempt, prev, next, prev_state)
#define TS_SWITCH_PREV_STATE	prev_state
#else
#define TS_SWITCH_PROBE_ARGS	bool preempt, struct task_struct *prev, \
				struct task_struct *next
#define TS_SWITCH_CALL(probe, data, preempt, prev, next, prev_state) \
	probe(data, preempt, prev, next)
#define TS_SWITCH_PREV_STATE	ts_task_state(prev)
#endif

/*
 * The sched_process_exit probe's parameters: 6.16 added group_dead
 * (7.2 has it; 6.12 and earlier pass the task alone).
 */
#ifdef TS_HAVE_EXIT_GROUP_DEAD
#define TS_EXIT_PROBE_ARGS	struct task_struct *p, bool group_dead
#else
#define TS_EXIT_PROBE_ARGS	struct task_struct *p
#endif

/* task_newtask's clone_flags: unsigned long up to 6.12 at least, u64 on 7.2. */
#ifdef TS_HAVE_CLONE_FLAGS_U64
#define TS_CLONE_FLAGS_T	u64
#else
#define TS_CLONE_FLAGS_T	unsigned long
#endif

static inline bool ts_task_blocked_on_mutex(const struct task_struct *p);

/**
 * ts_task_queued() - is a task still queued on its run queue?
 * @prev: the task
 *
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
 * Proxy execution (CONFIG_SCHED_PROXY_EXEC, 6.17+): a task that blocks on
 * a mutex stays on_rq, not delayed, so that the mutex owner can run in
 * its place; it is not runnable either (ts_task_blocked_on_mutex()).
 * 7.2 says both in one flag, task_struct.is_blocked
 * (TS_HAVE_TASK_IS_BLOCKED): try_to_block_task() sets it, under the run
 * queue lock, for every task __schedule() puts to sleep, whether it then
 * leaves the queue, stays delayed or stays for proxy execution (not when a
 * pending signal cancels the sleep), and ttwu_do_wakeup() clears it at the
 * wakeup, just before the sched_wakeup tracepoint.  So queued and not
 * blocked is runnable, the same test as the kernel's own
 * (kernel/sched/core.c, "p->is_blocked").
 *
 * The kernel stores these fields plainly under the run queue lock
 * (6.1: activate_task(), deactivate_task(); 6.12+: sched_delayed in
 * fair.c's delayed dequeue too; 7.2: is_blocked), so the snapshot's
 * lockless reads race those stores by design: data_race(), as for
 * exit_state in ts_state_of().
 *
 * Context: sched_switch (run queue lock held), or the snapshot, as a hint.
 * Return: true if queued and runnable.
 */
static inline bool ts_task_queued(const struct task_struct *prev)
{
#if defined(TS_HAVE_TASK_IS_BLOCKED)
	/* Plain stores under the run queue lock: see above. */
	return data_race(READ_ONCE(prev->on_rq) &&
			 !READ_ONCE(prev->is_blocked));
#else
	if (ts_task_blocked_on_mutex(prev))
		return false;
#ifdef TS_HAVE_SCHED_DELAYED
	/* Plain stores under the run queue lock: see above. */
	return data_race(READ_ONCE(prev->on_rq) &&
			 !READ_ONCE(prev->se.sched_delayed));
#else
	/* A plain store under the run queue lock: see above. */
	return data_race(READ_ONCE(prev->on_rq));
#endif
#endif
}

/**
 * ts_task_last_queued() - when a task was last put on a run queue
 * @t: the task
 *
 * When @t was last put on a run queue, in rq_clock() (sched_clock) ns, or
 * 0: not queued since it last ran, or no record of it.
 * sched_info.last_queued exists with CONFIG_SCHED_INFO (every Debian
 * kernel; delay accounting and schedstats select it); what sets and
 * clears it is in ts_since_estimate() (table.c).  Written plainly under
 * the task's run queue lock, read here without it: data_race(), and the
 * caller bounds the value.  TS_HAVE_SCHED_INFO_LAST_QUEUED: the field is
 * in linux/sched.h (Kbuild greps for it); without it, or without
 * CONFIG_SCHED_INFO, 0.
 *
 * Context: any; the caller bounds the value.
 * Return: rq_clock() ns, or 0.
 */
static inline u64 ts_task_last_queued(const struct task_struct *t)
{
#if defined(TS_HAVE_SCHED_INFO_LAST_QUEUED) && defined(CONFIG_SCHED_INFO)
	/* A plain store under the run queue lock: see above. */
	return data_race(READ_ONCE(t->sched_info.last_queued));
#else
	return 0;
#endif
}

/*
 * Proxy execution on a kernel without task_struct.is_blocked (6.17 up to
 * before 7.2; none of them is booted by make check, so this branch is
 * built and run nowhere): __schedule() keeps a task that blocks on a
 * mutex on its run queue (on_rq, not delayed) so that it can lend its
 * place to the owner; it is not runnable.  The mutex slow path sets
 * task_struct.blocked_on while it waits (with preemption off up to its
 * schedule()).  So with the option, a queued task with blocked_on set
 * is taken as not queued, and its __state tells: BLOCKED (or SLEEPING),
 * not RUNNABLE.  Whatever blocked_on holds once the task is woken (NULL,
 * the lock, or a "waking" sentinel where the kernel has one), its
 * __state is TASK_RUNNING by then, which reads RUNNABLE.  Read without
 * the task's blocked_lock: a hint, as on_rq; the next switch corrects
 * it.  Compiled only with the option:
 * blocked_on has another type under CONFIG_DEBUG_MUTEXES before 6.17.
 * The proxy flavour (7.2) takes ts_task_queued()'s is_blocked branch,
 * which covers this case too.
 */
static inline bool ts_task_blocked_on_mutex(const struct task_struct *p)
{
#if defined(CONFIG_SCHED_PROXY_EXEC) && !defined(TS_HAVE_TASK_IS_BLOCKED)
	/* Stored under p->blocked_lock, which the probes cannot take. */
	return !!data_race(READ_ONCE(p->blocked_on));
#else
	return false;
#endif
}

/**
 * ts_task_on_cpu() - is a task on a CPU right now?
 * @t: the task
 *
 * Is @t on a CPU right now?  Exact where the wakeup probe uses it:
 * ttwu_runnable() holds the run queue lock that prepare_task() and
 * finish_task() change on_cpu under, and the other wakeup paths waited for
 * it to clear (or run on @t's own CPU).  Without such a lock (the
 * snapshot taken when tracking starts) it is only a hint, and the next
 * switch of @t corrects what it got wrong.
 *
 * Context: the wakeup probe (exact), or elsewhere as a hint.
 * Return: its on_cpu.
 */
static inline bool ts_task_on_cpu(const struct task_struct *t)
{
#ifdef CONFIG_SMP
	return READ_ONCE(t->on_cpu);
#else
	return t == current;
#endif
}

/* The same, read with acquire (try_to_wake_up()'s wait for it). */
static inline bool ts_task_on_cpu_acquire(const struct task_struct *t)
{
#ifdef CONFIG_SMP
	/* Pairs with finish_task()'s release: its switch-out is done. */
	return smp_load_acquire(&t->on_cpu);
#else
	return t == current;
#endif
}

/*
 * Is @t dumpable by its owner (SUID_DUMP_USER), as ptrace asks?  7.x
 * keeps that per task (task_struct.exec_state, RCU), mm or not.  Before,
 * it is the mm's, read under task_lock() as __ptrace_may_access() reads
 * it; a task whose mm is gone is judged by what it was then (5.9+,
 * task_struct.user_dumpable), and before 5.9 that is unknown: not
 * dumpable.  Under rcu_read_lock(); may take task_lock(@t), a spinlock_t.
 */
#ifdef TS_HAVE_TASK_EXEC_STATE
static inline bool ts_task_dumpable(struct task_struct *t)
{
	struct task_exec_state *es = rcu_dereference(t->exec_state);

	return es && READ_ONCE(es->dumpable) == TASK_DUMPABLE_OWNER;
}

/* The same for current, from a tracepoint: no lock to take. */
static inline bool ts_current_dumpable(void)
{
	bool dumpable;

	rcu_read_lock();
	dumpable = ts_task_dumpable(current);
	rcu_read_unlock();
	return dumpable;
}

/* The same for a task that has not run yet (task_newtask), under RCU. */
static inline bool ts_new_task_dumpable(struct task_struct *t)
{
	return ts_task_dumpable(t);
}
#else
/* A task that has not run yet (task_newtask): its mm is settled. */
static inline bool ts_new_task_dumpable(struct task_struct *t)
{
	return t->mm && get_dumpable(t->mm) == SUID_DUMP_USER;
}

/* current's mm is its own: no task_lock() (a spinlock_t) needed. */
static inline bool ts_current_dumpable(void)
{
	return current->mm && get_dumpable(current->mm) == SUID_DUMP_USER;
}

static inline bool ts_task_dumpable(struct task_struct *t)
{
	bool dumpable;

	task_lock(t);
	if (t->mm)
		dumpable = get_dumpable(t->mm) == SUID_DUMP_USER;
	else
#ifdef TS_HAVE_USER_DUMPABLE
		dumpable = t->user_dumpable;
#else
		dumpable = false;
#endif
	task_unlock(t);
	return dumpable;
}
#endif

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

/**
 * ts_vm_flags_set() - set flags of a VMA
 * @vma: the mapping
 * @flags: VM_*
 *
 * 6.3 made vma->vm_flags read-only, behind vm_flags_set()/_clear().
 *
 * Context: mmap(), mmap_lock held for writing.
 */
static inline void ts_vm_flags_set(struct vm_area_struct *vma,
				   unsigned long flags)
{
#ifdef TS_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/**
 * ts_vm_flags_clear() - clear flags of a VMA
 * @vma: the mapping
 * @flags: VM_*
 *
 * Context: mmap(), mmap_lock held for writing.
 */
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
