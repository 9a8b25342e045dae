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
 *
 * woken_thread_shows_time_since_wakeup: a thread that slept, was woken
 * onto a CPU a SCHED_FIFO thread keeps busy, and still waits for it when
 * tracking starts is RUNNABLE since its wakeup, not since it went to
 * sleep; once it runs, its RUNNABLE total is the wait the scheduler
 * counted (schedstat's run_delay).
 *
 * The tests take names (harness_filter.h): with TS_LOAD_CMD each loads
 * the module itself, so run_vm.sh runs them one at a time.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

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

/*
 * The device, open, with @id tracked: by @cmd, a shell command that loads
 * the module with track_all=1, or else by TRACK (@is_pid: @id's whole
 * process) on the module loaded without it.
 */
static int open_tracking(struct __test_metadata *_metadata, const char *cmd,
			 pid_t id, bool is_pid)
{
	struct taskstate_info info;
	int fd;

	if (cmd)
		ASSERT_EQ(0, system(cmd)) TH_LOG("%s", cmd);
	fd = taskstate_open();
	ASSERT_LE(0, fd);
	if (!cmd) {
		ASSERT_EQ(0, taskstate_info(fd, &info));
		ASSERT_EQ(0, info.track_all);
		ASSERT_EQ(0, taskstate_track(fd, id, is_pid, NULL));
	}
	return fd;
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
	fd = open_tracking(_metadata, cmd, proc, true);
	if (!cmd)
		ASSERT_EQ(0, taskstate_track(fd, stopped, true, NULL));
	ASSERT_EQ(0, pthread_create(&nt, NULL, newcomer, &new_tid));
	while (!__atomic_load_n(&new_tid, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	if (!cmd)
		ASSERT_EQ(0, taskstate_track(fd, new_tid, false, NULL));

	for (i = 0; i < NR_T; i++)
		e[i].tid = tid[i];
	e[NR_T].tid = new_tid;
	ASSERT_EQ(NR_T + 1, taskstate_sample(fd, e, NULL, NR_T + 1));
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

/*
 * The woken thread: pinned to CPU 1, it sleeps in a pipe read, is woken
 * by a write while a SCHED_FIFO hog spins on CPU 1, and runs when the hog
 * stops; then it sleeps again, in a second read, until the end.  It is
 * SCHED_FIFO too, below the hog.
 *
 * RT throttling must leave CPU 1 to its kworkers and ksoftirqd now and
 * then, and let it go idle: the grace periods of the load and of TRACK,
 * and the tracepoints' attach, advance on CPU 1 only then.  Throttling
 * holds back every RT task of the CPU, the sleeper with the hog, so the
 * sleeper still waits.  cpu1_clear() sets it for the test.
 */
#define WOKEN_PRIO	1
#define HOG_PRIO	2
#define WOKEN_SLEEP_MS	2000
/* The wakeup is stamped before the write: the snapshot's may only be later. */
#define WOKEN_SLACK_NS	20000000ULL

struct woken {
	int pipe[2];
	pid_t tid;		/* the sleeper's, once it is pinned */
	int hog_spins;		/* the hog is on CPU 1, spinning */
	int hog_stop;		/* set by the test: the hog returns */
	int ran;		/* the sleeper ran after its wakeup */
	int pin_failed;
	int hog_expired;	/* the hog ran out of its 20 s */
};

static void *woken_sleeper(void *arg)
{
	struct sched_param sp = { .sched_priority = WOKEN_PRIO };
	struct woken *w = arg;
	char c;

	if (ts_pin(1) || pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		__atomic_store_n(&w->pin_failed, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w->tid, ts_gettid(), __ATOMIC_RELEASE);
	if (read(w->pipe[0], &c, 1) != 1)
		return NULL;
	__atomic_store_n(&w->ran, 1, __ATOMIC_RELEASE);
	(void)!read(w->pipe[0], &c, 1);
	return NULL;
}

/* At most 20 s, whatever the test does: it owns CPU 1 meanwhile. */
static void *woken_hog(void *arg)
{
	struct woken *w = arg;
	uint64_t end;

	if (ts_pin(1)) {
		__atomic_store_n(&w->pin_failed, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	end = taskstate_now_ns() + 20000000000ULL;
	__atomic_store_n(&w->hog_spins, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w->hog_stop, __ATOMIC_ACQUIRE) &&
	       taskstate_now_ns() < end)
		;
	if (!__atomic_load_n(&w->hog_stop, __ATOMIC_ACQUIRE))
		__atomic_store_n(&w->hog_expired, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* /proc's state letter for a thread of this process, or 0. */
static char proc_state(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* schedstat's run_delay (ns waiting on a run queue), or -1. */
static long long run_delay(pid_t tid)
{
	uint64_t run, delay;

	return ts_schedstat(tid, &run, &delay) ? -1 : (long long)delay;
}

/*
 * Read a /proc file's value into @old (unless NULL), then write @new;
 * returns 0 or -1.  Two opens: /proc/irq's files are seq_files, which
 * refuse pwrite().
 */
static int proc_rw(const char *path, char *old, size_t len, const char *new)
{
	ssize_t n;
	int fd;

	if (old) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return -1;
		n = read(fd, old, len - 1);
		close(fd);
		if (n <= 0)
			return -1;
		old[n] = '\0';
	}
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, new, strlen(new));
	close(fd);
	return n == (ssize_t)strlen(new) ? 0 : -1;
}

#define RT_PERIOD	"/proc/sys/kernel/sched_rt_period_us"
#define RT_RUNTIME	"/proc/sys/kernel/sched_rt_runtime_us"
#define MAX_IRQS	256

/* What cpu1_clear() changed, for cpu1_restore(). */
static struct {
	char rt_period[32];
	char rt_runtime[32];
	int nr_irqs;
	struct {
		char path[64];
		char cpus[64];
	} irq[MAX_IRQS];
} cpu1_old;

/*
 * Leave CPU 1 to the hog and the rest to the load, until cpu1_restore():
 *
 * - RT tasks throttled to 50 ms of each 100 ms (sched_rt_runtime_us of
 *   sched_rt_period_us; the runtime never passes the period: lowered
 *   first, restored last);
 * - every device interrupt that can move, to CPU 0.  Under QEMU's
 *   emulation an interrupt for a CPU that spins in user space waits for
 *   it to go idle, in the throttled share, and insmod reads the module
 *   and its programs over 9p, one interrupt for each request.
 *
 * Measured in 6.1 guests: the load takes 3-6 s with the defaults on an
 * idle host, and can pass the hog's 20 s on a loaded one; 1.3-2 s with
 * the interrupts moved, and 0.6 s with both.
 */
static int cpu1_clear(void)
{
	struct dirent *d;
	DIR *dir;

	if (proc_rw(RT_RUNTIME, cpu1_old.rt_runtime,
		      sizeof(cpu1_old.rt_runtime), "50000"))
		return -1;
	if (proc_rw(RT_PERIOD, cpu1_old.rt_period,
		      sizeof(cpu1_old.rt_period), "100000")) {
		proc_rw(RT_RUNTIME, NULL, 0, cpu1_old.rt_runtime);
		cpu1_old.rt_runtime[0] = '\0';
		return -1;
	}
	dir = opendir("/proc/irq");
	while (dir && (d = readdir(dir)) && cpu1_old.nr_irqs < MAX_IRQS) {
		typeof(cpu1_old.irq[0]) *irq = &cpu1_old.irq[cpu1_old.nr_irqs];
		char *end;
		long nr = strtol(d->d_name, &end, 10);

		if (end == d->d_name || *end || nr < 0 || nr > INT_MAX)
			continue;
		snprintf(irq->path, sizeof(irq->path),
			 "/proc/irq/%d/smp_affinity_list", (int)nr);
		/* Per-CPU and managed interrupts refuse: they stay. */
		if (!proc_rw(irq->path, irq->cpus, sizeof(irq->cpus), "0"))
			cpu1_old.nr_irqs++;
	}
	if (dir)
		closedir(dir);
	return 0;
}

/* Also from SIGABRT: a failed ASSERT leaves through abort(). */
static void cpu1_restore(void)
{
	while (cpu1_old.nr_irqs) {
		cpu1_old.nr_irqs--;
		proc_rw(cpu1_old.irq[cpu1_old.nr_irqs].path, NULL, 0,
			  cpu1_old.irq[cpu1_old.nr_irqs].cpus);
	}
	if (cpu1_old.rt_runtime[0]) {
		proc_rw(RT_PERIOD, NULL, 0, cpu1_old.rt_period);
		proc_rw(RT_RUNTIME, NULL, 0, cpu1_old.rt_runtime);
		cpu1_old.rt_runtime[0] = '\0';
	}
}

static void cpu1_restore_and_abort(int sig)
{
	cpu1_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

TEST(woken_thread_shows_time_since_wakeup)
{
	const char *cmd = getenv("TS_LOAD_CMD");
	struct woken w = { .tid = 0 };
	struct taskstate_entry e;
	struct taskstate_totals tot;
	struct sched_param sp = { .sched_priority = HOG_PRIO };
	pthread_t sleeper, hog;
	uint64_t t_wake, since, now, total;
	long long rd0, rd1, waited;
	int fd = -1, ret;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	ASSERT_EQ(0, pipe(w.pipe));
	/* The test itself on CPU 0, out of the hog's way. */
	ASSERT_EQ(0, ts_pin(0));
	/* CPU 1 to the hog, interrupts to CPU 0 (see above). */
	signal(SIGABRT, cpu1_restore_and_abort);
	ASSERT_EQ(0, cpu1_clear());
	ASSERT_EQ(0, pthread_create(&sleeper, NULL, woken_sleeper, &w));
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	ASSERT_EQ(0, w.pin_failed) TH_LOG("cannot pin to CPU 1 as SCHED_FIFO");
	while (proc_state(w.tid) != 'S')
		ts_sleep_ms(1);
	ts_sleep_ms(WOKEN_SLEEP_MS);

	ASSERT_EQ(0, pthread_create(&hog, NULL, woken_hog, &w));
	ret = pthread_setschedparam(hog, SCHED_FIFO, &sp);
	while (!ret && !__atomic_load_n(&w.hog_spins, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&w.pin_failed, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	if (ret || __atomic_load_n(&w.pin_failed, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&w.hog_stop, 1, __ATOMIC_RELEASE);
		cpu1_restore();
		ASSERT_EQ(0, ret) TH_LOG("SCHED_FIFO refused");
		ASSERT_EQ(0, w.pin_failed) TH_LOG("cannot pin to CPU 1");
	}

	rd0 = run_delay(w.tid);
	ASSERT_LE(0, rd0);
	t_wake = taskstate_now_ns();
	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	/* Woken, and stuck behind the hog until it stops. */
	while (proc_state(w.tid) != 'R')
		ts_sleep_ms(1);

	fd = open_tracking(_metadata, cmd, w.tid, false);
	e.tid = w.tid;
	ASSERT_EQ(1, taskstate_sample(fd, &e, NULL, 1));
	now = taskstate_now_ns();
	since = taskstate_since_ns(e.word);
	EXPECT_EQ(0, __atomic_load_n(&w.ran, __ATOMIC_ACQUIRE));

	__atomic_store_n(&w.hog_stop, 1, __ATOMIC_RELEASE);
	pthread_join(hog, NULL);
	cpu1_restore();
	/* Else the sleeper ran before the sample: nothing below holds. */
	ASSERT_EQ(0, w.hog_expired)
		TH_LOG("the hog's 20 s ran out before tracking began");

	TH_LOG("woken %.3f s after it went to sleep: %s since %.3f s before the wakeup, age %.3f s",
	       WOKEN_SLEEP_MS / 1e3, taskstate_state_name(taskstate_state(e.word)),
	       ((double)t_wake - (double)since) / 1e9, (now - since) / 1e9);
	EXPECT_EQ(TASKSTATE_RUNNABLE, taskstate_state(e.word));
	EXPECT_LE(t_wake - WOKEN_SLACK_NS, since);
	EXPECT_GE(now, since);

	/* It runs, then sleeps in its second read: the wait is closed. */
	while (!__atomic_load_n(&w.ran, __ATOMIC_ACQUIRE) ||
	       proc_state(w.tid) != 'S')
		ts_sleep_ms(1);
	rd1 = run_delay(w.tid);
	ret = taskstate_sample(fd, &e, &tot, 1);
	if (ret == -EOPNOTSUPP) {
		TH_LOG("no totals (totals=0): run_delay not compared");
	} else {
		ASSERT_EQ(1, ret);
		waited = rd1 - rd0;
		total = tot.state_ns[TASKSTATE_TOTAL_RUNNABLE];
		TH_LOG("RUNNABLE total %.6f s, run_delay grew by %.6f s",
		       total / 1e9, waited / 1e9);
		/* Both from the same rq_clock() stamps, up to the conversion. */
		EXPECT_GT(WOKEN_SLACK_NS, (uint64_t)llabs((long long)total - waited));
	}
	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	pthread_join(sleeper, NULL);
	taskstate_close(fd);
}

int main(int argc, char **argv)
{
	return ts_harness_main(argc, argv, NULL);
}
