// SPDX-License-Identifier: GPL-2.0
/*
 * Loads and unloads taskstate COUNT times, track_all 1, 0, 1, ... (the
 * cycles section of run_vm.sh, under a context-switch load), through
 * finit_module() and delete_module() themselves: a cycle costs what the
 * module's init and exit cost, not two starts of kmod's programs, which
 * under emulation over the guest's 9p root take a second each.
 *
 *   ts_modcycle KO COUNT
 * Prints a line for each cycle that failed and the count; exits 0 when
 * every cycle loaded and unloaded the module.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int cycle(const char *ko, int track_all)
{
	char params[32];
	long ret;
	int fd;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("# open %s: %s\n", ko, strerror(errno));
		return -1;
	}
	snprintf(params, sizeof(params), "track_all=%d", track_all);
	ret = syscall(SYS_finit_module, fd, params, 0);
	close(fd);
	if (ret) {
		printf("# load (%s): %s\n", params, strerror(errno));
		return -1;
	}
	/* rmmod's own call: refused, not waited for, while the module is held. */
	if (syscall(SYS_delete_module, "taskstate", O_NONBLOCK)) {
		printf("# unload (%s): %s\n", params, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, n, fails = 0;

	n = argc == 3 ? atoi(argv[2]) : 0;
	if (n <= 0) {
		fprintf(stderr, "usage: ts_modcycle KO COUNT\n");
		return 2;
	}
	for (i = 1; i <= n; i++)
		if (cycle(argv[1], i % 2))
			fails++;
	printf("# %d load/unload cycles, %d failed\n", n, fails);
	return fails ? 1 : 0;
}
