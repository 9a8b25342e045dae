// SPDX-License-Identifier: GPL-2.0
/*
 * ts_timens: a reader in a time namespace whose CLOCK_BOOTTIME is shifted
 * (unshare -T --boottime, CRIU's restore) gets the same words as any
 * other (the initial namespace's CLOCK_BOOTTIME, "Time namespaces" in the
 * uapi header), INFO tells it its offset, and libtaskstate's
 * taskstate_now_ns() applies it: a thread's age is right with a positive
 * and with a negative offset; also for a process that enters the
 * namespace with setns() after it opened the device, and for a child
 * forked into one after unshare(), each with the descriptor opened
 * before and no INFO since.
 *
 * Runs as root (CAP_SYS_ADMIN for unshare(CLONE_NEWTIME)) against a loaded
 * module, track_all=1 or 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "kselftest_harness.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

#define SLEEP_MS	1000

static uint64_t raw_boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * In a time namespace with a boottime offset of @offset_s, through @fd:
 * the library's clock is the words', and a sleeper's age is right.
 */
static int ages_right(int fd, bool track_all, long long offset_s)
{
	struct ts_sleeper s;
	uint64_t t0, w, now, since, age, raw;

	/* The process's own clock is shifted; the library's is not. */
	raw = raw_boottime_ns();
	now = taskstate_now_ns();
	CHILD_CHECK((int64_t)(raw - now) - offset_s * 1000000000LL < 1000000000LL &&
	      (int64_t)(raw - now) - offset_s * 1000000000LL > -1000000000LL);

	t0 = taskstate_now_ns();
	CHILD_CHECK(ts_sleeper_start(&s) == 0);
	if (!track_all)
		CHILD_CHECK(taskstate_track(fd, s.tid, false, NULL) == 0);
	CHILD_CHECK(ts_wait_state(fd, s.tid, TASKSTATE_SLEEPING, 10000) != 0);
	ts_sleep_ms(SLEEP_MS);
	w = ts_word_of(fd, s.tid);
	now = taskstate_now_ns();
	since = taskstate_since_ns(w);
	age = taskstate_age_ns(w, now);
	fprintf(stderr, "# offset %lld s: %s since %.3f s after the thread's creation, age %.3f s\n",
		offset_s, taskstate_state_name(taskstate_state(w)),
		((double)since - (double)t0) / 1e9, age / 1e9);
	CHILD_CHECK(taskstate_state(w) == TASKSTATE_SLEEPING);
	/* Asleep since after its creation, for at least the nap. */
	CHILD_CHECK(since >= t0 && since <= now);
	CHILD_CHECK(age >= (SLEEP_MS - 50) * 1000000ULL);
	ts_sleeper_stop(&s);
	return 0;
}

/* In the new time namespace: INFO's offset, and a sleeper's age. */
static int in_namespace(long long offset_s)
{
	struct taskstate_info info;
	int fd, ret;

	fd = taskstate_open();
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(taskstate_info(fd, &info) == 0);
	fprintf(stderr, "# offset %lld s: INFO says %lld ns\n", offset_s,
		(long long)info.boottime_offset_ns);
	CHILD_CHECK(info.boottime_offset_ns == offset_s * 1000000000LL);
	ret = ages_right(fd, info.track_all, offset_s);
	taskstate_close(fd);
	return ret;
}

/* Write the boottime offset for the namespace unshare() made. */
static int set_offset(long long offset_s)
{
	char buf[64];
	int fd, n, ok;

	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "boottime %lld 0", offset_s);
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static long long ts_offset_s;

static int in_namespace_arg(void *arg)
{
	return in_namespace(ts_offset_s);
}

static int child_fork(void *arg)
{
	long long offset_s = *(long long *)arg;

	if (unshare(CLONE_NEWTIME)) {
		fprintf(stderr, "# unshare(CLONE_NEWTIME): %s\n", strerror(errno));
		return errno == EINVAL ? CHILD_SKIP : 1;
	}
	CHILD_CHECK(set_offset(offset_s) == 0);
	ts_offset_s = offset_s;
	/* Only this process's children live in the new namespace. */
	return run_child(in_namespace_arg, NULL);
}

static void check_offset(struct __test_metadata *_metadata, long long off)
{
	int ret = run_child(child_fork, &off);

	if (ret == CHILD_SKIP)
		SKIP(return, "no time namespaces in this kernel (CONFIG_TIME_NS)");
	EXPECT_EQ(0, ret);
}

TEST(age_right_with_a_positive_boottime_offset)
{
	check_offset(_metadata, 100000);
}

/* As far back as the clock allows: half the uptime, at most 10 s. */
TEST(age_right_with_a_negative_boottime_offset)
{
	long long up = raw_boottime_ns() / 1000000000ULL / 2;

	ASSERT_LE(1, up) TH_LOG("booted less than 2 s ago");
	check_offset(_metadata, -(up < 10 ? up : 10));
}

/*
 * The library learns the offset when it opens the device, in the
 * namespace it is in then.  A process that moves to another namespace
 * afterwards, or a child forked into one, keeps using that descriptor,
 * with no INFO in between: its ages must be right there too.
 */
static int ts_moved_fd;
static bool ts_moved_track_all;

static int moved_child(void *arg)
{
	return ages_right(ts_moved_fd, ts_moved_track_all, ts_offset_s);
}

static int child_moves(void *arg)
{
	long long offset_s = ((long long *)arg)[0];
	bool by_setns = ((long long *)arg)[1];
	struct taskstate_info info;
	int nsfd, ret;

	/* Learnt here, in the namespace this test runs in. */
	ts_moved_fd = taskstate_open();
	CHILD_CHECK(ts_moved_fd >= 0);
	CHILD_CHECK(taskstate_info(ts_moved_fd, &info) == 0);
	ts_moved_track_all = info.track_all;
	CHILD_CHECK(info.boottime_offset_ns == 0);
	if (unshare(CLONE_NEWTIME)) {
		fprintf(stderr, "# unshare(CLONE_NEWTIME): %s\n", strerror(errno));
		return errno == EINVAL ? CHILD_SKIP : 1;
	}
	CHILD_CHECK(set_offset(offset_s) == 0);
	ts_offset_s = offset_s;
	if (!by_setns)
		return run_child(moved_child, NULL);
	/* This process, single-threaded as setns() wants, moves in. */
	nsfd = open("/proc/self/ns/time_for_children", O_RDONLY);
	CHILD_CHECK(nsfd >= 0);
	CHILD_CHECK(setns(nsfd, CLONE_NEWTIME) == 0);
	close(nsfd);
	ret = ages_right(ts_moved_fd, ts_moved_track_all, offset_s);
	taskstate_close(ts_moved_fd);
	return ret;
}

static void check_moved(struct __test_metadata *_metadata, bool by_setns)
{
	long long arg[2] = { 100000, by_setns };
	int ret = run_child(child_moves, arg);

	if (ret == CHILD_SKIP)
		SKIP(return, "no time namespaces in this kernel (CONFIG_TIME_NS)");
	EXPECT_EQ(0, ret);
}

TEST(age_right_after_setns_into_a_time_namespace)
{
	check_moved(_metadata, true);
}

TEST(age_right_in_a_child_forked_after_unshare)
{
	check_moved(_metadata, false);
}

TEST_HARNESS_MAIN
