// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate run: run a program tracked, and say when it ends where the
 * time of its threads, and of the processes it started, went.
 *
 * The command forks, tracks the child with inheritance (TRACK of the
 * process: its new threads and children are tracked from their creation)
 * before the child execs the program, and becomes a child subreaper, so
 * that the program's orphans end as its children.  Each process it
 * collects is read with PROCESS before it is reaped (waitid() with
 * WNOWAIT leaves it a zombie, whose record stays): its own threads'
 * totals, and the totals of the processes that ended as its children,
 * which the module added to its record when their last thread exited
 * (children_ns).  So the sum is complete to the last exit, whoever
 * reaped whom, as time(1)'s children's times are.
 *
 * With --per-thread the TRACK also asks for the module's log of thread
 * exits (uapi "DOC: Thread exits"): each thread of the program and of
 * the processes it starts writes its totals there as it exits, and the
 * command empties the log every RUN_DRAIN_MS while it waits (SIGCHLD,
 * blocked, wakes it at once), and once more at the end (every thread has
 * exited before its process can be collected).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define NT	TASKSTATE_MAP_NR_TOTALS

/* One process the command collected. */
struct run_proc {
	uint32_t pid;
	char comm[TS_COMM_MAX];
	bool valid;		/* its record was there to read */
	bool counted;		/* in the sums: not in another row's children */
	uint64_t parent_start_ns;	/* the record it was added to, or 0 */
	uint64_t threads;	/* live and exited at its end */
	uint64_t own[NT];
	uint64_t children[NT];
	uint64_t nr_children;
};

struct run_result {
	struct run_proc *procs;
	size_t n;
	int status;		/* the program's, from waitpid() */
	bool collected;		/* the program's status is known */
	bool running;		/* processes it started still run */
	uint64_t wall_ns;
	bool per_thread;	/* the threads' exits are logged */
	struct taskstate_exit *threads;	/* as they exited */
	size_t nthreads;
	uint64_t threads_lost;	/* exits the log had no room for */
};

/* How often the log of exits is emptied: 256 per 10 ms, 25,600/s. */
#define RUN_DRAIN_MS	10

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The child: wait for the parent's TRACK, then become the program. */
static void run_child(int gate, char **argv, const sigset_t *mask)
{
	int c;

	if (read(gate, &c, 1) != 1)
		_exit(127);
	close(gate);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(argv[0], argv);
	c = errno;
	fprintf(stderr, "taskstate run: %s: %s\n", argv[0], strerror(c));
	_exit(c == ENOENT ? 127 : 126);
}

/*
 * TRACK of the program's process, with the log of exits for --per-thread
 * (the module's: the BPF backend has no descriptor to log to).
 */
static int track_program(int fd, pid_t pid, bool per_thread)
{
	const char *backend = taskstate_backend(fd);
	struct taskstate_track t = {
		.size = sizeof(t),
		.flags = TASKSTATE_TRACK_PROCESS |
			 (per_thread ? TASKSTATE_TRACK_EXITS : 0),
		.id = pid,
	};

	if (backend && !strcmp(backend, "bpf")) {
		if (per_thread)
			return -EOPNOTSUPP;
		return taskstate_track(fd, pid, true, NULL);
	}
	return ioctl(fd, TASKSTATE_IOC_TRACK, &t) < 0 ? -errno : 0;
}

/* Read process @pid (a zombie not reaped yet) into a new row. */
static int collect(int fd, uint32_t pid, struct run_result *r)
{
	struct taskstate_process p;
	struct run_proc *q, *np;
	int i;

	np = realloc(r->procs, (r->n + 1) * sizeof(*r->procs));
	if (!np)
		return -ENOMEM;
	r->procs = np;
	q = &r->procs[r->n++];
	memset(q, 0, sizeof(*q));
	q->pid = pid;
	if (taskstate_comm(pid, q->comm, sizeof(q->comm)) < 0)
		strcpy(q->comm, "?");
	if (taskstate_process(fd, pid, &p))
		return 0;
	q->valid = true;
	q->parent_start_ns = p.parent_start_ns;
	q->threads = p.nr_threads + p.nr_exited;
	for (i = 0; i < NT; i++) {
		q->own[i] = p.state_ns[i];
		q->children[i] = p.children_ns[i];
	}
	q->nr_children = p.nr_children;
	return 0;
}

/* Take every entry out of the module's log of thread exits. */
static int drain(int fd, struct run_result *r)
{
	struct taskstate_exits x = { .size = sizeof(x) };
	struct taskstate_exit *nt;

	do {
		nt = realloc(r->threads, (r->nthreads + TASKSTATE_EXITS_LOG) *
				      sizeof(*r->threads));
		if (!nt)
			return -ENOMEM;
		r->threads = nt;
		x.count = TASKSTATE_EXITS_LOG;
		x.exits = (uintptr_t)(r->threads + r->nthreads);
		if (ioctl(fd, TASKSTATE_IOC_EXITS, &x) < 0)
			return -errno;
		r->nthreads += x.count;
		r->threads_lost += x.lost;
	} while (x.count == TASKSTATE_EXITS_LOG);
	return 0;
}

/*
 * Wait for a child to end, leaving it a zombie: blocking, or with the
 * log of exits to empty, in turns of RUN_DRAIN_MS or until a SIGCHLD
 * (blocked with --per-thread).  0: one ended (si_pid) or none is left
 * (si_pid 0); 1: with @nohang, none has ended yet.
 */
static int wait_child(int fd, struct run_result *r, siginfo_t *si,
		      bool nohang)
{
	const struct timespec turn = { 0, RUN_DRAIN_MS * 1000000L };
	sigset_t chld;
	int ret;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		memset(si, 0, sizeof(*si));
		if (waitid(P_ALL, 0, si, WEXITED | WNOWAIT |
			   (nohang || r->per_thread ? WNOHANG : 0)) < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? 0 : -errno;
		}
		if (si->si_pid)
			return 0;
		if (nohang)
			return 1;
		ret = drain(fd, r);
		if (ret)
			return ret;
		sigtimedwait(&chld, NULL, &turn);
	}
}

/*
 * Collect children until the program has ended, then those that have
 * ended too (its orphans, which the subreaper inherits, zombies or
 * exited meanwhile), as time(1) does not wait for a daemon the program
 * left running: r->running says some were.  The program's status in
 * r->status.
 */
static int collect_all(int fd, pid_t prog, struct run_result *r)
{
	siginfo_t si;
	int status, ret;

	for (;;) {
		ret = wait_child(fd, r, &si, r->collected);
		if (ret == 1)
			r->running = true;
		if (ret || !si.si_pid)
			return ret < 0 ? ret : 0;
		ret = collect(fd, si.si_pid, r);
		if (ret)
			return ret;
		while (waitpid(si.si_pid, &status, 0) < 0 && errno == EINTR)
			;
		if (si.si_pid == prog) {
			r->status = status;
			r->collected = true;
		}
	}
}

/*
 * Which rows the sums take: a process the module added to a record when
 * it ended is in that record's children, and so in the row of the
 * process that record belongs to (an orphan whose parent ended after
 * it, say), unless that record is this command's own (with track_all it
 * is tracked: the program is added to it).
 */
static void mark_counted(int fd, struct run_result *r)
{
	struct taskstate_process me;
	uint64_t mine = 0;
	size_t j;

	if (!taskstate_process(fd, getpid(), &me))
		mine = me.start_ns;
	for (j = 0; j < r->n; j++) {
		struct run_proc *q = &r->procs[j];

		q->counted = q->valid && (!q->parent_start_ns ||
					  q->parent_start_ns == mine);
	}
}

/* The sums both reports give: over the rows mark_counted() kept. */
struct run_sums {
	uint64_t own[NT], kids[NT], all[NT];
	uint64_t nkids;		/* processes in kids */
	unsigned int nprocs;	/* rows counted */
};

static void run_sums(const struct run_result *r, struct run_sums *t)
{
	size_t j;
	int i;

	memset(t, 0, sizeof(*t));
	for (j = 0; j < r->n; j++) {
		const struct run_proc *q = &r->procs[j];

		if (!q->counted)
			continue;
		for (i = 0; i < NT; i++) {
			t->own[i] += q->own[i];
			t->kids[i] += q->children[i];
		}
		t->nkids += q->nr_children;
		t->nprocs++;
	}
	for (i = 0; i < NT; i++)
		t->all[i] = t->own[i] + t->kids[i];
}

static uint64_t sum(const uint64_t t[NT])
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < NT; i++)
		s += t[i];
	return s;
}

static void put_text_row(FILE *f, const char *what, const uint64_t t[NT])
{
	int i;

	fprintf(f, "%-24s", what);
	for (i = 0; i < NT; i++)
		fprintf(f, " %10.3f", t[i] / 1e9);
	fprintf(f, " %10.3f\n", sum(t) / 1e9);
}

/* An exit's totals, as uint64_t (__u64 is another type on 64-bit). */
static void exit_totals(const struct taskstate_exit *e, uint64_t t[NT])
{
	int i;

	for (i = 0; i < NT; i++)
		t[i] = e->state_ns[i];
}

/* --per-thread: each thread that exited, as it exited (tid comm). */
static void put_text_threads(FILE *f, const struct run_result *r)
{
	char what[64], safe[TS_COMM_MAX];
	uint64_t t[NT];
	size_t j;

	fprintf(f, "threads that exited (%zu)", r->nthreads);
	if (r->threads_lost)
		fprintf(f, "; %" PRIu64 " more not itemized (the log was full)",
			r->threads_lost);
	fputc('\n', f);
	for (j = 0; j < r->nthreads; j++) {
		const struct taskstate_exit *e = &r->threads[j];

		snprintf(what, sizeof(what), "  %" PRIu32 " %s", e->tid,
			 ts_sanitize(safe, sizeof(safe), e->comm));
		exit_totals(e, t);
		put_text_row(f, what, t);
	}
}

static void put_text(FILE *f, char **argv, const struct run_result *r)
{
	char what[64], safe[TS_COMM_MAX];
	struct run_sums t;
	size_t j;
	int i;

	run_sums(r, &t);
	fprintf(f, "taskstate run: %s: ", argv[0]);
	if (WIFEXITED(r->status))
		fprintf(f, "exit status %d", WEXITSTATUS(r->status));
	else
		fprintf(f, "killed by signal %d", WTERMSIG(r->status));
	fprintf(f, ", %.3f s%s\n", r->wall_ns / 1e9,
		r->running ? "; processes it started still run, not counted" : "");
	fprintf(f, "%-24s", "seconds in");
	for (i = 0; i < NT; i++)
		fprintf(f, " %10s", ts_total_name(i));
	fprintf(f, " %10s\n", "total");
	for (j = 0; j < r->n; j++) {
		const struct run_proc *q = &r->procs[j];

		snprintf(what, sizeof(what), "%" PRIu32 " %s%s", q->pid,
			 ts_sanitize(safe, sizeof(safe), q->comm),
			 !q->valid ? " (untracked)" :
			 !q->counted ? " (in its parent's)" : "");
		put_text_row(f, what, q->own);
		snprintf(what, sizeof(what), "  its children (%" PRIu64 ")",
			 q->nr_children);
		put_text_row(f, what, q->children);
	}
	if (r->per_thread)
		put_text_threads(f, r);
	snprintf(what, sizeof(what), "processes (%u)", t.nprocs);
	put_text_row(f, what, t.own);
	snprintf(what, sizeof(what), "their children (%" PRIu64 ")", t.nkids);
	put_text_row(f, what, t.kids);
	put_text_row(f, "all", t.all);
}

static void put_json_totals(FILE *f, const char *key, const uint64_t t[NT])
{
	int i;

	fprintf(f, "\"%s\":{", key);
	for (i = 0; i < NT; i++)
		fprintf(f, "%s\"%s_ns\":%" PRIu64, i ? "," : "",
			ts_total_name(i), t[i]);
	fputc('}', f);
}

static void put_json(FILE *f, char **argv, const struct run_result *r)
{
	uint64_t th[NT];
	struct run_sums t;
	size_t j;
	int i;

	run_sums(r, &t);
	fputs("{\"command\":[", f);
	for (i = 0; argv[i]; i++) {
		if (i)
			fputc(',', f);
		json_put_string(f, argv[i]);
	}
	fputs("],", f);
	if (WIFEXITED(r->status))
		fprintf(f, "\"exit_status\":%d,", WEXITSTATUS(r->status));
	else
		fprintf(f, "\"signal\":%d,", WTERMSIG(r->status));
	fprintf(f, "\"wall_ns\":%" PRIu64 ",\"still_running\":%s,\"processes\":[",
		r->wall_ns, r->running ? "true" : "false");
	for (j = 0; j < r->n; j++) {
		const struct run_proc *q = &r->procs[j];

		fprintf(f, "%s{\"pid\":%" PRIu32 ",\"comm\":", j ? "," : "",
			q->pid);
		json_put_string(f, q->comm);
		fprintf(f, ",\"tracked\":%s,\"counted\":%s,\"threads\":%" PRIu64
			",", q->valid ? "true" : "false",
			q->counted ? "true" : "false", q->threads);
		put_json_totals(f, "totals", q->own);
		fprintf(f, ",\"children\":%" PRIu64 ",", q->nr_children);
		put_json_totals(f, "children_totals", q->children);
		fputc('}', f);
	}
	fputs("],", f);
	if (r->per_thread) {
		fputs("\"threads\":[", f);
		for (j = 0; j < r->nthreads; j++) {
			const struct taskstate_exit *e = &r->threads[j];

			fprintf(f, "%s{\"tid\":%" PRIu32 ",\"pid\":%" PRIu32
				",\"comm\":", j ? "," : "", e->tid, e->tgid);
			json_put_string(f, e->comm);
			fputc(',', f);
			exit_totals(e, th);
			put_json_totals(f, "totals", th);
			fputc('}', f);
		}
		fprintf(f, "],\"threads_lost\":%" PRIu64 ",", r->threads_lost);
	}
	put_json_totals(f, "totals", t.all);
	fputs("}\n", f);
}

int run_run(int fd, const struct run_opts *o, char **argv)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	sigset_t chld, omask;
	struct run_result r = { 0 };
	int gate[2], ret, status = EXIT_FAILURE;
	uint64_t start;
	FILE *f = stderr;
	pid_t pid;

	if (o->out) {
		f = fopen(o->out, "we");
		if (!f) {
			fprintf(stderr, "taskstate run: %s: %s\n", o->out,
				strerror(errno));
			return EXIT_FAILURE;
		}
	}
	/* --per-thread waits for it in sigtimedwait(); the program does not. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, o->per_thread ? &chld : NULL, &omask);
	/* Orphans of the program end as ours: read before reaped. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		fprintf(stderr, "taskstate run: PR_SET_CHILD_SUBREAPER: %s: orphans go uncounted\n",
			strerror(errno));
	if (pipe2(gate, O_CLOEXEC)) {
		perror("taskstate run: pipe");
		goto out;
	}
	/* Ignored, children would reap themselves: none would be read. */
	signal(SIGCHLD, SIG_DFL);
	start = mono_ns();
	pid = fork();
	if (pid < 0) {
		perror("taskstate run: fork");
		goto out;
	}
	if (!pid) {
		close(gate[1]);
		run_child(gate[0], argv, &omask);
	}
	close(gate[0]);
	/* As time(1): an interrupt is the program's to handle. */
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	r.per_thread = o->per_thread;
	ret = track_program(fd, pid, o->per_thread);
	if (ret == -EOPNOTSUPP && o->per_thread)
		fprintf(stderr, "taskstate run: --per-thread needs the module: the BPF backend logs no thread exits\n");
	else if (ret)
		fprintf(stderr, "taskstate run: cannot track %s: %s\n", argv[0],
			strerror(-ret));
	else if (write(gate[1], "x", 1) != 1)
		ret = -errno;
	close(gate[1]);
	if (ret) {
		/* The program never ran: nothing to report. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		goto out;
	}
	ret = collect_all(fd, pid, &r);
	r.wall_ns = mono_ns() - start;
	if (!ret && r.per_thread)
		ret = drain(fd, &r);
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	if (!ret && !r.collected)
		ret = -ECHILD;
	if (ret) {
		fprintf(stderr, "taskstate run: %s\n", strerror(-ret));
		goto out;
	}
	mark_counted(fd, &r);
	if (o->json)
		put_json(f, argv, &r);
	else
		put_text(f, argv, &r);
	/* The program's status, as time(1) gives it. */
	if (WIFEXITED(r.status))
		status = WEXITSTATUS(r.status);
	else
		status = 128 + WTERMSIG(r.status);
out:
	sigprocmask(SIG_SETMASK, &omask, NULL);
	free(r.procs);
	free(r.threads);
	if (o->out && fclose(f)) {
		fprintf(stderr, "taskstate run: %s: %s\n", o->out,
			strerror(errno));
		status = EXIT_FAILURE;
	}
	return status;
}
