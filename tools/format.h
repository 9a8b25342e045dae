/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Argument parsing and output formatting of the taskstate command, kept
 * apart so that test_lib.c can check them without a device.
 */
#ifndef TASKSTATE_FORMAT_H
#define TASKSTATE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libtaskstate.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define TS_COMM_MAX	64	/* TASK_COMM_LEN is 16; room to grow */
#define TS_LINE_MAX	256	/* a formatted table line always fits */

/* One thread as the command shows it. */
struct ts_row {
	uint32_t tid;
	uint32_t tgid;
	struct taskstate_decoded d;
	bool stuck;		/* watch: too long in a waiting state */
	bool has_comm;		/* false: comm unreadable, thread gone */
	char comm[TS_COMM_MAX];
};

/*
 * How a table is drawn: the widths of its numeric columns (wide enough for
 * header and rows), times in ns or as durations, state names in colour.
 */
struct ts_widths {
	int tid, tgid, since, age;
	bool ns;		/* SINCE_NS, AGE_NS in ns; else SINCE, AGE */
	bool color;		/* state names in colour (a terminal) */
};

/* Which rows show and watch list: a row must match every field set. */
struct ts_filter {
	uint32_t *pids;		/* -p: tgid one of these (npids of them) */
	size_t npids;
	uint32_t *tids;		/* -t: tid one of these */
	size_t ntids;
	unsigned int states;	/* --state: bit (1 << state), 0 for any */
	uint64_t min_age_ns;	/* --min-age */
};

/* watch's orders (-o). */
enum ts_sort { TS_SORT_STUCK, TS_SORT_AGE, TS_SORT_STATE, TS_SORT_TID };

#define TS_DURATION_MAX	16	/* format_duration() always fits */

/*
 * Strict unsigned decimal: digits only (no sign, space, base prefix or
 * trailing text).  Returns 0, -EINVAL if s is not a number, -ERANGE if
 * it is outside [min, max].
 */
int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *val);

/* true when r waits (not NONE, RUNNING, RUNNABLE) for more than stuck_ns. */
bool row_is_stuck(const struct ts_row *r, uint64_t stuck_ns);

/*
 * A duration: a number, a fraction allowed, with a unit (ns, us, ms, s, m,
 * h, d), or several ("1h30m"); a bare number is counted in bare_unit_ns.
 * Returns 0, -EINVAL if s is malformed, -ERANGE if it does not fit.
 */
int parse_duration(const char *s, uint64_t bare_unit_ns, uint64_t *ns);

/*
 * ns for people, in the largest unit that fits, cut, with one decimal
 * below ten of it: 880ns 6.8us 12ms 1.9s 42s 3m12s 2h05m 3d04h.
 */
int format_duration(char *buf, size_t len, uint64_t ns);

/*
 * "1,2,3": ids in 1..INT_MAX, at least one; *ids allocated here.
 * Returns 0, -EINVAL (malformed or out of range) or -ENOMEM.
 */
int parse_id_list(const char *s, uint32_t **ids, size_t *n);

/* "blocked,stopped" (any case) as a mask of (1 << state); -EINVAL. */
int parse_state_list(const char *s, unsigned int *mask);

bool row_matches(const struct ts_filter *f, const struct ts_row *r);

/* "stuck", "age", "state", "tid"; -EINVAL for anything else. */
int parse_sort_key(const char *s);
void sort_rows(struct ts_row *rows, size_t n, enum ts_sort key);

/* Sets the widths for rows; leaves w->ns and w->color as they are. */
void table_widths(const struct ts_row *rows, size_t n, struct ts_widths *w);

/*
 * "TID TGID STATE SINCE_NS AGE_NS COMM" (with w->ns, else "... SINCE AGE
 * ...") and one row under it, no newline.
 * Control characters of a comm are shown as '?', an unreadable comm as
 * '-'.  Return what snprintf() returns.
 */
int format_header(char *buf, size_t len, const struct ts_widths *w);
int format_row(char *buf, size_t len, const struct ts_row *r,
	       const struct ts_widths *w);

/*
 * s as a JSON string, quotes included: '"', '\\' and control characters
 * escaped, bytes that are not valid UTF-8 replaced by U+FFFD.
 */
void json_put_string(FILE *f, const char *s);

/*
 * One JSON object, {"threads": [...]}, the array with one object per row
 * and line: {"tid","tgid","state","since_ns","age_ns","comm"}, comm null
 * if unreadable.
 */
void print_json(FILE *f, const struct ts_row *rows, size_t n);

#endif /* TASKSTATE_FORMAT_H */
