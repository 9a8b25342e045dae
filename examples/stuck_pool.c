// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * A thread pool's supervisor that finds stuck workers with
 * taskstate_stuck_check(): each worker locates itself once when it starts,
 * and the supervisor checks all of them every period from the mapping,
 * without a system call per worker.  A user without CAP_PERFMON, whose
 * descriptor is scoped to its own processes, maps them too, in any pid
 * namespace, so it runs the same as any user, in a container.  Where no
 * mapping is possible (a privileged descriptor in a child pid namespace)
 * it asks for all of them with one SAMPLE per period instead.
 *
 *   stuck_pool [WORKERS [THRESHOLD_MS [SECONDS]]]   (4 200 3)
 *
 * The workers compute, except worker 1, which after 100 ms blocks on a
 * pipe nobody writes to (SLEEPING), as a worker waiting for a lost reply
 * would.  The supervisor checks every 100 ms for SECONDS at most (5
 * periods more once worker 1 was found).  Prints each stuck worker once;
 * exits 0 if worker 1 and only it was reported, 1 otherwise, 2 if the
 * device cannot be opened.  With the
 * module's track_all=0 the workers TRACK themselves first.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"

#define MAX_WORKERS	64
/* A lost reply is waited for in an interruptible sleep: not the default. */
#define STUCK_STATES	(1U << TASKSTATE_BLOCKED | 1U << TASKSTATE_SLEEPING)

static int dev_fd;
static int stop;
static int pipe_fds[2];
static struct taskstate_location where[MAX_WORKERS];
static int ready;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void *worker(void *arg)
{
	unsigned int i = (uintptr_t)arg;
	struct taskstate_location l = { .tid = syscall(SYS_gettid) };
	uint64_t block_at = mono_ns() + 100000000;
	unsigned long spin = 0;
	char c;

	/* Locate once; TRACK first if the module tracks only what it is told. */
	if (taskstate_locate(dev_fd, &l, 1) != 1 &&
	    !taskstate_track(dev_fd, l.tid, false, NULL))
		taskstate_locate(dev_fd, &l, 1);
	where[i] = l;
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (i == 1 && !(spin & 1023) && mono_ns() > block_at) {
			/* The stuck one: waits for a byte that never comes. */
			if (read(pipe_fds[0], &c, 1) <= 0)
				break;
		}
		spin++;
		__asm__ __volatile__("" ::: "memory");	/* work, of a kind */
	}
	return NULL;
}

/*
 * taskstate_stuck_check() without the mapping: the workers' words by one
 * SAMPLE, found[] as it fills it.
 */
static int stuck_by_sample(unsigned int nr, uint64_t threshold_ns,
			   struct taskstate_stuck *found)
{
	struct taskstate_entry e[MAX_WORKERS];
	uint64_t now, age;
	unsigned int i, state;
	int n = 0;

	for (i = 0; i < nr; i++)
		e[i] = (struct taskstate_entry) { .tid = where[i].tid };
	if (taskstate_sample(dev_fd, e, NULL, nr) < 0)
		return -1;
	now = taskstate_now_ns();
	for (i = 0; i < nr; i++) {
		state = taskstate_state(e[i].word);
		age = taskstate_age_ns(e[i].word, now);
		if (!e[i].word || !(STUCK_STATES & 1U << state) ||
		    age < threshold_ns)
			continue;
		found[n++] = (struct taskstate_stuck) {
			.which = i, .state = state, .age_ns = age,
		};
	}
	return n;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned int nr = argc > 1 ? atoi(argv[1]) : 4;
	unsigned int threshold_ms = argc > 2 ? atoi(argv[2]) : 200;
	unsigned int seconds = argc > 3 ? atoi(argv[3]) : 3;
	struct taskstate_stuck found[MAX_WORKERS];
	bool reported[MAX_WORKERS] = { false };
	struct taskstate_mapping m;
	pthread_t th[MAX_WORKERS];
	unsigned int i, t, bad = 0, left = ~0U;
	int n, ret;

	if (nr < 2 || nr > MAX_WORKERS) {
		fprintf(stderr, "stuck_pool: 2 to %d workers\n", MAX_WORKERS);
		return 2;
	}
	dev_fd = taskstate_open();
	if (dev_fd < 0) {
		fprintf(stderr, "stuck_pool: %s\n", strerror(-dev_fd));
		return 2;
	}
	ret = taskstate_mapping_open(dev_fd, &m);
	if (ret)
		printf("no mapping (%s): one SAMPLE a period\n", strerror(-ret));
	if (pipe(pipe_fds))
		return 2;
	for (i = 0; i < nr; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < (int)nr)
		sleep_ms(1);

	/* The supervisor loop: one call per period for the whole pool. */
	for (t = 0; t < seconds * 10 && left; t++, left--) {
		sleep_ms(100);
		if (!ret)
			n = taskstate_stuck_check(&m, where, nr,
						  threshold_ms * 1000000ULL,
						  STUCK_STATES, found, MAX_WORKERS,
						  NULL);
		else
			n = stuck_by_sample(nr, threshold_ms * 1000000ULL,
					    found);
		for (i = 0; i < (unsigned int)n && i < MAX_WORKERS; i++) {
			unsigned int w = found[i].which;

			if (reported[w])
				continue;
			reported[w] = true;
			printf("worker %u (tid %u) %s for %llu ms\n", w, where[w].tid,
			       taskstate_state_name(found[i].state),
			       (unsigned long long)(found[i].age_ns / 1000000));
			bad += w != 1;
			if (w == 1)
				left = 5;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	close(pipe_fds[1]);	/* lets worker 1's read return */
	for (i = 0; i < nr; i++)
		pthread_join(th[i], NULL);
	if (!ret)
		taskstate_mapping_close(&m);
	if (!reported[1])
		printf("worker 1 was not reported\n");
	return bad || !reported[1];
}
