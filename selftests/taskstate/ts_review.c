// SPDX-License-Identifier: GPL-2.0
/*
 * ts_review: promises that need a load, a fault-injection build or a test
 * module to check, each as a test that fails against a module without the
 * guard it checks.
 *
 * Some tests need a particular module load; run_vm.sh provides it, and a
 * test run under another says so with a counted SKIP:
 *   untrack_process_racing_clone   track_all=0 (with track_all=1 every new
 *                                  thread is tracked whatever UNTRACK did);
 *                                  also run against the fault-injection
 *                                  build, which widens the race window
 *   snapshot_of_queued_sleeper     the test module taskstate_qsleeper.ko,
 *                                  its tid in $TS_QSLEEPER_TID
 *   nr_untracked_counts_threads    a table small enough to fill
 *                                  (max_threads <= 256) and track_all=0
 *   long_walks_with_full_table     track_all=1, max_threads <= 4096
 *   churn_occupancy                track_all=1
 *   snapshot_leaves_a_younger_slot the fault-injection build
 *                                  (snapshot_delay_ms), track_all=0
 *   failed_exec_from_thread_keeps_its_tid
 *                                  root (ns_last_pid), either track_all
 *   mmap_is_enodev_without_whole_word_loads
 *                                  the fault-injection build (map_enodev)
 * With no argument every test runs; with names, only those.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

FIXTURE(review) {
	int fd;
	struct taskstate_info info;
};

FIXTURE_SETUP(review)
{
	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/taskstate: %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, taskstate_info(self->fd, &self->info));
}

FIXTURE_TEARDOWN(review)
{
	taskstate_close(self->fd);
}

static uint64_t nr_untracked(int fd)
{
	struct taskstate_info info;

	return taskstate_info(fd, &info) ? ~0ULL : info.nr_untracked;
}

/* ---- 1. UNTRACK of a process racing clone() ---- */

static atomic_int chain_stop;

/*
 * A chain of threads: each creates the next and exits, so the process
 * always has threads being created.  A thread left tracked after an
 * UNTRACK passes its tracking on to the whole rest of its chain.
 */
static void *chain_link(void *arg)
{
	pthread_t next;
	unsigned int spin;

	for (spin = 0; spin < 2000; spin++)
		__asm__ __volatile__("" ::: "memory");
	while (!atomic_load(&chain_stop)) {
		if (!pthread_create(&next, NULL, chain_link, NULL)) {
			pthread_detach(next);
			return NULL;
		}
		ts_sleep_ms(1);
	}
	return NULL;
}

static void chain_process(int ready)
{
	pthread_t t;
	int i;

	for (i = 0; i < 2; i++) {
		if (pthread_create(&t, NULL, chain_link, NULL))
			_exit(1);
		pthread_detach(t);
	}
	(void)!write(ready, "x", 1);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(review, untrack_process_racing_clone, 120)
{
	int rounds = 0, leaked = 0, p[2];
	uint64_t end, nr;
	pid_t pid;
	char c;

	if (self->info.track_all)
		SKIP(return, "track_all=1 tracks every new thread anyway");
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		chain_process(p[1]);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);

	end = taskstate_now_ns() + 8000000000ULL;
	while (taskstate_now_ns() < end) {
		struct taskstate_entry *e;
		uint32_t n;
		int total;

		ASSERT_EQ(0, taskstate_track(self->fd, pid, true, &nr));
		ts_sleep_ms(rounds % 4);
		ASSERT_EQ(0, taskstate_untrack(self->fd, pid, true, &nr));
		/*
		 * A thread missed by the walk that the probe inserted would
		 * stay: a thread that exits in between is not shown (tid 0).
		 */
		ts_sleep_ms(5);
		total = taskstate_list(self->fd, pid, &e, NULL, &n);
		ASSERT_LE(0, total);
		free(e);
		if (total) {
			leaked++;
			TH_LOG("round %d: %d threads still tracked after UNTRACK",
			       rounds, total);
			taskstate_untrack(self->fd, pid, true, NULL);
			if (leaked >= 3)
				break;
		}
		rounds++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	TH_LOG("%d TRACK/UNTRACK rounds against two cloning chains", rounds);
	EXPECT_EQ(0, leaked);
	EXPECT_LT(10, rounds);
}

/* ---- 2. The snapshot of a task preempted in its sleep window ---- */

static atomic_int hog_stop;

static void *hog(void *arg)
{
	ts_pin(*(int *)arg);
	while (!atomic_load(&hog_stop))
		;
	return NULL;
}

TEST_F_TIMEOUT(review, snapshot_of_queued_sleeper, 120)
{
	unsigned int seen[TASKSTATE_NR_STATES] = { 0 };
	const char *tid_env = getenv("TS_QSLEEPER_TID");
	const char *cpu_env = getenv("TS_QSLEEPER_CPU");
	int cpu = cpu_env ? atoi(cpu_env) : 0, i;
	pthread_t h;
	pid_t tid;

	if (!tid_env)
		SKIP(return, "taskstate_qsleeper.ko not loaded by the runner");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	tid = atoi(tid_env);
	/* The test on the other CPU, a busy thread beside the sleeper. */
	ASSERT_EQ(0, ts_pin(cpu ? 0 : 1));
	atomic_store(&hog_stop, 0);
	ASSERT_EQ(0, pthread_create(&h, NULL, hog, &cpu));
	ts_sleep_ms(100);
	for (i = 0; i < 300; i++) {
		unsigned int st;

		/* Untracked and tracked again: the word is a new snapshot. */
		taskstate_untrack(self->fd, tid, false, NULL);
		ASSERT_EQ(0, taskstate_track(self->fd, tid, false, NULL));
		st = ts_state_of(self->fd, tid);
		seen[st]++;
		if (st != TASKSTATE_RUNNING && st != TASKSTATE_RUNNABLE)
			TH_LOG("round %d: %s", i, taskstate_state_name(st));
	}
	atomic_store(&hog_stop, 1);
	pthread_join(h, NULL);
	if (!self->info.track_all)
		taskstate_untrack(self->fd, tid, false, NULL);
	TH_LOG("RUNNING %u, RUNNABLE %u, SLEEPING %u, other %u",
	       seen[TASKSTATE_RUNNING], seen[TASKSTATE_RUNNABLE],
	       seen[TASKSTATE_SLEEPING],
	       300 - seen[TASKSTATE_RUNNING] - seen[TASKSTATE_RUNNABLE] -
	       seen[TASKSTATE_SLEEPING]);
	EXPECT_EQ(300, seen[TASKSTATE_RUNNING] + seen[TASKSTATE_RUNNABLE]);
	/* The window was exercised: it was found queued, not only running. */
	EXPECT_LT(0, seen[TASKSTATE_RUNNABLE]);
}

/*
 * Threads that wait, blocked in read(), until the write end of park_pipe
 * is closed, for the tests that fill the table: thousands of them cost
 * nothing while they wait.
 */
static int park_pipe[2];

static void *parked(void *arg)
{
	char c;

	__atomic_store_n((pid_t *)arg, ts_gettid(), __ATOMIC_RELEASE);
	(void)!read(park_pipe[0], &c, 1);
	return NULL;
}

static int park_start(void)
{
	return pipe(park_pipe);
}

static void park_stop_all(pthread_t *t, unsigned int n)
{
	unsigned int i;

	close(park_pipe[1]);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	close(park_pipe[0]);
}

/* ---- 4. Fork and exit churn: dead tasks' slots come back in time ---- */

static atomic_ulong churn_forks;
static atomic_int churn_stop;

static void *forker(void *arg)
{
	while (!atomic_load(&churn_stop)) {
		pid_t pid = fork();

		if (!pid)
			_exit(0);
		if (pid > 0 && waitpid(pid, NULL, 0) == pid)
			atomic_fetch_add(&churn_forks, 1);
	}
	return NULL;
}

/*
 * Short-lived processes at the highest rate two forkers sustain, for
 * $TS_CHURN_S seconds (default 10): the table's occupancy (nr_tracked)
 * against the tracked threads alive (LIST), whose difference is the
 * slots of dead tasks still waiting for delayed_put_task_struct()'s
 * grace period and then the module's own.  With lazy RCU (6.12's
 * CONFIG_RCU_LAZY) and plain call_rcu() these could wait about 10 s
 * each.  The numbers are logged; the test fails if a thread went
 * untracked while the table was never more than half full (slots waiting
 * for reuse count as neither tracked nor free, hence the margin).
 */
TEST_F_TIMEOUT(review, churn_occupancy, 300)
{
	const char *env = getenv("TS_CHURN_S");
	unsigned int secs = env ? atoi(env) : 10, i;
	uint64_t u0, dead, max_dead = 0, max_occ = 0, start;
	unsigned long forks;
	pthread_t f[2];

	if (!self->info.track_all)
		SKIP(return, "track_all=0: the churn's processes are not tracked");
	u0 = nr_untracked(self->fd);
	atomic_store(&churn_stop, 0);
	start = taskstate_now_ns();
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&f[i], NULL, forker, NULL));
	for (i = 0; i < secs * 5; i++) {
		struct taskstate_info info;
		struct taskstate_entry *e;
		uint32_t n;
		int live;

		ts_sleep_ms(200);
		ASSERT_EQ(0, taskstate_info(self->fd, &info));
		live = taskstate_list(self->fd, 0, &e, NULL, &n);
		ASSERT_LE(0, live);
		free(e);
		dead = info.nr_tracked > (uint64_t)live ?
		       info.nr_tracked - live : 0;
		if (dead > max_dead)
			max_dead = dead;
		if (info.nr_tracked > max_occ)
			max_occ = info.nr_tracked;
	}
	atomic_store(&churn_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(f[i], NULL);
	forks = atomic_load(&churn_forks);
	TH_LOG("%lu forks in %.1f s (%.0f/s); occupancy at most %llu of %u, dead slots at most %llu (%.2f s of exits)",
	       forks, (taskstate_now_ns() - start) / 1e9,
	       forks / ((taskstate_now_ns() - start) / 1e9),
	       (unsigned long long)max_occ, self->info.max_threads,
	       (unsigned long long)max_dead,
	       max_dead / (forks / ((taskstate_now_ns() - start) / 1e9)));
	EXPECT_LT(0, forks);
	if (2 * max_occ < self->info.max_threads)
		EXPECT_EQ(u0, nr_untracked(self->fd));
}

/* ---- 6. nr_untracked counts threads, not refused attempts ---- */

TEST_F_TIMEOUT(review, nr_untracked_counts_threads, 120)
{
	struct taskstate_info info;
	pthread_t *t;
	pid_t *tids;
	uint64_t u0, nr;
	unsigned int extra = 5, n, i;

	if (self->info.track_all || self->info.max_threads > 256)
		SKIP(return, "needs track_all=0 and max_threads <= 256");
	/* Our process, with inheritance: its new threads are tracked. */
	ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, &nr));
	ASSERT_EQ(0, taskstate_info(self->fd, &info));
	ASSERT_LE(info.nr_tracked, info.max_threads);
	n = info.max_threads - info.nr_tracked + extra;
	t = calloc(n, sizeof(*t));
	tids = calloc(n, sizeof(*tids));
	ASSERT_TRUE(t && tids);
	u0 = nr_untracked(self->fd);
	ASSERT_EQ(0, park_start());
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, parked, &tids[i]));
	for (i = 0; i < n; i++)
		while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
			ts_sleep_ms(1);
	/* Exactly the threads the full table could not take. */
	EXPECT_EQ(u0 + extra, nr_untracked(self->fd));

	/* Asking again and again for one of them: ENOSPC, not counted. */
	for (i = 0; i < 10; i++)
		EXPECT_EQ(-ENOSPC, taskstate_track(self->fd, tids[n - 1], false, NULL));
	EXPECT_EQ(u0 + extra, nr_untracked(self->fd));

	park_stop_all(t, n);
	taskstate_untrack(self->fd, getpid(), true, NULL);
	free(t);
	free(tids);
}

/* ---- 5. Long walks: a full table, read whole in one call ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One read() of the debugfs table in a new pid namespace: no row visible. */
static int read_in_empty_pidns(uint64_t *ns, ssize_t *len)
{
	char buf[4096];
	int status, p[2];
	pid_t pid;

	if (pipe(p) || unshare(CLONE_NEWPID))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd = open("/sys/kernel/debug/taskstate", O_RDONLY);
		uint64_t t0, r[2];

		if (fd < 0)
			_exit(1);
		t0 = mono_ns();
		r[1] = read(fd, buf, sizeof(buf));
		r[0] = mono_ns() - t0;
		(void)!write(p[1], r, sizeof(r));
		_exit(0);
	}
	if (read(p[0], buf, 16) != 16 || waitpid(pid, &status, 0) != pid)
		return -1;
	memcpy(ns, buf, 8);
	memcpy(len, buf + 8, sizeof(*len));
	return 0;
}

/*
 * With the table full, the two walks that can take the whole table in
 * one system call: SAMPLE of TASKSTATE_BATCH_MAX tids, and one read() of
 * the debugfs table by a reader that sees no row (a child pid namespace:
 * the page never fills).  Both reschedule per chunk (SAMPLE per 32 tids,
 * debugfs per 1024 slots); the time of the whole call, logged, is how
 * long a CPU would be held without that on a kernel without full
 * preemption.  Checks what the calls return.
 */
TEST_F_TIMEOUT(review, long_walks_with_full_table, 300)
{
	struct taskstate_entry *e;
	struct taskstate_info info;
	unsigned int n = 0, cap, i;
	pthread_t *t;
	pid_t *tids;
	uint64_t t0, sample_ns, u0;
	ssize_t len = -1;
	int found, status;
	pid_t pid;

	if (!self->info.track_all || self->info.max_threads > 4096)
		SKIP(return, "needs track_all=1 and max_threads <= 4096");
	cap = self->info.max_threads;
	t = calloc(cap + 8, sizeof(*t));
	tids = calloc(cap + 8, sizeof(*tids));
	e = calloc(TASKSTATE_BATCH_MAX, sizeof(*e));
	ASSERT_TRUE(t && tids && e);
	/* Threads until the table is full, with a few left untracked. */
	ASSERT_EQ(0, park_start());
	ASSERT_EQ(0, taskstate_info(self->fd, &info));
	u0 = info.nr_untracked;
	for (i = info.nr_tracked; i < cap + 8; i++) {
		pthread_attr_t a;

		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		ASSERT_EQ(0, pthread_create(&t[n], &a, parked, &tids[n]));
		pthread_attr_destroy(&a);
		n++;
	}
	for (i = 0; i < n; i++)
		while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
			ts_sleep_ms(1);
	/* Full: the table had to leave some of them untracked. */
	ASSERT_EQ(0, taskstate_info(self->fd, &info));
	EXPECT_LT(u0, info.nr_untracked);
	ASSERT_LT(0, n);
	for (i = 0; i < TASKSTATE_BATCH_MAX; i++)
		e[i].tid = tids[i % n];
	t0 = mono_ns();
	found = taskstate_sample(self->fd, e, NULL, TASKSTATE_BATCH_MAX);
	sample_ns = mono_ns() - t0;
	EXPECT_LE(TASKSTATE_BATCH_MAX / 2, found);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		uint64_t ns;

		if (read_in_empty_pidns(&ns, &len))
			_exit(77);
		/*
		 * The header only (one line, about 170 bytes since the
		 * per-state columns; a row is as long again): no slot is
		 * visible in that namespace.
		 */
		if (len <= 0 || len > 256)
			_exit(1);
		fprintf(stderr, "# debugfs: one read() over %u slots: %llu us\n",
			cap, (unsigned long long)(ns / 1000));
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	park_stop_all(t, n);
	TH_LOG("table full (%u slots, %u threads made): SAMPLE of %u tids %llu us, %llu ns per tid",
	       cap, n, TASKSTATE_BATCH_MAX,
	       (unsigned long long)(sample_ns / 1000),
	       (unsigned long long)(sample_ns / TASKSTATE_BATCH_MAX));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		SKIP(return, "cannot create a pid namespace");
	EXPECT_EQ(0, WEXITSTATUS(status));
	free(t);
	free(tids);
	free(e);
}

/* ---- 9. INFO's counts in a child pid namespace: system-wide ---- */

static int info_in_child_pidns(int fd)
{
	struct taskstate_info info;
	struct taskstate_entry *e;
	uint32_t n;
	int total;

	if (taskstate_track(fd, getpid(), false, NULL))
		return 2;
	total = taskstate_list(fd, 0, &e, NULL, &n);
	if (total < 0)
		return 3;
	free(e);
	if (taskstate_info(fd, &info))
		return 4;
	/* Only pid 1 is visible here; the count includes the outside. */
	if (getpid() != 1 || total != 1 || info.nr_tracked < 2) {
		fprintf(stderr, "pid %d, LIST total %d, nr_tracked %llu\n",
			getpid(), total, (unsigned long long)info.nr_tracked);
		return 5;
	}
	return 0;
}

TEST_F(review, info_counts_are_system_wide_in_child_pidns)
{
	int status;
	pid_t pid;

	/* At least one tracked thread outside: ours. */
	ASSERT_EQ(0, taskstate_track(self->fd, ts_gettid(), false, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(77);
		inner = fork();
		if (inner < 0)
			_exit(6);
		if (!inner)
			_exit(info_in_child_pidns(self->fd));
		if (waitpid(inner, &status, 0) != inner)
			_exit(7);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 8);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		SKIP(return, "cannot create a pid namespace");
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- TRACK racing an UNTRACK and a TRACK of the same thread ---- */

#define SNAPSHOT_PARAM	"/sys/module/taskstate/parameters/snapshot_delay_ms"

static int write_uint(const char *path, unsigned int v)
{
	char buf[16];
	int fd = open(path, O_WRONLY), n, ok;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%u", v);
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -EIO;
}

static uint64_t nr_tracked(int fd)
{
	struct taskstate_info info;

	return taskstate_info(fd, &info) ? ~0ULL : info.nr_tracked;
}

/* Until nr_tracked reads @want, at most 10 s. */
static bool wait_nr_tracked(int fd, uint64_t want)
{
	unsigned int ms;

	for (ms = 0; nr_tracked(fd) != want && ms < 10000; ms++)
		ts_sleep_ms(1);
	return nr_tracked(fd) == want;
}

struct track_call {
	pthread_t thread;
	int fd;
	pid_t tid;
	atomic_int ret;
	atomic_int done;
};

static void *track_call_fn(void *arg)
{
	struct track_call *c = arg;

	atomic_store(&c->ret, taskstate_track(c->fd, c->tid, false, NULL));
	atomic_store(&c->done, 1);
	return NULL;
}

static int track_call_start(struct track_call *c, int fd, pid_t tid)
{
	c->fd = fd;
	c->tid = tid;
	atomic_store(&c->done, 0);
	return pthread_create(&c->thread, NULL, track_call_fn, c);
}

struct pipe_sleeper {
	pthread_t thread;
	int pipe[2];
	atomic_int tid;
};

/* Asleep in read() until its pipe closes. */
static void *pipe_sleeper_fn(void *arg)
{
	struct pipe_sleeper *x = arg;
	char c;

	atomic_store(&x->tid, ts_gettid());
	while (read(x->pipe[0], &c, 1) == 1)
		;
	return NULL;
}

/*
 * A TRACK gives the thread its first word a grace period after its own
 * insert (ts_snapshot()).  If another caller untracks the thread and a
 * third tracks it again meanwhile, the slot the first one then finds is
 * younger than its grace period, and it must leave it to the third: a
 * probe that missed that slot may still be switching the thread.  The
 * fault-injection build holds each TRACK (snapshot_delay_ms, as set when
 * the call began) between its grace period and its snapshot, long
 * enough to do that in between: the first TRACK returns while the third
 * still waits, and the thread, asleep all along, must have no word yet
 * (the first left the slot alone), then its SLEEPING word once the
 * third has returned.
 */
TEST_F_TIMEOUT(review, snapshot_leaves_a_younger_slot, 120)
{
	struct pipe_sleeper x;
	struct track_call a, c;
	uint64_t base, nr, w, early;
	bool stalled;
	long long vcsw;
	pid_t tid;
	int late;

	if (access(SNAPSHOT_PARAM, W_OK))
		SKIP(return, "needs the fault-injection build (snapshot_delay_ms)");
	if (self->info.track_all)
		SKIP(return, "needs track_all=0");
	atomic_store(&x.tid, 0);
	ASSERT_EQ(0, pipe(x.pipe));
	ASSERT_EQ(0, pthread_create(&x.thread, NULL, pipe_sleeper_fn, &x));
	while (!atomic_load(&x.tid))
		ts_sleep_ms(1);
	tid = atomic_load(&x.tid);
	/* Asleep in read(): its count of voluntary switches stops. */
	do {
		vcsw = ts_nvcsw(tid);
		ts_sleep_ms(50);
	} while (vcsw != ts_nvcsw(tid));
	base = nr_tracked(self->fd);

	/* The first TRACK inserts, then waits 2 s after its grace period. */
	ASSERT_EQ(0, write_uint(SNAPSHOT_PARAM, 2000));
	ASSERT_EQ(0, track_call_start(&a, self->fd, tid));
	ASSERT_TRUE(wait_nr_tracked(self->fd, base + 1));
	/* Not yet given its word: only the first TRACK would give it. */
	early = ts_sample_word(self->fd, tid);
	/* Untracked, then tracked by a third call that waits 10 s. */
	ASSERT_EQ(0, taskstate_untrack(self->fd, tid, false, &nr));
	EXPECT_EQ(1, nr);
	ASSERT_EQ(0, write_uint(SNAPSHOT_PARAM, 10000));
	ASSERT_EQ(0, track_call_start(&c, self->fd, tid));
	ASSERT_TRUE(wait_nr_tracked(self->fd, base + 1));
	/* And the first still waits: its snapshot comes after this insert. */
	late = atomic_load(&a.done);
	ASSERT_EQ(0, write_uint(SNAPSHOT_PARAM, 0));

	pthread_join(a.thread, NULL);
	EXPECT_EQ(0, atomic_load(&a.ret));
	w = ts_sample_word(self->fd, tid);
	/* Sampled before the third's snapshot, 8 s later than the first's. */
	stalled = early || late || atomic_load(&c.done);
	if (!stalled)
		EXPECT_EQ(0, w)
			TH_LOG("the first TRACK gave the younger slot %s",
			       taskstate_state_name(taskstate_state(w)));
	pthread_join(c.thread, NULL);
	EXPECT_EQ(0, atomic_load(&c.ret));
	EXPECT_EQ(TASKSTATE_SLEEPING, ts_state_of(self->fd, tid));
	/* Still asleep in read(): no event wrote the words checked. */
	EXPECT_EQ(vcsw, ts_nvcsw(tid));
	EXPECT_EQ(0, taskstate_untrack(self->fd, tid, false, &nr));
	close(x.pipe[1]);
	pthread_join(x.thread, NULL);
	close(x.pipe[0]);
	/*
	 * A guest stalled for seconds: the calls did not overlap as
	 * planned, and the check above could not be made.
	 */
	if (stalled)
		SKIP(return, "calls not overlapped (first's word at insert %d, first done before the third's insert %d)",
		     !!early, late);
}

/*
 * An ELF executable for this machine that exec accepts up to its point
 * of no return and then fails: its one segment is at an address above
 * every user address space (x86-64 and arm64: the kernel's half; 32-bit:
 * above TASK_SIZE), which load_elf_binary() tries to map only after
 * begin_new_exec() (6.1 fs/binfmt_elf.c), so the exec ends in SIGSEGV.
 * Written to @path; returns 0 or -1.
 */
static int write_late_failing_elf(const char *path)
{
	struct {
		ElfW(Ehdr) eh;
		ElfW(Phdr) ph;
	} f;
	ElfW(Ehdr) self;
	int fd, ok;

	fd = open("/proc/self/exe", O_RDONLY);
	if (fd < 0)
		return -1;
	ok = read(fd, &self, sizeof(self)) == sizeof(self);
	close(fd);
	if (!ok)
		return -1;
	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, self.e_ident, EI_NIDENT);
	f.eh.e_type = ET_EXEC;
	f.eh.e_machine = self.e_machine;
	f.eh.e_flags = self.e_flags;
	f.eh.e_version = EV_CURRENT;
	f.eh.e_phoff = sizeof(f.eh);
	f.eh.e_ehsize = sizeof(f.eh);
	f.eh.e_phentsize = sizeof(f.ph);
	f.eh.e_phnum = 1;
	f.ph.p_type = PT_LOAD;
	f.ph.p_flags = PF_R | PF_X;
	f.ph.p_vaddr = sizeof(void *) == 8 ? (ElfW(Addr))0xffff800000000000ULL :
					     (ElfW(Addr))0xfffff000UL;
	f.ph.p_filesz = sizeof(f);
	f.ph.p_memsz = sizeof(f);
	f.ph.p_align = 0x1000;
	f.eh.e_entry = f.ph.p_vaddr + sizeof(f);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		return -1;
	ok = write(fd, &f, sizeof(f)) == sizeof(f) && !fchmod(fd, 0755);
	return close(fd) || !ok ? -1 : 0;
}

struct late_exec {
	int tid_pipe[2];
	int go_pipe[2];
	const char *path;
};

/* The non-leader thread: reports its tid, waits, execs the file. */
static void *late_exec_fn(void *arg)
{
	struct late_exec *x = arg;
	char *argv[] = { (char *)x->path, NULL }, *envp[] = { NULL };
	pid_t tid = ts_gettid();
	char c;

	if (write(x->tid_pipe[1], &tid, sizeof(tid)) != sizeof(tid) ||
	    read(x->go_pipe[0], &c, 1) != 1)
		_exit(2);
	execve(x->path, argv, envp);
	_exit(100 + (errno & 63));	/* failed before the point of no return */
}

static int late_exec_child(struct late_exec *x)
{
	struct rlimit nocore = { 0, 0 };
	pthread_t t;

	setrlimit(RLIMIT_CORE, &nocore);	/* no core dump: SIGSEGV is expected */
	if (pthread_create(&t, NULL, late_exec_fn, x))
		_exit(4);
	for (;;)
		pause();
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	return close(fd) || !ok ? -1 : 0;
}

/* Entries of the mapping that carry @tid: how many, and how many not DEAD. */
static void count_tid(const struct taskstate_mapping *m, uint32_t tid,
		      int *all, int *live)
{
	uint32_t i, t, gen;
	uint64_t w;

	*all = *live = 0;
	for (i = 0; i < m->nr; i++) {
		if (taskstate_mapping_scan(m, i, &t, &w, &gen) || t != tid)
			continue;
		(*all)++;
		if (taskstate_state(w) != TASKSTATE_DEAD)
			(*live)++;
	}
}

/*
 * exec from a non-leader thread T of process L gives T the tid L in
 * de_thread() and frees T's old tid.  When the exec then fails (past the
 * point of no return the kernel kills the process with SIGSEGV), no
 * sched_process_exec fires: the entry must still follow its thread, and
 * show L, not the old tid, which a new thread may hold by now.  The
 * process stays a zombie (waitid() WNOWAIT) so its thread is not freed,
 * and the old tid is handed to a new process through ns_last_pid: then
 * one entry, the new process's, carries it.
 */
TEST_F_TIMEOUT(review, failed_exec_from_thread_keeps_its_tid, 120)
{
	char path[] = "/tmp/ts_late_exec.XXXXXX", buf[32];
	struct taskstate_location l = { 0 };
	struct taskstate_mapping m;
	struct late_exec x;
	uint32_t tid, gen;
	pid_t p, q = -1, old;
	siginfo_t si;
	uint64_t w = 0;
	int fd, i, all, live;

	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, write_late_failing_elf(path));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	x.path = path;
	ASSERT_EQ(0, pipe(x.tid_pipe));
	ASSERT_EQ(0, pipe(x.go_pipe));
	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(late_exec_child(&x));
	ASSERT_EQ(sizeof(old), read(x.tid_pipe[0], &old, sizeof(old)));
	ASSERT_NE(p, old);
	if (!self->info.track_all)
		ASSERT_EQ(0, taskstate_track(self->fd, p, true, NULL));
	l.tid = old;
	ASSERT_EQ(1, taskstate_locate(self->fd, &l, 1));
	ASSERT_EQ(0, taskstate_mapping_scan(&m, l.index, &tid, &w, &gen));
	ASSERT_EQ((uint32_t)old, tid);

	ASSERT_EQ(1, write(x.go_pipe[1], "x", 1));
	/* Exited, not reaped: its thread is not freed, its entry is kept. */
	ASSERT_EQ(0, waitid(P_PID, p, &si, WEXITED | WNOWAIT));
	EXPECT_EQ(SIGSEGV, si.si_status)
		TH_LOG("the exec did not fail after its point of no return (code %d, status %d: 100 + errno)",
		       si.si_code, si.si_status);
	/* Its final switch comes a moment after exit_notify(). */
	for (i = 0; i < 5000; i++) {
		if (!taskstate_mapping_scan(&m, l.index, &tid, &w, &gen) &&
		    taskstate_state(w) == TASKSTATE_DEAD)
			break;
		ts_sleep_ms(1);
	}
	EXPECT_EQ(l.gen, gen);
	EXPECT_EQ(TASKSTATE_DEAD, taskstate_state(w));
	EXPECT_EQ((uint32_t)p, tid)
		TH_LOG("the thread that exec'd (now tid %d) keeps its old tid %d in its entry",
		       (int)p, (int)old);

	/* The old tid to a new process, and one entry with it. */
	snprintf(buf, sizeof(buf), "%d", (int)old - 1);
	for (i = 0; i < 50 && q != old; i++) {
		if (q > 0) {
			kill(q, SIGKILL);
			waitpid(q, NULL, 0);
		}
		ASSERT_EQ(0, write_str("/proc/sys/kernel/ns_last_pid", buf));
		q = fork();
		ASSERT_LE(0, q);
		if (!q) {
			for (;;)
				pause();
		}
	}
	ASSERT_EQ(old, q) TH_LOG("tid %d not reused in 50 forks", (int)old);
	if (!self->info.track_all)
		ASSERT_EQ(0, taskstate_track(self->fd, q, true, NULL));
	count_tid(&m, old, &all, &live);
	EXPECT_EQ(1, all);
	EXPECT_EQ(1, live);

	kill(q, SIGKILL);
	waitpid(q, NULL, 0);
	waitpid(p, NULL, 0);
	unlink(path);
	taskstate_mapping_close(&m);
}

#define MAP_ENODEV_PARAM	"/sys/module/taskstate/parameters/map_enodev"

/*
 * Where user space cannot load a 64-bit word whole (CONFIG_GENERIC_ATOMIC64)
 * mmap() is ENODEV and the ioctls work: shown with the fault-injection
 * build's map_enodev, which takes that branch on any architecture.
 */
TEST_F(review, mmap_is_enodev_without_whole_word_loads)
{
	struct taskstate_location l = { .tid = (uint32_t)ts_gettid() };
	struct taskstate_mapping m, m2;
	uint64_t w;
	void *p;

	if (access(MAP_ENODEV_PARAM, W_OK))
		SKIP(return, "needs the fault-injection build (map_enodev)");
	ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, NULL));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	ASSERT_EQ(0, write_str(MAP_ENODEV_PARAM, "1"));
	p = mmap(NULL, m.size, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(ENODEV, errno);
	if (p != MAP_FAILED)
		munmap(p, m.size);
	EXPECT_EQ(-ENODEV, taskstate_mapping_open(self->fd, &m2));
	EXPECT_EQ(1, taskstate_locate(self->fd, &l, 1));
	EXPECT_EQ(TASKSTATE_RUNNING, ts_state_of(self->fd, ts_gettid()));
	ASSERT_EQ(0, write_str(MAP_ENODEV_PARAM, "0"));
	/* The existing mapping was never affected. */
	EXPECT_EQ(0, taskstate_mapping_read(&m, &l, &w, NULL));
	taskstate_mapping_close(&m);
	EXPECT_EQ(0, taskstate_untrack(self->fd, getpid(), true, NULL));
}

int main(int argc, char **argv)
{
	return ts_harness_main(argc, argv);
}
