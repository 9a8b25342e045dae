// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate top: per thread, the share of the last interval spent in each
 * state (the difference of two reads of its per-state totals).
 * taskstate metrics: the totals per process in the Prometheus text
 * exposition format, for node_exporter's textfile collector.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "libtaskstate.h"
#include "top.h"

#define NT	TASKSTATE_MAP_NR_TOTALS

/* One thread at one read. */
struct top_row {
	uint32_t tid, tgid;
	uint64_t word;
	uint64_t start_ns;
	uint64_t at[NT];	/* totals up to the read */
	uint64_t d[NT];		/* over the interval */
};

struct top_read {
	struct top_row *rows;	/* sorted by tid */
	uint32_t n;
	uint64_t now;
};

static int sort_key;

static const char *const sort_names[NT] = {
	"run", "wait", "sleep", "block", "other",
};

int top_sort_key(const char *s)
{
	int i;

	for (i = 0; i < NT; i++)
		if (!strcmp(s, sort_names[i]))
			return i;
	return strcmp(s, "tid") ? -1 : TOP_SORT_TID;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The sort key's total, largest first; then by tid. */
static int cmp_key(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (sort_key != TOP_SORT_TID && x->d[sort_key] != y->d[sort_key])
		return x->d[sort_key] < y->d[sort_key] ? 1 : -1;
	return cmp_tid(a, b);
}

/* Every tracked thread of pid (0: all) with its totals up to now. */
static int top_read(int fd, unsigned int pid, struct top_read *r)
{
	struct taskstate_totals *t;
	struct taskstate_entry *e;
	uint32_t i, n;
	int ret;

	ret = taskstate_list_totals(fd, pid, &e, &t, &n);
	if (ret < 0)
		return ret;
	r->now = taskstate_now_ns();
	r->rows = calloc(n ? n : 1, sizeof(*r->rows));
	if (!r->rows) {
		free(e);
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct top_row *w = &r->rows[i];

		w->tid = e[i].tid;
		w->tgid = e[i].tgid;
		w->word = e[i].word;
		w->start_ns = t[i].start_ns;
		taskstate_totals_at(e[i].word, &t[i], r->now, w->at);
	}
	r->n = n;
	free(e);
	free(t);
	qsort(r->rows, r->n, sizeof(*r->rows), cmp_tid);
	return 0;
}

/*
 * Each thread's time in each state between @old and @cur: the difference
 * of its totals, or for a thread new since @old (or a tid reused: another
 * start_ns) its totals since its start, at most the interval.
 */
static void top_diff(const struct top_read *old, struct top_read *cur)
{
	uint64_t span = cur->now - old->now;
	uint32_t i;
	int k;

	for (i = 0; i < cur->n; i++) {
		struct top_row *c = &cur->rows[i];
		const struct top_row *o;

		o = bsearch(c, old->rows, old->n, sizeof(*c), cmp_tid);
		if (o && o->start_ns != c->start_ns)
			o = NULL;
		for (k = 0; k < NT; k++) {
			c->d[k] = o ? c->at[k] - o->at[k] : c->at[k];
			if (c->d[k] > span)
				c->d[k] = span;
		}
	}
}

static void put_json_frame(const struct top_read *r, uint64_t span)
{
	char comm[TS_COMM_MAX];
	uint32_t i;
	int k;

	printf("{\"time_ns\":%" PRIu64 ",\"interval_ns\":%" PRIu64
	       ",\"threads\":[", r->now, span);
	for (i = 0; i < r->n; i++) {
		const struct top_row *w = &r->rows[i];

		printf("%s{\"tid\":%" PRIu32 ",\"tgid\":%" PRIu32
		       ",\"state\":\"%s\"", i ? "," : "", w->tid, w->tgid,
		       taskstate_state_name(taskstate_state(w->word)));
		for (k = 0; k < NT; k++)
			printf(",\"%s_ns\":%" PRIu64, sort_names[k], w->d[k]);
		fputs(",\"comm\":", stdout);
		if (taskstate_comm(w->tid, comm, sizeof(comm)) < 0)
			fputs("null", stdout);
		else
			json_put_string(stdout, comm);
		putchar('}');
	}
	puts("]}");
}

/* Rows that fit a terminal of stdout, or all of them elsewhere. */
static uint32_t rows_that_fit(bool tty, uint32_t n)
{
	struct winsize ws;

	if (!tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || ws.ws_row < 4)
		return n;
	return n < ws.ws_row - 3u ? n : ws.ws_row - 3u;
}

static void put_table_frame(const struct top_read *r, uint64_t span,
			    bool tty, const char *sort)
{
	char comm[TS_COMM_MAX];
	uint32_t i, shown;
	int k;

	if (tty)
		fputs("\033[H\033[2J", stdout);
	shown = rows_that_fit(tty, r->n);
	printf("taskstate top: %" PRIu32 " threads, %" PRIu64
	       " ms, by %s%s\n", r->n, span / 1000000, sort,
	       shown < r->n ? " (first rows)" : "");
	printf("%7s %7s %-8s %6s %6s %6s %6s %6s %s\n", "TID", "TGID", "STATE",
	       "RUN%", "WAIT%", "SLEEP%", "BLOCK%", "OTHER%", "COMM");
	for (i = 0; i < shown; i++) {
		const struct top_row *w = &r->rows[i];

		printf("%7" PRIu32 " %7" PRIu32 " %-8s", w->tid, w->tgid,
		       taskstate_state_name(taskstate_state(w->word)));
		for (k = 0; k < NT; k++)
			printf(" %6.1f", span ? 100.0 * w->d[k] / span : 0.0);
		if (taskstate_comm(w->tid, comm, sizeof(comm)) < 0)
			strcpy(comm, "-");
		printf(" %s\n", comm);
	}
	if (!tty)
		putchar('\n');
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int top_run(int fd, const struct top_opts *o)
{
	struct top_read old = { 0 }, cur = { 0 };
	bool tty = !o->json && isatty(STDOUT_FILENO);
	unsigned int frame;
	int ret;

	sort_key = o->sort;
	ret = top_read(fd, o->pid, &old);
	for (frame = 0; !ret && (!o->count || frame < o->count); frame++) {
		uint64_t span;

		sleep_ms(o->delay_ms);
		ret = top_read(fd, o->pid, &cur);
		if (ret)
			break;
		span = cur.now - old.now;
		top_diff(&old, &cur);
		free(old.rows);
		qsort(cur.rows, cur.n, sizeof(*cur.rows), cmp_key);
		if (o->json)
			put_json_frame(&cur, span);
		else
			put_table_frame(&cur, span, tty,
					o->sort == TOP_SORT_TID ? "tid" :
					sort_names[o->sort]);
		/* The next interval looks threads up by tid. */
		qsort(cur.rows, cur.n, sizeof(*cur.rows), cmp_tid);
		old = cur;
		if (fflush(stdout))
			break;
	}
	free(old.rows);
	if (ret == -EOPNOTSUPP) {
		fputs("taskstate top: the module keeps no per-state totals (loaded with totals=0)\n",
		      stderr);
	} else if (ret) {
		fprintf(stderr, "taskstate top: %s\n", strerror(-ret));
	}
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A label value: backslash, double quote and line feed escaped. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static int cmp_tgid(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return cmp_tid(a, b);
}

static const char *const metric_states[TASKSTATE_NR_STATES] = {
	"none", "running", "runnable", "sleeping",
	"blocked", "stopped", "traced", "dead",
};

static const char *const metric_totals[NT] = {
	"running", "runnable", "sleeping", "blocked", "other",
};

/*
 * One process's lines of one metric family (@pass): 0 its per-state
 * counters, 1 its threads per state now, 2 when its counters began.
 * The counters and their start are the module's (PROCESS: @p), which
 * keep its exited threads' time; a process whose leader is not tracked
 * (@p->valid 0) has none, and gets no counter: the sum of its live
 * threads would go down when one exits.
 */
static void put_process(FILE *f, const struct top_row *rows, uint32_t n,
			const struct taskstate_process *p, int pass)
{
	uint64_t threads[TASKSTATE_NR_STATES] = { 0 };
	char comm[TS_COMM_MAX];
	uint32_t i;
	int k;

	if (pass != 1 && !p->valid)
		return;
	for (i = 0; i < n; i++)
		threads[taskstate_state(rows[i].word)]++;
	if (taskstate_comm(rows[0].tgid, comm, sizeof(comm)) < 0)
		strcpy(comm, "");
	if (pass == 2) {
		fprintf(f, "taskstate_process_start_time_seconds{pid=\"%" PRIu32 "\",comm=\"",
			rows[0].tgid);
		put_label(f, comm);
		fprintf(f, "\"} %" PRIu64 ".%09" PRIu64 "\n",
			(uint64_t)p->start_ns / 1000000000,
			(uint64_t)p->start_ns % 1000000000);
		return;
	}
	for (k = 0; k < (pass ? TASKSTATE_NR_STATES : NT); k++) {
		if (pass && (k == TASKSTATE_NONE || !threads[k]))
			continue;
		fprintf(f, "taskstate_%s{pid=\"%" PRIu32 "\",comm=\"",
			pass ? "process_threads" :
			       "process_state_seconds_total", rows[0].tgid);
		put_label(f, comm);
		if (!pass)
			fprintf(f, "\",state=\"%s\"} %" PRIu64 ".%09" PRIu64 "\n",
				metric_totals[k],
				(uint64_t)p->state_ns[k] / 1000000000,
				(uint64_t)p->state_ns[k] % 1000000000);
		else
			fprintf(f, "\",state=\"%s\"} %" PRIu64 "\n",
				metric_states[k], threads[k]);
	}
}

static const char *const metric_head[3] = {
	"# HELP taskstate_process_state_seconds_total Seconds the tracked threads of a process, exited ones included, spent in each state since each began to be tracked (running, runnable, sleeping, blocked, other: stopped, traced, dead); only for a process whose leader is tracked.\n"
	"# TYPE taskstate_process_state_seconds_total counter\n",
	"# HELP taskstate_process_threads Tracked threads of a process in each state now.\n"
	"# TYPE taskstate_process_threads gauge\n",
	"# HELP taskstate_process_start_time_seconds When the counters of taskstate_process_state_seconds_total began, in seconds since boot (CLOCK_BOOTTIME): a new value means they restarted from zero.\n"
	"# TYPE taskstate_process_start_time_seconds gauge\n",
};

/*
 * Every process's lines, family by family.  One PROCESS per process,
 * so that its counters and their start come from one look.
 */
static int put_metrics(FILE *f, int fd, const struct top_read *r)
{
	struct taskstate_process *procs;
	uint32_t i, j, g;
	int pass;

	procs = calloc(r->n ? r->n : 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	for (i = 0, g = 0; i < r->n; i = j, g++) {
		for (j = i + 1; j < r->n &&
		     r->rows[j].tgid == r->rows[i].tgid; j++)
			;
		if (taskstate_process(fd, r->rows[i].tgid, &procs[g]) != 1)
			procs[g].valid = 0;
	}
	for (pass = 0; pass < 3; pass++) {
		fputs(metric_head[pass], f);
		for (i = 0, g = 0; i < r->n; i = j, g++) {
			for (j = i + 1; j < r->n &&
			     r->rows[j].tgid == r->rows[i].tgid; j++)
				;
			put_process(f, &r->rows[i], j - i, &procs[g], pass);
		}
	}
	free(procs);
	return 0;
}

int metrics_run(int fd, const struct metrics_opts *o)
{
	struct top_read r = { 0 };
	char *tmp = NULL;
	FILE *f = stdout;
	int ret;

	ret = top_read(fd, o->pid, &r);
	if (ret == -EOPNOTSUPP) {
		fputs("taskstate metrics: the module keeps no per-state totals (loaded with totals=0)\n",
		      stderr);
		return EXIT_FAILURE;
	}
	if (ret) {
		fprintf(stderr, "taskstate metrics: %s\n", strerror(-ret));
		return EXIT_FAILURE;
	}
	qsort(r.rows, r.n, sizeof(*r.rows), cmp_tgid);
	/* A scraper must never see half a file: write aside, rename. */
	if (o->out) {
		if (asprintf(&tmp, "%s.tmp.%d", o->out, (int)getpid()) < 0) {
			free(r.rows);
			return EXIT_FAILURE;
		}
		f = fopen(tmp, "w");
		if (!f) {
			fprintf(stderr, "taskstate metrics: %s: %s\n", tmp,
				strerror(errno));
			free(tmp);
			free(r.rows);
			return EXIT_FAILURE;
		}
	}
	ret = put_metrics(f, fd, &r);
	free(r.rows);
	if (ret) {
		fprintf(stderr, "taskstate metrics: %s\n", strerror(-ret));
		if (o->out) {
			fclose(f);
			unlink(tmp);
			free(tmp);
		}
		return EXIT_FAILURE;
	}
	if (!o->out)
		return EXIT_SUCCESS;
	ret = ferror(f) | fclose(f);
	if (!ret && rename(tmp, o->out))
		ret = -1;
	if (ret) {
		fprintf(stderr, "taskstate metrics: %s: %s\n", o->out,
			strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
