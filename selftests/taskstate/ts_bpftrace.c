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
 * Rounds: the thread runs 2 ms, then sleeps in a pipe read until the test
 * samples its word and wakes it, ROUNDS times.  bpftrace keeps every
 * switch out of the thread (time and prev_state, keyed by number); each
 * round's word must say SLEEPING since the last switch into that read.
 *
 * Tolerance, from what the test measures.  Both read the clock inside
 * the same sched_switch tracepoint call, the module first (its probe was
 * registered first), bpftrace with bpf_ktime_get_ns() (CLOCK_MONOTONIC;
 * 0.17 has no boot-clock builtin) and the module with
 * ktime_get_boot_fast_ns() (CLOCK_BOOTTIME).  The clocks differ by the
 * boot offset (0 in a guest that never suspends), which the test
 * estimates from CLOCK_BOOTTIME read between two CLOCK_MONOTONIC reads:
 * the best of many tries, whose half-width bounds the estimate's error
 * (a single try on a loaded host was 2.2 ms off: the vCPU stalled
 * between the reads).  What remains is the time between the two probes,
 * microseconds even under TCG, unless the host deschedules the vCPU
 * right there, which no guest can see or prevent: so each round must
 * agree within 1 ms plus the estimate's error, and all but one round must.
 * A module that stamps a wrong time is off in every round.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "util.h"

#define TOLERANCE_NS	1000000ULL
#define ROUNDS		5

static uint32_t go, asleep;
static int wake[2];

static void *worker(void *arg)
{
	char c;
	int i;

	*(pid_t *)arg = ts_gettid();
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	for (i = 0; i < ROUNDS; i++) {
		uint64_t end = taskstate_now_ns() + 2000000;

		while (taskstate_now_ns() < end)
			;
		__atomic_store_n(&asleep, i + 1, __ATOMIC_RELEASE);
		if (read(wake[0], &c, 1) != 1)
			break;
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

/*
 * CLOCK_BOOTTIME - CLOCK_MONOTONIC, against the midpoint of two reads,
 * from the try with the closest reads: *err gets its half-width.
 */
static int64_t boot_minus_mono(int64_t *err)
{
	int64_t best = 0, width = INT64_MAX;
	int i;

	for (i = 0; i < 1000; i++) {
		int64_t m1 = ns(CLOCK_MONOTONIC);
		int64_t b = ns(CLOCK_BOOTTIME);
		int64_t m2 = ns(CLOCK_MONOTONIC);

		if (m2 - m1 < width) {
			width = m2 - m1;
			best = b - (m1 + (m2 - m1) / 2);
		}
	}
	*err = width / 2 + 1;
	return best;
}

#define MAX_SWITCHES	4096

/*
 * What bpftrace wrote to @path: whether it is attached (BEGIN runs
 * after every probe is; "Attaching" is printed before), and at exit every
 * switch out of the thread, "@t[N]: ns" and "@s[N]: prev_state".
 * Returns the number of switches with both (numbered 1 to it).
 */
static int parse(const char *path, bool *attached, unsigned long long *t,
		 long *st)
{
	unsigned long long v;
	char line[128];
	int n = 0, i;
	FILE *f = fopen(path, "r");

	*attached = false;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ready", 5)) {
			*attached = true;
		} else if (sscanf(line, "@t[%d]: %llu", &i, &v) == 2 &&
			   i > 0 && i < MAX_SWITCHES) {
			t[i] = v;
			n = i > n ? i : n;
		} else if (sscanf(line, "@s[%d]: %llu", &i, &v) == 2 &&
			   i > 0 && i < MAX_SWITCHES) {
			st[i] = (long)v;
		}
	}
	fclose(f);
	for (i = 1; i <= n; i++)
		if (!t[i] || st[i] < 0)
			return i - 1;
	return n;
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
	static unsigned long long t[MAX_SWITCHES];
	static long st[MAX_SWITCHES];
	uint64_t w[ROUNDS], at[ROUNDS], end;
	char prog[512], tidarg[16];
	int fd = taskstate_open();
	pid_t tid = 0, bt, gone = 0;
	int status = 0, n, r, i, agree = 0;
	int64_t offset, oerr;
	bool attached;
	pthread_t th;

	if (access("/usr/bin/bpftrace", X_OK))
		SKIP(return, "bpftrace is not installed in this guest (686, arm64: static programs in an initramfs; bpftrace is the host's amd64 one)");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(wake));
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
		 "{ @n = @n + 1; @t[@n] = nsecs; @s[@n] = args->prev_state; } "
		 "END { clear(@n); print(@t); print(@s); clear(@t); clear(@s); }");
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
		parse(out, &attached, t, st);
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
	/* Each round: 2 ms of run, then the read: sample, then wake it. */
	for (r = 0; r < ROUNDS; r++) {
		end = taskstate_now_ns() + 60000000000ULL;
		while (__atomic_load_n(&asleep, __ATOMIC_ACQUIRE) < r + 1 &&
		       taskstate_now_ns() < end)
			ts_sleep_ms(1);
		ASSERT_EQ(r + 1, __atomic_load_n(&asleep, __ATOMIC_ACQUIRE));
		/* Into the read: the only sleep after the flag. */
		w[r] = ts_wait_state(fd, tid, TASKSTATE_SLEEPING, 60000);
		at[r] = taskstate_now_ns();
		ASSERT_EQ(1, write(wake[1], "x", 1));
	}
	offset = boot_minus_mono(&oerr);
	kill(bt, SIGINT);
	ASSERT_EQ(bt, waitpid(bt, NULL, 0));

	memset(st, 0xff, sizeof(st));
	n = parse(out, &attached, t, st);
	ASSERT_LE(ROUNDS, n) TH_LOG("bpftrace reported %d switches", n);
	TH_LOG("boot offset %lld ns +- %lld, %d switches",
	       (long long)offset, (long long)oerr, n);
	for (r = 0; r < ROUNDS; r++) {
		long long d;

		/* The last switch into a sleep (prev_state 1) before the sample. */
		for (i = n; i > 0; i--)
			if (st[i] == 1 && t[i] + offset <= at[r])
				break;
		EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w[r]));
		ASSERT_LT(0, i) TH_LOG("round %d: no sleep switch seen", r);
		d = (long long)(taskstate_since_ns(w[r]) - (t[i] + offset));
		TH_LOG("round %d: module since %llu, bpftrace %llu + offset: %+lld ns",
		       r, (unsigned long long)taskstate_since_ns(w[r]), t[i], d);
		if ((uint64_t)llabs(d) <= TOLERANCE_NS + oerr)
			agree++;
	}
	EXPECT_LE(ROUNDS - 1, agree)
		TH_LOG("%d of %d rounds within %llu ns + %lld", agree, ROUNDS,
		       TOLERANCE_NS, (long long)oerr);
	taskstate_close(fd);
}

TEST_HARNESS_MAIN
