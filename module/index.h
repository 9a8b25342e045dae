/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Finding a task's entry: an open hash of cache-line buckets, keyed by
 * task_struct pointer, each way holding an owner and the index of its
 * entry.  A switch reads one bucket line here and then the entry's line
 * (ts_pub[], entry.h): two lines of module data per tracked task, where a
 * chained hash read a bucket head, a chain node and the entry.
 *
 * A task's home bucket is ts_index_hash(task).  A task whose home is full
 * goes to the first later bucket (cyclically) with a free way, and every
 * bucket it passed counts it in spill: a lookup goes on to the next
 * bucket only while spill says something went past, and stops at once at
 * a bucket with no way taken and nothing past it.  The index has at
 * least 2 ways per slot (ts_index_bits(); 2.5 for the default 32768), so
 * at most half the ways hold a task when the table is full, and a task's
 * lookup reads a second bucket only if its home bucket overflowed
 * (bench/tbench counts the lines a lookup reads, and reports them).
 *
 * A way's life: free (task NULL), owned (task set, idx its entry), then
 * released (TS_WAY_RELEASED, idx kept) until a grace period has passed,
 * then free again (ts_index_free(), from the slot's RCU callback).  So a
 * lockless reader that matched a task and then reads the index (ordered
 * by smp_rmb(), pairing with the insert's smp_wmb()) reads that task's
 * index: the way cannot be given to another task under it.  A released
 * way is not free, so an insert skips it, and at most max_threads ways
 * are ever not free: an insert always finds a way.
 *
 * Changes (insert, release, free) are made under the table's lock; the
 * lookup is lockless, under RCU (the probes: preemption disabled).
 *
 * Plain C on kernel names, so that bench/tbench can compile it in user
 * space (bench/kshim.h supplies them).
 */
#ifndef TASKSTATE_INDEX_H
#define TASKSTATE_INDEX_H

#ifdef __KERNEL__
#include <asm/barrier.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/hash.h>
#include <linux/types.h>
#endif

#define TS_BUCKET_BYTES		64
/* Ways per bucket: 5 with 64-bit pointers, 7 with 32-bit ones. */
#define TS_BUCKET_WAYS \
	((TS_BUCKET_BYTES - sizeof(u32)) / (sizeof(void *) + sizeof(u32)))
/* A released way: equal to no task, and not free until ts_index_free(). */
#define TS_WAY_RELEASED		((const void *)1)
#define TS_INDEX_NONE		(~(u32)0)

/*
 * spill: TS_BUCKET_USED while a way is not free, and in the other bits
 * the count of tasks whose home is this bucket or precedes it that live
 * after it.  A lookup that reads 0 there is done in one load: nothing is
 * here and nothing went past, the common miss of an untracked task.
 */
#define TS_BUCKET_USED		(1U << 31)
#define TS_SPILL_COUNT		(TS_BUCKET_USED - 1)

struct ts_bucket {
	const void *task[TS_BUCKET_WAYS];
	u32 idx[TS_BUCKET_WAYS];
	u32 spill;
} __aligned(TS_BUCKET_BYTES);

/* A bucket is one cache line, and never straddles two. */
static_assert(sizeof(struct ts_bucket) == TS_BUCKET_BYTES);
static_assert(__alignof__(struct ts_bucket) == TS_BUCKET_BYTES);

struct ts_index {
	struct ts_bucket *buckets;	/* 1 << bits, cache-line aligned */
	unsigned int bits;
};

/**
 * ts_index_bits() - the index's size for a table
 * @nr_slots: the table's slots
 *
 * Buckets for @nr_slots entries: a power of two, >= 2.5 ways a slot.
 *
 * Context: any.
 * Return: log2 of the bucket count: a power of two, >= 2.5 ways a slot.
 */
static inline unsigned int ts_index_bits(unsigned int nr_slots)
{
	unsigned long want = (2UL * nr_slots + TS_BUCKET_WAYS - 1) /
			     TS_BUCKET_WAYS;
	unsigned int bits = 1;

	while ((1UL << bits) < want)
		bits++;
	return bits;
}

/**
 * ts_index_mix() - a task pointer, mixed for the hash
 * @task: the key
 *
 * The home bucket of @task.  hash_ptr() alone clusters task_struct
 * addresses: a slab's objects, and slabs from contiguous pages, are
 * arithmetic progressions, whose products with the golden ratio crowd
 * some buckets (bench/tbench's address model, 10^6 tasks: 53% of them
 * spilled, against 1% for a random hash).  Folding the product's high
 * half in and multiplying once more spreads them as a random hash would
 * (1%), for one more multiplication.  On 64-bit the address's own high
 * half needs no fold first: it reaches the top bits through both
 * products (bench/test_index: 1.2% at 32768 tasks, 1.0% at 10^6, as with
 * the fold).
 *
 * Context: any.
 * Return: the mixed key, whose top bits are the home bucket.
 */
static __always_inline unsigned long ts_index_mix(const void *task)
{
	unsigned long x = (unsigned long)task;

#if BITS_PER_LONG == 64
	x *= GOLDEN_RATIO_64;
	x ^= x >> 32;
	return x * GOLDEN_RATIO_64;
#else
	x ^= x >> 16;
	x *= GOLDEN_RATIO_32;
	x ^= x >> 16;
	return x * GOLDEN_RATIO_32;
#endif
}

/**
 * ts_index_hash() - the home bucket of a task
 * @task: the key
 * @bits: log2 of the bucket count
 *
 * hash_64() or hash_32() of the mixed key: its top @bits bits.
 *
 * Context: any.
 * Return: the bucket's number.
 */
static __always_inline unsigned int ts_index_hash(const void *task,
						  unsigned int bits)
{
	return ts_index_mix(task) >> (BITS_PER_LONG - bits);
}

/**
 * ts_index_mask() - the bucket-number mask of an index
 * @ix: the index
 *
 * Context: any.
 * Return: (1 << bits) - 1.
 */
static __always_inline unsigned int ts_index_mask(const struct ts_index *ix)
{
	return (1U << ix->bits) - 1;
}

/**
 * ts_index_way_in() - look a task up, given the index's geometry
 * @buckets: the index's buckets
 * @mask: (1 << bits) - 1
 * @shift: BITS_PER_LONG - bits
 * @task: the key
 * @idx: set to the task's entry index when found
 *
 * Whether @task has a way in the index of @buckets, 1 << bits of them,
 * given @mask and @shift: the probes keep the three, fixed at load,
 * rather than derive them at every lookup.  If so, *@idx is its entry
 * index, loaded after the owner (by smp_rmb()).
 *
 * The ways are compared unrolled (5 or 7 of them, a constant): a hit in
 * way 0, the common case with few tasks a bucket, is one compare.
 *
 * Context: lockless: under RCU (the probes: preemption disabled), or under
 * the lock that changes the index.
 * Return: true if @task has a way, with *@idx set; false otherwise.
 */
static __always_inline bool ts_index_way_in(const struct ts_bucket *buckets,
					    unsigned int mask,
					    unsigned int shift,
					    const void *task, u32 *idx)
{
	unsigned int b = ts_index_mix(task) >> shift;
	unsigned int n, j;

	/* Bounded even if every spill read non-zero: one lap. */
	for (n = 0; n <= mask; n++, b = (b + 1) & mask) {
		const struct ts_bucket *bk = &buckets[b];
		u32 spill = READ_ONCE(bk->spill);

		if (!spill)
			break;
#pragma GCC unroll 8
		for (j = 0; j < TS_BUCKET_WAYS; j++) {
			if (READ_ONCE(bk->task[j]) == task) {
				smp_rmb();	/* the owner, then its index */
				*idx = READ_ONCE(bk->idx[j]);
				return true;
			}
		}
		if (!(spill & TS_SPILL_COUNT))
			break;
	}
	return false;
}

/**
 * ts_index_find_in() - ts_index_way_in(), as an entry index
 * @buckets: the index's buckets
 * @mask: (1 << bits) - 1
 * @shift: BITS_PER_LONG - bits
 * @task: the key
 *
 * Context: as ts_index_way_in().
 * Return: the task's entry index, or TS_INDEX_NONE.
 */
static __always_inline u32 ts_index_find_in(const struct ts_bucket *buckets,
					    unsigned int mask,
					    unsigned int shift,
					    const void *task)
{
	u32 idx;

	return ts_index_way_in(buckets, mask, shift, task, &idx) ?
	       idx : TS_INDEX_NONE;
}

/**
 * ts_index_find() - look a task up in an index
 * @ix: the index
 * @task: the key
 *
 * The same, from the index itself.
 *
 * Context: as ts_index_find_in().
 * Return: the task's entry index, or TS_INDEX_NONE.
 */
static __always_inline u32 ts_index_find(const struct ts_index *ix,
					 const void *task)
{
	return ts_index_find_in(ix->buckets, ts_index_mask(ix),
				BITS_PER_LONG - ix->bits, task);
}

/**
 * ts_index_insert() - give a task a way
 * @ix: the index
 * @task: the key, which has no way
 * @idx: its entry's index
 *
 * Give @task a way holding entry @idx.  Caller holds the lock, and @task
 * has no way.  Returns the way (bucket * TS_BUCKET_WAYS + slot in it),
 * for ts_index_release().  The spills and the index are stored before
 * the owner that publishes them.
 *
 * Context: under the lock that changes the index.
 * Return: the way, for ts_index_release().
 */
static inline u32 ts_index_insert(struct ts_index *ix, const void *task,
				  u32 idx)
{
	unsigned int mask = ts_index_mask(ix);
	unsigned int home = ts_index_hash(task, ix->bits);
	unsigned int b = home, j;
	struct ts_bucket *bk;

	for (;;) {
		bk = &ix->buckets[b];
		for (j = 0; j < TS_BUCKET_WAYS; j++)
			if (!bk->task[j])
				goto found;
		b = (b + 1) & mask;
	}
found:
	for (; home != b; home = (home + 1) & mask)
		WRITE_ONCE(ix->buckets[home].spill,
			   ix->buckets[home].spill + 1);
	WRITE_ONCE(bk->spill, bk->spill | TS_BUCKET_USED);
	WRITE_ONCE(bk->idx[j], idx);
	smp_wmb();	/* pairs with ts_index_way_in()'s smp_rmb() */
	WRITE_ONCE(bk->task[j], task);
	return b * TS_BUCKET_WAYS + j;
}

/**
 * ts_index_set() - point a task's way at another entry
 * @ix: the index
 * @way: the task's way, from ts_index_insert()
 * @idx: its entry from now on
 *
 * Move a task to entry @idx, whose contents the caller stored first
 * (ordered before this store by its smp_wmb()).  A lookup running now
 * reads the old entry or the new one; the caller makes sure that nothing
 * writes the task's entry meanwhile, and that the old one stays until a
 * grace period has passed.
 *
 * Context: under the lock that changes the index.
 */
static inline void ts_index_set(struct ts_index *ix, u32 way, u32 idx)
{
	WRITE_ONCE(ix->buckets[way / TS_BUCKET_WAYS].idx[way % TS_BUCKET_WAYS],
		   idx);
}

/**
 * ts_index_release() - a task no longer owns its way
 * @ix: the index
 * @task: the key
 * @way: its way, from ts_index_insert()
 *
 * @task no longer owns @way: lookups stop finding it now, and the way
 * stays taken, with its index, until ts_index_free().  Caller holds the
 * lock.
 *
 * Context: under the lock that changes the index.
 */
static inline void ts_index_release(struct ts_index *ix, const void *task,
				    u32 way)
{
	unsigned int mask = ts_index_mask(ix);
	unsigned int home = ts_index_hash(task, ix->bits);
	unsigned int b = way / TS_BUCKET_WAYS;

	WRITE_ONCE(ix->buckets[b].task[way % TS_BUCKET_WAYS],
		   TS_WAY_RELEASED);
	for (; home != b; home = (home + 1) & mask)
		WRITE_ONCE(ix->buckets[home].spill,
			   ix->buckets[home].spill - 1);
}

/**
 * ts_index_free() - a released way is free again
 * @ix: the index
 * @way: the way, released a grace period ago
 *
 * A grace period after ts_index_release(): @way is free, and so is its
 * bucket once no way in it is taken.  Under the lock.
 *
 * Context: under the lock that changes the index.
 */
static inline void ts_index_free(struct ts_index *ix, u32 way)
{
	struct ts_bucket *bk = &ix->buckets[way / TS_BUCKET_WAYS];
	unsigned int j;

	WRITE_ONCE(bk->task[way % TS_BUCKET_WAYS], NULL);
	for (j = 0; j < TS_BUCKET_WAYS; j++)
		if (bk->task[j])
			return;
	WRITE_ONCE(bk->spill, bk->spill & ~TS_BUCKET_USED);
}

#endif /* TASKSTATE_INDEX_H */
