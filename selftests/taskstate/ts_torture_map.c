// SPDX-License-Identifier: GPL-2.0
/*
 * ts_torture_map: the user-space half of taskstate_torture mode=2.  Waits
 * for /dev/taskstate_torture, maps it read-only, and reads the first
 * entry's word until its gen leaves 1, counting words whose two halves
 * disagree (the writer keeps high == ~low).  Prints "reads N torn M".
 *
 *   ts_torture_map atomic   the read of the uapi header's protocol
 *                           (taskstate_map_entry_read(): __atomic_load_n()),
 *                           which must never tear, on 32-bit too
 *   ts_torture_map split    two 32-bit loads, the negative control: the
 *                           word changes between them and it tears
 *
 *
 * With taskstate_torture mode=3 (per-state totals), prints "reads N wrong
 * M retried R" (M: sets accepted whose totals are not the word's; R:
 * reads that met a change and were tried again):
 *   ts_torture_map totals   taskstate_map_entry_read_totals(): word, totals,
 *                           word and the invariant; never wrong
 *   ts_torture_map wordonly the same loads, accepted on an unchanged word
 *                           alone, the negative control: wrong now and then
 *
 * Pinned to CPU 1, away from the writer on CPU 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include "util.h"

/* The torture module's made-up clock (taskstate_torture.c). */
#define TORTURE_T0	1000
#define TORTURE_STEP	1000

/*
 * Are @t the totals of @w in the torture writer's cycle?  Change k (at
 * T0 + k * STEP) enters state cycle[k % 4] after STEP ns in each state
 * before it, from RUNNING at T0: the bucket of cycle[b] holds STEP times
 * the number of i < k with i % 4 == b.
 */
static bool torture_totals_ok(uint64_t w, const struct taskstate_totals *t)
{
	uint64_t k = (taskstate_since_ns(w) - TORTURE_T0) / TORTURE_STEP;
	int b;

	if (t->start_ns != TORTURE_T0 || taskstate_state(w) - 1 != k % 4)
		return false;
	for (b = 0; b < 4; b++)
		if (t->state_ns[b] != TORTURE_STEP * ((k + 3 - b) / 4))
			return false;
	return t->state_ns[TASKSTATE_TOTAL_OTHER] == 0;
}

/* Word, totals, word, as taskstate_map_entry_read_totals() but no invariant. */
static int read_word_only(const struct taskstate_map_entry *e, __u64 *w,
			  struct taskstate_totals *t)
{
	__u64 w1, w2;
	int i;

	if (__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) != 1)
		return 0;
	w1 = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
	t->start_ns = __atomic_load_n(&e->start_ns, __ATOMIC_RELAXED);
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		t->state_ns[i] = __atomic_load_n(&e->state_ns[i],
						 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	w2 = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != 1)
		return 0;
	if (w1 != w2)
		return -1;
	*w = w1;
	return 1;
}

/* mode=3's reader: "reads N wrong M". */
static void read_totals(const struct taskstate_map_entry *e, bool checked)
{
	unsigned long reads = 0, wrong = 0, retries = 0;
	struct taskstate_totals t;
	__u64 w;
	int ret;

	for (;;) {
		if (checked)
			ret = taskstate_map_entry_read_totals(e, 1, &w, &t);
		else
			ret = read_word_only(e, &w, &t);
		if (!ret)
			break;
		if (ret < 0) {
			retries++;
			continue;
		}
		reads++;
		wrong += !torture_totals_ok(w, &t);
	}
	printf("reads %lu wrong %lu retried %lu\n", reads, wrong, retries);
}

int main(int argc, char **argv)
{
	const struct taskstate_map_entry *e;
	unsigned long reads = 0, torn = 0;
	bool split;
	void *p;
	int fd = -1, i, k;

	if (argc != 2 || (strcmp(argv[1], "atomic") && strcmp(argv[1], "split") &&
			  strcmp(argv[1], "totals") && strcmp(argv[1], "wordonly"))) {
		fprintf(stderr, "usage: ts_torture_map atomic|split|totals|wordonly\n");
		return 2;
	}
	split = !strcmp(argv[1], "split");
	ts_pin(1);
	for (i = 0; i < 30000 && fd < 0; i++) {
		fd = open("/dev/taskstate_torture", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			ts_sleep_ms(1);
	}
	if (fd < 0) {
		perror("/dev/taskstate_torture");
		return 1;
	}
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	e = p;
	if (!strcmp(argv[1], "totals") || !strcmp(argv[1], "wordonly")) {
		read_totals(e, !strcmp(argv[1], "totals"));
		munmap(p, (size_t)sysconf(_SC_PAGESIZE));
		return 0;
	}
	for (;;) {
		uint64_t w;

		if (split) {
			const volatile uint32_t *h = (const void *)&e->word;
			uint32_t lo, hi;

			/*
			 * Little-endian halves, on purpose not atomic, with a
			 * few instructions between them so that the writer
			 * lands there often enough to be seen.
			 */
			lo = h[0];
			for (k = 0; k < 16; k++)
				__asm__ __volatile__("" ::: "memory");
			hi = h[1];
			w = (uint64_t)hi << 32 | lo;
			if (__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) != 1)
				break;
		} else {
			__u64 v;

			if (!taskstate_map_entry_read(e, 1, &v))
				break;
			w = v;
		}
		reads++;
		torn += (uint32_t)(w >> 32) != (uint32_t)~(uint32_t)w;
	}
	printf("reads %lu torn %lu\n", reads, torn);
	munmap(p, (size_t)sysconf(_SC_PAGESIZE));
	return 0;
}
