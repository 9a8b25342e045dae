// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 6 of `make bench`: the adaptive mutex of examples/ against
 * glibc's mutexes and a spin lock, and the cost of taskstate_stuck_check().
 *
 *   mutex [--quick] [--csv FILE] [--threads 4,8] [--ms 300] [--reps 15]
 *         [--stuck N]
 *
 * Locks: amutex (examples/adaptive_mutex.c; "mapped" in the CSV says
 * whether its waiters could read owners), pthread (default mutex),
 * adaptive_np (PTHREAD_MUTEX_ADAPTIVE_NP), spin (test-and-test-and-set
 * with a pause).  Each case: T threads, each looping lock, critical
 * section, unlock, work outside, for --ms milliseconds; the critical
 * section and the outside work are busy loops calibrated in ns at start:
 * short (cs 200 ns, outside 1 us) and long (cs 10 us, outside 20 us).
 * Acquire latency is clock_gettime(CLOCK_MONOTONIC) before lock() to
 * after it, every acquisition.  The locks of one case run back to back in
 * a rotated order, --reps times, so that their ratios are taken side by
 * side on a shared host.
 *
 * --stuck N: N threads blocked in read(), located; the ns per thread of
 * taskstate_stuck_check() over all of them, and of taskstate_sample()
 * (one SAMPLE ioctl for all) for comparison.
 *
 * CSV rows: lock,threads,cs,rep,ops_per_s,p50_ns,p99_ns,acquires,
 * spun_per_op,sleeps_per_op,spin_limit_per_op,mapped and stuck,N,...: see
 * main().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"
#include "adaptive_mutex.h"

#define MAX_THREADS	16
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_SAMPLES	(1 << 20)	/* per thread */

enum lock_kind { L_AMUTEX, L_PTHREAD, L_ADAPTIVE, L_SPIN, NR_LOCKS };
static const char *const lock_names[NR_LOCKS] = {
	"amutex", "pthread", "adaptive_np", "spin",
};

struct cs_kind {
	const char *name;
	unsigned int cs_ns, out_ns;
};

static const struct cs_kind cs_kinds[] = {
	{ "short", 200, 1000 },
	{ "long", 10000, 20000 },
};

static double loops_per_ns;
static struct amutex am = AMUTEX_INITIALIZER;
static pthread_mutex_t pm, pm_adaptive;
static int spin_word;
static int stop;
static pthread_barrier_t start_barrier;
static unsigned long shared_counter;	/* written under the lock */

struct worker {
	pthread_t th;
	enum lock_kind kind;
	unsigned long cs_loops, out_loops;
	uint32_t *lat;		/* ns, capped */
	unsigned long n;	/* acquisitions */
	struct amutex_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static inline void busy(unsigned long loops)
{
	unsigned long i;

	for (i = 0; i < loops; i++)
		__asm__ __volatile__("" ::: "memory");
}

static void calibrate(void)
{
	unsigned long loops = 1000000;
	uint64_t t0, t;

	for (;;) {
		t0 = mono_ns();
		busy(loops);
		t = mono_ns() - t0;
		if (t > 20000000)
			break;
		loops *= 4;
	}
	loops_per_ns = (double)loops / t;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline void lock(enum lock_kind k)
{
	switch (k) {
	case L_AMUTEX:
		amutex_lock(&am);
		break;
	case L_PTHREAD:
		pthread_mutex_lock(&pm);
		break;
	case L_ADAPTIVE:
		pthread_mutex_lock(&pm_adaptive);
		break;
	default:
		while (__atomic_exchange_n(&spin_word, 1, __ATOMIC_ACQUIRE))
			while (__atomic_load_n(&spin_word, __ATOMIC_RELAXED))
				cpu_relax();
	}
}

static inline void unlock(enum lock_kind k)
{
	switch (k) {
	case L_AMUTEX:
		amutex_unlock(&am);
		break;
	case L_PTHREAD:
		pthread_mutex_unlock(&pm);
		break;
	case L_ADAPTIVE:
		pthread_mutex_unlock(&pm_adaptive);
		break;
	default:
		__atomic_store_n(&spin_word, 0, __ATOMIC_RELEASE);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t t0, t1;

	pthread_barrier_wait(&start_barrier);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		t0 = mono_ns();
		lock(w->kind);
		t1 = mono_ns();
		shared_counter++;
		busy(w->cs_loops);
		unlock(w->kind);
		if (w->n < MAX_SAMPLES)
			w->lat[w->n] = t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0;
		w->n++;
		busy(w->out_loops);
	}
	if (w->kind == L_AMUTEX)
		w->st = *amutex_thread_stats();
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t *all_lat;

static void run_case(FILE *csv, enum lock_kind kind, unsigned int nthreads,
		     const struct cs_kind *cs, int rep, unsigned int ms,
		     int mapped)
{
	static struct worker w[MAX_THREADS];
	unsigned long total = 0, samples = 0, spun = 0, sleeps = 0, limit = 0, i, k;
	uint64_t t0, t1;
	double ops;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&start_barrier, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		uint32_t *lat = w[i].lat;

		if (!lat)
			lat = malloc(sizeof(*lat) * MAX_SAMPLES);
		if (!lat)
			exit(1);
		memset(&w[i], 0, sizeof(w[i]));
		w[i].lat = lat;
		w[i].kind = kind;
		w[i].cs_loops = cs->cs_ns * loops_per_ns;
		w[i].out_loops = cs->out_ns * loops_per_ns;
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	pthread_barrier_wait(&start_barrier);
	t0 = mono_ns();
	usleep(ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
	t1 = mono_ns();
	pthread_barrier_destroy(&start_barrier);
	for (i = 0; i < nthreads; i++) {
		unsigned long n = w[i].n < MAX_SAMPLES ? w[i].n : MAX_SAMPLES;

		for (k = 0; k < n; k++)
			all_lat[samples++] = w[i].lat[k];
		total += w[i].n;
		spun += w[i].st.spun;
		sleeps += w[i].st.sleeps;
		limit += w[i].st.spin_limit;
	}
	qsort(all_lat, samples, sizeof(*all_lat), cmp_u32);
	ops = total * 1e9 / (t1 - t0);
	fprintf(csv, "%s,%u,%s,%d,%.0f,%u,%u,%lu,%.3f,%.3f,%.3f,%d\n",
		lock_names[kind], nthreads, cs->name, rep, ops,
		samples ? all_lat[samples / 2] : 0,
		samples ? all_lat[samples * 99 / 100] : 0, total,
		total ? (double)spun / total : 0, total ? (double)sleeps / total : 0,
		total ? (double)limit / total : 0, kind == L_AMUTEX ? mapped : -1);
	fflush(csv);
	printf("%-12s T=%-2u %-5s rep %d: %10.0f ops/s  p50 %8u ns  p99 %9u ns\n",
	       lock_names[kind], nthreads, cs->name, rep, ops,
	       samples ? all_lat[samples / 2] : 0,
	       samples ? all_lat[samples * 99 / 100] : 0);
	fflush(stdout);
}

/* ---- the stuck detector's cost ---- */

static int stuck_pipe[2];

static void *blocked(void *arg)
{
	struct taskstate_location *l = arg;
	char c;

	__atomic_store_n(&l->tid, gettid(), __ATOMIC_RELEASE);
	return (void *)(intptr_t)read(stuck_pipe[0], &c, 1);
}

static int bench_stuck(FILE *csv, unsigned int n, unsigned int reps)
{
	struct taskstate_location *l = calloc(n, sizeof(*l));
	struct taskstate_entry *e = calloc(n, sizeof(*e));
	struct taskstate_stuck *out = calloc(n, sizeof(*out));
	pthread_t *th = calloc(n, sizeof(*th));
	struct taskstate_mapping m;
	pthread_attr_t attr;
	uint64_t t0, t_check = ~0ULL, t_sample = ~0ULL, t;
	unsigned int i, r, k, iters = n >= 1000 ? 20 : 200;
	int fd, found = 0, stuck = 0, ret = 1;

	fd = taskstate_open();
	if (fd < 0 || taskstate_mapping_open(fd, &m)) {
		fprintf(stderr, "mutex: --stuck needs the mapping\n");
		return 1;
	}
	if (!l || !e || !out || !th || pipe(stuck_pipe))
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 16384);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], &attr, blocked, &l[i]))
			return 1;
	for (i = 0; i < n; i++)
		while (!__atomic_load_n(&l[i].tid, __ATOMIC_ACQUIRE))
			usleep(1000);
	/* Until they all sleep in read() for longer than the threshold. */
	usleep(300000);
	for (i = 0; i < n; i++)
		e[i].tid = l[i].tid;
	found = taskstate_locate(fd, l, n);
	for (r = 0; r < reps; r++) {
		t0 = mono_ns();
		for (k = 0; k < iters; k++)
			stuck = taskstate_stuck_check(&m, l, n, 100000000,
						      1U << TASKSTATE_SLEEPING, out, n, NULL);
		t = mono_ns() - t0;
		if (t < t_check)
			t_check = t;
		t0 = mono_ns();
		for (k = 0; k < iters; k++)
			taskstate_sample(fd, e, NULL, n);
		t = mono_ns() - t0;
		if (t < t_sample)
			t_sample = t;
	}
	fprintf(csv, "stuck,%u,%d,%d,%.2f,%.2f,%u,%u\n", n, found, stuck,
		(double)t_check / iters / n, (double)t_sample / iters / n,
		iters, reps);
	printf("stuck_check: %u threads (%d located, %d stuck > 100 ms): %.2f ns per thread; "
	       "SAMPLE ioctl for the same set: %.2f ns per thread\n", n, found,
	       stuck, (double)t_check / iters / n, (double)t_sample / iters / n);
	ret = found == (int)n && stuck == (int)n ? 0 : 1;
	close(stuck_pipe[1]);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	taskstate_mapping_close(&m);
	taskstate_close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned int threads[8] = { 4, 8 }, nthr = 2, ms = 300, reps = 15;
	unsigned int stuck_n = 0, i, t, c, r;
	pthread_mutexattr_t a;
	FILE *csv = NULL;
	int mapped, quick = 0, ret = 0;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--csv") && i + 1 < (unsigned int)argc) {
			csv = fopen(argv[++i], "w");
		} else if (!strcmp(argv[i], "--ms") && i + 1 < (unsigned int)argc) {
			ms = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < (unsigned int)argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--stuck") && i + 1 < (unsigned int)argc) {
			stuck_n = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < (unsigned int)argc) {
			char *p = argv[++i];

			for (nthr = 0; nthr < 8 && *p; nthr++) {
				threads[nthr] = strtoul(p, &p, 10);
				if (!threads[nthr] || threads[nthr] > MAX_THREADS)
					return 2;
				if (*p == ',')
					p++;
			}
		} else {
			fprintf(stderr, "usage: mutex [--quick] [--csv FILE] [--threads 4,8]"
				" [--ms MS] [--reps N] [--stuck N]\n");
			return 2;
		}
	}
	if (quick) {
		ms = 150;
		reps = 1;
		if (stuck_n > 100)
			stuck_n = 100;
	}
	if (!csv)
		csv = stdout;
	mapped = amutex_setup(0);
	pthread_mutex_init(&pm, NULL);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&pm_adaptive, &a);
	calibrate();
	all_lat = malloc(sizeof(*all_lat) * (size_t)MAX_SAMPLES * MAX_THREADS);
	if (!all_lat)
		return 1;
	printf("# mutex: nproc %ld, amutex mapped %d, %.3f loops/ns, %u ms per run, %u reps\n",
	       sysconf(_SC_NPROCESSORS_ONLN), mapped, loops_per_ns, ms, reps);
	fprintf(csv, "lock,threads,cs,rep,ops_per_s,p50_ns,p99_ns,acquires,"
		"spun_per_op,sleeps_per_op,spin_limit_per_op,mapped\n");
	for (r = 0; r < reps; r++)
		for (t = 0; t < nthr; t++)
			for (c = 0; c < ARRAY_SIZE(cs_kinds); c++)
				for (i = 0; i < NR_LOCKS; i++)
					run_case(csv, (i + r + t + c) % NR_LOCKS, threads[t],
						 &cs_kinds[c], r + 1, ms, mapped);
	if (stuck_n) {
		fprintf(csv, "stuck,threads,located,stuck,check_ns_per_thread,"
			"sample_ns_per_thread,iters,reps\n");
		ret = bench_stuck(csv, stuck_n, quick ? 3 : 11);
	}
	return ret;
}
