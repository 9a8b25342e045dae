// SPDX-License-Identifier: GPL-2.0
/*
 * ts_abi: the ioctl ABI of /dev/taskstate (include/uapi/linux/taskstate.h),
 * promise by promise, through raw ioctl() calls.
 *
 * Every output is poisoned with 0xcc before a call, so a field that reads
 * right afterwards was written by the kernel.  Runs as root against a
 * loaded module, in either track_all mode (INFO says which, and the tests
 * whose answer depends on it assert what applies), as a 64-bit binary or
 * as a 32-bit one through the compat path.  Nothing here assumes the size
 * of a pointer: the kernel addresses used are chosen per word size.
 *
 * Tests that change credentials or pid namespaces do it in a forked child;
 * children report through their exit status (0 passed, CHILD_SKIP cannot
 * run here, anything else failed, explained on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "util.h"
#include "kselftest_harness.h"

/* Outputs are filled with this before each call. */
#define POISON		0xcc
#define POISON32	0xccccccccU
#define POISON64	0xccccccccccccccccULL

#define NOBODY		65534

#ifndef FIGETBSZ
#define FIGETBSZ	_IO(0x00, 2)	/* <linux/fs.h> */
#endif

/*
 * PID_MAX_LIMIT of a 64-bit kernel: the largest tid the kernel looks up.
 * It and anything above can never name a thread.
 */
#define TS_PID_MAX_LIMIT	(4U * 1024 * 1024)

/* Threads parked by park_threads(), besides the test's own. */
#define NR_PARKED	3

/*
 * The layout is the ABI: the same on 32- and 64-bit (no padding holes,
 * no pointer-sized field), and fields never move.
 */
/* Every argument struct fits ARG_MAX bytes (the tests' buffers). */
#define ARG_MAX_BYTES	256
_Static_assert(sizeof(struct taskstate_info) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_process) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_track) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_sample) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_list) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_locate) <= ARG_MAX_BYTES &&
	       sizeof(struct taskstate_exits) <= ARG_MAX_BYTES,
	       "an argument struct larger than the tests' buffers");
_Static_assert(sizeof(struct taskstate_info) >= TASKSTATE_INFO_SIZE_VER0,
	       "info shorter than version 0");
_Static_assert(offsetof(struct taskstate_info, nr_tracked) == 40 &&
	       offsetof(struct taskstate_info, nr_untracked) == 48,
	       "info layout");
_Static_assert(sizeof(struct taskstate_track) >= TASKSTATE_TRACK_SIZE_VER0 &&
	       offsetof(struct taskstate_track, nr_threads) == 16,
	       "track layout");
_Static_assert(sizeof(struct taskstate_entry) == 16 &&
	       offsetof(struct taskstate_entry, word) == 8,
	       "entry layout");
_Static_assert(sizeof(struct taskstate_sample) >= TASKSTATE_SAMPLE_SIZE_VER0 &&
	       offsetof(struct taskstate_sample, entries) == 16,
	       "sample layout");
_Static_assert(sizeof(struct taskstate_list) >= TASKSTATE_LIST_SIZE_VER0 &&
	       offsetof(struct taskstate_list, entries) == 16 &&
	       offsetof(struct taskstate_list, filled) == 24 &&
	       offsetof(struct taskstate_list, total) == 28,
	       "list layout");

/* ioctl() as -errno or its non-negative result. */
static long ts_ioc(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static uint64_t ptr_u64(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* The commands: ts_cmds[] (util.c). */

/*
 * Write a valid argument for @c into @buf (its other bytes untouched):
 * INFO plain, TRACK/UNTRACK of thread @tid, SAMPLE and LIST of nothing,
 * PROCESS of process @tid (the test's: its only thread), EXITS of none.
 * Out fields are poisoned.
 */
static void fill_valid(const struct ts_cmd *c, void *buf, uint32_t size,
		       pid_t tid)
{
	/* INFO's and PROCESS's arguments are out fields but for two. */
	bool out = c->cmd == TASKSTATE_IOC_INFO ||
		   c->cmd == TASKSTATE_IOC_PROCESS;

	memset(buf, out ? POISON : 0, c->ksize);
	switch (c->cmd) {
	case TASKSTATE_IOC_INFO:
		((struct taskstate_info *)buf)->flags = 0;
		break;
	case TASKSTATE_IOC_TRACK:
	case TASKSTATE_IOC_UNTRACK:
		((struct taskstate_track *)buf)->id = (uint32_t)tid;
		((struct taskstate_track *)buf)->nr_threads = POISON64;
		break;
	case TASKSTATE_IOC_SAMPLE:
		((struct taskstate_sample *)buf)->found = POISON32;
		break;
	case TASKSTATE_IOC_LIST:
		((struct taskstate_list *)buf)->filled = POISON32;
		((struct taskstate_list *)buf)->total = POISON32;
		break;
	case TASKSTATE_IOC_LOCATE:
		((struct taskstate_locate *)buf)->found = POISON32;
		break;
	case TASKSTATE_IOC_PROCESS:
		((struct taskstate_process *)buf)->flags = 0;
		((struct taskstate_process *)buf)->pid = (uint32_t)tid;
		break;
	case TASKSTATE_IOC_EXITS:
		((struct taskstate_exits *)buf)->lost = POISON64;
		break;
	}
	*(uint32_t *)buf = size;
}

/* Did the kernel write the out fields of the valid argument in @buf? */
static bool written(const struct ts_cmd *c, const void *buf, uint32_t size)
{
	switch (c->cmd) {
	case TASKSTATE_IOC_INFO: {
		const struct taskstate_info *a = buf;

		return a->size == size &&
		       a->abi_version == TASKSTATE_ABI_VERSION &&
		       a->scope <= TASKSTATE_SCOPE_SELF;
	}
	case TASKSTATE_IOC_TRACK:
	case TASKSTATE_IOC_UNTRACK:
		return ((const struct taskstate_track *)buf)->nr_threads <= 1;
	case TASKSTATE_IOC_SAMPLE:
		return ((const struct taskstate_sample *)buf)->found == 0;
	case TASKSTATE_IOC_LOCATE:
		return ((const struct taskstate_locate *)buf)->found == 0;
	case TASKSTATE_IOC_LIST: {
		const struct taskstate_list *a = buf;

		return a->filled == 0 && a->total != POISON32;
	}
	case TASKSTATE_IOC_PROCESS: {
		const struct taskstate_process *a = buf;

		/* valid 0 (not tracked as a process) answers zeros */
		return a->size == size && a->valid <= 1 &&
		       a->now_ns != POISON64 && a->nr_exited != POISON64 &&
		       a->start_ns != POISON64 &&
		       (a->valid || (!a->now_ns && !a->start_ns));
	}
	case TASKSTATE_IOC_EXITS: {
		const struct taskstate_exits *a = buf;

		return a->count == 0 && a->lost == 0;
	}
	}
	return false;
}

/* Are the out fields of the argument in @buf still poisoned? */
static bool untouched(const struct ts_cmd *c, const void *buf)
{
	switch (c->cmd) {
	case TASKSTATE_IOC_INFO:
		return ((const struct taskstate_info *)buf)->abi_version ==
		       POISON32;
	case TASKSTATE_IOC_TRACK:
	case TASKSTATE_IOC_UNTRACK:
		return ((const struct taskstate_track *)buf)->nr_threads ==
		       POISON64;
	case TASKSTATE_IOC_SAMPLE:
		return ((const struct taskstate_sample *)buf)->found == POISON32;
	case TASKSTATE_IOC_LOCATE:
		return ((const struct taskstate_locate *)buf)->found == POISON32;
	case TASKSTATE_IOC_LIST:
		return ((const struct taskstate_list *)buf)->total == POISON32;
	case TASKSTATE_IOC_PROCESS:
		return ((const struct taskstate_process *)buf)->now_ns ==
		       POISON64;
	case TASKSTATE_IOC_EXITS:
		return ((const struct taskstate_exits *)buf)->lost == POISON64;
	}
	return false;
}

static long do_info(int fd, struct taskstate_info *info)
{
	memset(info, POISON, sizeof(*info));
	info->size = sizeof(*info);
	info->flags = 0;
	return ts_ioc(fd, TASKSTATE_IOC_INFO, info);
}

/* TRACK or UNTRACK (@cmd) of @id; *@nr gets nr_threads, poisoned first. */
static long do_track(int fd, unsigned long cmd, uint32_t id, uint32_t flags,
		     uint64_t *nr)
{
	struct taskstate_track a = {
		.size = sizeof(a), .flags = flags, .id = id,
		.nr_threads = POISON64,
	};
	long ret = ts_ioc(fd, cmd, &a);

	if (nr)
		*nr = a.nr_threads;
	return ret;
}

/* SAMPLE of e[0..count-1] (tgid and word poisoned first); *found gets found. */
static long do_sample(int fd, struct taskstate_entry *e, uint32_t count,
		      uint32_t *found)
{
	struct taskstate_sample a = {
		.size = sizeof(a), .count = count, .found = POISON32,
		.entries = ptr_u64(e),
	};
	uint32_t i;
	long ret;

	for (i = 0; e && i < count; i++) {
		e[i].tgid = POISON32;
		e[i].word = POISON64;
	}
	ret = ts_ioc(fd, TASKSTATE_IOC_SAMPLE, &a);
	if (found)
		*found = a.found;
	return ret;
}

/* LIST into e[0..count-1] (poisoned first); filled and total come back. */
static long do_list(int fd, uint32_t pid, struct taskstate_entry *e,
		    uint32_t count, uint32_t *filled, uint32_t *total)
{
	struct taskstate_list a = {
		.size = sizeof(a), .pid = pid, .count = count,
		.entries = ptr_u64(e), .filled = POISON32, .total = POISON32,
	};
	long ret;

	if (e)
		memset(e, POISON, count * sizeof(*e));
	ret = ts_ioc(fd, TASKSTATE_IOC_LIST, &a);
	*filled = a.filled;
	*total = a.total;
	return ret;
}

/*
 * Two adjacent pages; the second gets @prot2 (PROT_NONE, PROT_READ), or
 * is unmapped when @unmap.  Returns the boundary between them, NULL on
 * failure.  Free with unmap_edge().
 */
static char *map_edge(int prot2, bool unmap)
{
	size_t ps = page_size();
	char *p = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (unmap ? munmap(p + ps, ps) : mprotect(p + ps, ps, prot2))
		return NULL;
	return p + ps;
}

static void unmap_edge(char *edge)
{
	size_t ps = page_size();

	munmap(edge - ps, 2 * ps);
}

/* Threads blocked in read() until unpark_threads(). */
struct parked;

struct parked_thread {
	struct parked *p;
	pthread_t th;
	pid_t tid;
};

struct parked {
	struct parked_thread t[NR_PARKED];
	pthread_barrier_t ready;
	int release[2];
};

static void *parked_main(void *arg)
{
	struct parked_thread *t = arg;
	char c;

	t->tid = ts_gettid();
	pthread_barrier_wait(&t->p->ready);
	while (read(t->p->release[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

/* Start NR_PARKED threads; their tids are known when this returns 0. */
static int park_threads(struct parked *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	if (pipe(p->release))
		return -errno;
	pthread_barrier_init(&p->ready, NULL, NR_PARKED + 1);
	for (i = 0; i < NR_PARKED; i++) {
		p->t[i].p = p;
		if (pthread_create(&p->t[i].th, NULL, parked_main, &p->t[i]))
			return -EAGAIN;
	}
	pthread_barrier_wait(&p->ready);
	return 0;
}

static void unpark_threads(struct parked *p)
{
	int i;

	close(p->release[1]);
	for (i = 0; i < NR_PARKED; i++)
		pthread_join(p->t[i].th, NULL);
	close(p->release[0]);
	pthread_barrier_destroy(&p->ready);
}

/*
 * Wait until /proc says @tid is in state @st ('S', 'R', ...), so a word
 * read afterwards cannot race the thread getting there.
 */
static bool wait_proc_state(pid_t tid, char st)
{
	char path[64], buf[512], *p;
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	for (i = 0; i < 5000; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return false;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == st)
				return true;
		}
		ts_sleep_ms(1);
	}
	return false;
}

/* In a TEST: fn(arg) in a child must pass; SKIP with @why if it cannot run. */
#define ASSERT_CHILD_PASSES(fn, arg, why) do {				\
	int __ret = run_child(fn, arg);					\
									\
	if (__ret == CHILD_SKIP)					\
		SKIP(return, why);					\
	ASSERT_EQ(0, __ret);						\
} while (0)

/* Capabilities, without libcap. */
static int caps_get(uint64_t *effective, uint64_t *permitted)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &hdr, d))
		return -errno;
	*effective = d[0].effective | (uint64_t)d[1].effective << 32;
	*permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
	return 0;
}

/* Set effective and permitted to @caps, inheritable to nothing. */
static int caps_set(uint64_t caps)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (uint32_t)caps;
	d[1].effective = d[1].permitted = (uint32_t)(caps >> 32);
	return syscall(SYS_capset, &hdr, d) ? -errno : 0;
}

#define CAP_BIT(c)	(1ULL << (c))

/* Become uid/gid nobody with no capability at all. */
static int become_nobody(void)
{
	uint64_t eff, perm;

	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) || setgroups(0, NULL) ||
	    setgid(NOBODY) || setuid(NOBODY))
		return -errno;
	if (caps_set(0) || caps_get(&eff, &perm))
		return -EPERM;
	return eff || perm ? -EPERM : 0;
}

/*
 * Open the device as nobody: through its directory, opened beforehand, so
 * that only the directory and the device are permission-checked, not the
 * path above them (the 686 guest's initramfs root is 0700).
 */
struct dev_at {
	int dirfd;
	char name[256];
};

static int dev_at_init(struct dev_at *d)
{
	const char *path = taskstate_dev_path();
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
		snprintf(d->name, sizeof(d->name), "%s", path);
	} else {
		snprintf(dir, sizeof(dir), "%.*s",
			 (int)(slash - path) ?: 1, path);
		snprintf(d->name, sizeof(d->name), "%s", slash + 1);
	}
	d->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return d->dirfd < 0 ? -errno : 0;
}

static int dev_at_open(const struct dev_at *d)
{
	return openat(d->dirfd, d->name, O_RDONLY | O_CLOEXEC);
}

FIXTURE(abi) {
	int fd;
	struct taskstate_info info;
	pid_t pid;
	pid_t tid;
	char *page;	/* one page, for arguments up to a page in size */
	uint32_t ps;	/* its size */
};

/*
 * The 6.1 harness runs the test body even after a SKIP in setup: end the
 * test's process instead, with the status a skipped test exits with.
 */
#define SETUP_SKIP(fmt, ...)	SKIP(_exit(255), fmt, ##__VA_ARGS__)

FIXTURE_SETUP(abi)
{
	self->fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SETUP_SKIP("%s: no such device, is taskstate loaded?",
			   taskstate_dev_path());
	if (self->fd < 0 && errno == EPERM && geteuid())
		SETUP_SKIP("%s: needs CAP_PERFMON, run as root",
			   taskstate_dev_path());
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", taskstate_dev_path(),
				      strerror(errno));
	ASSERT_EQ(0, do_info(self->fd, &self->info));
	self->pid = getpid();
	self->tid = ts_gettid();
	self->ps = page_size();
	self->page = mmap(NULL, self->ps, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->page != MAP_FAILED);
}

FIXTURE_TEARDOWN(abi)
{
	if (self->page && self->page != MAP_FAILED)
		munmap(self->page, self->ps);
	if (self->fd >= 0)
		close(self->fd);
}

/* Track the calling thread, in either mode (idempotent in track_all=1). */
#define TRACK_SELF() \
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, self->tid, 0, NULL))

/* Track the calling process: its threads now and later. */
#define TRACK_PROCESS() \
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, self->pid, \
			      TASKSTATE_TRACK_PROCESS, NULL))

/* ---- INFO ---- */

TEST_F(abi, info_reports_the_abi_constants)
{
	struct taskstate_info info;

	ASSERT_EQ(0, do_info(self->fd, &info));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(TASKSTATE_ABI_VERSION, info.abi_version);
	EXPECT_EQ(61, info.state_shift);
	EXPECT_EQ(TASKSTATE_STATE_SHIFT, info.state_shift);
	EXPECT_EQ(61, info.time_bits);
	EXPECT_EQ(TASKSTATE_TIME_BITS, info.time_bits);
	EXPECT_EQ(7, info.clock_id);
	EXPECT_EQ(CLOCK_BOOTTIME, info.clock_id);
	EXPECT_LT(0, info.max_threads);
	EXPECT_EQ(TASKSTATE_BATCH_MAX, info.batch_max);
	EXPECT_GE(1, info.track_all);
	EXPECT_EQ(TASKSTATE_SCOPE_ALL, info.scope);
	EXPECT_EQ(0, info.scope_max_threads);
	EXPECT_EQ(0, info.scope_nr_tracked);
	EXPECT_NE(POISON64, info.nr_untracked);
	EXPECT_GE((uint64_t)info.max_threads, info.nr_tracked);
}

TEST_F(abi, info_counts_tracked_threads)
{
	struct taskstate_info info;

	TH_LOG("track_all=%u", self->info.track_all);
	if (!self->info.track_all)
		TRACK_SELF();
	ASSERT_EQ(0, do_info(self->fd, &info));
	EXPECT_LT(0, info.nr_tracked);
	EXPECT_GE((uint64_t)info.max_threads, info.nr_tracked);
}

/*
 * The size passed is the size written back, not a byte more.  Version 0
 * is the shortest valid size; while it is also the whole struct (today)
 * this checks that nothing past the struct is written, and once the
 * struct grows it checks that an old caller's short struct is respected.
 */
TEST_F(abi, info_writes_back_only_the_size_passed)
{
	unsigned char buf[sizeof(struct taskstate_info) + 64];
	struct taskstate_info *info = (struct taskstate_info *)buf;
	size_t i;

	memset(buf, POISON, sizeof(buf));
	info->size = TASKSTATE_INFO_SIZE_VER0;
	info->flags = 0;
	ASSERT_EQ(0, ts_ioc(self->fd, TASKSTATE_IOC_INFO, info));
	EXPECT_EQ(TASKSTATE_INFO_SIZE_VER0, info->size);
	EXPECT_EQ(TASKSTATE_ABI_VERSION, info->abi_version);
	for (i = TASKSTATE_INFO_SIZE_VER0; i < sizeof(buf); i++)
		ASSERT_EQ(POISON, buf[i]) TH_LOG("byte %zu written", i);
}

/*
 * A caller built with a larger struct (zero tail) gets the fields the
 * kernel knows and the tail left alone: with the tail in a read-only page
 * any write to it would fail the call.  Holds for every command.
 */
TEST_F(abi, larger_struct_tail_is_read_not_written)
{
	char *edge = map_edge(PROT_READ | PROT_WRITE, false);
	size_t i;

	ASSERT_TRUE(edge != NULL);
	ASSERT_EQ(0, mprotect(edge, page_size(), PROT_READ));
	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];
		void *arg = edge - c->ksize;
		uint32_t size = c->ksize + 8;

		fill_valid(c, arg, size, self->tid);
		ASSERT_EQ(0, ts_ioc(self->fd, c->cmd, arg))
			TH_LOG("%s with its tail in a read-only page", c->name);
		EXPECT_TRUE(written(c, arg, size)) TH_LOG("%s", c->name);
	}
	unmap_edge(edge);
}

/* ---- size rules, on every command ---- */

TEST_F(abi, size_below_ver0_is_einval)
{
	unsigned char buf[ARG_MAX_BYTES];	/* every argument struct fits */
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];
		const uint32_t sizes[] = { 0, 1, 4, 8, c->ver0 / 2,
					   c->ver0 - 1 };

		for (j = 0; j < ARRAY_SIZE(sizes); j++) {
			memset(buf, 0, sizeof(buf));
			fill_valid(c, buf, sizes[j], self->tid);
			EXPECT_EQ(-EINVAL, ts_ioc(self->fd, c->cmd, buf))
				TH_LOG("%s size %u", c->name, sizes[j]);
			EXPECT_TRUE(untouched(c, buf))
				TH_LOG("%s size %u wrote back", c->name,
				       sizes[j]);
		}
	}
}

/* Checked before anything past the size field is read. */
TEST_F(abi, size_above_page_is_e2big)
{
	const uint32_t ps = page_size();
	const uint32_t sizes[] = { ps + 1, 2 * ps, 0x80000000U, UINT32_MAX };
	unsigned char buf[ARG_MAX_BYTES];	/* every argument struct fits */
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];

		for (j = 0; j < ARRAY_SIZE(sizes); j++) {
			memset(buf, 0, sizeof(buf));
			fill_valid(c, buf, sizes[j], self->tid);
			EXPECT_EQ(-E2BIG, ts_ioc(self->fd, c->cmd, buf))
				TH_LOG("%s size %u", c->name, sizes[j]);
			EXPECT_TRUE(untouched(c, buf)) TH_LOG("%s", c->name);
		}
	}
}

/*
 * @c on @fd with its argument in @page at @size bytes: valid (for @tid),
 * zeroes past the kernel's size but byte @set (0: none) set.
 */
static int ioc_sized(int fd, pid_t tid, char *page, const struct ts_cmd *c,
		     uint32_t size, uint32_t set)
{
	memset(page, 0, page_size());
	fill_valid(c, page, size, tid);
	if (set)
		page[set] = (char)0x80;
	return ts_ioc(fd, c->cmd, page);
}

TEST_F(abi, larger_size_with_zero_tail_is_accepted)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];
		const uint32_t sizes[] = { c->ksize, c->ksize + 1,
					   c->ksize + 8, self->ps - 1,
					   self->ps };

		for (j = 0; j < ARRAY_SIZE(sizes); j++) {
			EXPECT_EQ(0, ioc_sized(self->fd, self->tid, self->page, c,
					       sizes[j], 0))
				TH_LOG("%s size %u", c->name, sizes[j]);
			EXPECT_TRUE(written(c, self->page, sizes[j]))
				TH_LOG("%s size %u", c->name, sizes[j]);
		}
	}
}

TEST_F(abi, larger_size_with_nonzero_tail_is_e2big)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];
		/* size, and the offset of the one non-zero tail byte */
		const uint32_t cases[][2] = {
			{ c->ksize + 1, c->ksize },
			{ c->ksize + 8, c->ksize + 7 },
			{ self->ps, c->ksize },
			{ self->ps, self->ps - 1 },
		};

		for (j = 0; j < ARRAY_SIZE(cases); j++) {
			EXPECT_EQ(-E2BIG, ioc_sized(self->fd, self->tid,
						    self->page, c, cases[j][0],
						    cases[j][1]))
				TH_LOG("%s size %u, byte %u set", c->name,
				       cases[j][0], cases[j][1]);
			EXPECT_TRUE(untouched(c, self->page))
				TH_LOG("%s", c->name);
		}
	}
}

/* ---- flags and padding ---- */

TEST_F(abi, nonzero_flags_are_einval)
{
	unsigned char buf[ARG_MAX_BYTES];	/* every argument struct fits */
	unsigned int bit;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];

		for (bit = 0; bit < 32; bit++) {
			uint32_t flag = 1U << bit;

			if (c->cmd == TASKSTATE_IOC_TRACK ||
			    c->cmd == TASKSTATE_IOC_UNTRACK) {
				/* TRACK's EXITS is valid with PROCESS. */
				if (flag == TASKSTATE_TRACK_PROCESS ||
				    (flag == TASKSTATE_TRACK_EXITS &&
				     c->cmd == TASKSTATE_IOC_TRACK))
					continue;
				/* with a valid flag too: unknown bits win */
				flag |= TASKSTATE_TRACK_PROCESS;
			}
			memset(buf, 0, sizeof(buf));
			fill_valid(c, buf, c->ksize, self->pid);
			((uint32_t *)buf)[1] = flag;
			EXPECT_EQ(-EINVAL, ts_ioc(self->fd, c->cmd, buf))
				TH_LOG("%s flags %#x", c->name, flag);
			EXPECT_TRUE(untouched(c, buf)) TH_LOG("%s", c->name);
		}
	}
}

TEST_F(abi, nonzero_track_pad_is_einval)
{
	const uint32_t pads[] = { 1, 0x80000000U, UINT32_MAX };
	const unsigned long cmds[] = {
		TASKSTATE_IOC_TRACK, TASKSTATE_IOC_UNTRACK,
	};
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		for (j = 0; j < ARRAY_SIZE(pads); j++) {
			struct taskstate_track a = {
				.size = sizeof(a), .id = self->tid,
				.__pad = pads[j], .nr_threads = POISON64,
			};

			EXPECT_EQ(-EINVAL, ts_ioc(self->fd, cmds[i], &a))
				TH_LOG("cmd %#lx pad %#x", cmds[i], pads[j]);
			EXPECT_EQ(POISON64, a.nr_threads);
		}
	}
}

/* ---- unknown commands ---- */

/* A valid INFO argument, so a misrouted command would not fail on it. */
static long ioc_with_info(int fd, unsigned long cmd)
{
	struct taskstate_info info;

	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	return ts_ioc(fd, cmd, &info);
}

TEST_F(abi, unknown_numbers_of_our_type_are_enotty)
{
	unsigned int nr;

	for (nr = 0; nr < 256; nr++) {
		if (nr < ARRAY_SIZE(ts_cmds)) {
			/* the real ones answer (TRACK of id 0: ESRCH) */
			EXPECT_NE(-ENOTTY, ioc_with_info(self->fd,
				  _IO(TASKSTATE_IOC_TYPE, nr))) TH_LOG("nr %u", nr);
			continue;
		}
		EXPECT_EQ(-ENOTTY, ioc_with_info(self->fd,
						 _IO(TASKSTATE_IOC_TYPE, nr)))
			TH_LOG("nr %#x", nr);
	}
}

/*
 * Our numbers under every other type.  _IO(0, 2) is FIGETBSZ, which the
 * VFS answers for every file before the driver sees it.
 */
TEST_F(abi, real_numbers_of_other_types_are_enotty)
{
	unsigned int type, nr;

	for (type = 0; type < 256; type++) {
		if (type == TASKSTATE_IOC_TYPE)
			continue;
		for (nr = 0; nr < ARRAY_SIZE(ts_cmds); nr++) {
			if (_IO(type, nr) == FIGETBSZ)
				continue;
			EXPECT_EQ(-ENOTTY, ioc_with_info(self->fd,
							 _IO(type, nr)))
				TH_LOG("type %#x nr %u", type, nr);
		}
	}
}

/* The size is in the struct: a command that encodes one is not ours. */
TEST_F(abi, sized_encodings_of_real_commands_are_enotty)
{
	const unsigned int dirs[] = {
		_IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	const unsigned int sizes[] = {
		1, 4, 8, sizeof(struct taskstate_info),
		sizeof(struct taskstate_track), sizeof(struct taskstate_sample),
		sizeof(struct taskstate_list), sizeof(struct taskstate_process),
		(1U << _IOC_SIZEBITS) - 1,
	};
	size_t d, s;
	unsigned int nr;

	for (nr = 0; nr < ARRAY_SIZE(ts_cmds); nr++)
		for (d = 0; d < ARRAY_SIZE(dirs); d++)
			for (s = 0; s < ARRAY_SIZE(sizes); s++) {
				unsigned long cmd = _IOC(dirs[d],
							 TASKSTATE_IOC_TYPE,
							 nr, sizes[s]);

				EXPECT_EQ(-ENOTTY, ioc_with_info(self->fd, cmd))
					TH_LOG("cmd %#lx", cmd);
			}
}

/* ---- bad pointers ---- */

TEST_F(abi, null_arg_is_efault)
{
	const struct ts_cmd *c;

	for (c = ts_cmds; c < ts_cmds + ARRAY_SIZE(ts_cmds); c++)
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd, NULL))
			TH_LOG("cmd %#lx", c->cmd);
}

TEST_F(abi, unmapped_arg_is_efault)
{
	char *none = map_edge(PROT_NONE, false);
	char *gone = map_edge(0, true);
	size_t i;

	ASSERT_TRUE(none != NULL);
	ASSERT_TRUE(gone != NULL);
	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, ts_cmds[i].cmd, none))
			TH_LOG("%s on a PROT_NONE page", ts_cmds[i].name);
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, ts_cmds[i].cmd, gone))
			TH_LOG("%s on an unmapped page", ts_cmds[i].name);
	}
	unmap_edge(none);
	unmap_edge(gone);
}

/*
 * Addresses no user pointer can hold.  The last page of the address space
 * is the kernel's on every layout (and above a compat task's TASK_SIZE on
 * a 64-bit kernel); the others are mapped kernel memory.
 */
static const uintptr_t kernel_addrs[] = {
	(uintptr_t)-4096,
#if UINTPTR_MAX > 0xffffffffU
	(uintptr_t)0xffff888000000000ULL,	/* x86-64 direct map */
	(uintptr_t)0xffffffff81000000ULL,	/* x86-64 kernel text */
#else
	(uintptr_t)0xc0000000UL,		/* i386 direct map */
#endif
};

TEST_F(abi, kernel_address_arg_is_efault)
{
	const struct ts_cmd *c;
	size_t j;

	for (c = ts_cmds; c < ts_cmds + ARRAY_SIZE(ts_cmds); c++)
		for (j = 0; j < ARRAY_SIZE(kernel_addrs); j++)
			EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd,
						  (void *)kernel_addrs[j]))
				TH_LOG("cmd %#lx at %#lx", c->cmd,
				       (unsigned long)kernel_addrs[j]);
}

TEST_F(abi, struct_straddling_into_unmapped_page_is_efault)
{
	char *edge = map_edge(PROT_NONE, false);
	size_t i;

	ASSERT_TRUE(edge != NULL);
	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];
		char *arg;

		/* the size field readable, the rest not */
		arg = edge - sizeof(uint32_t);
		*(uint32_t *)arg = c->ksize;
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd, arg))
			TH_LOG("%s: only its size mapped", c->name);

		/* the size field itself cut in half */
		arg = edge - 2;
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd, arg))
			TH_LOG("%s: half its size mapped", c->name);

		/* all of it mapped but the zero tail of a larger size */
		arg = edge - c->ksize;
		fill_valid(c, arg, c->ksize + 8, self->tid);
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd, arg))
			TH_LOG("%s: its tail unmapped", c->name);
		EXPECT_TRUE(untouched(c, arg)) TH_LOG("%s", c->name);
	}
	unmap_edge(edge);
}

/* A valid argument the kernel can read but not answer into. */
TEST_F(abi, readonly_arg_is_efault)
{
	const size_t ps = self->ps;
	char *page = self->page;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ts_cmds); i++) {
		const struct ts_cmd *c = &ts_cmds[i];

		ASSERT_EQ(0, mprotect(page, ps, PROT_READ | PROT_WRITE));
		memset(page, 0, ps);
		fill_valid(c, page, c->ksize, self->tid);
		ASSERT_EQ(0, mprotect(page, ps, PROT_READ));
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, c->cmd, page))
			TH_LOG("%s in a read-only page", c->name);
	}
}

/*
 * @cmd on @arg fails with EFAULT for each bad place of @entries, its
 * entries field: none, a PROT_NONE page, an unmapped one, a read-only one
 * (where answers cannot be written) and kernel addresses.
 */
static void expect_efault_entries(struct __test_metadata *_metadata, int fd,
				  unsigned long cmd, void *arg,
				  __u64 *entries, char *none, char *gone,
				  char *ro)
{
	const uint64_t edges[] = { 0, ptr_u64(none), ptr_u64(gone), ptr_u64(ro) };
	const size_t n = ARRAY_SIZE(edges);
	size_t i;

	for (i = 0; i < n + ARRAY_SIZE(kernel_addrs); i++) {
		*entries = i < n ? edges[i] : (__u64)kernel_addrs[i - n];
		EXPECT_EQ(-EFAULT, ts_ioc(fd, cmd, arg))
			TH_LOG("entries at %#llx", (unsigned long long)*entries);
	}
}

/* Every bad place for SAMPLE's entries. */
TEST_F(abi, sample_bad_entries_is_efault)
{
	struct taskstate_sample a = { .size = sizeof(a), .count = 1 };
	char *none = map_edge(PROT_NONE, false);
	char *gone = map_edge(0, true);
	char *ro = map_edge(PROT_READ, false);
	struct taskstate_entry *e;

	ASSERT_TRUE(none != NULL);
	ASSERT_TRUE(gone != NULL);
	ASSERT_TRUE(ro != NULL);
	TRACK_SELF();

	expect_efault_entries(_metadata, self->fd, TASKSTATE_IOC_SAMPLE, &a,
			      &a.entries, none, gone, ro);
	/* the first entry fine, the second past the edge */
	e = (struct taskstate_entry *)none - 1;
	e->tid = self->tid;
	a.count = 2;
	a.entries = ptr_u64(e);
	EXPECT_EQ(-EFAULT, ts_ioc(self->fd, TASKSTATE_IOC_SAMPLE, &a));

	unmap_edge(none);
	unmap_edge(gone);
	unmap_edge(ro);
}

/* LIST faults once it has something to write; we make sure it has. */
TEST_F(abi, list_bad_entries_is_efault)
{
	struct taskstate_list a = {
		.size = sizeof(a), .pid = self->pid, .count = 1,
	};
	char *none = map_edge(PROT_NONE, false);
	char *gone = map_edge(0, true);
	char *ro = map_edge(PROT_READ, false);
	struct parked p;

	ASSERT_TRUE(none != NULL);
	ASSERT_TRUE(gone != NULL);
	ASSERT_TRUE(ro != NULL);
	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();

	expect_efault_entries(_metadata, self->fd, TASKSTATE_IOC_LIST, &a,
			      &a.entries, none, gone, ro);

	/* room for all our threads, the last one past the edge */
	a.count = NR_PARKED + 1;
	a.entries = ptr_u64((struct taskstate_entry *)none - NR_PARKED);
	EXPECT_EQ(-EFAULT, ts_ioc(self->fd, TASKSTATE_IOC_LIST, &a));

	unpark_threads(&p);
	unmap_edge(none);
	unmap_edge(gone);
	unmap_edge(ro);
}

/*
 * entries is a 64-bit field: on a 64-bit kernel its upper half is part of
 * the address even for a 32-bit caller; a 32-bit kernel, which cannot
 * address above 4 GiB, refuses it.  Never silently dropped.
 */
TEST_F(abi, entries_upper_bits_are_not_ignored)
{
	struct taskstate_entry e = { .tid = (uint32_t)self->tid };
	struct taskstate_sample a = { .size = sizeof(a), .count = 1 };
	uint64_t bad[] = {
		ptr_u64(&e) | 1ULL << 63,
		0xffff888000000000ULL | ptr_u64(&e),
		ptr_u64(&e) | 1ULL << 32,
	};
	size_t i, n = ARRAY_SIZE(bad);

	if (sizeof(void *) > 4)
		n--;	/* a 64-bit caller may have memory above 4 GiB */
	TRACK_SELF();
	a.entries = ptr_u64(&e);
	ASSERT_EQ(1, ts_ioc(self->fd, TASKSTATE_IOC_SAMPLE, &a));
	for (i = 0; i < n; i++) {
		a.entries = bad[i];
		EXPECT_EQ(-EFAULT, ts_ioc(self->fd, TASKSTATE_IOC_SAMPLE, &a))
			TH_LOG("entries %#llx", (unsigned long long)bad[i]);
	}
}

/* ---- TRACK and UNTRACK ---- */

TEST_F(abi, track_own_thread)
{
	struct taskstate_entry e = { .tid = (uint32_t)self->tid };
	uint32_t found;
	uint64_t nr;

	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, self->tid, 0,
			      &nr));
	EXPECT_EQ(1, nr);
	ASSERT_EQ(1, do_sample(self->fd, &e, 1, &found));
	EXPECT_EQ(1, found);
	EXPECT_EQ(self->pid, e.tgid);
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(e.word));
}

/* Tracking is idempotent: again is fine and still says one thread. */
TEST_F(abi, track_twice_is_fine)
{
	uint64_t nr;

	TRACK_SELF();
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, self->tid, 0,
			      &nr));
	EXPECT_EQ(1, nr);
	EXPECT_NE(0, ts_word_of(self->fd, self->tid));
}

/*
 * A new thread is tracked with a snapshot of its state, stamped with
 * CLOCK_BOOTTIME at the time of the call (track_all=0: the slot is new).
 */
TEST_F(abi, track_snapshots_state_and_boottime)
{
	unsigned long long t0, t1, since;
	long long c0 = 0, c1 = 0;
	struct taskstate_entry e;
	struct parked p;
	int tries;

	ASSERT_EQ(0, park_threads(&p));
	/*
	 * /proc shows 'S' as soon as the thread has set its state, which is
	 * before it leaves the CPU in schedule(); the switch-out (what the
	 * snapshot estimates) can then come after t0. Take t0 only once the
	 * voluntary switch count is settled, and check that it did not move
	 * over the whole window; retry a few times if it did.
	 */
	for (tries = 0; tries < 5; tries++) {
		ASSERT_TRUE(wait_proc_state(p.t[0].tid, 'S'));
		c0 = ts_nvcsw(p.t[0].tid);
		ASSERT_LT(0, c0);
		e.tid = p.t[0].tid;
		t0 = taskstate_now_ns();
		ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK,
				      p.t[0].tid, 0, NULL));
		ASSERT_EQ(1, do_sample(self->fd, &e, 1, NULL));
		t1 = taskstate_now_ns();
		c1 = ts_nvcsw(p.t[0].tid);
		if (c0 == c1 || self->info.track_all)
			break;
		ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK,
				      p.t[0].tid, 0, NULL));
	}
	if (!self->info.track_all)
		ASSERT_EQ(c0, c1)
			TH_LOG("the parked thread kept switching: %d tries",
			       tries);
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(e.word));
	since = taskstate_since_ns(e.word);
	EXPECT_TRUE(since <= (t1 & TASKSTATE_TIME_MASK))
		TH_LOG("stamped %llu, after %llu", since, t1);
	/*
	 * A new slot for a thread asleep since before the call: stamped with
	 * the scheduler's estimate of when it went to sleep, not later than
	 * the call.
	 */
	if (!self->info.track_all)
		EXPECT_TRUE(since && since <= (t0 & TASKSTATE_TIME_MASK))
			TH_LOG("stamped %llu, call at %llu", since, t0);
	unpark_threads(&p);
}

TEST_F(abi, track_process_counts_its_threads)
{
	struct taskstate_entry e[NR_PARKED + 1];
	struct parked p;
	uint32_t found;
	uint64_t nr;
	int i;

	ASSERT_EQ(0, park_threads(&p));
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, self->pid,
			      TASKSTATE_TRACK_PROCESS, &nr));
	EXPECT_EQ(NR_PARKED + 1, nr);
	e[0].tid = self->tid;
	for (i = 0; i < NR_PARKED; i++)
		e[i + 1].tid = p.t[i].tid;
	EXPECT_EQ(NR_PARKED + 1, do_sample(self->fd, e, NR_PARKED + 1, &found));
	EXPECT_EQ(NR_PARKED + 1, found);
	for (i = 0; i <= NR_PARKED; i++) {
		EXPECT_EQ(self->pid, e[i].tgid);
		EXPECT_NE(TASKSTATE_NONE, taskstate_state(e[i].word));
	}
	unpark_threads(&p);
}

/* A process that waits to be killed, and dies with its parent. */
static pid_t fork_pause(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == parent)
		pause();
	_exit(0);
}

/* "Its future threads and children": added as they are created. */
TEST_F(abi, track_process_follows_new_threads_and_children)
{
	struct taskstate_entry e[NR_PARKED + 1];
	struct parked p;
	pid_t child;
	int i;

	TRACK_PROCESS();
	ASSERT_EQ(0, park_threads(&p));
	child = fork_pause();
	ASSERT_LT(0, child);
	for (i = 0; i < NR_PARKED; i++)
		e[i].tid = p.t[i].tid;
	e[NR_PARKED].tid = child;
	EXPECT_EQ(NR_PARKED + 1, do_sample(self->fd, e, NR_PARKED + 1, NULL));
	for (i = 0; i < NR_PARKED; i++)
		EXPECT_EQ(self->pid, e[i].tgid);
	EXPECT_EQ(child, e[NR_PARKED].tgid);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unpark_threads(&p);
}

/* Ids that name no thread, with and without PROCESS, either command. */
TEST_F(abi, track_of_unknown_id_is_esrch)
{
	const uint32_t ids[] = {
		(uint32_t)ts_reaped_pid(), 0, TS_PID_MAX_LIMIT,
		TS_PID_MAX_LIMIT + 1, 0x7fffffff, 0x80000000U, UINT32_MAX,
	};
	const unsigned long cmds[] = {
		TASKSTATE_IOC_TRACK, TASKSTATE_IOC_UNTRACK,
	};
	const uint32_t flags[] = { 0, TASKSTATE_TRACK_PROCESS };
	size_t i, c, f;
	uint64_t nr;

	ASSERT_LT(0, (pid_t)ids[0]);
	for (i = 0; i < ARRAY_SIZE(ids); i++)
		for (c = 0; c < ARRAY_SIZE(cmds); c++)
			for (f = 0; f < ARRAY_SIZE(flags); f++) {
				EXPECT_EQ(-ESRCH, do_track(self->fd, cmds[c],
							   ids[i], flags[f],
							   &nr))
					TH_LOG("cmd %#lx id %u flags %u",
					       cmds[c], ids[i], flags[f]);
				EXPECT_EQ(POISON64, nr);
			}
}

/* PROCESS of ids that name no process. */
static long do_process(int fd, uint32_t pid, struct taskstate_process *a)
{
	memset(a, POISON, sizeof(*a));
	a->size = sizeof(*a);
	a->flags = 0;
	a->pid = pid;
	return ts_ioc(fd, TASKSTATE_IOC_PROCESS, a);
}

TEST_F(abi, process_of_unknown_pid_is_esrch)
{
	const uint32_t ids[] = {
		(uint32_t)ts_reaped_pid(), 0, TS_PID_MAX_LIMIT,
		TS_PID_MAX_LIMIT + 1, 0x7fffffff, 0x80000000U, UINT32_MAX,
	};
	struct taskstate_process a;
	size_t i;

	ASSERT_LT(0, (pid_t)ids[0]);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		EXPECT_EQ(-ESRCH, do_process(self->fd, ids[i], &a))
			TH_LOG("pid %u", ids[i]);
		EXPECT_EQ(POISON64, a.now_ns);
		EXPECT_EQ(POISON32, a.valid);
	}
}

/*
 * A thread's tid is not a process: ESRCH, even with the process tracked.
 * The process's own pid answers, valid once it is tracked as a whole,
 * with its threads counted.
 */
TEST_F(abi, process_of_non_leader_tid_is_esrch)
{
	struct taskstate_process a;
	struct parked p;

	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();
	EXPECT_EQ(-ESRCH, do_process(self->fd, p.t[0].tid, &a));
	EXPECT_EQ(POISON64, a.now_ns);
	ASSERT_EQ(0, do_process(self->fd, self->pid, &a));
	EXPECT_EQ(sizeof(a), a.size);
	EXPECT_EQ(1, a.valid);
	EXPECT_EQ(NR_PARKED + 1, a.nr_threads);
	EXPECT_NE(0, a.now_ns);
	EXPECT_NE(POISON64, a.nr_exited);
	unpark_threads(&p);
}

/*
 * Version 0 ends at start_ns, version 1 (children_ns) is the whole
 * struct: a shorter size is EINVAL (generic), and a version 0 caller
 * still gets its fields.
 */
TEST_F(abi, process_sizes_are_versions)
{
	struct taskstate_process a;

	EXPECT_EQ(TASKSTATE_PROCESS_SIZE_VER0,
		  offsetof(struct taskstate_process, children_ns));
	EXPECT_EQ(TASKSTATE_PROCESS_SIZE_VER1, sizeof(struct taskstate_process));
	EXPECT_EQ(16, offsetof(struct taskstate_process, now_ns));
	EXPECT_EQ(40, offsetof(struct taskstate_process, state_ns));
	EXPECT_EQ(120, offsetof(struct taskstate_process, start_ns));
	EXPECT_EQ(168, offsetof(struct taskstate_process, nr_children));
	EXPECT_EQ(176, offsetof(struct taskstate_process, parent_start_ns));
	if (!(self->info.map_flags & TASKSTATE_MAP_F_TOTALS))
		SKIP(return, "the module keeps no totals (totals=0)");
	memset(&a, 0xcc, sizeof(a));
	a.size = TASKSTATE_PROCESS_SIZE_VER0;
	a.flags = 0;
	a.pid = getpid();
	ASSERT_EQ(0, ioctl(self->fd, TASKSTATE_IOC_PROCESS, &a));
	EXPECT_EQ(TASKSTATE_PROCESS_SIZE_VER0, a.size);
	/* Nothing written past the caller's size. */
	EXPECT_EQ(POISON64, a.nr_children);
}

TEST_F(abi, track_process_of_non_leader_tid_is_esrch)
{
	struct parked p;
	uint64_t nr;

	ASSERT_EQ(0, park_threads(&p));
	EXPECT_EQ(-ESRCH, do_track(self->fd, TASKSTATE_IOC_TRACK, p.t[0].tid,
				   TASKSTATE_TRACK_PROCESS, &nr));
	EXPECT_EQ(-ESRCH, do_track(self->fd, TASKSTATE_IOC_UNTRACK,
				   p.t[0].tid, TASKSTATE_TRACK_PROCESS, &nr));
	/* the same tid is fine as a thread */
	EXPECT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, p.t[0].tid, 0,
			      &nr));
	EXPECT_EQ(1, nr);
	unpark_threads(&p);
}

/*
 * Before any TRACK a thread is known only with track_all=1 (tracked at
 * fork); with track_all=0 it is NONE.
 */
TEST_F(abi, sample_before_track_follows_track_all)
{
	struct taskstate_entry e;
	struct parked p;
	uint32_t found;

	ASSERT_EQ(0, park_threads(&p));
	e.tid = p.t[0].tid;
	EXPECT_EQ(self->info.track_all, do_sample(self->fd, &e, 1, &found))
		TH_LOG("track_all=%u", self->info.track_all);
	EXPECT_EQ(self->info.track_all, found);
	EXPECT_EQ(self->info.track_all ? (uint32_t)self->pid : 0, e.tgid);
	unpark_threads(&p);
}

/*
 * UNTRACK removes the thread's slot (module/table.c taskstate_untrack()), in
 * either mode: track_all only decides what is added at load and at fork,
 * so the thread stays NONE through later switches.
 */
TEST_F(abi, untrack_makes_thread_none)
{
	struct taskstate_entry e = { .tid = (uint32_t)self->tid };
	uint32_t found;
	uint64_t nr;

	TRACK_SELF();
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, self->tid, 0,
			      &nr));
	EXPECT_EQ(1, nr);
	EXPECT_EQ(0, do_sample(self->fd, &e, 1, &found));
	EXPECT_EQ(0, found);
	EXPECT_EQ(0, e.word);
	EXPECT_EQ(0, e.tgid);
	EXPECT_EQ((uint32_t)self->tid, e.tid);

	/* sleeping and waking goes through the probes: still not tracked */
	ts_sleep_ms(20);
	EXPECT_EQ(0, do_sample(self->fd, &e, 1, &found))
		TH_LOG("track_all=%u", self->info.track_all);
	EXPECT_EQ(0, e.word);
}

/* UNTRACK of a live thread without a slot: success, nothing untracked. */
TEST_F(abi, untrack_of_untracked_thread_is_noop)
{
	struct parked p;
	uint64_t nr;

	ASSERT_EQ(0, park_threads(&p));
	/* the first untrack finds a slot only if track_all gave it one */
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, p.t[0].tid, 0,
			      &nr));
	EXPECT_EQ(self->info.track_all, nr);
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, p.t[0].tid, 0,
			      &nr));
	EXPECT_EQ(0, nr);
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, p.t[0].tid,
			      0, &nr));
	EXPECT_EQ(0, nr);
	unpark_threads(&p);
}

TEST_F(abi, untrack_process_untracks_every_thread)
{
	struct taskstate_entry e[NR_PARKED + 1];
	struct parked p;
	uint32_t found;
	uint64_t nr;
	int i;

	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, self->pid,
			      TASKSTATE_TRACK_PROCESS, &nr));
	EXPECT_EQ(NR_PARKED + 1, nr);
	e[0].tid = self->tid;
	for (i = 0; i < NR_PARKED; i++)
		e[i + 1].tid = p.t[i].tid;
	EXPECT_EQ(0, do_sample(self->fd, e, NR_PARKED + 1, &found));
	EXPECT_EQ(0, found);
	for (i = 0; i <= NR_PARKED; i++)
		EXPECT_EQ(0, e[i].word);
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_UNTRACK, self->pid,
			      TASKSTATE_TRACK_PROCESS, &nr));
	EXPECT_EQ(0, nr);
	unpark_threads(&p);
}

/* ---- SAMPLE ---- */

TEST_F(abi, sample_calling_thread_is_running)
{
	struct taskstate_entry e = { .tid = (uint32_t)self->tid };
	uint32_t found;
	uint64_t now;

	TRACK_SELF();
	ASSERT_EQ(1, do_sample(self->fd, &e, 1, &found));
	now = taskstate_now_ns();
	EXPECT_EQ(1, found);
	EXPECT_EQ((uint32_t)self->tid, e.tid);
	EXPECT_EQ(self->pid, e.tgid);
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(e.word));
	/* stamped with CLOCK_BOOTTIME, in the past */
	EXPECT_GE(now & TASKSTATE_TIME_MASK, taskstate_since_ns(e.word));
}

/*
 * Known tids are answered, unknown ones (0, reaped, out of range) get
 * word 0 and tgid 0 without failing the call; found counts the known.
 */
TEST_F(abi, sample_mixed_batch_answers_known_and_zeroes_unknown)
{
	struct parked p;
	pid_t gone = ts_reaped_pid();
	struct {
		uint32_t tid;
		bool known;
	} want[] = {
		{ self->tid, true }, { 0, false }, { gone, false },
		{ 0, true }, { 0x7fffffff, false }, { UINT32_MAX, false },
		{ 0, true }, { TS_PID_MAX_LIMIT, false }, { self->tid, true },
	};
	struct taskstate_entry e[ARRAY_SIZE(want)];
	uint32_t found, known = 0;
	size_t i;

	ASSERT_LT(0, gone);
	ASSERT_EQ(0, park_threads(&p));
	want[3].tid = p.t[0].tid;
	want[6].tid = p.t[1].tid;
	TRACK_PROCESS();
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		e[i].tid = want[i].tid;
		known += want[i].known;
	}
	ASSERT_EQ(known, do_sample(self->fd, e, ARRAY_SIZE(e), &found));
	EXPECT_EQ(known, found);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		EXPECT_EQ(want[i].tid, e[i].tid) TH_LOG("entry %zu", i);
		if (want[i].known) {
			EXPECT_EQ(self->pid, e[i].tgid) TH_LOG("entry %zu", i);
			EXPECT_NE(TASKSTATE_NONE, taskstate_state(e[i].word))
				TH_LOG("entry %zu", i);
			EXPECT_NE(POISON64, e[i].word) TH_LOG("entry %zu", i);
		} else {
			EXPECT_EQ(0, e[i].tgid) TH_LOG("entry %zu", i);
			EXPECT_EQ(0, e[i].word) TH_LOG("entry %zu", i);
		}
	}
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(e[0].word));
	unpark_threads(&p);
}

TEST_F(abi, sample_reports_tgid_of_other_process)
{
	struct taskstate_entry e;
	pid_t child;

	child = fork_pause();
	ASSERT_LT(0, child);
	ASSERT_EQ(0, do_track(self->fd, TASKSTATE_IOC_TRACK, child, 0, NULL));
	e.tid = child;
	EXPECT_EQ(1, do_sample(self->fd, &e, 1, NULL));
	EXPECT_EQ(child, e.tgid);
	EXPECT_NE(TASKSTATE_NONE, taskstate_state(e.word));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

TEST_F(abi, sample_count_zero_returns_zero)
{
	struct taskstate_entry e = { .tid = (uint32_t)self->tid };
	uint32_t found;

	TRACK_SELF();
	EXPECT_EQ(0, do_sample(self->fd, NULL, 0, &found));
	EXPECT_EQ(0, found);
	/* entries is not even looked at */
	e.tgid = POISON32;
	e.word = POISON64;
	EXPECT_EQ(0, do_sample(self->fd, &e, 0, &found));
	EXPECT_EQ(0, found);
	EXPECT_EQ(POISON64, e.word);
}

TEST_F(abi, sample_batch_max_is_accepted)
{
	const uint32_t n = TASKSTATE_BATCH_MAX;
	struct taskstate_entry *e = calloc(n, sizeof(*e));
	uint32_t i, known = 0, found;

	ASSERT_TRUE(e != NULL);
	TRACK_SELF();
	for (i = 0; i < n; i++) {
		/* ourselves, with a hole now and then; the last one known */
		e[i].tid = (i % 7 == 3) ? 0 : (uint32_t)self->tid;
		known += !!e[i].tid;
	}
	ASSERT_EQ(known, do_sample(self->fd, e, n, &found));
	EXPECT_EQ(known, found);
	for (i = 0; i < n; i++) {
		if (e[i].tid) {
			ASSERT_EQ(self->pid, e[i].tgid) TH_LOG("entry %u", i);
			ASSERT_NE(0, e[i].word) TH_LOG("entry %u", i);
		} else {
			ASSERT_EQ(0, e[i].tgid) TH_LOG("entry %u", i);
			ASSERT_EQ(0, e[i].word) TH_LOG("entry %u", i);
		}
	}
	free(e);
}

TEST_F(abi, sample_count_above_batch_max_is_e2big)
{
	const uint32_t n = TASKSTATE_BATCH_MAX + 1;
	const uint32_t counts[] = { n, UINT32_MAX / 2, UINT32_MAX };
	struct taskstate_entry *e = calloc(n, sizeof(*e));
	uint32_t i;

	ASSERT_TRUE(e != NULL);
	TRACK_SELF();
	for (i = 0; i < n; i++) {
		e[i].tid = self->tid;
		e[i].word = POISON64;
	}
	/* a buffer as large as the first count: only the count is wrong */
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		struct taskstate_sample a = {
			.size = sizeof(a), .count = counts[i],
			.found = POISON32, .entries = ptr_u64(e),
		};

		EXPECT_EQ(-E2BIG, ts_ioc(self->fd, TASKSTATE_IOC_SAMPLE, &a))
			TH_LOG("count %u", counts[i]);
		EXPECT_EQ(POISON32, a.found);
	}
	EXPECT_EQ(POISON64, e[0].word);
	EXPECT_EQ(POISON64, e[n - 1].word);
	free(e);
}

/* ---- LIST ---- */

TEST_F(abi, list_with_pid_returns_exactly_our_threads)
{
	struct taskstate_entry e[NR_PARKED + 8];
	bool seen[NR_PARKED + 1] = { false };
	uint32_t filled, total, i;
	struct parked p;
	int j;

	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();
	ASSERT_EQ(NR_PARKED + 1, do_list(self->fd, self->pid, e, ARRAY_SIZE(e),
					 &filled, &total));
	EXPECT_EQ(NR_PARKED + 1, filled);
	EXPECT_EQ(NR_PARKED + 1, total);
	for (i = 0; i < filled; i++) {
		EXPECT_EQ(self->pid, e[i].tgid);
		EXPECT_NE(TASKSTATE_NONE, taskstate_state(e[i].word));
		if (e[i].tid == (uint32_t)self->tid) {
			EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(e[i].word));
			seen[0] = true;
		}
		for (j = 0; j < NR_PARKED; j++)
			if (e[i].tid == (uint32_t)p.t[j].tid)
				seen[j + 1] = true;
	}
	for (j = 0; j <= NR_PARKED; j++)
		EXPECT_TRUE(seen[j]) TH_LOG("thread %d not listed", j);
	for (i = filled; i < ARRAY_SIZE(e); i++)
		EXPECT_EQ(POISON64, e[i].word) TH_LOG("entry %u written", i);
	unpark_threads(&p);
}

TEST_F(abi, list_all_fills_min_of_count_and_total)
{
	const uint32_t n = TASKSTATE_BATCH_MAX;
	struct taskstate_entry *e = malloc(n * sizeof(*e));
	uint32_t filled, total, i;
	bool seen = false;
	long ret;

	ASSERT_TRUE(e != NULL);
	TRACK_SELF();
	ret = do_list(self->fd, 0, e, n, &filled, &total);
	ASSERT_LE(1, ret);
	EXPECT_EQ(ret, filled);
	EXPECT_LE(filled, total);
	EXPECT_EQ(total < n ? total : n, filled);
	for (i = 0; i < filled; i++) {
		ASSERT_NE(0, e[i].tid) TH_LOG("entry %u", i);
		ASSERT_NE(0, e[i].tgid) TH_LOG("entry %u", i);
		ASSERT_NE(POISON64, e[i].word) TH_LOG("entry %u", i);
		seen |= e[i].tid == (uint32_t)self->tid;
	}
	EXPECT_TRUE(seen);
	if (filled < n)
		EXPECT_EQ(POISON64, e[filled].word);
	free(e);
}

TEST_F(abi, list_short_buffer_fills_count_and_reports_total)
{
	struct taskstate_entry e[NR_PARKED + 1];
	uint32_t filled, total, i;
	struct parked p;

	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();
	/* count says how much of entries is ours to fill: 2 of the 4 */
	memset(e, POISON, sizeof(e));
	ASSERT_EQ(2, do_list(self->fd, self->pid, e, 2, &filled, &total));
	EXPECT_EQ(2, filled);
	EXPECT_EQ(NR_PARKED + 1, total);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(self->pid, e[i].tgid);
		EXPECT_NE(POISON64, e[i].word);
	}
	for (i = 2; i < ARRAY_SIZE(e); i++)
		EXPECT_EQ(POISON64, e[i].word) TH_LOG("entry %u written", i);
	unpark_threads(&p);
}

TEST_F(abi, list_count_zero_fills_nothing_and_reports_total)
{
	struct taskstate_entry e;
	uint32_t filled, total;

	TRACK_SELF();
	EXPECT_EQ(0, do_list(self->fd, 0, NULL, 0, &filled, &total));
	EXPECT_EQ(0, filled);
	EXPECT_LE(1, total);
	EXPECT_EQ(0, do_list(self->fd, self->pid, NULL, 0, &filled, &total));
	EXPECT_EQ(0, filled);
	EXPECT_EQ(1, total);
	/* entries is not written */
	EXPECT_EQ(0, do_list(self->fd, self->pid, &e, 0, &filled, &total));
	EXPECT_EQ(1, total);
	memset(&e, POISON, sizeof(e));
	EXPECT_EQ(0, do_list(self->fd, self->pid, &e, 0, &filled, &total));
	EXPECT_EQ(POISON64, e.word);
}

/* The pid filter is a process id: a gone pid or a thread's tid matches nothing. */
TEST_F(abi, list_of_gone_pid_or_non_leader_tid_is_empty)
{
	struct taskstate_entry e[4];
	uint32_t filled, total;
	pid_t gone = ts_reaped_pid();
	struct parked p;

	ASSERT_LT(0, gone);
	ASSERT_EQ(0, park_threads(&p));
	TRACK_PROCESS();
	EXPECT_EQ(0, do_list(self->fd, gone, e, ARRAY_SIZE(e), &filled,
			     &total));
	EXPECT_EQ(0, filled);
	EXPECT_EQ(0, total);
	EXPECT_EQ(0, do_list(self->fd, p.t[0].tid, e, ARRAY_SIZE(e), &filled,
			     &total));
	EXPECT_EQ(0, filled);
	EXPECT_EQ(0, total);
	unpark_threads(&p);
}

/*
 * LIST is not bound by the SAMPLE batch: it may ask for every thread the
 * largest table holds.  The buffer is mapped, not touched: LIST writes
 * only what it fills.
 */
TEST_F(abi, list_count_up_to_list_max_is_accepted)
{
	const size_t len = (size_t)TASKSTATE_LIST_MAX *
			   sizeof(struct taskstate_entry);
	const uint32_t counts[] = {
		TASKSTATE_BATCH_MAX + 1, TASKSTATE_LIST_MAX,
	};
	struct taskstate_entry *e = mmap(NULL, len, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS |
					 MAP_NORESERVE, -1, 0);
	uint32_t filled, total;
	size_t i;

	ASSERT_TRUE(e != MAP_FAILED);
	TRACK_SELF();
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		struct taskstate_list a = {
			.size = sizeof(a), .count = counts[i],
			.entries = ptr_u64(e), .filled = POISON32,
			.total = POISON32,
		};
		long ret = ts_ioc(self->fd, TASKSTATE_IOC_LIST, &a);

		filled = a.filled;
		total = a.total;
		EXPECT_LE(1, ret) TH_LOG("count %u", counts[i]);
		EXPECT_EQ(ret, filled);
		EXPECT_EQ(total, filled);
	}
	munmap(e, len);
}

TEST_F(abi, list_count_above_list_max_is_e2big)
{
	const uint32_t counts[] = {
		TASKSTATE_LIST_MAX + 1, UINT32_MAX / 2, UINT32_MAX,
	};
	struct taskstate_entry e;
	size_t i;

	TRACK_SELF();
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		struct taskstate_list a = {
			.size = sizeof(a), .count = counts[i],
			.entries = ptr_u64(&e), .filled = POISON32,
			.total = POISON32,
		};

		EXPECT_EQ(-E2BIG, ts_ioc(self->fd, TASKSTATE_IOC_LIST, &a))
			TH_LOG("count %u", counts[i]);
		EXPECT_EQ(POISON32, a.total);
	}
}

/* ---- who may open ---- */

TEST_F(abi, device_is_a_world_readable_char_device)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0444, st.st_mode & 07777);
}

struct open_arg {
	int fd;			/* opened before the drop */
	uint64_t keep;		/* capabilities kept, for child_open_with */
};

/*
 * An open without CAP_PERFMON and CAP_SYS_ADMIN in the initial user
 * namespace, @fd its result: a descriptor scoped to the caller's own
 * process while the unprivileged parameter is on, EPERM while it is off.
 */
static int check_unprivileged_open(int fd, int on)
{
	struct taskstate_info info;

	if (!on) {
		CHILD_EQ(-1, fd);
		CHILD_EQ(EPERM, errno);
		return 0;
	}
	CHILD_CHECK(fd >= 0);
	CHILD_EQ(0, do_info(fd, &info));
	CHILD_EQ(TASKSTATE_SCOPE_SELF, info.scope);
	CHILD_CHECK(info.scope_max_threads > 0);
	close(fd);
	return 0;
}

static int child_open_as_nobody(void *arg)
{
	int on = ts_unprivileged_on();
	struct dev_at d;

	(void)arg;
	CHILD_CHECK(on >= 0);
	if (dev_at_init(&d) || become_nobody())
		return CHILD_SKIP;
	/* the mode lets anyone try: it is the driver that decides */
	return check_unprivileged_open(dev_at_open(&d), on);
}

/* uid 0 is nothing: the capabilities are what counts. */
static int child_open_with(void *arg)
{
	const struct open_arg *a = arg;
	struct taskstate_info info;
	uint64_t eff, perm;
	int fd;

	if (caps_get(&eff, &perm) || caps_set(a->keep & perm) ||
	    caps_get(&eff, &perm))
		return CHILD_SKIP;
	CHILD_EQ(0, getuid());
	CHILD_EQ(a->keep & perm, eff);
	fd = open(taskstate_dev_path(), O_RDONLY);
	if (!(a->keep & (CAP_BIT(CAP_PERFMON) | CAP_BIT(CAP_SYS_ADMIN))))
		return check_unprivileged_open(fd, ts_unprivileged_on());
	CHILD_CHECK(fd >= 0);
	CHILD_EQ(0, do_info(fd, &info));
	CHILD_EQ(TASKSTATE_ABI_VERSION, info.abi_version);
	CHILD_EQ(TASKSTATE_SCOPE_ALL, info.scope);
	return 0;
}

TEST_F(abi, open_as_nobody_is_scoped_or_eperm_when_switched_off)
{
	ASSERT_CHILD_PASSES(child_open_as_nobody, NULL,
			    "cannot become nobody");
}

TEST_F(abi, open_as_root_without_capabilities_is_scoped)
{
	struct open_arg a = { .keep = 0 };

	ASSERT_CHILD_PASSES(child_open_with, &a, "cannot drop capabilities");
}

TEST_F(abi, open_without_perfmon_and_sys_admin_is_scoped)
{
	struct open_arg a = {
		.keep = ~(CAP_BIT(CAP_PERFMON) | CAP_BIT(CAP_SYS_ADMIN)),
	};

	ASSERT_CHILD_PASSES(child_open_with, &a, "cannot drop capabilities");
}

TEST_F(abi, open_with_only_cap_perfmon_works)
{
	struct open_arg a = { .keep = CAP_BIT(CAP_PERFMON) };

	ASSERT_CHILD_PASSES(child_open_with, &a, "cannot drop capabilities");
}

TEST_F(abi, open_with_only_cap_sys_admin_works)
{
	struct open_arg a = { .keep = CAP_BIT(CAP_SYS_ADMIN) };

	ASSERT_CHILD_PASSES(child_open_with, &a, "cannot drop capabilities");
}

/* Privilege is decided at open: an fd opened before a drop still works. */
static int child_fd_outlives_privilege(void *arg)
{
	const struct open_arg *a = arg;
	struct taskstate_entry e = { .tid = (uint32_t)ts_gettid() };
	struct taskstate_info info;
	int on = ts_unprivileged_on();
	struct dev_at d;
	uint64_t nr;

	CHILD_CHECK(on >= 0);
	if (dev_at_init(&d) || become_nobody())
		return CHILD_SKIP;
	if (check_unprivileged_open(dev_at_open(&d), on))
		return 1;
	CHILD_EQ(0, do_info(a->fd, &info));
	CHILD_EQ(TASKSTATE_ABI_VERSION, info.abi_version);
	CHILD_EQ(TASKSTATE_SCOPE_ALL, info.scope);
	CHILD_EQ(0, do_track(a->fd, TASKSTATE_IOC_TRACK, e.tid, 0, &nr));
	CHILD_EQ(1, nr);
	CHILD_EQ(1, do_sample(a->fd, &e, 1, NULL));
	CHILD_EQ(getpid(), e.tgid);
	return 0;
}

TEST_F(abi, fd_opened_before_dropping_privilege_keeps_working)
{
	struct open_arg a = { .fd = self->fd };

	ASSERT_CHILD_PASSES(child_fd_outlives_privilege, &a,
			    "cannot become nobody");
}

/* ---- pid namespaces ---- */

struct pidns_arg {
	pid_t outside_pid;	/* the test process, as the root ns sees it */
	pid_t outside_tid;
	int (*inside)(struct pidns_arg *a);	/* run as pid 1 */
	int (*outside)(struct pidns_arg *a, pid_t pid1);
	int fd;			/* the test's, for outside() */
};

/*
 * In a new pid namespace: unshare, fork pid 1, run inside() there; once it
 * passed, and while pid 1 still lives, run outside() with pid 1's pid as
 * the parent namespace sees it.
 */
static int child_pidns(void *arg)
{
	struct pidns_arg *a = arg;
	int ready[2], hold[2], status, ret = 0;
	pid_t pid1;
	char c;

	if (unshare(CLONE_NEWPID))
		return CHILD_SKIP;
	if (pipe(ready) || pipe(hold))
		return 1;
	pid1 = fork();
	if (pid1 < 0)
		return 1;
	if (!pid1) {
		close(ready[0]);
		close(hold[1]);
		ret = a->inside(a);
		if (ret)
			_exit(ret);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) == 1 && a->outside)
		ret = a->outside(a, pid1);
	close(hold[1]);
	if (waitpid(pid1, &status, 0) != pid1)
		return 1;
	if (!WIFEXITED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status) ? WEXITSTATUS(status) : ret;
}

#define RUN_PIDNS(in, out) do {						\
	struct pidns_arg a = {						\
		.outside_pid = self->pid, .outside_tid = self->tid,	\
		.inside = (in), .outside = (out), .fd = self->fd,	\
	};								\
	ASSERT_CHILD_PASSES(child_pidns, &a,				\
			    "cannot unshare a pid namespace");		\
} while (0)

/* pid 1, with a device of its own, tracking itself by its own tid 1. */
static int pidns_open_and_track_self(void)
{
	uint64_t nr;
	int fd;

	if (ts_gettid() != 1 || getpid() != 1)
		return -1;
	fd = open(taskstate_dev_path(), O_RDONLY);
	if (fd < 0)
		return -1;
	if (do_track(fd, TASKSTATE_IOC_TRACK, 1, 0, &nr) || nr != 1)
		return -1;
	return fd;
}

static int inside_sample(struct pidns_arg *a)
{
	struct taskstate_entry e[3] = {
		{ .tid = 1 }, { .tid = (uint32_t)a->outside_tid },
		{ .tid = (uint32_t)a->outside_pid },
	};
	uint32_t found;
	int fd;

	CHILD_EQ(1, ts_gettid());
	fd = pidns_open_and_track_self();
	CHILD_CHECK(fd >= 0);
	/* only pid 1 lives here: the outsider's numbers name nothing */
	CHILD_EQ(1, do_sample(fd, e, 3, &found));
	CHILD_EQ(1, found);
	CHILD_EQ(1, e[0].tgid);
	CHILD_EQ(TASKSTATE_RUNNING, taskstate_state(e[0].word));
	CHILD_EQ(0, e[1].tgid);
	CHILD_EQ(0, e[1].word);
	CHILD_EQ(0, e[2].tgid);
	CHILD_EQ(0, e[2].word);
	return 0;
}

TEST_F(abi, pidns_sample_resolves_tids_in_callers_namespace)
{
	RUN_PIDNS(inside_sample, NULL);
}

static int inside_track_outsider(struct pidns_arg *a)
{
	struct taskstate_process pr;
	uint64_t nr;
	int fd;

	fd = pidns_open_and_track_self();
	CHILD_CHECK(fd >= 0);
	CHILD_EQ(-ESRCH, do_track(fd, TASKSTATE_IOC_TRACK, a->outside_tid, 0,
				  &nr));
	CHILD_EQ(-ESRCH, do_track(fd, TASKSTATE_IOC_UNTRACK, a->outside_tid,
				  0, &nr));
	CHILD_EQ(-ESRCH, do_track(fd, TASKSTATE_IOC_TRACK, a->outside_pid,
				  TASKSTATE_TRACK_PROCESS, &nr));
	CHILD_EQ(-ESRCH, do_track(fd, TASKSTATE_IOC_UNTRACK, a->outside_pid,
				  TASKSTATE_TRACK_PROCESS, &nr));
	CHILD_EQ(POISON64, nr);
	CHILD_EQ(-ESRCH, do_process(fd, a->outside_pid, &pr));
	return 0;
}

TEST_F(abi, pidns_track_of_outside_tid_is_esrch)
{
	RUN_PIDNS(inside_track_outsider, NULL);
}

static int inside_list(struct pidns_arg *a)
{
	struct taskstate_entry e[16];
	uint32_t filled, total;
	int fd;

	fd = pidns_open_and_track_self();
	CHILD_CHECK(fd >= 0);
	/* every tracked thread of the machine, but only pid 1 is ours */
	CHILD_EQ(1, do_list(fd, 0, e, 16, &filled, &total));
	CHILD_EQ(1, filled);
	CHILD_EQ(1, total);
	CHILD_EQ(1, e[0].tid);
	CHILD_EQ(1, e[0].tgid);
	CHILD_EQ(TASKSTATE_RUNNING, taskstate_state(e[0].word));
	CHILD_EQ(0, do_list(fd, a->outside_pid, e, 16, &filled, &total));
	CHILD_EQ(0, total);
	CHILD_EQ(1, do_list(fd, 1, e, 16, &filled, &total));
	CHILD_EQ(1, total);
	return 0;
}

TEST_F(abi, pidns_list_shows_only_namespace_tids)
{
	RUN_PIDNS(inside_list, NULL);
}

static int inside_track_self(struct pidns_arg *a)
{
	(void)a;
	CHILD_CHECK(pidns_open_and_track_self() >= 0);
	return 0;
}

/* The parent namespace names pid 1 by its own number for it. */
static int outside_sees_pid1(struct pidns_arg *a, pid_t pid1)
{
	struct taskstate_entry e[4];
	uint32_t filled, total;

	e[0].tid = pid1;
	CHILD_EQ(1, do_sample(a->fd, e, 1, NULL));
	CHILD_EQ(pid1, e[0].tid);
	CHILD_EQ(pid1, e[0].tgid);
	CHILD_EQ(1, do_list(a->fd, pid1, e, 4, &filled, &total));
	CHILD_EQ(1, total);
	CHILD_EQ(pid1, e[0].tid);
	CHILD_EQ(pid1, e[0].tgid);
	return 0;
}

TEST_F(abi, pidns_task_is_named_by_outer_pid_outside)
{
	RUN_PIDNS(inside_track_self, outside_sees_pid1);
}

TEST_HARNESS_MAIN
