// SPDX-License-Identifier: GPL-2.0
/*
 * readers: what it costs a program to learn other threads' states, through
 * /dev/taskstate (libtaskstate's taskstate_sample()) against /proc/.../stat, with
 * getppid() as the null-syscall baseline.  Run as root with the module
 * loaded with track_all=1 (scripts/bench.sh does, in the guest).
 *
 *   readers [--quick] [--rounds K] [--round-ms MS] [--threads N] [--csv FILE]
 *           [--rounds-csv FILE] [--no-dev] [--only TEST]
 *
 * It starts N (4096) sleeping threads with small stacks, so that a batch
 * can name up to N distinct tracked tids, then times, in K interleaved
 * rounds (test 1, test 2, ..., test 1, test 2, ...), each of:
 *
 *   getppid          syscall(SYS_getppid): a syscall that does nothing
 *   ioctl_nop        an ioctl the module does not know (-ENOTTY): the
 *                    syscall, fd lookup, LSM hook and dispatch only
 *   sample0          TASKSTATE_IOC_SAMPLE with count 0: plus the argument
 *                    struct's copy in and out
 *   sample n=1       taskstate_sample() of 1 tid: one TASKSTATE_IOC_SAMPLE
 *   sample n=16|256|4096   one ioctl for that many tids
 *   proc orc         open + read + close of /proc/<pid>/task/<tid>/stat
 *   proc pread       pread() of a /proc/<pid>/task/<tid>/stat fd held open
 *   mapped           taskstate_mapping_read() of one thread located beforehand
 *                    (TASKSTATE_IOC_LOCATE): the read protocol on the
 *                    mapping, no system call
 *   map_scan         every entry of the mapping read by the protocol
 *                    (taskstate_mapping_scan()), as a full-table reader does; n is
 *                    the number of owned entries seen
 *   list             one TASKSTATE_IOC_LIST of every tracked thread into
 *                    a buffer allocated once; n is the number listed
 *
 * A round runs one test for a fixed number of calls, calibrated once so a
 * round lasts about --round-ms, between two clock_gettime(CLOCK_MONOTONIC)
 * (vDSO) reads.  Reported: the median over rounds of ns per call, its min
 * and max, ns per tid (= per call / n), and the ratio to getppid: the
 * median over rounds of (this test's ns / getppid's ns in the same round),
 * so that a slow stretch of a shared host, which hits the tests of one
 * round alike, cancels out.  --rounds-csv writes every round:
 * test,n,round,ns.
 *
 * --only TEST (getppid, ioctl_nop, sample0, sample1, sample16, ...,
 * proc_orc, proc_pread): time that test only, e.g. under perf record.
 * --no-dev: without /dev/taskstate (the host, which cannot load the
 * module), skip the sample, mapped and list tests and time the others
 * only.
 *
 * CSV (--csv): test,n,median_ns,min_ns,max_ns,ns_per_tid,ratio_to_getppid,found
 * where found is how many of the n tids the last ioctl answered with a
 * word (n expected; fewer means the threads are not tracked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"

#define MAX_ROUNDS	101

enum kind { K_GETPPID, K_IOCTL_NOP, K_SAMPLE0, K_SAMPLE, K_PROC_ORC,
	    K_PROC_PREAD, K_MAPPED, K_MAP_SCAN, K_LIST };

struct test {
	const char *name;
	enum kind kind;
	unsigned int n;		/* tids per call */
	unsigned long iters;	/* calls per round */
	double ns[MAX_ROUNDS];	/* ns per call, per round */
	int found;
	bool skip;
};

static struct test tests[] = {
	{ .name = "getppid", .kind = K_GETPPID, .n = 1 },
	{ .name = "ioctl_nop", .kind = K_IOCTL_NOP, .n = 1 },
	{ .name = "sample0", .kind = K_SAMPLE0, .n = 1 },
	{ .name = "sample", .kind = K_SAMPLE, .n = 1 },
	{ .name = "sample", .kind = K_SAMPLE, .n = 16 },
	{ .name = "sample", .kind = K_SAMPLE, .n = 256 },
	{ .name = "sample", .kind = K_SAMPLE, .n = 4096 },
	{ .name = "proc_orc", .kind = K_PROC_ORC, .n = 1 },
	{ .name = "proc_pread", .kind = K_PROC_PREAD, .n = 1 },
	{ .name = "mapped", .kind = K_MAPPED, .n = 1 },
	{ .name = "map_scan", .kind = K_MAP_SCAN, .n = 1 },
	{ .name = "list", .kind = K_LIST, .n = 1 },
};
#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static int dev = -1, stat_fd = -1;
static struct taskstate_mapping map;
static struct taskstate_location loc;
static struct taskstate_entry *list_buf;
static uint32_t list_cap;
static volatile uint64_t sink;
static char stat_path[64];
static struct taskstate_entry *entries;
static unsigned int nthreads = 4096;
static pid_t *tids;
static volatile int started;
static int hold[2];

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	char c;

	tids[(long)arg] = syscall(SYS_gettid);
	__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
	/* Sleeps until the process exits. */
	while (read(hold[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int start_threads(void)
{
	pthread_attr_t attr;
	size_t stack = PTHREAD_STACK_MIN > 16384 ? PTHREAD_STACK_MIN : 16384;
	unsigned long i;
	pthread_t th;
	int err;

	tids = calloc(nthreads, sizeof(*tids));
	if (!tids || pipe(hold))
		return -1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack);
	for (i = 0; i < nthreads; i++) {
		err = pthread_create(&th, &attr, sleeper, (void *)i);
		if (err) {
			fprintf(stderr, "readers: thread %lu: %s\n", i,
				strerror(err));
			return -1;
		}
	}
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < (int)nthreads)
		usleep(1000);
	return 0;
}

static void run(struct test *t, unsigned long iters)
{
	char buf[512];
	unsigned long i;
	int r, fd;

	switch (t->kind) {
	case K_GETPPID:
		for (i = 0; i < iters; i++)
			syscall(SYS_getppid);
		break;
	case K_IOCTL_NOP:
		for (i = 0; i < iters; i++)
			if (ioctl(dev, _IO(TASKSTATE_IOC_TYPE, 0x7f), 0) != -1 ||
			    errno != ENOTTY) {
				fprintf(stderr, "readers: nop ioctl did not "
					"fail with ENOTTY\n");
				exit(1);
			}
		break;
	case K_SAMPLE0:
		for (i = 0; i < iters; i++) {
			struct taskstate_sample a = {
				.size = sizeof(a),
				.entries = (uintptr_t)entries,
			};

			if (ioctl(dev, TASKSTATE_IOC_SAMPLE, &a) != 0) {
				perror("readers: sample, count 0");
				exit(1);
			}
		}
		break;
	case K_SAMPLE:
		for (i = 0; i < iters; i++) {
			r = taskstate_sample(dev, entries, NULL, t->n);
			if (r < 0) {
				fprintf(stderr, "readers: taskstate_sample: %s\n",
					strerror(-r));
				exit(1);
			}
			t->found = r;
		}
		break;
	case K_PROC_ORC:
		for (i = 0; i < iters; i++) {
			fd = open(stat_path, O_RDONLY);
			if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0) {
				perror(stat_path);
				exit(1);
			}
			close(fd);
		}
		break;
	case K_PROC_PREAD:
		for (i = 0; i < iters; i++)
			if (pread(stat_fd, buf, sizeof(buf), 0) <= 0) {
				perror(stat_path);
				exit(1);
			}
		break;
	case K_MAPPED:
		for (i = 0; i < iters; i++) {
			uint64_t w;

			if (taskstate_mapping_read(&map, &loc, &w, NULL)) {
				fprintf(stderr, "readers: mapped entry %u "
					"changed hands\n", loc.index);
				exit(1);
			}
			sink += w;
		}
		t->found = 1;
		break;
	case K_MAP_SCAN:
		for (i = 0; i < iters; i++) {
			uint32_t e, tid, gen, owned = 0;
			uint64_t w;

			for (e = 0; e < map.nr; e++)
				owned += !taskstate_mapping_scan(&map, e, &tid, &w, &gen);
			t->found = owned;
		}
		t->n = t->found;
		break;
	case K_LIST:
		for (i = 0; i < iters; i++) {
			struct taskstate_list a = {
				.size = sizeof(a), .count = list_cap,
				.entries = (uintptr_t)list_buf,
			};

			r = ioctl(dev, TASKSTATE_IOC_LIST, &a);
			if (r < 0) {
				perror("readers: list");
				exit(1);
			}
			t->found = r;
		}
		t->n = t->found;
		break;
	}
}

/* Tests whose found column means something. */
static bool has_found(enum kind k)
{
	return k == K_SAMPLE || k == K_MAPPED || k == K_MAP_SCAN ||
	       k == K_LIST;
}

static double timed(struct test *t, unsigned long iters)
{
	double t0 = now_ns();

	run(t, iters);
	return now_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n, double *lo, double *hi)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	*lo = s[0];
	*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--quick] [--rounds K] [--round-ms MS] "
		"[--threads N] [--csv FILE] [--rounds-csv FILE] [--no-dev] "
		"[--only TEST]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int rounds = 15, i, j;
	double round_ms = 10, med[NTESTS], lo[NTESTS], hi[NTESTS];
	const char *csv = NULL, *rcsv = NULL;
	double ratio[NTESTS], rr[MAX_ROUNDS], rlo, rhi;
	const char *only = NULL;
	bool no_dev = false;
	unsigned int k;
	FILE *f;

	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--quick")) {
			rounds = 3;
			round_ms = 2;
		} else if (!strcmp(argv[i], "--rounds") && v) {
			rounds = atoi(v);
			i++;
		} else if (!strcmp(argv[i], "--round-ms") && v) {
			round_ms = atof(v);
			i++;
		} else if (!strcmp(argv[i], "--threads") && v) {
			nthreads = strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(argv[i], "--only") && v) {
			only = v;
			i++;
		} else if (!strcmp(argv[i], "--no-dev")) {
			no_dev = true;
		} else if (!strcmp(argv[i], "--rounds-csv") && v) {
			rcsv = v;
			i++;
		} else if (!strcmp(argv[i], "--csv") && v) {
			csv = v;
			i++;
		} else {
			usage(argv[0]);
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || round_ms <= 0 || nthreads < 1)
		usage(argv[0]);

	dev = taskstate_open();
	if (dev < 0 && no_dev) {
		for (k = 0; k < NTESTS; k++)
			tests[k].skip = tests[k].kind == K_SAMPLE ||
					tests[k].kind == K_SAMPLE0 ||
					tests[k].kind == K_IOCTL_NOP ||
					tests[k].kind == K_MAPPED ||
					tests[k].kind == K_MAP_SCAN ||
					tests[k].kind == K_LIST;
	} else if (dev < 0) {
		fprintf(stderr, "readers: %s: %s\n", taskstate_dev_path(),
			strerror(-dev));
		return 1;
	}
	if (only) {
		bool any = false;

		for (k = 0; k < NTESTS; k++) {
			char name[32];

			snprintf(name, sizeof(name), "%s%.0u", tests[k].name,
				 tests[k].kind == K_SAMPLE ? tests[k].n : 0);
			tests[k].skip |= strcmp(name, only) != 0;
			any |= !tests[k].skip;
		}
		if (!any)
			usage(argv[0]);
		/* The ratio column divides by getppid's: keep it. */
		tests[0].skip = false;
	}
	if (start_threads())
		return 1;
	entries = calloc(nthreads, sizeof(*entries));
	if (!entries)
		return 1;
	for (k = 0; k < nthreads; k++)
		entries[k].tid = tids[k];
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/task/%d/stat",
		 (int)getpid(), (int)tids[0]);
	stat_fd = open(stat_path, O_RDONLY);
	if (stat_fd < 0) {
		perror(stat_path);
		return 1;
	}
	for (k = 0; k < NTESTS; k++)
		if (tests[k].n > nthreads)
			tests[k].n = nthreads;
	if (dev >= 0) {
		struct taskstate_info info;
		int ret = taskstate_mapping_open(dev, &map);

		loc.tid = tids[0];
		if (ret || taskstate_locate(dev, &loc, 1) != 1 || taskstate_info(dev, &info)) {
			fprintf(stderr, "readers: map or locate: %s\n",
				strerror(-ret));
			return 1;
		}
		list_cap = info.max_threads;
		list_buf = calloc(list_cap, sizeof(*list_buf));
		if (!list_buf)
			return 1;
	}

	/* Calibrate: calls per round so that a round lasts about round_ms. */
	for (k = 0; k < NTESTS; k++) {
		unsigned long n = 1;
		double el;

		if (tests[k].skip)
			continue;
		run(&tests[k], 1);		/* warm up */
		while ((el = timed(&tests[k], n)) < round_ms * 1e6 / 8 &&
		       n < (1ul << 30))
			n *= 2;
		n = (unsigned long)(n * round_ms * 1e6 / (el > 1 ? el : 1));
		tests[k].iters = n ? n : 1;
	}
	for (j = 0; j < rounds; j++)
		for (k = 0; k < NTESTS; k++)
			if (!tests[k].skip)
				tests[k].ns[j] = timed(&tests[k],
						       tests[k].iters) /
						 tests[k].iters;
	for (k = 0; k < NTESTS; k++) {
		if (tests[k].skip)
			continue;
		med[k] = median(tests[k].ns, rounds, &lo[k], &hi[k]);
		for (j = 0; j < rounds; j++)
			rr[j] = tests[k].ns[j] / tests[0].ns[j];
		ratio[k] = median(rr, rounds, &rlo, &rhi);
	}

	printf("taskstate readers: %u sleeping threads, %d rounds of ~%.0f ms, "
	       "medians over rounds\n", nthreads, rounds, round_ms);
	printf("%-12s %5s %11s %11s %11s %11s %9s %6s\n", "test", "n",
	       "ns/call", "min", "max", "ns/tid", "x getppid", "found");
	for (k = 0; k < NTESTS; k++)
		if (!tests[k].skip)
			printf("%-12s %5u %11.1f %11.1f %11.1f %11.2f %9.2f "
			       "%6d\n", tests[k].name, tests[k].n, med[k],
			       lo[k], hi[k], med[k] / tests[k].n,
			       ratio[k], has_found(tests[k].kind) ? tests[k].found : -1);
	for (k = 0; k < NTESTS; k++)
		if (tests[k].kind == K_SAMPLE && !tests[k].skip &&
		    tests[k].found != (int)tests[k].n)
			fprintf(stderr, "readers: WARNING: sample n=%u found "
				"only %d (is the module loaded with "
				"track_all=1?)\n", tests[k].n, tests[k].found);
	if (csv) {
		f = fopen(csv, "w");
		if (!f) {
			perror(csv);
			return 1;
		}
		fprintf(f, "test,n,median_ns,min_ns,max_ns,ns_per_tid,"
			"ratio_to_getppid,found\n");
		for (k = 0; k < NTESTS; k++)
			if (!tests[k].skip)
				fprintf(f, "%s,%u,%.3f,%.3f,%.3f,%.4f,%.4f,"
					"%d\n", tests[k].name, tests[k].n,
					med[k], lo[k], hi[k],
					med[k] / tests[k].n, ratio[k],
					has_found(tests[k].kind) ?
					tests[k].found : -1);
		if (fclose(f))
			return 1;
	}
	if (rcsv) {
		f = fopen(rcsv, "w");
		if (!f) {
			perror(rcsv);
			return 1;
		}
		fprintf(f, "test,n,round,ns\n");
		for (k = 0; k < NTESTS; k++)
			for (j = 0; !tests[k].skip && j < rounds; j++)
				fprintf(f, "%s,%u,%d,%.3f\n", tests[k].name,
					tests[k].n, j + 1, tests[k].ns[j]);
		if (fclose(f))
			return 1;
	}
	return 0;
}
