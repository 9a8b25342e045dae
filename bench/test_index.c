// SPDX-License-Identifier: GPL-2.0
/*
 * test_index: module/index.h in user space against a reference model
 * (TAP).  The lookup the probes make is only as good as the index's
 * bookkeeping: every owned task found with its entry, nothing else found,
 * spill counts exact, a released way not handed out before it is freed,
 * the bucket array wrapping around, and a hash that spreads task_struct
 * addresses (slab objects) as a random one would.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kshim.h"
#include "taskaddr.h"
#include "../module/index.h"

static int failed, tests;

static void ok(int cond, const char *what)
{
	tests++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tests, what);
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

enum { FREE, OWNED, RELEASED };

struct model {
	unsigned int nr;		/* tasks (and entry indices) */
	const void **task;
	int *st;
	u32 *way;
};

/* Recompute every bucket's spill word from the ways and the owners. */
static int spill_exact(const struct ts_index *ix, const struct model *m)
{
	unsigned int nb = 1U << ix->bits, mask = nb - 1, b, i, j;
	u32 *want = calloc(nb, sizeof(*want));
	int good = 1;

	for (i = 0; i < m->nr; i++) {
		unsigned int h, at;

		if (m->st[i] != OWNED)
			continue;
		h = ts_index_hash(m->task[i], ix->bits);
		at = m->way[i] / TS_BUCKET_WAYS;
		for (; h != at; h = (h + 1) & mask)
			want[h]++;
	}
	for (b = 0; b < nb; b++) {
		int used = 0;

		for (j = 0; j < TS_BUCKET_WAYS; j++)
			used |= !!ix->buckets[b].task[j];
		if (used)
			want[b] |= TS_BUCKET_USED;
		good &= ix->buckets[b].spill == want[b];
	}
	free(want);
	return good;
}

/*
 * Random inserts, releases and frees on an index of @bits bits holding at
 * most @nr tasks, checking every lookup after each step.
 */
static void model_run(unsigned int bits, unsigned int nr, unsigned int steps,
		      const char *name)
{
	struct ts_index ix = { .bits = bits };
	struct model m = { .nr = nr };
	int finds = 1, spills = 1, reuse = 1;
	unsigned int s, i;
	char what[160];

	ix.buckets = aligned_alloc(64, sizeof(struct ts_bucket) << bits);
	memset(ix.buckets, 0, sizeof(struct ts_bucket) << bits);
	m.task = calloc(nr, sizeof(*m.task));
	m.st = calloc(nr, sizeof(*m.st));
	m.way = calloc(nr, sizeof(*m.way));
	for (i = 0; i < nr; i++)
		m.task[i] = task_addr(i / PER_SLAB, i % PER_SLAB);
	for (s = 0; s < steps; s++) {
		i = rnd() % nr;
		switch (m.st[i]) {
		case FREE:
			m.way[i] = ts_index_insert(&ix, m.task[i], i);
			m.st[i] = OWNED;
			break;
		case OWNED:
			ts_index_release(&ix, m.task[i], m.way[i]);
			m.st[i] = RELEASED;
			break;
		case RELEASED: {
			/* No owned way may sit where a released one is. */
			unsigned int k;

			for (k = 0; k < nr; k++)
				if (k != i && m.st[k] == OWNED &&
				    m.way[k] == m.way[i])
					reuse = 0;
			ts_index_free(&ix, m.way[i]);
			m.st[i] = FREE;
			break;
		}
		}
		for (i = 0; i < nr; i++) {
			u32 got = ts_index_find(&ix, m.task[i]);

			finds &= m.st[i] == OWNED ? got == i :
						    got == TS_INDEX_NONE;
		}
		/* An address never inserted is never found. */
		finds &= ts_index_find(&ix, task_addr(nr, 1)) == TS_INDEX_NONE;
		if (s % 16 == 0)
			spills &= spill_exact(&ix, &m);
	}
	snprintf(what, sizeof(what),
		 "%s: every owned task found with its entry, no other", name);
	ok(finds, what);
	snprintf(what, sizeof(what), "%s: spill counts and used bits exact", name);
	ok(spills, what);
	snprintf(what, sizeof(what),
		 "%s: a released way is not handed out before it is freed", name);
	ok(reuse, what);
	free(ix.buckets);
	free(m.task);
	free(m.st);
	free(m.way);
}

/* Fill a table of @n slots with @n slab-placed tasks: how many spilled. */
static double spilled_fraction(unsigned int n)
{
	struct ts_index ix = { .bits = ts_index_bits(n) };
	unsigned int slabs = (n + PER_SLAB - 1) / PER_SLAB, i, spilled = 0;
	unsigned int *order = malloc(sizeof(*order) * slabs);

	ix.buckets = aligned_alloc(64, sizeof(struct ts_bucket) << ix.bits);
	memset(ix.buckets, 0, sizeof(struct ts_bucket) << ix.bits);
	shuffle_slabs(order, slabs, &rnd_state);
	for (i = 0; i < n; i++) {
		const void *t = task_addr(order[i / PER_SLAB], i % PER_SLAB);
		u32 way = ts_index_insert(&ix, t, i);

		spilled += way / TS_BUCKET_WAYS != ts_index_hash(t, ix.bits);
	}
	free(order);
	free(ix.buckets);
	return (double)spilled / n;
}

int main(void)
{
	unsigned int sizes[] = { 32768, 1000000 }, i;
	char what[160];

	ok(sizeof(struct ts_bucket) == 64, "a bucket is one 64-byte line");
	/*
	 * 4 buckets for up to 12 tasks (60% of 20 or 28 ways): spills,
	 * chains that wrap past the last bucket, ways released and reused.
	 */
	model_run(2, 12, 20000, "4 buckets, 12 tasks");
	model_run(5, 64, 20000, "32 buckets, 64 tasks (max_threads=64)");
	for (i = 0; i < 2; i++) {
		double f = spilled_fraction(sizes[i]);

		/* A random hash spills about 1%; hash_ptr() alone 53% at 10^6. */
		snprintf(what, sizeof(what),
			 "%u slab-placed tasks in a full table: %.2f%% spilled (< 5%%)",
			 sizes[i], 100 * f);
		ok(f < 0.05, what);
	}
	printf("1..%d\n", tests);
	return failed != 0;
}
