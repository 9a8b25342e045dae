/* SPDX-License-Identifier: GPL-2.0 */
/*
 * taskstate run: run a program tracked, and say where its threads' time,
 * and that of the processes it started, went when it ends (run.c).
 */
#ifndef TASKSTATE_RUN_H
#define TASKSTATE_RUN_H

#include <stdbool.h>

#include "format.h"

struct run_opts {
	const char *out;	/* -o: the report there, not on stderr */
	bool json;		/* --json: one JSON object */
	bool per_thread;	/* --per-thread: each thread's exit too */
};

/* Run argv (NULL-terminated) tracked through fd; the program's status. */
int run_run(int fd, const struct run_opts *o, char **argv);

#endif /* TASKSTATE_RUN_H */
