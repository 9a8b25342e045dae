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
#include <linux/instrumented.h>
#include <linux/kconfig.h>
#include <linux/types.h>
#endif
#include <uapi/linux/taskstate.h>

/**
 * ts_u64_store() - store a 64-bit value that readers load whole
 * @v: the value's home
 * @val: what to store
 *
 * A tear-free 64-bit value with one writer, for the per-state totals
 * (entry.h): the same store and load as the word's.
 *
 * Context: its one writer at a time; any context.
 */
static __always_inline void ts_u64_store(atomic64_t *v, u64 val)
{
	if (IS_ENABLED(CONFIG_64BIT))
		WRITE_ONCE(v->counter, (s64)val);
	else
		atomic64_set(v, (s64)val);
}

/**
 * ts_u64_load() - load a value ts_u64_store() stores, whole
 * @v: the value's home
 *
 * Context: any.
 * Return: the value.
 */
static __always_inline u64 ts_u64_load(const atomic64_t *v)
{
	if (IS_ENABLED(CONFIG_64BIT))
		return (u64)READ_ONCE(v->counter);
	return (u64)atomic64_read(v);
}

/**
 * ts_u64_add() - add to a value ts_u64_store() stores, by its one writer
 * @v: the value's home
 * @d: what to add
 *
 * Not an atomic add: the value has one writer, so a load and a store of
 * the sum are enough, and a reader sees the old sum or the new one.  On
 * x86-64 that is one instruction, an add to memory without a lock
 * prefix (as local64_add() is there): its store is one aligned 64-bit
 * write, which cannot tear; it is announced to KASAN and KCSAN as the
 * atomic access it is, since they do not see into the asm.  Elsewhere a
 * load and ts_u64_store(); the load may be plain (on 32-bit two 32-bit
 * loads): no other store can tear what the writer reads back of its own
 * value.
 *
 * Context: the value's one writer at a time; any context.
 */
static __always_inline void ts_u64_add(atomic64_t *v, u64 d)
{
#ifdef CONFIG_X86_64
	instrument_atomic_read_write(&v->counter, sizeof(v->counter));
	asm volatile("addq %1, %0" : "+m" (v->counter) : "er" (d));
#else
	ts_u64_store(v, (u64)READ_ONCE(v->counter) + d);
#endif
}

/* A benchmark build brings its own (Kbuild: bench/kmod/word.h). */
#ifdef TS_WORD_SCHEME_H
#include TS_WORD_SCHEME_H
#else
struct ts_word {
	atomic64_t v;
};

/**
 * ts_word_store() - store a live word
 * @w: the word
 * @word: the new word (taskstate_pack())
 *
 * The "store relaxed": the only way the module writes a live word.
 *
 * Context: the word's one writer (probes.c); any context.
 */
static __always_inline void ts_word_store(struct ts_word *w, u64 word)
{
	ts_u64_store(&w->v, word);
}

/**
 * ts_word_load() - load a word whole
 * @w: the word
 *
 * Context: any.
 * Return: the word.
 */
static __always_inline u64 ts_word_load(const struct ts_word *w)
{
	return ts_u64_load(&w->v);
}

/**
 * ts_word_init() - fill an empty word
 * @w: the word
 * @word: its first value
 *
 * First write of a word from process context (the snapshot taken when a
 * running thread starts being tracked).  It only replaces the empty word
 * the slot was published with, so it can never undo a newer write from
 * the scheduler, which may run concurrently.  Returns true if it wrote.
 *
 * Context: process context (the snapshot); may race the probes.
 * Return: true if it wrote.
 */
static inline bool ts_word_init(struct ts_word *w, u64 word)
{
	s64 empty = 0;

	return atomic64_try_cmpxchg(&w->v, &empty, (s64)word);
}
#endif

#endif /* TASKSTATE_WORD_H */
