// SPDX-License-Identifier: GPL-2.0
/*
 * tsbpf: loads bench/tsbpf.bpf.o (the libbpf equivalent of taskstate,
 * tracking every thread), attaches its programs, prints "Attached" and
 * waits for SIGINT or SIGTERM, then detaches.
 *
 *   tsbpf OBJECT
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[8];
	struct bpf_program *prog;
	struct bpf_object *obj;
	int n = 0, i, err;

	if (argc != 2) {
		fprintf(stderr, "usage: tsbpf OBJECT\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		perror(argv[1]);
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "tsbpf: load: %d\n", err);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (n == 8)
			break;
		links[n] = bpf_program__attach(prog);
		if (!links[n]) {
			fprintf(stderr, "tsbpf: attach %s failed\n",
				bpf_program__name(prog));
			return 1;
		}
		n++;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("Attached %d programs\n", n);
	fflush(stdout);
	while (!stop)
		sleep(1);
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(obj);
	return 0;
}
