// SPDX-License-Identifier: GPL-2.0
/*
 * A thread blocked on a kernel mutex is BLOCKED (SLEEPING if its wait is
 * interruptible: mutex_lock_interruptible()), never RUNNABLE: in the word
 * its switch-out writes, in the snapshot TRACK takes while it waits,
 * through SAMPLE and through the mapping, and in its per-state totals;
 * and it runs again once it has the lock.
 *
 * The mutex is the test module taskstate_kmutex.ko's
 * (selftests/taskstate/torture/, loaded by run_vm.sh): a kernel thread
 * bound to CPU 1 holds it, runnable (spinning), until told to let go; the
 * waiter, pinned to the same CPU, blocks on it in a write to the module's
 * debugfs file "lock".
 *
 * What this is for is proxy execution (CONFIG_SCHED_PROXY_EXEC, the
 * proxy flavour): the kernel keeps such a waiter on its run queue (on_rq,
 * not delayed) so that the owner can run in its place, and a module that
 * took "queued" for "runnable" reads the whole wait as RUNNABLE.
 * waiter_is_kept_queued checks that the kernel did keep the waiter queued,
 * so that the other tests do test that case there; it SKIPs on a kernel
 * without proxy execution (every flavour but proxy, or sched_proxy_exec=0
 * on the command line), where the waiter leaves its run queue (or, 6.12+,
 * stays delayed).  The other tests hold on every kernel and run on all.
 *
 * Needs: taskstate loaded (either track_all), taskstate_kmutex.ko loaded
 * (else SKIP), two CPUs (else SKIP), root.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

#define KMUTEX_DIR	"/sys/kernel/debug/taskstate_kmutex"
#define KMUTEX_PARAMS	"/sys/module/taskstate_kmutex/parameters"
#define KMUTEX_CPU	1
/* How long the waiter waits after the last TRACK, at least. */
#define WAIT_MS		500

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* The module's view of its waiter: its tid (0: none) and on_rq. */
static int kmutex_waiter(int *tid, int *queued)
{
	char buf[64];

	if (read_file(KMUTEX_DIR "/waiter", buf, sizeof(buf)) ||
	    sscanf(buf, "tid %d queued %d", tid, queued) != 2)
		return -1;
	return 0;
}

struct waiter {
	bool intr;
	atomic_int tid;
	atomic_int go;		/* the caller tracked it: lock now */
	atomic_int locked;	/* lock's write returned: 1, or -errno */
	atomic_int stop;
};

/*
 * Pinned to the owner's CPU, spins (no voluntary switch) until told to
 * go, blocks in "lock", then spins again until told to stop: RUNNING or
 * RUNNABLE once it has the lock.
 */
static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	int ret;

	if (ts_pin(KMUTEX_CPU)) {
		atomic_store(&w->locked, -errno);
		return NULL;
	}
	atomic_store(&w->tid, ts_gettid());
	while (!atomic_load(&w->go))
		;
	ret = write_file(KMUTEX_DIR "/lock", w->intr ? "1" : "0");
	atomic_store(&w->locked, ret ? ret : 1);
	while (!atomic_load(&w->stop))
		;
	return NULL;
}

FIXTURE(kmutex) {
	int fd;
	struct taskstate_info info;
	struct waiter w;
	pthread_t thread;
	bool started, holding;
};

FIXTURE_VARIANT(kmutex) {
	bool intr;
	unsigned int state;	/* what the waiter must read */
	unsigned int total;	/* where its wait must go */
};

FIXTURE_VARIANT_ADD(kmutex, mutex_lock) {
	.intr = false,
	.state = TASKSTATE_BLOCKED,
	.total = TASKSTATE_TOTAL_BLOCKED,
};

FIXTURE_VARIANT_ADD(kmutex, mutex_lock_interruptible) {
	.intr = true,
	.state = TASKSTATE_SLEEPING,
	.total = TASKSTATE_TOTAL_SLEEPING,
};

FIXTURE_SETUP(kmutex)
{
	memset(&self->w, 0, sizeof(self->w));
	self->started = false;
	self->holding = false;
	self->fd = -1;
	if (access(KMUTEX_DIR "/lock", W_OK))
		SKIP(return, "taskstate_kmutex.ko not loaded by the runner");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/taskstate: %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, taskstate_info(self->fd, &self->info));
	/* Every word read below through SAMPLE is read through the mapping too. */
	ASSERT_EQ(0, ts_xcheck_map(self->fd));
	/* This thread watches from the other CPU. */
	ASSERT_EQ(0, ts_pin(0));
}

FIXTURE_TEARDOWN(kmutex)
{
	if (self->holding)
		write_file(KMUTEX_DIR "/hold", "0");
	if (self->started) {
		atomic_store(&self->w.go, 1);
		atomic_store(&self->w.stop, 1);
		pthread_join(self->thread, NULL);
	}
	if (self->fd >= 0)
		taskstate_close(self->fd);
}

/*
 * The owner takes the mutex, the waiter is started and tracked, and blocks
 * on it: returns its tid once the module sees it inside "lock" and it has
 * switched out (its voluntary switches grew), or 0.
 */
static pid_t block_waiter(struct __test_metadata *_metadata,
			  FIXTURE_DATA(kmutex) *self, bool intr)
{
	long long nvcsw;
	int tid = 0, queued, i, ret;
	pid_t t;

	ret = write_file(KMUTEX_DIR "/hold", "1");
	if (ret) {
		TH_LOG("hold: %s", strerror(-ret));
		return 0;
	}
	self->holding = true;
	self->w.intr = intr;
	if (pthread_create(&self->thread, NULL, waiter_fn, &self->w))
		return 0;
	self->started = true;
	while (!(t = atomic_load(&self->w.tid)) && !atomic_load(&self->w.locked))
		ts_sleep_ms(1);
	if (!t)
		return 0;
	if (!self->info.track_all && taskstate_track(self->fd, t, false, NULL)) {
		TH_LOG("TRACK %d failed", t);
		return 0;
	}
	nvcsw = ts_nvcsw(t);
	atomic_store(&self->w.go, 1);
	for (i = 0; i < 10000; i++) {
		if (atomic_load(&self->w.locked)) {
			TH_LOG("lock returned %d while the owner holds it",
			       atomic_load(&self->w.locked));
			return 0;
		}
		if (!kmutex_waiter(&tid, &queued) && tid == t &&
		    ts_nvcsw(t) > nvcsw)
			return t;
		ts_sleep_ms(1);
	}
	TH_LOG("the waiter did not block (module sees tid %d)", tid);
	return 0;
}

/* Lets go of the mutex; 1 once the waiter has had it, else 0. */
static int release(FIXTURE_DATA(kmutex) *self)
{
	int i;

	if (write_file(KMUTEX_DIR "/hold", "0"))
		return 0;
	self->holding = false;
	for (i = 0; i < 10000 && !atomic_load(&self->w.locked); i++)
		ts_sleep_ms(1);
	return atomic_load(&self->w.locked) == 1;
}

/* SAMPLE's word and totals of @tid, up to @now: 0, or -1 on failure. */
static int sample_totals(int fd, pid_t tid, uint64_t *word, uint64_t now,
			 uint64_t ns[TASKSTATE_MAP_NR_TOTALS])
{
	struct taskstate_entry e = { .tid = (uint32_t)tid };
	struct taskstate_totals t;

	if (taskstate_sample(fd, &e, &t, 1) != 1)
		return -1;
	*word = e.word;
	taskstate_totals_at(e.word, &t, now, ns);
	return 0;
}

/* The mapping's word and totals of @tid, up to @now: 0, or -1. */
static int mapped_totals(int fd, pid_t tid, uint64_t *word, uint64_t now,
			 uint64_t ns[TASKSTATE_MAP_NR_TOTALS])
{
	struct taskstate_location l = { .tid = (uint32_t)tid };
	struct taskstate_totals t;

	if (taskstate_locate(fd, &l, 1) != 1 ||
	    taskstate_mapping_read(&ts_xmap, &l, word, &t) != 0)
		return -1;
	taskstate_totals_at(*word, &t, now, ns);
	return 0;
}

/* The two readers of a word with its totals. */
static const struct {
	const char *how;
	int (*read)(int fd, pid_t tid, uint64_t *word, uint64_t now,
		    uint64_t ns[TASKSTATE_MAP_NR_TOTALS]);
} readers[] = {
	{ "SAMPLE", sample_totals },
	{ "mapping", mapped_totals },
};

TEST_F_TIMEOUT(kmutex, waiter_reads_its_wait, 120)
{
	uint64_t word, ns[TASKSTATE_MAP_NR_TOTALS], t0, t1, now;
	const char *want = taskstate_state_name(variant->state);
	unsigned int st;
	size_t r;
	pid_t tid;
	int i;

	if (self->fd < 0)
		return;
	tid = block_waiter(_metadata, self, variant->intr);
	ASSERT_NE(0, tid);

	/*
	 * The word its switch-out wrote, through SAMPLE and the mapping.
	 * The voluntary switch is counted just before the tracepoint, so the
	 * word may still say RUNNING for a moment: the one it had to have to
	 * block, whatever it read when preempted before.
	 */
	for (i = 0; i < 2000; i++) {
		st = ts_state_of(self->fd, tid);
		if (st != TASKSTATE_RUNNING)
			break;
		ts_sleep_ms(1);
	}
	EXPECT_EQ(variant->state, st)
		TH_LOG("blocked on the mutex: %s, not %s",
		       taskstate_state_name(st), want);

	/* TRACK's snapshot of it, taken while it waits. */
	for (i = 0; i < 20; i++) {
		taskstate_untrack(self->fd, tid, false, NULL);
		ASSERT_EQ(0, taskstate_track(self->fd, tid, false, NULL));
		st = ts_state_of(self->fd, tid);
		EXPECT_EQ(variant->state, st)
			TH_LOG("snapshot %d: %s, not %s", i,
			       taskstate_state_name(st), want);
	}
	t0 = taskstate_now_ns();
	ts_sleep_ms(WAIT_MS);

	/*
	 * The totals while it waits: the slot is new (the last TRACK), its
	 * word has not changed since, so all its time is in one total.
	 */
	for (r = 0; r < ARRAY_SIZE(readers); r++) {
		now = taskstate_now_ns();
		ASSERT_EQ(0, readers[r].read(self->fd, tid, &word, now, ns));
		EXPECT_EQ(variant->state, taskstate_state(word));
		EXPECT_LE(now - t0, ns[variant->total])
			TH_LOG("%s: %s total %llu ns after %llu ns of waiting",
			       readers[r].how,
			       taskstate_total_name(variant->total),
			       (unsigned long long)ns[variant->total],
			       (unsigned long long)(now - t0));
		EXPECT_EQ(0, ns[TASKSTATE_TOTAL_RUNNABLE])
			TH_LOG("%s: RUNNABLE total %llu ns while blocked",
			       readers[r].how,
			       (unsigned long long)ns[TASKSTATE_TOTAL_RUNNABLE]);
	}

	/* It gets the lock and runs. */
	t1 = taskstate_now_ns();
	ASSERT_EQ(1, release(self));
	word = ts_wait_state(self->fd, tid, TASKSTATE_RUNNING, 10000);
	ASSERT_NE(0, word) TH_LOG("not seen RUNNING after it got the lock: %s",
				  taskstate_state_name(ts_state_of(self->fd, tid)));

	/*
	 * Its wait, from before t0 to its wakeup after t1, is in the
	 * blocked (sleeping) total; what it waited for a CPU after the
	 * wakeup, on a CPU that the owner has left, is far less.
	 */
	now = taskstate_now_ns();
	ASSERT_EQ(0, sample_totals(self->fd, tid, &word, now, ns));
	EXPECT_LE(t1 - t0, ns[variant->total])
		TH_LOG("after the lock: %s total %llu ns, waited %llu ns",
		       taskstate_total_name(variant->total),
		       (unsigned long long)ns[variant->total],
		       (unsigned long long)(t1 - t0));
	EXPECT_GT(t1 - t0, ns[TASKSTATE_TOTAL_RUNNABLE])
		TH_LOG("after the lock: RUNNABLE total %llu ns, waited %llu ns",
		       (unsigned long long)ns[TASKSTATE_TOTAL_RUNNABLE],
		       (unsigned long long)(t1 - t0));
	TH_LOG("waited %llu ms: %s total %llu ms, RUNNABLE %llu ms",
	       (unsigned long long)((t1 - t0) / 1000000),
	       taskstate_total_name(variant->total),
	       (unsigned long long)(ns[variant->total] / 1000000),
	       (unsigned long long)(ns[TASKSTATE_TOTAL_RUNNABLE] / 1000000));
}

#define NO_PROXY_EXEC \
	"this kernel lacks proxy execution (CONFIG_SCHED_PROXY_EXEC): a mutex waiter leaves its run queue"

/* Does the command line turn proxy execution off? */
static bool proxy_exec_off_at_boot(void)
{
	char buf[4096], *p;

	if (read_file("/proc/cmdline", buf, sizeof(buf)))
		return false;
	p = strstr(buf, "sched_proxy_exec=");
	return p && strchr("0nNfF", p[strlen("sched_proxy_exec=")]);
}

TEST_F_TIMEOUT(kmutex, waiter_is_kept_queued, 120)
{
	char buf[8] = "";
	int tid, queued, i, kept = 0;
	pid_t t;

	if (self->fd < 0)
		return;
	read_file(KMUTEX_PARAMS "/proxy_exec", buf, sizeof(buf));
	if (buf[0] != 'Y')
		SKIP(return, "%s", NO_PROXY_EXEC);
	if (proxy_exec_off_at_boot())
		SKIP(return, "proxy execution is off (sched_proxy_exec= on the command line)");
	t = block_waiter(_metadata, self, variant->intr);
	ASSERT_NE(0, t);
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, kmutex_waiter(&tid, &queued));
		ASSERT_EQ(t, tid);
		kept += queued;
		ts_sleep_ms(10);
	}
	/* What the other tests rest on: a waiter on its run queue. */
	EXPECT_EQ(20, kept) TH_LOG("queued in %d of 20 looks", kept);
	ASSERT_EQ(1, release(self));
}

TEST_HARNESS_MAIN
