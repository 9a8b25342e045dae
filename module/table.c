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
 * is only taken from process context, the fork, exec, exit and free
 * probes and RCU callbacks, never under a run queue lock, so no scheduler
 * path can already hold it.  One lock is taken before it: a task's
 * pi_lock (ts_entry_claim()); nothing takes pi_lock or a run queue lock
 * under it.
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
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/pid_namespace.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "hooks.h"
#include "states.h"
#include "table.h"

/* What a switch reads besides its two lines: never written after load. */
struct ts_slot *ts_slots __read_mostly;
struct ts_pub *ts_pub __read_mostly;
struct ts_index ts_index __read_mostly;
unsigned int ts_nr_slots;
unsigned int ts_nr_tracked;		/* written under ts_lock */
atomic_long_t ts_nr_untracked;

u32 *ts_entry_slot __read_mostly;	/* an entry's slot, readers' */

static DEFINE_RAW_SPINLOCK(ts_lock);
static u32 *ts_free;			/* stack of free slot indices */
static unsigned int ts_nr_free;
static unsigned int ts_hwm;		/* no slot at or above was ever used */

/*
 * The entries, a page of them at a time (TS_PAGE_ENTRIES), so that a
 * scoped descriptor's mapping can hold whole pages of its own threads'
 * entries and no byte of anyone else's (mmap.c).  A page is empty, in
 * use by anyone (partial, or full and on no list), or a scoped
 * descriptor's (owner set, on its pages) from when its first thread
 * needs an entry until it is closed: then no mapping of it remains (a
 * mapping holds the file).  Only a scoped descriptor's own threads, and
 * threads tracked from them (fork, ts_entry_claim()), take its entries.
 * Under ts_lock.
 */
struct ts_page {
	struct list_head node;
	struct ts_owner *owner;
	unsigned int view;		/* its page in owner's mapping */
	unsigned int nr_used;		/* taken, or retired and not freed */
	unsigned int cap;		/* entries in it: the last may have fewer */
	DECLARE_BITMAP(used, TS_PAGE_ENTRIES);
};

static struct ts_page *ts_pages;
static unsigned int ts_nr_pages;
static LIST_HEAD(ts_pages_empty);
static LIST_HEAD(ts_pages_partial);

/**
 * ts_table_init() - allocate the table for @nr_slots threads
 * @nr_slots: max_threads
 *
 * Context: module load, before the probes; may sleep.
 * Return: 0, or -ENOMEM (nothing left allocated).
 */
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
	ts_entry_slot = kvcalloc(nr_slots, sizeof(*ts_entry_slot), GFP_KERNEL);
	ts_nr_pages = DIV_ROUND_UP(nr_slots, TS_PAGE_ENTRIES);
	ts_pages = kvcalloc(ts_nr_pages, sizeof(*ts_pages), GFP_KERNEL);
	if (!ts_slots || !ts_pub || !ts_index.buckets || !ts_free ||
	    !ts_entry_slot || !ts_pages) {
		ts_table_exit();
		return -ENOMEM;
	}
	/* Hand out low indices first, so readers scan a short prefix. */
	for (i = 0; i < nr_slots; i++) {
		ts_free[i] = nr_slots - 1 - i;
		ts_slots[i].proc = TS_INDEX_NONE;
		ts_slots[i].retired = TS_INDEX_NONE;
		ts_slots[i].retired_next = TS_INDEX_NONE;
	}
	INIT_LIST_HEAD(&ts_pages_empty);
	INIT_LIST_HEAD(&ts_pages_partial);
	for (i = 0; i < ts_nr_pages; i++) {
		ts_pages[i].cap = min_t(unsigned int, TS_PAGE_ENTRIES,
					nr_slots - i * TS_PAGE_ENTRIES);
		list_add_tail(&ts_pages[i].node, &ts_pages_empty);
	}
	ts_nr_free = nr_slots;
	ts_nr_slots = nr_slots;
	ts_nr_tracked = 0;
	ts_hwm = 0;
	atomic_long_set(&ts_nr_untracked, 0);
	return 0;
}

/**
 * ts_table_exit() - free the table
 *
 * Callers have unregistered the probes and waited for pending releases.
 *
 * Context: module unload, or a failed load; may sleep.
 */
void ts_table_exit(void)
{
	kvfree(ts_pages);
	kvfree(ts_entry_slot);
	kvfree(ts_free);
	kvfree(ts_index.buckets);
	vfree(ts_pub);
	kvfree(ts_slots);
	ts_pages = NULL;
	ts_entry_slot = NULL;
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

/**
 * ts_inserts_now() - the number of the last insert
 *
 * Context: process context; takes ts_lock.
 * Return: the last insert's number: every slot with this one or lower is in.
 */
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
 * Process records (uapi "DOC: Process totals").  A leader's slot holds
 * its process's record (ts_slot.rec); the slots of the other threads
 * counted in it are its members.  Everything here is under ts_lock, as
 * are the inserts and releases that change membership, so a reader that
 * takes it sees each thread either live, on the list, or in exited_ns,
 * never both and never neither; ts_proc_read() walks a large list in
 * chunks, and says how it still counts each thread once.  No allocation: the
 * record and the list links are in the slots, allocated at load.
 *
 * Why a record in the leader's slot outlives its members (6.1,
 * kernel/exit.c): a group leader is released (release_task()) only once
 * thread_group_empty() holds, by its last thread's release_task()
 * (zap_leader) or by its parent's wait(); its slot is released a grace
 * period later still, by its free probe.  A member's free can still
 * come after the leader's (RCU callbacks queued on different CPUs are
 * not ordered): the process has ended by then, the leader's release
 * detached its members, and their totals go nowhere.  The one other way
 * a leader goes while its process lives is exec by another thread
 * (fs/exec.c, de_thread()): the caller takes the leader's pid, becomes
 * group_leader, and releases the old leader, whose slot hands the record
 * to it (ts_proc_leave_locked()).
 *
 * Races, each decided by ts_lock's order:
 *  - A thread's exit (its free probe) against UNTRACK of its process:
 *    whichever releases the slot first folds it, the other finds no
 *    slot.  The walk's release of the leader ends the record; threads
 *    released before it folded into it, those after it fold into
 *    nothing: either way the process's totals end with the walk.
 *  - A new thread against its leader's UNTRACK: it joins only a record
 *    it finds under the lock, and a record's end detaches every member.
 *  - pid reuse: records are found from task pointers (ts_lookup()), and
 *    PROCESS resolves its pid to a task under RCU: a new process with
 *    an old pid has its own slot and a record of its own, from zero.
 *    A member's proc index names a slot that holds a record as long as
 *    the member is on its list: the holder's release empties the list
 *    (or hands it over) under the lock, before the slot can be reused.
 *
 * The times the records count up to never go back, even if the clock
 * read on another CPU did (ktime_get_boot_fast_ns() is NMI-safe, not
 * monotonic across an update): a fold or a read after another uses at
 * least that one's time.
 */
static u64 ts_proc_now;

/* PROCESS's walk: threads per ts_lock hold, restarts (ts_proc_read()). */
#define TS_PROC_CHUNK	256
#define TS_PROC_TRIES	4
static u64 ts_proc_last_start;		/* the latest record's start_ns */
static u64 ts_proc_walks;		/* walks begun, each one's number */
static DEFINE_MUTEX(ts_proc_mutex);	/* one walk at a time */

static u64 ts_proc_now_locked(void)
{
	u64 now = ktime_get_boot_fast_ns();

	lockdep_assert_held(&ts_lock);
	if ((s64)(now - ts_proc_now) < 0)
		now = ts_proc_now;
	ts_proc_now = now;
	return now;
}

/*
 * @a + @b, or U64_MAX where that would wrap.  A record's sums add up
 * thread time: 2^64 ns is 584 thread-years, 213 days of a 1,000-thread
 * process, 21 days of a 10,000-thread one.  A sum that reached the edge
 * stays there (uapi: "DOC: Process totals"), a counter that stopped,
 * never one that runs back to zero.
 */
static u64 ts_add_sat(u64 a, u64 b)
{
	u64 sum;

	return check_add_overflow(a, b, &sum) ? U64_MAX : sum;
}

/*
 * The totals of @s's thread up to @now (its current state's time
 * included, unless it is dead) into @sum.  False for a thread with no
 * word yet (nothing to add).
 *
 * A read (ts_proc_read()) may give up on a word that keeps changing
 * (ts_pub_read(); not seen): false, the thread is left out of that one
 * answer, which shown_ns keeps from going back.  A fold (@fold, its
 * totals moving into exited_ns for good) must not lose them, and must
 * not wait for the writer either: the one writer that runs with
 * interrupts on, try_to_wake_up() of current (preemption off only),
 * writes a first word then its start_ns, and an interrupt between the
 * two can run RCU callbacks, whose free probe spins on the ts_lock the
 * folder holds.  So a fold takes the last read as it is, which is at
 * most one writer's step apart (entry.h: the total, smp_wmb(), the
 * word): totals that a change already moved past the word's since-time
 * (start_ns + their sum, later than it) count its current state from
 * there, not twice; a first word without its start_ns yet has no
 * totals.
 */
static bool ts_proc_totals(u64 sum[TASKSTATE_MAP_NR_TOTALS],
			   const struct ts_slot *s, u64 now, bool fold)
{
	struct taskstate_totals t;
	u64 word, since, ahead;
	unsigned int i;

	if (!ts_pub_read(ts_slot_pub(s), &word, &t) && !fold)
		return false;
	if (!word)
		return false;
	since = taskstate_since_ns(word);
	ahead = t.start_ns;
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		ahead += t.state_ns[i];
	ahead &= TASKSTATE_TIME_MASK;
	if (t.start_ns && (s64)(ahead - since) > 0)
		since = ahead;
	/* A dead thread's time since its death counts in no total (uapi). */
	if (taskstate_state(word) != TASKSTATE_DEAD)
		t.state_ns[taskstate_total_of(taskstate_state(word))] +=
			taskstate_age_ns(since, now);
	memcpy(sum, t.state_ns, sizeof(t.state_ns));
	return true;
}

/*
 * Add the totals of @s's thread up to @now, less the part from before it
 * joined its record (base_ns), to @sum, each saturating at U64_MAX
 * (ts_add_sat()).  False for a thread with no word yet, or one a read
 * gave up on (ts_proc_totals()).
 */
static bool ts_proc_add(u64 sum[TASKSTATE_MAP_NR_TOTALS],
			const struct ts_slot *s, u64 now, bool fold)
{
	u64 t[TASKSTATE_MAP_NR_TOTALS];
	unsigned int i;

	if (!ts_proc_totals(t, s, now, fold))
		return false;
	/* At most what is there: a first change stamped a little early. */
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		sum[i] = ts_add_sat(sum[i], t[i] - min(s->base_ns[i], t[i]));
	return true;
}

/*
 * @s joins a record now: the record counts its thread from here (uapi: "A
 * thread counts in its process's totals from when its tracking begins,
 * if its leader is tracked then"; a thread tracked before its record
 * began joins when it begins).  What its totals hold already stays out
 * (base_ns): a thread tracked alone, then its process, or one that kept
 * being tracked when its leader was untracked alone and tracked again,
 * brings none of its past.  A thread with no word yet has no totals; its
 * snapshot leaves out the time before join_ns (ts_snapshot()).
 */
static void ts_proc_base_locked(struct ts_slot *s)
{
	u64 now = ts_proc_now_locked();

	memset(s->base_ns, 0, sizeof(s->base_ns));
	ts_proc_totals(s->base_ns, s, now, true);
	s->join_ns = now;
}

/*
 * @s, @t's slot, joins its process's record if it has none: its own if
 * @t leads its group, else its leader's, if the leader's slot is in one
 * (the leader's own, or the record it is a member of, in the moment
 * between a non-leader exec and the old leader's free).  @t is alive:
 * its group_leader points to a live task (the leader is released last,
 * or, by de_thread(), after group_leader was changed to the caller).  A
 * de_thread() racing this read leaves @t either a member of the old
 * leader's record, which is handed to @t when that slot is released, or
 * the holder of a new one: a TRACK racing an exec may restart the
 * process's totals, nothing worse.
 */
static void ts_proc_join_locked(struct ts_slot *s, struct task_struct *t)
{
	struct task_struct *leader = READ_ONCE(t->group_leader);
	unsigned int idx = s - ts_slots;
	struct ts_slot *ls, *h;

	/* totals=0: no records, no lists (PROCESS is refused). */
	if (!ts_totals || s->proc != TS_INDEX_NONE)
		return;
	if (leader == t) {
		ts_proc_base_locked(s);
		INIT_LIST_HEAD(&s->rec.members);
		memset(s->rec.exited_ns, 0, sizeof(s->rec.exited_ns));
		ts_hook_proc_start(s->rec.exited_ns);
		memset(s->rec.shown_ns, 0, sizeof(s->rec.shown_ns));
		memset(s->rec.children_ns, 0, sizeof(s->rec.children_ns));
		s->rec.nr_children = 0;
		s->rec.parent_start_ns = 0;
		s->rec.ended = false;
		s->rec.exits = NULL;
		s->rec.nr_exited = 0;
		s->rec.walk = 0;
		/* Later than every record's before: a restart shows. */
		s->rec.start_ns = max(ts_proc_now_locked(),
				      ts_proc_last_start + 1);
		ts_proc_last_start = s->rec.start_ns;
		s->proc = idx;
		return;
	}
	ls = ts_lookup(leader);
	if (!ls || ls->proc == TS_INDEX_NONE)
		return;
	ts_proc_base_locked(s);
	s->proc = ls->proc;
	h = &ts_slots[s->proc];
	/*
	 * At the list's head, among the members a paused walk has counted,
	 * and stamped as counted by it: @s joined after that walk's now_ns,
	 * so the walk leaves it out, and is bounded by the members it began
	 * with however fast threads join (ts_proc_read()).
	 */
	s->walked = h->rec.walk;
	list_add(&s->proc_node, &h->rec.members);
}

/* Slots scoped descriptors own, all users' together (scope.c). */
static unsigned int ts_nr_owned;

static unsigned int user_share = 10;
module_param(user_share, uint, 0644);
MODULE_PARM_DESC(user_share,
		 "Percent of max_threads one user's scoped descriptors may have tracked at once, 1..50 (default 10); past it their TRACK fails with ENOSPC. All unprivileged users together are held to half of max_threads.");

/**
 * ts_user_max() - the slots one user's scoped descriptors may hold
 *
 * Context: any.
 * Return: user_share percent of the table (clamped to 1..50), at least 1.
 */
unsigned int ts_user_max(void)
{
	unsigned int pct = clamp(READ_ONCE(user_share), 1U, 50U);

	return max_t(unsigned int, 1, div_u64((u64)ts_nr_slots * pct, 100));
}

/**
 * ts_unpriv_max() - the slots all scoped descriptors together may hold
 *
 * Context: any.
 * Return: half the table: the other half is always root's.
 */
unsigned int ts_unpriv_max(void)
{
	return ts_nr_slots / 2;
}

/* @s is no scoped descriptor's any more (its release, or root's TRACK). */
static void ts_disown_locked(struct ts_slot *s)
{
	if (!s->owner)
		return;
	list_del(&s->owner_node);
	(*s->owner->user_nr)--;
	ts_nr_owned--;
	s->owner = NULL;
}

/* Pages scoped descriptors hold, all users' together (ts_lock). */
static unsigned int ts_nr_owned_pages;

/**
 * ts_view_max_pages() - the pages one scoped descriptor's mapping may hold
 *
 * Context: any.
 * Return: its user's share of the table in whole pages, at least one.
 */
unsigned int ts_view_max_pages(void)
{
	return min(DIV_ROUND_UP(ts_user_max(), TS_PAGE_ENTRIES),
		   ts_unpriv_max() / TS_PAGE_ENTRIES);
}

/*
 * Execs that left a thread not dumpable or with ids that differ (a
 * set-user-ID or set-group-ID program): the exec probe counts them under
 * ts_lock, after the exec installed the ids.  A scoped TRACK or LOCATE
 * reads the count before it decides that it sees a thread, and puts the
 * thread's entry in its pages only if the count has not moved by then
 * (under ts_lock): otherwise an exec between its look and its move
 * could put a thread it may not see into its mapping, after the exec
 * probe looked for it there.  Rare, so one count for all.
 */
static unsigned long ts_setid_execs;

/**
 * ts_setid_execs_now() - the count, before a scoped look at a thread
 *
 * Context: any.
 * Return: the count; its acquire pairs with the exec probe's release.
 */
unsigned long ts_setid_execs_now(void)
{
	/* Pairs with the exec probe's release: its ids before the count. */
	return smp_load_acquire(&ts_setid_execs);
}

/*
 * An empty page for @owner, the next of its mapping, while its user's
 * pages stay within the user's share (in whole pages) and all users'
 * within half the table; NULL otherwise, or if no page is empty.
 */
static struct ts_page *ts_page_grab_locked(struct ts_owner *owner)
{
	struct ts_page *pg;

	if (owner->closing || owner->nr_pages >= ts_view_max_pages() ||
	    *owner->user_pages >= ts_view_max_pages() ||
	    (ts_nr_owned_pages + 1) * TS_PAGE_ENTRIES > ts_unpriv_max())
		return NULL;
	pg = list_first_entry_or_null(&ts_pages_empty, struct ts_page, node);
	if (!pg)
		return NULL;
	pg->view = owner->nr_pages++;
	WRITE_ONCE(pg->owner, owner);
	list_move_tail(&pg->node, &owner->pages);
	(*owner->user_pages)++;
	ts_nr_owned_pages++;
	return pg;
}

/* A free entry of @pg, taken. */
static u32 ts_page_take_locked(struct ts_page *pg)
{
	unsigned int bit = find_first_zero_bit(pg->used, pg->cap);

	__set_bit(bit, pg->used);
	if (++pg->nr_used == pg->cap && !pg->owner)
		list_del_init(&pg->node);
	return (pg - ts_pages) * TS_PAGE_ENTRIES + bit;
}

/*
 * A free entry in @owner's pages, taking an empty page for it while its
 * user's pages stay within the user's share (in whole pages) and all
 * users' within half the table; or, with @owner NULL, in a page no scoped
 * descriptor holds.  False if there is none: then an owner's thread
 * takes an entry of the second kind, which its mapping does not show.
 */
static bool ts_entry_alloc_locked(struct ts_owner *owner, u32 *e)
{
	struct ts_page *pg;

	if (owner) {
		list_for_each_entry(pg, &owner->pages, node)
			if (pg->nr_used < pg->cap)
				goto take;
		pg = ts_page_grab_locked(owner);
		if (!pg)
			return false;
		goto take;
	}
	pg = list_first_entry_or_null(&ts_pages_partial, struct ts_page, node);
	if (!pg) {
		pg = list_first_entry_or_null(&ts_pages_empty, struct ts_page,
					      node);
		if (!pg)
			return false;
		list_move(&pg->node, &ts_pages_partial);
	}
take:
	*e = ts_page_take_locked(pg);
	return true;
}

/* Entry @e is free again, a grace period after it was released. */
static void ts_entry_free_locked(u32 e)
{
	struct ts_page *pg = &ts_pages[e / TS_PAGE_ENTRIES];
	bool was_full = pg->nr_used == pg->cap;

	__clear_bit(e % TS_PAGE_ENTRIES, pg->used);
	pg->nr_used--;
	if (pg->owner)
		return;
	if (!pg->nr_used)
		list_move(&pg->node, &ts_pages_empty);
	else if (was_full)
		list_add(&pg->node, &ts_pages_partial);
}

/* The scoped descriptor holding @s's entry's page, or NULL. */
static struct ts_owner *ts_entry_owner(const struct ts_slot *s)
{
	return ts_pages[s->entry / TS_PAGE_ENTRIES].owner;
}

/**
 * ts_entry_scoped() - is a slot's entry in a scoped descriptor's pages?
 * @s: the slot, held
 *
 * A filter for the exit probe, decided again under ts_lock.
 *
 * Context: any, holding the slot.
 * Return: whether a scoped descriptor holds the entry's page now.
 */
bool ts_entry_scoped(const struct ts_slot *s)
{
	return READ_ONCE(ts_pages[READ_ONCE(s->entry) / TS_PAGE_ENTRIES].owner);
}

/**
 * ts_owner_init() - an empty scoped descriptor's share of the table
 * @owner: its
 * @user_nr: its user's count of slots, which its TRACK charges
 * @user_pages: its user's count of pages, which its mapping charges
 * @cred: the opener's credentials
 *
 * Context: any.
 */
void ts_owner_init(struct ts_owner *owner, unsigned int *user_nr,
		   unsigned int *user_pages, const struct cred *cred)
{
	INIT_LIST_HEAD(&owner->owned);
	INIT_LIST_HEAD(&owner->pages);
	owner->nr_pages = 0;
	owner->user_nr = user_nr;
	owner->user_pages = user_pages;
	owner->uid = cred->uid;
	owner->gid = cred->gid;
	owner->closing = false;
}

/**
 * ts_owner_pages_put() - give back a closed descriptor's pages
 * @owner: its, after ts_untrack_owned()
 *
 * No mapping of them is left: a mapping holds the file, and this runs at
 * its release.  Entries still taken in them (threads root tracks, whose
 * entries moved in, and entries not freed yet) stay where they are: the
 * pages are anyone's now, and empty ones may go to another descriptor.
 *
 * Context: process context (the descriptor's release); takes ts_lock.
 */
void ts_owner_pages_put(struct ts_owner *owner)
{
	struct ts_page *pg, *next;
	unsigned long irqflags;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	list_for_each_entry_safe(pg, next, &owner->pages, node) {
		WRITE_ONCE(pg->owner, NULL);
		list_del_init(&pg->node);
		if (!pg->nr_used)
			list_add_tail(&pg->node, &ts_pages_empty);
		else if (pg->nr_used < pg->cap)
			list_add(&pg->node, &ts_pages_partial);
		(*owner->user_pages)--;
		ts_nr_owned_pages--;
	}
	owner->nr_pages = 0;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/**
 * ts_view_index() - where a scoped descriptor's mapping shows an entry
 * @owner: the descriptor's
 * @e: the entry, a held slot's (rcu_read_lock())
 *
 * Context: under rcu_read_lock().
 * Return: @e's index in @owner's mapping, or TASKSTATE_LOCATE_NONE if its
 * page is not @owner's.
 */
u32 ts_view_index(const struct ts_owner *owner, u32 e)
{
	const struct ts_page *pg = &ts_pages[e / TS_PAGE_ENTRIES];

	/* A page stays its owner's while the owner's descriptor is open. */
	if (READ_ONCE(pg->owner) != owner)
		return TASKSTATE_LOCATE_NONE;
	return READ_ONCE(pg->view) * TS_PAGE_ENTRIES + e % TS_PAGE_ENTRIES;
}

/**
 * ts_view_page() - the table's page behind a page of a scoped mapping
 * @owner: the descriptor's
 * @pgoff: the page's offset in its mapping
 *
 * The page @owner holds there, given to it now (with those before it) if
 * it holds none yet: a page is a descriptor's from its first thread's
 * entry or its first read, whichever comes first, so that a page a
 * reader has seen never changes hands under it.
 *
 * Context: process context (a page fault); takes ts_lock.
 * Return: the page's number in ts_pub[], or -1 if @owner holds none there
 * and may not take one (its user's share, all users' half).
 */
int ts_view_page(struct ts_owner *owner, unsigned long pgoff)
{
	unsigned long irqflags;
	struct ts_page *pg;
	int ret = -1;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	while (owner->nr_pages <= pgoff && ts_page_grab_locked(owner))
		;
	list_for_each_entry(pg, &owner->pages, node) {
		if (pg->view == pgoff) {
			ret = pg - ts_pages;
			break;
		}
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	return ret;
}

/* @rec logs its threads' exits nowhere from now (ts_exits_free()). */
static void ts_exits_drop_locked(struct ts_proc *rec)
{
	if (!rec->exits)
		return;
	rec->exits->nr_records--;
	rec->exits = NULL;
}

/*
 * @s leaves its process's record, taking its totals up to now into
 * exited_ns: it was freed, or untracked by UNTRACK (uapi: both count).
 * A probe that already looked @s up may still write its word after this
 * (an UNTRACK of a running thread); that change is not counted, its
 * time having been given to the state read here: no time is lost or
 * counted twice.  A freed thread's word is final (DEAD).
 *
 * The holder leaving ends the record, unless a member leads the group
 * now: exec by a non-leader thread made it group_leader (de_thread())
 * and released the holder, the old leader.  That member takes the
 * record over, with the other members.  Reading a member's task is safe
 * here: a task's slot is released, under ts_lock, before it is freed.
 * Outside an exec, no member leads: the holder is still its group's
 * leader (UNTRACK), or the group is gone (the leader's free).
 */
static void ts_proc_leave_locked(struct ts_slot *s)
{
	u64 t[TASKSTATE_MAP_NR_TOTALS] = { 0 };
	struct ts_slot *h, *m, *next = NULL;
	unsigned int i;

	if (s->proc == TS_INDEX_NONE)
		return;
	h = &ts_slots[s->proc];
	if (ts_proc_add(t, s, ts_proc_now_locked(), true)) {
		for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
			h->rec.exited_ns[i] = ts_add_sat(h->rec.exited_ns[i],
							 t[i]);
		h->rec.nr_exited++;
	}
	s->proc = TS_INDEX_NONE;
	if (h != s) {
		/*
		 * A walk paused before reaching @s counts what @s took
		 * (ts_proc_read()); one paused at it goes on from the next.
		 */
		if (h->rec.walk && s->walked != h->rec.walk) {
			for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
				h->rec.walk_missed_ns[i] =
					ts_add_sat(h->rec.walk_missed_ns[i],
						   t[i]);
			h->rec.walk_missed_nr++;
		}
		if (h->rec.walk_pos == &s->proc_node)
			h->rec.walk_pos = s->proc_node.next;
		list_del(&s->proc_node);
		return;
	}
	/* A walk paused on the record starts again (ts_proc_read()). */
	s->rec.walk = 0;
	list_for_each_entry(m, &s->rec.members, proc_node) {
		if (READ_ONCE(m->task->group_leader) == m->task) {
			next = m;
			break;
		}
	}
	if (next) {
		unsigned int nidx = next - ts_slots;

		list_del(&next->proc_node);
		INIT_LIST_HEAD(&next->rec.members);
		list_splice_init(&s->rec.members, &next->rec.members);
		memcpy(next->rec.exited_ns, s->rec.exited_ns,
		       sizeof(next->rec.exited_ns));
		memcpy(next->rec.shown_ns, s->rec.shown_ns,
		       sizeof(next->rec.shown_ns));
		memcpy(next->rec.children_ns, s->rec.children_ns,
		       sizeof(next->rec.children_ns));
		next->rec.nr_children = s->rec.nr_children;
		next->rec.parent_start_ns = s->rec.parent_start_ns;
		next->rec.ended = s->rec.ended;
		next->rec.exits = s->rec.exits;
		s->rec.exits = NULL;
		/*
		 * A log being closed may have passed @next's slot already
		 * (ts_exits_free()): no record may point at it from here.
		 */
		if (next->rec.exits && next->rec.exits->closing)
			ts_exits_drop_locked(&next->rec);
		next->rec.nr_exited = s->rec.nr_exited;
		next->rec.start_ns = s->rec.start_ns;
		next->rec.walk = 0;
		next->proc = nidx;
		/*
		 * A record no scoped descriptor began is no scoped
		 * descriptor's to end: its new holder (tracked, perhaps, by
		 * one) becomes no one's.
		 */
		if (!s->owner)
			ts_disown_locked(next);
		list_for_each_entry(m, &next->rec.members, proc_node)
			m->proc = nidx;
		return;
	}
	list_for_each_entry_safe(m, next, &s->rec.members, proc_node) {
		list_del(&m->proc_node);
		m->proc = TS_INDEX_NONE;
	}
	ts_exits_drop_locked(&s->rec);
}

/*
 * Insert @t's slot, or add @flags to the one it has.  Caller holds ts_lock.
 * The slot is published with an empty word (NONE): from here on the
 * probes keep it current.  @owner: the scoped descriptor inserting it,
 * charged for it, or NULL.  A slot that exists is left as it is for an
 * @owner that did not insert it (tracking someone else set up is not a
 * scoped descriptor's to change), and becomes no descriptor's for a
 * privileged TRACK (NULL): root's now, which no close ends, and with
 * root's @flags only (the scope's inheritance would otherwise go on
 * inserting children no one is charged for).  -ENOSPC for a full table,
 * -EDQUOT past @owner's user's share or all users' half.
 */
static int ts_insert_locked(struct task_struct *t, unsigned int flags,
			    struct ts_owner *owner, struct ts_owner *place)
{
	struct ts_slot *s = ts_lookup(t);
	unsigned int idx;
	u32 e;

	if (s) {
		if (owner && s->owner != owner)
			return 0;
		if (!owner && s->owner) {
			/* Root's now: with root's flags, not the scope's. */
			ts_disown_locked(s);
			WRITE_ONCE(s->flags, flags);
		} else {
			WRITE_ONCE(s->flags, s->flags | flags);
		}
		ts_proc_join_locked(s, t);
		return 0;
	}
	if (!ts_nr_free)
		return -ENOSPC;
	if (owner && (owner->closing || ts_nr_owned >= ts_unpriv_max() ||
		      *owner->user_nr >= ts_user_max()))
		return -EDQUOT;
	/* In the pages of a scoped descriptor (@place) where there is room. */
	if (!(place && ts_entry_alloc_locked(place, &e)) &&
	    !ts_entry_alloc_locked(NULL, &e))
		return -ENOSPC;
	idx = ts_free[--ts_nr_free];
	WRITE_ONCE(ts_hwm, max(ts_hwm, idx + 1));
	s = &ts_slots[idx];
	s->flags = flags;
	s->ticket = ++ts_inserts;
	s->entry = e;
	WRITE_ONCE(ts_entry_slot[e], idx);
	ts_word_store(&ts_pub[e].word, 0);
	ts_pub_take(&ts_pub[e], READ_ONCE(t->pid));
	WRITE_ONCE(s->task, t);
	s->way = ts_index_insert(&ts_index, t, e);
	WRITE_ONCE(ts_nr_tracked, ts_nr_tracked + 1);
	s->proc = TS_INDEX_NONE;
	memset(s->base_ns, 0, sizeof(s->base_ns));
	s->walked = 0;
	s->join_ns = ts_totals ? ts_proc_now_locked() : 0;
	ts_proc_join_locked(s, t);
	s->owner = owner;
	if (owner) {
		list_add(&s->owner_node, &owner->owned);
		(*owner->user_nr)++;
		ts_nr_owned++;
	}
	return 0;
}

/**
 * ts_proc_join() - count a tracked thread in its leader's record
 * @t: the thread
 * @owner: a scoped descriptor: only a slot it owns joins; or NULL
 *
 * For TRACK of a leader alone: @t, tracked before, joins the record the
 * leader's slot holds now, from now (ts_proc_join_locked()).  Nothing if
 * @t is not tracked or counts in a record already.  A thread tracked
 * after the leader's insert joined at its own insert, so a TRACK of @t
 * racing this one leaves it counted once, by whichever comes second.
 *
 * Context: process context, under rcu_read_lock(), @t found within it;
 * takes ts_lock.
 */
void ts_proc_join(struct task_struct *t, const struct ts_owner *owner)
{
	unsigned long irqflags;
	struct ts_slot *s;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(t);
	if (s && (!owner || s->owner == owner))
		ts_proc_join_locked(s, t);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/**
 * ts_track() - start tracking a thread
 * @t: the thread
 * @flags: TS_SLOT_* to give its slot (or add to the one it has)
 * @owner: the scoped descriptor tracking it, or NULL (ts_insert_locked())
 * @seen: for @owner, ts_setid_execs_now() before it decided it sees @t
 *
 * Start tracking @t, or add @flags if it is tracked already, for the
 * device (TRACK) and track_all at load.  A thread that already runs gets
 * its first word from ts_snapshot(), a grace period later.  A refusal
 * because the table is full, or @owner's user has its share of it, is
 * the caller's to report (ENOSPC); it is
 * not counted in ts_nr_untracked, which counts threads the module was
 * meant to track on its own and could not (see ts_track_child()).
 *
 * The caller holds rcu_read_lock() and found @t in a pid or thread list
 * within that section, so @t's sched_process_free, queued only after it
 * left those lists, cannot have run yet: the slot will be released.
 *
 * Context: process context, under rcu_read_lock(); takes ts_lock.
 * Return: 0, -ENOSPC when the table is full, or -EDQUOT when @owner's
 * user has its share (ts_insert_locked()).
 */
int ts_track(struct task_struct *t, unsigned int flags,
	     struct ts_owner *owner, unsigned long seen)
{
	unsigned long irqflags;
	int ret;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	/*
	 * In the scoped descriptor's pages unless a set-id exec happened
	 * since it looked at @t (ts_setid_execs).
	 */
	ret = ts_insert_locked(t, flags, owner,
			       seen == ts_setid_execs ? owner : NULL);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	/*
	 * Pairs with the smp_mb() in the task_newtask probe: either the
	 * caller's walk of a thread list that follows sees a thread being
	 * created, or that thread's probe sees our slot (and inherits).
	 */
	smp_mb();
	return ret;
}

/* Are all of @c's uids @uid and all its gids @gid? */
static bool ts_cred_is(const struct cred *c, kuid_t uid, kgid_t gid)
{
	return uid_eq(c->uid, uid) && uid_eq(c->euid, uid) &&
	       uid_eq(c->suid, uid) && uid_eq(c->fsuid, uid) &&
	       gid_eq(c->gid, gid) && gid_eq(c->egid, gid) &&
	       gid_eq(c->sgid, gid) && gid_eq(c->fsgid, gid);
}

/* Are a new task's ids all @uid and @gid, and is it dumpable? */
static bool ts_new_task_is(struct task_struct *child, kuid_t uid, kgid_t gid)
{
	bool in;

	rcu_read_lock();
	in = ts_cred_is(__task_cred(child), uid, gid) &&
	     ts_new_task_dumpable(child);
	rcu_read_unlock();
	return in;
}

/* Is a new task in @owner's scope, as far as its ids and dumpability go? */
static bool ts_new_task_in(struct task_struct *child,
			   const struct ts_owner *owner)
{
	return ts_new_task_is(child, owner->uid, owner->gid);
}

/*
 * @child, a new task just inserted, starts a process (its own record):
 * its exits go where its creator's process's go (uapi "DOC: Thread
 * exits"), for a scoped log only if it is in that scope.
 */
static void ts_exits_inherit_locked(struct task_struct *child,
				    const struct ts_slot *parent)
{
	struct ts_slot *cs = ts_lookup(child);
	struct ts_exits *x;

	/* One a TRACK inserted before this probe (its pid was there) keeps its own. */
	if (!cs || cs->proc != cs - ts_slots || cs->rec.exits ||
	    parent->proc == TS_INDEX_NONE)
		return;
	x = ts_slots[parent->proc].rec.exits;
	if (!x || x->closing ||
	    (x->scoped && !ts_new_task_is(child, x->uid, x->gid)))
		return;
	cs->rec.exits = x;
	x->nr_records++;
}

/**
 * ts_track_child() - track a new task whose creator is tracked so
 * @child: the new task, which has not run yet
 * @parent: the thread that called clone()
 * @all: track_all: every new task is tracked
 *
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
 *
 * Context: the task_newtask probe (preemption disabled); takes ts_lock.
 */
void ts_track_child(struct task_struct *child, struct task_struct *parent,
		    bool all)
{
	struct ts_owner *owner = NULL, *place = NULL;
	unsigned long irqflags;
	struct ts_slot *s;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(parent);
	if (!all) {
		if (!s || !(s->flags & TS_SLOT_INHERIT))
			goto out_unlock;
		/* Inherited from a scoped descriptor's slot: its, charged. */
		owner = s->owner;
	}
	/*
	 * Its entry goes where its creator's is, a scoped descriptor's
	 * pages if there is room, so that the mapping that shows a thread
	 * shows the threads it starts; not where the creator's is not (it
	 * left at a set-user-ID exec, ts_exec_leave_scope()).
	 */
	place = s ? ts_entry_owner(s) : NULL;
	if (place && !ts_new_task_in(child, place))
		place = NULL;
	/*
	 * A user past its share, or a descriptor being closed (-EDQUOT), is
	 * not the table full: not counted.
	 */
	if (ts_insert_locked(child, TS_SLOT_INHERIT, owner, place) == -ENOSPC)
		atomic_long_inc(&ts_nr_untracked);
	else if (s)
		ts_exits_inherit_locked(child, s);
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
 *    at a switch-in that follows a queued wait: not after a preemption in
 *    the sleep window, which sched_info_depart() does not queue, so then
 *    it is an earlier run's and the estimate early) and ran for
 *    sum_exec_runtime -
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
	u64 offset;
	bool on_rq;

	/* The two clocks read back to back on one CPU: their offset now. */
	preempt_disable();
	offset = ktime_get_boot_fast_ns() - local_clock();
	preempt_enable();
	/* Stable while @t is off its CPU; a switch-in writes the word. */
	arrival = data_race(t->sched_info.last_arrival);
	/*
	 * on_rq first, then the stamp and __state.  activate_task() stores
	 * the stamp (enqueue_task(): sched_info_enqueue()) before on_rq, and
	 * on 6.1 to 6.12 psi_enqueue() runs between the two, whose
	 * write_seqcount_begin() is an smp_wmb(): this smp_rmb() pairs with
	 * it.  Where nothing orders the two stores (psi off at boot, or a
	 * kernel that moved psi_enqueue() after on_rq), a weakly ordered CPU
	 * may see on_rq without the stamp: the case below that answers now.
	 */
	on_rq = state == TASKSTATE_RUNNABLE && ts_task_queued(t);
	smp_rmb();	/* the stamp after on_rq: pairs as said above */
	queued = state == TASKSTATE_RUNNABLE ? ts_task_last_queued(t) : 0;
	/*
	 * Runnable and not stamped.  Not on a run queue: try_to_wake_up() is
	 * waking it right now (TASK_WAKING until ttwu_do_activate(), which
	 * the wakelist path defers to an IPI), so it became runnable about
	 * now.  Its switch-out would date it to when it went to sleep, and
	 * its wakeup probe, finding RUNNABLE written, would not restamp it.
	 * On a run queue in a sleep state: preempted in its sleep window,
	 * which sched_info_depart() does not stamp; it keeps the switch-out,
	 * when it was preempted.  On a run queue as TASK_RUNNING: being
	 * moved to another CPU (TASK_ON_RQ_MIGRATING: dequeue_task() cleared
	 * the stamp, the enqueue there sets it again), or its stamp is not
	 * seen yet (above): queued about now, as a migration restarts the
	 * stamp anyway, never dated to when it went to sleep.
	 */
	if (state == TASKSTATE_RUNNABLE && !queued &&
	    (!on_rq || ts_task_state(t) == TASK_RUNNING))
		return now;
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

/**
 * ts_snapshot() - give a newly tracked thread the word of its current state
 * @t: the thread
 * @upto: ts_inserts_now(), read before the grace period began
 *
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
 *
 * Context: process context, under rcu_read_lock(); takes ts_lock.
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
	if (!ts_totals) {
		/* Under ts_lock: the entry cannot move meanwhile. */
		raw_spin_lock_irqsave(&ts_lock, irqflags);
		ts_pub_first(ts_slot_pub(s), taskstate_pack(state, now));
		raw_spin_unlock_irqrestore(&ts_lock, irqflags);
		return;
	}
	/*
	 * The records count a thread from its insert or join (uapi: "from
	 * when its tracking begins"): an estimate before it is kept in the
	 * word, and its part before join_ns in base_ns, which they leave
	 * out.  Both
	 * under ts_lock, so that a fold or a read sees both or neither.
	 * Otherwise a thread untracked (its time folded into its record)
	 * and tracked again would bring that time a second time.
	 */
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	if (ts_pub_first(ts_slot_pub(s), taskstate_pack(state, now)) &&
	    READ_ONCE(s->task) == t && (s64)(s->join_ns - now) > 0 &&
	    state != TASKSTATE_DEAD)
		s->base_ns[taskstate_total_of(state)] = s->join_ns - now;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/*
 * Unlink @s, @t's slot: out of its record, its owner's list and the
 * index, its entry released.  Caller holds ts_lock, and reuses the slot
 * a grace period later (ts_slot_reuse()) if this returns true; else the
 * entry it left when it last moved is waiting for its grace period
 * (ts_entry_retire()), which then queues the reuse.
 */
static bool ts_release_locked(struct ts_slot *s, struct task_struct *t)
{
	ts_proc_leave_locked(s);
	ts_disown_locked(s);
	ts_index_release(&ts_index, t, s->way);
	WRITE_ONCE(s->task, NULL);
	ts_pub_release(ts_slot_pub(s));
	WRITE_ONCE(ts_nr_tracked, ts_nr_tracked - 1);
	return s->retired == TS_INDEX_NONE;
}

/*
 * The table's RCU callbacks queued and not done: a retirement can queue
 * another, then a slot's reuse (three deep), so unload waits for the
 * count rather than for a fixed number of barriers (ts_table_quiesce()).
 */
static atomic_t ts_rcu_pending = ATOMIC_INIT(0);

static void ts_rcu_queue(struct rcu_head *head, rcu_callback_t fn)
{
	atomic_inc(&ts_rcu_pending);
	ts_call_rcu(head, fn);
}

/**
 * ts_table_quiesce() - wait for the table's RCU callbacks, chains included
 *
 * Context: module unload, or a failed load, with nothing left to queue
 * more than the chains already queued; may sleep.
 */
void ts_table_quiesce(void)
{
	do {
		rcu_barrier();
	} while (atomic_read(&ts_rcu_pending));
}

static void ts_slot_reuse(struct rcu_head *head)
{
	struct ts_slot *s = container_of(head, struct ts_slot, rcu);
	unsigned int idx = s - ts_slots;
	unsigned long irqflags;

	/* No probe or reader can hold the slot any more: empty it. */
	ts_pub_reset(&ts_pub[s->entry]);
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	ts_index_free(&ts_index, s->way);
	ts_entry_free_locked(s->entry);
	ts_free[ts_nr_free++] = idx;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	atomic_dec(&ts_rcu_pending);
}

/*
 * A grace period after @s's entry moved (ts_entry_move_locked()): no
 * probe or reader holds the entry it left any more.  Empty and free it.
 * An entry a second move left meanwhile waits for a grace period from
 * now, which covers every reader of it; then, if the slot was released
 * meanwhile, its reuse, which waited for this, follows a grace period
 * after.
 */
static void ts_entry_retire(struct rcu_head *head)
{
	struct ts_slot *s = container_of(head, struct ts_slot, rcu);
	unsigned long irqflags;
	bool again, reuse;

	ts_pub_reset(&ts_pub[s->retired]);
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	ts_entry_free_locked(s->retired);
	s->retired = s->retired_next;
	s->retired_next = TS_INDEX_NONE;
	again = s->retired != TS_INDEX_NONE;
	reuse = !again && !s->task;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	if (again)
		ts_rcu_queue(&s->rcu, ts_entry_retire);
	else if (reuse)
		ts_rcu_queue(&s->rcu, ts_slot_reuse);
	atomic_dec(&ts_rcu_pending);
}

/*
 * Move @s's entry into @owner's pages (NULL: anyone's), the word and
 * totals copied whole.  The caller makes sure that nothing writes them
 * meanwhile (ts_entry_claim(), ts_exec_leave_scope()).  Readers that
 * located the old entry see its gen change, and locate again; the index
 * points at the new one before the old is released.  The old one is
 * freed a grace period later: the caller queues ts_entry_retire() on
 * @s->rcu, after dropping ts_lock, if this returns 1; with 0 one is
 * queued already, and frees it after the next.  -EAGAIN if @s moved
 * twice within a grace period, -ENOSPC if @owner has no room.
 */
static int ts_entry_move_locked(struct ts_slot *s, struct ts_owner *owner)
{
	u32 from = s->entry, to;
	struct ts_pub *f, *n;
	unsigned int i;

	if (s->retired_next != TS_INDEX_NONE)
		return -EAGAIN;
	if (!ts_entry_alloc_locked(owner, &to))
		return -ENOSPC;
	f = &ts_pub[from];
	n = &ts_pub[to];
	ts_word_store(&n->word, ts_word_load(&f->word));
	ts_u64_store(&n->start_ns, ts_u64_load(&f->start_ns));
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		ts_u64_store(&n->state_ns[i], ts_u64_load(&f->state_ns[i]));
	WRITE_ONCE(ts_entry_slot[to], s - ts_slots);
	ts_pub_take(n, READ_ONCE(f->tid));
	smp_wmb();	/* the entry and its slot, then the index */
	ts_index_set(&ts_index, s->way, to);
	WRITE_ONCE(s->entry, to);
	ts_pub_release(f);
	if (s->retired == TS_INDEX_NONE) {
		s->retired = from;
		return 1;
	}
	s->retired_next = from;
	return 0;
}

/**
 * ts_entry_claim() - bring a thread's entry into a scoped descriptor's pages
 * @t: the thread, which the descriptor sees
 * @owner: the descriptor's
 * @seen: ts_setid_execs_now() before the descriptor decided it sees @t
 *
 * For a scoped LOCATE: move @t's entry into @owner's pages, where its
 * mapping shows it, if nothing can write the entry while it moves.  Only
 * the scheduler's own events for @t write it (the probes), and none can
 * happen here when:
 *
 *  - @t is current: interrupts are off, so it cannot switch, and a
 *    wakeup of current (ttwu's p == current path, or a remote
 *    ttwu_runnable()) finds RUNNING in its word, which the switch-in
 *    wrote, and writes nothing (ts_pub_set());
 *  - @t sleeps: its pi_lock is held, which try_to_wake_up() takes before
 *    anything else and holds while it fires sched_waking and changes
 *    __state to TASK_WAKING, and @t is in neither TASK_RUNNING nor
 *    TASK_WAKING (a wakeup queued on another CPU's list fires
 *    sched_wakeup there without pi_lock, in that state), off its run
 *    queue (on_rq: also a 6.12 delayed dequeue, and 7.x's proxy
 *    execution's blocked tasks, which stay queued), and off its CPU
 *    (on_cpu, read with acquire: its switch-out's probe, which runs
 *    before finish_task() clears on_cpu, is done).  The reads are
 *    ordered as try_to_wake_up() orders them (6.1 kernel/sched/core.c).
 *
 * The next event's probe looks the index up after this (it follows the
 * unlock of pi_lock, or is current's own), so it writes the new entry.
 * A thread running on another CPU, or waiting for one, cannot move now.
 *
 * Context: process context, under rcu_read_lock(); takes @t's pi_lock
 * and ts_lock.
 * A set-id exec since @seen (anyone's: they are rare) refuses the move,
 * as @t may have left the scope since it was looked at; an exec after
 * the move finds the entry here and moves it out again.  A move into
 * pages is only ever this, a first in a grace period: a second waits.
 *
 * Return: 0 if @t's entry is in @owner's pages now, -EAGAIN if it cannot
 * move now, -ENOSPC if @owner has no room, -ESRCH if @t is not tracked.
 */
int ts_entry_claim(struct task_struct *t, struct ts_owner *owner,
		   unsigned long seen)
{
	struct ts_slot *s = NULL;
	unsigned long irqflags;
	bool moved = false;
	int ret = -EAGAIN;

	raw_spin_lock_irqsave(&t->pi_lock, irqflags);
	if (t != current) {
		unsigned int state;

		smp_mb__after_spinlock();
		state = ts_task_state(t);
		if (state == TASK_RUNNING || state == TASK_WAKING)
			goto out;
		smp_rmb();	/* as try_to_wake_up(): __state, then on_rq */
		if (READ_ONCE(t->on_rq))
			goto out;
		smp_rmb();	/* on_rq, then on_cpu */
		if (ts_task_on_cpu_acquire(t))
			goto out;
	}
	raw_spin_lock(&ts_lock);
	s = ts_lookup(t);
	if (!s) {
		ret = -ESRCH;
	} else if (ts_entry_owner(s) == owner) {
		ret = 0;
	} else if (seen == ts_setid_execs && s->retired == TS_INDEX_NONE) {
		ret = ts_entry_move_locked(s, owner);
		moved = ret == 1;
		if (ret > 0)
			ret = 0;
	}
	raw_spin_unlock(&ts_lock);
out:
	raw_spin_unlock_irqrestore(&t->pi_lock, irqflags);
	/* A release meanwhile left the slot's reuse to ts_entry_retire(). */
	if (moved)
		ts_rcu_queue(&s->rcu, ts_entry_retire);
	return ret;
}


/**
 * ts_exec_leave_scope() - take an exec'd thread out of a scoped mapping
 * @t: current, which has just exec'd a program (sched_process_exec), or
 *     is exiting with its entry in a scoped descriptor's pages
 *     (sched_process_exit: an exec that failed after its new ids, and
 *     never reached sched_process_exec)
 * @secure: the exec's bprm->secureexec (file capabilities with
 *          fs.suid_dumpable=1 leave the ids and dumpability alone)
 * @exiting: from sched_process_exit, where the mm is gone: the ids alone
 *           decide, and nothing is counted
 *
 * An exec that left current not dumpable or with ids that differ (a
 * set-user-ID or set-group-ID program, or file capabilities: 6.1
 * begin_new_exec() and commit_creds()) is counted in ts_setid_execs,
 * under ts_lock, its ids and dumpability stored before the count
 * (release).  And a thread whose entry is in a scoped descriptor's pages
 * and that is now not dumpable, or whose ids are not all the opener's
 * (the descriptor's scope, scope.c, would not see it), leaves its
 * mapping: its entry moves to a page no descriptor holds, by
 * ts_entry_move_locked(), which is safe for current with interrupts off
 * (ts_entry_claim()).  A plain exec stays.  If no entry is free
 * elsewhere (a full table) the thread is untracked rather than shown.
 * The window between the exec's new ids and this probe has no
 * tracepoint: the entry shows the thread's state through it.
 *
 * Context: the sched_process_exec and sched_process_exit probes,
 * preemption disabled; takes ts_lock.
 */
void ts_exec_leave_scope(struct task_struct *t, bool secure, bool exiting)
{
	const struct cred *c = current_cred();
	bool setid, moved = false, gone = false;
	struct ts_owner *owner;
	unsigned long irqflags;
	struct ts_slot *s;
	int ret;

	setid = !exiting && (secure || !ts_current_dumpable() ||
			     !ts_cred_is(c, c->uid, c->gid));
	s = ts_lookup(t);
	/* Only current moves its own entry: a filter, decided again below. */
	if (!setid && !(s && ts_entry_scoped(s)))
		return;
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	if (setid)	/* after the ids: pairs with ts_setid_execs_now() */
		smp_store_release(&ts_setid_execs, ts_setid_execs + 1);
	s = ts_lookup(t);
	/* Out of a scoped log's scope: its exits are not logged from now. */
	if (setid && s && s->proc != TS_INDEX_NONE) {
		struct ts_proc *rec = &ts_slots[s->proc].rec;

		if (rec->exits && rec->exits->scoped)
			ts_exits_drop_locked(rec);
	}
	owner = s ? ts_entry_owner(s) : NULL;
	if (owner && (setid || !ts_cred_is(c, owner->uid, owner->gid))) {
		ret = ts_entry_move_locked(s, NULL);
		moved = ret == 1;
		if (ret < 0 && !exiting)
			gone = ts_release_locked(s, t);
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	if (moved)
		ts_rcu_queue(&s->rcu, ts_entry_retire);
	if (gone)
		ts_rcu_queue(&s->rcu, ts_slot_reuse);
}

/**
 * ts_untrack() - stop tracking a thread
 * @t: the thread
 * @owner: NULL for any slot, else only a slot this scoped descriptor owns
 *
 * Stop tracking @t.  Called when the task is freed (sched_process_free)
 * and through the device.  The slot is unlinked at once and reused a
 * grace period later.
 *
 * Context: process context, or the sched_process_free probe (an RCU
 * callback); takes ts_lock.
 * Return: whether @t was tracked (and @owner's).
 */
bool ts_untrack(struct task_struct *t, const struct ts_owner *owner)
{
	unsigned long irqflags;
	struct ts_slot *s;
	bool reuse = false;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(t);
	if (s && owner && s->owner != owner)
		s = NULL;
	if (s)
		reuse = ts_release_locked(s, t);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	if (reuse)
		ts_rcu_queue(&s->rcu, ts_slot_reuse);
	return s;
}

/**
 * ts_untrack_owned() - end what a scoped descriptor tracked
 * @owner: its scope, being closed
 *
 * Untrack every slot @owner inserted, one hold of ts_lock each, after
 * refusing it any more (closing: a fork probe that follows inserts no
 * child for it).  The slots of its threads that ended went with them.
 *
 * Context: process context (the descriptor's release); may sleep.
 */
void ts_untrack_owned(struct ts_owner *owner)
{
	unsigned long irqflags;
	bool reuse = false;
	struct ts_slot *s;

	for (;;) {
		raw_spin_lock_irqsave(&ts_lock, irqflags);
		owner->closing = true;
		s = list_first_entry_or_null(&owner->owned, struct ts_slot,
					     owner_node);
		if (s)
			reuse = ts_release_locked(s, s->task);
		raw_spin_unlock_irqrestore(&ts_lock, irqflags);
		if (!s)
			break;
		if (reuse)
			ts_rcu_queue(&s->rcu, ts_slot_reuse);
		cond_resched();
	}
}

/**
 * ts_owned_by_user() - slots a scoped descriptor's user holds
 * @owner: the descriptor's
 *
 * Context: any.
 * Return: the slots all of that user's scoped descriptors inserted.
 */
unsigned int ts_owned_by_user(const struct ts_owner *owner)
{
	return READ_ONCE(*owner->user_nr);
}

/**
 * ts_track_existing() - track every thread that exists (track_all)
 * @probes_since: ktime_get_ns() before the probes were registered
 *
 * Track every thread that exists, for track_all.  The probes are
 * registered first (at @probes_since, ktime_get_ns()), so a thread
 * created meanwhile is tracked by the task_newtask probe (ts_track() is
 * idempotent) and a thread freed meanwhile is released by the free probe.
 *
 * Context: module load, process context; may sleep (a grace period).
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
	for_each_process(g) {
		/* The leader first: its slot holds the process's record. */
		if (ts_track(g, 0, NULL, 0) && g->start_time < probes_since)
			atomic_long_inc(&ts_nr_untracked);
		for_each_thread(g, t)
			if (t != g && ts_track(t, 0, NULL, 0) &&
			    t->start_time < probes_since)
				atomic_long_inc(&ts_nr_untracked);
	}
	rcu_read_unlock();
	upto = ts_inserts_now();
	synchronize_rcu();
	rcu_read_lock();
	for_each_process_thread(g, t)
		ts_snapshot(t, upto);
	rcu_read_unlock();
}

/**
 * ts_retid() - show a thread's new tid in its entry
 * @t: the thread, which exec gave its leader's tid
 *
 * exec by a non-leader thread gave @t its leader's tid (de_thread()): show
 * the new one in @t's entry, same entry and gen (the sched_process_exec
 * probe, and the sched_process_exit probe for an exec that failed after
 * de_thread()).  Under ts_lock, so that it cannot write a tid after
 * ts_untrack() cleared it; a released entry keeps tid 0.  Between
 * de_thread() and either probe the entry shows the old tid: that window
 * has no tracepoint (the uapi header says so).
 *
 * Context: the sched_process_exec and sched_process_exit probes; takes
 * ts_lock.
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

/**
 * ts_proc_exit_fold() - an ended process's totals, into its parent's record
 * @p: current, a thread of the process, which has exited it last
 *
 * When a process's last thread exits (sched_process_exit with the group's
 * live count at 0), its record ends: nothing is added to it from then on.
 * Its totals, complete but for the time its exiting threads spend after
 * the tracepoint (the rest of do_exit(): on 7.2 exit_mm() too), and its
 * own children's, are added to the children_ns of the record of its
 * parent process at that moment (real_parent: an orphan's is init or a
 * subreaper), if that is tracked with totals and has not ended itself (a
 * parent whose last thread exited, not yet reparenting its children);
 * parent_start_ns then names that record.  Once per record: two threads
 * exiting together may both see the count at 0.  The parent may read
 * them before it reaps the child: the uapi's children_ns, for `taskstate
 * run`.  The walk of the members is one hold of ts_lock (docs/design.md).
 *
 * Context: the sched_process_exit probe; takes ts_lock.
 */
void ts_proc_exit_fold(struct task_struct *p)
{
	u64 t[TASKSTATE_MAP_NR_TOTALS];
	struct task_struct *parent;
	struct ts_slot *s, *h, *ps, *m;
	unsigned long irqflags;
	unsigned int i;
	u64 now;

	rcu_read_lock();
	parent = READ_ONCE(rcu_dereference(p->real_parent)->group_leader);
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(p);
	if (!s || s->proc == TS_INDEX_NONE)
		s = ts_lookup(READ_ONCE(p->group_leader));
	if (!s || s->proc == TS_INDEX_NONE)
		goto out;
	h = &ts_slots[s->proc];
	if (h->rec.ended)
		goto out;
	h->rec.ended = true;
	ps = ts_lookup(parent);
	if (!ps || ps->proc == TS_INDEX_NONE || ps->proc == s->proc)
		goto out;
	ps = &ts_slots[ps->proc];
	if (ps->rec.ended)
		goto out;
	now = ts_proc_now_locked();
	memcpy(t, h->rec.exited_ns, sizeof(t));
	ts_proc_add(t, h, now, true);
	list_for_each_entry(m, &h->rec.members, proc_node)
		ts_proc_add(t, m, now, true);
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		ps->rec.children_ns[i] =
			ts_add_sat(ps->rec.children_ns[i],
				   ts_add_sat(t[i], h->rec.children_ns[i]));
	ps->rec.nr_children += 1 + h->rec.nr_children;
	h->rec.parent_start_ns = ps->rec.start_ns;
out:
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	rcu_read_unlock();
}

/*
 * Thread exit logs (uapi "DOC: Thread exits").  A process's record points
 * at the log of the descriptor whose TRACK asked (ts_exits_attach()), a
 * process started from it at the same one (ts_exits_inherit_locked()),
 * and its threads write their totals there as they exit
 * (ts_exits_log()).  Every pointer to a log, its count of them and its
 * ring are under ts_lock: the pointer goes with the record (handed over
 * by an exec, cleared at its end, ts_proc_leave_locked()), and a log is
 * freed only after its close cleared every one left (ts_exits_free()).
 * No allocation but the log's own, at the TRACK that asks for it.
 */
unsigned int ts_nr_exits;	/* logs that exist: the exit probe's filter */

/**
 * ts_exits_new() - a log of thread exits, for a descriptor
 * @owner: the scoped descriptor's (its exits are its scope's only), or
 *         NULL for a privileged one
 *
 * Its tids are in the caller's pid namespace.
 *
 * Context: process context, may sleep; takes ts_lock.
 * Return: the log, or NULL without memory.
 */
struct ts_exits *ts_exits_new(const struct ts_owner *owner)
{
	struct ts_exits *x = kvzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	unsigned long irqflags;

	if (!x)
		return NULL;
	x->ns = get_pid_ns(task_active_pid_ns(current));
	if (owner) {
		x->scoped = true;
		x->uid = owner->uid;
		x->gid = owner->gid;
	}
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	WRITE_ONCE(ts_nr_exits, ts_nr_exits + 1);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	return x;
}

/**
 * ts_exits_free() - close a log
 * @x: the log, whose descriptor is being closed
 *
 * Refuse it to new processes, then clear the records that point at it,
 * TS_PROC_CHUNK slots per hold of ts_lock, and free it.
 *
 * Context: process context, may sleep; takes ts_lock.
 */
void ts_exits_free(struct ts_exits *x)
{
	unsigned long irqflags;
	unsigned int i = 0, end;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	x->closing = true;
	while (x->nr_records && i < ts_hwm) {
		for (end = min(i + TS_PROC_CHUNK, ts_hwm); i < end; i++) {
			struct ts_slot *s = &ts_slots[i];

			if (s->proc == i && s->rec.exits == x)
				ts_exits_drop_locked(&s->rec);
		}
		raw_spin_unlock_irqrestore(&ts_lock, irqflags);
		cond_resched();
		raw_spin_lock_irqsave(&ts_lock, irqflags);
	}
	WARN_ON_ONCE(x->nr_records);
	WRITE_ONCE(ts_nr_exits, ts_nr_exits - 1);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	put_pid_ns(x->ns);
	kvfree(x);
}

/**
 * ts_exits_attach() - log a tracked process's exits
 * @leader: its leader, found by the caller under rcu_read_lock()
 * @x: the log
 * @seen: for a scoped log, ts_setid_execs_now() before the caller
 *        decided its scope sees @leader
 *
 * A set-user-ID exec between that look and this attach would find no
 * pointer to clear (ts_exec_leave_scope()): so a scoped log attaches
 * only if no such exec happened since (the count, under ts_lock, as
 * ts_track() places entries), else the caller looks again.
 *
 * Context: process context, under rcu_read_lock(); takes ts_lock.
 * Return: 0; -ESRCH if @leader holds no record (not tracked, or the
 * module keeps no totals); -EBUSY if its record logs to another log;
 * -EAGAIN for a scoped log after a set-id exec since @seen.
 */
int ts_exits_attach(struct task_struct *leader, struct ts_exits *x,
		    unsigned long seen)
{
	unsigned long irqflags;
	struct ts_slot *s;
	int ret = 0;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(leader);
	if (x->scoped && ts_setid_execs != seen)
		ret = -EAGAIN;
	else if (!s || s->proc != s - ts_slots)
		ret = -ESRCH;
	else if (s->rec.exits && s->rec.exits != x)
		ret = -EBUSY;
	else if (!s->rec.exits) {
		s->rec.exits = x;
		x->nr_records++;
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	return ret;
}

/**
 * ts_exits_log() - an exiting thread's totals, into its process's log
 * @p: current, at sched_process_exit
 *
 * If @p's record logs its exits, one entry: @p's part of the record's
 * totals, up to now (ts_proc_add()), as the record's fold counts it
 * (ts_proc_exit_fold()).  A full log counts it lost.  A scoped log takes
 * only threads whose ids are all its opener's.
 *
 * Context: the sched_process_exit probe; takes ts_lock.
 */
void ts_exits_log(struct task_struct *p)
{
	struct taskstate_exit *e;
	unsigned long irqflags;
	struct ts_exits *x;
	struct ts_slot *s, *h;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	s = ts_lookup(p);
	if (!s || s->proc == TS_INDEX_NONE)
		goto out;
	h = &ts_slots[s->proc];
	x = h->rec.exits;
	if (!x || (x->scoped && !ts_cred_is(current_cred(), x->uid, x->gid)))
		goto out;
	if (x->len == TASKSTATE_EXITS_LOG) {
		x->lost++;
		goto out;
	}
	e = &x->ring[(x->head + x->len++) % TASKSTATE_EXITS_LOG];
	memset(e, 0, sizeof(*e));
	ts_proc_add(e->state_ns, s, ts_proc_now_locked(), true);
	e->tid = task_pid_nr_ns(p, x->ns);
	e->tgid = task_tgid_nr_ns(p, x->ns);
	e->proc_start_ns = h->rec.start_ns;
	e->since_ns = s->join_ns;
	/* current's own comm; a write to it (/proc) is under task_lock(). */
	data_race(memcpy(e->comm, p->comm, sizeof(e->comm)));
	e->comm[sizeof(e->comm) - 1] = '\0';
out:
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/**
 * ts_exits_take() - take the oldest entries out of a log
 * @x: the log
 * @out: room for @n entries
 * @n: how many at most
 * @lost: set to the exits lost since the last take, then reset
 *
 * Context: process context; takes ts_lock.
 * Return: how many entries @out got.
 */
unsigned int ts_exits_take(struct ts_exits *x, struct taskstate_exit *out,
			   unsigned int n, u64 *lost)
{
	unsigned long irqflags;
	unsigned int i;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	n = min(n, x->len);
	for (i = 0; i < n; i++)
		out[i] = x->ring[(x->head + i) % TASKSTATE_EXITS_LOG];
	x->head = (x->head + n) % TASKSTATE_EXITS_LOG;
	x->len -= n;
	*lost = x->lost;
	x->lost = 0;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	return n;
}

/**
 * ts_exits_lose() - count entries taken and not delivered as lost
 * @x: the log
 * @n: how many (the caller could not copy them out, nor the lost count
 *     ts_exits_take() gave it)
 *
 * Context: process context; takes ts_lock.
 */
void ts_exits_lose(struct ts_exits *x, u64 n)
{
	unsigned long irqflags;

	raw_spin_lock_irqsave(&ts_lock, irqflags);
	x->lost += n;
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
}

/**
 * ts_proc_read() - a process's totals, for TASKSTATE_IOC_PROCESS
 * @leader: the process's leader, found by its pid
 * @p: the answer; the caller zeroed its out fields
 *
 * TASKSTATE_IOC_PROCESS: the totals of the process led by @leader (found
 * by its pid, under rcu_read_lock()), into the out fields of @p, which
 * the caller zeroed.  One look at the record (uapi: "a thread is counted
 * live or exited, never both, never neither"), under ts_lock, which the
 * fork and free probes of every CPU take: so the walk of the process's
 * threads drops it (and turns interrupts back on, and may sleep) after
 * each TS_PROC_CHUNK of them, whatever the process's size, and the
 * record keeps where it paused (rec.walk_pos) and which walk it is
 * (rec.walk; each thread counted is stamped with it, ts_slot.walked).
 * Meanwhile:
 *  - a thread that joins goes in at the list's head, stamped as counted
 *    (ts_proc_join_locked()): it joined after @p's now_ns, and the walk
 *    ends with the members it began with, however fast threads join;
 *  - a thread that leaves before the walk reached it takes its totals
 *    into exited_ns, which this answer copied before; so they are also
 *    kept for the walk (walk_missed_ns, ts_proc_leave_locked()), which
 *    counts them as a live thread's, up to its leave;
 *  - a thread that leaves after it was counted was counted live, once;
 *  - the thread the walk would count next moves the pause to the one
 *    after it as it leaves;
 *  - the holder leaving (the process's end, UNTRACK, or exec by another
 *    thread, which hands the record over) or a new record on its slot
 *    sets rec.walk to 0, and the walk starts again; after TS_PROC_TRIES
 *    restarts it gives up (-EAGAIN).
 * No slot memory is ever freed (the table is allocated at load), and
 * h->rec.walk is only set, to a number no walk had before, by the one
 * walk at a time (ts_proc_mutex): so a walk that finds it unchanged
 * after a pause finds its record and its place, even if the holder's
 * slot was released and reused meanwhile (that wrote 0 there).  @leader
 * is held by the caller, so its lookup cannot meet another task.  A hold
 * lasts at most TS_PROC_CHUNK threads' reads: 164 to 1,140 us in TCG
 * guests on 6.1 amd64 (their vCPUs preempted by the host included),
 * where one hold over a 10,000-thread process took 3.9 ms; measured by
 * ts_proc process_walk_holds_the_lock_for_a_chunk.
 *
 * A live thread's time in its current state is counted up to now, and a
 * probe may be about to end that state at a time read a moment before
 * now (its clock read, then its store, on another CPU): the next look
 * then finds less in that state than this one counted, by that moment.
 * So each state's answer is kept from going below the last one given
 * (shown_ns), as cputime_adjust() keeps a process's utime and stime
 * from going back; the true count passes it again within that moment.
 *
 * Context: process context, may sleep; the caller holds a reference to
 * @leader.  Takes ts_proc_mutex, and ts_lock, dropped between chunks.
 * Return: 0, -ERESTARTSYS on a signal while another walk runs, or
 * -EAGAIN (above).
 */
int ts_proc_read(struct task_struct *leader, struct taskstate_process *p)
{
	unsigned int i, held = 0, tries = 0;
	struct list_head *pos;
	unsigned long irqflags;
	struct ts_slot *s, *h, *m;
	u64 now, w;

	if (mutex_lock_interruptible(&ts_proc_mutex))
		return -ERESTARTSYS;
retry:
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	ts_hook_proc_hold_begin();
	s = ts_lookup(leader);
	if (!s || s->proc == TS_INDEX_NONE)
		goto out_unlock;
	h = &ts_slots[s->proc];
	w = ++ts_proc_walks;
	h->rec.walk = w;
	memset(h->rec.walk_missed_ns, 0, sizeof(h->rec.walk_missed_ns));
	h->rec.walk_missed_nr = 0;
	now = ts_proc_now_locked();
	p->valid = 1;
	p->now_ns = now;
	p->nr_exited = h->rec.nr_exited;
	p->start_ns = h->rec.start_ns;
	p->nr_threads = 1;
	memcpy(p->exited_ns, h->rec.exited_ns, sizeof(p->exited_ns));
	memcpy(p->children_ns, h->rec.children_ns, sizeof(p->children_ns));
	p->nr_children = h->rec.nr_children;
	p->parent_start_ns = h->rec.parent_start_ns;
	memcpy(p->state_ns, h->rec.exited_ns, sizeof(p->state_ns));
	ts_proc_add(p->state_ns, h, now, false);
	held = 1;
	pos = h->rec.members.next;
	while (pos != &h->rec.members) {
		if (held == TS_PROC_CHUNK) {
			h->rec.walk_pos = pos;
			ts_hook_proc_hold_end(held);
			raw_spin_unlock_irqrestore(&ts_lock, irqflags);
			cond_resched();
			raw_spin_lock_irqsave(&ts_lock, irqflags);
			ts_hook_proc_hold_begin();
			held = 0;
			if (h->rec.walk != w) {
				ts_hook_proc_hold_end(held);
				raw_spin_unlock_irqrestore(&ts_lock, irqflags);
				*p = (struct taskstate_process) {
					.size = p->size, .pid = p->pid };
				if (tries++ == TS_PROC_TRIES) {
					mutex_unlock(&ts_proc_mutex);
					return -EAGAIN;
				}
				goto retry;
			}
			pos = h->rec.walk_pos;
			continue;
		}
		m = list_entry(pos, struct ts_slot, proc_node);
		m->walked = w;
		ts_proc_add(p->state_ns, m, now, false);
		p->nr_threads++;
		held++;
		pos = pos->next;
	}
	h->rec.walk = 0;
	p->nr_threads += h->rec.walk_missed_nr;
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++) {
		p->state_ns[i] = ts_add_sat(p->state_ns[i],
					    h->rec.walk_missed_ns[i]);
		if (p->state_ns[i] < h->rec.shown_ns[i])
			p->state_ns[i] = h->rec.shown_ns[i];
		h->rec.shown_ns[i] = p->state_ns[i];
	}
out_unlock:
	ts_hook_proc_hold_end(held);
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	mutex_unlock(&ts_proc_mutex);
	return 0;
}

/**
 * ts_view_slot() - what a reader shows about one slot
 * @idx: the slot
 * @ns: the reader's pid namespace
 * @v: the copy
 * @held: NULL, or where to put the slot's task, held (get_task_struct()),
 *        when the answer is true: the caller puts it
 *
 * Copy what a reader shows about slot @idx.  Under ts_lock the slot's task
 * cannot be freed (the free probe, which runs before the task_struct is
 * put, waits for the lock), so its pid and comm can be read.
 *
 * Context: process context; takes ts_lock.
 * Return: false for a free slot, a task not visible in @ns, or no word yet.
 */
bool ts_view_slot(unsigned int idx, struct pid_namespace *ns,
		  struct ts_view *v, struct task_struct **held)
{
	struct task_struct *t;
	unsigned long irqflags;
	bool shown;

	memset(&v->totals, 0, sizeof(v->totals));
	raw_spin_lock_irqsave(&ts_lock, irqflags);
	t = ts_slots[idx].task;
	if (t) {
		v->tid = task_pid_nr_ns(t, ns);
		v->tgid = task_tgid_nr_ns(t, ns);
		/* Totals not readable now: the word, invalid totals (uapi). */
		if (!ts_totals ||
		    !ts_pub_read(ts_slot_pub(&ts_slots[idx]), &v->word,
				 &v->totals)) {
			v->word = ts_word_load(&ts_slot_pub(&ts_slots[idx])->word);
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
		/* Not freed under us: its free probe takes ts_lock. */
		if (held)
			get_task_struct(t);
	}
	raw_spin_unlock_irqrestore(&ts_lock, irqflags);
	/*
	 * tid or tgid 0: gone from @ns's view, or being released (as in
	 * SAMPLE, __unhash_process() detaches the PID link before the TGID
	 * one, so a last thread can briefly have a tid and tgid 0).  Word 0:
	 * no state yet (TRACK's snapshot or a new thread's first wakeup is
	 * still to come), left out as SAMPLE leaves it out.
	 */
	shown = t && v->tid && v->tgid && v->word;
	if (held) {
		if (t && !shown)
			put_task_struct(t);
		*held = shown ? t : NULL;
	}
	return shown;
}

/**
 * ts_slots_used() - the slots a reader scans
 *
 * Context: any.
 * Return: the high-water mark: no slot at or above it was ever used.
 */
unsigned int ts_slots_used(void)
{
	return READ_ONCE(ts_hwm);
}
