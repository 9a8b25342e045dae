// SPDX-License-Identifier: GPL-2.0
/*
 * ts_stuck: a thread that was already stuck when tracking began shows how
 * long it has been stuck (the snapshot estimates when it entered its
 * state from the scheduler's bookkeeping).
 *
 * Threads sleep in nanosleep, a futex and a pipe read, block in a vfork
 * wait, and a process is stopped, all for 3 s before tracking starts:
 *   TS_LOAD_CMD set    tracking starts when this shell command runs (the
 *                      module is loaded by it, track_all=1), or
 *   TS_LOAD_CMD unset  the module is loaded with track_all=0 and the test
 *                      tracks the processes with TRACK.
 * Right after, each must show its state with an AGE of at least 2.5 s,
 * and a thread started after tracking began must not.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common.h"
#include "kselftest_harness.h"

#define STUCK_MS	3000
#define MIN_AGE_NS	2500000000ULL

enum { T_NANOSLEEP, T_FUTEX, T_PIPE, T_VFORK, T_STOPPED, NR_T };
#define T_VCHILD	NR_T	/* not sampled: the vfork child, to kill */

static const char *const t_name[NR_T] = {
	"nanosleep", "futex", "pipe read", "vfork parent", "SIGSTOP",
};

static const unsigned int t_state[NR_T] = {
	TASKSTATE_SLEEPING, TASKSTATE_SLEEPING, TASKSTATE_SLEEPING,
	TASKSTATE_BLOCKED, TASKSTATE_STOPPED,
};

static int report = -1;		/* the stuck process's pipe to the test */
static int never[2];		/* a pipe nobody writes to */
static uint32_t futex_word;

static void say(int idx, pid_t tid)
{
	int msg[2] = { idx, tid };

	(void)!write(report, msg, sizeof(msg));
}

static void *t_nanosleep(void *arg)
{
	say(T_NANOSLEEP, ts_gettid());
	ts_sleep_ms(600000);
	return NULL;
}

static void *t_futex(void *arg)
{
	say(T_FUTEX, ts_gettid());
	for (;;)
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL,
			NULL, 0);
	return NULL;
}

static void *t_pipe(void *arg)
{
	char c;

	say(T_PIPE, ts_gettid());
	(void)!read(never[0], &c, 1);
	return NULL;
}

static void *t_vfork(void *arg)
{
	pid_t pid;

	say(T_VFORK, ts_gettid());
	pid = vfork();
	if (!pid) {
		/* The parent waits in D state until we exec or exit. */
		struct timespec ts = { 600, 0 };

		say(T_VCHILD, getpid());
		nanosleep(&ts, NULL);
		_exit(0);
	}
	return NULL;
}

/* The process whose threads get stuck; never returns. */
static void stuck_process(void)
{
	void *(*fn[])(void *) = { t_nanosleep, t_futex, t_pipe, t_vfork };
	pthread_t t;
	unsigned int i;

	if (pipe(never))
		_exit(1);
	for (i = 0; i < ARRAY_SIZE(fn); i++)
		if (pthread_create(&t, NULL, fn[i], NULL))
			_exit(1);
	for (;;)
		pause();
}

static void *newcomer(void *arg)
{
	__atomic_store_n((pid_t *)arg, ts_gettid(), __ATOMIC_RELEASE);
	ts_sleep_ms(1000);
	return NULL;
}

TEST(stuck_threads_show_their_age)
{
	const char *cmd = getenv("TS_LOAD_CMD");
	struct taskstate_entry e[NR_T + 1];
	pid_t tid[NR_T] = { 0 }, proc, stopped, vchild = 0, new_tid = 0;
	uint64_t t_track;
	int p[2], msg[2], fd, i, got = 0;
	pthread_t nt;

	ASSERT_EQ(0, pipe(p));
	proc = fork();
	ASSERT_LE(0, proc);
	if (!proc) {
		close(p[0]);
		report = p[1];
		stuck_process();
	}
	close(p[1]);
	stopped = fork();
	ASSERT_LE(0, stopped);
	if (!stopped) {
		for (;;)
			pause();
	}
	tid[T_STOPPED] = stopped;
	/* The four threads' tids and the vfork child's pid. */
	while (got < NR_T && read(p[0], msg, sizeof(msg)) == sizeof(msg)) {
		if (msg[0] == T_VCHILD)
			vchild = msg[1];
		else if (msg[0] >= 0 && msg[0] < T_STOPPED)
			tid[msg[0]] = msg[1];
		got++;
	}
	ASSERT_EQ(NR_T, got);
	ASSERT_NE(0, vchild);
	ts_sleep_ms(200);	/* into their waits */
	ASSERT_EQ(0, kill(stopped, SIGSTOP));
	ts_sleep_ms(STUCK_MS);

	t_track = taskstate_now_ns();
	if (cmd) {
		ASSERT_EQ(0, system(cmd)) TH_LOG("%s", cmd);
		fd = taskstate_open();
		ASSERT_LE(0, fd);
	} else {
		struct taskstate_info info;

		fd = taskstate_open();
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, taskstate_info(fd, &info));
		ASSERT_EQ(0, info.track_all);
		ASSERT_EQ(0, taskstate_track(fd, proc, true, NULL));
		ASSERT_EQ(0, taskstate_track(fd, stopped, true, NULL));
	}
	ASSERT_EQ(0, pthread_create(&nt, NULL, newcomer, &new_tid));
	while (!__atomic_load_n(&new_tid, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	if (!cmd)
		ASSERT_EQ(0, taskstate_track(fd, new_tid, false, NULL));

	for (i = 0; i < NR_T; i++)
		e[i].tid = tid[i];
	e[NR_T].tid = new_tid;
	ASSERT_EQ(NR_T + 1, taskstate_sample(fd, e, NR_T + 1));
	for (i = 0; i < NR_T; i++) {
		uint64_t age = taskstate_age_ns(e[i].word, taskstate_now_ns());

		TH_LOG("%s: %s for %.3f s", t_name[i],
		       taskstate_state_name(taskstate_state(e[i].word)),
		       age / 1e9);
		EXPECT_EQ(t_state[i], taskstate_state(e[i].word));
		EXPECT_LE(MIN_AGE_NS, age);
	}
	/* Started after tracking began: its time is its own. */
	EXPECT_LE(t_track, taskstate_since_ns(e[NR_T].word));
	EXPECT_GT(MIN_AGE_NS, taskstate_age_ns(e[NR_T].word, taskstate_now_ns()));

	pthread_join(nt, NULL);
	kill(stopped, SIGKILL);
	kill(vchild, SIGKILL);
	kill(proc, SIGKILL);
	waitpid(stopped, NULL, 0);
	waitpid(proc, NULL, 0);
	taskstate_close(fd);
}

TEST_HARNESS_MAIN
