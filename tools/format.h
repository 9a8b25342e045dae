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
	/*
	 * wall_offset_ns set: SINCE as local wall-clock time, the word's
	 * CLOCK_BOOTTIME stamp plus this (CLOCK_REALTIME - CLOCK_BOOTTIME).
	 */
	bool wall;
	int64_t wall_offset_ns;
};

/* CLOCK_REALTIME - CLOCK_BOOTTIME now, for ts_widths.wall_offset_ns. */
int64_t ts_wall_offset_ns(void);

/* Which rows show and watch list: a row must match every field set. */
struct ts_filter {
	uint32_t *pids;		/* -p: tgid one of these (npids of them) */
	size_t npids;
	uint32_t *tids;		/* -t: tid one of these */
	size_t ntids;
	unsigned int states;	/* --state: bit (1 << state), 0 for any */
	uint64_t min_age_ns;	/* --min-age */
};

/* How SINCE is shown: time since boot, or wall-clock time (--since). */
enum ts_since { TS_SINCE_BOOT, TS_SINCE_WALL };

/* Refreshes of watch and top: never more often than this. */
#define TS_MIN_DELAY_MS	100

/* watch's orders (-o). */
enum ts_sort { TS_SORT_STUCK, TS_SORT_AGE, TS_SORT_STATE, TS_SORT_TID };

#define TS_DURATION_MAX	16	/* format_duration() always fits */

/*
 * Strict unsigned decimal: digits only (no sign, space, base prefix or
 * trailing text).  Returns 0, -EINVAL if s is not a number, -ERANGE if
 * it is outside [min, max].
 */
int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *val);

/*
 * true when r is in one of the states of mask (bits 1 << TASKSTATE_*;
 * watch's default: TASKSTATE_STUCK_MASK, BLOCKED) for more than stuck_ns.
 */
bool row_is_stuck(const struct ts_row *r, uint64_t stuck_ns, unsigned int mask);

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

/* Is id one of ids[0..n-1] (a parse_id_list() result)? */
bool id_in(uint32_t id, const uint32_t *ids, size_t n);

/*
 * The command's one spelling of the states, lowercase: "running",
 * "runnable", "sleeping", "blocked", "stopped", "traced", "dead", "none";
 * "?" out of range.
 */
const char *ts_state_name(unsigned int state);

/*
 * The per-state totals (TASKSTATE_TOTAL_*) in the same spelling:
 * "running", "runnable", "sleeping", "blocked", "other" (stopped or
 * traced; a dead thread's time counts in none); "?" out of range.
 */
const char *ts_total_name(unsigned int total);

/*
 * "blocked,stopped" as a mask of (1 << state): state names in any case,
 * or the letters of ps(1)'s STAT column, case-sensitive: R (running and
 * runnable), S sleeping, D blocked, T stopped, t traced, Z and X dead.
 * Returns 0 or -EINVAL.
 */
int parse_state_list(const char *s, unsigned int *mask);

/*
 * A thread name (or any text from outside) as a terminal may show it, as
 * ps and top do: every control character (C0, DEL, and C1 in UTF-8) and
 * every byte that is not part of valid UTF-8 becomes one '?'.  out gets
 * at most len - 1 bytes and a NUL, never a sequence cut in two; out may
 * not be s.  Returns out.
 */
char *ts_sanitize(char *out, size_t len, const char *s);

/*
 * s as a Prometheus label value (inside the quotes): valid UTF-8 always,
 * '\\', '"' and line feed escaped as the text format says; every other
 * control character and every byte not part of valid UTF-8 becomes
 * U+FFFD.
 */
void prom_put_label(FILE *f, const char *s);

bool row_matches(const struct ts_filter *f, const struct ts_row *r);

/* "stuck", "age", "state", "tid"; -EINVAL for anything else. */
int parse_sort_key(const char *s);
void sort_rows(struct ts_row *rows, size_t n, enum ts_sort key);

/* Sets the widths for rows; leaves w->ns and w->color as they are. */
void table_widths(const struct ts_row *rows, size_t n, struct ts_widths *w);

/*
 * "TID TGID STATE SINCE_NS AGE_NS COMM" (with w->ns, else "... SINCE AGE
 * ...") and one row under it, no newline.
 * The comm through ts_sanitize(), an unreadable comm as '-'.  Return
 * what snprintf() returns.
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
 * if unreadable; with wall, "since_wall" (ISO 8601, UTC) after since_ns.
 */
void print_json(FILE *f, const struct ts_row *rows, size_t n,
		const struct ts_widths *w);

#endif /* TASKSTATE_FORMAT_H */
