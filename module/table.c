// SPDX-License-Identifier: GPL-2.0
/*
 * The tracked-thread table.
 *
 * Memory is allocated once, at load, for max_threads slots; nothing is
 * allocated afterwards, so the fork and free probes can insert and remove
 * without an allocator.  When the table is full a new thread goes
 * untracked and ts_nr_untracked counts it.
 *
 * Changes to the table (track, untrack, slot reuse) take ts_lock, a raw
 * spinlock: it does not sleep on PREEMPT_RT (a spinlock_t would), and it
 * is only taken from process context, the fork probe and RCU callbacks,
 * never under a run queue lock, so no scheduler path can already hold it.
 * The per-switch path (ts_lookup()) only reads, without a lock.
 *
 * Keyed by task_struct pointer, not by tid, which makes pid reuse a
 * non-event: release_task() frees the tid a grace period before
 * sched_process_free fires, and a new thread with the same tid is a new
 * task_struct with its own slot.  A task_struct pointer is reused only
 * after the task is freed, which is after its slot was released here.
 * A released slot is reused only after an RCU grace period, so a lockless
 * reader that found it still reads the word of the task it looked up.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "states.h"
#include "table.h"

/* What a switch reads besides its two lines: never written after load. */
struct ts_slot *ts_slots __read_mostly;
struct ts_pub *ts_pub __read_mostly;
struct ts_index ts_index __read_mostly;
unsigned int ts_nr_slots;
unsigned int ts_nr_tracked;		/* written under ts_lock */
atomic_long_t ts_nr_untracked;

static DEFINE_RAW_SPINLOCK(ts_lock);
static u32 *ts_free;			/* stack of free slot indices */
static unsigned int ts_nr_free;
static unsigned int ts_hwm;		/* no slot at or above was ever used */

int ts_table_init(unsigned int nr_slots)
{
	unsigned int i;

	ts_index.bits = ts_index_bits(nr_slots);
	ts_slots = kvcalloc(nr_slots, sizeof(*ts_slots), GFP_KERNEL);
	/* Zeroed and page-backed, so it can be mapped into readers. */
	ts_pub = vmalloc_user(array_size(nr_slots, sizeof(*ts_pub)));
	/*
	 * A power of two of 64-byte buckets, at least 2 KiB: kmalloc()
	 * aligns it to its size, vmalloc() to a page, so no bucket straddles
	 * two cache lines.
	 */
	ts_index.buckets = kvcalloc(1U << ts_index.bits,
				    sizeof(*ts_index.buckets), GFP_KERNEL);
	ts_free = kvmalloc_array(nr_slots, sizeof(*ts_free), GFP_KERNEL);
	if (!ts_slots || !ts_pub || !ts_index.buckets || !ts_free) {
		ts_table_exit();
		return -ENOMEM;
	}
	/* Hand out low indices first, so readers scan a short prefix. */
	for (i = 0; i < nr_slots; i++)
		ts_free[i] = nr_slots - 1 - i;
	ts_nr_free = nr_slots;
	ts_nr_slots = nr_slots;
	ts_nr_tracked = 0;
	ts_hwm = 0;
	atomic_long_set(&ts_nr_untracked, 0);
	return 0;
}

/* Callers have unregistered the probes and waited for pending releases. */
void ts_table_exit(void)
{
	kvfree(ts_free);
	kvfree(ts_index.buckets);
	vfree(ts_pub);
	kvfree(ts_slots);
	ts_free = NULL;
	ts_index.buckets = NULL;
	ts_pub = NULL;
	ts_slots = NULL;
}

/*
 * Inserts so far, under ts_lock; each slot keeps the number of its own
 * (ts_slot.ticket), for ts_snapshot().  64 bits: it never wraps.
 */
static u64 ts_inserts;

/* The last insert's number: every slot with this one or lower is in. */
u64 ts_inserts_now(void)
{
	unsigned long irqflags;
	u64 n;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	n = ts_inserts;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	return n;
}

/*
 * Insert @t's slot, or add @flags to the one it has.  Caller holds ts_lock.
 * The slot is published with an empty word (NONE): from here on the
 * probes keep it current.
 */
static int ts_insert_locked(struct task_struct *t, unsigned int flags)
{
	struct ts_slot *s = ts_lookup(t);
	unsigned int idx;

	if (s) {
		WRITE_ONCE(s->flags, s->flags | flags);
		return 0;
	}
	if (!ts_nr_free)
		return -ENOSPC;
	idx = ts_free[--ts_nr_free];
	WRITE_ONCE(ts_hwm, max(ts_hwm, idx + 1));
	s = &ts_slots[idx];
	s->flags = flags;
	s->ticket = ++ts_inserts;
	ts_word_store(&ts_pub[idx].word, 0);
	ts_pub_take(&ts_pub[idx], READ_ONCE(t->pid));
	WRITE_ONCE(s->task, t);
	s->way = ts_index_insert(&ts_index, t, idx);
	WRITE_ONCE(ts_nr_tracked, ts_nr_tracked + 1);
	return 0;
}

/*
 * Start tracking @t, or add @flags if it is tracked already, for the
 * device (TRACK) and track_all at load.  A thread that already runs gets
 * its first word from ts_snapshot(), a grace period later.  A refusal
 * because the table is full is the caller's to report (ENOSPC); it is
 * not counted in ts_nr_untracked, which counts threads the module was
 * meant to track on its own and could not (see ts_track_child()).
 *
 * The caller holds rcu_read_lock() and found @t in a pid or thread list
 * within that section, so @t's sched_process_free, queued only after it
 * left those lists, cannot have run yet: the slot will be released.
 */
int ts_track(struct task_struct *t, unsigned int flags)
{
	unsigned long irqflags;
	int ret;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	ret = ts_insert_locked(t, flags);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	/*
	 * Pairs with the smp_mb() in the task_newtask probe: either the
	 * caller's walk of a thread list that follows sees a thread being
	 * created, or that thread's probe sees our slot (and inherits).
	 */
	smp_mb();
	return ret;
}

/*
 * Track @child, a new task that has not run yet, because its creator
 * @parent is tracked with inheritance (or, with @all, because every
 * thread is).  The creator's slot and its flag are checked again here,
 * under ts_lock, in the same critical section that inserts the child:
 * the probe's lockless look was only a filter.  Otherwise an UNTRACK
 * walk could remove @parent's slot after that look and pass the child
 * before it was inserted, leaving the child (and its descendants, which
 * inherit) tracked after UNTRACK returned.  With the check under the
 * lock, either the child is inserted before the walk takes the lock to
 * untrack @parent, and then the child, linked into the thread list
 * before this probe ran (copy_process()), is further along that list
 * and the walk untracks it too; or @parent's slot is gone and the child
 * is not inserted.
 *
 * A child the table has no room for is counted in ts_nr_untracked: a
 * thread left untracked that should have been tracked.
 */
void ts_track_child(struct task_struct *child, struct task_struct *parent,
		    bool all)
{
	unsigned long irqflags;
	struct ts_slot *s;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	if (!all) {
		s = ts_lookup(parent);
		if (!s || !(s->flags & TS_SLOT_INHERIT))
			goto out_unlock;
	}
	if (ts_insert_locked(child, TS_SLOT_INHERIT))
		atomic_long_inc(&ts_nr_untracked);
out_unlock:
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/*
 * When @t, which is not on a CPU, entered its current @state, in
 * CLOCK_BOOTTIME, from the scheduler's own bookkeeping (6.1:
 * kernel/sched/stats.h, kept when CONFIG_SCHED_INFO is on, as in every
 * Debian kernel; all in rq_clock(), the sched_clock domain):
 *
 *  - it last went on a CPU at sched_info.last_arrival (sched_info_arrive(),
 *    at every switch-in) and ran for sum_exec_runtime -
 *    prev_sum_exec_runtime there (the fair class sets
 *    prev_sum_exec_runtime when it picks the task; the other classes do
 *    not, and for them the run is left out, so the estimate is early by
 *    that run).  Its switch-out is when it entered a sleeping or stopped
 *    state: nothing but its own run changes such a task's state without
 *    a tracepoint.
 *  - a RUNNABLE task was queued at sched_info.last_queued
 *    (ts_task_last_queued()): sched_info_enqueue() sets it in
 *    enqueue_task() if it is 0 (a wakeup, a SIGCONT, 6.12's
 *    ttwu_runnable() of a delayed-dequeue sleeper) and sched_info_depart()
 *    at a preempting switch-out; sched_info_arrive() clears it when the
 *    task runs, sched_info_dequeue() when it leaves its run queue.  So for
 *    a woken task that has not run yet it is the wakeup, for a preempted
 *    one the switch-out.  The switch-out alone would date a thread woken
 *    onto a busy CPU to when it went to sleep.
 *
 * Where last_queued is late or early: a migration while queued
 * (move_queued_task(), load balancing: deactivate_task() then
 * activate_task()) restarts it, so the age is short by the wait on the
 * previous CPU; on 6.12+ a delayed-dequeue sleeper moved between run
 * queues is enqueued while it still sleeps, so last_queued may predate
 * its wakeup (the age is long, never longer than the switch-out's).
 * Hence the later of the two, never earlier than the switch-out: a task
 * cannot have been runnable since before it last ran.
 *
 * sched_clock is turned into CLOCK_BOOTTIME with the offset between the
 * two read now, on this CPU.  Where that is wrong: a suspend since the
 * event (sched_clock stops, CLOCK_BOOTTIME does not: the estimate is
 * late by the suspend, the age short), sched_clock drift between CPUs
 * (unstable TSC: microseconds), and time the task spent in interrupts
 * during its last run (counted as run: early).  Never later than @now,
 * never earlier than the task's start; @now when there is nothing to go
 * on.  The fields are read without the run queue lock (on 32-bit a u64
 * may be read torn, caught by those bounds or as a wrong time within
 * them): if the task runs meanwhile, its switch-in probe writes the
 * word, see ts_snapshot().
 */
static u64 ts_since_estimate(struct task_struct *t, unsigned int state,
			     u64 now)
{
#ifdef CONFIG_SCHED_INFO
	u64 start = t->start_boottime, arrival, queued, ran = 0, since;
	unsigned int policy = READ_ONCE(t->policy);
	u64 offset = now - local_clock();

	/* Stable while @t is off its CPU; a switch-in writes the word. */
	arrival = data_race(t->sched_info.last_arrival);
	queued = state == TASKSTATE_RUNNABLE ? ts_task_last_queued(t) : 0;
	if (!arrival && !queued)
		return now;
	if (policy == SCHED_NORMAL || policy == SCHED_BATCH ||
	    policy == SCHED_IDLE) {
		/* As stable, under the same condition. */
		u64 sum = data_race(t->se.sum_exec_runtime);
		/* And this one too. */
		u64 prev = data_race(t->se.prev_sum_exec_runtime);

		if (sum > prev)
			ran = sum - prev;
	}
	since = arrival ? arrival + ran + offset : start;
	if (queued && (s64)(queued + offset - since) > 0)
		since = queued + offset;
	if ((s64)(since - now) > 0)
		return now;
	if ((s64)(since - start) < 0)
		return start;
	return since;
#else
	return now;
#endif
}

/*
 * Give a thread that was already running when its slot was published the
 * word for its current state.  Call a grace period after ts_track(): by
 * then every probe that ran without seeing the slot has finished, with
 * all it did to the task (a switch sets on_cpu in the same
 * preemption-disabled section), so on_cpu and __state are current, and
 * every later event writes the word itself.  ts_pub_first() only fills an
 * empty word, so a probe that got there first keeps its newer word.  A
 * thread not on a CPU gets the time it entered its state as the scheduler
 * knows it (ts_since_estimate()), not the snapshot's.
 *
 * @upto is ts_inserts_now() read before that grace period began.  The
 * slot found now may be younger: another caller untracked @t and tracked
 * it again meanwhile, and no grace period has passed since that insert.
 * Its state could be read while a probe that missed the slot is still
 * switching @t, and stay wrong until @t's next event.  That slot is left
 * to the caller that inserted it, which snapshots it after its own wait.
 * Caller holds rcu_read_lock() and found @t within it; the slot cannot be
 * reused (its ticket rewritten) before that section ends.
 */
void ts_snapshot(struct task_struct *t, u64 upto)
{
	struct ts_slot *s = ts_lookup(t);
	unsigned int state;
	unsigned long irqflags;
	u64 now;

	if (!s || s->ticket > upto)
		return;
	state = ts_state_of(t);
	if (state == TASKSTATE_NONE)
		return;
	now = ktime_get_boot_fast_ns();
	if (state != TASKSTATE_RUNNING && state != TASKSTATE_DEAD)
		now = ts_since_estimate(t, state, now);
	/* The word, then at once its start_ns: readers retry in between. */
	local_irq_save(irqflags);
	ts_pub_first(ts_slot_pub(s), taskstate_pack(state, now));
	local_irq_restore(irqflags);
}

static void ts_slot_reuse(struct rcu_head *head)
{
	struct ts_slot *s = container_of(head, struct ts_slot, rcu);
	unsigned int idx = s - ts_slots;
	unsigned long irqflags;

	/* No probe or reader can hold the slot any more: empty it. */
	ts_pub_reset(&ts_pub[idx]);
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	ts_index_free(&ts_index, s->way);
	ts_free[ts_nr_free++] = idx;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/*
 * Stop tracking @t.  Called when the task is freed (sched_process_free)
 * and through the device.  The slot is unlinked at once and reused a
 * grace period later.  Returns whether @t was tracked.
 */
bool ts_untrack(struct task_struct *t)
{
	unsigned long irqflags;
	struct ts_slot *s;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(t);
	if (s) {
		ts_index_release(&ts_index, t, s->way);
		WRITE_ONCE(s->task, NULL);
		ts_pub_release(ts_slot_pub(s));
		WRITE_ONCE(ts_nr_tracked, ts_nr_tracked - 1);
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	if (s)
		ts_call_rcu(&s->rcu, ts_slot_reuse);
	return s;
}

/*
 * Track every thread that exists, for track_all.  The probes are
 * registered first (at @probes_since, ktime_get_ns()), so a thread
 * created meanwhile is tracked by the task_newtask probe (ts_track() is
 * idempotent) and a thread freed meanwhile is released by the free probe.
 */
void ts_track_existing(u64 probes_since)
{
	struct task_struct *g, *t;
	u64 upto;

	rcu_read_lock();
	/*
	 * A thread the table has no room for is counted once: here if it
	 * existed before the probes were registered, else by the newtask
	 * probe, which saw it created (start_time: CLOCK_MONOTONIC, set in
	 * copy_process() before the tracepoint).
	 */
	for_each_process_thread(g, t)
		if (ts_track(t, 0) && t->start_time < probes_since)
			atomic_long_inc(&ts_nr_untracked);
	rcu_read_unlock();
	upto = ts_inserts_now();
	synchronize_rcu();
	rcu_read_lock();
	for_each_process_thread(g, t)
		ts_snapshot(t, upto);
	rcu_read_unlock();
}

/*
 * exec by a non-leader thread gave @t its leader's tid (de_thread()): show
 * the new one in @t's entry, same entry and gen (the sched_process_exec
 * probe, and the sched_process_exit probe for an exec that failed after
 * de_thread()).  Under ts_lock, so that it cannot write a tid after
 * ts_untrack() cleared it; a released entry keeps tid 0.  Between
 * de_thread() and either probe the entry shows the old tid: that window
 * has no tracepoint (the uapi header says so).
 */
void ts_retid(struct task_struct *t)
{
	unsigned long irqflags;
	struct ts_slot *s;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(t);
	if (s)
		WRITE_ONCE(ts_slot_pub(s)->tid, READ_ONCE(t->pid));
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/*
 * Copy what a reader shows about slot @idx.  Under ts_lock the slot's task
 * cannot be freed (the free probe, which runs before the task_struct is
 * put, waits for the lock), so its pid and comm can be read.  Returns
 * false for a free slot or a task not visible in @ns.
 */
bool ts_view_slot(unsigned int idx, struct pid_namespace *ns,
		  struct ts_view *v)
{
	struct task_struct *t;
	unsigned long irqflags;

	memset(&v->totals, 0, sizeof(v->totals));
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	t = ts_slots[idx].task;
	if (t) {
		v->tid = task_pid_nr_ns(t, ns);
		v->tgid = task_tgid_nr_ns(t, ns);
		/* Totals not readable now: the word, invalid totals (uapi). */
		if (!ts_totals ||
		    !ts_pub_read(&ts_pub[idx], &v->word, &v->totals)) {
			v->word = ts_word_load(&ts_pub[idx].word);
			memset(&v->totals, 0, sizeof(v->totals));
		}
		/*
		 * __set_task_comm() rewrites comm under task_lock(), a
		 * spinlock_t we cannot take under this raw lock.  A racing
		 * rename can at worst show a mix of the old and new names,
		 * as /proc/<tid>/stat can; the copy is NUL-terminated
		 * below whatever it read.
		 */
		data_race(memcpy(v->comm, t->comm, sizeof(v->comm)));
		v->comm[sizeof(v->comm) - 1] = '\0';
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	/*
	 * tid or tgid 0: gone from @ns's view, or being released (as in
	 * SAMPLE, __unhash_process() detaches the PID link before the TGID
	 * one, so a last thread can briefly have a tid and tgid 0).  Word 0:
	 * no state yet (TRACK's snapshot or a new thread's first wakeup is
	 * still to come), left out as SAMPLE leaves it out.
	 */
	return t && v->tid && v->tgid && v->word;
}

unsigned int ts_slots_used(void)
{
	return READ_ONCE(ts_hwm);
}
