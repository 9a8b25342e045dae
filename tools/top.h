/* SPDX-License-Identifier: GPL-2.0 */
/*
 * taskstate top and taskstate metrics: where the time of the tracked
 * threads went, from their per-state totals (LIST with totals).
 */
#ifndef TASKSTATE_TOP_H
#define TASKSTATE_TOP_H

#include <stdbool.h>
#include <stdint.h>

/* top's sort keys: a total (TASKSTATE_TOTAL_*), or these. */
#define TOP_SORT_TID	100

struct top_opts {
	unsigned int pid;	/* 0: every process */
	unsigned int delay_ms;	/* between refreshes */
	unsigned int count;	/* refreshes, 0: until interrupted */
	unsigned int sort;	/* TASKSTATE_TOTAL_* or TOP_SORT_TID */
	bool json;
};

/* The sort key named s ("run", ..., "other", "tid"); -1 if none is. */
int top_sort_key(const char *s);

/* Run top on fd; an exit status. */
int top_run(int fd, const struct top_opts *o);

struct metrics_opts {
	unsigned int pid;	/* 0: every process */
	const char *out;	/* NULL: stdout; else written atomically */
};

/* Print the Prometheus text exposition; an exit status. */
int metrics_run(int fd, const struct metrics_opts *o);

#endif /* TASKSTATE_TOP_H */
