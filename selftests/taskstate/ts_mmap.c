// SPDX-License-Identifier: GPL-2.0
/*
 * ts_mmap: the mapping of /dev/taskstate and TASKSTATE_IOC_LOCATE, rule by
 * rule ("DOC: The mapping" in include/uapi/linux/taskstate.h): what INFO
 * says about it, locating threads, reads that agree with SAMPLE, an entry
 * that changes hands, the tid after exec, and every refusal.
 *
 * Run by name (run_vm.sh), each run elsewhere says so with a counted SKIP:
 *   failed_exec_from_thread_keeps_its_tid
 *                                  root (ns_last_pid), either track_all
 *   mmap_is_enodev_without_whole_word_loads
 *                                  the fault-injection build (map_enodev)
 *
 * Runs as root in the initial pid namespace against a loaded module, with
 * track_all=1 or 0 (the fixture tracks the test process with its future
 * threads), as a 64-bit or a 32-bit binary.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

/* The exec test's second image: see exec_check() at the end. */
#define EXEC_ENV	"TS_MMAP_EXEC_CHECK"

_Static_assert(offsetof(struct taskstate_map_entry, word) == 0 &&
	       offsetof(struct taskstate_map_entry, tid) == 8 &&
	       offsetof(struct taskstate_map_entry, gen) == 12 &&
	       offsetof(struct taskstate_map_entry, start_ns) == 16 &&
	       offsetof(struct taskstate_map_entry, state_ns) == 24 &&
	       sizeof(struct taskstate_map_entry) == 64, "entry layout");
_Static_assert(offsetof(struct taskstate_info, map_entry_size) == 56 &&
	       offsetof(struct taskstate_info, map_size) == 72 &&
	       sizeof(struct taskstate_info) == TASKSTATE_INFO_SIZE_VER3,
	       "info layout");
_Static_assert(offsetof(struct taskstate_locate, locations) == 16 &&
	       sizeof(struct taskstate_location) == 16, "locate layout");

static long locate_ioc(int fd, struct taskstate_locate *a)
{
	int ret = ioctl(fd, TASKSTATE_IOC_LOCATE, a);

	return ret < 0 ? -errno : ret;
}

static int locate1(int fd, pid_t tid, struct taskstate_location *l)
{
	memset(l, 0xcc, sizeof(*l));
	l->tid = (uint32_t)tid;
	return taskstate_locate(fd, l, 1);
}

FIXTURE(map) {
	int fd;
	struct taskstate_info info;
	struct taskstate_mapping m;
};

FIXTURE_SETUP(map)
{
	uint64_t nr;

	self->fd = taskstate_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", taskstate_dev_path(),
				      strerror(-self->fd));
	ASSERT_EQ(0, taskstate_info(self->fd, &self->info));
	ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, &nr));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &self->m));
}

FIXTURE_TEARDOWN(map)
{
	taskstate_mapping_close(&self->m);
	taskstate_close(self->fd);
}

/* ---- INFO ---- */

TEST_F(map, info_describes_the_mapping)
{
	size_t pg = page_size();
	uint64_t bytes = (uint64_t)self->info.max_threads * 64;

	EXPECT_EQ(TASKSTATE_INFO_SIZE_VER3, self->info.size);
	EXPECT_EQ(64, self->info.map_entry_size);
	EXPECT_EQ(TASKSTATE_MAP_LAYOUT, self->info.map_layout);
	EXPECT_EQ(self->info.max_threads, self->info.map_entries);
	/* Only known flags; totals are on by default (totals=1). */
	EXPECT_EQ(TASKSTATE_MAP_F_TOTALS, self->info.map_flags);
	EXPECT_EQ((bytes + pg - 1) / pg * pg, self->info.map_size);
	EXPECT_EQ(self->info.map_entries, self->m.nr);
}

/* An old caller's 56-byte INFO still works and gets no map fields. */
TEST_F(map, info_ver0_is_not_written_past_its_size)
{
	struct taskstate_info i;

	TS_BPF_SKIP("ioctls: the library answers INFO");

	memset(&i, 0xcc, sizeof(i));
	i.size = TASKSTATE_INFO_SIZE_VER0;
	i.flags = 0;
	ASSERT_EQ(0, ioctl(self->fd, TASKSTATE_IOC_INFO, &i));
	EXPECT_EQ(TASKSTATE_ABI_VERSION, i.abi_version);
	EXPECT_EQ(0xccccccccU, i.map_entry_size);
	EXPECT_EQ(0xccccccccccccccccULL, i.map_size);
}

/* ---- LOCATE ---- */

TEST_F(map, locate_self_gives_an_odd_gen_and_our_tid)
{
	const struct taskstate_map_entry *e;
	struct taskstate_location l;
	uint64_t w;

	ASSERT_EQ(1, locate1(self->fd, ts_gettid(), &l));
	EXPECT_EQ(getpid(), l.tgid);
	ASSERT_GT(self->m.nr, l.index);
	EXPECT_EQ(1, l.gen & 1);
	e = &self->m.entries[l.index];
	EXPECT_EQ((uint32_t)ts_gettid(), e->tid);
	EXPECT_EQ(l.gen, e->gen);
	ASSERT_EQ(0, taskstate_mapping_read(&self->m, &l, &w, NULL));
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(w));
}

TEST_F(map, locate_unknown_tids_answers_none)
{
	struct taskstate_location l[4] = {
		{ .tid = 0 }, { .tid = (uint32_t)ts_gettid() },
		{ .tid = 0x7fffffff }, { .tid = 0xffffffffU },
	};
	struct taskstate_locate a = {
		.size = sizeof(a), .count = 4, .found = 0xcccccccc,
		.locations = (uintptr_t)l,
	};
	int i;

	TS_BPF_SKIP("ioctls: the library answers LOCATE");

	for (i = 0; i < 4; i++) {
		l[i].tgid = 0xcccccccc;
		l[i].index = 0xcccccccc;
		l[i].gen = 0xcccccccc;
	}
	ASSERT_EQ(1, locate_ioc(self->fd, &a));
	EXPECT_EQ(1, a.found);
	for (i = 0; i < 4; i++) {
		if (i == 1) {
			EXPECT_EQ(getpid(), l[i].tgid);
			EXPECT_EQ(1, l[i].gen & 1);
			continue;
		}
		EXPECT_EQ(0, l[i].tgid);
		EXPECT_EQ(TASKSTATE_LOCATE_NONE, l[i].index);
		EXPECT_EQ(0, l[i].gen);
	}
}

TEST_F(map, locate_argument_errors)
{
	struct taskstate_location l = { .tid = (uint32_t)ts_gettid() };
	struct taskstate_locate a = {
		.size = sizeof(a), .count = 1, .locations = (uintptr_t)&l,
	};
	char big[64] = { 0 };

	TS_BPF_SKIP("ioctls: the library answers LOCATE");

	a.flags = 1;
	EXPECT_EQ(-EINVAL, locate_ioc(self->fd, &a));
	a.flags = 0;
	a.size = TASKSTATE_LOCATE_SIZE_VER0 - 1;
	EXPECT_EQ(-EINVAL, locate_ioc(self->fd, &a));
	a.size = sizeof(a);
	a.count = TASKSTATE_BATCH_MAX + 1;
	EXPECT_EQ(-E2BIG, locate_ioc(self->fd, &a));
	a.count = 1;
	a.locations = 0;
	EXPECT_EQ(-EFAULT, locate_ioc(self->fd, &a));
	a.locations = (uintptr_t)&l;
	/* a longer struct: a zero tail is fine, a non-zero one E2BIG */
	memcpy(big, &a, sizeof(a));
	((struct taskstate_locate *)big)->size = sizeof(big);
	EXPECT_EQ(1, locate_ioc(self->fd, (struct taskstate_locate *)big));
	big[sizeof(big) - 1] = 1;
	EXPECT_EQ(-E2BIG, locate_ioc(self->fd, (struct taskstate_locate *)big));
	EXPECT_EQ(-EFAULT, locate_ioc(self->fd, NULL));
}

/* ---- reads ---- */

static void *sleeper(void *arg)
{
	int *pipe_rd = arg;
	char c;

	while (read(*pipe_rd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

struct tthread {
	pthread_t th;
	int p[2];
	pid_t tid;
};

static void *tthread_main(void *arg)
{
	struct tthread *t = arg;

	__atomic_store_n(&t->tid, ts_gettid(), __ATOMIC_RELEASE);
	return sleeper(&t->p[0]);
}

/* A thread sleeping in a pipe read until tthread_stop(). */
static pid_t tthread_start(struct tthread *t)
{
	t->tid = 0;
	if (pipe(t->p) || pthread_create(&t->th, NULL, tthread_main, t))
		return -1;
	while (!__atomic_load_n(&t->tid, __ATOMIC_ACQUIRE))
		sched_yield();
	return t->tid;
}

static void tthread_stop(struct tthread *t)
{
	if (write(t->p[1], "x", 1) != 1)
		abort();
	pthread_join(t->th, NULL);
	close(t->p[0]);
	close(t->p[1]);
}

/* The mapped word of a sleeping thread is SAMPLE's, bit for bit. */
TEST_F(map, mapped_word_equals_sample_while_sleeping)
{
	struct taskstate_location l;
	struct tthread t;
	pid_t tid = tthread_start(&t);
	uint64_t w = 0, s;

	ASSERT_LT(0, tid);
	ASSERT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_SLEEPING, 10000));
	ASSERT_EQ(1, locate1(self->fd, tid, &l));
	ASSERT_EQ(0, taskstate_mapping_read(&self->m, &l, &w, NULL));
	s = ts_sample_word(self->fd, tid);
	EXPECT_EQ(s, w);
	EXPECT_EQ((uint32_t)tid, self->m.entries[l.index].tid);
	/* the util.c cross-check, as ts_states uses it */
	ts_xmap = self->m;
	EXPECT_EQ(s, ts_word_of(self->fd, tid));
	ts_xmap.entries = NULL;
	tthread_stop(&t);
}

/*
 * After the thread exits, its (index, gen) no longer reads; when the entry
 * is given to a new thread (the table hands the last freed slot out
 * first), the new owner has another gen and the old location still fails.
 */
TEST_F(map, reuse_of_an_entry_is_noticed)
{
	struct taskstate_location old, l;
	struct tthread t, more[20];
	int i, n = 0, reused = 0;
	uint64_t w;
	pid_t tid = tthread_start(&t);

	ASSERT_LT(0, tid);
	ASSERT_EQ(1, locate1(self->fd, tid, &old));
	ASSERT_EQ(0, taskstate_mapping_read(&self->m, &old, &w, NULL));
	tthread_stop(&t);
	/* freed an RCU grace period after the join, released then */
	for (i = 0; i < 5000 && !taskstate_mapping_read(&self->m, &old, &w, NULL); i++)
		ts_sleep_ms(1);
	ASSERT_EQ(-ESRCH, taskstate_mapping_read(&self->m, &old, &w, NULL))
		TH_LOG("entry %u still reads gen %u", old.index, old.gen);
	EXPECT_NE(old.gen, self->m.entries[old.index].gen);
	/* a grace period more and the slot is free for the next thread */
	for (n = 0; n < 20 && !reused; n++) {
		ts_sleep_ms(100);
		tid = tthread_start(&more[n]);
		ASSERT_LT(0, tid);
		ASSERT_EQ(1, locate1(self->fd, tid, &l));
		if (l.index != old.index)
			continue;
		reused = 1;
		EXPECT_NE(old.gen, l.gen);
		EXPECT_EQ(1, l.gen & 1);
		EXPECT_EQ(-ESRCH, taskstate_mapping_read(&self->m, &old, &w, NULL));
		EXPECT_EQ(0, taskstate_mapping_read(&self->m, &l, &w, NULL));
		EXPECT_EQ((uint32_t)tid, self->m.entries[l.index].tid);
	}
	for (i = 0; i < n; i++)
		tthread_stop(&more[i]);
	EXPECT_TRUE(reused) TH_LOG("entry %u not reused by %d new threads",
				   old.index, n);
}

/* UNTRACK ends the located read at once, without waiting for a free. */
TEST_F(map, untrack_changes_the_gen)
{
	struct taskstate_location l;
	struct tthread t;
	pid_t tid = tthread_start(&t);
	uint64_t w;

	ASSERT_LT(0, tid);
	ASSERT_EQ(1, locate1(self->fd, tid, &l));
	ASSERT_EQ(0, taskstate_mapping_read(&self->m, &l, &w, NULL));
	ASSERT_EQ(0, taskstate_untrack(self->fd, tid, false, NULL));
	EXPECT_EQ(-ESRCH, taskstate_mapping_read(&self->m, &l, &w, NULL));
	EXPECT_EQ(0, self->m.entries[l.index].gen & 1);
	EXPECT_EQ(0, self->m.entries[l.index].tid);
	EXPECT_EQ(0, locate1(self->fd, tid, &l));
	tthread_stop(&t);
}

/* A mapping outlives its fd and keeps following the words. */
TEST_F(map, mapping_outlives_its_fd)
{
	struct taskstate_location l;
	struct taskstate_mapping m;
	struct tthread t;
	pid_t tid = tthread_start(&t);
	uint64_t w1, w2 = 0;
	int fd = taskstate_open(), i;

	ASSERT_LT(0, tid);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, taskstate_mapping_open(fd, &m));
	ASSERT_EQ(1, locate1(fd, tid, &l));
	taskstate_close(fd);
	ASSERT_NE(0, ts_wait_state(self->fd, tid, TASKSTATE_SLEEPING, 10000));
	ASSERT_EQ(0, taskstate_mapping_read(&m, &l, &w1, NULL));
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w1));
	tthread_stop(&t);
	/* the thread runs to its exit: the word moves, then the gen */
	for (i = 0; i < 5000 && !taskstate_mapping_read(&m, &l, &w2, NULL) && w2 == w1; i++)
		ts_sleep_ms(1);
	EXPECT_NE(w1, w2);
	taskstate_mapping_close(&m);
}

/* ---- refusals ---- */

TEST_F(map, shared_writable_mapping_is_eacces)
{
	size_t pg = page_size();
	void *p;
	int rw;

	TS_BPF_SKIP("device: its maps are frozen (EPERM)");

	/* read-only fd: do_mmap() refuses */
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EACCES, errno);
	/* root may open it for writing: the module refuses */
	rw = open(taskstate_dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw) TH_LOG("open O_RDWR: %s", strerror(errno));
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, pg, PROT_WRITE, MAP_SHARED, rw, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EACCES, errno);
	/* and read-only through it, then mprotect: refused */
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, rw, 0);
	ASSERT_TRUE(p != MAP_FAILED);
	EXPECT_EQ(-1, mprotect(p, pg, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, pg);
	close(rw);
}

TEST_F(map, exec_mapping_is_refused)
{
	void *p;

	TS_BPF_SKIP("device to map");
	p = mmap(NULL, page_size(), PROT_READ | PROT_EXEC, MAP_SHARED,
		 self->fd, 0);

	EXPECT_TRUE(p == MAP_FAILED);
	/* EPERM would come from a noexec /dev, before the module */
	EXPECT_TRUE(errno == EACCES || errno == EPERM) TH_LOG("errno %d", errno);
}

TEST_F(map, mprotect_to_writable_is_eacces)
{
	void *base = (void *)self->m.entries;

	EXPECT_EQ(-1, mprotect(base, page_size(), PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(base, page_size(), PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, mprotect(base, page_size(), PROT_READ));
}

TEST_F(map, private_mapping_is_einval)
{
	void *p = mmap(NULL, page_size(), PROT_READ, MAP_PRIVATE, self->fd, 0);

	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(map, mapping_past_the_end_is_einval)
{
	size_t pg = page_size(), size = self->info.map_size;
	void *p;

	p = mmap(NULL, size + pg, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, self->fd, size);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, self->fd, size - pg);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(EINVAL, errno);
	/* the last page alone is fine, and is the same memory */
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, self->fd, size - pg);
	ASSERT_TRUE(p != MAP_FAILED);
	EXPECT_EQ(0, memcmp(p, (const char *)self->m.entries + size - pg,
			    sizeof(struct taskstate_map_entry)));
	munmap(p, pg);
}

TEST_F(map, mremap_cannot_grow)
{
	size_t pg = page_size();
	void *p = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, self->fd, 0), *q;

	ASSERT_TRUE(p != MAP_FAILED);
	q = mremap(p, 2 * pg, 3 * pg, MREMAP_MAYMOVE);
	EXPECT_TRUE(q == MAP_FAILED);
	EXPECT_EQ(EFAULT, errno);
	q = mremap(p, 2 * pg, pg, 0);		/* shrinking is fine */
	EXPECT_TRUE(p == q);
	munmap(p, pg);
}

/* Nothing in the pages past the last entry: zeroes, no kernel data. */
TEST_F(map, tail_of_the_last_page_is_zero)
{
	const unsigned char *p = (const void *)self->m.entries;
	size_t i, end = (size_t)self->m.nr * 64;

	for (i = end; i < self->m.size; i++)
		if (p[i])
			break;
	EXPECT_EQ(self->m.size, i);
}

static const struct taskstate_map_entry *child_entries;

static int child_reads_mapping(void *arg)
{
	volatile uint64_t w = child_entries[0].word;

	(void)arg;
	(void)w;
	return 0;
}

static int child_writes_mapping(void *arg)
{
	(void)arg;
	((volatile struct taskstate_map_entry *)child_entries)[0].tid = 1;
	return 0;
}

/* Not inherited (VM_DONTCOPY): the child's range is unmapped. */
TEST_F(map, forked_child_does_not_inherit_the_mapping)
{
	TS_BPF_SKIP("VM_DONTCOPY: a BPF map's mapping is inherited");
	child_entries = self->m.entries;
	EXPECT_EQ(128 + SIGSEGV, run_child(child_reads_mapping, NULL));
}

static int child_maps_inherited_fd(void *arg)
{
	int fd = *(int *)arg;
	struct taskstate_location l;
	struct taskstate_mapping m;
	uint64_t w;

	CHILD_CHECK(taskstate_mapping_open(fd, &m) == 0);
	CHILD_CHECK(locate1(fd, ts_gettid(), &l) == 1);
	CHILD_CHECK(taskstate_mapping_read(&m, &l, &w, NULL) == 0);
	CHILD_CHECK(taskstate_state(w) == TASKSTATE_RUNNING);
	return 0;
}

TEST_F(map, forked_child_may_map_the_inherited_fd)
{
	EXPECT_EQ(0, run_child(child_maps_inherited_fd, &self->fd));
}

TEST_F(map, writing_to_the_mapping_faults)
{
	child_entries = self->m.entries;
	EXPECT_EQ(128 + SIGSEGV, run_child(child_writes_mapping, NULL));
}

/*
 * madvise(MADV_DONTNEED) drops the pages from the page tables; the next
 * read faults them back in (no SIGBUS) and still finds this thread's
 * entry.  In a child, which maps the device itself (the parent's mapping
 * is not inherited), so that a SIGBUS ends only it.
 */
static int child_reads_after_dontneed(void *arg)
{
	struct taskstate_mapping m;
	struct taskstate_location l;
	int fd = *(int *)arg;
	uint64_t w;

	CHILD_CHECK(taskstate_mapping_open(fd, &m) == 0);
	CHILD_CHECK(locate1(fd, ts_gettid(), &l) == 1);
	CHILD_CHECK(taskstate_mapping_read(&m, &l, &w, NULL) == 0);
	CHILD_CHECK(madvise((void *)m.entries, m.size, MADV_DONTNEED) == 0);
	CHILD_CHECK(taskstate_mapping_read(&m, &l, &w, NULL) == 0);
	CHILD_CHECK(taskstate_state(w) == TASKSTATE_RUNNING);
	taskstate_mapping_close(&m);
	return 0;
}

TEST_F(map, madvise_dontneed_then_read_works)
{
	TS_BPF_SKIP("refault after MADV_DONTNEED: a BPF map's mapping reads as SIGBUS");
	EXPECT_EQ(0, run_child(child_reads_after_dontneed, &self->fd));
}

/* In a child pid namespace: LOCATE works, mmap is EPERM. */
static int child_pidns(void *arg)
{
	int status;
	pid_t pid;

	(void)arg;
	if (unshare(CLONE_NEWPID))
		return CHILD_SKIP;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		struct taskstate_location l;
		struct taskstate_mapping m;
		int fd = taskstate_open();

		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(getpid() == 1);
		CHILD_CHECK(taskstate_track(fd, 1, false, NULL) == 0);
		CHILD_CHECK(locate1(fd, 1, &l) == 1);
		CHILD_CHECK(l.tgid == 1 && (l.gen & 1));
		CHILD_CHECK(taskstate_mapping_open(fd, &m) == -EPERM);
		CHILD_CHECK(mmap(NULL, page_size(), PROT_READ, MAP_SHARED, fd,
				 0) == MAP_FAILED && errno == EPERM);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(map, child_pid_namespace_mmap_is_eperm)
{
	int ret;

	TS_BPF_SKIP("descriptor outside the initial pid namespace (open: EPERM)");
	ret = run_child(child_pidns, NULL);
	if (ret == CHILD_SKIP)
		SKIP(return, "cannot unshare a pid namespace");
	EXPECT_EQ(0, ret);
}

/* ---- exec by a non-leader thread: the entry's tid follows ---- */

struct exec_arg {
	char self_exe[4096];
	struct taskstate_location l;
	pid_t tid_before;
};

static void *exec_thread(void *arg)
{
	struct exec_arg *a = arg;
	int fd = taskstate_open();
	char env[128];
	char *argv[] = { a->self_exe, NULL };
	char *envp[] = { env, NULL };

	a->tid_before = ts_gettid();
	if (fd < 0 || locate1(fd, a->tid_before, &a->l) != 1)
		_exit(2);
	taskstate_close(fd);
	snprintf(env, sizeof(env), EXEC_ENV "=%u:%u:%d", a->l.index, a->l.gen,
		 (int)a->tid_before);
	execve(a->self_exe, argv, envp);
	_exit(3);
}

static int child_exec_from_thread(void *arg)
{
	struct exec_arg *a = arg;
	pthread_t th;

	if (pthread_create(&th, NULL, exec_thread, a))
		return 4;
	pthread_join(th, NULL);		/* exec ends this process image */
	return 5;
}

TEST_F(map, exec_by_non_leader_updates_the_entry_tid)
{
	static struct exec_arg a;
	ssize_t n = readlink("/proc/self/exe", a.self_exe,
			     sizeof(a.self_exe) - 1);

	ASSERT_LT(0, n);
	a.self_exe[n] = '\0';
	EXPECT_EQ(0, run_child(child_exec_from_thread, &a));
}

/*
 * The new image, before the harness: the thread that called exec is now
 * the leader, with the process's pid as its tid.  Its entry (same task,
 * same slot) must say so, under the same gen.
 */
__attribute__((constructor)) static void exec_check(void)
{
	const char *v = getenv(EXEC_ENV);
	struct taskstate_location l;
	unsigned int index, gen;
	struct taskstate_mapping m;
	int fd, before;
	uint64_t w;

	if (!v)
		return;
	if (sscanf(v, "%u:%u:%d", &index, &gen, &before) != 3)
		_exit(10);
	fd = taskstate_open();
	if (fd < 0 || taskstate_mapping_open(fd, &m))
		_exit(11);
	if (ts_gettid() != getpid() || before == getpid())
		_exit(12);	/* not the case this test is about */
	if (locate1(fd, getpid(), &l) != 1 || l.index != index || l.gen != gen)
		_exit(13);
	if (taskstate_mapping_read(&m, &l, &w, NULL)) {
		fprintf(stderr, "# entry %u changed gen at exec\n", index);
		_exit(14);
	}
	if (m.entries[index].tid != (uint32_t)getpid()) {
		fprintf(stderr, "# entry %u tid %u after exec, pid %d, was %d\n",
			index, m.entries[index].tid, (int)getpid(), before);
		_exit(15);
	}
	_exit(0);
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
TEST_F_TIMEOUT(map, failed_exec_from_thread_keeps_its_tid, 120)
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
		ASSERT_EQ(0, ts_write_str("/proc/sys/kernel/ns_last_pid", buf));
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
TEST_F(map, mmap_is_enodev_without_whole_word_loads)
{
	struct taskstate_location l = { .tid = (uint32_t)ts_gettid() };
	struct taskstate_mapping m, m2;
	uint64_t w;
	void *p;

	if (access(MAP_ENODEV_PARAM, W_OK))
		SKIP(return, "needs the fault-injection build (map_enodev)");
	ASSERT_EQ(0, taskstate_track(self->fd, getpid(), true, NULL));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	ASSERT_EQ(0, ts_write_str(MAP_ENODEV_PARAM, "1"));
	p = mmap(NULL, m.size, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_TRUE(p == MAP_FAILED);
	EXPECT_EQ(ENODEV, errno);
	if (p != MAP_FAILED)
		munmap(p, m.size);
	EXPECT_EQ(-ENODEV, taskstate_mapping_open(self->fd, &m2));
	EXPECT_EQ(1, taskstate_locate(self->fd, &l, 1));
	EXPECT_EQ(TASKSTATE_RUNNING, ts_state_of(self->fd, ts_gettid()));
	ASSERT_EQ(0, ts_write_str(MAP_ENODEV_PARAM, "0"));
	/* The existing mapping was never affected. */
	EXPECT_EQ(0, taskstate_mapping_read(&m, &l, &w, NULL));
	taskstate_mapping_close(&m);
	EXPECT_EQ(0, taskstate_untrack(self->fd, getpid(), true, NULL));
}

/* Run by name (run_vm.sh): root, or the fault-injection build. */
static const char *const by_name[] = {
	"failed_exec_from_thread_keeps_its_tid",
	"mmap_is_enodev_without_whole_word_loads",
	NULL
};

int main(int argc, char **argv)
{
	return ts_harness_main(argc, argv, by_name);
}
