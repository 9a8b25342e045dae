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

/* Widths of the numeric table columns: wide enough for header and rows. */
struct ts_widths {
	int tid, tgid, since, age;
};

/*
 * Strict unsigned decimal: digits only (no sign, space, base prefix or
 * trailing text).  Returns 0, -EINVAL if s is not a number, -ERANGE if
 * it is outside [min, max].
 */
int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *val);

/* true when r waits (not NONE, RUNNING, RUNNABLE) for more than stuck_ns. */
bool row_is_stuck(const struct ts_row *r, uint64_t stuck_ns);

void table_widths(const struct ts_row *rows, size_t n, struct ts_widths *w);

/*
 * "TID TGID STATE SINCE_NS AGE_NS COMM" and one row under it, no newline.
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
 * One JSON array, one object per row and line:
 * {"tid","tgid","state","since_ns","age_ns","comm"}, comm null if unreadable.
 */
void print_json(FILE *f, const struct ts_row *rows, size_t n);

#endif /* TASKSTATE_FORMAT_H */
