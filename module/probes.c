// SPDX-License-Identifier: GPL-2.0
/*
 * The writers: probes on the scheduler's tracepoints.
 *
 * One writer per word.  Every write to a task's word happens on a path
 * that the scheduler already serialises for that task (6.1 sources):
 *
 *  - sched_switch (kernel/sched/core.c, __schedule()): with the run queue
 *    lock of the CPU held.  prev is that CPU's current task; next was
 *    picked from that run queue.
 *  - sched_wakeup (ttwu_do_wakeup()): with the lock of the run queue the
 *    task is being put on, reached from ttwu_runnable() or
 *    ttwu_do_activate(); try_to_wake_up() holds p->pi_lock or has set
 *    TASK_WAKING so no second wakeup can proceed.  The task is off every
 *    CPU or still queued on that run queue, so no switch runs for it.
 *    The one lock-free call, try_to_wake_up(p == current), wakes a task
 *    on its own CPU, which writes RUNNING; a remote ttwu_runnable() for
 *    the same task at the same moment writes RUNNING too (on_cpu is set):
 *    two writers, one value, which the word holds already (current's
 *    word is RUNNING outside __schedule()), so neither stores, and
 *    neither adds to a per-state total (ts_pub_set()).
 *  - sched_wakeup_new (wake_up_new_task()): pi_lock and run queue lock;
 *    the task has never run.
 *  - task_newtask (kernel/fork.c, copy_process()): before
 *    wake_up_new_task(), so the child cannot run yet; it only inserts the
 *    child's slot.
 *  - sched_process_free (kernel/exit.c, delayed_put_task_struct()): an RCU
 *    callback after release_task(); the task has made its final switch.
 *  - sched_process_exec (fs/exec.c, exec_binprm()) and sched_process_exit
 *    (kernel/exit.c, do_exit()): write no word, only the entry's tid after
 *    de_thread(), under ts_lock (ts_retid()); the exit probe also reads
 *    the thread's totals into a log of exits, under ts_lock, if its
 *    process has one (ts_exits_log()).
 *
 * Hence a plain store (ts_word_store()) is enough, and the probes may read
 * their own word to skip a store that would not change the state, and
 * add to the per-state totals without an atomic read-modify-write
 * (ts_pub_set(), entry.h).  The one other write, the snapshot when
 * tracking starts, only replaces an empty word (ts_pub_first()), a grace
 * period after the slot was published.
 *
 * Mixing a plain store with the snapshot's cmpxchg assumes cmpxchg is one
 * instruction, as on x86 and arm64 (on parisc it is a read and a write
 * under a hashed lock, and a plain store in between would be lost).
 *
 * The probes are notrace, as the kernel's own tracepoint probes are
 * (trace_event_raw_event_*()): the function tracer, fprobes and BPF
 * fentry programs cannot attach to them (kprobes still can), and each
 * probe call saves its __fentry__ site.
 *
 * Probe context: preemption disabled, on most events a raw run queue lock
 * held.  So no allocation, no sleeping lock, no printk here; the newtask
 * and free probes, and the exec and exit probes when a tid changed (or a
 * log of exits exists), take ts_lock (raw, irqsave), which no scheduler
 * path holds.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
/* entry.h: the probes test the totals parameter as a static branch. */
#define TS_TOTALS_KEY

#include <linux/binfmts.h>
#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include <trace/events/sched.h>
#include <trace/events/task.h>
#include "hooks.h"
#include "probes.h"
#include "states.h"
#include "table.h"

static bool ts_inherit_all;

/* Follows ts_totals (entry.h), set by ts_probes_init() before any probe. */
DEFINE_STATIC_KEY_TRUE(ts_totals_key);

/*
 * The index as the switch and wakeup probes look it up: its buckets, mask
 * and hash shift, and the entries it points into, fixed from the table's
 * allocation to its free, copied by ts_probes_init() (after
 * ts_table_init(), before any probe is attached) so that a lookup need
 * not derive them from ts_index.bits.  A probe copies them once: the
 * smp_rmb() of a lookup (a compiler barrier on x86) would otherwise make
 * the second lookup of a switch load them again.
 */
struct ts_probe_geom {
	const struct ts_bucket *buckets;
	struct ts_pub *pub;
	unsigned int mask;
	unsigned int shift;
};

static struct ts_probe_geom ts_probe_ix __read_mostly;

/*
 * The public entry of a tracked task, or NULL.  Straight from the index:
 * a switch or wakeup touches nothing of the slot but its entry.
 */
static __always_inline struct ts_pub *ts_lookup_pub(const struct ts_probe_geom *g,
						    const struct task_struct *t)
{
	u32 idx;

	if (!ts_index_way_in(g->buckets, g->mask, g->shift, t, &idx))
		return NULL;
	return &g->pub[idx];
}

static __always_inline unsigned int ts_prev_state(bool preempt,
						  struct task_struct *prev,
						  unsigned int prev_state)
{
	bool runnable = preempt || ts_task_queued(prev);

	/*
	 * The common sleep tested before the rarer cases, its state decided
	 * at compile time.
	 */
	if (prev_state == TASK_INTERRUPTIBLE && !runnable)
		return ts_state_from_linux(TASK_INTERRUPTIBLE);
	if (prev_state == TASK_RUNNING || runnable)
		return TASKSTATE_RUNNABLE;
	return ts_state_from_linux(prev_state);
}

static notrace void ts_probe_switch(void *data, TS_SWITCH_PROBE_ARGS)
{
	const struct ts_probe_geom g = ts_probe_ix;
	struct ts_pub *pp, *np;
	unsigned int pstate = 0;
	u64 now;

	pp = ts_lookup_pub(&g, prev);
	np = ts_lookup_pub(&g, next);
	if (!pp && !np)
		return;
	/* Before the call: fewer registers to keep across it. */
	if (pp)
		pstate = ts_prev_state(preempt, prev, TS_SWITCH_PREV_STATE);
	/* One clock read per event: both words carry the same time. */
	now = ktime_get_boot_fast_ns();
	if (pp)
		ts_pub_set(pp, pstate, now);
	if (np)
		ts_pub_set(np, TASKSTATE_RUNNING, now);
}

/*
 * sched_wakeup and sched_wakeup_new.  A woken task is RUNNABLE, unless it
 * never left its CPU: ttwu_runnable() and the p == current path of
 * try_to_wake_up() also report a wakeup for a task that set a sleep state
 * but had not switched out yet.  on_cpu is exact here: ttwu_runnable()
 * holds the run queue lock that prepare_task() and finish_task() change
 * it under, the other paths waited for it to clear (or are current).
 * Writing what is true rather than skipping also repairs a word that
 * missed an event before its slot was published.
 */
static notrace void ts_probe_wakeup(void *data, struct task_struct *p)
{
	struct ts_pub *pub = ts_lookup_pub(&ts_probe_ix, p);

	if (pub)
		ts_pub_set(pub, ts_task_on_cpu(p) ? TASKSTATE_RUNNING :
						    TASKSTATE_RUNNABLE,
			   ktime_get_boot_fast_ns());
}

/*
 * task_newtask, from copy_process() once the child is linked into the
 * task lists and can no longer fail, for every new task (also io_uring
 * workers, which never reach sched_process_fork).  The child of a tracked
 * thread is tracked if tracking was asked with inheritance (a whole
 * process, or track_all).  current is the thread that called clone().
 * The child has not run: its word stays NONE until sched_wakeup_new.
 *
 * The lockless look at current's slot only spares untracked forks the
 * lock; ts_track_child() decides again under ts_lock (see there for the
 * race with UNTRACK this closes).
 */
static notrace void ts_probe_newtask(void *data, struct task_struct *child,
				     TS_CLONE_FLAGS_T clone_flags)
{
	struct ts_slot *s;

	if (!ts_inherit_all) {
		/* Pairs with the smp_mb() in ts_track(): see there. */
		smp_mb();
		s = ts_lookup(current);
		if (!s || !(READ_ONCE(s->flags) & TS_SLOT_INHERIT))
			return;
		ts_hook_newtask();
	}
	ts_track_child(child, current, ts_inherit_all);
}

/* The last tracked thread gone: the probes can go too (ts_probes_idle()). */
static notrace void ts_probe_free(void *data, struct task_struct *t)
{
	if (ts_lookup(t) && ts_untrack(t, NULL))
		ts_probes_idle();
}

/*
 * sched_process_exec, from exec_binprm() once the new program is loaded,
 * in the thread that called exec.  A non-leader thread took its leader's
 * tid in de_thread() (exchange_tids()); the mapped entry must show it.
 * Only then (p->pid differs from old_pid) does it take ts_lock.
 */
static notrace void ts_probe_exec(void *data, struct task_struct *p,
				  pid_t old_pid, struct linux_binprm *bprm)
{
	if (READ_ONCE(p->pid) != old_pid && ts_lookup(p))
		ts_retid(p);
	/* Counted if set-id, out of a scoped mapping (ts_exec_leave_scope()). */
	ts_exec_leave_scope(p, bprm->secureexec, false);
}

/*
 * sched_process_exit, from do_exit() in the exiting thread, before its
 * final switch.  A non-leader thread whose exec failed after de_thread()
 * took its leader's tid (6.1 fs/exec.c: begin_new_exec() sets
 * point_of_no_return before de_thread(); a later failure in the binary's
 * loader, e.g. an ELF segment load_elf_binary() cannot map, makes
 * bprm_execve() force SIGSEGV) never reaches sched_process_exec: it dies
 * with the new tid while its entry shows the old one, which
 * release_task() of the old leader freed in de_thread() and a new thread
 * may hold already.  Re-sync here, so the dead thread's entry (kept
 * until it is freed, seconds with lazy RCU) names it and not that tid.
 * A lockless compare first: only such a thread takes ts_lock.
 */
static notrace void ts_probe_exit(void *data, TS_EXIT_PROBE_ARGS)
{
	struct ts_slot *s = ts_lookup(p);

	if (s && READ_ONCE(ts_slot_pub(s)->tid) != READ_ONCE(p->pid))
		ts_retid(p);
	/* An exec that failed after its new ids never reached the probe. */
	if (s && ts_entry_scoped(s))
		ts_exec_leave_scope(p, false, true);
	/* Its totals, into its process's log of exits if it has one. */
	if (s && ts_exits_maybe(s))
		ts_exits_log(p);
	/* The process's last thread: its totals go to its parent's record. */
	if (ts_totals_on() && !atomic_read(&p->signal->live) &&
	    (s || ts_lookup(READ_ONCE(p->group_leader))))
		ts_proc_exit_fold(p);
}

/* Compile-time checks that each probe matches its tracepoint. */
static inline void ts_check_prototypes(void)
{
	check_trace_callback_type_sched_switch(ts_probe_switch);
	check_trace_callback_type_sched_wakeup(ts_probe_wakeup);
	check_trace_callback_type_sched_wakeup_new(ts_probe_wakeup);
	check_trace_callback_type_task_newtask(ts_probe_newtask);
	check_trace_callback_type_sched_process_free(ts_probe_free);
	check_trace_callback_type_sched_process_exec(ts_probe_exec);
	check_trace_callback_type_sched_process_exit(ts_probe_exit);
}

/*
 * The scheduler tracepoints are not exported to modules: find them by
 * name.  Registered in this order, unregistered in reverse: free before
 * newtask, so every slot a fork creates has its release in place; switch
 * last, once everything it depends on is.
 */
static struct ts_tracepoint {
	const char *name;
	void *probe;
	struct tracepoint *tp;
} ts_tps[] = {
	{ "sched_process_free",	ts_probe_free },
	{ "task_newtask",	ts_probe_newtask },
	{ "sched_process_exec",	ts_probe_exec },
	{ "sched_process_exit",	ts_probe_exit },
	{ "sched_wakeup_new",	ts_probe_wakeup },
	{ "sched_wakeup",	ts_probe_wakeup },
	{ "sched_switch",	ts_probe_switch },
};

/*
 * Attached only while something is tracked.  With track_all, from load to
 * unload.  Otherwise TRACK attaches them (ts_probes_get()) before it
 * inserts a slot, and they are detached by ts_detach_work a second after
 * nothing is tracked: then the tracepoints' static keys are off again (unless
 * another tracer uses them), and an untracked switch costs nothing.
 *
 * Why nothing is missed: every slot is inserted either by TRACK, which
 * holds ts_attach_lock from the attach to the insert, or by the newtask
 * probe for a tracked creator (ts_track_child() checks the creator under
 * ts_lock), which needs a slot already in the table.  So once the detach
 * work, holding ts_attach_lock, has read ts_nr_tracked == 0, no slot can
 * appear until a TRACK that waits for the lock and attaches again.  The
 * free probe is attached before any slot exists and detached after the
 * last one is gone, so no freed task_struct keeps a slot (which would
 * hand its word to the next task allocated at that address).  A TRACK
 * that runs while the probes are being attached or just were gets its
 * threads' state from the snapshot, a grace period after the insert, as
 * at any other time.
 */
static DEFINE_MUTEX(ts_attach_lock);
static bool ts_attached;		/* under ts_attach_lock */
static bool ts_keep_attached;		/* track_all, fixed at load */

static void ts_find_tracepoint(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	/* tracepoints_on can be read meanwhile (sysfs is up before init). */
	for (i = 0; i < ARRAY_SIZE(ts_tps); i++)
		if (!strcmp(tp->name, ts_tps[i].name))
			WRITE_ONCE(ts_tps[i].tp, tp);
}

/*
 * Unregister the first @n probes and wait until none runs: a probe that
 * started before stays on the old list of its tracepoint until then.
 */
static void ts_detach_first(unsigned int n)
{
	while (n--)
		tracepoint_probe_unregister(ts_tps[n].tp, ts_tps[n].probe,
					    NULL);
	tracepoint_synchronize_unregister();
}

static int ts_attach_locked(void)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&ts_attach_lock);
	if (ts_attached)
		return 0;
	for (i = 0; i < ARRAY_SIZE(ts_tps); i++) {
		ret = tracepoint_probe_register(ts_tps[i].tp, ts_tps[i].probe,
						NULL);
		if (ret) {
			pr_err("cannot attach to tracepoint %s: %d\n",
			       ts_tps[i].name, ret);
			ts_detach_first(i);
			return ret;
		}
	}
	ts_attached = true;
	return 0;
}

static void ts_detach_locked(void)
{
	lockdep_assert_held(&ts_attach_lock);
	if (!ts_attached)
		return;
	ts_detach_first(ARRAY_SIZE(ts_tps));
	ts_attached = false;
}

static void ts_detach_fn(struct work_struct *work)
{
	mutex_lock(&ts_attach_lock);
	if (!ts_keep_attached && !READ_ONCE(ts_nr_tracked))
		ts_detach_locked();
	mutex_unlock(&ts_attach_lock);
}

static DECLARE_DELAYED_WORK(ts_detach_work, ts_detach_fn);

/**
 * ts_probes_idle() - detach the probes a second after nothing is tracked
 *
 * After an untrack, or a TRACK that may have inserted nothing: if nothing
 * is tracked now, detach, a second later, from a worker (the caller may
 * be the free probe, in an RCU callback, or hold ts_attach_lock), which
 * looks again under the lock.  The second keeps a
 * program that tracks one short-lived thread after another from
 * patching the tracepoints on and off for each (two grace periods and
 * text patching on every CPU each time).  It counts from the last such
 * call: mod_delayed_work() moves a pending detach back, where
 * queue_delayed_work() would leave it at the first call's second.
 * system_long_wq, not system_wq: the detach waits for two grace periods
 * (tracepoint_synchronize_unregister(): SRCU and RCU), which would hold
 * a worker of the per-CPU pool that short work items share.
 *
 * Context: any: process context, an RCU callback (the free probe), or under
 * ts_attach_lock; does not sleep.
 */
void ts_probes_idle(void)
{
	if (!ts_keep_attached && !READ_ONCE(ts_nr_tracked))
		mod_delayed_work(system_long_wq, &ts_detach_work, HZ);
}

/**
 * ts_probes_get() - attach the probes for a TRACK
 *
 * For TRACK: the probes attached, and kept so until ts_probes_put(); the
 * slots must be inserted in between.
 *
 * Context: process context; may sleep.  Holds ts_attach_lock on success, until
 * ts_probes_put().
 * Return: 0, or tracepoint_probe_register()'s -errno.
 */
int ts_probes_get(void)
{
	int ret;

	mutex_lock(&ts_attach_lock);
	ret = ts_attach_locked();
	if (ret)
		mutex_unlock(&ts_attach_lock);
	return ret;
}

/**
 * ts_probes_put() - end what ts_probes_get() began
 *
 * Context: process context, holding ts_attach_lock from ts_probes_get().
 */
void ts_probes_put(void)
{
	/* A TRACK that inserted nothing (or threads gone already). */
	ts_probes_idle();
	mutex_unlock(&ts_attach_lock);
}

/* How many of the hooked tracepoints have their static key on. */
static int ts_tracepoints_on_get(char *buf, const struct kernel_param *kp)
{
	struct tracepoint *tp;
	unsigned int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(ts_tps); i++) {
		tp = READ_ONCE(ts_tps[i].tp);
		if (tp && static_key_enabled(&tp->key))
			n++;
	}
	return sysfs_emit(buf, "%u\n", n);
}

static const struct kernel_param_ops ts_tracepoints_on_ops = {
	.get = ts_tracepoints_on_get,
};

module_param_cb(tracepoints_on, &ts_tracepoints_on_ops, NULL, 0444);
MODULE_PARM_DESC(tracepoints_on,
		 "Read-only: how many of the 7 scheduler tracepoints taskstate hooks are enabled (their static key on): 7 while its probes are attached, 0 with track_all=0 and nothing tracked unless another tracer uses them.");

/**
 * ts_probes_init() - find the tracepoints; attach for good with @track_all
 * @track_all: the track_all parameter
 *
 * At load: find the tracepoints, and with @track_all attach for good.
 * Without it nothing is attached until the first TRACK.
 *
 * Context: module load, after ts_table_init(); may sleep.
 * Return: 0, -ENOENT for a tracepoint this kernel lacks, or
 * tracepoint_probe_register()'s -errno.
 */
int ts_probes_init(bool track_all)
{
	unsigned int i;
	int ret = 0;

	ts_check_prototypes();
	ts_hook_switch_probe(ts_probe_switch);
	ts_probe_ix.buckets = ts_index.buckets;
	ts_probe_ix.pub = ts_pub;
	ts_probe_ix.mask = ts_index_mask(&ts_index);
	ts_probe_ix.shift = BITS_PER_LONG - ts_index.bits;
	ts_inherit_all = track_all;
	if (!ts_totals)
		static_branch_disable(&ts_totals_key);
	ts_keep_attached = track_all;
	for_each_kernel_tracepoint(ts_find_tracepoint, NULL);
	for (i = 0; i < ARRAY_SIZE(ts_tps); i++) {
		if (!ts_tps[i].tp) {
			pr_err("tracepoint %s not found in this kernel\n",
			       ts_tps[i].name);
			return -ENOENT;
		}
	}
	if (track_all) {
		mutex_lock(&ts_attach_lock);
		ret = ts_attach_locked();
		mutex_unlock(&ts_attach_lock);
		/*
		 * The probes that were attached may have released slots
		 * (the free probe): their RCU callbacks must run before
		 * the caller frees the table.
		 */
		if (ret)
			ts_table_quiesce();
	}
	return ret;
}

/**
 * ts_probes_exit() - detach the probes and wait for the slots they released
 *
 * At unload, when no file is open (no TRACK or UNTRACK can run): detach,
 * let a queued detach finish, and wait for the slots the probes and
 * UNTRACK released (ts_slot_reuse() is an RCU callback): then the table
 * can be freed.
 *
 * Context: module unload, or a failed load; may sleep.
 */
void ts_probes_exit(void)
{
	mutex_lock(&ts_attach_lock);
	ts_detach_locked();
	mutex_unlock(&ts_attach_lock);
	cancel_delayed_work_sync(&ts_detach_work);
	ts_table_quiesce();
}
