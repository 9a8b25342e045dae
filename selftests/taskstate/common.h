/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the taskstate selftests, on top of libtaskstate.
 */
#ifndef TASKSTATE_SELFTEST_COMMON_H
#define TASKSTATE_SELFTEST_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "libtaskstate.h"

static inline pid_t ts_gettid(void)
{
	return syscall(SYS_gettid);
}

static inline void ts_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The mapping, when a test program mapped it (ts_xcheck_map()): then every
 * word ts_word_of() reads with SAMPLE is also read through the mapping and
 * must be the same.
 */
static struct taskstate_mapping ts_xmap;

static inline uint64_t ts_sample_word(int fd, pid_t tid)
{
	struct taskstate_entry e = { .tid = (uint32_t)tid };

	return taskstate_sample(fd, &e, NULL, 1) == 1 ? e.word : 0;
}

/*
 * @tid's word through the mapping, located once and again when its entry
 * changed hands or its thread is DEAD: a location names a thread, not a
 * tid, and a dead thread's tid may already name a new one (pid reuse) while
 * the dead one's entry is still its own.  0 if it cannot be located.
 */
static inline uint64_t ts_xmap_word(int fd, pid_t tid)
{
	static struct taskstate_location l = { .index = TASKSTATE_LOCATE_NONE };
	uint64_t m;

	if (l.tid == (uint32_t)tid && !taskstate_mapping_read(&ts_xmap, &l, &m, NULL) &&
	    taskstate_state(m) != TASKSTATE_DEAD)
		return m;
	l.tid = (uint32_t)tid;
	if (taskstate_locate(fd, &l, 1) != 1 || taskstate_mapping_read(&ts_xmap, &l, &m, NULL))
		return 0;
	return m;
}

/*
 * The mapping, SAMPLE, the mapping again, until both mapped reads agree:
 * then the word did not change in between (a change always moves its
 * time), so SAMPLE, between them, must have read that same word (0 when
 * the thread is not located or its entry changed hands).  One ioctl, as
 * without the check, once the thread is located.  Returns the word, or 0
 * after logging a disagreement.
 */
static inline uint64_t ts_xcheck_word(int fd, pid_t tid)
{
	uint64_t m1 = 0, m2 = 0, w = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		m1 = ts_xmap_word(fd, tid);
		w = ts_sample_word(fd, tid);
		m2 = ts_xmap_word(fd, tid);
		if (m1 != m2)
			continue;
		if (w == m1)
			return w;
		break;
	}
	fprintf(stderr, "# tid %d: SAMPLE's word %#llx, mapped %#llx and %#llx\n",
		(int)tid, (unsigned long long)w, (unsigned long long)m1,
		(unsigned long long)m2);
	return 0;
}

/* Map for ts_word_of()'s cross-check; returns 0 or -errno. */
static inline int ts_xcheck_map(int fd)
{
	return taskstate_mapping_open(fd, &ts_xmap);
}

/* The word of @tid, or 0 (NONE) if the module does not know it. */
static inline uint64_t ts_word_of(int fd, pid_t tid)
{
	if (ts_xmap.entries)
		return ts_xcheck_word(fd, tid);
	return ts_sample_word(fd, tid);
}

static inline unsigned int ts_state_of(int fd, pid_t tid)
{
	return taskstate_state(ts_word_of(fd, tid));
}

/*
 * Poll until @tid is seen in @state; returns its word then, or 0 after
 * @timeout_ms.  Polls every millisecond: states that last are what the
 * tests provoke, so a poll cannot miss them.
 */
static inline uint64_t ts_wait_state(int fd, pid_t tid, unsigned int state,
				     unsigned int timeout_ms)
{
	uint64_t end = taskstate_now_ns() + timeout_ms * 1000000ULL;

	/* One more sample after the deadline: a stalled guest's nap ate it. */
	for (;;) {
		uint64_t w = ts_word_of(fd, tid);

		if (taskstate_state(w) == state)
			return w;
		if (taskstate_now_ns() >= end)
			return 0;
		ts_sleep_ms(1);
	}
}

/* Run fn(arg) in a child; its exit status, or 128 + the killing signal. */
static inline int run_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 126;
	if (!pid)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid)
		return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
				   128 + WTERMSIG(status);
}

/*
 * @tid's (a thread of this process) voluntary context switches, from
 * /proc: the count grows each time the thread blocks, so an unchanged
 * count across a window means it did not go to sleep inside it.  -1 if
 * it cannot be read.
 */
static inline long long ts_nvcsw(pid_t tid)
{
	char path[64], buf[2048], *p;
	long long n = -1;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (p)
		n = strtoll(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
	return n;
}

/* Pin the calling thread to one CPU. */
static inline int ts_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

#endif /* TASKSTATE_SELFTEST_COMMON_H */
