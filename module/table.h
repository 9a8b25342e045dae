/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracked-thread table: a fixed number of slots allocated at load,
 * found from a task through an RCU hash keyed by the task_struct pointer
 * (index.h).
 */
#ifndef TASKSTATE_TABLE_H
#define TASKSTATE_TABLE_H

#include <linux/cred.h>
#include <linux/sched.h>
#include "compat.h"
#include "entry.h"
#include "index.h"

/*
 * The slots one scoped descriptor (scope.c) inserted, and the pages of
 * entries it holds (its mapping, mmap.c), each charged to its user, whose
 * counts all that user's descriptors share.  Under ts_lock.
 */
struct ts_owner {
	struct list_head owned;		/* ts_slot.owner_node */
	struct list_head pages;		/* ts_page.node, in view order */
	unsigned int nr_pages;		/* on pages: its mapping's pages */
	unsigned int *user_nr;		/* the user's slots, all descriptors */
	unsigned int *user_pages;	/* the user's pages, all descriptors */
	kuid_t uid;			/* the opener's, for the exec probe */
	kgid_t gid;
	bool closing;			/* inserts refused: being closed */
};

/* Entries in a page of the mapping. */
#define TS_PAGE_ENTRIES		(PAGE_SIZE / sizeof(struct ts_pub))

/*
 * A descriptor's log of thread exits (uapi "DOC: Thread exits"), which
 * records point at (ts_proc.exits).  All but the first four fields, set
 * at its creation, under ts_lock.
 */
struct ts_exits {
	struct pid_namespace *ns;	/* its tids are in this one */
	kuid_t uid;			/* a scoped descriptor's opener's */
	kgid_t gid;
	bool scoped;
	bool closing;			/* no record may point here again */
	unsigned int nr_records;	/* records pointing here */
	unsigned int head;		/* the ring's oldest entry */
	unsigned int len;		/* and how many it holds */
	u64 lost;			/* exits it had no room for */
	struct taskstate_exit ring[TASKSTATE_EXITS_LOG];
};

/* The slot's task was tracked with its future threads and children. */
#define TS_SLOT_INHERIT		0x1

/*
 * A process's record (uapi "DOC: Process totals"), in its leader's slot:
 * the other threads that count in it, and the totals of those that left.
 * Under ts_lock.
 */
struct ts_proc {
	struct list_head members;	/* their slots' proc_node */
	u64 exited_ns[TASKSTATE_MAP_NR_TOTALS];
	u64 shown_ns[TASKSTATE_MAP_NR_TOTALS];	/* last answered */
	u64 nr_exited;
	u64 start_ns;		/* when it began, uapi start_ns */
	/*
	 * A PROCESS walk in progress (ts_proc_read()), paused between two
	 * holds of ts_lock: its number (0: none), the member it counts
	 * next, and what members that left before it reached them took
	 * with them (ts_proc_leave_locked()).
	 */
	u64 walk;
	struct list_head *walk_pos;
	u64 walk_missed_ns[TASKSTATE_MAP_NR_TOTALS];
	u64 walk_missed_nr;
	/*
	 * Processes that ended as its children (uapi children_ns), each
	 * with its own children's, added when its last thread exited
	 * (ts_proc_exit_fold()); whether this one's last thread exited
	 * (ended: nothing is added to it from then on), and the start_ns
	 * of the record it was added to, 0 if none (uapi parent_start_ns).
	 */
	u64 children_ns[TASKSTATE_MAP_NR_TOTALS];
	u64 nr_children;
	u64 parent_start_ns;
	bool ended;
	struct ts_exits *exits;	/* its threads' exits go there, or NULL */
};

/*
 * Kernel-private half of a slot, which no switch touches.  The public
 * half, the word and its owner's identity, lives at the same index in
 * ts_pub[], a page-backed array mapped read-only into readers.
 */
struct ts_slot {
	struct task_struct *task;	/* owner, NULL while free; ts_lock */
	u32 way;			/* in ts_index, until the slot's reuse */
	/*
	 * Its entry in ts_pub[], which the index maps the task to; it moves
	 * into a scoped descriptor's pages (ts_entry_claim()) and out again
	 * (ts_exec_leave_scope()).  The one it left, retired, is freed a
	 * grace period later, with rcu, and until then the slot's own reuse
	 * waits; one left by a second move meanwhile waits in retired_next
	 * for the grace period after (TS_INDEX_NONE: none).  ts_lock.
	 */
	u32 entry;
	u32 retired;
	u32 retired_next;
	unsigned int flags;		/* TS_SLOT_*, under ts_lock */
	u64 ticket;			/* its insert's number, ts_snapshot() */
	struct rcu_head rcu;		/* defers reuse past lockless readers */
	/*
	 * The slot holding its process's record: itself for a leader,
	 * TS_INDEX_NONE for none; ts_lock.  A member is on that record's
	 * members through proc_node.
	 */
	u32 proc;
	struct list_head proc_node;
	/*
	 * For the records, which count a thread from when it joined one
	 * (join_ns, ts_proc_now_locked(): its insert, or its join if it was
	 * tracked before): the part of its totals from before then, which
	 * they leave out.  That is what it had at a join, or the time
	 * before its insert that ts_snapshot()'s estimate put into its
	 * first word's state.  ts_lock.
	 */
	u64 join_ns;
	u64 base_ns[TASKSTATE_MAP_NR_TOTALS];
	u64 walked;			/* the last walk that counted it */
	struct ts_proc rec;		/* while proc is this slot */
	/*
	 * The scoped descriptor whose TRACK (or inheritance from a slot it
	 * owned) inserted the slot, on its list of them, or NULL: then no
	 * scoped descriptor's UNTRACK or close ends it (scope.c).  ts_lock.
	 */
	struct ts_owner *owner;
	struct list_head owner_node;
};

extern struct ts_slot *ts_slots;
extern struct ts_pub *ts_pub;
extern u32 *ts_entry_slot;
extern struct ts_index ts_index;
extern unsigned int ts_nr_slots;
extern unsigned int ts_nr_tracked;
extern atomic_long_t ts_nr_untracked;

/**
 * ts_lookup() - a task's slot
 * @t: the task
 *
 * Lockless lookup, for the probes (preemption disabled) and readers
 * (rcu_read_lock()).  A slot found here stays this task's until a grace
 * period after it is released.
 *
 * Context: the probes (preemption disabled), or under rcu_read_lock() or
 * ts_lock.
 * Return: the slot, or NULL if @t is not tracked.
 */
static __always_inline struct ts_slot *ts_lookup(const struct task_struct *t)
{
	u32 idx = ts_index_find(&ts_index, t);

	/*
	 * The index holds the entry; its slot is stored before the index
	 * points at it (ts_insert_locked(), ts_entry_move_locked()), and
	 * this load depends on that one.  A retired entry keeps its slot.
	 */
	return idx == TS_INDEX_NONE ? NULL :
	       &ts_slots[READ_ONCE(ts_entry_slot[idx])];
}

/**
 * ts_slot_pub() - a slot's public half
 * @s: the slot
 *
 * Context: any.
 * Return: its entry in ts_pub[].
 */
static __always_inline struct ts_pub *ts_slot_pub(const struct ts_slot *s)
{
	return &ts_pub[READ_ONCE(s->entry)];
}

/**
 * ts_pub_take() - give an entry to a new owner
 * @p: the entry
 * @tid: the owner's tid
 *
 * Give entry @p to a new owner, under ts_lock, before the slot is
 * published to the probes.  The word is 0 (reset a grace period after
 * the last release).  The read protocol in the uapi header relies on
 * this order: tid (and the reset word) before the odd gen.
 *
 * Context: under ts_lock.
 */
static inline void ts_pub_take(struct ts_pub *p, u32 tid)
{
	WRITE_ONCE(p->tid, tid);
	smp_wmb();	/* pairs with the reader's acquire load of gen */
	WRITE_ONCE(p->gen, p->gen + 1);
}

/**
 * ts_pub_release() - take an entry from its owner
 * @p: the entry
 *
 * The owner is no longer tracked, under ts_lock: readers that located it
 * see a new gen from now on.  The even gen is stored before the tid is
 * cleared and before the word is reset (ts_slot_reuse(), a grace period
 * later, which orders it after this), so a reader that sees either of
 * those sees the new gen on its second gen load.
 *
 * Context: under ts_lock.
 */
static inline void ts_pub_release(struct ts_pub *p)
{
	WRITE_ONCE(p->gen, p->gen + 1);
	smp_wmb();	/* pairs with the reader's fence before its 2nd load */
	WRITE_ONCE(p->tid, 0);
}

int ts_table_init(unsigned int nr_slots);
void ts_table_exit(void);
int ts_track(struct task_struct *t, unsigned int flags,
	     struct ts_owner *owner, unsigned long seen);
unsigned long ts_setid_execs_now(void);
void ts_track_child(struct task_struct *child, struct task_struct *parent,
		    bool all);
u64 ts_inserts_now(void);
void ts_snapshot(struct task_struct *t, u64 upto);
void ts_proc_join(struct task_struct *t, const struct ts_owner *owner);
bool ts_untrack(struct task_struct *t, const struct ts_owner *owner);
void ts_untrack_owned(struct ts_owner *owner);
unsigned int ts_owned_by_user(const struct ts_owner *owner);
void ts_owner_init(struct ts_owner *owner, unsigned int *user_nr,
		   unsigned int *user_pages, const struct cred *cred);
void ts_owner_pages_put(struct ts_owner *owner);
int ts_entry_claim(struct task_struct *t, struct ts_owner *owner,
		   unsigned long seen);
void ts_exec_leave_scope(struct task_struct *t, bool secure, bool exiting);
void ts_table_quiesce(void);
bool ts_entry_scoped(const struct ts_slot *s);
u32 ts_view_index(const struct ts_owner *owner, u32 e);
int ts_view_page(struct ts_owner *owner, unsigned long pgoff);
unsigned int ts_view_max_pages(void);
unsigned int ts_user_max(void);
unsigned int ts_unpriv_max(void);
void ts_track_existing(u64 probes_since);
void ts_retid(struct task_struct *t);
void ts_proc_exit_fold(struct task_struct *p);

extern unsigned int ts_nr_exits;

/*
 * The exit probe's filter, decided again under ts_lock (ts_exits_log()):
 * may @s's record log its exits?  Its proc is a slot index or none.
 */
static inline bool ts_exits_maybe(const struct ts_slot *s)
{
	u32 proc = READ_ONCE(s->proc);

	return READ_ONCE(ts_nr_exits) && proc != TS_INDEX_NONE &&
	       READ_ONCE(ts_slots[proc].rec.exits);
}
struct ts_exits *ts_exits_new(const struct ts_owner *owner);
void ts_exits_free(struct ts_exits *x);
int ts_exits_attach(struct task_struct *leader, struct ts_exits *x,
		    unsigned long seen);
void ts_exits_log(struct task_struct *p);
unsigned int ts_exits_take(struct ts_exits *x, struct taskstate_exit *out,
			   unsigned int n, u64 *lost);
void ts_exits_lose(struct ts_exits *x, u64 n);

/* What a reader may print about one slot, copied under the table lock. */
struct ts_view {
	pid_t tid;
	pid_t tgid;
	u64 word;
	struct taskstate_totals totals;	/* zero without ts_totals */
	char comm[TASK_COMM_LEN];
};

int ts_proc_read(struct task_struct *leader, struct taskstate_process *p);

bool ts_view_slot(unsigned int idx, struct pid_namespace *ns,
		  struct ts_view *v, struct task_struct **held);
unsigned int ts_slots_used(void);

#endif /* TASKSTATE_TABLE_H */
