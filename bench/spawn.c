// SPDX-License-Identifier: GPL-2.0
/*
 * spawn: what creating and ending a task costs, for the fork and free
 * probes (table insert and release under the table lock):
 *
 *   spawn fork N      N times fork(), the child _exit(0)s, waitpid()
 *   spawn thread N    N times pthread_create() of a thread that returns
 *                     at once, pthread_join()
 *
 * Prints "us/op X" (wall time per iteration, CLOCK_MONOTONIC).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *nothing(void *arg)
{
	return arg;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long i, n = argc > 2 ? atol(argv[2]) : 0;
	bool thread;
	double t0;

	if (argc != 3 || n <= 0 ||
	    (strcmp(argv[1], "fork") && strcmp(argv[1], "thread"))) {
		fprintf(stderr, "usage: spawn fork|thread N\n");
		return 2;
	}
	thread = !strcmp(argv[1], "thread");
	t0 = now_us();
	for (i = 0; i < n; i++) {
		if (thread) {
			pthread_t t;

			if (pthread_create(&t, NULL, nothing, NULL) ||
			    pthread_join(t, NULL)) {
				perror("pthread");
				return 1;
			}
		} else {
			pid_t pid = fork();

			if (pid < 0) {
				perror("fork");
				return 1;
			}
			if (!pid)
				_exit(0);
			if (waitpid(pid, NULL, 0) != pid) {
				perror("waitpid");
				return 1;
			}
		}
	}
	printf("us/op %.3f\n", (now_us() - t0) / n);
	return 0;
}
