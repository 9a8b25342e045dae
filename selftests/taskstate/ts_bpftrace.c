// SPDX-License-Identifier: GPL-2.0
/*
 * Cross-check against bpftrace, in the same boot: bpftrace records the
 * sched_switch events of a test thread while it alternates between
 * running and sleeping; once the thread is asleep for good, the module's
 * word must say SLEEPING since the time of the last switch bpftrace saw.
 *
 * bpftrace keeps the last switch in a map, printed once when it exits,
 * not a printf per event: on PREEMPT_RT a printf's perf-buffer wakeup is
 * irq_work, which RT runs in a per-CPU kthread; waking that kthread
 * switches the traced thread out again, which prints again.  That loop
 * made thousands of events a second and overflowed the buffer ("Lost N
 * events"), losing the final sleep: a failure of the observer, not of
 * the module (seen on 6.1.0-57-rt-amd64).  A map update happens inside
 * the tracepoint call and loses nothing.
 *
 * Tolerance: both read the clock inside the same sched_switch tracepoint
 * call, one probe after the other, bpftrace with bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC) and the module with ktime_get_boot_fast_ns()
 * (CLOCK_BOOTTIME).  The guest never suspends, so the two clocks differ
 * by the boot offset, which the test measures (CLOCK_BOOTTIME minus
 * CLOCK_MONOTONIC, 0 here) and subtracts; what remains is the time between
 * the two probes, microseconds even under TCG.  1 ms leaves room for a
 * slow emulated clock read and nothing more.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "common.h"

#define TOLERANCE_NS	1000000ULL

static uint32_t go, done;

static void *worker(void *arg)
{
	int i;

	*(pid_t *)arg = ts_gettid();
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	for (i = 0; i < 20; i++) {
		uint64_t end = taskstate_now_ns() + 2000000;

		while (taskstate_now_ns() < end)
			;
		ts_sleep_ms(5);
	}
	/* Asleep until the test process ends. */
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
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

/*
 * What bpftrace wrote to @path: whether it is attached (BEGIN runs
 * after every probe is; "Attaching" is printed before), and at exit the
 * number of switches out of the thread and the time and prev_state of
 * the last one.  Returns the number of those three values found.
 */
static int parse(const char *path, bool *attached, unsigned long long *n,
		 unsigned long long *last_t, long *last_state)
{
	char line[128];
	int found = 0;
	FILE *f = fopen(path, "r");

	*attached = false;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ready", 5))
			*attached = true;
		else if (sscanf(line, "switches %llu last %llu state %ld",
				n, last_t, last_state) == 3)
			found = 3;
	}
	fclose(f);
	return found;
}

/* @path's lines as TAP comments. */
static void cat_file(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# bpftrace: %s", line);
	fclose(f);
}

FIXTURE(bpf) {
};

FIXTURE_SETUP(bpf)
{
}

FIXTURE_TEARDOWN(bpf)
{
}

/*
 * bpftrace loads LLVM and compiles its program first: slow under
 * emulation, and minutes in the debug kernel on a loaded host.
 */
TEST_F_TIMEOUT(bpf, module_agrees_with_bpftrace, 900)
{
	const char *out = "/tmp/ts_bpftrace.out";
	const char *err = "/tmp/ts_bpftrace.err";
	unsigned long long last_t = 0, switches = 0;
	long last_state = -1;
	char prog[512], tidarg[16];
	int fd = taskstate_open();
	pid_t tid = 0, bt, gone = 0;
	int status = 0;
	bool attached;
	pthread_t th;
	uint64_t w, end;
	int64_t offset;

	if (access("/usr/bin/bpftrace", X_OK))
		SKIP(return, "bpftrace is not installed in this guest (686, arm64: static programs in an initramfs; bpftrace is the host's amd64 one)");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, worker, &tid));
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		sched_yield();
	ASSERT_EQ(0, taskstate_track(fd, tid, false, NULL));
	snprintf(tidarg, sizeof(tidarg), "%d", tid);
	/*
	 * <sys/types.h> first: on 5.10 bpftrace 0.17 builds the tracepoint's
	 * argument struct from its format file, where pid_t is otherwise
	 * unknown ("unknown type name 'pid_t'"); harmless on later kernels.
	 */
	snprintf(prog, sizeof(prog),
		 "#include <sys/types.h>\n"
		 "BEGIN { printf(\"ready\\n\"); } "
		 "tracepoint:sched:sched_switch /args->prev_pid == $1/ "
		 "{ @n = @n + 1; @t = nsecs; @s = args->prev_state; } "
		 "END { printf(\"switches %%llu last %%llu state %%ld\\n\", "
		 "@n, @t, @s); clear(@n); clear(@t); clear(@s); }");
	unlink(out);
	bt = fork();
	if (bt == 0) {
		/*
		 * Dies with the test, even one the harness times out, and
		 * holds none of its output pipes: run_vm.sh would wait for
		 * their end.  Its stdout is @out, line-buffered, or "ready"
		 * may sit in a buffer while the test waits for it (-o would
		 * ignore -B: bpftrace buffers its own file stream).
		 */
		int null = open("/dev/null", O_RDWR);
		int file = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int efile = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(file, 1);
		dup2(efile, 2);
		execl("/usr/bin/bpftrace", "bpftrace", "-B", "line", "-e", prog,
		      tidarg, NULL);
		_exit(127);
	}
	ASSERT_LT(0, bt);
	end = taskstate_now_ns() + 600000000000ULL;
	do {
		ts_sleep_ms(50);
		parse(out, &attached, &switches, &last_t, &last_state);
		if (!attached)
			gone = waitpid(bt, &status, WNOHANG);
	} while (!attached && !gone && taskstate_now_ns() < end);
	if (!attached)
		cat_file(err);
	ASSERT_EQ(0, gone)
		TH_LOG("bpftrace exited before it started (status 0x%x), its stderr above",
		       status);
	ASSERT_TRUE(attached)
		TH_LOG("bpftrace still not started after 600 s, its stderr above");
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/* 20 x (2 ms + 5 ms), then asleep for good: sample in that sleep. */
	end = taskstate_now_ns() + 60000000000ULL;
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE) && taskstate_now_ns() < end)
		ts_sleep_ms(10);
	ASSERT_TRUE(done) TH_LOG("the worker did not finish its cycles");
	ts_sleep_ms(200);
	w = ts_word_of(fd, tid);
	offset = boot_minus_mono();
	kill(bt, SIGINT);
	ASSERT_EQ(bt, waitpid(bt, NULL, 0));

	ASSERT_EQ(3, parse(out, &attached, &switches, &last_t, &last_state))
		TH_LOG("no summary from bpftrace in %s", out);
	/* 20 sleeps and the final one, plus any preemptions. */
	ASSERT_LE(21, switches) TH_LOG("bpftrace saw %llu switches", switches);
	/* prev_state 1 is TASK_INTERRUPTIBLE: nanosleep. */
	EXPECT_EQ(1, last_state);
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w));
	TH_LOG("module since %llu, bpftrace %llu + offset %lld, %llu switches",
	       (unsigned long long)taskstate_since_ns(w), last_t,
	       (long long)offset, switches);
	EXPECT_GE(TOLERANCE_NS,
		  (uint64_t)llabs((long long)(taskstate_since_ns(w) -
					      (last_t + offset))));
	taskstate_close(fd);
}

TEST_HARNESS_MAIN
