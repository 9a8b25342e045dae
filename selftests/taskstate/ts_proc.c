// SPDX-License-Identifier: GPL-2.0
/*
 * ts_proc: a process's totals, its exited threads' included
 * (TASKSTATE_IOC_PROCESS, "DOC: Process totals" in the uapi header).
 *
 * A process whose threads churn (created, run, sleep, exit) is read in a
 * loop, by PROCESS and by `taskstate metrics` as a scraper would: no
 * per-state counter ever goes down, and once the churn stops the answer
 * is the live thread's totals plus what the exited ones brought.  The
 * same loop sums the threads LIST shows, as metrics did before the
 * module kept exited totals: that sum must go down (the negative
 * control: the churn does make a per-thread sum drop).  Also: a thread's
 * UNTRACK moves its totals into the process's, the record ends with its
 * leader's tracking, and it survives exec by a non-leader thread.
 *
 * Runs in either track_all mode (with track_all=0 the fixture tracks its
 * process as a whole).  With totals=0 run_vm.sh runs process_follows_info
 * alone (PROCESS refused); the others need totals.  Run by name only,
 * under the fault-injection build: process_totals_saturate_instead_of_wrapping.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

#define MS		1000000ULL
#define NT		TASKSTATE_MAP_NR_TOTALS

/* Environment of the exec'd image (exec_by_non_leader_keeps_the_record). */
#define EXEC_ENV	"TS_PROC_EXEC_FD"

/*
 * After exec, this program started as a non-leader thread's new image:
 * say so on the inherited pipe, then wait to be killed.
 */
__attribute__((constructor)) static void exec_child(void)
{
	const char *fd = getenv(EXEC_ENV);

	if (!fd)
		return;
	if (write(atoi(fd), "e", 1) != 1)
		_exit(1);
	ts_sleep_ms(20000);
	_exit(0);
}

FIXTURE(proc) {
	int fd;
	struct taskstate_info info;
	pid_t pid;
};

FIXTURE_SETUP(proc)
{
	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, taskstate_info(self->fd, &self->info));
	if (!(self->info.map_flags & TASKSTATE_MAP_F_TOTALS))
		SKIP(return, "the module keeps no totals (totals=0)");
	self->pid = getpid();
	/* track_all=0: this process, as a whole. */
	if (!self->info.track_all)
		ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, NULL));
}

FIXTURE_TEARDOWN(proc)
{
	taskstate_close(self->fd);
}

static uint64_t sum_of(const __u64 v[NT])
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < NT; i++)
		s += v[i];
	return s;
}

/* The first state whose count went down from @prev to @cur, or -1. */
static int first_drop(const __u64 prev[NT], const __u64 cur[NT])
{
	int k;

	for (k = 0; k < NT; k++)
		if (cur[k] < prev[k])
			return k;
	return -1;
}

/* Busy until @ns of CLOCK_BOOTTIME have passed: RUNNING or RUNNABLE. */
static void spin_ns(uint64_t ns)
{
	uint64_t end = taskstate_now_ns() + ns;

	while (taskstate_now_ns() < end)
		;
}

/* The churn: batches of workers that run 3 ms, sleep 3 ms and exit. */
#define WORK_MS		3
#define BATCH		4

struct churn {
	pthread_t thread;
	volatile int stop;
	unsigned long exited;	/* workers joined */
	int err;
};

static void *worker(void *arg)
{
	spin_ns(WORK_MS * MS);
	ts_sleep_ms(WORK_MS);
	return NULL;
}

static void *churner(void *arg)
{
	struct churn *c = arg;
	pthread_t t[BATCH];
	int i, n;

	while (!c->stop) {
		for (n = 0; n < BATCH; n++) {
			c->err = pthread_create(&t[n], NULL, worker, NULL);
			if (c->err)
				break;
		}
		for (i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		c->exited += n;
		if (c->err)
			break;
	}
	return NULL;
}

/*
 * The per-state sum of the threads LIST shows of @pid, up to a time read
 * before the list (so that each thread's value is its true total at
 * some moment of the call, and a thread's own value never decreases).
 * What `taskstate metrics` summed before the module kept exited totals.
 */
static int list_sum(int fd, pid_t pid, __u64 sum[NT])
{
	struct taskstate_totals *t;
	struct taskstate_entry *e;
	uint64_t now = taskstate_now_ns(), at[NT];
	uint32_t i, n;
	int k, ret;

	ret = taskstate_list(fd, pid, &e, &t, &n);
	if (ret < 0)
		return ret;
	memset(sum, 0, NT * sizeof(*sum));
	for (i = 0; i < n; i++) {
		if (!taskstate_totals_match(e[i].word, &t[i]))
			continue;
		taskstate_totals_at(e[i].word, &t[i], now, at);
		for (k = 0; k < NT; k++)
			sum[k] += at[k];
	}
	free(e);
	free(t);
	return 0;
}

/* PROCESS of @pid until only @live threads are counted, or 10 s. */
static int settle(int fd, pid_t pid, uint64_t live,
		  struct taskstate_process *p)
{
	int i, ret = 0;

	for (i = 0; i < 1000; i++) {
		ret = taskstate_process(fd, pid, p);
		if (ret != 0 || p->nr_threads == live)
			return ret;
		ts_sleep_ms(10);
	}
	return -ETIMEDOUT;
}

/*
 * Threads churn while PROCESS and LIST read the process in a loop: the
 * answer never goes down, in any state; LIST's sum does.  Then, with
 * only this thread left, the answer is this thread's time since its
 * tracking began plus the exited threads', which hold at least the time
 * the workers spun and slept.
 */
TEST_F_TIMEOUT(proc, churn_never_decreases, 180)
{
	__u64 naive[NT], prev_naive[NT] = { 0 };
	uint64_t end;
	struct taskstate_process p, prev = { 0 };
	unsigned long reads = 0, naive_drops = 0;
	struct churn c = { 0 };
	struct taskstate_entry e = { .tid = (uint32_t)self->pid };
	struct taskstate_totals me;
	uint64_t exp;
	int k;

	ASSERT_EQ(0, pthread_create(&c.thread, NULL, churner, &c));
	end = taskstate_now_ns() + 2000 * MS;
	while (taskstate_now_ns() < end || c.exited < 100) {
		ASSERT_EQ(0, list_sum(self->fd, self->pid, naive));
		ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
		ASSERT_LE(prev.now_ns, p.now_ns);
		k = first_drop(prev.state_ns, p.state_ns);
		ASSERT_EQ(-1, k) TH_LOG("read %lu: %s went down", reads,
					taskstate_total_name(k));
		ASSERT_EQ(-1, first_drop(prev.exited_ns, p.exited_ns));
		ASSERT_EQ(-1, first_drop(p.exited_ns, p.state_ns));
		if (reads && first_drop(prev_naive, naive) >= 0)
			naive_drops++;
		ASSERT_LE(prev.nr_exited, p.nr_exited);
		memcpy(prev_naive, naive, sizeof(naive));
		prev = p;
		reads++;
		if (taskstate_now_ns() > end + 60000 * MS)
			break;	/* a stalled guest: judge what was read */
	}
	c.stop = 1;
	pthread_join(c.thread, NULL);
	ASSERT_EQ(0, c.err);
	TH_LOG("%lu reads, %lu workers exited, %lu drops of the LIST sum",
	       reads, c.exited, naive_drops);
	ASSERT_LE(50, c.exited);

	/* The negative control: LIST's sum of the same process went down. */
	EXPECT_LT(0, naive_drops);

	/* Every worker and the churner freed: this thread alone is live. */
	ASSERT_EQ(0, settle(self->fd, self->pid, 1, &p));
	EXPECT_LE(c.exited + 1, p.nr_exited);
	/* Each worker spun WORK_MS (RUNNING or RUNNABLE), then slept. */
	EXPECT_LE(c.exited * WORK_MS * MS,
		  p.exited_ns[TASKSTATE_TOTAL_RUNNING] +
		  p.exited_ns[TASKSTATE_TOTAL_RUNNABLE]);
	EXPECT_LE(c.exited * WORK_MS * MS * 8 / 10,
		  p.exited_ns[TASKSTATE_TOTAL_SLEEPING]);
	/*
	 * Live plus exited: this thread's totals sum to the time from its
	 * start_ns to now_ns (its current state's age included).  Off by at
	 * most the moments ts_proc_read() holds a state's answer up (its
	 * comment); 2 ms is far below one worker's share.
	 */
	ASSERT_EQ(1, taskstate_sample(self->fd, &e, &me, 1));
	exp = sum_of(p.exited_ns) + (p.now_ns - me.start_ns);
	TH_LOG("sum %llu ns, live + exited %llu ns",
	       (unsigned long long)sum_of(p.state_ns),
	       (unsigned long long)exp);
	EXPECT_LE(exp, sum_of(p.state_ns));
	EXPECT_GE(exp + 2 * MS, sum_of(p.state_ns));
	EXPECT_EQ(-1, first_drop(prev.state_ns, p.state_ns));
}

/*
 * Threads exit (their frees fold into the record) while the process is
 * untracked and tracked again, fifty times: each UNTRACK ends the record
 * (valid 0), each TRACK starts one from zero that never goes down while
 * it lasts, and the kernel log stays clean (run_vm.sh's check).
 */
TEST_F_TIMEOUT(proc, untrack_process_racing_exits, 180)
{
	struct taskstate_process p, prev;
	struct churn c = { 0 };
	uint64_t last_start = 0;
	int round, i, k;

	ASSERT_EQ(0, pthread_create(&c.thread, NULL, churner, &c));
	for (round = 0; round < 50; round++) {
		ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, NULL));
		memset(&prev, 0, sizeof(prev));
		for (i = 0; i < 20; i++) {
			ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
			k = first_drop(prev.state_ns, p.state_ns);
			ASSERT_EQ(-1, k) TH_LOG("round %d: %s went down", round,
						taskstate_total_name(k));
			ASSERT_LE(prev.nr_exited, p.nr_exited);
			/* Each round's record has its own start. */
			if (i) {
				ASSERT_EQ(prev.start_ns, p.start_ns);
			} else {
				ASSERT_LT(last_start, p.start_ns);
			}
			last_start = p.start_ns;
			prev = p;
		}
		ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, true, NULL));
		ASSERT_EQ(-ENODATA, taskstate_process(self->fd, self->pid, &p));
		ASSERT_EQ(0, p.nr_threads);
	}
	c.stop = 1;
	pthread_join(c.thread, NULL);
	ASSERT_EQ(0, c.err);
	TH_LOG("%d rounds, %lu workers exited", round, c.exited);
}

/* `taskstate metrics -p @pid`'s output, to pclose(); NULL on error. */
static FILE *metrics_of(pid_t pid)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%.256s/taskstate metrics -p %d",
		 ts_bin_dir(), (int)pid);
	return popen(cmd, "r");
}

/* One metrics scrape: this process's counters, in ns; 0 or -1. */
static int scrape(pid_t pid, __u64 v[NT])
{
	unsigned long long s, ns;
	static const char metric[] = "taskstate_state_seconds_total{";
	char line[512], state[32];
	int k, seen = 0;
	FILE *f;

	f = metrics_of(pid);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, ",state=\"");

		if (strncmp(line, metric, sizeof(metric) - 1) ||
		    !p || sscanf(p, ",state=\"%31[a-z]\"} %llu.%9llu", state,
				 &s, &ns) != 3)
			continue;
		for (k = 0; k < NT; k++)
			if (!strcasecmp(state, taskstate_total_name(k))) {
				v[k] = s * 1000000000ULL + ns;
				seen |= 1 << k;
			}
	}
	return pclose(f) || seen != (1 << NT) - 1 ? -1 : 0;
}

/* `taskstate metrics` in a scrape loop over the churn: never down. */
TEST_F_TIMEOUT(proc, metrics_counters_never_decrease, 180)
{
	__u64 v[NT], prev[NT] = { 0 };
	uint64_t end;
	struct churn c = { 0 };
	unsigned long scrapes = 0;
	int k;

	if (!ts_bin_dir())
		SKIP(return, "TS_BIN (the taskstate CLI's directory) not set");
	ASSERT_EQ(0, pthread_create(&c.thread, NULL, churner, &c));
	end = taskstate_now_ns() + 2000 * MS;
	while (taskstate_now_ns() < end || scrapes < 20) {
		ASSERT_EQ(0, scrape(self->pid, v));
		k = first_drop(prev, v);
		ASSERT_EQ(-1, k) TH_LOG("scrape %lu: %s went down", scrapes,
					taskstate_total_name(k));
		memcpy(prev, v, sizeof(v));
		scrapes++;
		if (taskstate_now_ns() > end + 60000 * MS)
			break;
	}
	c.stop = 1;
	pthread_join(c.thread, NULL);
	ASSERT_EQ(0, c.err);
	TH_LOG("%lu scrapes, %lu workers exited", scrapes, c.exited);
	ASSERT_LE(10, c.exited);
}

/*
 * One metrics scrape of @pid: its counter lines (@counters), its threads
 * gauge lines of states some thread is in (@threads), and the start of
 * its counters (@start_ns, 0 if not shown); 0 or -1.
 */
static int scrape_families(pid_t pid, int *counters, int *threads,
			   uint64_t *start_ns)
{
	static const char start[] = "taskstate_process_start_time_seconds{";
	static const char counter[] = "taskstate_state_seconds_total{";
	static const char gauge[] = "taskstate_threads{";
	unsigned long long s, ns;
	char line[512];
	FILE *f;

	*counters = *threads = 0;
	*start_ns = 0;
	f = metrics_of(pid);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *v = strstr(line, "} ");

		if (!strncmp(line, counter, sizeof(counter) - 1))
			++*counters;
		else if (!strncmp(line, gauge, sizeof(gauge) - 1) && v &&
			 strcmp(v, "} 0\n"))
			++*threads;	/* a state some thread is in */
		else if (!strncmp(line, start, sizeof(start) - 1) && v &&
			 sscanf(v, "} %llu.%9llu", &s, &ns) == 2)
			*start_ns = s * 1000000000ULL + ns;
	}
	return pclose(f) ? -1 : 0;
}

/* A thread that sleeps until it reads a byte from the pipe *arg. */
static void *sleeper_on(void *arg)
{
	char ch;

	if (read(*(int *)arg, &ch, 1) < 0)
		return NULL;
	return NULL;
}

/*
 * metrics: the counters of a process the module keeps a record of, with
 * the start of that record; none for a process without one (its leader
 * untracked alone), whose live threads' sum would go down, only its
 * threads gauge.
 */
TEST_F(proc, metrics_counters_only_with_a_record)
{
	struct taskstate_process p;
	int counters, threads;
	struct ts_sleeper s;
	uint64_t start, nr;

	if (!ts_bin_dir())
		SKIP(return, "TS_BIN (the taskstate CLI's directory) not set");
	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, scrape_families(self->pid, &counters, &threads, &start));
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
	EXPECT_EQ(NT, counters);
	EXPECT_LE(1, threads);
	EXPECT_EQ(p.start_ns, start);

	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(-ENODATA, taskstate_process(self->fd, self->pid, &p));
	ASSERT_EQ(0, scrape_families(self->pid, &counters, &threads, &start));
	EXPECT_EQ(0, counters);
	EXPECT_EQ(0, start);
	/* The sleeper, still tracked, in the gauge. */
	EXPECT_EQ(1, threads);
	ts_sleeper_stop(&s);
}

/*
 * UNTRACK of one thread moves its totals into the process's exited ones
 * (the counters do not drop); tracking it again counts it again from
 * then, as a new thread.
 */
TEST_F(proc, untrack_of_a_thread_moves_its_totals)
{
	struct taskstate_process p1, p2, p3;
	struct ts_sleeper s;
	uint64_t nr;

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ts_sleep_ms(100);
	ASSERT_EQ(0, settle(self->fd, self->pid, 2, &p1));
	ASSERT_EQ(0, taskstate_untrack(self->fd, s.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p2));
	EXPECT_EQ(1, p2.nr_threads);
	EXPECT_EQ(p1.nr_exited + 1, p2.nr_exited);
	/* Its 100 ms of sleep, at least, went with it. */
	EXPECT_LE(p1.exited_ns[TASKSTATE_TOTAL_SLEEPING] + 100 * MS,
		  p2.exited_ns[TASKSTATE_TOTAL_SLEEPING]);
	EXPECT_EQ(-1, first_drop(p1.state_ns, p2.state_ns));

	ASSERT_EQ(0, taskstate_track(self->fd, s.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p3));
	EXPECT_EQ(2, p3.nr_threads);
	EXPECT_EQ(p2.nr_exited, p3.nr_exited);
	EXPECT_EQ(0, memcmp(p2.exited_ns, p3.exited_ns, sizeof(p2.exited_ns)));
	EXPECT_EQ(-1, first_drop(p2.state_ns, p3.state_ns));
	ts_sleeper_stop(&s);
}

/*
 * A thread tracked again counts from then: the time before it, which its
 * UNTRACK moved into the exited totals, is not counted a second time,
 * though its word says when it fell asleep (the scheduler's estimate).
 * The process's SLEEPING count grows by at most the time that passed
 * per live thread, not by the sleeper's 2 s before the UNTRACK.
 */
TEST_F(proc, track_again_does_not_count_twice)
{
	struct taskstate_process p1, p2, p3;
	struct ts_sleeper s;
	uint64_t nr, grew, bound;

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ts_sleep_ms(2000);
	ASSERT_EQ(0, taskstate_untrack(self->fd, s.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p1));
	/* Its 2 s went into the exited totals. */
	ASSERT_LE(2000 * MS, p1.exited_ns[TASKSTATE_TOTAL_SLEEPING]);
	ASSERT_EQ(0, taskstate_track(self->fd, s.tid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p2));
	ts_sleep_ms(50);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p3));
	ASSERT_EQ(2, p3.nr_threads);
	grew = p3.state_ns[TASKSTATE_TOTAL_SLEEPING] -
	       p1.state_ns[TASKSTATE_TOTAL_SLEEPING];
	/* Each live thread slept at most the time between p1 and p3. */
	bound = p3.nr_threads * (p3.now_ns - p1.now_ns) + 20 * MS;
	TH_LOG("SLEEPING grew %llu ms in %llu ms",
	       (unsigned long long)(grew / MS),
	       (unsigned long long)((p3.now_ns - p1.now_ns) / MS));
	EXPECT_GE(bound, grew);
	EXPECT_EQ(-1, first_drop(p1.state_ns, p2.state_ns));
	ts_sleeper_stop(&s);
}

/*
 * The record lives with its leader's tracking: UNTRACK of the leader
 * ends it (valid 0, every out field 0); a lone thread tracked without
 * its leader starts none; tracking the process again starts a new one.
 */
TEST_F(proc, record_follows_the_leader)
{
	struct taskstate_process p, p0, zero = { 0 };
	struct ts_sleeper s;
	uint64_t nr;

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p0));
	/* When the record began, the fixture's TRACK or the load. */
	EXPECT_NE(0, p0.start_ns);
	EXPECT_GE(p0.now_ns, p0.start_ns);
	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, false, &nr));
	ASSERT_EQ(1, nr);
	ASSERT_EQ(-ENODATA, taskstate_process(self->fd, self->pid, &p));
	zero.size = sizeof(zero);
	zero.pid = (uint32_t)self->pid;
	EXPECT_EQ(0, memcmp(&zero, &p, sizeof(p)));

	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, true, NULL));
	ASSERT_EQ(0, taskstate_track(self->fd, s.tid, false, &nr));
	ASSERT_EQ(1, nr);
	EXPECT_EQ(-ENODATA, taskstate_process(self->fd, self->pid, &p));

	ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, &nr));
	ASSERT_EQ(2, nr);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
	EXPECT_EQ(2, p.nr_threads);
	EXPECT_EQ(0, p.nr_exited);
	EXPECT_EQ(0, sum_of(p.exited_ns));
	/* A new record, which a reader tells from the old one by this. */
	EXPECT_LT(p0.now_ns, p.start_ns);
	EXPECT_GE(p.now_ns, p.start_ns);
	ts_sleeper_stop(&s);
}

/*
 * A process of many threads: PROCESS counts every one (one look under
 * the table's lock walks them all); the time of one call is logged next
 * to that of LIST of the same process with totals, which reads the same
 * entries, one lock section each.
 */
#define MANY	256

TEST_F_TIMEOUT(proc, many_threads_counted_and_the_cost_of_one_look, 180)
{
	uint64_t t0, t1, t2;
	struct taskstate_process p;
	struct taskstate_totals *t;
	struct taskstate_entry *e;
	pthread_t th[MANY];
	pthread_attr_t attr;
	int go[2], i, n = 0;
	uint32_t filled;
	long stack;

	ASSERT_EQ(0, pipe(go));
	/*
	 * Small stacks: 256 default ones would fill a 32-bit address space.
	 * 64 KiB, or the least the C library takes (aarch64's is 128 KiB).
	 */
	ASSERT_EQ(0, pthread_attr_init(&attr));
	stack = sysconf(_SC_THREAD_STACK_MIN);
	ASSERT_EQ(0, pthread_attr_setstacksize(&attr, stack > 64 * 1024 ?
						     (size_t)stack : 64 * 1024));
	for (i = 0; i < MANY; i++, n++)
		if (pthread_create(&th[i], &attr, sleeper_on, &go[0]))
			break;
	ASSERT_EQ(MANY, n);
	ASSERT_EQ(0, settle(self->fd, self->pid, MANY + 1, &p));
	t0 = taskstate_now_ns();
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
	t1 = taskstate_now_ns();
	for (i = 0; i < 100; i++) {
		ASSERT_LE(0, taskstate_list(self->fd, self->pid, &e, &t,
					    &filled));
		free(e);
		free(t);
	}
	t2 = taskstate_now_ns();
	EXPECT_EQ(MANY + 1, p.nr_threads);
	EXPECT_EQ(MANY + 1, filled);
	TH_LOG("%d threads: PROCESS %llu us, LIST with totals %llu us a call (ratio %.2f)",
	       MANY + 1, (unsigned long long)(t1 - t0) / 100000,
	       (unsigned long long)(t2 - t1) / 100000,
	       (double)(t1 - t0) / (double)(t2 - t1));
	for (i = 0; i < MANY; i++)
		if (write(go[1], "x", 1) != 1)
			break;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	close(go[0]);
	close(go[1]);
}

/* The child of exec_by_non_leader_keeps_the_record. */
static void *exec_thread(void *arg)
{
	int fd = *(int *)arg;
	char env[32], *argv[] = { "ts_proc", NULL }, *envp[] = { env, NULL };

	/* This thread leads after exec: it too dies with the test. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ts_sleep_ms(300);
	snprintf(env, sizeof(env), EXEC_ENV "=%d", fd);
	execve("/proc/self/exe", argv, envp);
	_exit(2);
}

static int exec_child_main(int go, int wfd)
{
	pthread_t t[BATCH + 1];
	char ch;
	int i;

	if (read(go, &ch, 1) != 1)
		return 1;
	/* Some threads exit first, so there are exited totals to keep. */
	for (i = 0; i < BATCH; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (i = 0; i < BATCH; i++)
		pthread_join(t[i], NULL);
	if (pthread_create(&t[BATCH], NULL, exec_thread, &wfd))
		return 1;
	for (;;)
		pause();	/* until exec by the other thread kills it */
}

/*
 * A non-leader thread's exec takes the leader's pid and releases the
 * old leader (de_thread()): read across it, the record stays valid and
 * never goes down, and then holds the old leader's and the workers'
 * totals as exited.  It ends with the process.
 */
TEST_F_TIMEOUT(proc, exec_by_non_leader_keeps_the_record, 180)
{
	struct taskstate_process p, prev = { 0 };
	unsigned long reads = 0;
	int go[2], ev[2], k, execed = 0;
	uint64_t end = 0;
	pid_t child;
	char ch;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe2(ev, O_NONBLOCK));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		/* A failed test leaves no child holding the device open. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		close(ev[0]);
		_exit(exec_child_main(go[0], ev[1]));
	}
	close(go[0]);
	close(ev[1]);
	/* Tracked (as a process) before it makes any thread. */
	if (!self->info.track_all)
		ASSERT_EQ(0, taskstate_track(self->fd, child, true, NULL));
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (;;) {
		ASSERT_EQ(0, taskstate_process(self->fd, child, &p))
			TH_LOG("read %lu, %s exec", reads,
			       execed ? "after" : "before");
		ASSERT_LE(prev.now_ns, p.now_ns);
		k = first_drop(prev.state_ns, p.state_ns);
		ASSERT_EQ(-1, k) TH_LOG("read %lu: %s went down", reads,
					taskstate_total_name(k));
		ASSERT_LE(prev.nr_exited, p.nr_exited);
		prev = p;
		reads++;
		if (!execed && read(ev[0], &ch, 1) == 1) {
			execed = 1;
			/* The old leader's free, a grace period on. */
			end = taskstate_now_ns() + 1000 * MS;
		}
		if (execed && taskstate_now_ns() > end && p.nr_threads == 1)
			break;
		ASSERT_GT(20000, reads);
		ts_sleep_ms(2);
	}
	TH_LOG("%lu reads; after exec %llu threads, %llu exited",
	       reads, (unsigned long long)p.nr_threads,
	       (unsigned long long)p.nr_exited);
	/* The workers, the exec'ing thread's old leader. */
	EXPECT_LE(BATCH + 1, p.nr_exited);
	EXPECT_LE(BATCH * WORK_MS * MS,
		  p.exited_ns[TASKSTATE_TOTAL_RUNNING] +
		  p.exited_ns[TASKSTATE_TOTAL_RUNNABLE]);

	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	EXPECT_EQ(-ESRCH, taskstate_process(self->fd, child, &p));
	close(go[1]);
	close(ev[0]);
}

/* The thread of exec_by_a_thread_tracked_before_its_leader_keeps_it. */
struct late_exec {
	int go;		/* read: exec now */
	int wfd;	/* written: this thread's tid, then "e" after exec */
};

static void *late_exec_thread(void *arg)
{
	struct late_exec *x = arg;
	char env[32], *argv[] = { "ts_proc", NULL }, *envp[] = { env, NULL };
	pid_t tid = ts_gettid();
	char ch;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (write(x->wfd, &tid, sizeof(tid)) != sizeof(tid) ||
	    read(x->go, &ch, 1) != 1)
		_exit(1);
	snprintf(env, sizeof(env), EXEC_ENV "=%d", x->wfd);
	execve("/proc/self/exe", argv, envp);
	_exit(2);
}

/*
 * A thread tracked alone, then its leader tracked alone: the thread
 * joins the leader's record (uapi: "the threads already tracked join a
 * leader tracked after them"), so when it calls exec, and takes the
 * leader's pid, the record stays the process's: valid at every read
 * across the exec and the old leader's free, the same start_ns, the old
 * leader among the exited.  Before, the thread was left out of the
 * record and the exec ended it.
 */
TEST_F_TIMEOUT(proc, exec_by_a_thread_tracked_before_its_leader_keeps_it,
	       60)
{
	struct taskstate_process p, first;
	struct late_exec x;
	int go[2], ev[2], reads = 0;
	uint64_t end = 0, nr;
	pthread_t th;
	pid_t child, tid;
	char ch;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ev));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		x.go = go[0];
		x.wfd = ev[1];
		if (pthread_create(&th, NULL, late_exec_thread, &x))
			_exit(1);
		for (;;)
			pause();	/* until the thread's exec kills it */
	}
	close(go[0]);
	close(ev[1]);
	ASSERT_EQ(sizeof(tid), read(ev[0], &tid, sizeof(tid)));
	/* track_all tracks both: start from neither. */
	ASSERT_EQ(0, taskstate_untrack(self->fd, child, true, &nr));
	ASSERT_EQ(0, taskstate_track(self->fd, tid, false, &nr));
	ASSERT_EQ(0, taskstate_track(self->fd, child, false, &nr));
	ASSERT_EQ(0, taskstate_process(self->fd, child, &first));
	EXPECT_EQ(2, first.nr_threads)
		TH_LOG("the thread tracked first is not in the record");
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(ev[0], &ch, 1));
	/* The old leader's free comes a grace period after the exec. */
	end = taskstate_now_ns() + 1000 * MS;
	do {
		ASSERT_EQ(0, taskstate_process(self->fd, child, &p))
			TH_LOG("read %d after the exec: the record ended", reads);
		ASSERT_EQ(first.start_ns, p.start_ns);
		reads++;
		ts_sleep_ms(5);
	} while (taskstate_now_ns() < end);
	EXPECT_EQ(1, p.nr_threads);
	EXPECT_LE(1, p.nr_exited);
	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	close(go[1]);
	close(ev[0]);
}

/*
 * A record counts each thread from when it joined: right after the
 * process is tracked, the totals hold at most the time since start_ns of
 * each thread counted, whatever a thread tracked before brought.
 */
static void expect_no_past(struct __test_metadata *_metadata, int fd,
			   pid_t pid)
{
	struct taskstate_process p;
	uint64_t sum, bound;

	ts_sleep_ms(50);
	ASSERT_EQ(0, taskstate_process(fd, pid, &p));
	ASSERT_EQ(1, p.valid);
	EXPECT_EQ(2, p.nr_threads);
	sum = sum_of(p.state_ns);
	bound = p.nr_threads * (p.now_ns - p.start_ns) + 20 * MS;
	EXPECT_GE(bound, sum)
		TH_LOG("the record's totals sum to %llu ms, %llu ms after it began with %llu threads",
		       (unsigned long long)(sum / MS),
		       (unsigned long long)((p.now_ns - p.start_ns) / MS),
		       (unsigned long long)p.nr_threads);
}

/*
 * A thread tracked alone, its process tracked 2 s later: the new record
 * counts it from then, not its 2 s of sleep before.
 */
TEST_F(proc, lone_thread_joins_its_process_without_its_past)
{
	struct ts_sleeper s;
	uint64_t nr;

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, true, &nr));
	ASSERT_EQ(0, taskstate_track(self->fd, s.tid, false, &nr));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ts_sleep_ms(2000);
	ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, &nr));
	expect_no_past(_metadata, self->fd, self->pid);
	ts_sleeper_stop(&s);
}

/*
 * The leader untracked alone (the record ends) while its other thread
 * stays tracked, the process tracked again 2 s later: the new record
 * counts that thread from then.
 */
TEST_F(proc, thread_joins_a_new_record_without_its_past)
{
	struct ts_sleeper s;
	uint64_t nr;

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, false, &nr));
	ts_sleep_ms(2000);
	ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, &nr));
	expect_no_past(_metadata, self->fd, self->pid);
	ts_sleeper_stop(&s);
}

/*
 * A dead thread's time counts in no total (uapi: "DOC: Per-state
 * totals"): its own totals, read with the time in its current state,
 * and its process's, stop at its death.  @pid's leader is dead (a zombie
 * leader whose other threads live, or a zombie not reaped yet): over
 * 500 ms neither its totals nor its process's OTHER may grow; a live
 * sleeper's SLEEPING, if @sleeping, does.
 */
static void expect_dead_time_uncounted(struct __test_metadata *_metadata,
				       int fd, pid_t pid, bool sleeping)
{
	struct taskstate_entry e[2] = { { .tid = pid }, { .tid = pid } };
	struct taskstate_totals t[2];
	struct taskstate_process p1, p2;
	uint64_t at1[NT], at2[NT], now1, now2, sum1 = 0, sum2 = 0;
	int k;

	ASSERT_NE(0, ts_wait_state(fd, pid, TASKSTATE_DEAD, 5000));
	ASSERT_EQ(1, taskstate_sample(fd, &e[0], &t[0], 1));
	now1 = taskstate_now_ns();
	ASSERT_EQ(0, taskstate_process(fd, pid, &p1));
	ASSERT_EQ(1, p1.valid);
	ts_sleep_ms(500);
	ASSERT_EQ(1, taskstate_sample(fd, &e[1], &t[1], 1));
	now2 = taskstate_now_ns();
	ASSERT_EQ(0, taskstate_process(fd, pid, &p2));
	ASSERT_EQ(TASKSTATE_DEAD, taskstate_state(e[1].word));
	taskstate_totals_at(e[0].word, &t[0], now1, at1);
	taskstate_totals_at(e[1].word, &t[1], now2, at2);
	for (k = 0; k < NT; k++) {
		sum1 += at1[k];
		sum2 += at2[k];
	}
	/* The leader's own totals: the same before and after. */
	EXPECT_EQ(sum1, sum2)
		TH_LOG("the dead leader's totals grew %llu ms in %llu ms",
		       (unsigned long long)((sum2 - sum1) / MS),
		       (unsigned long long)((now2 - now1) / MS));
	/* Its process's OTHER: nothing from the dead leader. */
	EXPECT_GT(5 * MS, p2.state_ns[TASKSTATE_TOTAL_OTHER] -
			  p1.state_ns[TASKSTATE_TOTAL_OTHER])
		TH_LOG("OTHER grew %llu ms in %llu ms",
		       (unsigned long long)((p2.state_ns[TASKSTATE_TOTAL_OTHER] -
					     p1.state_ns[TASKSTATE_TOTAL_OTHER]) / MS),
		       (unsigned long long)((p2.now_ns - p1.now_ns) / MS));
	if (sleeping)
		EXPECT_LE(400 * MS, p2.state_ns[TASKSTATE_TOTAL_SLEEPING] -
				    p1.state_ns[TASKSTATE_TOTAL_SLEEPING]);
	EXPECT_EQ(-1, first_drop(p1.state_ns, p2.state_ns));
}

/*
 * A leader that called pthread_exit() while another thread lives stays a
 * zombie as long as its process: it adds nothing to the totals.
 */
TEST_F(proc, zombie_leader_adds_no_time)
{
	int go[2];
	pthread_t th;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		if (pthread_create(&th, NULL, sleeper_on, &go[0]))
			_exit(1);
		pthread_exit(NULL);
	}
	close(go[0]);
	expect_dead_time_uncounted(_metadata, self->fd, pid, true);
	/* The sleeper reads EOF and exits; the process with it. */
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
}

/* A process that exited and is not reaped yet: a zombie, no time added. */
TEST_F(proc, unreaped_zombie_adds_no_time)
{
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(0);
	expect_dead_time_uncounted(_metadata, self->fd, pid, false);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
}

/*
 * A child that starts a grandchild and waits for it: when the child
 * ends, before wait() returns, this process's record holds both
 * (children_ns counts a child's own children, nr_children both), with
 * at least the grandchild's sleep and the child's wait for it.
 */
TEST_F(proc, children_bring_their_children)
{
	struct taskstate_process before, after;
	uint64_t slept;
	pid_t pid, g;

	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &before));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		g = fork();
		if (g == 0) {
			ts_sleep_ms(100);
			_exit(0);
		}
		_exit(g > 0 && waitpid(g, NULL, 0) == g ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &after));
	ASSERT_EQ(before.start_ns, after.start_ns);
	EXPECT_EQ(before.nr_children + 2, after.nr_children);
	slept = after.children_ns[TASKSTATE_TOTAL_SLEEPING] -
		before.children_ns[TASKSTATE_TOTAL_SLEEPING];
	EXPECT_LE(2 * 100 * MS * 9 / 10, slept);
	EXPECT_GT(60000 * MS, slept);
}

/* TRACK of process @pid with its exits logged to @fd: 0 or -errno. */
static int track_exits(int fd, pid_t pid, unsigned int flags)
{
	struct taskstate_track t = {
		.size = sizeof(t), .flags = flags, .id = pid,
	};

	return ioctl(fd, TASKSTATE_IOC_TRACK, &t) ? -errno : 0;
}

static void *no_op(void *arg)
{
	return arg;
}

/* A child that, on @gate, starts @n threads one after another, and ends. */
static pid_t fork_thread_churn(int gate[2], int n)
{
	pthread_t th;
	pid_t pid;
	int i;

	pid = ts_fork_gated(gate);
	if (pid)
		return pid;
	for (i = 0; i < n; i++) {
		if (pthread_create(&th, NULL, no_op, NULL))
			_exit(1);
		pthread_join(th, NULL);
	}
	_exit(0);
}

#define CHURN_THREADS	300

/*
 * The log of exits holds TASKSTATE_EXITS_LOG entries: a child's 300
 * threads and its main thread end unread, so exactly 256 are logged, in
 * the child's record (its pid, the record's start_ns), and 45 counted
 * lost (a call with room for none reads that count); entries the
 * caller's buffer could not take (EFAULT) count lost in the next call; a
 * read empties the log.
 */
TEST_F(proc, exits_log_counts_what_it_cannot_hold)
{
	static struct taskstate_exit e[TASKSTATE_EXITS_LOG + 1];
	const int lost_first = CHURN_THREADS + 1 - TASKSTATE_EXITS_LOG;
	struct taskstate_process p;
	int fd, gate[2], i, n;
	uint64_t lost;
	siginfo_t si;
	pid_t pid;

	TS_BPF_SKIP("log of thread exits (EXITS): its descriptor is a map's");

	fd = taskstate_open();
	ASSERT_LE(0, fd);
	/* No log yet: nothing, not an error. */
	ASSERT_EQ(0, ts_take_exits(fd, e, 1, &lost));
	pid = fork_thread_churn(gate, CHURN_THREADS);
	ASSERT_LT(0, pid);
	close(gate[0]);
	ASSERT_EQ(0, track_exits(fd, pid, TASKSTATE_TRACK_PROCESS |
					  TASKSTATE_TRACK_EXITS));
	ASSERT_EQ(1, write(gate[1], "g", 1));
	close(gate[1]);
	ASSERT_EQ(0, waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	ASSERT_EQ(0, taskstate_process(fd, pid, &p));
	ASSERT_EQ(1, p.valid);
	/* Room for none: the lost count alone, then reset. */
	ASSERT_EQ(0, ts_take_exits(fd, NULL, 0, &lost));
	EXPECT_EQ(lost_first, lost);
	/* Ten entries to a pointer no one can write: lost, not kept. */
	ASSERT_EQ(-EFAULT, ts_take_exits(fd, (void *)8, 10, &lost));
	n = ts_take_exits(fd, e, TASKSTATE_EXITS_LOG + 1, &lost);
	EXPECT_EQ(TASKSTATE_EXITS_LOG - 10, n);
	EXPECT_EQ(10, lost);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(pid, e[i].tgid);
		EXPECT_NE(pid, e[i].tid);
		EXPECT_EQ(p.start_ns, e[i].proc_start_ns);
		EXPECT_STREQ("ts_proc", e[i].comm);
	}
	EXPECT_EQ(0, ts_take_exits(fd, e, TASKSTATE_EXITS_LOG, &lost));
	EXPECT_EQ(0, lost);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	taskstate_close(fd);
}

/*
 * A process logs to one descriptor: another's TRACK asking for its
 * exits is EBUSY until the first descriptor is closed, which lets go of
 * it.  The flag needs TASKSTATE_TRACK_PROCESS, and UNTRACK refuses it.
 */
TEST_F(proc, exits_log_is_one_descriptors_until_closed)
{
	struct taskstate_exit e[2];
	int a, b, gate[2];
	uint64_t lost;
	pid_t pid;

	TS_BPF_SKIP("log of thread exits (EXITS): its descriptor is a map's");

	/* Opened after the fork: the child holds neither. */
	pid = fork_thread_churn(gate, 1);
	ASSERT_LT(0, pid);
	close(gate[0]);
	a = taskstate_open();
	b = taskstate_open();
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(-EINVAL, track_exits(a, pid, TASKSTATE_TRACK_EXITS));
	ASSERT_EQ(0, track_exits(a, pid, TASKSTATE_TRACK_PROCESS |
					 TASKSTATE_TRACK_EXITS));
	/* Again through the same descriptor: nothing changes. */
	ASSERT_EQ(0, track_exits(a, pid, TASKSTATE_TRACK_PROCESS |
					 TASKSTATE_TRACK_EXITS));
	EXPECT_EQ(-EBUSY, track_exits(b, pid, TASKSTATE_TRACK_PROCESS |
					      TASKSTATE_TRACK_EXITS));
	{
		struct taskstate_track t = {
			.size = sizeof(t), .id = pid,
			.flags = TASKSTATE_TRACK_PROCESS |
				 TASKSTATE_TRACK_EXITS,
		};

		EXPECT_EQ(-1, ioctl(a, TASKSTATE_IOC_UNTRACK, &t));
		EXPECT_EQ(EINVAL, errno);
	}
	taskstate_close(a);
	ASSERT_EQ(0, track_exits(b, pid, TASKSTATE_TRACK_PROCESS |
					 TASKSTATE_TRACK_EXITS));
	ASSERT_EQ(1, write(gate[1], "g", 1));
	close(gate[1]);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	/*
	 * Its thread and its main thread, both to b, in either order: the
	 * join returns at the thread's exit_mm(), before its exit
	 * tracepoint, so the main thread's exit may log first (seen in CI,
	 * on the RT kernel).
	 */
	EXPECT_EQ(2, ts_take_exits(b, e, 2, &lost));
	EXPECT_EQ(0, lost);
	EXPECT_TRUE((e[0].tid == (uint32_t)pid) != (e[1].tid == (uint32_t)pid))
		TH_LOG("exits of %u and %u, pid %d", e[0].tid, e[1].tid, pid);
	taskstate_close(b);
}

#define EXITED_START_PARAM "/sys/module/taskstate/parameters/proc_exited_start_ns"

/*
 * A process's totals are sums of thread time, which can pass 2^64 ns in
 * a long-lived process with many threads: they must saturate, never wrap
 * to a small count (a counter that drops).  The fault-injection build
 * starts a new record's exited totals where it is told
 * (proc_exited_start_ns): 0.5 s below the edge here.  A thread that
 * sleeps 1 s then takes the SLEEPING count past it, live and, once it
 * exits, in the exited totals too; every count stays at least where it
 * started and never goes down.
 */
TEST_F_TIMEOUT(proc, process_totals_saturate_instead_of_wrapping, 60)
{
	const uint64_t edge = ~0ULL, start = edge - 500 * MS;
	struct taskstate_process p1, p2;
	struct ts_sleeper s;
	char buf[32];
	uint64_t nr;
	int k;

	if (access(EXITED_START_PARAM, W_OK))
		SKIP(return, "needs the fault-injection build (proc_exited_start_ns)");
	/* A new record, its exited totals 0.5 s below the edge. */
	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, true, &nr));
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)start);
	ASSERT_EQ(0, ts_write_str(EXITED_START_PARAM, buf));
	ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, &nr));
	ASSERT_EQ(0, ts_write_str(EXITED_START_PARAM, "0"));
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p1));
	ASSERT_EQ(1, p1.valid);
	for (k = 0; k < NT; k++)
		ASSERT_EQ(start, p1.exited_ns[k]);

	ASSERT_EQ(0, ts_sleeper_start(&s));
	ASSERT_NE(0, ts_wait_state(self->fd, s.tid, TASKSTATE_SLEEPING, 5000));
	ts_sleep_ms(1000);
	ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p2));
	/* Live: past the edge, so at it. */
	EXPECT_EQ(edge, p2.state_ns[TASKSTATE_TOTAL_SLEEPING])
		TH_LOG("SLEEPING %llu ns, %llu below the edge",
		       (unsigned long long)p2.state_ns[TASKSTATE_TOTAL_SLEEPING],
		       (unsigned long long)(edge - p2.state_ns[TASKSTATE_TOTAL_SLEEPING]));
	for (k = 0; k < NT; k++)
		EXPECT_LE(start, p2.state_ns[k]) TH_LOG("state %d", k);
	EXPECT_EQ(-1, first_drop(p1.state_ns, p2.state_ns));

	/* Exited: its 1 s moves into the exited totals, at the edge too. */
	p1 = p2;
	ts_sleeper_stop(&s);
	ASSERT_EQ(0, settle(self->fd, self->pid, 1, &p2));
	EXPECT_EQ(1, p2.nr_exited);
	EXPECT_EQ(edge, p2.exited_ns[TASKSTATE_TOTAL_SLEEPING])
		TH_LOG("exited SLEEPING %llu ns",
		       (unsigned long long)p2.exited_ns[TASKSTATE_TOTAL_SLEEPING]);
	EXPECT_EQ(edge, p2.state_ns[TASKSTATE_TOTAL_SLEEPING]);
	for (k = 0; k < NT; k++)
		EXPECT_LE(start, p2.exited_ns[k]) TH_LOG("state %d", k);
	EXPECT_EQ(-1, first_drop(p1.state_ns, p2.state_ns));
	/* The fixture's record, from zero again. */
	ASSERT_EQ(0, taskstate_untrack(self->fd, self->pid, true, &nr));
	ASSERT_EQ(0, taskstate_track(self->fd, self->pid, true, &nr));
}

#define HOLD_NS_PARAM	"/sys/module/taskstate/parameters/proc_hold_max_ns"
#define HOLD_NR_PARAM	"/sys/module/taskstate/parameters/proc_hold_max_threads"
#define WALKED		10000
#define WALK_CHUNK	256	/* uapi: PROCESS walks in chunks of 256 */

/* A number from a sysfs file, or -1. */
static long long read_ll(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * PROCESS of a 10,000-thread process while threads come and go: the
 * walk drops the table lock, and turns interrupts back on, after each
 * chunk of threads, however often the record changes meanwhile, and
 * still counts every thread once.  The fault-injection build times each
 * hold (proc_hold_max_ns, local_clock()) and counts its threads
 * (proc_hold_max_threads).  Before, a walk that saw the record change
 * four times walked the rest in one hold: 10,000 threads.
 */
TEST_F_TIMEOUT(proc, process_walk_holds_the_lock_for_a_chunk, 300)
{
	long long tmax = read_ll("/proc/sys/kernel/threads-max");
	static pthread_t th[WALKED];
	struct taskstate_process p;
	long long hold_ns, hold_nr;
	struct churn c = { 0 };
	pthread_attr_t attr;
	int go[2], i, n = 0;
	char buf[32];
	long stack;

	if (access(HOLD_NR_PARAM, W_OK))
		SKIP(return, "needs the fault-injection build (proc_hold_max_threads)");
	/* The kernel's own limit, from memory: 8192 threads in 1 GiB. */
	if (tmax < 4 * WALKED) {
		snprintf(buf, sizeof(buf), "%d", 4 * WALKED);
		ASSERT_EQ(0, ts_write_str("/proc/sys/kernel/threads-max", buf));
	}
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pthread_attr_init(&attr));
	stack = sysconf(_SC_THREAD_STACK_MIN);
	ASSERT_EQ(0, pthread_attr_setstacksize(&attr, stack > 64 * 1024 ?
						     (size_t)stack : 64 * 1024));
	for (i = 0; i < WALKED; i++, n++)
		if (pthread_create(&th[i], &attr, sleeper_on, &go[0]))
			break;
	ASSERT_EQ(WALKED, n);
	ASSERT_EQ(0, pthread_create(&c.thread, NULL, churner, &c));
	ASSERT_EQ(0, ts_write_str(HOLD_NS_PARAM, "0"));
	ASSERT_EQ(0, ts_write_str(HOLD_NR_PARAM, "0"));
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, taskstate_process(self->fd, self->pid, &p));
		/* The sleepers, the leader, the churner, its workers. */
		EXPECT_LE(WALKED + 2, p.nr_threads);
		/* And the dead ones not freed yet: far from a second chunk. */
		EXPECT_GE(WALKED + 2 + 200, p.nr_threads);
	}
	hold_ns = read_ll(HOLD_NS_PARAM);
	hold_nr = read_ll(HOLD_NR_PARAM);
	c.stop = 1;
	pthread_join(c.thread, NULL);
	ASSERT_EQ(0, c.err);
	TH_LOG("%d threads, %lu workers came and went: the longest hold %lld us, %lld threads",
	       WALKED, c.exited, hold_ns / 1000, hold_nr);
	EXPECT_LT(0, c.exited);
	EXPECT_GE(WALK_CHUNK, hold_nr);
	EXPECT_LT(0, hold_nr);
	close(go[1]);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	close(go[0]);
	if (tmax < 4 * WALKED) {
		snprintf(buf, sizeof(buf), "%lld", tmax);
		ts_write_str("/proc/sys/kernel/threads-max", buf);
	}
}

/*
 * With totals=0 (run_vm.sh's params section) PROCESS is refused: there
 * is nothing to keep.  With totals, it answers this process.
 */
TEST(process_follows_info)
{
	struct taskstate_process p;
	struct taskstate_info info;
	int fd = taskstate_open(), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, taskstate_info(fd, &info));
	if (info.map_flags & TASKSTATE_MAP_F_TOTALS) {
		ret = taskstate_process(fd, getpid(), &p);
		EXPECT_TRUE(ret == 0 || ret == -ENODATA);
		EXPECT_EQ(-ESRCH, taskstate_process(fd, 0, &p));
	} else {
		EXPECT_EQ(-EOPNOTSUPP, taskstate_process(fd, getpid(), &p));
	}
	taskstate_close(fd);
}

/*
 * Run by name (run_vm.sh), where its load is: the fault-injection build
 * for process_totals_saturate_instead_of_wrapping and
 * process_walk_holds_the_lock_for_a_chunk; process_follows_info also
 * alone with totals=0.
 */
static const char *const by_name[] = {
	"process_totals_saturate_instead_of_wrapping",
	"process_walk_holds_the_lock_for_a_chunk",
	NULL
};

int main(int argc, char **argv)
{
	return ts_harness_main(argc, argv, by_name);
}
