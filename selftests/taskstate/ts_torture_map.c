// SPDX-License-Identifier: GPL-2.0
/*
 * ts_torture_map: the user-space half of taskstate_torture mode=2.  Waits
 * for /dev/taskstate_torture, maps it read-only, and reads the first
 * entry's word until its gen leaves 1, counting words whose two halves
 * disagree (the writer keeps high == ~low).  Prints "reads N torn M".
 *
 *   ts_torture_map atomic   the read of the uapi header's protocol
 *                           (taskstate_map_read(): __atomic_load_n()),
 *                           which must never tear, on 32-bit too
 *   ts_torture_map split    two 32-bit loads, the negative control: the
 *                           word changes between them and it tears
 *
 * Pinned to CPU 1, away from the writer on CPU 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include "common.h"

int main(int argc, char **argv)
{
	const struct taskstate_map_entry *e;
	unsigned long reads = 0, torn = 0;
	bool split;
	void *p;
	int fd = -1, i, k;

	if (argc != 2 || (strcmp(argv[1], "atomic") && strcmp(argv[1], "split"))) {
		fprintf(stderr, "usage: ts_torture_map atomic|split\n");
		return 2;
	}
	split = !strcmp(argv[1], "split");
	ts_pin(1);
	for (i = 0; i < 30000 && fd < 0; i++) {
		fd = open("/dev/taskstate_torture", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			ts_sleep_ms(1);
	}
	if (fd < 0) {
		perror("/dev/taskstate_torture");
		return 1;
	}
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	e = p;
	for (;;) {
		uint64_t w;

		if (split) {
			const volatile uint32_t *h = (const void *)&e->word;
			uint32_t lo, hi;

			/*
			 * Little-endian halves, on purpose not atomic, with a
			 * few instructions between them so that the writer
			 * lands there often enough to be seen.
			 */
			lo = h[0];
			for (k = 0; k < 16; k++)
				__asm__ __volatile__("" ::: "memory");
			hi = h[1];
			w = (uint64_t)hi << 32 | lo;
			if (__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) != 1)
				break;
		} else {
			__u64 v;

			if (!taskstate_map_read(e, 1, &v))
				break;
			w = v;
		}
		reads++;
		torn += (uint32_t)(w >> 32) != (uint32_t)~(uint32_t)w;
	}
	printf("reads %lu torn %lu\n", reads, torn);
	munmap(p, (size_t)sysconf(_SC_PAGESIZE));
	return 0;
}
