/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The packed state word and its one store helper.
 *
 * Each word has a single writer at a time (the scheduler path of its task,
 * see probes.c) and any number of lockless readers.  Publishing state and
 * time in one store is what lets readers go without a sequence counter;
 * the store only has to be single-copy atomic:
 *
 *  - 64-bit: an aligned 64-bit WRITE_ONCE() is one plain store and cannot
 *    tear.  No lock, no barrier, no atomic read-modify-write.
 *  - 32-bit: a plain 64-bit store is two 32-bit stores and can tear, so it
 *    must be atomic64_set() (cmpxchg8b on x86-32), and loads atomic64_read().
 *
 * Outside the kernel (bench/) this header is compiled against a small shim
 * that provides the same names.
 */
#ifndef TASKSTATE_WORD_H
#define TASKSTATE_WORD_H

#ifdef __KERNEL__
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/kconfig.h>
#include <linux/seqlock.h>
#include <linux/types.h>
#endif
#include <uapi/linux/taskstate.h>

/*
 * TS_WRITE_SCHEME selects the write path at compile time, for the
 * benchmark only (bench/, `make bench`); the product is scheme 0.
 *   0  the packed word, plain store (WRITE_ONCE; atomic64_set on 32-bit)
 *   1  the packed word, fully ordered atomic store (atomic64_xchg).
 *      atomic64_set() would not do: on x86-64 it is the same plain store.
 *   2  state and time as two fields under a seqcount, the design the
 *      packed word replaces.
 */
#ifndef TS_WRITE_SCHEME
#define TS_WRITE_SCHEME 0
#endif

/*
 * A tear-free 64-bit value with one writer, for the per-state totals
 * (entry.h): the same store and load as the word's, whatever the scheme.
 */
static __always_inline void ts_u64_store(atomic64_t *v, u64 val)
{
	if (IS_ENABLED(CONFIG_64BIT))
		WRITE_ONCE(v->counter, (s64)val);
	else
		atomic64_set(v, (s64)val);
}

static __always_inline u64 ts_u64_load(const atomic64_t *v)
{
	if (IS_ENABLED(CONFIG_64BIT))
		return (u64)READ_ONCE(v->counter);
	return (u64)atomic64_read(v);
}

#if TS_WRITE_SCHEME != 2
struct ts_word {
	atomic64_t v;
};

/* The "store relaxed": the only way the module writes a live word. */
static __always_inline void ts_word_store(struct ts_word *w, u64 word)
{
	if (TS_WRITE_SCHEME == 1)
		atomic64_xchg(&w->v, (s64)word);
	else
		ts_u64_store(&w->v, word);
}

static __always_inline u64 ts_word_load(const struct ts_word *w)
{
	return ts_u64_load(&w->v);
}

/*
 * First write of a word from process context (the snapshot taken when a
 * running thread starts being tracked).  It only replaces the empty word
 * the slot was published with, so it can never undo a newer write from
 * the scheduler, which may run concurrently.  Returns true if it wrote.
 */
static inline bool ts_word_init(struct ts_word *w, u64 word)
{
	s64 empty = 0;

	return atomic64_try_cmpxchg(&w->v, &empty, (s64)word);
}

#else /* TS_WRITE_SCHEME == 2: benchmark baseline only */
struct ts_word {
	seqcount_t seq;
	unsigned int state;
	u64 time;
};

static __always_inline void ts_word_store(struct ts_word *w, u64 word)
{
	raw_write_seqcount_begin(&w->seq);
	WRITE_ONCE(w->state, taskstate_state(word));
	WRITE_ONCE(w->time, taskstate_since_ns(word));
	raw_write_seqcount_end(&w->seq);
}

static __always_inline u64 ts_word_load(const struct ts_word *w)
{
	unsigned int seq, state;
	u64 time;

	do {
		seq = raw_read_seqcount_begin(&w->seq);
		state = READ_ONCE(w->state);
		time = READ_ONCE(w->time);
	} while (read_seqcount_retry(&w->seq, seq));
	return taskstate_pack(state, time);
}

/*
 * A seqcount allows one writer only: a snapshot racing a probe could
 * leave the count odd and readers spinning.  The benchmark does not need
 * snapshots; the word stays NONE until the thread's first event.
 */
static inline bool ts_word_init(struct ts_word *w, u64 word)
{
	return false;
}
#endif

#endif /* TASKSTATE_WORD_H */
