// SPDX-License-Identifier: GPL-2.0
/*
 * ts_totals: per-state cumulative time.
 *
 * The totals match their word (start_ns + sum == since), add up to the
 * time since tracking began, put a nanosleep in SLEEPING, a vfork wait in
 * BLOCKED and a SIGSTOP in OTHER, agree between SAMPLE and the mapping,
 * and agree with the scheduler's own accounting (/proc/<tid>/schedstat:
 * on-CPU time and run-queue wait) for a spinner, a sleeper and threads
 * contending for one CPU.
 *
 * With the module loaded with totals=0, run_vm.sh runs totals_follow_info
 * alone (SAMPLE, LIST and the mapping refuse totals with EOPNOTSUPP); the
 * others need totals and skip without them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

_Static_assert(sizeof(struct taskstate_totals) == 48 &&
	       offsetof(struct taskstate_totals, state_ns) == 8,
	       "totals layout");
_Static_assert(offsetof(struct taskstate_map_entry, start_ns) == 16 &&
	       offsetof(struct taskstate_map_entry, state_ns) == 24,
	       "entry layout");
_Static_assert(TASKSTATE_SAMPLE_SIZE_VER1 == 32 &&
	       offsetof(struct taskstate_sample, totals) == 24 &&
	       TASKSTATE_LIST_SIZE_VER1 == 40 &&
	       offsetof(struct taskstate_list, totals) == 32,
	       "version 1 layouts");

#define MS		1000000ULL
#define NT		TASKSTATE_MAP_NR_TOTALS

/* One thread's totals up to a moment, and its word then. */
struct snap {
	uint64_t word;
	uint64_t now;
	struct taskstate_totals t;
	uint64_t at[NT];	/* the totals up to now */
};

FIXTURE(totals) {
	int fd;
	struct taskstate_info info;
	bool mapped;
};

FIXTURE_SETUP(totals)
{
	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, taskstate_info(self->fd, &self->info));
	if (!(self->info.map_flags & TASKSTATE_MAP_F_TOTALS))
		SKIP(return, "the module keeps no totals (totals=0)");
	/* track_all=0: this process, its threads and children. */
	if (!self->info.track_all)
		ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, NULL));
	self->mapped = !taskstate_mapping_open(self->fd, &ts_xmap);
}

FIXTURE_TEARDOWN(totals)
{
	if (self->mapped)
		taskstate_mapping_close(&ts_xmap);
	taskstate_close(self->fd);
}

/* @tid's word and totals by SAMPLE, and up to now; 0 if not found. */
static int snap_of(int fd, pid_t tid, struct snap *s)
{
	struct taskstate_entry e = { .tid = (uint32_t)tid };
	int ret;

	memset(s, 0, sizeof(*s));
	ret = taskstate_sample(fd, &e, &s->t, 1);
	if (ret != 1)
		return ret < 0 ? ret : -ENOENT;
	s->now = taskstate_now_ns();
	s->word = e.word;
	taskstate_totals_at(s->word, &s->t, s->now, s->at);
	return 0;
}

static uint64_t sum_at(const struct snap *s)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < NT; i++)
		sum += s->at[i];
	return sum;
}

/*
 * How far the totals may be from schedstat: each switch is stamped by
 * the tracepoint a little after (in) or before (out) the run queue clock
 * the scheduler uses, a few microseconds under TCG, and each side has
 * its own clock read; 5 ms plus 3% of the interval covers hundreds of
 * switches, and a wrong bucket (a whole state's time elsewhere) is far
 * outside it.
 */
static bool close_to(uint64_t a, uint64_t b, uint64_t span)
{
	uint64_t d = a > b ? a - b : b - a;

	return d <= 5 * MS + span / 33;
}

/* Every word's totals match it, and sum to the time since start_ns. */
TEST_F(totals, match_their_word_and_sum_to_time_since_start)
{
	struct snap s;
	uint64_t since;

	ASSERT_EQ(0, snap_of(self->fd, ts_gettid(), &s));
	ASSERT_EQ(TASKSTATE_RUNNING, taskstate_state(s.word));
	EXPECT_TRUE(taskstate_totals_match(s.word, &s.t));
	since = taskstate_since_ns(s.word);
	EXPECT_NE(0, s.t.start_ns);
	EXPECT_LE(s.t.start_ns, since);
	EXPECT_LE(since, s.now);
	EXPECT_EQ(s.now - s.t.start_ns, sum_at(&s));
	/* Our own thread ran to get here. */
	EXPECT_LT(0, s.at[TASKSTATE_TOTAL_RUNNING]);
}

/* A vfork parent waits in D state: BLOCKED. */
TEST_F(totals, vfork_wait_is_blocked)
{
	struct snap a, b;
	pid_t tid = ts_gettid(), pid;

	ASSERT_EQ(0, snap_of(self->fd, tid, &a));
	pid = vfork();
	if (!pid) {
		struct timespec ts = { 0, 300 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		_exit(0);
	}
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, snap_of(self->fd, tid, &b));
	waitpid(pid, NULL, 0);
	EXPECT_LE(290 * MS, b.at[TASKSTATE_TOTAL_BLOCKED] -
			    a.at[TASKSTATE_TOTAL_BLOCKED]);
	EXPECT_GE(b.now - a.now, b.at[TASKSTATE_TOTAL_BLOCKED] -
				 a.at[TASKSTATE_TOTAL_BLOCKED]);
}

/* A stopped process's time goes to OTHER. */
TEST_F(totals, sigstop_is_other)
{
	struct snap a, b;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		for (;;)
			pause();
	}
	ASSERT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, snap_of(self->fd, pid, &a));
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_STOPPED, 5000));
	ts_sleep_ms(300);
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_NE(0, ts_wait_state(self->fd, pid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, snap_of(self->fd, pid, &b));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_LE(290 * MS, b.at[TASKSTATE_TOTAL_OTHER] -
			    a.at[TASKSTATE_TOTAL_OTHER]);
	EXPECT_GE(b.now - a.now, b.at[TASKSTATE_TOTAL_OTHER] -
				 a.at[TASKSTATE_TOTAL_OTHER]);
	EXPECT_TRUE(taskstate_totals_match(b.word, &b.t));
}

/*
 * Threads that spin (or sleep in nanosleep) for a while between two
 * sleeps on a pipe.
 */
struct spinner {
	pthread_t th;
	pid_t tid;
	int go[2];		/* a byte: one round; closed: exit */
	unsigned int ms;
	int cpu;		/* -1: no pinning */
	bool sleeps;		/* the round is a nanosleep, not a spin */
	int stop;		/* set: cut a spin short */
};

static void *spinner_main(void *arg)
{
	struct spinner *s = arg;
	char c;

	s->tid = ts_gettid();
	if (s->cpu >= 0)
		ts_pin(s->cpu);
	while (read(s->go[0], &c, 1) == 1) {
		uint64_t end = taskstate_now_ns() + s->ms * MS;

		if (s->sleeps) {
			ts_sleep_ms(s->ms);
			continue;
		}
		while (taskstate_now_ns() < end &&
		       !__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
			;
	}
	return NULL;
}

static int spinner_start(struct spinner *s, unsigned int ms, int cpu)
{
	memset(s, 0, sizeof(*s));
	s->ms = ms;
	s->cpu = cpu;
	if (pipe(s->go))
		return -errno;
	if (pthread_create(&s->th, NULL, spinner_main, s))
		return -EAGAIN;
	while (!__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	return 0;
}

static void spinner_stop(struct spinner *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	close(s->go[1]);
	pthread_join(s->th, NULL);
	close(s->go[0]);
}

#define NR_SPIN	3
#define ROUNDS	3

/* A check of one round: logged, and counted in @bad, when it fails. */
#define ROUND_CHECK(bad, cond) do {					\
	if (!(cond)) {							\
		TH_LOG("  off: %s", #cond);				\
		(bad)++;						\
	}								\
} while (0)

/*
 * One round of the spinners (or sleepers) in @sp, each with its totals
 * and schedstat read while it waits on its pipe (both frozen then),
 * before and after: the run and wait deltas of both must agree, and the
 * round's time must be where it belongs.  Returns how many checks were
 * off.
 */
static int one_round(struct __test_metadata *_metadata, int fd,
		     struct spinner *sp, int n, unsigned int ms, bool sleeps)
{
	uint64_t r0[NR_SPIN], w0[NR_SPIN], r1, w1, span, d[NT];
	struct snap a[NR_SPIN], b;
	long long c0[NR_SPIN];
	int i, k, tries, bad = 0;

	for (i = 0; i < n; i++) {
		ASSERT_NE(0, ts_wait_state(fd, sp[i].tid, TASKSTATE_SLEEPING,
					   5000));
		/* Settled on the pipe: its count no longer moves. */
		do {
			c0[i] = ts_nvcsw(sp[i].tid);
			ts_sleep_ms(20);
		} while (c0[i] != ts_nvcsw(sp[i].tid));
		ASSERT_EQ(0, snap_of(fd, sp[i].tid, &a[i]));
		ASSERT_EQ(0, ts_schedstat(sp[i].tid, &r0[i], &w0[i]));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(1, write(sp[i].go[1], "x", 1));
	/*
	 * Back on the pipe once the round is done: one voluntary switch
	 * more (the read), two for a sleeper (the nanosleep, the read).
	 */
	ts_sleep_ms(ms);
	for (i = 0; i < n; i++) {
		for (tries = 0; tries < 1000; tries++) {
			if (ts_nvcsw(sp[i].tid) >= c0[i] + 1 + sleeps &&
			    taskstate_state(ts_sample_word(fd, sp[i].tid)) ==
			    TASKSTATE_SLEEPING)
				break;
			ts_sleep_ms(5);
		}
		ASSERT_GT(1000, tries);
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, ts_schedstat(sp[i].tid, &r1, &w1));
		ASSERT_EQ(0, snap_of(fd, sp[i].tid, &b));
		span = b.now - a[i].now;
		for (k = 0; k < NT; k++)
			d[k] = b.at[k] - a[i].at[k];
		TH_LOG("thread %d: run %llu ms (schedstat %llu), wait %llu ms (schedstat %llu), sleep %llu, block %llu, of %llu ms",
		       i, (unsigned long long)d[0] / MS,
		       (unsigned long long)(r1 - r0[i]) / MS,
		       (unsigned long long)d[1] / MS,
		       (unsigned long long)(w1 - w0[i]) / MS,
		       (unsigned long long)d[2] / MS,
		       (unsigned long long)d[3] / MS,
		       (unsigned long long)span / MS);
		if (sleeps) {
			ROUND_CHECK(bad, (ms - 10) * MS <=
				    d[TASKSTATE_TOTAL_SLEEPING]);
		} else {
			/* Spinning until a wall-clock end: running or waiting. */
			ROUND_CHECK(bad, (ms - 10) * MS <=
				    d[TASKSTATE_TOTAL_RUNNING] +
				    d[TASKSTATE_TOTAL_RUNNABLE]);
			if (n == 1)
				ROUND_CHECK(bad, (ms - 10) * MS <=
					    d[TASKSTATE_TOTAL_RUNNING]);
		}
		ROUND_CHECK(bad, close_to(d[TASKSTATE_TOTAL_RUNNING],
					  r1 - r0[i], span));
		/*
		 * A sleeper spends at least @ms of the span in nanosleep, so
		 * it cannot have waited for a CPU longer than the rest.  Once
		 * (arm64 under TCG) schedstat's run_delay grew by 31 ms in a
		 * 307 ms span: that is schedstat's bookkeeping, not time the
		 * thread could have spent, and there is nothing to compare
		 * with.  A wakeup the module lost would still be caught: its
		 * wait is real, so it fits in the span.
		 */
		if (sleeps && w1 - w0[i] > span - ms * MS)
			TH_LOG("thread %d: schedstat's wait is more than the span leaves beside the sleep; not compared",
			       i);
		else
			ROUND_CHECK(bad, close_to(d[TASKSTATE_TOTAL_RUNNABLE],
						  w1 - w0[i], span));
		/*
		 * Nothing in D state but, now and then, the pipe's mutex
		 * taken as the writer still holds it: milliseconds at most.
		 */
		ROUND_CHECK(bad, d[TASKSTATE_TOTAL_BLOCKED] < 20 * MS);
		ROUND_CHECK(bad, d[TASKSTATE_TOTAL_OTHER] == 0);
		ROUND_CHECK(bad, taskstate_totals_match(b.word, &b.t));
	}
	return bad;
}

/*
 * Rounds of @n threads on @cpu (-1: anywhere) until one has every check
 * right, at most ROUNDS.  The module stamps a switch at the tracepoint,
 * schedstat at the run queue clock read just before: a guest stalled
 * between the two (TCG: a vCPU waits up to 100 ms for its turn, the
 * host preempts the guest) moves the stall from one state to another in
 * one of them, once.  A wrong bucket or a lost event is off every round.
 */
static void round_and_compare(struct __test_metadata *_metadata, int fd,
			      int n, int cpu, unsigned int ms, bool sleeps)
{
	struct spinner sp[NR_SPIN];
	int i, round, bad = 0;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, spinner_start(&sp[i], ms, cpu));
		sp[i].sleeps = sleeps;
	}
	for (round = 1; round <= ROUNDS; round++) {
		bad = one_round(_metadata, fd, sp, n, ms, sleeps);
		if (!bad || !_metadata->passed)
			break;
		TH_LOG("round %d: %d checks off", round, bad);
	}
	EXPECT_EQ(0, bad) TH_LOG("off in all %d rounds", ROUNDS);
	for (i = 0; i < n; i++)
		spinner_stop(&sp[i]);
}

/* A nanosleep lands in SLEEPING; run and wait match schedstat. */
TEST_F(totals, nanosleep_is_sleeping)
{
	round_and_compare(_metadata, self->fd, 1, -1, 300, true);
}

/* One spinner: its on-CPU time and run-queue wait are schedstat's. */
TEST_F(totals, spinner_matches_schedstat)
{
	round_and_compare(_metadata, self->fd, 1, -1, 500, false);
}

/*
 * Three spinners on one CPU: each runs about a third of the time and
 * waits the rest; both agree with schedstat, thread by thread.
 */
TEST_F(totals, contenders_match_schedstat)
{
	round_and_compare(_metadata, self->fd, NR_SPIN, 0, 400, false);
}

/* SAMPLE and the mapping give a sleeping thread the same totals. */
TEST_F(totals, sample_and_mapping_agree)
{
	struct taskstate_location l;
	struct taskstate_totals t;
	struct spinner sp;
	struct snap s;
	int i, ret;
	uint64_t w;

	if (!self->mapped)
		SKIP(return, "no mapping here (not in the initial pid namespace?)");
	ASSERT_EQ(0, spinner_start(&sp, 50, -1));
	ASSERT_EQ(1, write(sp.go[1], "x", 1));
	ts_sleep_ms(100);
	ASSERT_NE(0, ts_wait_state(self->fd, sp.tid, TASKSTATE_SLEEPING, 5000));
	l.tid = sp.tid;
	ASSERT_EQ(1, taskstate_locate(self->fd, &l, 1));
	ASSERT_EQ(0, snap_of(self->fd, sp.tid, &s));
	ASSERT_EQ(0, taskstate_mapping_read(&ts_xmap, &l, &w, &t));
	EXPECT_EQ(s.word, w);
	EXPECT_EQ(0, memcmp(&s.t, &t, sizeof(t)));
	EXPECT_TRUE(taskstate_totals_match(w, &t));
	EXPECT_LE(40 * MS, t.state_ns[TASKSTATE_TOTAL_RUNNING]);
	spinner_stop(&sp);
	/*
	 * Joined is not yet dead (glibc's join waits for the tid to be
	 * cleared, early in do_exit()): soon DEAD until freed, then the
	 * location is stale.  Totals still match their word all along.
	 */
	for (i = 0; i < 5000; i++) {
		ret = taskstate_mapping_read(&ts_xmap, &l, &w, &t);
		ASSERT_TRUE(ret == 0 || ret == -ESRCH);
		if (ret || taskstate_state(w) == TASKSTATE_DEAD)
			break;
		EXPECT_TRUE(taskstate_totals_match(w, &t));
		ts_sleep_ms(1);
	}
	EXPECT_TRUE(!ret || taskstate_state(w) == TASKSTATE_DEAD);
}

/* LIST with totals: every entry's totals match its word. */
TEST_F(totals, list_totals_match)
{
	struct taskstate_totals *t = NULL;
	struct taskstate_entry *e = NULL;
	uint32_t n, i;

	ASSERT_LE(1, taskstate_list(self->fd, 0, &e, &t, &n));
	ASSERT_LE(1, n);
	for (i = 0; i < n; i++)
		EXPECT_TRUE(taskstate_totals_match(e[i].word, &t[i]))
			TH_LOG("tid %u", e[i].tid);
	free(e);
	free(t);
}

/*
 * Totals are there exactly when INFO says so: with totals=1 SAMPLE, LIST
 * and the mapping give them; with totals=0 each refuses with EOPNOTSUPP
 * (the mapping's reader too, instead of retrying forever) and the old
 * calls work as before.
 */
TEST(totals_follow_info)
{
	struct taskstate_entry e = { .tid = (uint32_t)ts_gettid() };
	struct taskstate_totals t, *tl = NULL;
	struct taskstate_entry *el = NULL;
	struct taskstate_location l;
	struct taskstate_mapping m;
	struct taskstate_info info;
	int fd, want, ret;
	uint32_t n;
	uint64_t w;

	fd = taskstate_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, taskstate_info(fd, &info));
	if (!info.track_all)
		ASSERT_EQ(0, taskstate_track(fd, e.tid, false, NULL));
	want = (info.map_flags & TASKSTATE_MAP_F_TOTALS) ? 1 : -EOPNOTSUPP;
	TH_LOG("module loaded with totals=%d", want == 1);
	EXPECT_EQ(want, taskstate_sample(fd, &e, &t, 1));
	ret = taskstate_list(fd, 0, &el, &tl, &n);
	EXPECT_EQ(want == 1, ret > 0);
	if (want != 1)
		EXPECT_EQ(-EOPNOTSUPP, ret);
	if (!taskstate_mapping_open(fd, &m)) {
		l.tid = e.tid;
		ASSERT_EQ(1, taskstate_locate(fd, &l, 1));
		EXPECT_EQ(want == 1 ? 0 : want, taskstate_mapping_read(&m, &l, &w, &t));
		taskstate_mapping_close(&m);
	}
	EXPECT_EQ(1, taskstate_sample(fd, &e, NULL, 1));
	free(el);
	free(tl);
	taskstate_close(fd);
}

/* The taskstate command, from $TS_BIN. */
static FILE *cli(const char *args)
{
	const char *bin = ts_bin_dir();
	char cmd[1536];

	if (!bin)
		return NULL;
	snprintf(cmd, sizeof(cmd), "%.256s/taskstate %.1200s", bin, args);
	return popen(cmd, "r");
}

/* The number after "key": in the object of "tid":tid, in line; -1 if none. */
static long long json_num(const char *line, pid_t tid, const char *key)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "{\"tid\":%d,", (int)tid);
	p = strstr(line, pat);
	if (!p)
		return -1;
	end = strchr(p, '}');
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(p, pat);
	if (!p || (end && p > end))
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

/*
 * top --json: a spinner's interval is mostly RUN (and WAIT), a sleeper's
 * is SLEEP, and each thread's five times add up to the interval.
 */
TEST_F(totals, top_json_shows_where_the_interval_went)
{
	static const char *const keys[NT] = {
		"running_ns", "runnable_ns", "sleeping_ns", "blocked_ns", "other_ns",
	};
	struct spinner spin, idle;
	long long v, sum, interval;
	char args[128], line[65536];
	int frames = 0, k;
	FILE *f;

	if (!ts_bin_dir())
		SKIP(return, "TS_BIN (the taskstate command's directory) not set");
	/* Spinning until stopped, however slow top is to start and run. */
	ASSERT_EQ(0, spinner_start(&spin, 600000, -1));
	ASSERT_EQ(0, spinner_start(&idle, 0, -1));
	ASSERT_EQ(1, write(spin.go[1], "x", 1));
	ts_sleep_ms(50);
	snprintf(args, sizeof(args), "top --json -n 2 -d 0.4 -p %d", getpid());
	f = cli(args);
	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		frames++;
		ASSERT_EQ(0, strncmp(line, "{\"time_ns\":", 11)) TH_LOG("%s", line);
		interval = strtoll(strstr(line, "\"interval_ns\":") + 14, NULL, 10);
		EXPECT_LE(390 * MS, interval);
		/* The spinner: at least 80% running or waiting for a CPU. */
		v = json_num(line, spin.tid, "running_ns") +
		    json_num(line, spin.tid, "runnable_ns");
		EXPECT_LE(interval * 8 / 10, v) TH_LOG("%s", line);
		EXPECT_LE(interval / 4, json_num(line, spin.tid, "running_ns"));
		/* The sleeper: asleep on its pipe all along. */
		EXPECT_EQ(interval, json_num(line, idle.tid, "sleeping_ns"))
			TH_LOG("%s", line);
		sum = 0;
		for (k = 0; k < NT; k++)
			sum += json_num(line, idle.tid, keys[k]);
		EXPECT_EQ(interval, sum);
		EXPECT_TRUE(strstr(line, "\"state\":\"sleeping\"") != NULL);
	}
	EXPECT_EQ(0, pclose(f));
	EXPECT_EQ(2, frames);
	spinner_stop(&spin);
	spinner_stop(&idle);
}

/* top in a pipe: a block per refresh, a row per thread, shares in %. */
TEST_F(totals, top_table_in_a_pipe)
{
	char args[128], line[512], state[16], comm[64];
	float pct[NT], sum;
	unsigned int tid, tgid;
	int rows = 0, blocks = 0, mine = 0, k;
	FILE *f;

	if (!ts_bin_dir())
		SKIP(return, "TS_BIN (the taskstate command's directory) not set");
	snprintf(args, sizeof(args), "top -n 2 -d 0.2 -o sleeping -p %d", getpid());
	f = cli(args);
	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "taskstate top: ", 15)) {
			blocks++;
			continue;
		}
		if (strstr(line, "RUN%") || line[0] == '\n')
			continue;
		ASSERT_EQ(9, sscanf(line, "%u %u %15s %f %f %f %f %f %63s", &tid,
				     &tgid, state, &pct[0], &pct[1], &pct[2],
				     &pct[3], &pct[4], comm))
			TH_LOG("%s", line);
		rows++;
		EXPECT_EQ((unsigned int)getpid(), tgid);
		EXPECT_LE(0, taskstate_state_from_name(state));
		for (sum = 0, k = 0; k < NT; k++)
			sum += pct[k];
		/* Threads there all interval long fill it; new ones less. */
		EXPECT_GE(100.5, sum) TH_LOG("%s", line);
		mine += tid == (unsigned int)ts_gettid();
	}
	EXPECT_EQ(0, pclose(f));
	EXPECT_EQ(2, blocks);
	EXPECT_EQ(2, mine);
	EXPECT_LE(2, rows);
}

/*
 * metrics: the text exposition format, with this process's counters and
 * gauges; -o writes the file whole and leaves nothing else.
 */
TEST_F(totals, metrics_prometheus_text)
{
	char args[1200], line[512], dir[] = "/tmp/ts_metrics.XXXXXX";
	char path[64], name[128], labels[256];
	double value, running = -1;
	int comments = 0, samples = 0, sleeping = 0;
	struct spinner idle;
	FILE *f;

	if (!ts_bin_dir())
		SKIP(return, "no taskstate command beside the test, and TS_BIN not set");
	/* A directory of its own, so that ls below sees only this run's files. */
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ(0, spinner_start(&idle, 0, -1));
	ASSERT_NE(0, ts_wait_state(self->fd, idle.tid, TASKSTATE_SLEEPING, 5000));
	snprintf(path, sizeof(path), "%s/metrics.prom", dir);
	snprintf(args, sizeof(args), "metrics -p %d --output %s && cat %s && rm %s && ls %s.tmp.* 2>/dev/null",
		 getpid(), path, path, path, path);
	f = cli(args);
	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#') {
			comments++;
			EXPECT_TRUE(!strncmp(line, "# HELP taskstate_", 17) ||
				    !strncmp(line, "# TYPE taskstate_", 17))
				TH_LOG("%s", line);
			continue;
		}
		if (!strchr(line, '{'))		/* a health series, no label */
			continue;
		ASSERT_EQ(3, sscanf(line, "%127[a-z_]{%255[^}]} %lf", name,
				    labels, &value)) TH_LOG("%s", line);
		samples++;
		snprintf(args, sizeof(args), "pid=\"%d\",", getpid());
		if (strcmp(name, "taskstate_info"))	/* the health series have none */
			EXPECT_EQ(0, strncmp(labels, args, strlen(args))) TH_LOG("%s", line);
		if (!strcmp(name, "taskstate_state_seconds_total") &&
		    strstr(labels, "state=\"running\""))
			running = value;
		if (!strcmp(name, "taskstate_threads") &&
		    strstr(labels, "state=\"sleeping\""))
			sleeping = (int)value;
	}
	/* The rm ran, and ls found no temporary file: its status is 2. */
	EXPECT_NE(0, pclose(f));
	EXPECT_EQ(18, comments);	/* HELP and TYPE of 9 families */
	EXPECT_LE(2, samples);
	EXPECT_LT(0, running);
	EXPECT_LE(1, sleeping);
	spinner_stop(&idle);
	EXPECT_EQ(0, rmdir(dir));
}

/* With arguments, only the tests they name (run_vm.sh: totals=0). */
int main(int argc, char **argv)
{
	return ts_harness_main(argc, argv, NULL);
}
