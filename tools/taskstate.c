// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate: track threads and show their state words, like ps and top.
 *
 * Exit status: 0 success, 1 runtime error, 2 usage error (documented in
 * the help and in man/taskstate.1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "libtaskstate.h"
#include "top.h"

#define EXIT_USAGE	2

struct command {
	const char *name;
	int (*run)(const struct command *cmd, int argc, char **argv);
	const char *help;
};

static const char main_help[] =
"Usage: taskstate COMMAND [OPTIONS]\n"
"\n"
"Track threads and show their scheduling state from /dev/taskstate.\n"
"\n"
"Commands:\n"
"  track [-p] ID        start tracking a thread, or with -p a process\n"
"  untrack [-p] ID      stop tracking a thread, or with -p a process\n"
"  show [SELECTION] [--ns] [--json]\n"
"                       list the tracked threads\n"
"  watch [SELECTION] [-d DURATION] [-n N] [-s DURATION] [-o KEY]\n"
"                       list them again and again, like top\n"
"  top [-p PID] [-d DURATION] [-n N] [-o KEY] [--json]\n"
"                       the share of each interval spent in each state\n"
"  metrics [-p PID] [-o FILE]\n"
"                       per-process time in each state, for Prometheus\n"
"  info                 show what the module is and holds\n"
"\n"
"Options:\n"
"  -h, --help           show this help\n"
"      --version        show the version\n"
"\n"
"'taskstate COMMAND --help' describes a command; man taskstate, all of\n"
"them.  Opening the device needs CAP_PERFMON or CAP_SYS_ADMIN;\n"
"TASKSTATE_DEV overrides its path.  Colours only on a terminal, and\n"
"never with NO_COLOR set.\n"
"Exit status: 0 success, 1 error, 2 usage error.\n";

static const char track_help[] =
"Usage: taskstate track [-p] ID\n"
"\n"
"Start tracking thread ID.\n"
"\n"
"  -p, --process   ID is a process: track all its threads, its future\n"
"                  threads and its children\n"
"  -h, --help      show this help\n";

static const char untrack_help[] =
"Usage: taskstate untrack [-p] ID\n"
"\n"
"Stop tracking thread ID.\n"
"\n"
"  -p, --process   ID is a process: untrack all its threads and stop\n"
"                  tracking its future threads and children\n"
"  -h, --help      show this help\n";

#define SELECTION_HELP \
"  -p, --pid PID[,PID...]     only the threads of these processes\n" \
"  -t, --tid TID[,TID...]     only these threads\n" \
"      --state STATE[,STATE...]\n" \
"                             only threads in one of these states\n" \
"      --min-age DURATION     only threads in their state for at least\n" \
"                             DURATION (a bare number is seconds)\n"

#define DURATION_HELP \
"A DURATION is a number with a unit, ns us ms s m h d, a fraction\n" \
"allowed, or several: 500ms, 1.5s, 1h30m.\n"

static const char show_help[] =
"Usage: taskstate show [SELECTION] [--ns] [--json]\n"
"\n"
"List the tracked threads, sorted by TID:\n"
"  TID TGID STATE SINCE AGE COMM\n"
"SINCE is when the thread entered STATE, as the time since boot\n"
"(CLOCK_BOOTTIME), AGE how long it has been in it, as durations\n"
"(1.9s, 3m12s, 2h05m).  COMM is '-' for a thread gone.  The selection\n"
"options combine: a thread is listed if it matches all.\n"
"\n"
SELECTION_HELP
"      --ns                   SINCE_NS and AGE_NS, in ns\n"
"      --json                 one JSON object {\"threads\": [...]}, one\n"
"                             object per thread with the keys tid, tgid,\n"
"                             state, since_ns, age_ns and comm (null if\n"
"                             gone)\n"
"  -h, --help                 show this help\n"
"\n"
DURATION_HELP;

static const char watch_help[] =
"Usage: taskstate watch [SELECTION] [-d DURATION] [-n N] [-s DURATION]\n"
"                       [-o KEY] [--ns] [--no-map]\n"
"\n"
"List the tracked threads every delay, with the number in each state.\n"
"A thread waiting (SLEEPING, BLOCKED, STOPPED, TRACED or DEAD) for longer\n"
"than the --stuck time is marked with '!' (and listed first by default).\n"
"On a terminal the screen is redrawn in place: q or Ctrl-C quits, any\n"
"other key refreshes.  Otherwise each refresh prints a block of plain\n"
"lines, blocks separated by an empty line.\n"
"\n"
"The words are read through a read-only mapping of the module's entries,\n"
"without a system call per refresh, when the module allows it (the\n"
"initial pid namespace only); else with the LIST ioctl.  'taskstate info'\n"
"says which.\n"
"\n"
SELECTION_HELP
"  -s, --stuck DURATION       mark threads waiting longer (1s; a bare\n"
"                             number is ms)\n"
"  -d, --delay DURATION       refresh every DURATION (1s; a bare number\n"
"                             is seconds, as in top)\n"
"  -n, --count N              stop after N refreshes\n"
"  -o, --sort KEY             stuck (stuck first, the default), age\n"
"                             (longest first), state, or tid\n"
"      --ns                   SINCE_NS and AGE_NS, in ns\n"
"      --no-map               always use the LIST ioctl\n"
"  -h, --help                 show this help\n"
"\n"
DURATION_HELP;

static const char top_help[] =
"Usage: taskstate top [-p PID] [-d DURATION] [-n N] [-o KEY] [--json]\n"
"\n"
"Every delay, per tracked thread, the share of the interval it spent in\n"
"each state, from the module's per-state totals:\n"
"  TID TGID STATE RUN% WAIT% SLEEP% BLOCK% OTHER% COMM\n"
"RUN is on a CPU, WAIT runnable on a run queue, SLEEP interruptible\n"
"sleep, BLOCK uninterruptible, OTHER stopped, traced or dead.  On a\n"
"terminal the screen is redrawn in place (Ctrl-C quits); otherwise each\n"
"refresh is a block of lines, blocks separated by an empty line.\n"
"\n"
"  -p, --pid PID              only the threads of process PID\n"
"  -d, --delay DURATION       refresh every DURATION (1s; a bare number\n"
"                             is seconds, as in top)\n"
"  -n, --count N              stop after N refreshes\n"
"  -o, --sort KEY             run (the default), wait, sleep, block or\n"
"                             other (largest share first), or tid\n"
"      --json                 one JSON object per refresh and line:\n"
"                             time_ns, interval_ns, threads (tid, tgid,\n"
"                             state, run_ns, wait_ns, sleep_ns, block_ns,\n"
"                             other_ns, comm: null if gone)\n"
"  -h, --help                 show this help\n";

static const char metrics_help[] =
"Usage: taskstate metrics [-p PID] [-o FILE]\n"
"\n"
"Print the Prometheus text exposition format: per process, the seconds\n"
"its tracked threads spent in each state (a counter,\n"
"taskstate_process_state_seconds_total, state running, runnable,\n"
"sleeping, blocked or other) and how many are in each state now (a\n"
"gauge, taskstate_process_threads).  The counter keeps the time of the\n"
"threads that exited: it restarts only when the process does, or the\n"
"module's record of it (taskstate_process_start_time_seconds, a gauge:\n"
"when the counter began, seconds since boot).  A process whose leader\n"
"is not tracked has neither, only the threads gauge.\n"
"\n"
"  -p, --pid PID          only process PID\n"
"  -o, --output FILE      write FILE atomically (a temporary file renamed\n"
"                         over it), e.g. for node_exporter's textfile\n"
"                         collector\n"
"  -h, --help             show this help\n";

static const char info_help[] =
"Usage: taskstate info\n"
"\n"
"Show what the module is and holds, one 'key: value' per line.  The last,\n"
"watch_reads, says how 'taskstate watch' reads the words here: 'mmap', or\n"
"'ioctl' and why the mapping cannot be used.\n"
"\n"
"  -h, --help      show this help\n";

static void usage_error(const struct command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void usage_error(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	if (cmd && cmd->name)
		fprintf(stderr, "taskstate %s: ", cmd->name);
	else
		fputs("taskstate: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(EXIT_USAGE);
}

/*
 * getopt_long() over a command's arguments: prints the help and exits for
 * -h, exits with a usage error for a bad option, else returns the option
 * (-1 at the end).  optstring must start with ':'.
 */
static int next_option(const struct command *cmd, int argc, char **argv,
		       const char *optstring, const struct option *longopts)
{
	int c = getopt_long(argc, argv, optstring, longopts, NULL);

	switch (c) {
	case 'h':
		fputs(cmd->help, stdout);
		exit(EXIT_SUCCESS);
	case '?':
		if (!optopt)
			usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		/* A known optopt is a long option given a value: --json=1. */
		if (optopt >= 256 || strchr(optstring, optopt))
			usage_error(cmd, "option '%s' takes no value",
				    argv[optind - 1]);
		usage_error(cmd, "unknown option '-%c'", optopt);
	case ':':
		usage_error(cmd, "option '%s' needs an argument",
			    argv[optind - 1]);
	}
	return c;
}

/* The positional arguments left after the options: exactly n. */
static void want_args(const struct command *cmd, int argc, int n,
		      const char *what)
{
	if (argc - optind < n)
		usage_error(cmd, "missing %s", what);
	if (argc - optind > n)
		usage_error(cmd, "unexpected argument");
}

static uint64_t num_arg(const struct command *cmd, const char *what,
			const char *s, uint64_t min, uint64_t max)
{
	uint64_t v;
	int ret = parse_num(s, min, max, &v);

	if (ret == -EINVAL)
		usage_error(cmd, "%s '%s' is not a number", what, s);
	if (ret)
		usage_error(cmd, "%s '%s' is out of range %" PRIu64 "..%" PRIu64,
			    what, s, min, max);
	return v;
}

static unsigned int id_arg(const struct command *cmd, const char *what,
			   const char *s)
{
	return num_arg(cmd, what, s, 1, INT_MAX);
}

static int open_device(void)
{
	int fd = taskstate_open();
	const char *hint = "";

	if (fd == -EPERM || fd == -EACCES)
		hint = " (needs CAP_PERFMON or CAP_SYS_ADMIN)";
	else if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		hint = " (is the module loaded?)";
	if (fd < 0)
		fprintf(stderr, "taskstate: %s: %s%s\n", taskstate_dev_path(),
			strerror(-fd), hint);
	return fd;
}

static int run_track(const struct command *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "process", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	bool untrack = !strcmp(cmd->name, "untrack");
	bool process = false;
	unsigned int id;
	uint64_t nr = 0;
	int fd, ret;

	while (next_option(cmd, argc, argv, ":hp", longopts) != -1)
		process = true;		/* -p is the only option left */
	want_args(cmd, argc, 1, "ID");
	id = id_arg(cmd, "ID", argv[optind]);

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = untrack ? taskstate_untrack(fd, id, process, &nr) :
			taskstate_track(fd, id, process, &nr);
	taskstate_close(fd);
	if (ret < 0) {
		fprintf(stderr, "taskstate: %s %s %u: %s%s\n", cmd->name,
			process ? "process" : "thread", id, strerror(-ret),
			ret == -ENOSPC ? " (table full, see max_threads)" : "");
		return EXIT_FAILURE;
	}
	printf("%sed %" PRIu64 " thread%s ", cmd->name, nr, nr == 1 ? "" : "s");
	if (process)
		printf("of process %u\n", id);
	else
		printf("(tid %u)\n", id);
	return EXIT_SUCCESS;
}

/*
 * The tracked threads matching f as *rows, *n of them, aged at one "now"
 * read after the list: LIST once per process of f->pids, or once for all.
 * Returns the kernel's total of threads it was asked about (more than it
 * gave only if a list was cut short) or -errno.
 */
static int get_rows(int fd, const struct ts_filter *f, uint64_t stuck_ns,
		    struct ts_row **rows, size_t *n)
{
	struct taskstate_entry *e = NULL, *part, *tmp;
	size_t i, nr = 0, k, calls = f->npids ? f->npids : 1;
	struct ts_row *r;
	uint64_t now;
	uint32_t got;
	int ret, total = 0;

	for (k = 0; k < calls; k++) {
		ret = taskstate_list(fd, f->npids ? f->pids[k] : 0, &part, &got);
		if (ret < 0) {
			free(e);
			return ret;
		}
		tmp = realloc(e, (nr + got + 1) * sizeof(*e));
		if (!tmp) {
			free(part);
			free(e);
			return -ENOMEM;
		}
		e = tmp;
		memcpy(e + nr, part, got * sizeof(*e));
		free(part);
		nr += got;
		total = ret > INT_MAX - total ? INT_MAX : total + ret;
	}
	now = taskstate_now_ns();
	r = calloc(nr ? nr : 1, sizeof(*r));
	if (!r) {
		free(e);
		return -ENOMEM;
	}
	for (i = 0, *n = 0; i < nr; i++) {
		struct ts_row *row = &r[*n];

		row->tid = e[i].tid;
		row->tgid = e[i].tgid;
		taskstate_decode(e[i].word, now, &row->d);
		if (!row_matches(f, row))
			continue;
		row->stuck = row_is_stuck(row, stuck_ns);
		row->has_comm = taskstate_comm(e[i].tid, row->comm,
					       sizeof(row->comm)) >= 0;
		(*n)++;
	}
	free(e);
	*rows = r;
	/* What the kernel had beyond what it gave, on top of what matched. */
	return total - (int)nr + (int)*n;
}

/*
 * What watch knows of the owner of each mapped entry, found once per
 * owner (the entry's gen): its tgid, from /proc.
 */
struct map_owner {
	uint32_t gen;		/* 0: not looked up yet */
	uint32_t tid;
	uint32_t tgid;		/* 0: the thread is gone */
};

/* The tgid of thread tid, from /proc/<tid>/status; 0 if it is gone. */
static uint32_t tgid_of(uint32_t tid)
{
	char path[32], line[128];
	unsigned int tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/*
 * get_rows() through the mapping: every owned entry, read by the
 * protocol of the uapi header, no system call but for what /proc adds
 * (the tgid of a new owner, the comm).  The tids are the initial pid
 * namespace's, which is where the mapping is allowed.
 */
static int get_rows_mapped(struct taskstate_mapping *m, struct map_owner *owners,
			   const struct ts_filter *f, uint64_t stuck_ns,
			   struct ts_row **rows, size_t *n)
{
	size_t nr = 0, cap = 256;
	struct ts_row *r = malloc(cap * sizeof(*r)), *tmp;
	uint32_t i, tid, gen;
	uint64_t word, now;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < m->nr; i++) {
		struct map_owner *o = &owners[i];

		if (!taskstate_mapping_entry(m, i, &tid, &word, &gen) || !tid)
			continue;
		if (o->gen != gen || o->tid != tid) {
			o->gen = gen;
			o->tid = tid;
			o->tgid = tgid_of(tid);
		}
		if (!o->tgid)
			continue;
		if (nr == cap) {
			tmp = realloc(r, 2 * cap * sizeof(*r));
			if (!tmp) {
				free(r);
				return -ENOMEM;
			}
			r = tmp;
			cap *= 2;
		}
		memset(&r[nr], 0, sizeof(r[nr]));
		r[nr].tid = tid;
		r[nr].tgid = o->tgid;
		r[nr].d.state = taskstate_state(word);
		r[nr].d.since_ns = word;	/* the word: decoded below */
		nr++;
	}
	now = taskstate_now_ns();
	for (i = 0, *n = 0; i < nr; i++) {
		struct ts_row *row = &r[*n];

		*row = r[i];
		taskstate_decode(r[i].d.since_ns, now, &row->d);
		if (!row_matches(f, row))
			continue;
		row->stuck = row_is_stuck(row, stuck_ns);
		row->has_comm = taskstate_comm(row->tid, row->comm,
					       sizeof(row->comm)) >= 0;
		(*n)++;
	}
	*rows = r;
	return *n > INT_MAX ? INT_MAX : (int)*n;
}

/* Colours: on a terminal, unless NO_COLOR is set and not empty. */
static bool want_color(void)
{
	const char *no = getenv("NO_COLOR");

	return isatty(STDOUT_FILENO) && !(no && *no);
}

enum {
	OPT_JSON = 256, OPT_NS, OPT_STATE, OPT_MIN_AGE, OPT_NO_MAP,
};

static uint64_t duration_arg(const struct command *cmd, const char *what,
			     const char *s, uint64_t bare_unit_ns)
{
	uint64_t ns;
	int ret = parse_duration(s, bare_unit_ns, &ns);

	if (ret == -ERANGE)
		usage_error(cmd, "%s '%s' is too long", what, s);
	if (ret)
		usage_error(cmd, "%s '%s' is not a duration (e.g. 500ms, 2s, 1m30s)",
			    what, s);
	return ns;
}

/*
 * A selection option (-p -t --state --min-age, in the longopts of show
 * and watch) into f: whether c was one.
 */
static bool selection_option(const struct command *cmd, int c,
			     const char *arg, struct ts_filter *f)
{
	switch (c) {
	case 'p':
		free(f->pids);
		if (parse_id_list(arg, &f->pids, &f->npids))
			usage_error(cmd, "PID list '%s' is not numbers 1..%d separated by commas",
				    arg, INT_MAX);
		return true;
	case 't':
		free(f->tids);
		if (parse_id_list(arg, &f->tids, &f->ntids))
			usage_error(cmd, "TID list '%s' is not numbers 1..%d separated by commas",
				    arg, INT_MAX);
		return true;
	case OPT_STATE:
		if (parse_state_list(arg, &f->states))
			usage_error(cmd, "state list '%s' is not names of states separated by commas (%s)",
				    arg, "RUNNING, RUNNABLE, SLEEPING, BLOCKED, STOPPED, TRACED, DEAD, NONE");
		return true;
	case OPT_MIN_AGE:
		f->min_age_ns = duration_arg(cmd, "--min-age", arg, 1000000000ULL);
		return true;
	}
	return false;
}

static int run_show(const struct command *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-age", required_argument, NULL, OPT_MIN_AGE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "ns", no_argument, NULL, OPT_NS },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct ts_widths w = { 0 };
	char line[TS_LINE_MAX];
	struct ts_filter f = { 0 };
	struct ts_row *rows;
	bool json = false;
	size_t i, n;
	int c, fd, total;

	while ((c = next_option(cmd, argc, argv, ":hp:t:", longopts)) != -1) {
		if (selection_option(cmd, c, optarg, &f))
			continue;
		if (c == OPT_JSON)
			json = true;
		else
			w.ns = true;
	}
	want_args(cmd, argc, 0, "");

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	total = get_rows(fd, &f, 0, &rows, &n);
	taskstate_close(fd);
	free(f.pids);
	free(f.tids);
	if (total < 0) {
		fprintf(stderr, "taskstate: list: %s\n", strerror(-total));
		return EXIT_FAILURE;
	}
	sort_rows(rows, n, TS_SORT_TID);

	if (json) {
		print_json(stdout, rows, n);
	} else {
		w.color = want_color();
		table_widths(rows, n, &w);
		format_header(line, sizeof(line), &w);
		puts(line);
		for (i = 0; i < n; i++) {
			format_row(line, sizeof(line), &rows[i], &w);
			puts(line);
		}
	}
	if ((size_t)total > n)
		fprintf(stderr, "taskstate: showing %zu of %d threads\n",
			n, total);
	free(rows);
	return EXIT_SUCCESS;
}

struct watch {
	int fd;
	struct taskstate_mapping map;	/* entries NULL: read with LIST */
	struct map_owner *owners;
	struct ts_filter filter;
	uint64_t stuck_ns;
	int delay_ms;
	enum ts_sort sort;
	bool ns;		/* --ns */
	bool color;
	unsigned int count;	/* refreshes before stopping, 0 for no end */
	bool tty;		/* stdout is a terminal: redraw in place */
	unsigned int width;	/* tty: screen size */
	unsigned int height;
	unsigned int lines;	/* lines drawn of this screen */
};

/*
 * The terminal as watch changed it, for term_restore(), which the quit
 * signal handler calls too: a signal ends watch at once, wherever it is,
 * even in a write() blocked on a terminal or pipe that is not drained.
 */
static struct {
	struct termios saved;		/* stdin's mode before raw */
	volatile sig_atomic_t keys;	/* stdin in raw mode: read keys */
	volatile sig_atomic_t screen;	/* on the alternate screen */
} term;

static const char leave_screen[] = "\033[?25h\033[?1049l";

/* Async-signal-safe, and harmless when repeated: see term above. */
static void term_restore(void)
{
	if (term.keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &term.saved);
	if (term.screen) {
		/* If this fails the terminal is gone: nothing to restore. */
		ssize_t ret __attribute__((unused));

		ret = write(STDOUT_FILENO, leave_screen, sizeof(leave_screen) - 1);
	}
}

static void on_quit_signal(int sig)
{
	(void)sig;
	term_restore();
	_exit(EXIT_SUCCESS);
}

/*
 * Restoring can block too, writing to a terminal that does not drain: the
 * handler is then left by a second signal, which has the default action.
 */
static void catch_quit_signals(void)
{
	static const int quit_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = {
		.sa_handler = on_quit_signal,
		.sa_flags = SA_RESETHAND | SA_NODEFER,
	};
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(quit_signals) / sizeof(quit_signals[0]); i++)
		sigaction(quit_signals[i], &sa, NULL);
}

/* Raw keys, if stdin is a terminal, and the alternate screen. */
static void term_enter(void)
{
	struct termios raw;

	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &term.saved)) {
		raw = term.saved;
		raw.c_lflag &= ~(ICANON | ECHO | ISIG);	/* ^C is read as a key */
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		term.keys = 1;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	term.screen = 1;
	fputs("\033[?1049h\033[?25l", stdout);
}

/*
 * One line of a refresh.  On a terminal: cut to the screen width, in the
 * attribute attr (an SGR escape, or NULL), not past the last line but one
 * (so the screen does not scroll); returns false once the screen is full.
 */
/*
 * The bytes of s that show in width columns: escape sequences (the state
 * colours, ESC [ ... letter) take none and are never cut in two.
 */
static int visible_cut(const char *s, unsigned int width)
{
	const char *p = s;

	while (*p) {
		if (p[0] == '\033' && p[1] == '[') {
			p += 2;
			while (*p && !(*p >= 0x40 && *p <= 0x7e))
				p++;
			if (*p)
				p++;
			continue;
		}
		if (!width)
			break;
		width--;
		p++;
	}
	return p - s;
}

static bool put_line(struct watch *w, const char *s, const char *attr)
{
	if (!w->tty) {
		puts(s);
		return true;
	}
	if (w->lines + 1 >= w->height)
		return false;
	w->lines++;
	printf("%s%.*s%s\033[K\n", attr ? attr : "", visible_cut(s, w->width),
	       s, attr ? "\033[m" : w->color ? "\033[39m" : "");
	return true;
}

static void draw(struct watch *w, const struct ts_row *rows, size_t n,
		 int total)
{
	uint64_t count[TASKSTATE_NR_STATES] = { 0 };
	char line[TS_LINE_MAX], when[16], stuck_for[TS_DURATION_MAX];
	size_t i, stuck = 0, len;
	struct ts_widths tw = { .ns = w->ns, .color = w->color };
	struct winsize ws;
	time_t t = time(NULL);
	unsigned int s;

	for (i = 0; i < n; i++) {
		count[rows[i].d.state]++;
		stuck += rows[i].stuck;
	}
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));

	if (w->tty) {
		w->width = 80;
		w->height = 24;
		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col &&
		    ws.ws_row) {
			w->width = ws.ws_col;
			w->height = ws.ws_row;
		}
		w->lines = 0;
		fputs("\033[H", stdout);
	}

	len = snprintf(line, sizeof(line),
		       "taskstate %s  threads %zu", when, n);
	if ((size_t)total > n)
		len += snprintf(line + len, sizeof(line) - len, " of %d", total);
	format_duration(stuck_for, sizeof(stuck_for), w->stuck_ns);
	snprintf(line + len, sizeof(line) - len, "  stuck %zu (> %s)%s",
		 stuck, stuck_for, term.keys ? "  q: quit" : "");
	put_line(w, line, NULL);

	for (s = 0, len = 0; s < TASKSTATE_NR_STATES; s++)
		len += snprintf(line + len, sizeof(line) - len, "%s%s %" PRIu64,
				s ? "  " : "", taskstate_state_name(s), count[s]);
	put_line(w, line, NULL);

	table_widths(rows, n, &tw);
	line[0] = ' ';
	line[1] = ' ';
	format_header(line + 2, sizeof(line) - 2, &tw);
	put_line(w, line, w->tty ? "\033[1m" : NULL);
	for (i = 0; i < n; i++) {
		line[0] = rows[i].stuck ? '!' : ' ';
		format_row(line + 2, sizeof(line) - 2, &rows[i], &tw);
		if (!put_line(w, line, rows[i].stuck && w->tty ? "\033[7m" : NULL))
			break;
	}
	if (w->tty)
		fputs("\033[J", stdout);
	fflush(stdout);
}

/* Wait for the interval or a key: 1 for q or ^C, 0 to refresh now. */
static int wait_key(const struct watch *w)
{
	struct pollfd p = { .fd = term.keys ? STDIN_FILENO : -1,
			    .events = POLLIN };
	char keys[32];
	ssize_t i, n;

	if (poll(&p, 1, w->delay_ms) <= 0 || !p.revents)
		return 0;
	n = read(STDIN_FILENO, keys, sizeof(keys));
	if (n <= 0)
		return 1;		/* the terminal went away */
	for (i = 0; i < n; i++)
		if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3)
			return 1;	/* q, ^C */
	return 0;
}

/* Refresh until told to quit or done; returns 0 or -errno. */
static int watch_loop(struct watch *w)
{
	struct ts_row *rows;
	bool first;
	size_t n;
	int ret;

	for (first = true; ; first = false) {
		if (w->map.entries)
			ret = get_rows_mapped(&w->map, w->owners, &w->filter,
					      w->stuck_ns, &rows, &n);
		else
			ret = get_rows(w->fd, &w->filter, w->stuck_ns, &rows, &n);
		if (ret < 0)
			return ret;
		sort_rows(rows, n, w->sort);
		if (!w->tty && !first)
			putchar('\n');
		draw(w, rows, n, ret);
		free(rows);
		if (w->count && !--w->count)
			return 0;
		if (wait_key(w))
			return 0;
	}
}

/*
 * Map the entries for watch; 0, or -errno saying why the ioctls must do.
 * Only mapped, not used, if the caller is outside the initial pid
 * namespace: the module refuses that with EPERM.
 */
static int watch_map(int fd, struct taskstate_mapping *m, struct map_owner **owners)
{
	int ret = taskstate_mapping_open(fd, m);

	if (ret)
		return ret;
	*owners = calloc(m->nr ? m->nr : 1, sizeof(**owners));
	if (!*owners) {
		taskstate_mapping_close(m);
		return -ENOMEM;
	}
	return 0;
}

static int run_watch(const struct command *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "min-age", required_argument, NULL, OPT_MIN_AGE },
		{ "stuck", required_argument, NULL, 's' },
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 'o' },
		{ "ns", no_argument, NULL, OPT_NS },
		{ "no-map", no_argument, NULL, OPT_NO_MAP },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct watch w = { .stuck_ns = 1000000000ULL, .delay_ms = 1000 };
	bool map = true;
	uint64_t ns;
	int c, ret;

	while ((c = next_option(cmd, argc, argv, ":hp:t:s:d:n:o:",
				longopts)) != -1) {
		if (selection_option(cmd, c, optarg, &w.filter))
			continue;
		switch (c) {
		case 's':
			w.stuck_ns = duration_arg(cmd, "--stuck", optarg,
						  1000000ULL);
			break;
		case 'd':
			ns = duration_arg(cmd, "--delay", optarg, 1000000000ULL);
			if (ns / 1000000 > INT_MAX)
				usage_error(cmd, "--delay '%s' is too long", optarg);
			w.delay_ms = ns / 1000000;
			break;
		case 'n':
			w.count = num_arg(cmd, "--count", optarg, 1, UINT_MAX);
			break;
		case 'o':
			ret = parse_sort_key(optarg);
			if (ret < 0)
				usage_error(cmd, "sort key '%s' is not stuck, age, state or tid",
					    optarg);
			w.sort = ret;
			break;
		case OPT_NS:
			w.ns = true;
			break;
		case OPT_NO_MAP:
			map = false;
			break;
		}
	}
	want_args(cmd, argc, 0, "");

	w.fd = open_device();
	if (w.fd < 0)
		return EXIT_FAILURE;
	if (map)
		watch_map(w.fd, &w.map, &w.owners);	/* else: LIST */
	catch_quit_signals();
	w.tty = isatty(STDOUT_FILENO);
	w.color = want_color();
	if (w.tty)
		term_enter();
	ret = watch_loop(&w);
	fflush(stdout);
	term_restore();
	taskstate_mapping_close(&w.map);
	free(w.owners);
	free(w.filter.pids);
	free(w.filter.tids);
	taskstate_close(w.fd);
	if (ret < 0) {
		fprintf(stderr, "taskstate: list: %s\n", strerror(-ret));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

static int run_info(const struct command *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct taskstate_info info;
	struct map_owner *owners = NULL;
	struct taskstate_mapping m;
	int fd, ret, map_err = 0;

	while (next_option(cmd, argc, argv, ":h", longopts) != -1)
		;
	want_args(cmd, argc, 0, "");

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = taskstate_info(fd, &info);
	if (!ret) {
		/* what watch would do */
		map_err = watch_map(fd, &m, &owners);
		if (!map_err)
			taskstate_mapping_close(&m);
		free(owners);
	}
	taskstate_close(fd);
	if (ret < 0) {
		fprintf(stderr, "taskstate: info: %s\n", strerror(-ret));
		return EXIT_FAILURE;
	}
	printf("abi_version: %" PRIu32 "\n"
	       "state_shift: %" PRIu32 "\n"
	       "time_bits: %" PRIu32 "\n"
	       "clock_id: %" PRIu32 "\n"
	       "max_threads: %" PRIu32 "\n"
	       "batch_max: %" PRIu32 "\n"
	       "track_all: %" PRIu32 "\n"
	       "nr_tracked: %" PRIu64 "\n"
	       "nr_untracked: %" PRIu64 "\n"
	       "map_entry_size: %" PRIu32 "\n"
	       "map_layout: %" PRIu32 "\n"
	       "map_entries: %" PRIu32 "\n"
	       "map_size: %" PRIu64 "\n",
	       info.abi_version, info.state_shift, info.time_bits,
	       info.clock_id, info.max_threads, info.batch_max,
	       info.track_all, (uint64_t)info.nr_tracked,
	       (uint64_t)info.nr_untracked, info.map_entry_size,
	       info.map_layout, info.map_entries, (uint64_t)info.map_size);
	if (map_err)
		printf("watch_reads: ioctl (mmap: %s)\n", strerror(-map_err));
	else
		printf("watch_reads: mmap\n");
	return EXIT_SUCCESS;
}

static int run_top(const struct command *cmd, int argc, char **argv)
{
	enum { OPT_JSON = 256 };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct top_opts o = { .delay_ms = 1000, .sort = TASKSTATE_TOTAL_RUNNING };
	uint64_t ns;
	int c, fd, ret;

	while ((c = next_option(cmd, argc, argv, ":p:d:n:o:h",
				longopts)) != -1) {
		switch (c) {
		case 'p':
			o.pid = id_arg(cmd, "--pid", optarg);
			break;
		case 'd':
			ns = duration_arg(cmd, "--delay", optarg, 1000000000ULL);
			if (ns < 10000000 || ns / 1000000 > INT_MAX)
				usage_error(cmd, "--delay '%s' is outside 10ms..24d",
					    optarg);
			o.delay_ms = ns / 1000000;
			break;
		case 'n':
			o.count = num_arg(cmd, "--count", optarg, 1, INT_MAX);
			break;
		case 'o':
			ret = top_sort_key(optarg);
			if (ret < 0)
				usage_error(cmd, "unknown sort key '%s'", optarg);
			o.sort = ret;
			break;
		case OPT_JSON:
			o.json = true;
			break;
		}
	}
	want_args(cmd, argc, 0, "");
	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = top_run(fd, &o);
	taskstate_close(fd);
	return ret;
}

static int run_metrics(const struct command *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct metrics_opts o = { 0 };
	int c, fd, ret;

	while ((c = next_option(cmd, argc, argv, ":p:o:h",
				longopts)) != -1) {
		switch (c) {
		case 'p':
			o.pid = id_arg(cmd, "--pid", optarg);
			break;
		case 'o':
			o.out = optarg;
			break;
		}
	}
	want_args(cmd, argc, 0, "");
	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = metrics_run(fd, &o);
	taskstate_close(fd);
	return ret;
}

static const struct command commands[] = {
	{ "track", run_track, track_help },
	{ "untrack", run_track, untrack_help },
	{ "show", run_show, show_help },
	{ "watch", run_watch, watch_help },
	{ "top", run_top, top_help },
	{ "metrics", run_metrics, metrics_help },
	{ "info", run_info, info_help },
};

int main(int argc, char **argv)
{
	enum { OPT_VERSION = 256 };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ }
	};
	static const struct command top = { .help = main_help };
	const struct command *cmd;
	int ret;

	opterr = 0;
	/* '+': stop at the command name, its options are its own. */
	while (next_option(&top, argc, argv, "+:h", longopts) != -1) {
		/* --version is the only option left */
		puts("taskstate " TASKSTATE_VERSION);
		return EXIT_SUCCESS;
	}
	if (optind == argc)
		usage_error(NULL, "missing command");
	for (cmd = commands; cmd < commands + sizeof(commands) /
				sizeof(commands[0]); cmd++)
		if (!strcmp(argv[optind], cmd->name))
			break;
	if (cmd == commands + sizeof(commands) / sizeof(commands[0]))
		usage_error(NULL, "unknown command '%s'", argv[optind]);

	argc -= optind;
	argv += optind;
	optind = 0;		/* restart getopt on the command's arguments */
	ret = cmd->run(cmd, argc, argv);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "taskstate: stdout: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	return ret;
}
