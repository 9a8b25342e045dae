// SPDX-License-Identifier: GPL-2.0
/*
 * ts_maphold: map /dev/taskstate, close the fd, print "mapped" and hold
 * the mapping until SIGTERM; then read through it once more, unmap and
 * exit 0.  run_vm.sh uses it to show that a mapping alone keeps the
 * module loaded (rmmod refused) and stays readable meanwhile.
 */
#include <signal.h>
#include <string.h>
#include "util.h"

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

int main(void)
{
	struct taskstate_location l = { .tid = (uint32_t)ts_gettid() };
	struct sigaction sa = { .sa_handler = on_term };
	struct taskstate_mapping m;
	sigset_t block, old;
	uint64_t w;
	int fd = taskstate_open(), ret;

	if (fd < 0) {
		fprintf(stderr, "ts_maphold: open: %s\n", strerror(-fd));
		return 1;
	}
	ret = taskstate_mapping_open(fd, &m);
	if (ret || taskstate_locate(fd, &l, 1) != 1) {
		fprintf(stderr, "ts_maphold: map or locate: %s\n",
			strerror(-ret));
		return 1;
	}
	taskstate_close(fd);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGTERM, &sa, NULL);
	printf("mapped\n");
	fflush(stdout);
	while (!done)
		sigsuspend(&old);
	if (taskstate_mapping_read(&m, &l, &w, NULL) ||
	    taskstate_state(w) != TASKSTATE_RUNNING) {
		fprintf(stderr, "ts_maphold: own entry unreadable\n");
		return 1;
	}
	taskstate_mapping_close(&m);
	return 0;
}
