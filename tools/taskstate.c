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
#include "run.h"
#include "top.h"

#define EXIT_USAGE	2

/* Which commands take an option: struct command's opts, options[]. */
enum {
	C_MAIN = 1 << 0,	/* taskstate's own, before the command */
	C_TRACK = 1 << 1,	/* track and untrack */
	C_SHOW = 1 << 2,
	C_WATCH = 1 << 3,
	C_TOP = 1 << 4,
	C_METRICS = 1 << 5,
	C_INFO = 1 << 6,
	C_RUN = 1 << 7,
	C_ALL = (1 << 8) - 1,
};

struct command {
	const char *name;
	int (*run)(const struct command *cmd, int argc, char **argv);
	const char *help;
	unsigned int opts;	/* its C_* bit, options[] */
};

static const char main_help[] =
"Usage: taskstate COMMAND [OPTIONS]\n"
"\n"
"Track threads and show their scheduling state from /dev/taskstate.\n"
"\n"
"Commands:\n"
"  track (-p PIDS | -t TIDS)\n"
"                       start tracking processes or threads\n"
"  untrack (-p PIDS | -t TIDS)\n"
"                       stop tracking processes or threads\n"
"  show [SELECTION] [--since wall] [--ns] [-J]\n"
"                       list the tracked threads\n"
"  watch [SELECTION] [-d DURATION] [-n N] [-s DURATION] [-o KEY]\n"
"                       list them again and again, like top\n"
"  top [-p PIDS] [-t TIDS] [--process] [-d DURATION] [-n N] [-o KEY] [-J]\n"
"                       the share of each interval spent in each state\n"
"  metrics [-p PIDS] [--group-by KEY] [--output FILE]\n"
"                       time and threads in each state, for Prometheus\n"
"  info [-J]            show what the module is and holds\n"
"  run [-o FILE] [-J] [--] CMD [ARGS...]\n"
"                       run CMD tracked; at its end, where its time went\n"
"  bpf (load | unload | status)\n"
"                       the BPF backend, where the module cannot load\n"
"\n"
"Options:\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n"
"\n"
"'taskstate COMMAND --help' describes a command; man taskstate, all of\n"
"them.  States are named running, runnable, sleeping, blocked, stopped,\n"
"traced, dead (and none); where a list of states is read, ps's letters\n"
"R S D T t Z X are understood too.  Without CAP_PERFMON or CAP_SYS_ADMIN\n"
"the device shows only your own processes and their children;\n"
"TASKSTATE_DEV overrides its path.  Colours only on a\n"
"terminal, and never with NO_COLOR set.  Thread names are shown with\n"
"control characters and bytes that are not UTF-8 as '?'.\n"
"Exit status: 0 success, 1 error, 2 usage error.\n";

#define COMMON_HELP \
"  -h, --help                 show this help\n" \
"  -V, --version              show the version\n"

static const char track_help[] =
"Usage: taskstate track (-p PIDS | -t TIDS)\n"
"\n"
"Start tracking processes (all their threads, their future threads and\n"
"their children) or threads.\n"
"\n"
"  -p, --pid PID[,PID...]     these processes\n"
"  -t, --tid TID[,TID...]     these threads\n"
COMMON_HELP;

static const char untrack_help[] =
"Usage: taskstate untrack (-p PIDS | -t TIDS)\n"
"\n"
"Stop tracking processes (all their threads, and their future threads\n"
"and children) or threads.\n"
"\n"
"  -p, --pid PID[,PID...]     these processes\n"
"  -t, --tid TID[,TID...]     these threads\n"
COMMON_HELP;

#define SELECTION_HELP \
"  -p, --pid PID[,PID...]     only the threads of these processes\n" \
"  -t, --tid TID[,TID...]     only these threads\n" \
"      --state STATE[,STATE...]\n" \
"                             only threads in one of these states\n" \
"      --min-age DURATION     only threads in their state for at least\n" \
"                             DURATION\n"

#define DURATION_HELP \
"A DURATION is a number with a unit, ns us ms s m h d, a fraction\n" \
"allowed, or several: 500ms, 1.5s, 1h30m; a bare number is seconds.\n"

static const char show_help[] =
"Usage: taskstate show [SELECTION] [--since boot|wall] [--ns] [-J]\n"
"\n"
"List the tracked threads, sorted by TID:\n"
"  TID TGID STATE SINCE AGE COMM\n"
"SINCE is when the thread entered STATE, as the time since boot\n"
"(CLOCK_BOOTTIME) or, with --since wall, as local wall-clock time;\n"
"AGE how long it has been in it, as durations (1.9s, 3m12s, 2h05m).\n"
"COMM is '-' for a thread gone.  The selection options combine: a\n"
"thread is listed if it matches all.\n"
"\n"
SELECTION_HELP
"      --since boot|wall      SINCE as time since boot (the default) or\n"
"                             as wall-clock time (2026-01-31T23:59:59.123)\n"
"      --ns                   SINCE_NS and AGE_NS, in ns\n"
"  -J, --json                 one JSON object {\"threads\": [...]}, one\n"
"                             object per thread with the keys tid, tgid,\n"
"                             state, since_ns (since_wall, UTC, with\n"
"                             --since wall), age_ns and comm (null if\n"
"                             gone)\n"
COMMON_HELP
"\n"
DURATION_HELP;

static const char watch_help[] =
"Usage: taskstate watch [SELECTION] [-d DURATION] [-n N] [-s DURATION]\n"
"                       [--stuck-states STATES] [-o KEY] [--ns] [--no-map]\n"
"\n"
"List the tracked threads every delay, with the number in each state.\n"
"A thread in a stuck state (blocked, unless --stuck-states says more)\n"
"for longer than the --stuck time is marked with '!' (and listed first\n"
"by default).  On a terminal the screen is redrawn in place: q or Ctrl-C\n"
"quits, any other key refreshes.  Otherwise each refresh prints a block\n"
"of plain lines, blocks separated by an empty line.\n"
"\n"
"The words are read through a read-only mapping of the module's entries,\n"
"without a system call per refresh, when the module allows it (the\n"
"initial pid namespace only); else with the LIST ioctl.  'taskstate info'\n"
"says which.\n"
"\n"
SELECTION_HELP
"  -s, --stuck DURATION       mark threads stuck for longer (1s)\n"
"      --stuck-states STATE[,STATE...]\n"
"                             the states that count as stuck (blocked)\n"
"  -d, --delay DURATION       refresh every DURATION (1s; at least 100ms)\n"
"  -n, --count N              stop after N refreshes\n"
"  -o, --sort KEY             stuck (stuck first, the default), age\n"
"                             (longest first), state, or tid\n"
"      --ns                   SINCE_NS and AGE_NS, in ns\n"
"      --no-map               always use the LIST ioctl\n"
COMMON_HELP
"\n"
DURATION_HELP;

static const char top_help[] =
"Usage: taskstate top [-p PIDS] [-t TIDS] [--process] [-d DURATION] [-n N]\n"
"                     [-o KEY] [-J]\n"
"\n"
"Every delay, per tracked thread, the share of the interval it spent in\n"
"each state, from the module's per-state totals:\n"
"  TID TGID STATE RUN% WAIT% SLEEP% BLOCK% OTHER% COMM\n"
"RUN is running on a CPU, WAIT runnable on a run queue, SLEEP sleeping\n"
"(interruptible), BLOCK blocked (uninterruptible), OTHER stopped or\n"
"traced (a dead thread's time counts in none).  With --process, one row per process, the sum over its threads\n"
"(PID THREADS STATE ...; a share above 100% is more than one thread's\n"
"worth).  On a terminal the screen is redrawn in place (Ctrl-C quits);\n"
"otherwise each refresh is a block of lines, blocks separated by an\n"
"empty line.\n"
"\n"
"  -p, --pid PID[,PID...]     only the threads of these processes\n"
"  -t, --tid TID[,TID...]     only these threads\n"
"      --process              one row per process\n"
"  -d, --delay DURATION       refresh every DURATION (1s; at least 100ms)\n"
"  -n, --count N              stop after N refreshes\n"
"  -o, --sort KEY             running (the default), runnable, sleeping,\n"
"                             blocked or other (largest share first), or\n"
"                             tid\n"
"  -J, --json                 one JSON object per refresh and line:\n"
"                             time_ns, interval_ns, threads (tid, tgid,\n"
"                             state, running_ns, runnable_ns, sleeping_ns,\n"
"                             blocked_ns, other_ns, comm: null if gone);\n"
"                             with --process, processes (pid, threads,\n"
"                             ...)\n"
COMMON_HELP
"\n"
DURATION_HELP;

static const char metrics_help[] =
"Usage: taskstate metrics [-p PIDS] [--group-by KEY] [--output FILE]\n"
"\n"
"Print the Prometheus text exposition format (man taskstate lists the\n"
"series): per process, the seconds its tracked threads spent in each\n"
"state (taskstate_state_seconds_total, a counter), how many are in each\n"
"state now (taskstate_threads) and for how long the oldest has been\n"
"(taskstate_oldest_seconds); and the module's health: threads tracked,\n"
"threads left untracked for want of slots, totals on or off, versions.\n"
"Without CAP_PERFMON, only the caller's own processes (a warning says so).\n"
"\n"
"  -p, --pid PID[,PID...]     only these processes\n"
"      --group-by KEY         one series per pid (the default, labels pid\n"
"                             and comm), comm, or cgroup (v2 path)\n"
"      --output FILE          write FILE atomically (a temporary file\n"
"                             renamed over it), mode 0644, e.g. for\n"
"                             node_exporter's textfile collector\n"
COMMON_HELP;

static const char info_help[] =
"Usage: taskstate info [-J]\n"
"\n"
"Show what the module is and holds, one 'key: value' per line.  The last,\n"
"watch_reads, says how 'taskstate watch' reads the words here: 'mmap', or\n"
"'ioctl' and why the mapping cannot be used.\n"
"\n"
"  -J, --json                 one JSON object, the same keys\n"
COMMON_HELP;

static const char run_help[] =
"Usage: taskstate run [-o FILE] [-J] [--per-thread] [--] CMD [ARGS...]\n"
"\n"
"Run CMD tracked, with the threads and processes it starts, and when it\n"
"ends print where their time went, in seconds: running, waiting for a CPU\n"
"(runnable), sleeping, blocked, other (stopped, traced).  One row for each\n"
"process this command collected (CMD, and its orphans, which end as this\n"
"command's children), one for the processes that ended as their children\n"
"(whoever reaped them), and the sum: complete to the last exit, as time(1)\n"
"counts children; processes still running when CMD has ended are not\n"
"waited for (the report says so).  The report goes to stderr; the exit\n"
"status is CMD's (128 + the signal that killed it).  Any user may run it:\n"
"without CAP_PERFMON the descriptor is scoped to this command and its\n"
"children.\n"
"\n"
"  -o, --output FILE          the report into FILE instead\n"
"  -J, --json                 one JSON object\n"
"      --per-thread           and a row for each thread that exited, as it\n"
"                             exited, whatever process reaped it\n"
COMMON_HELP;

static void usage_error(const struct command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* The message quotes what the user typed: shown through ts_sanitize(). */
static void usage_error(const struct command *cmd, const char *fmt, ...)
{
	char msg[512], safe[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "taskstate%s%s: %s (see --help)\n",
		cmd && cmd->name ? " " : "", cmd && cmd->name ? cmd->name : "",
		ts_sanitize(safe, sizeof(safe), msg));
	exit(EXIT_USAGE);
}

enum {
	OPT_NS = 256, OPT_STATE, OPT_MIN_AGE, OPT_NO_MAP, OPT_SINCE,
	OPT_STUCK_STATES, OPT_PROCESS, OPT_GROUP_BY, OPT_OUTPUT, OPT_PER_THREAD,
};

/*
 * Every option of every command, once, with the commands that take it.
 * Those below 256 are short options too; each has its long name.
 */
static const struct {
	const char *name;
	int has_arg;
	int val;
	unsigned int cmds;
} options[] = {
	{ "help", no_argument, 'h', C_ALL },
	{ "version", no_argument, 'V', C_ALL },
	{ "pid", required_argument, 'p', C_TRACK | C_SHOW | C_WATCH | C_TOP | C_METRICS },
	{ "tid", required_argument, 't', C_TRACK | C_SHOW | C_WATCH | C_TOP },
	{ "state", required_argument, OPT_STATE, C_SHOW | C_WATCH },
	{ "min-age", required_argument, OPT_MIN_AGE, C_SHOW | C_WATCH },
	{ "json", no_argument, 'J', C_SHOW | C_TOP | C_INFO | C_RUN },
	{ "ns", no_argument, OPT_NS, C_SHOW | C_WATCH },
	{ "since", required_argument, OPT_SINCE, C_SHOW },
	{ "stuck", required_argument, 's', C_WATCH },
	{ "stuck-states", required_argument, OPT_STUCK_STATES, C_WATCH },
	{ "delay", required_argument, 'd', C_WATCH | C_TOP },
	{ "count", required_argument, 'n', C_WATCH | C_TOP },
	{ "sort", required_argument, 'o', C_WATCH | C_TOP },
	{ "no-map", no_argument, OPT_NO_MAP, C_WATCH },
	{ "process", no_argument, OPT_PROCESS, C_TOP },
	{ "group-by", required_argument, OPT_GROUP_BY, C_METRICS },
	{ "output", required_argument, OPT_OUTPUT, C_METRICS },
	{ "output", required_argument, 'o', C_RUN },
	{ "per-thread", no_argument, OPT_PER_THREAD, C_RUN },
};

/*
 * getopt_long()'s arguments for @cmd: the rows of options[] it takes, and
 * their short options after ':' (and first '+' for taskstate's own, to
 * stop at the command name: the command's options are its own).
 */
static void command_options(const struct command *cmd,
			    struct option *longopts, char *optstring)
{
	size_t i;

	/* taskstate's own and run's: stop at the command (run's CMD). */
	if (cmd->opts & (C_MAIN | C_RUN))
		*optstring++ = '+';
	*optstring++ = ':';
	for (i = 0; i < ARRAY_SIZE(options); i++) {
		if (!(options[i].cmds & cmd->opts))
			continue;
		*longopts++ = (struct option){ options[i].name,
					       options[i].has_arg, NULL,
					       options[i].val };
		if (options[i].val >= 256)
			continue;
		*optstring++ = (char)options[i].val;
		if (options[i].has_arg == required_argument)
			*optstring++ = ':';
	}
	*longopts = (struct option){ 0 };
	*optstring = '\0';
}

/*
 * getopt_long() over a command's arguments and options: prints the help
 * and exits for -h, the version for -V, exits with a usage error for a
 * bad option, else returns the option (-1 at the end).
 */
static int next_option(const struct command *cmd, int argc, char **argv)
{
	static struct option longopts[ARRAY_SIZE(options) + 1];
	static char optstring[2 + 2 * ARRAY_SIZE(options) + 1];
	static const struct command *parsing;
	int c;

	if (parsing != cmd) {
		command_options(cmd, longopts, optstring);
		parsing = cmd;
	}
	c = getopt_long(argc, argv, optstring, longopts, NULL);
	switch (c) {
	case 'h':
		fputs(cmd->help, stdout);
		exit(EXIT_SUCCESS);
	case 'V':
		puts("taskstate " TASKSTATE_VERSION);
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

/* No positional argument left after the options. */
static void no_args(const struct command *cmd, int argc, char **argv)
{
	if (argc > optind)
		usage_error(cmd, "unexpected argument '%s'", argv[optind]);
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

static int open_device(void)
{
	int fd = taskstate_open();
	const char *hint = "";

	if (fd == -EPERM)
		hint = " (needs CAP_PERFMON or CAP_SYS_ADMIN: the module's unprivileged opens are off)";
	else if (fd == -EACCES && access(taskstate_dev_path(), F_OK))
		hint = " (the BPF backend's pins under /sys/fs/bpf/taskstate are root's)";
	else if (fd == -EACCES)
		hint = " (the device's mode or group leaves you out)";
	else if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		hint = " (is the module loaded? or, where it cannot load, the BPF backend: taskstate bpf load)";
	if (fd < 0)
		fprintf(stderr, "taskstate: %s: %s%s\n", taskstate_dev_path(),
			strerror(-fd), hint);
	return fd;
}

/* Is @fd a scoped descriptor (opened without CAP_PERFMON)? */
static bool scoped(int fd)
{
	struct taskstate_info info;

	return !taskstate_info(fd, &info) &&
	       info.scope == TASKSTATE_SCOPE_SELF;
}

/*
 * The tracked threads matching f as *rows, *n of them, aged at one "now"
 * read after the list: LIST once per process of f->pids, or once for all.
 * Returns the kernel's total of threads it was asked about (more than it
 * gave only if a list was cut short) or -errno.
 */
static int get_rows(int fd, const struct ts_filter *f, uint64_t stuck_ns,
		    unsigned int stuck_mask, struct ts_row **rows, size_t *n)
{
	struct taskstate_entry *e = NULL, *part, *tmp;
	size_t i, nr = 0, k, calls = f->npids ? f->npids : 1;
	struct ts_row *r;
	uint64_t now;
	uint32_t got;
	int ret, total = 0;

	for (k = 0; k < calls; k++) {
		ret = taskstate_list(fd, f->npids ? f->pids[k] : 0, &part, NULL, &got);
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
		row->stuck = row_is_stuck(row, stuck_ns, stuck_mask);
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
			   unsigned int stuck_mask, struct ts_row **rows,
			   size_t *n)
{
	size_t nr = 0, cap = 256;
	struct ts_row *r = malloc(cap * sizeof(*r)), *tmp;
	uint32_t i, tid, gen;
	uint64_t word, now;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < m->nr; i++) {
		struct map_owner *o = &owners[i];

		if (taskstate_mapping_scan(m, i, &tid, &word, &gen) || !tid)
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
		row->stuck = row_is_stuck(row, stuck_ns, stuck_mask);
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

/* A duration: a bare number is seconds, everywhere. */
static uint64_t duration_arg(const struct command *cmd, const char *what,
			     const char *s)
{
	uint64_t ns;
	int ret = parse_duration(s, 1000000000ULL, &ns);

	if (ret == -ERANGE)
		usage_error(cmd, "%s '%s' is too long", what, s);
	if (ret)
		usage_error(cmd, "%s '%s' is not a duration (e.g. 500ms, 2, 1m30s)",
			    what, s);
	return ns;
}

static unsigned int state_list_arg(const struct command *cmd,
				   const char *what, const char *arg)
{
	unsigned int mask;

	if (parse_state_list(arg, &mask))
		usage_error(cmd, "%s '%s' is not states separated by commas (running, runnable, sleeping, blocked, stopped, traced, dead, none, or R S D T t Z X)",
			    what, arg);
	return mask;
}

static void filter_free(struct ts_filter *f)
{
	free(f->pids);
	free(f->tids);
}

/* -p's or -t's list, @what "PID" or "TID", replacing an earlier one. */
static void id_list_arg(const struct command *cmd, const char *what,
			const char *arg, uint32_t **ids, size_t *n)
{
	free(*ids);
	if (parse_id_list(arg, ids, n))
		usage_error(cmd, "%s list '%s' is not numbers 1..%d separated by commas",
			    what, arg, INT_MAX);
}

/*
 * A selection option (-p -t --state --min-age of show and watch; -p -t
 * of track, untrack, top; -p of metrics) into f: whether c was one.
 */
static bool selection_option(const struct command *cmd, int c,
			     const char *arg, struct ts_filter *f)
{
	switch (c) {
	case 'p':
		id_list_arg(cmd, "PID", arg, &f->pids, &f->npids);
		return true;
	case 't':
		id_list_arg(cmd, "TID", arg, &f->tids, &f->ntids);
		return true;
	case OPT_STATE:
		f->states = state_list_arg(cmd, "--state", arg);
		return true;
	case OPT_MIN_AGE:
		f->min_age_ns = duration_arg(cmd, "--min-age", arg);
		return true;
	}
	return false;
}

static int track_one(const struct command *cmd, int fd, unsigned int id,
		     bool process)
{
	bool untrack = !strcmp(cmd->name, "untrack");
	uint64_t nr = 0;
	int ret;

	ret = untrack ? taskstate_untrack(fd, id, process, &nr) :
			taskstate_track(fd, id, process, &nr);
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

/* track and untrack: each process of -p, then each thread of -t. */
static int run_track(const struct command *cmd, int argc, char **argv)
{
	struct ts_filter f = { 0 };
	int c, fd, status = EXIT_SUCCESS;
	size_t i;

	while ((c = next_option(cmd, argc, argv)) != -1)
		selection_option(cmd, c, optarg, &f);
	no_args(cmd, argc, argv);
	if (!f.npids && !f.ntids)
		usage_error(cmd, "missing -p PIDS or -t TIDS");

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	for (i = 0; i < f.npids; i++)
		status |= track_one(cmd, fd, f.pids[i], true);
	for (i = 0; i < f.ntids; i++)
		status |= track_one(cmd, fd, f.tids[i], false);
	taskstate_close(fd);
	filter_free(&f);
	return status;
}

static int run_show(const struct command *cmd, int argc, char **argv)
{
	struct ts_widths w = { 0 };
	char line[TS_LINE_MAX];
	struct ts_filter f = { 0 };
	struct ts_row *rows;
	bool json = false;
	size_t i, n;
	int c, fd, total;

	while ((c = next_option(cmd, argc, argv)) != -1) {
		if (selection_option(cmd, c, optarg, &f))
			continue;
		switch (c) {
		case 'J':
			json = true;
			break;
		case OPT_NS:
			w.ns = true;
			break;
		case OPT_SINCE:
			if (!strcmp(optarg, "wall"))
				w.wall = true;
			else if (strcmp(optarg, "boot"))
				usage_error(cmd, "--since '%s' is not boot or wall",
					    optarg);
			break;
		}
	}
	no_args(cmd, argc, argv);

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	total = get_rows(fd, &f, 0, 0, &rows, &n);
	taskstate_close(fd);
	filter_free(&f);
	if (total < 0) {
		fprintf(stderr, "taskstate: list: %s\n", strerror(-total));
		return EXIT_FAILURE;
	}
	sort_rows(rows, n, TS_SORT_TID);
	if (w.wall)
		w.wall_offset_ns = ts_wall_offset_ns();

	if (json) {
		print_json(stdout, rows, n, &w);
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
	unsigned int stuck_mask;	/* --stuck-states */
	struct refresh refresh;
	enum ts_sort sort;
	bool ns;		/* --ns */
	bool color;
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
	for (i = 0; i < ARRAY_SIZE(quit_signals); i++)
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
				s ? "  " : "", ts_state_name(s), count[s]);
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

	if (poll(&p, 1, (int)w->refresh.delay_ms) <= 0 || !p.revents)
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
					      w->stuck_ns, w->stuck_mask, &rows, &n);
		else
			ret = get_rows(w->fd, &w->filter, w->stuck_ns,
				       w->stuck_mask, &rows, &n);
		if (ret < 0)
			return ret;
		sort_rows(rows, n, w->sort);
		if (!w->tty && !first)
			putchar('\n');
		draw(w, rows, n, ret);
		free(rows);
		if (w->refresh.count && !--w->refresh.count)
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

/*
 * A refresh delay in ms, raised to TS_MIN_DELAY_MS if shorter (as
 * procps's watch does): a delay of 0 must not spin.
 */
static unsigned int delay_arg(const struct command *cmd, const char *s)
{
	uint64_t ns = duration_arg(cmd, "--delay", s);

	if (ns / 1000000 > INT_MAX)
		usage_error(cmd, "--delay '%s' is too long", s);
	return ns < TS_MIN_DELAY_MS * 1000000ULL ? TS_MIN_DELAY_MS :
						   (unsigned int)(ns / 1000000);
}

/* A refresh option (-d -n of watch and top) into r: whether c was one. */
static bool refresh_option(const struct command *cmd, int c,
			   const char *arg, struct refresh *r)
{
	switch (c) {
	case 'd':
		r->delay_ms = delay_arg(cmd, arg);
		return true;
	case 'n':
		r->count = num_arg(cmd, "--count", arg, 1, UINT_MAX);
		return true;
	}
	return false;
}

/* --sort's key, by @parse; @keys names the keys for the error. */
static int sort_arg(const struct command *cmd, const char *s,
		    int (*parse)(const char *), const char *keys)
{
	int key = parse(s);

	if (key < 0)
		usage_error(cmd, "sort key '%s' is not %s", s, keys);
	return key;
}

static int run_watch(const struct command *cmd, int argc, char **argv)
{
	struct watch w = {
		.stuck_ns = 1000000000ULL, .stuck_mask = TASKSTATE_STUCK_MASK,
		.refresh.delay_ms = 1000,
	};
	bool map = true;
	int c, ret;

	while ((c = next_option(cmd, argc, argv)) != -1) {
		if (selection_option(cmd, c, optarg, &w.filter) ||
		    refresh_option(cmd, c, optarg, &w.refresh))
			continue;
		switch (c) {
		case 's':
			w.stuck_ns = duration_arg(cmd, "--stuck", optarg);
			break;
		case OPT_STUCK_STATES:
			w.stuck_mask = state_list_arg(cmd, "--stuck-states", optarg);
			break;
		case 'o':
			w.sort = sort_arg(cmd, optarg, parse_sort_key,
					  "stuck, age, state or tid");
			break;
		case OPT_NS:
			w.ns = true;
			break;
		case OPT_NO_MAP:
			map = false;
			break;
		}
	}
	no_args(cmd, argc, argv);

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
	filter_free(&w.filter);
	taskstate_close(w.fd);
	if (ret < 0) {
		fprintf(stderr, "taskstate: list: %s\n", strerror(-ret));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

static int run_info(const struct command *cmd, int argc, char **argv)
{
	struct taskstate_info info;
	struct map_owner *owners = NULL;
	struct taskstate_mapping m;
	int c, fd, ret, map_err = 0;
	bool json = false;
	static const char *const keys[] = {
		"abi_version", "state_shift", "time_bits", "clock_id",
		"max_threads", "batch_max", "track_all", "nr_tracked",
		"nr_untracked", "map_entry_size", "map_layout", "map_entries",
		"map_size",
	};
	const char *scope, *backend;
	size_t i;

	while ((c = next_option(cmd, argc, argv)) != -1)
		json = true;		/* -J is the only option left */
	no_args(cmd, argc, argv);

	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = taskstate_info(fd, &info);
	backend = taskstate_backend(fd);
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
	{
		const uint64_t vals[ARRAY_SIZE(keys)] = {
			info.abi_version, info.state_shift, info.time_bits,
			info.clock_id, info.max_threads, info.batch_max,
			info.track_all, info.nr_tracked, info.nr_untracked,
			info.map_entry_size, info.map_layout, info.map_entries,
			info.map_size,
		};

		for (i = 0; i < ARRAY_SIZE(keys); i++) {
			if (json)
				printf("%s\"%s\": %" PRIu64, i ? ", " : "{",
				       keys[i], vals[i]);
			else
				printf("%s: %" PRIu64 "\n", keys[i], vals[i]);
		}
	}
	scope = info.scope == TASKSTATE_SCOPE_SELF ? "self" : "all";
	if (json) {
		printf(", \"backend\": \"%s\"", backend);
		printf(", \"watch_reads\": \"%s\"", map_err ? "ioctl" : "mmap");
		if (map_err)
			printf(", \"watch_reads_why\": \"%s\"", strerror(-map_err));
		printf(", \"scope\": \"%s\"", scope);
		if (info.scope == TASKSTATE_SCOPE_SELF)
			printf(", \"scope_max_threads\": %u, \"scope_nr_tracked\": %u",
			       info.scope_max_threads, info.scope_nr_tracked);
		puts("}");
	} else {
		printf("backend: %s\n", backend);
		if (map_err)
			printf("watch_reads: ioctl (mmap: %s)\n", strerror(-map_err));
		else
			printf("watch_reads: mmap\n");
		printf("scope: %s\n", scope);
		if (info.scope == TASKSTATE_SCOPE_SELF)
			printf("scope_max_threads: %u\nscope_nr_tracked: %u\n",
			       info.scope_max_threads, info.scope_nr_tracked);
	}
	return EXIT_SUCCESS;
}

static int run_top(const struct command *cmd, int argc, char **argv)
{
	struct top_opts o = {
		.refresh.delay_ms = 1000, .sort = TASKSTATE_TOTAL_RUNNING,
	};
	int c, fd, ret;

	while ((c = next_option(cmd, argc, argv)) != -1) {
		if (selection_option(cmd, c, optarg, &o.filter) ||
		    refresh_option(cmd, c, optarg, &o.refresh))
			continue;
		switch (c) {
		case OPT_PROCESS:
			o.process = true;
			break;
		case 'o':
			o.sort = sort_arg(cmd, optarg, top_sort_key,
					  "running, runnable, sleeping, blocked, other or tid");
			break;
		case 'J':
			o.json = true;
			break;
		}
	}
	no_args(cmd, argc, argv);
	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = top_run(fd, &o);
	taskstate_close(fd);
	filter_free(&o.filter);
	return ret;
}

static int run_metrics(const struct command *cmd, int argc, char **argv)
{
	struct metrics_opts o = { 0 };
	struct ts_filter f = { 0 };
	int c, fd, ret;

	while ((c = next_option(cmd, argc, argv)) != -1) {
		switch (c) {
		case 'p':
			selection_option(cmd, c, optarg, &f);
			break;
		case OPT_GROUP_BY:
			ret = metrics_group_key(optarg);
			if (ret < 0)
				usage_error(cmd, "--group-by '%s' is not pid, comm or cgroup",
					    optarg);
			o.group = ret;
			break;
		case OPT_OUTPUT:
			o.out = optarg;
			break;
		}
	}
	no_args(cmd, argc, argv);
	o.pids = f.pids;
	o.npids = f.npids;
	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	/* A service without CAP_PERFMON would export its own processes only. */
	if (scoped(fd))
		fprintf(stderr, "taskstate: metrics: without CAP_PERFMON only your own processes and their children are seen\n");
	ret = metrics_run(fd, &o);
	taskstate_close(fd);
	filter_free(&f);
	return ret;
}

static int run_run_cmd(const struct command *cmd, int argc, char **argv)
{
	struct run_opts o = { 0 };
	int c, fd, ret;

	while ((c = next_option(cmd, argc, argv)) != -1) {
		switch (c) {
		case 'o':
			o.out = optarg;
			break;
		case 'J':
			o.json = true;
			break;
		case OPT_PER_THREAD:
			o.per_thread = true;
			break;
		}
	}
	if (optind >= argc)
		usage_error(cmd, "missing the command to run");
	fd = open_device();
	if (fd < 0)
		return EXIT_FAILURE;
	ret = run_run(fd, &o, argv + optind);
	taskstate_close(fd);
	return ret;
}

/*
 * taskstate bpf ARGS: the BPF backend's loader, taskstate-bpf (bpf/),
 * with ARGS as they are.  It is found beside this program (the build
 * tree, an install), else in PATH; $TASKSTATE_BPF_LOADER names another.
 */
static int run_bpf(const struct command *cmd, int argc, char **argv)
{
	const char *env = getenv("TASKSTATE_BPF_LOADER");
	char self[PATH_MAX], *slash;
	ssize_t n;

	(void)cmd;
	(void)argc;
	argv[0] = "taskstate-bpf";
	if (env && *env) {
		execv(env, argv);
		fprintf(stderr, "taskstate: bpf: %s: %s\n", env, strerror(errno));
		return EXIT_FAILURE;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - sizeof("taskstate-bpf"));
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			strcpy(slash + 1, "taskstate-bpf");
			execv(self, argv);
		}
	}
	execvp("taskstate-bpf", argv);
	fprintf(stderr, "taskstate: bpf: cannot run taskstate-bpf: %s (built in bpf/; make -C bpf)\n",
		strerror(errno));
	return EXIT_FAILURE;
}

static const struct command commands[] = {
	{ "track", run_track, track_help, C_TRACK },
	{ "untrack", run_track, untrack_help, C_TRACK },
	{ "show", run_show, show_help, C_SHOW },
	{ "watch", run_watch, watch_help, C_WATCH },
	{ "top", run_top, top_help, C_TOP },
	{ "metrics", run_metrics, metrics_help, C_METRICS },
	{ "info", run_info, info_help, C_INFO },
	{ "run", run_run_cmd, run_help, C_RUN },
	{ "bpf", run_bpf, NULL, 0 },
};

int main(int argc, char **argv)
{
	static const struct command top = {
		.help = main_help, .opts = C_MAIN,
	};
	const struct command *cmd;
	int ret;

	opterr = 0;
	/* Up to the command name: '+' in command_options(). */
	while (next_option(&top, argc, argv) != -1)
		;	/* -h and -V exit in next_option() */
	if (optind == argc)
		usage_error(NULL, "missing command");
	for (cmd = commands; cmd < commands + ARRAY_SIZE(commands); cmd++)
		if (!strcmp(argv[optind], cmd->name))
			break;
	if (cmd == commands + ARRAY_SIZE(commands))
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
