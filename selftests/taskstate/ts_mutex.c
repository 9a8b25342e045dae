// SPDX-License-Identifier: GPL-2.0
/*
 * ts_mutex: the two examples built on the mapping (examples/).
 *  - examples/adaptive_mutex.c, in both of its modes (mapped: waiters read
 *    the owner's state; plain: no mapping, a plain futex mutex): mutual
 *    exclusion under a many-thread stress with a counter, no lost wakeup
 *    (no wait timeout: a lost wakeup hangs a thread and the watchdog says
 *    so), an owner that exits holding the lock (EOWNERDEAD), the error
 *    returns, and the spin decision: spin while the owner runs, sleep at
 *    once while it sleeps.
 *  - taskstate_stuck_check() (lib/stuck.c): only the threads SLEEPING
 *    longer than the threshold, and a thread that is gone.
 *
 * Runs as root in the initial pid namespace against a loaded module with
 * track_all=1 or 0 (then the mutex's threads TRACK themselves, and the
 * stuck test tracks its process), as a 64-bit or a 32-bit binary.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "kselftest_harness.h"
#include "adaptive_mutex.h"

#define STRESS_THREADS	16
#define STRESS_ITERS	4000
#define WATCHDOG_S	120

FIXTURE(mx) {
	int mapped;
};

FIXTURE_VARIANT(mx) {
	bool plain;
};

FIXTURE_VARIANT_ADD(mx, mapped) { .plain = false };
FIXTURE_VARIANT_ADD(mx, plain) { .plain = true };

FIXTURE_SETUP(mx)
{
	int fd;

	if (!variant->plain) {
		/* The mapped mode is what is under test: the device must be there. */
		fd = taskstate_open();
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", taskstate_dev_path(),
					strerror(-fd));
		taskstate_close(fd);
	}
	self->mapped = amutex_setup(variant->plain ? AMUTEX_PLAIN : 0);
	ASSERT_EQ(!variant->plain, self->mapped);
}

FIXTURE_TEARDOWN(mx)
{
}

/* ---- stress: exclusion, counter, no lost wakeup ---- */

struct stress {
	struct amutex m;
	int inside;		/* threads in the critical section */
	int overlaps;		/* times one found another inside */
	unsigned long counter;	/* plain, protected by m */
	unsigned int done;
	int go;			/* all created: start together */
	struct amutex_stats sum;
};

static void add_stats(struct amutex_stats *sum, const struct amutex_stats *s)
{
	__atomic_add_fetch(&sum->fast, s->fast, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->spun, s->spun, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->sleeps, s->sleeps, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->timeouts, s->timeouts, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->spin_limit, s->spin_limit, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->unknown, s->unknown, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sum->owner_dead, s->owner_dead, __ATOMIC_RELAXED);
}

static void *stress_thread(void *arg)
{
	struct stress *s = arg;
	unsigned int i, k;
	int ret = 0;

	/*
	 * Together, or on a slow kernel (KASAN under emulation) each thread
	 * can be done before the next one is created: no contention.
	 */
	while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (i = 0; i < STRESS_ITERS; i++) {
		ret |= amutex_lock(&s->m);
		if (__atomic_fetch_add(&s->inside, 1, __ATOMIC_RELAXED))
			__atomic_add_fetch(&s->overlaps, 1, __ATOMIC_RELAXED);
		s->counter++;
		/* Long enough for the owner to be seen, and preempted. */
		for (k = 0; k < 500; k++)
			__asm__ __volatile__("" ::: "memory");
		/* Now and then an owner that leaves the CPU: waiters sleep. */
		if (!(i % 64))
			sched_yield();
		__atomic_sub_fetch(&s->inside, 1, __ATOMIC_RELAXED);
		ret |= amutex_unlock(&s->m);
	}
	add_stats(&s->sum, amutex_thread_stats());
	__atomic_add_fetch(&s->done, 1, __ATOMIC_RELEASE);
	return (void *)(intptr_t)ret;
}

TEST_F_TIMEOUT(mx, stress_exclusion_counter_no_lost_wakeup, WATCHDOG_S + 30)
{
	static struct stress s = { .m = AMUTEX_INITIALIZER };
	pthread_t th[STRESS_THREADS];
	uint64_t t0 = mono_ns(), end = t0 + WATCHDOG_S * 1000000000ULL;
	unsigned int i;
	void *rv;

	/* No timeout in the futex: a lost wakeup would not heal itself. */
	amutex_dead_check_ns = 0;
	for (i = 0; i < STRESS_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stress_thread, &s));
	__atomic_store_n(&s.go, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&s.done, __ATOMIC_ACQUIRE) < STRESS_THREADS &&
	       mono_ns() < end)
		ts_sleep_ms(10);
	ASSERT_EQ(STRESS_THREADS, s.done)
		TH_LOG("threads still waiting after %d s: a lost wakeup (counter %lu, word %#x)",
		       WATCHDOG_S, s.counter, s.m.word);
	for (i = 0; i < STRESS_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &rv));
		EXPECT_EQ(0, (intptr_t)rv);
	}
	EXPECT_EQ(0, s.overlaps);
	EXPECT_EQ((unsigned long)STRESS_THREADS * STRESS_ITERS, s.counter);
	EXPECT_EQ(0, s.m.word);
	EXPECT_EQ(0, s.sum.timeouts);
	/* The premise: waiters did sleep, so wakeups were needed. */
	EXPECT_LT(0, s.sum.sleeps);
	EXPECT_EQ(0, s.sum.owner_dead);
	if (!self->mapped) {
		EXPECT_EQ(0, s.sum.spun);
		EXPECT_EQ(0, s.sum.spin_limit);
	}
	TH_LOG("%s: %u x %u in %.2f s: fast %llu spun %llu sleeps %llu spin_limit %llu unknown %llu",
	       self->mapped ? "mapped" : "plain", STRESS_THREADS, STRESS_ITERS,
	       (mono_ns() - t0) / 1e9, (unsigned long long)s.sum.fast,
	       (unsigned long long)s.sum.spun, (unsigned long long)s.sum.sleeps,
	       (unsigned long long)s.sum.spin_limit,
	       (unsigned long long)s.sum.unknown);
}

/* ---- the owner exits holding the lock ---- */

static void *lock_and_exit(void *arg)
{
	return (void *)(intptr_t)amutex_lock(arg);
}

TEST_F(mx, owner_exit_gives_eownerdead)
{
	static struct amutex m = AMUTEX_INITIALIZER;
	const struct amutex_stats *st = amutex_thread_stats();
	pthread_t th;
	uint64_t t0;
	void *rv;

	ASSERT_EQ(0, pthread_create(&th, NULL, lock_and_exit, &m));
	ASSERT_EQ(0, pthread_join(th, &rv));
	ASSERT_EQ(0, (intptr_t)rv);
	ASSERT_NE(0, m.word);
	t0 = mono_ns();
	EXPECT_EQ(EOWNERDEAD, amutex_lock(&m));
	TH_LOG("EOWNERDEAD after %.1f ms (%llu futex waits)",
	       (mono_ns() - t0) / 1e6, (unsigned long long)st->sleeps);
	EXPECT_EQ(1, st->owner_dead);
	/* The caller owns it now, and it works as before. */
	EXPECT_EQ(EBUSY, amutex_trylock(&m));
	EXPECT_EQ(0, amutex_unlock(&m));
	EXPECT_EQ(0, amutex_lock(&m));
	EXPECT_EQ(0, amutex_unlock(&m));
	EXPECT_EQ(0, m.word);
}

/* ---- errors ---- */

static void *try_other(void *arg)
{
	struct amutex *m = arg;
	intptr_t r = amutex_trylock(m) << 16 | amutex_unlock(m);

	return (void *)r;
}

TEST_F(mx, trylock_busy_and_unlock_by_other)
{
	static struct amutex m = AMUTEX_INITIALIZER;
	pthread_t th;
	void *rv;

	EXPECT_EQ(EPERM, amutex_unlock(&m));
	ASSERT_EQ(0, amutex_trylock(&m));
	EXPECT_EQ(EBUSY, amutex_trylock(&m));
	ASSERT_EQ(0, pthread_create(&th, NULL, try_other, &m));
	ASSERT_EQ(0, pthread_join(th, &rv));
	EXPECT_EQ(EBUSY << 16 | EPERM, (intptr_t)rv);
	EXPECT_EQ(0, amutex_unlock(&m));
	EXPECT_EQ(0, m.word);
}

/* ---- the spin decision ---- */

struct holder {
	struct amutex m;
	int fd;
	bool sleep;		/* hold it asleep, else computing */
	unsigned int ms;
	pid_t tid;
	int locked;
	int seen;		/* the locker saw the owner as wanted */
};

/*
 * Own h->m, asleep or computing, until the locker has seen this thread in
 * that state (at most 20 s), then h->ms more.  A fixed hold counted from
 * the lock was over before a stalled guest's locker looked (arm64 CI).
 */
static void *hold(void *arg)
{
	struct holder *h = arg;
	uint64_t end, limit;

	h->tid = ts_gettid();
	if (amutex_lock(&h->m))
		return (void *)1;
	__atomic_store_n(&h->locked, 1, __ATOMIC_RELEASE);
	limit = mono_ns() + 20000000000ULL;
	/* Asleep: awake between two naps for microseconds only. */
	while (!__atomic_load_n(&h->seen, __ATOMIC_ACQUIRE) &&
	       mono_ns() < limit)
		if (h->sleep)
			ts_sleep_ms(h->ms);
	if (h->sleep) {
		ts_sleep_ms(h->ms);
	} else {
		end = mono_ns() + h->ms * 1000000ULL;
		while (mono_ns() < end)
			;
	}
	return (void *)(intptr_t)amutex_unlock(&h->m);
}

static void wait_for_holder(struct __test_metadata *_metadata,
			    struct holder *h, int mapped)
{
	while (!__atomic_load_n(&h->locked, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	/* In the mapped mode, until the owner is seen in the state wanted. */
	if (mapped)
		ASSERT_NE(0, ts_wait_state(h->fd, h->tid, h->sleep ?
					   TASKSTATE_SLEEPING :
					   TASKSTATE_RUNNING, 2000));
	__atomic_store_n(&h->seen, 1, __ATOMIC_RELEASE);
}

/*
 * Take and release h->m once while a holder thread owns it (running or
 * asleep, as @h says), and log what this thread's waits did.
 */
static void lock_against_holder(struct __test_metadata *_metadata,
				struct holder *h, bool mapped)
{
	const struct amutex_stats *st = amutex_thread_stats();
	pthread_t th;
	void *rv;

	h->fd = taskstate_open();
	ASSERT_EQ(0, pthread_create(&th, NULL, hold, h));
	wait_for_holder(_metadata, h, mapped);
	EXPECT_EQ(0, amutex_lock(&h->m));
	EXPECT_EQ(0, amutex_unlock(&h->m));
	ASSERT_EQ(0, pthread_join(th, &rv));
	EXPECT_EQ(0, (intptr_t)rv);
	TH_LOG("spun %llu spin_limit %llu sleeps %llu unknown %llu",
	       (unsigned long long)st->spun, (unsigned long long)st->spin_limit,
	       (unsigned long long)st->sleeps, (unsigned long long)st->unknown);
}

TEST_F(mx, spins_while_owner_runs)
{
	static struct holder h = { .m = AMUTEX_INITIALIZER, .ms = 300 };
	const struct amutex_stats *st = amutex_thread_stats();
	int i;

	/*
	 * The owner computes, but a locker that first looks while it is
	 * preempted (a vCPU shared with it, a kernel thread) sleeps at once,
	 * as it should; then again, at most three times.  A mutex that never
	 * spins fails all three.
	 */
	for (i = 1; i <= 3; i++) {
		__atomic_store_n(&h.locked, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&h.seen, 0, __ATOMIC_RELAXED);
		lock_against_holder(_metadata, &h, self->mapped);
		if (!self->mapped || st->spin_limit || i == 3)
			break;
		taskstate_close(h.fd);
		TH_LOG("attempt %d: the owner was not seen running", i);
	}
	if (self->mapped) {
		/* It spun, for amutex_spin_max_ns, then slept: 300 ms is longer. */
		EXPECT_LE(1, st->spin_limit);
		EXPECT_LE(1, st->sleeps);
	} else {
		EXPECT_EQ(0, st->spin_limit);
		EXPECT_EQ(0, st->spun);
		EXPECT_LE(1, st->sleeps);
	}
	taskstate_close(h.fd);
}

TEST_F(mx, sleeps_at_once_while_owner_sleeps)
{
	static struct holder h = { .m = AMUTEX_INITIALIZER, .sleep = true, .ms = 300 };
	const struct amutex_stats *st = amutex_thread_stats();

	lock_against_holder(_metadata, &h, self->mapped);
	EXPECT_EQ(0, st->spin_limit);
	EXPECT_EQ(0, st->spun);
	EXPECT_LE(1, st->sleeps);
	/* Mapped: the owner's entry was readable (it located itself). */
	EXPECT_EQ(!self->mapped, !!st->unknown);
	taskstate_close(h.fd);
}

/* ---- taskstate_stuck_check() ---- */

struct stuck_threads {
	int pipe[2];
	int stop;
	pid_t tid[3];
};

/* 0: blocked in read(), 1: computing, 2: short sleeps. */
static void *stuck_worker(void *arg)
{
	struct stuck_threads *t = *(struct stuck_threads **)arg;
	int i = (int)((uintptr_t *)arg)[1];
	char c;

	t->tid[i] = ts_gettid();
	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
		if (i == 0 && read(t->pipe[0], &c, 1) <= 0)
			break;
		if (i == 2)
			ts_sleep_ms(1);
	}
	return NULL;
}

#define SLEEPERS	(1U << TASKSTATE_SLEEPING)

TEST(stuck_check_reports_long_sleepers_only)
{
	static struct stuck_threads t;
	uintptr_t args[3][2];
	struct taskstate_location l[3] = { 0 };
	struct taskstate_stuck out[3];
	struct taskstate_mapping m;
	uint32_t gone = 99;
	pthread_t th[3];
	int fd, i, n;

	fd = taskstate_open();
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", taskstate_dev_path(), strerror(-fd));
	/* With track_all=0, this process and its future threads. */
	ASSERT_EQ(0, taskstate_track(fd, getpid(), true, NULL));
	ASSERT_EQ(0, taskstate_mapping_open(fd, &m));
	ASSERT_EQ(0, pipe(t.pipe));
	for (i = 0; i < 3; i++) {
		args[i][0] = (uintptr_t)&t;
		args[i][1] = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stuck_worker, args[i]));
	}
	for (i = 0; i < 3; i++) {
		while (!__atomic_load_n(&t.tid[i], __ATOMIC_RELAXED))
			ts_sleep_ms(1);
		l[i].tid = t.tid[i];
	}
	ASSERT_EQ(3, taskstate_locate(fd, l, 3));
	ASSERT_NE(0, ts_wait_state(fd, t.tid[0], TASKSTATE_SLEEPING, 2000));
	ts_sleep_ms(400);

	memset(out, 0xcc, sizeof(out));
	/* The default mask is BLOCKED alone: a sleeper is not stuck. */
	EXPECT_EQ(0, taskstate_stuck_check(&m, l, 3, 200000000, 0, out, 3, NULL));
	n = taskstate_stuck_check(&m, l, 3, 200000000, SLEEPERS, out, 3, &gone);
	EXPECT_EQ(1, n);
	EXPECT_EQ(0, gone);
	EXPECT_EQ(0, out[0].which);
	EXPECT_EQ(TASKSTATE_SLEEPING, out[0].state);
	EXPECT_LE(200000000, out[0].age_ns);
	EXPECT_GT(60000000000ULL, out[0].age_ns);
	/* A longer threshold, another state, no room for the answer. */
	EXPECT_EQ(0, taskstate_stuck_check(&m, l, 3, 60000000000ULL, SLEEPERS, out, 3, NULL));
	EXPECT_EQ(0, taskstate_stuck_check(&m, l, 3, 200000000,
					   1U << TASKSTATE_BLOCKED, out, 3, NULL));
	EXPECT_EQ(1, taskstate_stuck_check(&m, l, 3, 200000000, SLEEPERS, NULL, 0, NULL));
	EXPECT_EQ(-EINVAL, taskstate_stuck_check(NULL, l, 3, 0, 0, NULL, 0, NULL));

	/* Gone: once the short sleeper's thread is freed, its entry is not its. */
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	close(t.pipe[1]);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	for (i = 0; i < 500; i++) {
		taskstate_stuck_check(&m, l, 3, 0, 0, NULL, 0, &gone);
		if (gone == 3)
			break;
		ts_sleep_ms(10);
	}
	EXPECT_EQ(3, gone);
	close(t.pipe[0]);
	taskstate_mapping_close(&m);
	taskstate_close(fd);
}

TEST_HARNESS_MAIN
