/* SPDX-License-Identifier: GPL-2.0 */
/*
 * taskstate top and taskstate metrics: where the time of the tracked
 * threads went, from their per-state totals (LIST with totals).
 */
#ifndef TASKSTATE_TOP_H
#define TASKSTATE_TOP_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

/* top's sort keys: a total (TASKSTATE_TOTAL_*), or these. */
#define TOP_SORT_TID	100

/* The refresh options of watch and top: -d, -n. */
struct refresh {
	unsigned int delay_ms;	/* between refreshes, at most INT_MAX */
	unsigned int count;	/* refreshes, 0: until interrupted */
};

struct top_opts {
	struct ts_filter filter;	/* -p, -t: pids, tids */
	struct refresh refresh;
	unsigned int sort;	/* TASKSTATE_TOTAL_* or TOP_SORT_TID */
	bool json;
	bool process;		/* --process: one row per process */
};

/*
 * The sort key named s ("running", "runnable", "sleeping", "blocked",
 * "other", "tid"); -1 if none is.
 */
int top_sort_key(const char *s);

/* Run top on fd; an exit status. */
int top_run(int fd, const struct top_opts *o);

/* metrics --group-by */
enum metrics_group { GROUP_PID, GROUP_COMM, GROUP_CGROUP };

struct metrics_opts {
	uint32_t *pids;		/* -p: only these processes */
	size_t npids;
	enum metrics_group group;
	const char *out;	/* NULL: stdout; else written atomically, 0644 */
};

/* "pid", "comm", "cgroup"; -1 for anything else. */
int metrics_group_key(const char *s);

/* Print the Prometheus text exposition; an exit status. */
int metrics_run(int fd, const struct metrics_opts *o);

#endif /* TASKSTATE_TOP_H */
