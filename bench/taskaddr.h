/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fake task_struct addresses for bench/tbench and bench/test_index,
 * placed as 6.1's task_struct slab places them: 9792-byte objects, 3 in
 * each 32 KiB slab.  Never dereferenced: the index only hashes them.
 */
#ifndef TASKSTATE_BENCH_TASKADDR_H
#define TASKSTATE_BENCH_TASKADDR_H

#include <stdint.h>

#define TASK_SIZE	9792
#define SLAB_BYTES	32768
#define PER_SLAB	(SLAB_BYTES / TASK_SIZE)

/* xorshift64: the next value of the generator whose state is *@s. */
static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Object @k of slab @slab, the slabs in one direct-map-like range. */
static inline const void *task_addr(unsigned int slab, unsigned int k)
{
	uintptr_t base = (uintptr_t)0x40000000ull;

#ifdef __LP64__
	base = (uintptr_t)0xffff888100000000ull;
#endif
	return (const void *)(base + (uintptr_t)slab * SLAB_BYTES +
			      (uintptr_t)k * TASK_SIZE);
}

/* @order[0..@slabs-1]: the slabs in a random order (Fisher-Yates). */
static inline void shuffle_slabs(unsigned int *order, unsigned int slabs,
				 uint64_t *s)
{
	unsigned int i;

	for (i = 0; i < slabs; i++)
		order[i] = i;
	for (i = slabs - 1; i > 0; i--) {
		unsigned int j = xorshift64(s) % (i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
}

#endif /* TASKSTATE_BENCH_TASKADDR_H */
