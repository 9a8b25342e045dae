/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The write schemes the packed word is measured against, for the
 * benchmark only (scripts/bench.sh, TS_WRITE_SCHEME=1 or 2).  Kbuild
 * names this header in TS_WORD_SCHEME_H, and module/word.h includes it
 * in place of its own struct ts_word and three helpers.  Scheme 0, the
 * product, is module/word.h's own and needs no header.
 *
 *   1  the packed word, fully ordered atomic store (atomic64_xchg).
 *      atomic64_set() would not do: on x86-64 it is the same plain store.
 *   2  state and time as two fields under a seqcount, the design the
 *      packed word replaces.  The entry is then not the uapi's: mmap()
 *      fails with ENODEV (Kbuild sets TS_HOOK_ENTRY_UNMAPPED).
 */
#ifndef TASKSTATE_BENCH_KMOD_WORD_H
#define TASKSTATE_BENCH_KMOD_WORD_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/seqlock.h>
#include <linux/types.h>
#include <uapi/linux/taskstate.h>

#if TS_WRITE_SCHEME == 1
struct ts_word {
	atomic64_t v;
};

static __always_inline void ts_word_store(struct ts_word *w, u64 word)
{
	atomic64_xchg(&w->v, (s64)word);
}

static __always_inline u64 ts_word_load(const struct ts_word *w)
{
	return (u64)atomic64_read(&w->v);
}

/* As the product's: only the empty word is replaced. */
static inline bool ts_word_init(struct ts_word *w, u64 word)
{
	s64 empty = 0;

	return atomic64_try_cmpxchg(&w->v, &empty, (s64)word);
}

#elif TS_WRITE_SCHEME == 2

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

#else
#error "TS_WRITE_SCHEME: 1 or 2 (0, the product, needs no header)"
#endif

#endif /* TASKSTATE_BENCH_KMOD_WORD_H */
