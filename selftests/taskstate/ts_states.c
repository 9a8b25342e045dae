// SPDX-License-Identifier: GPL-2.0
/*
 * Each state a program can provoke, the time in the word, the life cycle of
 * tracked threads and pid reuse: provoke the real thing, then read the word.
 *
 * Works with track_all=1 and with track_all=0: the fixture tracks the test
 * process with TASKSTATE_TRACK_PROCESS, so its threads and children are
 * tracked in both modes.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "util.h"

FIXTURE(ts) {
	int fd;
};

FIXTURE_SETUP(ts)
{
	uint64_t nr;

	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/taskstate: %s",
				      strerror(-self->fd));
	/* The harness runs each test in a child: track it and its children. */
	ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, &nr));
	ASSERT_LE(1, nr);
	/* Every word read below is also checked through the mapping. */
	ASSERT_EQ(0, ts_xcheck_map(self->fd));
}

FIXTURE_TEARDOWN(ts)
{
	taskstate_close(self->fd);
}

static atomic_int stop;

struct tid_thread {
	pthread_t thread;
	pid_t tid;
	void *(*fn)(struct tid_thread *);
	int cpu;		/* spin(): pin to this CPU if >= 0 */
	int pipe[2];		/* read_pipe() */
	uint32_t futex;		/* wait_futex() */
};

static void *tid_thread_main(void *arg)
{
	struct tid_thread *t = arg;

	__atomic_store_n(&t->tid, ts_gettid(), __ATOMIC_RELEASE);
	return t->fn(t);
}

/* Start @fn in a thread and return once its tid is known. */
static pid_t start_thread(struct tid_thread *t,
			  void *(*fn)(struct tid_thread *))
{
	t->fn = fn;
	t->tid = 0;
	if (pthread_create(&t->thread, NULL, tid_thread_main, t))
		return -1;
	while (!__atomic_load_n(&t->tid, __ATOMIC_ACQUIRE))
		sched_yield();
	return t->tid;
}

static void *spin(struct tid_thread *t)
{
	if (t->cpu >= 0)
		ts_pin(t->cpu);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		;
	return NULL;
}

/* Sample @n threads every 2 ms for @samples rounds, counting states. */
static void count_states(int fd, struct tid_thread *t, int n, int samples,
			 int seen[][TASKSTATE_NR_STATES])
{
	int i, j;

	for (i = 0; i < samples; i++) {
		for (j = 0; j < n; j++)
			seen[j][ts_state_of(fd, t[j].tid)]++;
		ts_sleep_ms(2);
	}
}

/* RUNNING: a spinning thread is seen on a CPU, never asleep. */
TEST_F(ts, running)
{
	int seen[1][TASKSTATE_NR_STATES] = { { 0 } };
	struct tid_thread t = { .cpu = -1 };

	stop = 0;
	ASSERT_LT(0, start_thread(&t, spin));
	count_states(self->fd, &t, 1, 200, seen);
	stop = 1;
	pthread_join(t.thread, NULL);
	EXPECT_LT(0, seen[0][TASKSTATE_RUNNING]);
	EXPECT_EQ(0, seen[0][TASKSTATE_NONE]);
	EXPECT_EQ(0, seen[0][TASKSTATE_SLEEPING]);
	EXPECT_EQ(0, seen[0][TASKSTATE_BLOCKED]);
	EXPECT_EQ(0, seen[0][TASKSTATE_DEAD]);
}

/* RUNNABLE: two spinners sharing one CPU each wait for it at times. */
TEST_F(ts, runnable)
{
	int seen[2][TASKSTATE_NR_STATES] = { { 0 } };
	struct tid_thread t[2] = { { .cpu = 0 }, { .cpu = 0 } };
	int j;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs: the sampler must not share one");
	ASSERT_EQ(0, ts_pin(1));
	stop = 0;
	for (j = 0; j < 2; j++)
		ASSERT_LT(0, start_thread(&t[j], spin));
	count_states(self->fd, t, 2, 300, seen);
	stop = 1;
	for (j = 0; j < 2; j++) {
		pthread_join(t[j].thread, NULL);
		EXPECT_LT(0, seen[j][TASKSTATE_RUNNABLE]);
		EXPECT_LT(0, seen[j][TASKSTATE_RUNNING]);
		EXPECT_EQ(0, seen[j][TASKSTATE_SLEEPING]);
		EXPECT_EQ(0, seen[j][TASKSTATE_BLOCKED]);
	}
}

static void *wait_futex(struct tid_thread *t)
{
	while (!__atomic_load_n(&t->futex, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &t->futex, FUTEX_WAIT, 0, NULL, NULL, 0);
	return NULL;
}

static void wake_futex(struct tid_thread *t)
{
	__atomic_store_n(&t->futex, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &t->futex, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void *sleep_long(struct tid_thread *t)
{
	(void)t;
	ts_sleep_ms(3000);
	return NULL;
}

static void *read_pipe(struct tid_thread *t)
{
	char c;

	return (void *)(long)read(t->pipe[0], &c, 1);
}

/* SLEEPING: futex wait, nanosleep and a read on an empty pipe. */
TEST_F(ts, sleeping_futex)
{
	struct tid_thread t = { .futex = 0 };
	pid_t tid = start_thread(&t, wait_futex);

	ASSERT_LT(0, tid);
	EXPECT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_SLEEPING, 10000));
	wake_futex(&t);
	pthread_join(t.thread, NULL);
}

TEST_F(ts, sleeping_nanosleep)
{
	struct tid_thread t;
	pid_t tid = start_thread(&t, sleep_long);

	ASSERT_LT(0, tid);
	EXPECT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_SLEEPING, 10000));
	pthread_join(t.thread, NULL);
}

TEST_F(ts, sleeping_pipe)
{
	struct tid_thread t;
	pid_t tid;

	ASSERT_EQ(0, pipe(t.pipe));
	tid = start_thread(&t, read_pipe);
	ASSERT_LT(0, tid);
	EXPECT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_SLEEPING, 10000));
	ASSERT_EQ(1, write(t.pipe[1], "x", 1));
	pthread_join(t.thread, NULL);
	close(t.pipe[0]);
	close(t.pipe[1]);
}

/*
 * Delayed dequeue (EEVDF, 6.12 and later): a fair task that goes to sleep
 * while it is ahead of its run queue (negative lag: it ran more than its
 * share) is not dequeued at once.  It stays on the run queue, on_rq set,
 * with se.sched_delayed, until it is picked again or woken.  It is asleep
 * all the same: its word must read SLEEPING, never RUNNABLE.
 *
 * Provoked by a sleeper at nice 19 that shares CPU 0 with a spinner at
 * nice 0: each round it spins 0.25 to 1 ms of its own CPU time, which at
 * its weight puts it far ahead of the queue's average, then waits on a
 * futex.  The main thread, on CPU 1, reads the word once the sleeper has
 * switched out, then wakes it.  With ts_task_queued() reduced to on_rq,
 * 39 of 40 rounds read RUNNABLE on 6.12 (tried by hand); on a kernel
 * without delayed dequeue the rounds test the plain sleep.
 */
struct dd_sleeper {
	struct tid_thread t;
	uint32_t round;		/* main -> sleeper: start round N */
	uint32_t waiting;	/* sleeper -> main: about to wait, round N */
	uint32_t release;	/* main -> sleeper (futex): round N may end */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *dd_sleep_loop(struct tid_thread *t)
{
	struct dd_sleeper *d = (struct dd_sleeper *)t;
	uint32_t r, v, done = 0;
	uint64_t end;

	ts_pin(0);
	/* Light against the spinner: ahead of the queue after a short run. */
	setpriority(PRIO_PROCESS, 0, 19);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		r = __atomic_load_n(&d->round, __ATOMIC_ACQUIRE);
		if (r == done) {
			sched_yield();
			continue;
		}
		end = thread_cpu_ns() + 250000ULL * (1 + r % 4);
		while (thread_cpu_ns() < end)
			;
		__atomic_store_n(&d->waiting, r, __ATOMIC_RELEASE);
		while ((v = __atomic_load_n(&d->release, __ATOMIC_ACQUIRE)) != r)
			syscall(SYS_futex, &d->release, FUTEX_WAIT, v, NULL,
				NULL, 0);
		done = r;
	}
	return NULL;
}

TEST_F_TIMEOUT(ts, sleeping_while_delayed_dequeue, 120)
{
	int seen[TASKSTATE_NR_STATES] = { 0 };
	struct tid_thread hog = { .cpu = 0 };
	struct dd_sleeper d = { .round = 0 };
	const uint32_t rounds = 20;
	uint32_t r, late = 0, never = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs: the sampler must not share one");
	ASSERT_EQ(0, ts_pin(1));
	stop = 0;
	ASSERT_LT(0, start_thread(&hog, spin));
	ASSERT_LT(0, start_thread(&d.t, dd_sleep_loop));
	for (r = 1; r <= rounds; r++) {
		__atomic_store_n(&d.round, r, __ATOMIC_RELEASE);
		while (__atomic_load_n(&d.waiting, __ATOMIC_ACQUIRE) != r)
			ts_sleep_ms(1);
		/* Past the futex wait's switch-out, as a rule. */
		ts_sleep_ms(20);
		seen[ts_state_of(self->fd, d.t.tid)]++;
		/*
		 * A preemptible kernel (7.2's) may preempt the sleeper between
		 * setting its sleep state and schedule(): it is RUNNABLE then,
		 * truly, and at nice 19 may wait long for the CPU before it
		 * switches out asleep.  Wrongly counted as queued, a delayed
		 * task stays RUNNABLE until woken: give it 1.5 s.
		 */
		if (taskstate_state(ts_word_of(self->fd, d.t.tid)) !=
		    TASKSTATE_SLEEPING) {
			late++;
			if (!ts_wait_state(self->fd, d.t.tid,
					   TASKSTATE_SLEEPING, 1500))
				never++;
		}
		__atomic_store_n(&d.release, r, __ATOMIC_RELEASE);
		syscall(SYS_futex, &d.release, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	stop = 1;
	pthread_join(d.t.thread, NULL);
	pthread_join(hog.thread, NULL);
	TH_LOG("%u rounds, after 20 ms: %d SLEEPING, %d RUNNABLE, %d RUNNING; %u not yet SLEEPING, %u never within 1.5 s",
	       rounds, seen[TASKSTATE_SLEEPING], seen[TASKSTATE_RUNNABLE],
	       seen[TASKSTATE_RUNNING], late, never);
	EXPECT_EQ(0, never);
}

/*
 * BLOCKED: a vfork parent waits for its child in an uninterruptible
 * (killable) wait, wait_for_vfork_done().  The vforking thread is
 * blocked; the test's main thread watches it.
 */
static void *vfork_and_wait(struct tid_thread *t)
{
	pid_t pid;

	pid = vfork();
	if (pid == 0) {
		/*
		 * Until the test has seen the parent BLOCKED (t->futex, in
		 * the memory vfork shares), at most 30 s: a timed wait could
		 * end while a loaded host stalls the test.
		 */
		struct timespec ts = { 0, 10 * 1000000L };
		int i;

		for (i = 0; i < 3000 && !__atomic_load_n(&t->futex, __ATOMIC_ACQUIRE); i++)
			nanosleep(&ts, NULL);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return NULL;
}

TEST_F(ts, blocked_vfork)
{
	struct tid_thread t = { .futex = 0 };
	pid_t tid = start_thread(&t, vfork_and_wait);

	ASSERT_LT(0, tid);
	EXPECT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_BLOCKED, 10000));
	__atomic_store_n(&t.futex, 1, __ATOMIC_RELEASE);
	pthread_join(t.thread, NULL);
}

static pid_t fork_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		ts_sleep_ms(10000);
		_exit(0);
	}
	return pid;
}

/* STOPPED: SIGSTOP; and SIGCONT ends it. */
TEST_F(ts, stopped)
{
	pid_t pid = fork_sleeper();
	int status;

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	/* The parent hears of the stop just before the child switches out. */
	EXPECT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_STOPPED, 10000));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	EXPECT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_SLEEPING, 10000));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* TRACED: a ptrace stop (the tracee's signal-delivery stop). */
TEST_F(ts, traced)
{
	pid_t pid = fork_sleeper();
	int status;

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, ptrace(PTRACE_SEIZE, pid, NULL, NULL));
	ASSERT_EQ(0, ptrace(PTRACE_INTERRUPT, pid, NULL, NULL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSTOPPED(status));
	EXPECT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_TRACED, 10000));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* DEAD: an unreaped zombie child. */
TEST_F(ts, dead_zombie)
{
	siginfo_t si;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	ASSERT_LT(0, pid);
	/* Wait for the exit without reaping it. */
	ASSERT_EQ(0, waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	/* Reported a zombie just before its final switch. */
	EXPECT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_DEAD, 10000));
	waitpid(pid, NULL, 0);
	EXPECT_EQ(0, ts_word_of(self->fd, pid));
}

/*
 * DEAD: a thread group leader that exited while another thread runs on.
 * The other thread lives until the test closes the pipe, however slow
 * the kernel (a debug kernel under TCG can take over a second to get
 * there).
 */
static void *linger(void *arg)
{
	char c;

	while (read(*(int *)arg, &c, 1) > 0)
		;
	return NULL;
}

TEST_F(ts, dead_leader_of_live_process)
{
	int p[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	if (pid == 0) {
		pthread_t th;

		close(p[1]);
		pthread_create(&th, NULL, linger, &p[0]);
		pthread_exit(NULL);
	}
	ASSERT_LT(0, pid);
	close(p[0]);
	EXPECT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_DEAD, 10000));
	close(p[1]);
	waitpid(pid, NULL, 0);
}

/* Time: SINCE_NS never in the future, never backwards, for any thread. */
static void *sleep_spin_loop(struct tid_thread *t)
{
	(void)t;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t end = taskstate_now_ns() + 500000;

		while (taskstate_now_ns() < end)
			;
		ts_sleep_ms(1);
	}
	return NULL;
}

TEST_F(ts, since_never_future_never_backwards)
{
	struct tid_thread t[4];
	uint64_t last_since[4] = { 0 };
	int changes = 0, i, j, k;

	stop = 0;
	for (j = 0; j < 4; j++)
		ASSERT_LT(0, start_thread(&t[j], sleep_spin_loop));
	for (i = 0; i < 300; i++) {
		struct taskstate_entry e[4];
		uint64_t now;

		for (j = 0; j < 4; j++)
			e[j].tid = t[j].tid;
		ASSERT_EQ(4, taskstate_sample(self->fd, e, NULL, 4));
		now = taskstate_now_ns();
		for (k = 0; k < 4; k++) {
			uint64_t since = taskstate_since_ns(e[k].word);

			ASSERT_LE(since, now) TH_LOG("tid %d", e[k].tid);
			ASSERT_LE(last_since[k], since) TH_LOG("tid %d",
							       e[k].tid);
			changes += since != last_since[k];
			last_since[k] = since;
		}
		ts_sleep_ms(2);
	}
	stop = 1;
	for (j = 0; j < 4; j++)
		pthread_join(t[j].thread, NULL);
	/* The workload changed state all along: the check had material. */
	EXPECT_LT(100, changes);
}

/* Time: a thread asleep for 300 ms keeps one SINCE_NS; its age grows. */
/* Long enough for the watch below even on a loaded TCG host. */
/*
 * The sleeper reads a pipe until the test writes it, not a timed sleep: a
 * loaded host can stall the guest past any nap, and a timed sleeper would
 * wake, and change its word, in the middle of the samples.
 */
TEST_F(ts, since_stays_while_state_does)
{
	struct tid_thread t;
	uint64_t w0, w = 0, now0, now;
	int samples = 0;

	ASSERT_EQ(0, pipe(t.pipe));
	ASSERT_LT(0, start_thread(&t, read_pipe));
	w0 = ts_wait_state(self->fd, t.tid, TASKSTATE_SLEEPING, 10000);
	now0 = taskstate_now_ns();
	ASSERT_NE(0, w0);
	/*
	 * For 200 ms and at least five samples (a loaded TCG host can stretch
	 * the 20 ms naps), well before it wakes, the word does not move.
	 */
	/* The exit test uses the last sample's own time, which it checks. */
	now = now0;
	while (now - now0 < 200000000ULL || samples < 5) {
		ts_sleep_ms(20);
		w = ts_word_of(self->fd, t.tid);
		now = taskstate_now_ns();
		ASSERT_EQ(w0, w);
		samples++;
	}
	EXPECT_LE(taskstate_age_ns(w0, now0) + 200000000ULL,
		  taskstate_age_ns(w, now));
	EXPECT_LE(5, samples);
	ASSERT_EQ(1, write(t.pipe[1], "x", 1));
	pthread_join(t.thread, NULL);
	close(t.pipe[0]);
	close(t.pipe[1]);
}

/* Life cycle: the new threads and children of a tracked process appear. */
TEST_F(ts, new_threads_and_children_appear)
{
	struct tid_thread t;
	int status;
	pid_t pid;

	/* Waits bounded by 10 s: a loaded host stalls the guest for seconds. */
	ASSERT_EQ(0, pipe(t.pipe));
	ASSERT_LT(0, start_thread(&t, read_pipe));
	EXPECT_NE(0, ts_wait_state(self->fd, t.tid, TASKSTATE_SLEEPING, 10000));
	pid = fork();
	if (pid == 0) {
		/* A grandchild too. */
		pid_t gc = fork_sleeper();
		int fd = taskstate_open();
		bool ok = gc > 0 && fd >= 0 &&
			  ts_wait_state(fd, gc, TASKSTATE_SLEEPING, 10000);

		kill(gc, SIGKILL);
		_exit(ok ? 0 : 1);
	}
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("grandchild not tracked");
	ASSERT_EQ(1, write(t.pipe[1], "x", 1));
	pthread_join(t.thread, NULL);
	close(t.pipe[0]);
	close(t.pipe[1]);
}

/* Life cycle: a freed thread disappears. */
static void *linger_0(void *arg)
{
	return arg;
}

static void *exit_now(struct tid_thread *t)
{
	(void)t;
	return NULL;
}

TEST_F(ts, freed_threads_disappear)
{
	struct tid_thread t;
	uint64_t end;

	ASSERT_LT(0, start_thread(&t, exit_now));
	pthread_join(t.thread, NULL);
	/* Freed a grace period or two after it exits; 20 s on a loaded host. */
	end = taskstate_now_ns() + 20000000000ULL;
	while (ts_word_of(self->fd, t.tid) && taskstate_now_ns() < end)
		ts_sleep_ms(5);
	EXPECT_EQ(0, ts_word_of(self->fd, t.tid));
}

static uint32_t count_own_threads(int fd)
{
	struct taskstate_entry *e;
	uint32_t n = 0;

	if (taskstate_list(fd, getpid(), &e, NULL, &n) < 0)
		return UINT32_MAX;
	free(e);
	return n;
}

/* Life cycle: after 10,000 short-lived threads occupancy is back. */
/* 600 s: the debug kernels (KASAN, lockdep) under emulation are slow. */
TEST_F_TIMEOUT(ts, occupancy_back_after_10000_threads, 600)
{
	struct taskstate_info before, after;
	uint32_t own_before, own;
	pthread_t th[16];
	uint64_t end;
	int i, j;

	ASSERT_EQ(0, taskstate_info(self->fd, &before));
	own_before = count_own_threads(self->fd);
	ASSERT_EQ(1, own_before);
	for (i = 0; i < 10000; i += 16) {
		for (j = 0; j < 16; j++)
			ASSERT_EQ(0, pthread_create(&th[j], NULL, linger_0,
						    NULL));
		for (j = 0; j < 16; j++)
			pthread_join(th[j], NULL);
	}
	end = taskstate_now_ns() + 30000000000ULL;	/* grace periods, loaded */
	do {
		own = count_own_threads(self->fd);
		ASSERT_EQ(0, taskstate_info(self->fd, &after));
		if (own == own_before &&
		    after.nr_tracked <= before.nr_tracked)
			break;
		ts_sleep_ms(20);
	} while (taskstate_now_ns() < end);
	EXPECT_EQ(own_before, own);
	/*
	 * The rest of the system may have started a kernel worker or two
	 * meanwhile; 10,000 leaked slots would not hide in that.
	 */
	EXPECT_GE(before.nr_tracked + 8, after.nr_tracked);
	EXPECT_EQ(before.nr_untracked, after.nr_untracked);
}

/*
 * Pid reuse: a new thread that gets the tid of a thread just released,
 * whose slot may still wait for sched_process_free, shows its own word,
 * and keeps it once the old one is freed.
 */
static int set_last_pid(pid_t pid)
{
	char buf[16];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	int n, ret;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d", pid);
	ret = write(fd, buf, n) == n ? 0 : -errno;
	close(fd);
	return ret;
}

static bool task_exists(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	return access(path, F_OK) == 0;
}

TEST_F(ts, pid_reuse_never_shows_old_word)
{
	struct tid_thread a = { .futex = 0 }, b = { .cpu = -1 };
	struct taskstate_entry *e;
	uint64_t wa, wb, t0;
	uint32_t n, i, hits = 0;
	int tries;

	for (tries = 0; tries < 20; tries++) {
		ASSERT_LT(0, start_thread(&a, wait_futex));
		wa = ts_wait_state(self->fd, a.tid, TASKSTATE_SLEEPING, 10000);
		ASSERT_NE(0, wa);
		wake_futex(&a);
		pthread_join(a.thread, NULL);
		while (task_exists(a.tid))
			sched_yield();
		/* Right away, before the old task is freed. */
		ASSERT_EQ(0, set_last_pid(a.tid - 1));
		t0 = taskstate_now_ns();
		stop = 0;
		ASSERT_LT(0, start_thread(&b, spin));
		if (b.tid == a.tid)
			break;
		stop = 1;
		pthread_join(b.thread, NULL);
		a.futex = 0;
	}
	ASSERT_EQ(a.tid, b.tid) TH_LOG("could not get tid %d again", a.tid);
	wb = ts_word_of(self->fd, b.tid);
	EXPECT_NE(wa, wb);
	EXPECT_LE(t0, taskstate_since_ns(wb));
	EXPECT_NE(TASKSTATE_SLEEPING, taskstate_state(wb));
	/* Once the old task is surely freed, the new one is still there. */
	ts_sleep_ms(200);
	wb = ts_word_of(self->fd, b.tid);
	EXPECT_LE(t0, taskstate_since_ns(wb));
	EXPECT_NE(TASKSTATE_NONE, taskstate_state(wb));
	ASSERT_LE(0, taskstate_list(self->fd, getpid(), &e, NULL, &n));
	for (i = 0; i < n; i++)
		hits += e[i].tid == (uint32_t)b.tid;
	free(e);
	EXPECT_EQ(1, hits);
	stop = 1;
	pthread_join(b.thread, NULL);
}

/*
 * The debugfs table: a header naming the columns, one well-formed line
 * per thread, agreeing with the ioctl; and it cannot be written.
 */
TEST_F(ts, debugfs_table)
{
	char line[512], state[16], comm[32], hdr[11][16], tot[5][24];
	static const char *const cols[11] = {
		"TID", "TGID", "STATE", "SINCE_NS", "AGE_NS", "RUN_NS",
		"WAIT_NS", "SLEEP_NS", "BLOCK_NS", "OTHER_NS", "COMM",
	};
	struct tid_thread t = { .futex = 0 };
	unsigned long long since, age, sleep_ns;
	int tid, tgid, found = 0, lines = 0, i;
	struct taskstate_info info;
	uint64_t w;
	FILE *f;

	TS_BPF_SKIP("debugfs table");

	ASSERT_EQ(0, taskstate_info(self->fd, &info));
	ASSERT_LT(0, start_thread(&t, wait_futex));
	pthread_setname_np(t.thread, "ts-debugfs");
	w = ts_wait_state(self->fd, t.tid, TASKSTATE_SLEEPING, 10000);
	ASSERT_NE(0, w);
	f = fopen("/sys/kernel/debug/taskstate", "r");
	ASSERT_TRUE(f != NULL);
	ASSERT_TRUE(fgets(line, sizeof(line), f) != NULL);
	ASSERT_EQ(11, sscanf(line, "%15s %15s %15s %15s %15s %15s %15s %15s %15s %15s %15s",
			     hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5],
			     hdr[6], hdr[7], hdr[8], hdr[9], hdr[10]));
	for (i = 0; i < 11; i++)
		EXPECT_STREQ(cols[i], hdr[i]);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		ASSERT_EQ(11, sscanf(line, "%d %d %15s %llu %llu %23s %23s %23s %23s %23s %31s",
				     &tid, &tgid, state, &since, &age, tot[0],
				     tot[1], tot[2], tot[3], tot[4], comm))
			TH_LOG("bad line: %s", line);
		ASSERT_LE(0, taskstate_state_from_name(state)) TH_LOG("%s", line);
		/* Numbers with totals=1, "-" with totals=0. */
		for (i = 0; i < 5; i++)
			EXPECT_TRUE((info.map_flags & TASKSTATE_MAP_F_TOTALS) ?
				    tot[i][0] >= '0' && tot[i][0] <= '9' :
				    !strcmp(tot[i], "-")) TH_LOG("%s", line);
		if (tid != t.tid)
			continue;
		found++;
		EXPECT_EQ(getpid(), tgid);
		EXPECT_STREQ("SLEEPING", state);
		EXPECT_EQ(taskstate_since_ns(w), since);
		EXPECT_STREQ("ts-debugfs", comm);
		/* Asleep for AGE_NS so far: at least that much SLEEP_NS. */
		if (info.map_flags & TASKSTATE_MAP_F_TOTALS) {
			sleep_ns = strtoull(tot[2], NULL, 10);
			EXPECT_LE(age, sleep_ns);
		}
	}
	fclose(f);
	EXPECT_EQ(1, found);
	EXPECT_LT(1, lines);
	wake_futex(&t);
	pthread_join(t.thread, NULL);
}

TEST(debugfs_read_only)
{
	struct stat st;
	int fd;

	TS_BPF_SKIP("debugfs table");

	ASSERT_EQ(0, stat("/sys/kernel/debug/taskstate", &st));
	EXPECT_EQ(0400, st.st_mode & 07777);
	/* root may open it for writing (DAC override); no write succeeds. */
	fd = open("/sys/kernel/debug/taskstate", O_WRONLY);
	if (fd >= 0) {
		EXPECT_EQ(-1, write(fd, "x", 1));
		close(fd);
	}
}

/*
 * A thread that starts being tracked while it runs or sleeps gets its
 * current state at once (the snapshot), with the time of the snapshot.
 */
TEST_F(ts, track_snapshots_current_state)
{
	struct tid_thread sleeper = { .futex = 0 }, spinner = { .cpu = -1 };
	uint64_t t0, w, w0, nr;
	unsigned int st;

	stop = 0;
	ASSERT_LT(0, start_thread(&sleeper, wait_futex));
	ASSERT_LT(0, start_thread(&spinner, spin));
	w0 = ts_wait_state(self->fd, sleeper.tid, TASKSTATE_SLEEPING, 10000);
	ASSERT_NE(0, w0);
	ASSERT_EQ(0, taskstate_untrack(self->fd, sleeper.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(0, taskstate_untrack(self->fd, spinner.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(0, ts_word_of(self->fd, sleeper.tid));

	t0 = taskstate_now_ns();
	ASSERT_EQ(0, taskstate_track(self->fd, sleeper.tid, false, &nr));
	w = ts_word_of(self->fd, sleeper.tid);
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w));
	/*
	 * Asleep since before the TRACK: the snapshot estimates when it went
	 * to sleep, which the probe saw at since(w0).
	 */
	EXPECT_GE(t0, taskstate_since_ns(w));
	EXPECT_LE(taskstate_since_ns(w0), taskstate_since_ns(w) + 50000000ULL);
	TH_LOG("snapshot's estimate %+lld ns from the observed switch-out",
	       (long long)(taskstate_since_ns(w) - taskstate_since_ns(w0)));
	ASSERT_EQ(0, taskstate_track(self->fd, spinner.tid, false, &nr));
	st = ts_state_of(self->fd, spinner.tid);
	EXPECT_TRUE(st == TASKSTATE_RUNNING || st == TASKSTATE_RUNNABLE)
		TH_LOG("spinner is %s", taskstate_state_name(st));
	stop = 1;
	wake_futex(&sleeper);
	pthread_join(sleeper.thread, NULL);
	pthread_join(spinner.thread, NULL);
}

/*
 * io_uring's workers are threads of the process made by create_io_thread(),
 * which never passes sched_process_fork: they must be tracked too.
 */
TEST_F(ts, io_uring_worker_threads_are_tracked)
{
	struct taskstate_entry *e;
	uint32_t params[30] = { 0 };	/* struct io_uring_params, 120 bytes */
	uint32_t n, i, tracked = 0;
	char comm[32];
	uint64_t end;
	int ring;

	params[2] = 1U << 1;		/* .flags = IORING_SETUP_SQPOLL */
	ring = syscall(__NR_io_uring_setup, 4, params);
	if (ring < 0 && (errno == ENOSYS || errno == EPERM))
		SKIP(return, "io_uring is not available: %s", strerror(errno));
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(errno));
	/* The SQ poll thread is named iou-sqp-<pid>; 20 s on a loaded host. */
	end = taskstate_now_ns() + 20000000000ULL;
	do {
		ASSERT_LE(0, taskstate_list(self->fd, getpid(), &e, NULL, &n));
		for (i = 0; i < n; i++)
			tracked += taskstate_comm(e[i].tid, comm, sizeof(comm)) > 0 &&
				   !strncmp(comm, "iou-sqp-", 8);
		free(e);
	} while (!tracked && taskstate_now_ns() < end && (ts_sleep_ms(10), 1));
	EXPECT_EQ(1, tracked);
	close(ring);
}

TEST_HARNESS_MAIN
