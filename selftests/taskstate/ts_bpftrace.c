// SPDX-License-Identifier: GPL-2.0
/*
 * Cross-check against bpftrace, in the same boot: bpftrace records the
 * sched_switch events of a test thread while it alternates between
 * running and sleeping; once the thread is asleep for good, the module's
 * word must say SLEEPING since the time of the last switch bpftrace saw.
 *
 * Tolerance: both read the clock inside the same sched_switch tracepoint
 * call, one probe after the other, bpftrace with bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC) and the module with ktime_get_boot_fast_ns()
 * (CLOCK_BOOTTIME).  The guest never suspends, so the two clocks differ
 * by the boot offset, which the test measures (CLOCK_BOOTTIME minus
 * CLOCK_MONOTONIC, 0 here) and subtracts; what remains is the time between
 * the two probes, microseconds even under TCG.  1 ms leaves room for a
 * slow emulated clock read and nothing more.
 *
 * Not run on PREEMPT_RT (run_vm.sh): there bpftrace's last recorded
 * switch of the thread was a preemption 46 ms before the sleep the module
 * reports, and no later event arrived in 30 s.  Unresolved.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "common.h"

#define TOLERANCE_NS	1000000ULL

static uint32_t go;

static void *worker(void *arg)
{
	int i;

	*(pid_t *)arg = ts_gettid();
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	for (i = 0; i < 20; i++) {
		uint64_t end = ts_now_ns() + 2000000;

		while (ts_now_ns() < end)
			;
		ts_sleep_ms(5);
	}
	/* Asleep until the test process ends. */
	ts_sleep_ms(600000);
	return NULL;
}

static int64_t ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC, against the midpoint of two reads. */
static int64_t boot_minus_mono(void)
{
	int64_t m1 = ns(CLOCK_MONOTONIC);
	int64_t b = ns(CLOCK_BOOTTIME);
	int64_t m2 = ns(CLOCK_MONOTONIC);

	return b - (m1 + (m2 - m1) / 2);
}

static bool file_has(const char *path, const char *needle)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, needle);
}

/*
 * The switches out of @tid that bpftrace wrote to @path: how many, and
 * the time and prev_state of the last one.
 */
static int parse(const char *path, pid_t tid, int *events,
		 unsigned long long *last_t, int *last_state)
{
	unsigned long long t;
	int prev, prev_state, next;
	char line[128];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	*events = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %d %d %d", &t, &prev, &prev_state,
			   &next) != 4 || prev != tid)
			continue;
		++*events;
		*last_t = t;
		*last_state = prev_state;
	}
	fclose(f);
	return 0;
}

FIXTURE(bpf) {
};

FIXTURE_SETUP(bpf)
{
}

FIXTURE_TEARDOWN(bpf)
{
}

/* bpftrace compiles its program first: slow under emulation. */
TEST_F_TIMEOUT(bpf, module_agrees_with_bpftrace, 400)
{
	const char *out = "/tmp/ts_bpftrace.out";
	unsigned long long last_t = 0;
	int last_state = -1, events = 0;
	char prog[512], tidarg[16];
	int fd = ts_open();
	pid_t tid = 0, bt;
	pthread_t th;
	uint64_t w, end;
	int64_t offset;

	if (access("/usr/bin/bpftrace", X_OK))
		SKIP(return, "bpftrace is not installed in this guest");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, worker, &tid));
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		sched_yield();
	ASSERT_EQ(0, ts_track(fd, tid, false, NULL));
	snprintf(tidarg, sizeof(tidarg), "%d", tid);
	snprintf(prog, sizeof(prog),
		 "tracepoint:sched:sched_switch "
		 "/args->prev_pid == $1 || args->next_pid == $1/ "
		 "{ printf(\"%%llu %%d %%d %%d\\n\", nsecs, args->prev_pid, "
		 "args->prev_state, args->next_pid); }");
	bt = fork();
	if (bt == 0) {
		/*
		 * Dies with the test, even one the harness times out, and
		 * holds none of its output pipes: run_vm.sh would wait for
		 * their end.  Line-buffered, or "Attaching" may sit in its
		 * buffer while the test waits for it.
		 */
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execl("/usr/bin/bpftrace", "bpftrace", "-B", "line", "-o", out,
		      "-e", prog,
		      tidarg, NULL);
		_exit(127);
	}
	ASSERT_LT(0, bt);
	end = ts_now_ns() + 240000000000ULL;
	while (!file_has(out, "Attaching") && ts_now_ns() < end)
		ts_sleep_ms(50);
	ASSERT_TRUE(file_has(out, "Attaching")) TH_LOG("bpftrace did not start");
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/* 20 x (2 ms + 5 ms), then asleep for good: sample in that sleep. */
	ts_sleep_ms(1200);
	w = ts_word_of(fd, tid);
	offset = boot_minus_mono();
	/* Let bpftrace drain its ring buffer up to the final sleep. */
	end = ts_now_ns() + 30000000000ULL;
	while ((parse(out, tid, &events, &last_t, &last_state) ||
		last_state != 1) && ts_now_ns() < end)
		ts_sleep_ms(100);
	kill(bt, SIGINT);
	ASSERT_EQ(bt, waitpid(bt, NULL, 0));

	ASSERT_EQ(0, parse(out, tid, &events, &last_t, &last_state));
	/* 20 sleeps: most of their switches, and the last one, are there. */
	ASSERT_LE(10, events) TH_LOG("bpftrace saw %d switches", events);
	/* prev_state 1 is TASK_INTERRUPTIBLE: nanosleep. */
	EXPECT_EQ(1, last_state);
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w));
	TH_LOG("module since %llu, bpftrace %llu + offset %lld",
	       (unsigned long long)taskstate_since_ns(w), last_t,
	       (long long)offset);
	EXPECT_GE(TOLERANCE_NS,
		  (uint64_t)llabs((long long)(taskstate_since_ns(w) -
					      (last_t + offset))));
	ts_close(fd);
}

TEST_HARNESS_MAIN
