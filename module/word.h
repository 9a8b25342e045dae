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
#include <linux/types.h>
#endif
#include <uapi/linux/taskstate.h>

struct ts_word {
	atomic64_t v;
};

/* The "store relaxed": the only way the module writes a live word. */
static __always_inline void ts_word_store(struct ts_word *w, u64 word)
{
	if (IS_ENABLED(CONFIG_64BIT))
		WRITE_ONCE(w->v.counter, (s64)word);
	else
		atomic64_set(&w->v, (s64)word);
}

static __always_inline u64 ts_word_load(const struct ts_word *w)
{
	if (IS_ENABLED(CONFIG_64BIT))
		return (u64)READ_ONCE(w->v.counter);
	return (u64)atomic64_read(&w->v);
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

#endif /* TASKSTATE_WORD_H */
