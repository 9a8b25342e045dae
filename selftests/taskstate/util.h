/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the taskstate selftests (util.c, linked into every
 * test program), on top of libtaskstate.
 */
#ifndef TASKSTATE_SELFTEST_UTIL_H
#define TASKSTATE_SELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "libtaskstate.h"

pid_t ts_gettid(void);
void ts_sleep_ms(unsigned int ms);
/* CLOCK_MONOTONIC in ns. */
uint64_t mono_ns(void);
size_t page_size(void);

/*
 * The directory of the taskstate command: $TS_BIN, or else this
 * program's own if the command is beside it (as kselftest installs them);
 * NULL if neither.
 */
const char *ts_bin_dir(void);

/* INFO's nr_tracked and nr_untracked, or ~0 if INFO fails. */
uint64_t nr_tracked(int fd);
uint64_t nr_untracked(int fd);

/*
 * The module's unprivileged parameter: 1 while opens without CAP_PERFMON
 * give a scoped descriptor, 0 while they are refused, -1 if unreadable.
 */
int ts_unprivileged_on(void);

/*
 * Is the library answering from the BPF backend (no /dev/taskstate, the
 * backend's pins there)?  Tests of what only the module has (debugfs,
 * the log of exits, the device's own ioctl and mmap rules) skip there,
 * with TS_BPF_SKIP's reason.
 */
bool ts_bpf_backend(void);
#define TS_BPF_SKIP(what)						\
	do {								\
		if (ts_bpf_backend())					\
			SKIP(return, "the BPF backend has no %s (docs/design.md, two backends)", what); \
	} while (0)

/*
 * A pid that existed a moment ago and no task has now: a child's, reaped
 * (and not reused meanwhile); -1 if none could be had.
 */
pid_t ts_reaped_pid(void);

/* Write @s, or @v in decimal, to the file @path: 0 or -errno. */
int ts_write_str(const char *path, const char *s);
int ts_write_uint(const char *path, unsigned int v);

/*
 * The word of @tid by SAMPLE, or 0 (NONE) if the module does not know it.
 * ts_word_of() reads it through the mapping too once ts_xcheck_map() has
 * mapped it, and both must agree (a disagreement is logged and gives 0).
 */
uint64_t ts_sample_word(int fd, pid_t tid);
int ts_xcheck_map(int fd);
extern struct taskstate_mapping ts_xmap;	/* what ts_xcheck_map() mapped */
uint64_t ts_word_of(int fd, pid_t tid);
unsigned int ts_state_of(int fd, pid_t tid);
/*
 * Poll until @tid is seen in @state; returns its word then, or 0 after
 * @timeout_ms.
 */
uint64_t ts_wait_state(int fd, pid_t tid, unsigned int state,
		       unsigned int timeout_ms);

/* @tid's (a thread of this process) voluntary context switches, or -1. */
long long ts_nvcsw(pid_t tid);
/*
 * @tid's (a thread of this process) run time and run-queue wait in ns,
 * from /proc/self/task/<tid>/schedstat: 0 or -errno.
 */
int ts_schedstat(pid_t tid, uint64_t *run, uint64_t *wait);
/* Pin the calling thread to one CPU. */
int ts_pin(int cpu);

/*
 * A thread asleep in read() on a pipe, woken by every byte written to
 * pipe[1], gone once pipe[1] is closed (ts_sleeper_stop()).  Its tid is
 * set before ts_sleeper_start() returns 0.
 */
struct ts_sleeper {
	pthread_t thread;
	int pipe[2];
	pid_t tid;
};

int ts_sleeper_start(struct ts_sleeper *s);
void ts_sleeper_stop(struct ts_sleeper *s);

/*
 * The ioctl commands, in number order (ts_cmds[TS_CMD_INFO] is
 * TASKSTATE_IOC_INFO...), with the sizes a valid argument may have: the
 * struct this program was built with, and version 0's.  What ts_abi
 * checks command by command and what ts_soak fuzzes: a new command is a
 * row here.
 */
enum {
	TS_CMD_INFO, TS_CMD_TRACK, TS_CMD_UNTRACK, TS_CMD_SAMPLE, TS_CMD_LIST,
	TS_CMD_LOCATE, TS_CMD_PROCESS, TS_CMD_EXITS, TS_NR_CMDS
};

struct ts_cmd {
	const char *name;
	unsigned long cmd;
	uint32_t ksize;		/* sizeof the struct we were built with */
	uint32_t ver0;
};

extern const struct ts_cmd ts_cmds[TS_NR_CMDS];
/* The row of command @req, or NULL if @req is none of ours. */
const struct ts_cmd *ts_cmd_of(unsigned long req);

/* Run fn(arg) in a child; its exit status, or 128 + the killing signal. */
int run_child(int (*fn)(void *), void *arg);

/*
 * fork(), the child held until it reads a byte from the pipe made in
 * @gate, whose write end (gate[1]) the parent keeps: fork()'s value, 0 in
 * the child once the byte came (it _exit()s if none comes).  The parent
 * closes gate[0].
 */
pid_t ts_fork_gated(int gate[2]);

/*
 * TASKSTATE_IOC_EXITS through @fd into @e (room for @count; any address,
 * for EFAULT): the entries taken, *@lost set; or -errno.
 */
int ts_take_exits(int fd, struct taskstate_exit *e, uint32_t count,
		  uint64_t *lost);

/*
 * Checks in a child (run_child()), whose exit status is the verdict: 0
 * passed, CHILD_SKIP cannot run here (no privilege to set it up),
 * anything else failed, explained on stderr.
 */
#define CHILD_SKIP	77

#define CHILD_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "# %s:%d: child: %s is false (errno %d)\n", \
			__FILE__, __LINE__, #cond, errno);		\
		return 1;						\
	}								\
} while (0)

/* And one that says what it saw. */
#define CHILD_EQ(expected, seen) do {					\
	long long __e = (long long)(expected);				\
	long long __s = (long long)(seen);				\
	if (__e != __s) {						\
		fprintf(stderr, "# %s:%d: child: expected %s (%lld) == %s (%lld)\n", \
			__FILE__, __LINE__, #expected, __e, #seen, __s); \
		return 1;						\
	}								\
} while (0)

#endif /* TASKSTATE_SELFTEST_UTIL_H */
