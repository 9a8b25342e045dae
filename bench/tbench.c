// SPDX-License-Identifier: GPL-2.0
/*
 * tbench: what the sched_switch probe's memory costs on real hardware:
 * find a task's entry and store its word and totals, for the two tasks of
 * a switch, with the module's table code compiled in user space.
 *
 *   old  a chained hash, the alternative index.h is measured against: an array of
 *        hlist heads (8 bytes, one per slot rounded up to a power of
 *        two), 48-byte slots holding the chain node and the owner, and
 *        the 64-byte public entry (ts_pub[]) at the slot's index;
 *        replicated here, field for field
 *   new  module/index.h as the module uses it: one 64-byte bucket of
 *        (owner, entry index) ways, then the entry
 * Both store with module/entry.h's ts_pub_set(), totals on (the default),
 * as a user-space build compiles it: the totals switch a plain bool, and
 * a total's update a load and a store (in the x86-64 module a static
 * branch and one add to memory, ts_u64_add()).
 *
 * Tasks are fake task_struct addresses (never dereferenced, as the probe
 * does not dereference them to find the entry) spaced like 6.1's
 * task_struct slab: 9792-byte objects, 3 in each 32 KiB slab, slabs in a
 * shuffled order.  The table holds max(N, 32768) slots (32768 is the
 * default max_threads): at N = 32768 it is full, its worst case.
 *
 * Patterns, each a sequence of switches (prev, next), timed per switch:
 *   warm  the same two tasks switch back and forth: all in L1
 *   cold  prev and next drawn at random from the N tracked tasks (a
 *         pre-drawn sequence of 2^20): the table's lines come from
 *         wherever N tasks' lines fit (L2 at 1,000; DRAM at 1,000,000)
 *   miss  two untracked tasks at random: the lookups find nothing (a
 *         switch between untracked threads with track_all=0)
 * Memory comes in the page sizes the kernel would use (xalloc_pages()).
 * Rounds interleave the layouts (old new old new ...); median, min and max
 * over rounds.  Also computed, not timed: module cache lines a tracked
 * task's lookup and store read, averaged over the N tasks.
 *
 * CSV (--csv FILE): layout,threads,pattern,ns_median,ns_lo,ns_hi,lines
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kshim.h"
#include "taskaddr.h"
#include "../module/entry.h"
#include "../module/index.h"

bool ts_totals = true;

#define LINE		64
#define SEQ		(1u << 20)
#define MIN_SLOTS	32768

/* ---- old: the chained hash, as module/table.[ch] had it ---- */

struct hnode {
	struct hnode *next, **pprev;
};

struct old_slot {
	struct hnode node;
	const void *task;
	unsigned int flags;
	void *rcu[2];			/* struct rcu_head */
};

struct old_table {
	struct hnode **buckets;
	unsigned int bits;
	struct old_slot *slots;
};

static struct old_slot *old_lookup(const struct old_table *o, const void *t)
{
	struct hnode *n;

	for (n = READ_ONCE(o->buckets[hash_ptr(t, o->bits)]); n;
	     n = READ_ONCE(n->next)) {
		struct old_slot *s = (struct old_slot *)n;

		if (READ_ONCE(s->task) == t)
			return s;
	}
	return NULL;
}

static void old_insert(struct old_table *o, const void *t, unsigned int idx)
{
	struct hnode **head = &o->buckets[hash_ptr(t, o->bits)];
	struct old_slot *s = &o->slots[idx];

	s->task = t;
	s->node.next = *head;
	s->node.pprev = head;
	if (*head)
		(*head)->pprev = &s->node.next;
	*head = &s->node;
}

/* ---- the benchmark ---- */

struct setup {
	unsigned int n, nr_slots;
	const void **tracked, **untracked;
	struct ts_pub *pub;
	struct old_table old;
	struct ts_index ix;
	unsigned int *seq;		/* SEQ indices into tracked[] */
};

/*
 * Memory as the module gets it: kvcalloc() (the index, the old layout's
 * heads and slots) is kmalloc()'s direct map or, past 4 MiB, a vmalloc
 * area that 6.1's kvmalloc() maps with huge pages: @huge, 2 MiB pages
 * where the host gives them (transparent huge pages on madvise);
 * vmalloc_user() (ts_pub[], mapped into readers) is 4 KiB pages.
 */
static void *xalloc_pages(size_t size, bool huge)
{
	size_t align = huge ? 2u << 20 : 4096;
	void *p = NULL;

	size = (size + align - 1) & ~(align - 1);
	if (posix_memalign(&p, align, size) || !p) {
		fprintf(stderr, "tbench: out of memory (%zu bytes)\n", size);
		exit(1);
	}
	madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(p, 0, size);
	return p;
}

static void *xalloc(size_t size)
{
	return xalloc_pages(size, false);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

/* 2 * n fake task_structs, slabs shuffled; the first n are tracked. */
static void make_tasks(struct setup *su)
{
	unsigned int total = 2 * su->n, slabs = (total + PER_SLAB - 1) /
						PER_SLAB, i;
	unsigned int *order = xalloc(sizeof(*order) * slabs);

	shuffle_slabs(order, slabs, &rnd_state);
	su->tracked = xalloc(sizeof(void *) * su->n);
	su->untracked = xalloc(sizeof(void *) * su->n);
	for (i = 0; i < total; i++) {
		const void *t = task_addr(order[i / PER_SLAB], i % PER_SLAB);

		if (i < su->n)
			su->tracked[i] = t;
		else
			su->untracked[i - su->n] = t;
	}
	free(order);
}

static void setup(struct setup *su, unsigned int n)
{
	unsigned int i, obuckets = 1;

	su->n = n;
	su->nr_slots = n > MIN_SLOTS ? n : MIN_SLOTS;
	make_tasks(su);
	su->pub = xalloc_pages(sizeof(*su->pub) * su->nr_slots, false);
	/* old: ilog2(roundup_pow_of_two(nr_slots)) bits, kvcalloc'd slots */
	su->old.bits = 0;
	while (obuckets < su->nr_slots) {
		obuckets <<= 1;
		su->old.bits++;
	}
	su->old.buckets = xalloc_pages(sizeof(*su->old.buckets) * obuckets,
				       true);
	su->old.slots = xalloc_pages(sizeof(*su->old.slots) * su->nr_slots,
				     true);
	su->ix.bits = ts_index_bits(su->nr_slots);
	su->ix.buckets = xalloc_pages(sizeof(struct ts_bucket) << su->ix.bits,
				      true);
	/* As the module does: low indices first, in tracking order. */
	for (i = 0; i < n; i++) {
		old_insert(&su->old, su->tracked[i], i);
		ts_index_insert(&su->ix, su->tracked[i], i);
		ts_pub_first(&su->pub[i], taskstate_pack(TASKSTATE_RUNNABLE, 1));
	}
	su->seq = xalloc(sizeof(*su->seq) * SEQ);
	for (i = 0; i < SEQ; i++)
		su->seq[i] = rnd() % n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

enum { WARM, COLD, MISS };
static const char *const pattern_name[] = { "warm", "cold", "miss" };

/* The task of switch i, side 0 (prev) or 1 (next). */
static __always_inline const void *task_of(const struct setup *su, int pat,
					    unsigned int i, int side)
{
	unsigned int k = (2 * i + side) & (SEQ - 1);

	if (pat == WARM)
		return su->tracked[(i + side) & 1];
	if (pat == COLD)
		return su->tracked[su->seq[k]];
	return su->untracked[su->seq[k]];
}

static unsigned long sink;

/* One switch: both tasks found, prev RUNNABLE, next RUNNING. */
static __always_inline void switch_new(struct setup *su, const void *prev,
				       const void *next, u64 now)
{
	u32 pi = ts_index_find(&su->ix, prev), ni = ts_index_find(&su->ix, next);

	if (pi != TS_INDEX_NONE)
		ts_pub_set(&su->pub[pi], TASKSTATE_RUNNABLE, now);
	if (ni != TS_INDEX_NONE)
		ts_pub_set(&su->pub[ni], TASKSTATE_RUNNING, now);
	sink += pi + ni;
}

static __always_inline void switch_old(struct setup *su, const void *prev,
				       const void *next, u64 now)
{
	struct old_slot *ps = old_lookup(&su->old, prev);
	struct old_slot *ns = old_lookup(&su->old, next);

	if (ps)
		ts_pub_set(&su->pub[ps - su->old.slots], TASKSTATE_RUNNABLE,
			   now);
	if (ns)
		ts_pub_set(&su->pub[ns - su->old.slots], TASKSTATE_RUNNING,
			   now);
	sink += (uintptr_t)ps + (uintptr_t)ns;
}

static u64 clock_ns = 2;

/* ns per switch over @iters switches of @pat, layout 0 old, 1 new. */
static double run(struct setup *su, int layout, int pat, unsigned int iters)
{
	uint64_t t0 = now_ns(), t1;
	unsigned int i;

	for (i = 0; i < iters; i++) {
		const void *p = task_of(su, pat, i, 0), *n = task_of(su, pat, i, 1);

		clock_ns += 100;
		if (layout)
			switch_new(su, p, n, clock_ns);
		else
			switch_old(su, p, n, clock_ns);
	}
	t1 = now_ns();
	return (double)(t1 - t0) / iters;
}

/* Distinct 64-byte lines in [a, a + len). */
static unsigned int lines_of(const void *a, size_t len)
{
	uintptr_t s = (uintptr_t)a / LINE, e = ((uintptr_t)a + len - 1) / LINE;

	return (unsigned int)(e - s + 1);
}

/*
 * Lines a tracked task's lookup and store read, averaged over the tasks:
 * old: the bucket head, each chain node up to the owner (node and task
 * field), the entry; new: each bucket scanned, the entry.
 */
static double lines_per_task(struct setup *su, int layout)
{
	unsigned long total = 0;
	unsigned int i;

	for (i = 0; i < su->n; i++) {
		const void *t = su->tracked[i];

		total += lines_of(&su->pub[i], sizeof(su->pub[i]));
		if (layout) {
			unsigned int mask = ts_index_mask(&su->ix);
			unsigned int b = ts_index_hash(t, su->ix.bits), j, found = 0;

			while (!found) {
				const struct ts_bucket *bk = &su->ix.buckets[b];

				total += lines_of(bk, sizeof(*bk));
				for (j = 0; j < TS_BUCKET_WAYS; j++)
					found |= bk->task[j] == t;
				b = (b + 1) & mask;
			}
		} else {
			struct hnode **head = &su->old.buckets[hash_ptr(t, su->old.bits)];
			struct hnode *n;

			total += lines_of(head, sizeof(*head));
			for (n = *head; n; n = n->next) {
				struct old_slot *s = (struct old_slot *)n;

				total += lines_of(s, offsetof(struct old_slot,
							      flags));
				if (s->task == t)
					break;
			}
		}
	}
	return (double)total / su->n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned int sizes[3] = { 1000, 32768, 1000000 }, rounds = 15, iters;
	unsigned int base_iters = 1u << 21, si, p, r, l;
	const char *csv_path = NULL;
	FILE *csv = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			rounds = 3;
			base_iters = 1u << 16;
			sizes[2] = 100000;
		} else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
			csv_path = argv[++i];
		} else {
			fprintf(stderr, "usage: tbench [--quick] [--csv FILE]\n");
			return 2;
		}
	}
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv) {
			perror(csv_path);
			return 1;
		}
		fprintf(csv, "layout,threads,pattern,ns_median,ns_lo,ns_hi,lines\n");
	}
	printf("tbench: ns per switch (two lookups and two stores), %u rounds, old (chained) against new (index.h) side by side\n",
	       rounds);
	printf("%-9s %-5s %10s %20s %10s %20s %9s %10s %10s\n", "threads",
	       "pat", "old ns", "[min-max]", "new ns", "[min-max]",
	       "new/old", "old lines", "new lines");
	for (si = 0; si < 3; si++) {
		struct setup su;
		double lines[2];

		memset(&su, 0, sizeof(su));
		setup(&su, sizes[si]);
		lines[0] = lines_per_task(&su, 0);
		lines[1] = lines_per_task(&su, 1);
		for (p = WARM; p <= MISS; p++) {
			double ns[2][64], med[2];

			iters = base_iters;
			for (l = 0; l < 2; l++)	/* warm-up, not counted */
				run(&su, l, p, iters / 4);
			for (r = 0; r < rounds; r++)
				for (l = 0; l < 2; l++)
					ns[l][r] = run(&su, l, p, iters);
			for (l = 0; l < 2; l++) {
				qsort(ns[l], rounds, sizeof(double), cmp_double);
				med[l] = ns[l][rounds / 2];
			}
			printf("%-9u %-5s %10.2f %9.2f-%-10.2f %10.2f %9.2f-%-10.2f %9.2f %10.2f %10.2f\n",
			       su.n, pattern_name[p], med[0], ns[0][0],
			       ns[0][rounds - 1], med[1], ns[1][0],
			       ns[1][rounds - 1], med[1] / med[0],
			       p == MISS ? 0 : lines[0],
			       p == MISS ? 0 : lines[1]);
			for (l = 0; csv && l < 2; l++)
				fprintf(csv, "%s,%u,%s,%.3f,%.3f,%.3f,%.3f\n",
					l ? "new" : "old", su.n,
					pattern_name[p], med[l], ns[l][0],
					ns[l][rounds - 1],
					p == MISS ? 0 : lines[l]);
		}
		free(su.tracked);
		free(su.untracked);
		free(su.pub);
		free(su.old.buckets);
		free(su.old.slots);
		free(su.ix.buckets);
		free(su.seq);
	}
	if (csv)
		fclose(csv);
	return sink == 42;	/* keep the stores */
}
