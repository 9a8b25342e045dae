// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of libtaskstate: needs no module.  The calls that
 * reach the kernel run against a device that knows no ioctl (/dev/null);
 * the mapping's readers against entries built here.  TAP, by test.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"
#include "test.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static void test_decode(void)
{
	const uint64_t top = TASKSTATE_TIME_MASK;	/* 2^61 - 1 */
	struct taskstate_decoded d;

	taskstate_decode(taskstate_pack(TASKSTATE_BLOCKED, 1000), 5000, &d);
	CHECK(d.state == TASKSTATE_BLOCKED);
	CHECK(d.since_ns == 1000);
	CHECK(d.age_ns == 4000);

	taskstate_decode(0, 12345, &d);
	CHECK(d.state == TASKSTATE_NONE && d.since_ns == 0);

	taskstate_decode(taskstate_pack(TASKSTATE_DEAD, UINT64_MAX), top, &d);
	CHECK(d.state == TASKSTATE_DEAD);
	CHECK(d.since_ns == top);
	CHECK(d.age_ns == 0);

	/* Stamped 11 ns before the time field wraps, read 16 ns later. */
	taskstate_decode(taskstate_pack(TASKSTATE_SLEEPING, top - 10), top + 6, &d);
	CHECK(d.state == TASKSTATE_SLEEPING);
	CHECK(d.since_ns == top - 10);
	CHECK(d.age_ns == 16);
	/* Same, with a clock past 2^62: only the low 61 bits count. */
	taskstate_decode(taskstate_pack(TASKSTATE_SLEEPING, top - 10),
			 (3ULL << 61) + 5, &d);
	CHECK(d.age_ns == 16);

	CHECK(taskstate_now_ns() > 0);
}

/*
 * taskstate_totals_at() adds the current state's age to its total, but a
 * dead thread's time counts in none: its totals stop at its death.
 */
static void test_totals_at_stop_at_death(void)
{
	struct taskstate_totals t = { .start_ns = 500 };
	uint64_t at[TASKSTATE_MAP_NR_TOTALS];

	t.state_ns[TASKSTATE_TOTAL_RUNNING] = 300;
	t.state_ns[TASKSTATE_TOTAL_SLEEPING] = 200;
	/* Asleep since 1000, read at 5000: 4000 more ns of SLEEPING. */
	taskstate_totals_at(taskstate_pack(TASKSTATE_SLEEPING, 1000), &t, 5000, at);
	CHECK(at[TASKSTATE_TOTAL_SLEEPING] == 4200);
	CHECK(at[TASKSTATE_TOTAL_OTHER] == 0);
	/* Dead since 1000, read at 5000: nothing more, in any total. */
	taskstate_totals_at(taskstate_pack(TASKSTATE_DEAD, 1000), &t, 5000, at);
	CHECK(at[TASKSTATE_TOTAL_RUNNING] == 300);
	CHECK(at[TASKSTATE_TOTAL_SLEEPING] == 200);
	CHECK(at[TASKSTATE_TOTAL_OTHER] == 0);
	/* Stopped counts in OTHER. */
	taskstate_totals_at(taskstate_pack(TASKSTATE_STOPPED, 1000), &t, 5000, at);
	CHECK(at[TASKSTATE_TOTAL_OTHER] == 4000);
}

static void test_state_names(void)
{
	unsigned int s;

	/* The uapi header's spelling, the names of the constants. */
	CHECK_STR(taskstate_state_name(TASKSTATE_NONE), "NONE");
	CHECK_STR(taskstate_state_name(TASKSTATE_RUNNABLE), "RUNNABLE");
	CHECK_STR(taskstate_state_name(TASKSTATE_DEAD), "DEAD");
	CHECK_STR(taskstate_state_name(TASKSTATE_NR_STATES), "?");
	for (s = 0; s < TASKSTATE_NR_STATES; s++) {
		CHECK(strcmp(taskstate_state_name(s), "?") != 0);
		CHECK(taskstate_state_from_name(taskstate_state_name(s)) == (int)s);
	}
	CHECK(taskstate_state_from_name("running") == TASKSTATE_RUNNING);
	CHECK(taskstate_state_from_name("Blocked") == TASKSTATE_BLOCKED);
	CHECK(taskstate_state_from_name("none") == TASKSTATE_NONE);
	CHECK(taskstate_state_from_name("") == -EINVAL);
	CHECK(taskstate_state_from_name("?") == -EINVAL);
	CHECK(taskstate_state_from_name("RUN") == -EINVAL);
	CHECK(taskstate_state_from_name("RUNNING ") == -EINVAL);

	/* A total is named as the state it counts, OTHER for the rest. */
	for (s = TASKSTATE_RUNNING; s <= TASKSTATE_BLOCKED; s++)
		CHECK_STR(taskstate_total_name(taskstate_total_of(s)),
			  taskstate_state_name(s));
	CHECK_STR(taskstate_total_name(TASKSTATE_TOTAL_OTHER), "OTHER");
	CHECK_STR(taskstate_total_name(taskstate_total_of(TASKSTATE_TRACED)),
		  "OTHER");
	CHECK_STR(taskstate_total_name(TASKSTATE_MAP_NR_TOTALS), "?");
}

static void test_device_errors(void)
{
	struct taskstate_entry e = { .tid = 1 }, *list = NULL;
	struct taskstate_totals t, *tl = NULL;
	struct taskstate_location l = { .tid = 1 };
	struct taskstate_mapping m;
	struct taskstate_process proc;
	struct taskstate_info info;
	uint32_t n = 99;
	char comm[16];
	int fd;

	setenv("TASKSTATE_DEV", "/nonexistent/taskstate", 1);
	CHECK_STR(taskstate_dev_path(), "/nonexistent/taskstate");
	CHECK(taskstate_open() == -ENOENT);

	setenv("TASKSTATE_DEV", "", 1);
	CHECK_STR(taskstate_dev_path(), TASKSTATE_DEV_PATH);
	/* Neither the device nor the BPF backend's pins on this host. */
	if (access(TASKSTATE_DEV_PATH, F_OK) && access("/sys/fs/bpf/taskstate", F_OK))
		CHECK(taskstate_open() == -ENOENT);

	/* /dev/null opens but knows no ioctl. */
	setenv("TASKSTATE_DEV", "/dev/null", 1);
	fd = taskstate_open();
	CHECK(fd >= 0);
	/* A character device: the module's kind of fd; a closed one: NULL. */
	CHECK_STR(taskstate_backend(fd), "module");
	CHECK(taskstate_backend(-1) == NULL);
	CHECK(taskstate_info(fd, &info) == -ENOTTY);
	CHECK(info.size == sizeof(info));
	CHECK(taskstate_track(fd, 1, true, NULL) == -ENOTTY);
	CHECK(taskstate_untrack(fd, 1, false, NULL) == -ENOTTY);
	CHECK(taskstate_sample(fd, &e, NULL, 1) == -ENOTTY);
	CHECK(taskstate_sample(fd, &e, &t, 1) == -ENOTTY);
	CHECK(taskstate_sample(fd, &e, NULL, 0) == 0);
	CHECK(taskstate_sample(fd, &e, NULL, (uint32_t)INT32_MAX + 1) == -EINVAL);
	CHECK(taskstate_locate(fd, &l, 1) == -ENOTTY);
	CHECK(taskstate_locate(fd, &l, (uint32_t)INT32_MAX + 1) == -EINVAL);
	CHECK(taskstate_list(fd, 0, &list, NULL, &n) == -ENOTTY);
	CHECK(taskstate_list(fd, 0, &list, &tl, &n) == -ENOTTY);
	CHECK(list == NULL && tl == NULL && n == 99);
	CHECK(taskstate_process(fd, 1, &proc) == -ENOTTY);
	CHECK(proc.size == sizeof(proc) && proc.pid == 1 && !proc.valid);
	CHECK(taskstate_mapping_open(fd, &m) == -ENOTTY);
	CHECK(m.entries == NULL && m.nr == 0);
	taskstate_mapping_close(&m);
	taskstate_close(fd);
	unsetenv("TASKSTATE_DEV");

	CHECK(taskstate_comm(syscall(SYS_gettid), comm, sizeof(comm)) == 8);
	CHECK_STR(comm, "test_lib");
	CHECK(taskstate_comm(syscall(SYS_gettid), comm, 5) == 4);
	CHECK_STR(comm, "test");
	CHECK(taskstate_comm(0, comm, sizeof(comm)) == -ENOENT);
	CHECK(taskstate_comm(1, comm, 0) == -EINVAL);
}

/*
 * A mapping of four entries as the module lays them out: 0 free, 1 owned
 * (gen 3) with consistent totals, 2 owned (gen 5) with totals that do
 * not match its word (a change landing during every read), 3 free again
 * after an owner (gen 8).
 */
static struct taskstate_map_entry entries[4];

static void fake_mapping(struct taskstate_mapping *m, uint32_t flags)
{
	const uint64_t since = 10000;

	memset(entries, 0, sizeof(entries));
	entries[1] = (struct taskstate_map_entry){
		.word = taskstate_pack(TASKSTATE_BLOCKED, since),
		.tid = 100, .gen = 3, .start_ns = 1000,
		.state_ns = { 5000, 1000, 2000, 1000, 0 },
	};
	entries[2] = (struct taskstate_map_entry){
		.word = taskstate_pack(TASKSTATE_SLEEPING, since),
		.tid = 200, .gen = 5, .start_ns = 1000, .state_ns = { 1 },
	};
	entries[3].gen = 8;
	*m = (struct taskstate_mapping){
		.entries = entries, .nr = ARRAY_SIZE(entries), .flags = flags,
		.size = sizeof(entries),
	};
}

static void test_mapping_read(void)
{
	struct taskstate_location l = { .tid = 100, .tgid = 100, .index = 1, .gen = 3 };
	struct taskstate_location bad = l;
	struct taskstate_mapping m;
	struct taskstate_totals t;
	uint64_t w = 7, state_ns[TASKSTATE_MAP_NR_TOTALS];

	fake_mapping(&m, TASKSTATE_MAP_F_TOTALS);
	CHECK(taskstate_mapping_read(&m, &l, &w, NULL) == 0);
	CHECK(w == entries[1].word);
	w = 7;
	CHECK(taskstate_mapping_read(&m, &l, &w, &t) == 0);
	CHECK(w == entries[1].word && t.start_ns == 1000 && t.state_ns[0] == 5000);
	taskstate_totals_at(w, &t, 10500, state_ns);
	CHECK(state_ns[TASKSTATE_TOTAL_BLOCKED] == 1500);
	CHECK(state_ns[TASKSTATE_TOTAL_RUNNING] == 5000);

	/* Another generation: the thread is gone; so is an index past nr. */
	bad.gen = 5;
	w = 7;
	CHECK(taskstate_mapping_read(&m, &bad, &w, NULL) == -ESRCH);
	CHECK(taskstate_mapping_read(&m, &bad, &w, &t) == -ESRCH);
	bad = l;
	bad.index = TASKSTATE_LOCATE_NONE;
	CHECK(taskstate_mapping_read(&m, &bad, &w, NULL) == -ESRCH);
	CHECK(w == 7);

	/* Totals that never match their word: the bounded retries give up. */
	bad = (struct taskstate_location){ .tid = 200, .index = 2, .gen = 5 };
	CHECK(taskstate_mapping_read(&m, &bad, &w, NULL) == 0);
	CHECK(taskstate_mapping_read(&m, &bad, &w, &t) == -EAGAIN);

	/* A module without totals: asking for them is -EOPNOTSUPP. */
	fake_mapping(&m, 0);
	CHECK(taskstate_mapping_read(&m, &l, &w, &t) == -EOPNOTSUPP);
	CHECK(taskstate_mapping_read(&m, &l, &w, NULL) == 0);
}

static void test_mapping_scan(void)
{
	struct taskstate_mapping m;
	uint32_t i, tid = 0, gen = 0, owned = 0;
	uint64_t w = 0;

	fake_mapping(&m, TASKSTATE_MAP_F_TOTALS);
	for (i = 0; i < m.nr; i++)
		if (!taskstate_mapping_scan(&m, i, &tid, &w, &gen))
			owned |= 1U << i;
	CHECK(owned == (1U << 1 | 1U << 2));
	CHECK(taskstate_mapping_scan(&m, 1, &tid, &w, &gen) == 0);
	CHECK(tid == 100 && gen == 3 && w == entries[1].word);
	CHECK(taskstate_mapping_scan(&m, 3, &tid, &w, &gen) == -ESRCH);
	CHECK(taskstate_mapping_scan(&m, m.nr, &tid, &w, &gen) == -EINVAL);
}

static void test_stuck_check(void)
{
	struct taskstate_location l[3] = {
		{ .tid = 100, .index = 1, .gen = 3 },	/* BLOCKED */
		{ .tid = 200, .index = 2, .gen = 5 },	/* SLEEPING */
		{ .tid = 300, .index = 3, .gen = 7 },	/* gone */
	};
	struct taskstate_stuck out[3];
	struct taskstate_mapping m;
	uint32_t gone = 99;
	uint64_t age;

	fake_mapping(&m, 0);
	/* The words are stamped at 10 us: every age is now_ns - 10 us. */
	age = taskstate_now_ns() - 10000;
	CHECK(taskstate_stuck_check(&m, l, 3, 0, 0, out, 3, &gone) == 1);
	CHECK(gone == 1 && out[0].which == 0 && out[0].state == TASKSTATE_BLOCKED);
	CHECK(out[0].age_ns >= age);
	CHECK(taskstate_stuck_check(&m, l, 3, 0,
				    1U << TASKSTATE_BLOCKED | 1U << TASKSTATE_SLEEPING,
				    out, 1, NULL) == 2);
	CHECK(out[0].which == 0);
	CHECK(taskstate_stuck_check(&m, l, 3, UINT64_MAX, 0, out, 3, NULL) == 0);
	CHECK(taskstate_stuck_check(&m, NULL, 3, 0, 0, out, 3, NULL) == -EINVAL);
	CHECK(taskstate_stuck_check(&m, l, 3, 0, 0, NULL, 3, NULL) == -EINVAL);
}

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

#define TIMENS_OFFSET_S	100000LL

/*
 * Is this process's CLOCK_BOOTTIME @offset_s ahead of taskstate_now_ns(),
 * within the 10 ms between the two reads?
 */
static bool timens_shift_is(long long offset_s, const char *where)
{
	struct timespec ts;
	uint64_t now = taskstate_now_ns();
	int64_t shift;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	shift = (int64_t)((uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec - now);
	if (llabs(shift - offset_s * 1000000000) < 10000000)
		return true;
	printf("# %s: the clock is %lld ms ahead of taskstate_now_ns(), not %lld s\n",
	       where, (long long)(shift / 1000000), offset_s);
	return false;
}

/*
 * In a child: learn the offset (none), then unshare a time namespace
 * with a boottime offset of TIMENS_OFFSET_S and enter it with setns()
 * (@enter), or fork a child that starts in it: there taskstate_now_ns()
 * must take TIMENS_OFFSET_S off this process's clock, without an INFO.
 * Exit status 0 right, 1 wrong, 77 no time namespaces here (no
 * CONFIG_TIME_NS, not root).
 */
static int timens_child(bool enter)
{
	char buf[64];
	pid_t pid;
	int fd, n, st;

	if (!timens_shift_is(0, "before"))
		return 1;
	if (unshare(CLONE_NEWTIME))
		return 77;
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	n = snprintf(buf, sizeof(buf), "boottime %lld 0", TIMENS_OFFSET_S);
	if (fd < 0 || write(fd, buf, n) != n)
		return 77;
	close(fd);
	if (enter) {
		fd = open("/proc/self/ns/time_for_children", O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWTIME))
			return 77;
		close(fd);
	} else {
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			st = timens_shift_is(TIMENS_OFFSET_S, "fork") ? 0 : 1;
			fflush(stdout);
			_exit(st);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
			return 1;
		return WEXITSTATUS(st);
	}
	return timens_shift_is(TIMENS_OFFSET_S, "setns") ? 0 : 1;
}

static void timens_case(bool enter)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		st = timens_child(enter);
		fflush(stdout);
		_exit(st);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip_test("no time namespace here (CONFIG_TIME_NS, root)");
	else
		CHECK(WEXITSTATUS(st) == 0);
}

/*
 * taskstate_now_ns() follows the process into another time namespace
 * (setns()), and into a child forked after unshare(CLONE_NEWTIME), with
 * no INFO in between.
 */
static void test_now_follows_time_namespace(void)
{
	timens_case(true);
	timens_case(false);
}

static const struct unit_test tests[] = {
	{ "decode", test_decode },
	{ "totals_at_stop_at_death", test_totals_at_stop_at_death },
	{ "state_names", test_state_names },
	{ "device_errors", test_device_errors },
	{ "mapping_read", test_mapping_read },
	{ "mapping_scan", test_mapping_scan },
	{ "stuck_check", test_stuck_check },
	{ "now_follows_time_namespace", test_now_follows_time_namespace },
};

int main(void)
{
	return run_tests("test_lib", tests, ARRAY_SIZE(tests));
}
