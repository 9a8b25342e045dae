// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate top: per thread (or per process), the share of the last
 * interval spent in each state (the difference of two reads of the
 * per-state totals).
 * taskstate metrics: per process (or comm, or cgroup) the same totals,
 * the threads in each state and the oldest in each, and the module's
 * health, in the Prometheus text exposition format, for node_exporter's
 * textfile collector.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "libtaskstate.h"
#include "top.h"

#define NT	TASKSTATE_MAP_NR_TOTALS
#define NS	TASKSTATE_NR_STATES

/* One thread at one read; or, for top --process, one process. */
struct top_row {
	uint32_t tid, tgid;
	uint64_t word;
	uint64_t start_ns;
	uint64_t at[NT];	/* totals up to the read */
	uint64_t d[NT];		/* over the interval */
	uint32_t threads;	/* --process: its tracked threads */
};

struct top_read {
	struct top_row *rows;	/* sorted by tid */
	uint32_t n;
	uint64_t now;
	bool totals;		/* false: the module keeps none (totals=0) */
};

static int sort_key;

int top_sort_key(const char *s)
{
	int i;

	for (i = 0; i < NT; i++)
		if (!strcmp(s, ts_total_name(i)))
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

static int cmp_tgid(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return cmp_tid(a, b);
}

/*
 * Every tracked thread of the processes pids (all if none) that is one of
 * tids (any if none), with its totals up to now; without totals (the
 * module keeps none) if want_totals is false and that is why.
 */
static int top_read(int fd, const uint32_t *pids, size_t npids,
		    const uint32_t *tids, size_t ntids, bool need_totals,
		    struct top_read *r)
{
	struct taskstate_totals *t = NULL;
	struct taskstate_entry *e;
	uint32_t i, n, k;
	int ret;

	r->totals = true;
	ret = taskstate_list(fd, npids == 1 ? pids[0] : 0, &e, &t, &n);
	if (ret == -EOPNOTSUPP && !need_totals) {
		r->totals = false;
		t = NULL;
		ret = taskstate_list(fd, npids == 1 ? pids[0] : 0, &e, NULL, &n);
	}
	if (ret < 0)
		return ret;
	r->now = taskstate_now_ns();
	r->rows = calloc(n ? n : 1, sizeof(*r->rows));
	if (!r->rows) {
		free(e);
		free(t);
		return -ENOMEM;
	}
	for (i = 0, k = 0; i < n; i++) {
		struct top_row *w = &r->rows[k];

		if ((npids > 1 && !id_in(e[i].tgid, pids, npids)) ||
		    (ntids && !id_in(e[i].tid, tids, ntids)))
			continue;
		w->tid = e[i].tid;
		w->tgid = e[i].tgid;
		w->word = e[i].word;
		w->threads = 1;
		if (t) {
			w->start_ns = t[i].start_ns;
			taskstate_totals_at(e[i].word, &t[i], r->now, w->at);
		}
		k++;
	}
	r->n = k;
	free(e);
	free(t);
	qsort(r->rows, r->n, sizeof(*r->rows), cmp_tid);
	return 0;
}

/*
 * The totals of one process at one read, the one place both metrics and
 * top --process take them from.  The module's (PROCESS) where it keeps a
 * record of the process (its leader tracked): live and exited threads
 * from one look, so they go down only when the record restarts (its
 * start_ns).  Returns true then.  Otherwise the sum over its live
 * threads rows[0..n-1] (all of tgid rows[0].tgid), which goes down when
 * one exits, and false: no counter may be made of it.
 */
static bool process_totals(int fd, const struct top_row *rows, uint32_t n,
			   uint64_t ns[NT], struct taskstate_process *p)
{
	uint32_t i;
	int k;

	if (taskstate_process(fd, rows[0].tgid, p) == 0) {
		for (k = 0; k < NT; k++)
			ns[k] = p->state_ns[k];
		return true;
	}
	memset(ns, 0, NT * sizeof(*ns));
	for (i = 0; i < n; i++)
		for (k = 0; k < NT; k++)
			ns[k] += rows[i].at[k];
	return false;
}

/*
 * Each row's time in each state between @old and @cur, rows paired by tid
 * and start_ns (a thread new since @old, a tid reused, a process whose
 * record (re)started: all of its totals).  A thread's is the difference
 * of its totals, at most the interval; a process's the growth of its
 * totals, 0 for a state whose total fell (a process without a record,
 * whose exited threads took their time).
 */
static void top_diff(const struct top_read *old, struct top_read *cur,
		     bool process)
{
	uint64_t span = cur->now - old->now, before;
	uint32_t i;
	int k;

	for (i = 0; i < cur->n; i++) {
		struct top_row *c = &cur->rows[i];
		const struct top_row *o;

		o = bsearch(c, old->rows, old->n, sizeof(*c), cmp_tid);
		if (o && o->start_ns != c->start_ns)
			o = NULL;
		for (k = 0; k < NT; k++) {
			before = o ? o->at[k] : 0;
			if (process)
				c->d[k] = c->at[k] > before ? c->at[k] - before : 0;
			else if (c->at[k] - before > span)
				c->d[k] = span;
			else
				c->d[k] = c->at[k] - before;
		}
	}
}

/*
 * r's threads folded into one row per process (tid: the pid), totals by
 * process_totals(), sorted by pid.  Returns 0 or -ENOMEM.
 */
static int fold_processes(int fd, struct top_read *r)
{
	struct top_row *p = calloc(r->n ? r->n : 1, sizeof(*p));
	struct taskstate_process pr;
	uint32_t i, j, np = 0;

	if (!p)
		return -ENOMEM;
	qsort(r->rows, r->n, sizeof(*r->rows), cmp_tgid);
	for (i = 0; i < r->n; i = j) {
		for (j = i + 1; j < r->n && r->rows[j].tgid == r->rows[i].tgid; j++)
			;
		p[np].tid = p[np].tgid = r->rows[i].tgid;
		p[np].threads = j - i;
		/* The main thread's state if tracked, else the first's. */
		p[np].word = r->rows[i].word;
		/* A restarted record is a new start, as a reused tid is. */
		p[np].start_ns = process_totals(fd, &r->rows[i], j - i,
						p[np].at, &pr) ? pr.start_ns : 0;
		np++;
	}
	free(r->rows);
	r->rows = p;
	r->n = np;
	return 0;
}

static void put_json_frame(const struct top_read *r, uint64_t span,
			   bool process)
{
	char comm[TS_COMM_MAX];
	uint32_t i;
	int k;

	printf("{\"time_ns\":%" PRIu64 ",\"interval_ns\":%" PRIu64
	       ",\"%s\":[", r->now, span, process ? "processes" : "threads");
	for (i = 0; i < r->n; i++) {
		const struct top_row *w = &r->rows[i];

		if (process)
			printf("%s{\"pid\":%" PRIu32 ",\"threads\":%" PRIu32,
			       i ? "," : "", w->tgid, w->threads);
		else
			printf("%s{\"tid\":%" PRIu32 ",\"tgid\":%" PRIu32,
			       i ? "," : "", w->tid, w->tgid);
		printf(",\"state\":\"%s\"", ts_state_name(taskstate_state(w->word)));
		for (k = 0; k < NT; k++)
			printf(",\"%s_ns\":%" PRIu64, ts_total_name(k), w->d[k]);
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
			    bool tty, const char *sort, bool process)
{
	char comm[TS_COMM_MAX], safe[TS_COMM_MAX];
	uint32_t i, shown;
	int k;

	if (tty)
		fputs("\033[H\033[2J", stdout);
	shown = rows_that_fit(tty, r->n);
	printf("taskstate top: %" PRIu32 " %s, %" PRIu64
	       " ms, by %s%s\n", r->n, process ? "processes" : "threads",
	       span / 1000000, sort, shown < r->n ? " (first rows)" : "");
	printf("%7s %7s %-8s %6s %6s %6s %6s %6s %s\n",
	       process ? "PID" : "TID", process ? "THREADS" : "TGID", "STATE",
	       "RUN%", "WAIT%", "SLEEP%", "BLOCK%", "OTHER%", "COMM");
	for (i = 0; i < shown; i++) {
		const struct top_row *w = &r->rows[i];

		printf("%7" PRIu32 " %7" PRIu32 " %-8s", w->tid,
		       process ? w->threads : w->tgid,
		       ts_state_name(taskstate_state(w->word)));
		for (k = 0; k < NT; k++)
			printf(" %6.1f", span ? 100.0 * w->d[k] / span : 0.0);
		if (taskstate_comm(w->tid, comm, sizeof(comm)) < 0)
			strcpy(comm, "-");
		printf(" %s\n", ts_sanitize(safe, sizeof(safe), comm));
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

static int top_read_opts(int fd, const struct top_opts *o, struct top_read *r)
{
	int ret = top_read(fd, o->filter.pids, o->filter.npids,
			   o->filter.tids, o->filter.ntids, true, r);

	if (!ret && o->process)
		ret = fold_processes(fd, r);
	return ret;
}

int top_run(int fd, const struct top_opts *o)
{
	struct top_read old = { 0 }, cur = { 0 };
	bool tty = !o->json && isatty(STDOUT_FILENO);
	unsigned int frame;
	int ret;

	sort_key = o->sort;
	ret = top_read_opts(fd, o, &old);
	for (frame = 0; !ret && (!o->refresh.count || frame < o->refresh.count); frame++) {
		uint64_t span;

		sleep_ms(o->refresh.delay_ms);
		ret = top_read_opts(fd, o, &cur);
		if (ret)
			break;
		span = cur.now - old.now;
		top_diff(&old, &cur, o->process);
		free(old.rows);
		qsort(cur.rows, cur.n, sizeof(*cur.rows), cmp_key);
		if (o->json)
			put_json_frame(&cur, span, o->process);
		else
			put_table_frame(&cur, span, tty,
					o->sort == TOP_SORT_TID ? "tid" :
					ts_total_name(o->sort), o->process);
		/* The next interval looks rows up by tid (pid). */
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

/* --- metrics --------------------------------------------------------------- */

int metrics_group_key(const char *s)
{
	static const char *const keys[] = {
		[GROUP_PID] = "pid", [GROUP_COMM] = "comm",
		[GROUP_CGROUP] = "cgroup",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(s, keys[i]))
			return i;
	return -1;
}

/* The cgroup v2 path of process pid ("/system.slice/x.service"), or "". */
static void cgroup_of(uint32_t pid, char *buf, size_t len)
{
	char path[40], line[4096];
	size_t n;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		/* A path longer than buf is cut: still one series per path. */
		n = strnlen(line + 3, len - 1);
		memcpy(buf, line + 3, n);
		buf[n] = '\0';
		break;
	}
	fclose(f);
}

/* One group of metrics: a process, or all the processes of a comm or cgroup. */
struct group {
	char key[512];		/* comm or cgroup; "" for a pid */
	uint32_t pid;		/* GROUP_PID */
	char comm[TS_COMM_MAX];	/* GROUP_PID */
	uint64_t total[NT];
	bool counted;		/* total[] holds a module record's totals */
	uint64_t start_ns;	/* GROUP_PID: when that record began */
	uint64_t threads[NS];
	uint64_t oldest[NS];	/* ns */
};

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The groups of r's threads, by o->group, sorted. */
static struct group *make_groups(int fd, const struct top_read *r,
				 enum metrics_group by, size_t *ngroups)
{
	struct group *g = calloc(r->n ? r->n : 1, sizeof(*g)), *cur;
	uint64_t ns[NT], now = r->now;
	size_t n = 0, i2;
	uint32_t i, j, t;
	int k;

	if (!g)
		return NULL;
	for (i = 0; i < r->n; i = j) {
		struct group probe = { 0 };

		for (j = i + 1; j < r->n && r->rows[j].tgid == r->rows[i].tgid; j++)
			;
		if (taskstate_comm(r->rows[i].tgid, probe.comm, sizeof(probe.comm)) < 0)
			probe.comm[0] = '\0';
		if (by == GROUP_PID)
			probe.pid = r->rows[i].tgid;
		else if (by == GROUP_COMM)
			memcpy(probe.key, probe.comm, sizeof(probe.comm));
		else
			cgroup_of(r->rows[i].tgid, probe.key, sizeof(probe.key));
		for (cur = NULL, i2 = 0; by != GROUP_PID && i2 < n; i2++)
			if (!strcmp(g[i2].key, probe.key))
				cur = &g[i2];
		if (!cur) {
			cur = &g[n++];
			*cur = probe;
		}
		if (r->totals) {
			struct taskstate_process pr;

			if (process_totals(fd, &r->rows[i], j - i, ns, &pr)) {
				for (k = 0; k < NT; k++)
					cur->total[k] += ns[k];
				cur->counted = true;
				cur->start_ns = pr.start_ns;
			}
		}
		for (t = i; t < j; t++) {
			struct taskstate_decoded d;

			taskstate_decode(r->rows[t].word, now, &d);
			cur->threads[d.state]++;
			if (d.age_ns > cur->oldest[d.state])
				cur->oldest[d.state] = d.age_ns;
		}
	}
	qsort(g, n, sizeof(*g), cmp_group);
	*ngroups = n;
	return g;
}

/*
 * A sample's name and labels, up to its value: @name{the group's labels,
 * state="@state"} (no state label if @state is NULL).
 */
static void put_series(FILE *f, const char *name, const struct group *g,
		       enum metrics_group by, const char *state)
{
	fprintf(f, "%s{", name);
	switch (by) {
	case GROUP_PID:
		fprintf(f, "pid=\"%" PRIu32 "\",comm=\"", g->pid);
		prom_put_label(f, g->comm);
		break;
	case GROUP_COMM:
		fputs("comm=\"", f);
		prom_put_label(f, g->key);
		break;
	case GROUP_CGROUP:
		fputs("cgroup=\"", f);
		prom_put_label(f, g->key);
		break;
	}
	fputc('"', f);
	if (state)
		fprintf(f, ",state=\"%s\"", state);
	fputs("} ", f);
}

static void put_seconds(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000, ns % 1000000000);
}

/* The states a gauge is emitted for: all but NONE (a word not yet set). */
static bool gauge_state(unsigned int s)
{
	return s != TASKSTATE_NONE;
}

static void put_family(FILE *f, const char *name, const char *type,
		       const char *help, const char *by)
{
	fprintf(f, "# HELP %s %s%s%s.\n# TYPE %s %s\n", name, help,
		by ? ", by " : "", by ? by : "", name, type);
}

/*
 * The families, in their order: first those with a sample a group (and
 * a state), then those of one sample without labels.
 */
enum family_id {
	F_TOTAL, F_START, F_THREADS, F_OLDEST,
	F_TRACKED, F_SLOTS, F_UNTRACKED, F_TOTALS_ON, NR_FAMILIES
};

/* Their HELP texts; put_family() adds the full stop. */
#define HELP_TOTAL "Seconds the tracked threads spent in each state (running, runnable, sleeping, blocked, other: stopped or traced; a dead thread's time counts in none)"
#define HELP_START "When the counters of taskstate_state_seconds_total began, in seconds since boot (CLOCK_BOOTTIME): a new value means they restarted from zero"
#define HELP_THREADS "Tracked threads in each state now"
#define HELP_OLDEST "How long the tracked thread longest in each state has been in it now (0: none in it)"
#define HELP_TRACKED "Threads the module tracks now, system-wide"
#define HELP_SLOTS "Threads the module can track at once (its max_threads parameter)"
#define HELP_UNTRACKED "Threads left untracked since the module was loaded because its table was full"
#define HELP_TOTALS_ON "1 if the module keeps per-state totals (its totals parameter), else 0"

static const struct family {
	const char *name;
	const char *type;
	const char *help;
} families[NR_FAMILIES] = {
	[F_TOTAL] = { "taskstate_state_seconds_total", "counter", HELP_TOTAL },
	[F_START] = { "taskstate_process_start_time_seconds", "gauge", HELP_START },
	[F_THREADS] = { "taskstate_threads", "gauge", HELP_THREADS },
	[F_OLDEST] = { "taskstate_oldest_seconds", "gauge", HELP_OLDEST },
	[F_TRACKED] = { "taskstate_tracked_threads", "gauge", HELP_TRACKED },
	[F_SLOTS] = { "taskstate_table_slots", "gauge", HELP_SLOTS },
	[F_UNTRACKED] = { "taskstate_untracked_threads_total", "counter", HELP_UNTRACKED },
	[F_TOTALS_ON] = { "taskstate_totals_enabled", "gauge", HELP_TOTALS_ON },
};

static void put_scalar(FILE *f, enum family_id v, uint64_t value)
{
	put_family(f, families[v].name, families[v].type, families[v].help,
		   NULL);
	fprintf(f, "%s %" PRIu64 "\n", families[v].name, value);
}

/*
 * One family, whole: Prometheus's text format wants a family's samples
 * together.  The totals and their start come only from a group with a
 * record (see process_totals()); the gauges have a sample for each
 * state but NONE.
 */
static void put_group_family(FILE *f, enum family_id v,
			     const struct group *g, size_t n,
			     enum metrics_group by)
{
	static const char *const by_names[] = {
		[GROUP_PID] = "process", [GROUP_COMM] = "comm",
		[GROUP_CGROUP] = "cgroup",
	};
	const struct family *fam = &families[v];
	const bool totals = v == F_TOTAL || v == F_START;
	unsigned int k, nk = v == F_TOTAL ? NT : v == F_START ? 1 : NS;
	const char *state;
	size_t i;

	put_family(f, fam->name, fam->type, fam->help, by_names[by]);
	for (i = 0; i < n; i++) {
		if (totals && !g[i].counted)
			continue;
		for (k = 0; k < nk; k++) {
			if (!totals && !gauge_state(k))
				continue;
			state = v == F_TOTAL ? ts_total_name(k) :
				v == F_START ? NULL : ts_state_name(k);
			put_series(f, fam->name, &g[i], by, state);
			if (v == F_THREADS)
				fprintf(f, "%" PRIu64 "\n", g[i].threads[k]);
			else
				put_seconds(f, v == F_TOTAL ? g[i].total[k] :
					    v == F_START ? g[i].start_ns :
					    g[i].oldest[k]);
		}
	}
}

static void put_metrics(FILE *f, int fd, const struct top_read *r,
			const struct taskstate_info *info,
			enum metrics_group by)
{
	char srcversion[64] = "";
	struct group *g;
	FILE *sv;
	size_t n;

	g = make_groups(fd, r, by, &n);
	if (!g)
		n = 0;
	if (r->totals)
		put_group_family(f, F_TOTAL, g, n, by);
	if (r->totals && by == GROUP_PID)
		put_group_family(f, F_START, g, n, by);
	put_group_family(f, F_THREADS, g, n, by);
	put_group_family(f, F_OLDEST, g, n, by);
	free(g);

	put_scalar(f, F_TRACKED, info->nr_tracked);
	put_scalar(f, F_SLOTS, info->max_threads);
	put_scalar(f, F_UNTRACKED, info->nr_untracked);
	put_scalar(f, F_TOTALS_ON, r->totals);
	put_family(f, "taskstate_info", "gauge",
		   "Always 1: the versions of the module's ABI, of the module (srcversion) and of this command, as labels", NULL);
	sv = fopen("/sys/module/taskstate/srcversion", "re");
	if (sv) {
		if (!fgets(srcversion, sizeof(srcversion), sv))
			srcversion[0] = '\0';
		srcversion[strcspn(srcversion, "\n")] = '\0';
		fclose(sv);
	}
	fprintf(f, "taskstate_info{abi_version=\"%" PRIu32 "\",module_srcversion=\"",
		info->abi_version);
	prom_put_label(f, srcversion);
	fputs("\",version=\"" TASKSTATE_VERSION "\"} 1\n", f);
}

/*
 * Write to o->out as a scraper must see it: whole (a temporary file in
 * the same directory, renamed over it) and mode 0644 whatever the umask
 * (node_exporter runs as another user).
 */
static int write_atomically(const char *out, int fd, const struct top_read *r,
			    const struct taskstate_info *info,
			    enum metrics_group by)
{
	char *tmp = NULL;
	int tfd, ret = 0;
	FILE *f;

	if (asprintf(&tmp, "%s.tmp.XXXXXX", out) < 0)
		return -ENOMEM;
	tfd = mkostemp(tmp, O_CLOEXEC);
	if (tfd < 0) {
		ret = -errno;
		fprintf(stderr, "taskstate metrics: %s: %s\n", tmp, strerror(errno));
		free(tmp);
		return ret;
	}
	f = fchmod(tfd, 0644) ? NULL : fdopen(tfd, "w");
	if (!f) {
		ret = -errno;
		close(tfd);
		goto out_unlink;
	}
	put_metrics(f, fd, r, info, by);
	if (fflush(f) || ferror(f) || fsync(tfd))
		ret = errno ? -errno : -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, out))
		ret = -errno;
out_unlink:
	if (ret) {
		fprintf(stderr, "taskstate metrics: %s: %s\n", out, strerror(-ret));
		unlink(tmp);
	}
	free(tmp);
	return ret;
}

int metrics_run(int fd, const struct metrics_opts *o)
{
	struct taskstate_info info;
	struct top_read r = { 0 };
	int ret;

	ret = taskstate_info(fd, &info);
	if (!ret)
		ret = top_read(fd, o->pids, o->npids, NULL, 0, false, &r);
	if (ret) {
		fprintf(stderr, "taskstate metrics: %s\n", strerror(-ret));
		return EXIT_FAILURE;
	}
	qsort(r.rows, r.n, sizeof(*r.rows), cmp_tgid);
	if (o->out)
		ret = write_atomically(o->out, fd, &r, &info, o->group);
	else
		put_metrics(stdout, fd, &r, &info, o->group);
	free(r.rows);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
