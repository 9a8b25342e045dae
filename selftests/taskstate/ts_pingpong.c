// SPDX-License-Identifier: GPL-2.0
/*
 * A context-switch load: two threads pass a byte back and forth over two
 * pipes, each pass a sleep and a wakeup, like `perf bench sched pipe`,
 * but static and in the tree so that every test guest (also the 686 one,
 * which cannot run the host's perf) has it.
 *
 *   ts_pingpong [SECONDS]      (default: until killed)
 * Prints the round trips done when it ends.
 */
#include <signal.h>
#include <stdlib.h>
#include "util.h"

static int ping[2], pong[2];

static void *ponger(void *arg)
{
	char c;

	(void)arg;
	while (read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) == 1)
		;
	return NULL;
}

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	unsigned long trips = 0;
	pthread_t th;
	char c = 0;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGALRM, on_signal);
	if (argc > 1)
		alarm(atoi(argv[1]));
	if (pipe(ping) || pipe(pong) ||
	    pthread_create(&th, NULL, ponger, NULL)) {
		perror("ts_pingpong");
		return 1;
	}
	while (!done && write(ping[1], &c, 1) == 1 && read(pong[0], &c, 1) == 1)
		trips++;
	printf("ts_pingpong: %lu round trips\n", trips);
	return 0;
}
