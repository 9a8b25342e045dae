/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The public half of a slot: struct taskstate_map_entry of the uapi
 * header, field for field, what the mapping shows (module/mmap.c), and
 * the one way its word and per-state totals change.  Only what a reader
 * may see: no pointer, nothing of an earlier user of the memory
 * (vmalloc_user() zeroes it, ts_pub_reset() empties it before reuse).
 *
 * Separate from table.h so that the torture module can drive the real
 * write path (selftests/taskstate/torture).
 */
#ifndef TASKSTATE_ENTRY_H
#define TASKSTATE_ENTRY_H

#ifdef __KERNEL__
#include <asm/barrier.h>
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/types.h>
#endif
#include "word.h"

/*
 * tid: the owner's tid in the initial pid namespace, 0 once released;
 * exec can change it (de_thread()), ts_retid() follows.  gen: even while
 * free, odd while owned, bumped by ts_pub_take() and ts_pub_release().
 * start_ns and state_ns[]: the per-state totals, kept by ts_pub_set()
 * when ts_totals is on (TASKSTATE_MAP_F_TOTALS), zero otherwise.
 */
struct ts_pub {
	struct ts_word word;
	u32 tid;
	u32 gen;
	atomic64_t start_ns;
	atomic64_t state_ns[TASKSTATE_MAP_NR_TOTALS];
};

/*
 * The totals parameter (main.c): set once at load, before any probe.
 * ts_pub_set() tests it on every changed word, so the probes (probes.c
 * defines TS_TOTALS_KEY) test it as a static branch: a no-op with totals
 * on, a jump patched in at load with totals=0, where a test of the bool
 * is a load and a branch.  The other users of this header (the table's
 * snapshot, the torture module, bench/) test the bool.
 */
extern bool ts_totals;
#ifdef TS_TOTALS_KEY
#include <linux/jump_label.h>
DECLARE_STATIC_KEY_TRUE(ts_totals_key);
#define ts_totals_on()	static_branch_likely(&ts_totals_key)
#else
#define ts_totals_on()	likely(ts_totals)
#endif

/**
 * ts_pub_add() - add the old state's time to its total
 * @p: the entry
 * @old: the word being replaced
 * @total: its state's TASKSTATE_TOTAL_*
 * @now: the new word's time; moved back to since(@old) if it is earlier
 *
 * The word and its totals, one writer at a time.  The invariant readers
 * check (the proof is in the uapi header, "DOC: Per-state totals"):
 *
 *	start_ns != 0 and start_ns + sum(state_ns[]) == since(word)
 *							(mod 2^61)
 *
 * for every word but the empty one, whose totals are all zero.  Each
 * change adds to the old state's total exactly the time the since-time
 * advances (never less than 0: a total only grows), stores it, then the
 * word, the two stores ordered by smp_wmb() (free on x86, dmb ishst on
 * arm64).  start_ns is stored once per owner, by whoever wrote the first
 * word.  The writer is the total's only writer, so it adds without an
 * atomic read-modify-write (ts_u64_add()).
 *
 * A clock that reads a little behind the old since-time (the word was
 * written on another CPU, the snapshot's estimate) does not move the
 * time back: the change is stamped with the old since-time, adding 0.
 *
 * Context: the entry's one writer (ts_pub_set()).
 */
static __always_inline void ts_pub_add(struct ts_pub *p, u64 old,
				       unsigned int total, u64 *now)
{
	/*
	 * The difference mod 2^61 in the top bits: bit 60 is the sign bit.
	 * The old word's state bits are multiples of 2^61, so they shift
	 * out: no need to take the since-time out of @old first.
	 */
	u64 d = (*now - old) << (64 - TASKSTATE_TIME_BITS);
	atomic64_t *t = &p->state_ns[total];

	if (unlikely((s64)d < 0)) {	/* d > TASKSTATE_TIME_MASK >> 1 */
		d = 0;
		*now = taskstate_since_ns(old);
	}
	d >>= 64 - TASKSTATE_TIME_BITS;	/* d & TASKSTATE_TIME_MASK */
	ts_u64_add(t, d);
	smp_wmb();	/* the total before its word */
}

/**
 * ts_pub_first() - an owner's first word, and its start_ns
 * @p: the entry
 * @word: the first word
 *
 * The first word of an owner, from the empty one, by the probes or the
 * snapshot taken when tracking starts, which may race: only the
 * one whose cmpxchg fills the empty word stores start_ns, right after
 * (a reader that sees the word before start_ns sees the invariant fail
 * and retries).  A probe that loses the race continues from the word the
 * snapshot wrote.  Returns whether @word was written.
 *
 * Context: the probes or the snapshot, with interrupts off.
 * Return: whether @word was written.
 */
static inline bool ts_pub_first(struct ts_pub *p, u64 word)
{
	if (!ts_word_init(&p->word, word))
		return false;
	if (ts_totals_on())
		ts_u64_store(&p->start_ns, taskstate_since_ns(word));
	return true;
}

/**
 * ts_pub_set() - write a state at a time, with its totals
 * @p: the entry
 * @state: TASKSTATE_*
 * @now: CLOCK_BOOTTIME ns
 *
 * Write @state at @now unless the word holds it already (the time must
 * not move): the probes' only write.  The single writer of a live word
 * (probes.c says why), so the load-add-store needs no atomic.  The two
 * lockless paths that can meet on one word, a wakeup of current and a
 * remote ttwu_runnable() of the same task, both write RUNNING to a word
 * that already holds it (current's word is RUNNING outside __schedule():
 * the switch-in wrote it), so both skip: no total is added twice.
 *
 * Context: the probes: the entry's one writer (probes.c says why).
 */
static __always_inline void ts_pub_set(struct ts_pub *p, unsigned int state,
				       u64 now)
{
	u64 old = ts_word_load(&p->word);

	if (taskstate_state(old) == state)
		return;
	if (ts_totals_on()) {
		/* taskstate_total_of(), RUNNING to BLOCKED taken first. */
		unsigned int total = taskstate_state(old) - TASKSTATE_RUNNING;

		/* The empty word is 0, in none of them. */
		if (unlikely(total > TASKSTATE_BLOCKED - TASKSTATE_RUNNING)) {
			if (!old) {
				if (ts_pub_first(p, taskstate_pack(state, now)))
					return;
				/* The snapshot got there first: its word. */
				old = ts_word_load(&p->word);
				if (taskstate_state(old) == state)
					return;
			}
			total = taskstate_total_of(taskstate_state(old));
		}
		ts_pub_add(p, old, total, &now);
	}
	ts_word_store(&p->word, taskstate_pack(state, now));
}

/**
 * ts_pub_reset() - empty an entry for its next owner
 * @p: the entry, released a grace period ago
 *
 * A grace period after the release, nobody writes the entry any more:
 * empty the word and the totals for the next owner, whose take
 * (ts_pub_take(), under ts_lock, after this) orders them before its gen.
 *
 * Context: the slot's RCU callback.
 */
static inline void ts_pub_reset(struct ts_pub *p)
{
	unsigned int i;

	ts_word_store(&p->word, 0);
	ts_u64_store(&p->start_ns, 0);
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		ts_u64_store(&p->state_ns[i], 0);
}

/**
 * ts_pub_read() - a consistent read of the word and its totals
 * @p: the entry
 * @word: the word read
 * @t: the totals read
 *
 * A consistent read of the word and totals by the invariant above, for
 * the kernel's own readers (SAMPLE, LIST, debugfs), which hold the slot
 * (RCU or ts_lock) so need no gen: the word, smp_rmb() (pairing with
 * ts_pub_add()'s smp_wmb()), the totals, the check.  Returns false if
 * the check kept failing: a change landed in each read (they take
 * nanoseconds), or the first word's start_ns is not stored yet (it
 * follows the word at once, with interrupts off).
 *
 * Context: holding the slot: under rcu_read_lock() or ts_lock.
 * Return: true if @word and @t match; false if the check kept failing.
 */
static inline bool ts_pub_read(const struct ts_pub *p, u64 *word,
			       struct taskstate_totals *t)
{
	unsigned int i, tries;

	for (tries = 0; tries < 100; tries++) {
		*word = ts_word_load(&p->word);
		smp_rmb();	/* the word before its totals */
		t->start_ns = ts_u64_load(&p->start_ns);
		for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
			t->state_ns[i] = ts_u64_load(&p->state_ns[i]);
		if (taskstate_totals_match(*word, t))
			return true;
		cpu_relax();
	}
	return false;
}

#endif /* TASKSTATE_ENTRY_H */
