// SPDX-License-Identifier: GPL-2.0
/*
 * ts_scope: a descriptor opened without privilege (uapi "DOC: Privilege")
 * sees its opener's process and descendants, and answers for any other
 * thread exactly as for a tid that names nothing.
 *
 * Runs as an unprivileged user: started as root it becomes nobody in each
 * test, keeping a privileged descriptor opened before (root's tools); it
 * may also be started as nobody directly, inside new user and pid
 * namespaces (run_vm.sh: setpriv and unshare -Urpf --mount-proc, and
 * bubblewrap), where the tests that need root's descriptor or a
 * set-user-ID program SKIP, saying so.
 *
 * Besides the tests' own processes, two processes outside every test's
 * scope: the harness's (the tests' parent) and a sibling forked by main()
 * before the tests, of the same user, which also receives a scoped
 * descriptor over SCM_RIGHTS and reports what it sees through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util.h"
#include "kselftest_harness.h"
#include "harness_filter.h"

#define NOBODY		65534

static pid_t sibling;		/* main()'s child, outside every scope */
static int sibling_sock = -1;	/* to it: scoped descriptors to check */

static long ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static long info_of(int fd, struct taskstate_info *info)
{
	memset(info, 0xcc, sizeof(*info));
	info->size = sizeof(*info);
	info->flags = 0;
	return ioc(fd, TASKSTATE_IOC_INFO, info);
}

static long track(int fd, unsigned long cmd, uint32_t id, uint32_t flags,
		  uint64_t *nr)
{
	struct taskstate_track a = {
		.size = sizeof(a), .flags = flags, .id = id,
		.nr_threads = 0xcccccccc,
	};
	long ret = ioc(fd, cmd, &a);

	if (nr)
		*nr = a.nr_threads;
	return ret;
}

/* SAMPLE of one tid, with totals: the call's value, the record filled. */
static long sample(int fd, uint32_t tid, struct taskstate_entry *e,
		   struct taskstate_totals *t)
{
	struct taskstate_sample a = {
		.size = sizeof(a), .count = 1,
		.entries = (uintptr_t)e, .totals = (uintptr_t)t,
	};
	long ret;

	memset(e, 0xcc, sizeof(*e));
	memset(t, 0xcc, sizeof(*t));
	e->tid = tid;
	ret = ioctl(fd, TASKSTATE_IOC_SAMPLE, &a);
	return ret < 0 ? -errno : ret;
}

static bool seen(int fd, uint32_t tid)
{
	struct taskstate_entry e;
	struct taskstate_totals t;

	return sample(fd, tid, &e, &t) == 1;
}

static long locate(int fd, uint32_t tid, struct taskstate_location *l)
{
	struct taskstate_locate a = {
		.size = sizeof(a), .count = 1, .locations = (uintptr_t)l,
	};
	long ret;

	memset(l, 0xcc, sizeof(*l));
	l->tid = tid;
	ret = ioctl(fd, TASKSTATE_IOC_LOCATE, &a);
	return ret < 0 ? -errno : ret;
}

static long process(int fd, uint32_t pid, struct taskstate_process *p)
{
	memset(p, 0xcc, sizeof(*p));
	p->size = sizeof(*p);
	p->flags = 0;
	p->pid = pid;
	return ioc(fd, TASKSTATE_IOC_PROCESS, p);
}

/* LIST of @pid (0: all) into @e: the call's value; filled and total. */
static long list(int fd, uint32_t pid, struct taskstate_entry *e,
		 uint32_t count, uint32_t *total)
{
	struct taskstate_list a = {
		.size = sizeof(a), .pid = pid, .count = count,
		.entries = (uintptr_t)e,
	};
	long ret = ioctl(fd, TASKSTATE_IOC_LIST, &a);

	*total = a.total;
	return ret < 0 ? -errno : ret;
}

static bool track_all_on(int fd)
{
	struct taskstate_info info;

	return !info_of(fd, &info) && info.track_all;
}

/* Root of the initial user namespace (its uid_map maps every uid)? */
static bool real_root(void)
{
	unsigned long inner, outer, count = 0;
	FILE *f = fopen("/proc/self/uid_map", "r");

	if (f) {
		if (fscanf(f, "%lu %lu %lu", &inner, &outer, &count) != 3)
			count = 0;
		fclose(f);
	}
	return geteuid() == 0 && count == 4294967295UL;
}

/*
 * Become nobody, if real root, and stay dumpable (a uid change makes a
 * process non-dumpable, which would take it out of its own scope):
 * 0, or -errno.
 */
static int become_user(void)
{
	if (real_root() &&
	    (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	     setresuid(NOBODY, NOBODY, NOBODY)))
		return -errno;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) ? -errno : 0;
}

/*
 * A child that waits in read() on @fds[0] and exits at EOF, holding no
 * other descriptor of its parent's (a scoped one it held would keep that
 * scope open).
 */
static pid_t waiting_child(int fds[2])
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(fds) || pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		if (dup2(fds[0], 0) < 0 || dup2(ready[1], 1) < 0 ||
		    close_range(3, ~0U, 0) || write(1, "x", 1) != 1)
			_exit(1);
		close(1);
		while (read(0, &c, 1) > 0)
			;
		_exit(0);
	}
	close(fds[0]);
	close(ready[1]);
	/* Its copies of the parent's descriptors closed. */
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

static void end_child(pid_t pid, int wfd)
{
	close(wfd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

FIXTURE(scope) {
	int fd;		/* scoped */
	int root_fd;	/* privileged, opened before the drop; or -1 */
	struct taskstate_info info;
};

#define SETUP_SKIP(fmt, ...)	SKIP(_exit(255), fmt, ##__VA_ARGS__)

FIXTURE_SETUP(scope)
{
	self->root_fd = -1;
	if (real_root())
		self->root_fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	if (self->root_fd >= 0) {
		ASSERT_EQ(0, info_of(self->root_fd, &self->info));
		ASSERT_EQ(TASKSTATE_SCOPE_ALL, self->info.scope);
	}
	ASSERT_EQ(0, become_user());
	self->fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SETUP_SKIP("%s: no such device, is taskstate loaded?",
			   taskstate_dev_path());
	if (self->fd < 0 && errno == EPERM && ts_unprivileged_on() == 0)
		SETUP_SKIP("unprivileged opens are switched off");
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, info_of(self->fd, &self->info));
	ASSERT_EQ(TASKSTATE_SCOPE_SELF, self->info.scope);
}

FIXTURE_TEARDOWN(scope)
{
	close(self->fd);
	if (self->root_fd >= 0)
		close(self->root_fd);
}

TEST_F(scope, info_says_the_descriptor_is_scoped)
{
	TH_LOG("uid %u, share %u threads, %u tracked now", getuid(),
	       self->info.scope_max_threads, self->info.scope_nr_tracked);
	EXPECT_LT(0, self->info.scope_max_threads);
	EXPECT_GE(self->info.max_threads / 2, self->info.scope_max_threads);
	EXPECT_EQ(TASKSTATE_ABI_VERSION, self->info.abi_version);
}

static void *park(void *arg)
{
	pause();
	return arg;
}

static void *park_briefly(void *arg)
{
	ts_sleep_ms(1);
	return arg;
}

TEST_F(scope, own_threads_are_tracked_sampled_and_listed)
{
	struct taskstate_entry e[64];
	struct taskstate_totals t;
	uint32_t total;
	pthread_t th;
	uint64_t nr;
	long n;
	int i;

	ASSERT_EQ(0, pthread_create(&th, NULL, park, NULL));
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS, &nr));
	EXPECT_EQ(2, nr);
	ASSERT_EQ(1, sample(self->fd, ts_gettid(), &e[0], &t));
	EXPECT_EQ(getpid(), e[0].tgid);
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(e[0].word));
	n = list(self->fd, 0, e, 64, &total);
	ASSERT_EQ(2, n) TH_LOG("LIST: %ld of %u", n, total);
	EXPECT_EQ(2, total);
	for (i = 0; i < n; i++)
		EXPECT_EQ(getpid(), e[i].tgid);
	n = list(self->fd, getpid(), e, 64, &total);
	EXPECT_EQ(2, n);
	pthread_cancel(th);
	pthread_join(th, NULL);
}

/*
 * Every call naming @tid answers as for @none, a pid that names nothing:
 * the same value, errno and out fields.
 */
static int same_as_nothing(int fd, uint32_t tid, uint32_t none)
{
	struct taskstate_entry e1, e2, l1[4];
	struct taskstate_info before, after;
	struct taskstate_totals t1, t2;
	struct taskstate_location a, b;
	struct taskstate_process p1, p2;
	uint32_t total1, total2;
	uint64_t nr1, nr2;
	int f;

	CHILD_EQ(0, info_of(fd, &before));
	CHILD_EQ(sample(fd, none, &e2, &t2), sample(fd, tid, &e1, &t1));
	CHILD_EQ(e2.tgid, e1.tgid);
	CHILD_EQ(e2.word, e1.word);
	CHILD_CHECK(!memcmp(&t1, &t2, sizeof(t1)));
	CHILD_EQ(locate(fd, none, &b), locate(fd, tid, &a));
	CHILD_EQ(b.tgid, a.tgid);
	CHILD_EQ(b.index, a.index);
	CHILD_EQ(b.gen, a.gen);
	for (f = 0; f <= TASKSTATE_TRACK_PROCESS; f += TASKSTATE_TRACK_PROCESS) {
		CHILD_EQ(track(fd, TASKSTATE_IOC_TRACK, none, f, &nr2),
			 track(fd, TASKSTATE_IOC_TRACK, tid, f, &nr1));
		CHILD_EQ(nr2, nr1);
		CHILD_EQ(track(fd, TASKSTATE_IOC_UNTRACK, none, f, &nr2),
			 track(fd, TASKSTATE_IOC_UNTRACK, tid, f, &nr1));
		CHILD_EQ(nr2, nr1);
	}
	CHILD_EQ(process(fd, none, &p2), process(fd, tid, &p1));
	CHILD_EQ(list(fd, none, l1, 4, &total2), list(fd, tid, l1, 4, &total1));
	CHILD_EQ(total2, total1);
	CHILD_EQ(0, total1);
	/*
	 * Nothing was charged for it either.  (Fewer is fine: a thread this
	 * user tracked before, ended, is released at its free, an RCU grace
	 * period later, which a loaded host can put in this window: seen in
	 * CI on i686, 2 before and 1 after.)
	 */
	CHILD_EQ(0, info_of(fd, &after));
	CHILD_CHECK(after.scope_nr_tracked <= before.scope_nr_tracked);
	return 0;
}

/*
 * With root's descriptor, make @pid's process tracked for root (with
 * track_all it is): what the scoped descriptor must then not show is
 * there to be shown.  Returns whether root tracks it.
 */
static bool root_tracks(int root_fd, pid_t pid)
{
	if (root_fd < 0)
		return false;
	if (!track_all_on(root_fd) &&
	    track(root_fd, TASKSTATE_IOC_TRACK, pid, TASKSTATE_TRACK_PROCESS,
		  NULL))
		return false;
	return seen(root_fd, pid);
}

static void root_untracks(int root_fd, pid_t pid)
{
	if (root_fd >= 0 && !track_all_on(root_fd))
		track(root_fd, TASKSTATE_IOC_UNTRACK, pid,
		      TASKSTATE_TRACK_PROCESS, NULL);
}

TEST_F(scope, foreign_threads_answer_as_tids_that_do_not_exist)
{
	uint32_t none = ts_reaped_pid();
	uint32_t foreign[] = { getppid(), sibling, 1 };
	unsigned int i;

	ASSERT_LT(0, sibling);
	ASSERT_LT(0, (pid_t)none);
	/* The premise, with root's descriptor: root tracks them. */
	for (i = 0; self->root_fd >= 0 && i < ARRAY_SIZE(foreign); i++) {
		uint32_t tid = foreign[i];

		EXPECT_TRUE(root_tracks(self->root_fd, tid))
			TH_LOG("root does not track %u", tid);
	}
	for (i = 0; i < ARRAY_SIZE(foreign); i++) {
		uint32_t tid = foreign[i];

		EXPECT_EQ(0, same_as_nothing(self->fd, tid, none))
			TH_LOG("tid %u (%s) told apart from a free pid", tid,
			       tid == (uint32_t)sibling ? "a sibling process" :
			       "an ancestor");
	}
	/* The premise still: they exist, and nothing changed for root. */
	EXPECT_EQ(0, kill(sibling, 0));
	if (self->root_fd >= 0) {
		EXPECT_TRUE(seen(self->root_fd, sibling));
		for (i = 0; i < ARRAY_SIZE(foreign); i++)
			root_untracks(self->root_fd, foreign[i]);
	}
}

TEST_F(scope, list_shows_no_foreign_thread)
{
	struct taskstate_entry *e;
	uint32_t total, n = 65536;
	long got;
	long i;

	e = calloc(n, sizeof(*e));
	ASSERT_TRUE(e != NULL);
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS, NULL));
	/* Foreign threads there to be listed, with root's descriptor. */
	root_tracks(self->root_fd, sibling);
	root_tracks(self->root_fd, getppid());
	got = list(self->fd, 0, e, n, &total);
	ASSERT_LE(1, got);
	EXPECT_EQ(got, total);
	for (i = 0; i < got; i++)
		EXPECT_EQ(getpid(), e[i].tgid) TH_LOG("entry %ld: tid %u",
						      i, e[i].tid);
	if (self->root_fd >= 0) {
		got = list(self->root_fd, 0, e, n, &total);
		TH_LOG("root's descriptor lists %ld threads, this one 1", got);
		EXPECT_LT(1, got);
		root_untracks(self->root_fd, sibling);
		root_untracks(self->root_fd, getppid());
	}
	free(e);
}

/* Threads that come and go in a child, its children too, for @ms. */
static void churn(unsigned int ms)
{
	uint64_t end = mono_ns() + ms * 1000000ULL;
	pthread_t th;
	pid_t pid;

	while (mono_ns() < end) {
		pid = fork();
		if (!pid) {
			if (!pthread_create(&th, NULL, park_briefly, NULL))
				pthread_join(th, NULL);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
}

/*
 * Scoped LIST walks up from each listed thread to its scope: while
 * threads of the scope exit, are released and their parents reaped, over
 * and over.  A walk from a released thread would read its freed parent
 * (a debug kernel's KASAN says so); the test asserts that no listed
 * entry is a foreign process's, and that the kernel stays up.
 */
TEST_F(scope, list_while_the_scope_churns)
{
	struct taskstate_entry *e;
	uint32_t total, n = 4096;
	unsigned int lists = 0;
	uint64_t end;
	pid_t churner;
	long got, i;

	e = calloc(n, sizeof(*e));
	ASSERT_TRUE(e != NULL);
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS, NULL));
	churner = fork();
	ASSERT_LE(0, churner);
	if (!churner) {
		churn(2000);
		_exit(0);
	}
	end = mono_ns() + 2000000000ULL;
	while (mono_ns() < end) {
		got = list(self->fd, 0, e, n, &total);
		ASSERT_LE(0, got);
		for (i = 0; i < got; i++) {
			ASSERT_NE(0, e[i].tgid);
			ASSERT_NE((uint32_t)sibling, e[i].tgid);
			ASSERT_NE((uint32_t)getppid(), e[i].tgid);
		}
		lists++;
	}
	waitpid(churner, NULL, 0);
	TH_LOG("%u scoped LISTs while the scope churned", lists);
	EXPECT_LT(0, lists);
	free(e);
}

TEST_F(scope, children_are_in_scope_until_orphaned)
{
	int fds[2], back[2], go[2];
	pid_t child, grandchild;
	char c;

	ASSERT_EQ(0, pipe(back));
	ASSERT_EQ(0, pipe(go));
	child = waiting_child(fds);
	ASSERT_LT(0, child);
	EXPECT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, child,
			   TASKSTATE_TRACK_PROCESS, NULL));
	EXPECT_TRUE(seen(self->fd, child));
	end_child(child, fds[1]);

	/* A grandchild whose parent exits: adopted, out of the scope. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		grandchild = fork();
		if (!grandchild) {
			pause();
			_exit(0);
		}
		if (write(back[1], &grandchild, sizeof(grandchild)) < 0)
			_exit(1);
		if (read(go[0], &c, 1) < 0)	/* until told */
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(sizeof(grandchild), read(back[0], &grandchild,
					   sizeof(grandchild)));
	EXPECT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, grandchild, 0,
			   NULL));
	EXPECT_TRUE(seen(self->fd, grandchild)) TH_LOG("a grandchild");
	ASSERT_EQ(1, write(go[1], "x", 1));
	waitpid(child, NULL, 0);
	EXPECT_EQ(0, same_as_nothing(self->fd, grandchild, ts_reaped_pid()))
		TH_LOG("an orphan, adopted by its reaper");
	kill(grandchild, SIGKILL);
}

TEST_F(scope, untrack_ends_only_its_own_tracking)
{
	pid_t tid = ts_gettid();
	uint64_t nr;

	if (track_all_on(self->fd)) {
		/* Root's (track_all): a scoped UNTRACK changes nothing. */
		ASSERT_TRUE(seen(self->fd, tid));
		ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_UNTRACK, tid, 0,
				   &nr));
		EXPECT_EQ(0, nr);
		EXPECT_TRUE(seen(self->fd, tid));
		return;
	}
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, tid, 0, &nr));
	EXPECT_EQ(1, nr);
	EXPECT_TRUE(seen(self->fd, tid));
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_UNTRACK, tid, 0, &nr));
	EXPECT_EQ(1, nr);
	EXPECT_FALSE(seen(self->fd, tid));
	if (self->root_fd < 0)
		return;
	/* Root's TRACK makes it root's: the scoped UNTRACK leaves it. */
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, tid, 0, NULL));
	ASSERT_EQ(0, track(self->root_fd, TASKSTATE_IOC_TRACK, tid, 0, NULL));
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_UNTRACK, tid, 0, &nr));
	EXPECT_EQ(0, nr);
	EXPECT_TRUE(seen(self->root_fd, tid));
	ASSERT_EQ(0, track(self->root_fd, TASKSTATE_IOC_UNTRACK, tid, 0, &nr));
	EXPECT_EQ(1, nr);
}

TEST_F(scope, close_ends_what_it_tracked)
{
	pid_t tid = ts_gettid(), child;
	int fd2, fds[2];

	if (track_all_on(self->fd))
		SKIP(return, "with track_all every thread is root's");
	fd2 = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, track(fd2, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS, NULL));
	EXPECT_TRUE(seen(self->fd, tid));
	/* A child, tracked by inheritance: the descriptor's too. */
	child = waiting_child(fds);
	ASSERT_LT(0, child);
	EXPECT_TRUE(seen(self->fd, child));
	close(fd2);
	EXPECT_FALSE(seen(self->fd, tid));
	EXPECT_FALSE(seen(self->fd, child));
	end_child(child, fds[1]);
}

TEST_F(scope, root_adopting_a_thread_drops_the_scopes_inheritance)
{
	pid_t tid = ts_gettid(), child;
	int fds[2];

	if (track_all_on(self->fd))
		SKIP(return, "with track_all every thread is root's");
	if (self->root_fd < 0)
		SKIP(return, "needs root's descriptor (started as root)");
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS, NULL));
	child = waiting_child(fds);
	ASSERT_LT(0, child);
	EXPECT_TRUE(seen(self->root_fd, child)) TH_LOG("inherited");
	end_child(child, fds[1]);
	/* Root's TRACK of the thread, alone: root's, without inheritance. */
	ASSERT_EQ(0, track(self->root_fd, TASKSTATE_IOC_TRACK, tid, 0, NULL));
	child = waiting_child(fds);
	ASSERT_LT(0, child);
	EXPECT_FALSE(seen(self->root_fd, child))
		TH_LOG("a child of root's slot, tracked with the scope's inheritance, charged to no one");
	end_child(child, fds[1]);
	/* And the scope's close leaves root's tracking. */
	close(self->fd);
	self->fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	EXPECT_TRUE(seen(self->root_fd, tid));
	track(self->root_fd, TASKSTATE_IOC_UNTRACK, tid, 0, NULL);
}

/* /proc/@pid/status's effective uid, or -1. */
static long euid_of(pid_t pid)
{
	char path[64], line[256];
	long uid = -1, r, e;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld %ld", &r, &e) == 2)
			uid = e;
	fclose(f);
	return uid;
}

/* /proc/@pid/comm is @comm (an exec happened), within 5 s. */
static bool wait_comm(pid_t pid, const char *comm)
{
	char path[64], buf[64];
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	for (i = 0; i < 500; i++) {
		fd = open(path, O_RDONLY);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n - 1] = 0;
			if (!strcmp(buf, comm))
				return true;
		}
		ts_sleep_ms(10);
	}
	return false;
}

static pid_t spawn(const char *path, char *const argv[])
{
	pid_t pid = fork();

	if (!pid) {
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

TEST_F(scope, plain_exec_stays_in_scope_set_user_id_exec_leaves)
{
	char *const plain[] = { "sleep", "30", NULL };
	const char *suid = getenv("TS_SUID_SELF");
	char *const sargv[] = { "ts_scope", "--pause", NULL };
	struct stat st;
	pid_t pid;

	pid = spawn("/bin/sleep", plain);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(wait_comm(pid, "sleep"));
	EXPECT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, pid, 0, NULL));
	EXPECT_TRUE(seen(self->fd, pid)) TH_LOG("after a plain exec");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	if (!suid || stat(suid, &st) || !(st.st_mode & S_ISUID) ||
	    st.st_uid == getuid())
		SKIP(return, "no set-user-ID copy of this program owned by another user (TS_SUID_SELF)");
	pid = spawn(suid, sargv);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(wait_comm(pid, strrchr(suid, '/') ? strrchr(suid, '/') + 1 : suid));
	if (euid_of(pid) == (long)getuid()) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		SKIP(return, "the set-user-ID bit is ignored here (nosuid, or its owner is not mapped in this user namespace)");
	}
	TH_LOG("%s: euid %ld", suid, euid_of(pid));
	EXPECT_EQ(0, same_as_nothing(self->fd, pid, ts_reaped_pid()));
	if (self->root_fd >= 0 && track_all_on(self->root_fd))
		EXPECT_TRUE(seen(self->root_fd, pid));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST_F(scope, non_dumpable_process_leaves_the_scope)
{
	int fds[2], ready[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(fds[1]);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		if (write(ready[1], "x", 1) != 1 || read(fds[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[0]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	if (self->root_fd >= 0)
		EXPECT_TRUE(root_tracks(self->root_fd, pid));
	EXPECT_EQ(0, same_as_nothing(self->fd, pid, ts_reaped_pid()));
	root_untracks(self->root_fd, pid);
	end_child(pid, fds[1]);
}

/*
 * The sibling's side: a scoped descriptor received, what it sees
 * through it.  Its byte back: 0 as expected, else which check failed.
 */
static char sibling_check(int fd, pid_t sender)
{
	struct taskstate_info info;

	if (info_of(fd, &info) || info.scope != TASKSTATE_SCOPE_SELF)
		return 1;
	if (!seen(fd, sender))
		return 2;
	if (same_as_nothing(fd, getpid(), ts_reaped_pid()))
		return 3;
	return 0;
}

static void sibling_serve(int sock)
{
	char buf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { &c, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof(buf),
	};
	pid_t sender;
	int fd;

	if (become_user())
		_exit(1);
	for (;;) {
		m.msg_controllen = sizeof(buf);
		if (recvmsg(sock, &m, 0) <= 0)
			_exit(0);
		if (!CMSG_FIRSTHDR(&m))
			_exit(1);
		memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(fd));
		if (read(sock, &sender, sizeof(sender)) != sizeof(sender))
			_exit(1);
		c = sibling_check(fd, sender);
		close(fd);
		if (write(sock, &c, 1) != 1)
			_exit(1);
	}
}

TEST_F(scope, descriptor_passed_over_scm_rights_keeps_its_scope)
{
	char buf[CMSG_SPACE(sizeof(int))], c = 0;
	struct iovec iov = { &c, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof(buf),
	};
	struct cmsghdr *cm;
	pid_t me = ts_gettid();

	ASSERT_LE(0, sibling_sock);
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, me, 0, NULL));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &self->fd, sizeof(int));
	ASSERT_EQ(1, sendmsg(sibling_sock, &m, 0));
	ASSERT_EQ(sizeof(me), write(sibling_sock, &me, sizeof(me)));
	ASSERT_EQ(1, read(sibling_sock, &c, 1));
	EXPECT_EQ(0, c) TH_LOG("the receiver's check %d failed (1 INFO, 2 the sender unseen, 3 its own process seen)",
			      c);
}

/* Threads parked until @stop, for the exhaustion test. */
struct parked {
	pthread_t *th;
	unsigned int nr;
	int stop[2];
};

static void *park_on(void *arg)
{
	char c;

	return read(*(int *)arg, &c, 1) < 0 ? arg : NULL;
}

static int park_many(struct parked *p, unsigned int nr)
{
	pthread_attr_t a;

	p->nr = 0;
	p->th = NULL;
	if (pipe(p->stop))
		return -errno;
	p->th = calloc(nr, sizeof(*p->th));
	if (!p->th)
		return -ENOMEM;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (p->nr = 0; p->nr < nr; p->nr++)
		if (pthread_create(&p->th[p->nr], &a, park_on, &p->stop[0]))
			break;
	pthread_attr_destroy(&a);
	return p->nr == nr ? 0 : -EAGAIN;
}

static void unpark(struct parked *p)
{
	unsigned int i;

	close(p->stop[1]);
	for (i = 0; i < p->nr; i++)
		pthread_join(p->th[i], NULL);
	close(p->stop[0]);
	free(p->th);
}

TEST_F(scope, a_user_stops_at_its_share_and_root_still_tracks)
{
	struct taskstate_info info, rinfo;
	unsigned int share = self->info.scope_max_threads;
	struct parked p;
	pid_t extra;
	int fds[2];
	long ret;

	if (track_all_on(self->fd))
		SKIP(return, "with track_all every thread is root's, charged to no user");
	if (self->root_fd < 0)
		SKIP(return, "needs root's descriptor (started as root)");
	if (share > 20000)
		SKIP(return, "a share of %u threads: more than this test starts", share);
	if (park_many(&p, share + 8)) {
		unpark(&p);
		SKIP(return, "cannot start %u threads here (threads-max, RLIMIT_NPROC?)",
		     share + 8);
	}
	ret = track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
		    TASKSTATE_TRACK_PROCESS, NULL);
	EXPECT_EQ(-ENOSPC, ret);
	ASSERT_EQ(0, info_of(self->fd, &info));
	EXPECT_EQ(share, info.scope_nr_tracked);
	TH_LOG("share %u of %u: TRACK of %u threads stopped at %u, ENOSPC",
	       share, info.max_threads, share + 9, info.scope_nr_tracked);
	/* Root's tools: a new process tracked through root's descriptor. */
	extra = waiting_child(fds);
	ASSERT_LT(0, extra);
	EXPECT_EQ(0, track(self->root_fd, TASKSTATE_IOC_TRACK, extra, 0,
			   NULL));
	EXPECT_TRUE(seen(self->root_fd, extra));
	ASSERT_EQ(0, info_of(self->root_fd, &rinfo));
	/* Closing the scoped descriptor ends what it tracked. */
	close(self->fd);
	self->fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, info_of(self->fd, &info));
	EXPECT_EQ(0, info.scope_nr_tracked);
	/* Less what it tracked: another thread may end meanwhile, none come. */
	ASSERT_EQ(0, info_of(self->root_fd, &info));
	EXPECT_GE(rinfo.nr_tracked - share, info.nr_tracked);
	track(self->root_fd, TASKSTATE_IOC_UNTRACK, extra, 0, NULL);
	end_child(extra, fds[1]);
	unpark(&p);
}

/* @tid's location through @fd, if its entry is in @fd's mapping. */
static bool located(int fd, pid_t tid, struct taskstate_location *l)
{
	return locate(fd, tid, l) == 1 && l->index != TASKSTATE_LOCATE_NONE;
}

/* The same, trying for 5 s: a thread on a CPU cannot move (uapi). */
static bool located_soon(int fd, pid_t tid, struct taskstate_location *l)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (located(fd, tid, l))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Read every byte of a scoped mapping, and every entry a thread owns in
 * it, which must be one of the @nr in @own (the scope's threads, located
 * through it): any other is a thread the scope may not see.  Returns the
 * owned entries, or -1 for a stranger.
 */
static int scan_for_strangers(struct __test_metadata *_metadata,
			      const struct taskstate_mapping *m,
			      const struct taskstate_location *own, int nr)
{
	const unsigned char *p = (const void *)m->entries;
	unsigned long sum = 0;
	uint32_t i, tid, gen;
	int j, owned = 0;
	uint64_t word;
	size_t b;

	for (b = 0; b < m->size; b++)
		sum += __atomic_load_n(&p[b], __ATOMIC_RELAXED);
	TH_LOG("%zu bytes read, %u entries", m->size, m->nr);
	for (i = 0; i < m->nr; i++) {
		if (taskstate_mapping_scan(m, i, &tid, &word, &gen))
			continue;
		for (j = 0; j < nr; j++)
			if (own[j].index == i && own[j].gen == gen)
				break;
		if (j == nr) {
			TH_LOG("entry %u: tid %u, gen %u, word %#llx: no thread of the scope's (sum %lu)",
			       i, tid, gen, (unsigned long long)word, sum);
			return -1;
		}
		owned++;
	}
	return owned;
}

TEST_F(scope, mapping_shows_its_threads_live)
{
	struct taskstate_location own[2];
	struct taskstate_mapping m;
	struct taskstate_totals t;
	struct taskstate_entry e;
	uint64_t w1, w2 = 0;
	bool all = track_all_on(self->fd);
	int fds[2], i;
	pid_t pid;

	if (!all)
		ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
				   TASKSTATE_TRACK_PROCESS, NULL));
	pid = waiting_child(fds);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	EXPECT_EQ(m.size / sizeof(struct taskstate_map_entry), m.nr);
	/* This thread moves itself; the child asleep in read() is moved. */
	ASSERT_TRUE(located(self->fd, getpid(), &own[0]));
	ASSERT_TRUE(located_soon(self->fd, pid, &own[1]));
	ASSERT_EQ(0, taskstate_mapping_read(&m, &own[0], &w1, NULL));
	EXPECT_EQ(TASKSTATE_RUNNING, taskstate_state(w1));
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(0, taskstate_mapping_read(&m, &own[1], &w1, &t));
		if (taskstate_state(w1) == TASKSTATE_SLEEPING)
			break;
		usleep(10000);
	}
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w1));
	/* Live: woken by a byte, the child sleeps again, from a later time. */
	usleep(20000);
	ASSERT_EQ(1, write(fds[1], "x", 1));
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(0, taskstate_mapping_read(&m, &own[1], &w2, &t));
		if (taskstate_state(w2) == TASKSTATE_SLEEPING &&
		    taskstate_since_ns(w2) != taskstate_since_ns(w1))
			break;
		usleep(10000);
	}
	EXPECT_EQ(TASKSTATE_SLEEPING, taskstate_state(w2));
	EXPECT_LT(taskstate_since_ns(w1), taskstate_since_ns(w2));
	/* The word the ioctls give, from the same entry. */
	ASSERT_EQ(1, sample(self->fd, pid, &e, &t));
	EXPECT_EQ(w2, e.word);
	EXPECT_EQ(2, scan_for_strangers(_metadata, &m, own, 2));
	taskstate_mapping_close(&m);
	end_child(pid, fds[1]);
}

/*
 * With threads outside the scope tracked (track_all, or root's TRACK of
 * the sibling and of the harness), a scan of the whole mapping finds this
 * process's entry and nothing else, and they cannot be brought in.
 */
TEST_F(scope, mapping_holds_no_foreign_entry)
{
	struct taskstate_location own[1], l;
	struct taskstate_mapping m;

	if (self->root_fd >= 0) {
		EXPECT_TRUE(root_tracks(self->root_fd, sibling));
		EXPECT_TRUE(root_tracks(self->root_fd, getppid()));
	}
	if (!track_all_on(self->fd))
		ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(), 0,
				   NULL));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	ASSERT_TRUE(located(self->fd, getpid(), &own[0]));
	EXPECT_EQ(0, locate(self->fd, sibling, &l));
	EXPECT_EQ(TASKSTATE_LOCATE_NONE, l.index);
	EXPECT_EQ(0, locate(self->fd, getppid(), &l));
	EXPECT_EQ(TASKSTATE_LOCATE_NONE, l.index);
	EXPECT_EQ(1, scan_for_strangers(_metadata, &m, own, 1));
	taskstate_mapping_close(&m);
	root_untracks(self->root_fd, sibling);
	root_untracks(self->root_fd, getppid());
}

/* @pid's first child, waited for up to 5 s; -1 if none came. */
static pid_t child_of(pid_t pid)
{
	char path[64];
	long child;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	for (i = 0; i < 500; i++) {
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%ld", &child) == 1) {
				fclose(f);
				return child;
			}
			fclose(f);
		}
		usleep(10000);
	}
	return -1;
}

/*
 * A child that, once it reads a byte from @gate (the parent keeps the
 * write end, gate[1]), execs the set-user-ID copy @suid with
 * --fork-pause.
 */
static pid_t fork_suid(const char *suid, int gate[2])
{
	pid_t pid = ts_fork_gated(gate);

	if (pid)
		return pid;
	execl(suid, "ts_scope", "--fork-pause", (char *)NULL);
	_exit(127);
}

/*
 * Did @pid's exec of @suid change its euid?  1 yes, 0 no (the bit was
 * ignored: @pid is killed and reaped), -1 it never became @suid.
 */
static int suid_took(pid_t pid, const char *suid)
{
	if (!wait_comm(pid, strrchr(suid, '/') ? strrchr(suid, '/') + 1 : suid))
		return -1;
	if (euid_of(pid) != (long)getuid())
		return 1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

#define SUID_IGNORED "the set-user-ID bit is ignored here (nosuid, or its owner is not mapped in this user namespace)"

TEST_F(scope, set_user_id_exec_leaves_the_mapping)
{
	const char *suid = getenv("TS_SUID_SELF");
	struct taskstate_location own[1], child;
	struct taskstate_mapping m;
	pid_t pid, grandchild;
	int took;
	int gate[2];
	uint64_t w;
	struct stat st;

	if (!suid || stat(suid, &st) || !(st.st_mode & S_ISUID) ||
	    st.st_uid == getuid())
		SKIP(return, "no set-user-ID copy of this program owned by another user (TS_SUID_SELF)");
	if (!track_all_on(self->fd))
		ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
				   TASKSTATE_TRACK_PROCESS, NULL));
	ASSERT_EQ(0, taskstate_mapping_open(self->fd, &m));
	ASSERT_TRUE(located(self->fd, getpid(), &own[0]));
	pid = fork_suid(suid, gate);
	ASSERT_LT(0, pid);
	close(gate[0]);
	ASSERT_TRUE(located_soon(self->fd, pid, &child));
	ASSERT_EQ(0, taskstate_mapping_read(&m, &child, &w, NULL));
	ASSERT_EQ(1, write(gate[1], "x", 1));
	close(gate[1]);
	took = suid_took(pid, suid);
	ASSERT_LE(0, took);
	if (!took) {
		taskstate_mapping_close(&m);
		SKIP(return, SUID_IGNORED);
	}
	/*
	 * Its entry moved out at the exec: gone from the mapping, and the
	 * child it forks since is not put there either.
	 */
	grandchild = child_of(pid);
	EXPECT_LT(0, grandchild);
	EXPECT_EQ(-ESRCH, taskstate_mapping_read(&m, &child, &w, NULL));
	EXPECT_EQ(1, scan_for_strangers(_metadata, &m, own, 1));
	if (self->root_fd >= 0 && track_all_on(self->root_fd))
		EXPECT_TRUE(seen(self->root_fd, pid));
	if (grandchild > 0)
		kill(grandchild, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	taskstate_mapping_close(&m);
}

/* Has @pid exited (a zombie, or gone)?  Waited for up to 5 s. */
static bool exited_soon(pid_t pid)
{
	char path[64], state;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (i = 0; i < 500; i++) {
		f = fopen(path, "r");
		if (!f)
			return true;
		state = 0;
		if (fscanf(f, "%*d %*s %c", &state) != 1)
			state = 0;
		fclose(f);
		if (state == 'Z' || state == 'X')
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The log of exits keeps to the scope: a plain child's exit is logged,
 * a set-user-ID child's and its own child's are not (uapi "DOC: Thread
 * exits").
 */
TEST_F(scope, set_user_id_exec_leaves_the_exit_log)
{
	const char *suid = getenv("TS_SUID_SELF");
	struct taskstate_exit e[16];
	pid_t plain, pid, grandchild;
	bool saw_plain = false;
	struct stat st;
	int took;
	int gate[2], i;
	uint64_t lost;
	long n;

	if (!suid || stat(suid, &st) || !(st.st_mode & S_ISUID) ||
	    st.st_uid == getuid())
		SKIP(return, "no set-user-ID copy of this program owned by another user (TS_SUID_SELF)");
	ASSERT_EQ(0, track(self->fd, TASKSTATE_IOC_TRACK, getpid(),
			   TASKSTATE_TRACK_PROCESS | TASKSTATE_TRACK_EXITS,
			   NULL));
	plain = fork();
	ASSERT_LE(0, plain);
	if (!plain)
		_exit(0);
	ASSERT_EQ(plain, waitpid(plain, NULL, 0));
	pid = fork_suid(suid, gate);
	ASSERT_LT(0, pid);
	close(gate[0]);
	ASSERT_EQ(1, write(gate[1], "x", 1));
	close(gate[1]);
	took = suid_took(pid, suid);
	ASSERT_LE(0, took);
	if (!took)
		SKIP(return, SUID_IGNORED);
	grandchild = child_of(pid);
	EXPECT_LT(0, grandchild);
	if (grandchild > 0)
		kill(grandchild, SIGKILL);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	if (grandchild > 0)
		EXPECT_TRUE(exited_soon(grandchild));
	n = ts_take_exits(self->fd, e, ARRAY_SIZE(e), &lost);
	ASSERT_LE(0, n);
	EXPECT_EQ(0, lost);
	for (i = 0; i < n; i++) {
		TH_LOG("logged: %u of %u, %s", e[i].tid, e[i].tgid, e[i].comm);
		saw_plain |= e[i].tgid == (uint32_t)plain;
		EXPECT_NE((uint32_t)pid, e[i].tgid);
		EXPECT_NE((uint32_t)grandchild, e[i].tgid);
	}
	EXPECT_TRUE(saw_plain);
}

/*
 * The switch, run by name after the administrator turned it off and on:
 * an unprivileged open follows the parameter at the time of the open.
 */
TEST(open_follows_the_unprivileged_switch)
{
	int on = ts_unprivileged_on();
	int fd;

	ASSERT_LE(0, on);
	ASSERT_EQ(0, become_user());
	fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	TH_LOG("unprivileged=%d: open %s", on, fd < 0 ? strerror(errno) : "ok");
	if (on) {
		EXPECT_LE(0, fd);
	} else {
		EXPECT_EQ(-1, fd);
		EXPECT_EQ(EPERM, errno);
	}
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	int sv[2];

	/* The set-user-ID copy's part: wait to be looked at. */
	if (argc == 2 && !strcmp(argv[1], "--pause")) {
		pause();
		return 0;
	}
	/* The same, with a child of its own. */
	if (argc == 2 && !strcmp(argv[1], "--fork-pause")) {
		if (!fork())
			pause();
		pause();
		return 0;
	}
	/*
	 * --nobody CMD...: run CMD as nobody, for guests whose setpriv
	 * (busybox's) cannot change ids.
	 */
	if (argc > 2 && !strcmp(argv[1], "--nobody")) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY)) {
			perror("ts_scope --nobody");
			return 1;
		}
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		return 127;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		sibling = fork();
		if (!sibling) {
			close(sv[0]);
			sibling_serve(sv[1]);
		}
		close(sv[1]);
		sibling_sock = sibling > 0 ? sv[0] : -1;
	}
	return ts_harness_main(argc, argv, NULL);
}
