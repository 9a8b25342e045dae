// SPDX-License-Identifier: GPL-2.0
/*
 * count: the guest side of the counted benchmark (scripts/count.sh).
 * Runs one operation in spans bracketed by the marker instructions that
 * the tscount plugin (bench/tscount.c) counts between:
 *
 *   count [--cpu C] [--track] [--warm W] OP N SPANS
 *   count --dump
 *
 * pins itself (and so every child and thread) to CPU C (default 1), runs
 * the operation W times (default N) unmarked, then SPANS spans of N
 * operations each.  --track tracks the process, with its future threads
 * and children, through /dev/taskstate before anything starts.
 *
 *   empty      nothing: the loop and the markers
 *   pipe       a 1-byte round trip over two pipes with a child process
 *   pipe_thr   the same with a second thread of this process
 *   fork       fork(), the child _exit(0)s, waitpid()
 *   thread     pthread_create() of a thread that returns, pthread_join()
 *   sample     one TASKSTATE_IOC_SAMPLE of this thread (taskstate_sample())
 *   mapread    one read of this thread's entry through the mapping
 *   debugfs    open, read to the end, close of the module's debugfs file,
 *              with 1,000 more threads of this process sleeping (tracked
 *              with --track, or by track_all)
 *
 * --dump executes the third marker: the plugin writes the profile of the
 * spans since the last dump.
 *
 * Prints one line "OP N SPANS" when done; the plugin writes the spans.
 * x86 only (the markers are x86 instructions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "libtaskstate.h"

#define DEBUGFS_PATH	"/sys/kernel/debug/taskstate"
#define DEBUGFS_THREADS	1000

static inline void mark_start(void)
{
	asm volatile(".byte 0x66, 0x87, 0xdb" ::: "memory");	/* xchg %bx,%bx */
}

static inline void mark_end(void)
{
	asm volatile(".byte 0x66, 0x87, 0xc9" ::: "memory");	/* xchg %cx,%cx */
}

static inline void mark_dump(void)
{
	asm volatile(".byte 0x66, 0x87, 0xd2" ::: "memory");	/* xchg %dx,%dx */
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int p2c[2], c2p[2];	/* pipe: parent to child, child to parent */
static int dev = -1;
static struct taskstate_mapping map;
static struct taskstate_location loc;
static struct taskstate_entry ent;
static char *dbuf;
static size_t dbuf_len = 1 << 22;
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;

static void echo_loop(long n)
{
	char c;

	while (n--) {
		if (read(p2c[0], &c, 1) != 1 || write(c2p[1], &c, 1) != 1)
			die("echo");
	}
}

static void *echo_thread(void *arg)
{
	echo_loop((long)arg);
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

static void *park(void *arg)
{
	pthread_mutex_lock(&park_lock);
	pthread_mutex_unlock(&park_lock);
	return arg;
}

static void one(const char *op)
{
	switch (op[0]) {
	case 'e':	/* empty */
		asm volatile("" ::: "memory");
		break;
	case 'p': {	/* pipe, pipe_thr */
		char c = 'x';

		if (write(p2c[1], &c, 1) != 1 || read(c2p[0], &c, 1) != 1)
			die("pipe round trip");
		break;
	}
	case 'f': {	/* fork */
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid)
			_exit(0);
		if (waitpid(pid, NULL, 0) != pid)
			die("waitpid");
		break;
	}
	case 't': {	/* thread */
		pthread_t t;

		if (pthread_create(&t, NULL, nothing, NULL) ||
		    pthread_join(t, NULL))
			die("pthread");
		break;
	}
	case 's':	/* sample */
		ent.tid = syscall(SYS_gettid);
		if (taskstate_sample(dev, &ent, NULL, 1) != 1)
			die("taskstate_sample");
		break;
	case 'm': {	/* mapread */
		uint64_t w;

		if (taskstate_mapping_read(&map, &loc, &w, NULL))
			die("taskstate_mapping_read");
		break;
	}
	case 'd': {	/* debugfs */
		int fd = open(DEBUGFS_PATH, O_RDONLY);
		size_t got = 0;
		ssize_t r;

		if (fd < 0)
			die(DEBUGFS_PATH);
		while ((r = read(fd, dbuf + got, dbuf_len - got)) > 0)
			got += r;
		if (r < 0 || got >= dbuf_len)
			die("debugfs read");
		close(fd);
		break;
	}
	}
}

static const char *const ops[] = {
	"empty", "pipe", "pipe_thr", "fork", "thread", "sample", "mapread",
	"debugfs",
};

int main(int argc, char **argv)
{
	long n, spans, warm = -1, i, k, total;
	bool track = false;
	int cpu = 1, ai;
	pthread_t echo, parked[DEBUGFS_THREADS];
	const char *op;
	pid_t child = 0;
	cpu_set_t set;
	bool known = false;

	if (argc == 2 && !strcmp(argv[1], "--dump")) {
		mark_dump();
		return 0;
	}
	for (ai = 1; ai < argc && !strncmp(argv[ai], "--", 2);
	     ai++) {
		if (!strcmp(argv[ai], "--track"))
			track = true;
		else if (!strcmp(argv[ai], "--cpu") && ai + 1 < argc)
			cpu = atoi(argv[++ai]);
		else if (!strcmp(argv[ai], "--warm") && ai + 1 < argc)
			warm = atol(argv[++ai]);
		else
			goto usage;
	}
	if (argc - ai != 3)
		goto usage;
	op = argv[ai];
	n = atol(argv[ai + 1]);
	spans = atol(argv[ai + 2]);
	for (i = 0; i < (long)(sizeof(ops) / sizeof(ops[0])); i++)
		known |= !strcmp(op, ops[i]);
	if (!known || n <= 0 || spans <= 0)
		goto usage;
	if (warm < 0)
		warm = n;
	total = warm + n * spans;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	if (track || !strcmp(op, "sample") || !strcmp(op, "mapread")) {
		dev = taskstate_open();
		errno = dev < 0 ? -dev : 0;	/* the library returns -errno */
		if (errno)
			die("taskstate_open");
	}
	if (track) {
		errno = -taskstate_track(dev, getpid(), true, NULL);
		if (errno)
			die("taskstate_track");
	}

	if (!strcmp(op, "pipe") || !strcmp(op, "pipe_thr")) {
		if (pipe(p2c) || pipe(c2p))
			die("pipe");
		if (!strcmp(op, "pipe")) {
			child = fork();
			if (child < 0)
				die("fork");
			if (!child) {
				echo_loop(total);
				_exit(0);
			}
		} else if (pthread_create(&echo, NULL, echo_thread,
					  (void *)total)) {
			die("pthread_create");
		}
	} else if (!strcmp(op, "mapread")) {
		errno = -taskstate_mapping_open(dev, &map);
		if (errno)
			die("taskstate_mapping_open");
		loc.tid = syscall(SYS_gettid);
		if (taskstate_locate(dev, &loc, 1) != 1)
			die("taskstate_locate (is this thread tracked?)");
	} else if (!strcmp(op, "debugfs")) {
		pthread_attr_t a;

		dbuf = malloc(dbuf_len);
		if (!dbuf)
			die("malloc");
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		pthread_mutex_lock(&park_lock);
		for (i = 0; i < DEBUGFS_THREADS; i++)
			if (pthread_create(&parked[i], &a, park, NULL))
				die("pthread_create");
	}

	for (i = 0; i < warm; i++)
		one(op);
	for (k = 0; k < spans; k++) {
		mark_start();
		for (i = 0; i < n; i++)
			one(op);
		mark_end();
	}

	if (child && waitpid(child, NULL, 0) != child)
		die("waitpid");
	if (!strcmp(op, "pipe_thr"))
		pthread_join(echo, NULL);
	if (!strcmp(op, "debugfs")) {
		pthread_mutex_unlock(&park_lock);
		for (i = 0; i < DEBUGFS_THREADS; i++)
			pthread_join(parked[i], NULL);
	}
	printf("%s %ld %ld\n", op, n, spans);
	return 0;
usage:
	fprintf(stderr, "usage: count [--cpu C] [--track] [--warm W] OP N SPANS\n"
		"OP: empty pipe pipe_thr fork thread sample mapread debugfs\n");
	return 2;
}
