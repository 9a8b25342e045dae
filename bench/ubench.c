// SPDX-License-Identifier: GPL-2.0
/*
 * ubench: what publishing a thread's (state, time) pair costs, packed in
 * one 64-bit word (taskstate) against a sequence counter over two fields.
 *
 * Each "write" publishes write number i as state = i & 7 and a time whose
 * two 32-bit halves both carry i, so a reader can tell a pair or a word
 * mixed from two writes (torn) from a real one.  Schemes:
 *
 *   a  packed word, ts_word_store() from module/word.h (relaxed)
 *   b  seqcount, plain increments + smp_wmb() (raw_write_seqcount_*)
 *   c  seqcount, locked seq_cst fetch_add increments (the seed's "before")
 *   d  packed word, seq_cst store (xchg on x86)
 *   e  packed word written as two 32-bit stores: NEGATIVE CONTROL, it is
 *      expected to show torn reads, which proves the detector works
 *
 * Phases, all in one run, reported as ratios to (a):
 *   1. write cost, one thread: rounds of a batch of writes per scheme,
 *      interleaved (a b c d a b c d ...); median, min and max over rounds
 *   2. read cost, one thread: ts_word_load() against a seqcount read
 *   3. contended: a writer on one CPU writes without pause while a reader
 *      on another reads and checks every value, for a fixed time per
 *      scheme cut into slices, interleaved like the rounds
 *
 * The CSV (--csv) has one row per scheme and metric:
 *   scheme,metric,median,lo,hi,unit,ratio_to_a
 * lo and hi are min and max over the rounds (one-thread costs) or over
 * the slices (contended), except contended_torn_reads: the total, given
 * as median = lo = hi.
 *
 * One-thread costs include the loop and making the value, the same for
 * every scheme.  On i386, ts_word_store()/ts_word_load() come out here as
 * gcc's 8-byte x87/SSE accesses, not as the kernel's cmpxchg8b-based
 * atomic64_set()/atomic64_read(), so 32-bit runs show the user-space cost.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kshim.h"
#include "../module/word.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
enum { LO, HI };
#else
enum { HI, LO };
#endif

#define NSEC		1000000000ull
#define CBATCH		64		/* contended reads per clock read */
#define HIST_NS		65536		/* batch-time histogram, 1 ns bins */

/* Write number i: state i & 7, and i in both halves of the word. */
static inline uint32_t val_state(u64 i)
{
	return i & 7;
}

static inline u64 val_time(u64 i)
{
	return ((i & 0x1fffffff) << 32) | (uint32_t)i;
}

static inline bool val_ok(uint32_t state, u64 time)
{
	return state == (time & 7) && (time >> 32) == (time & 0x1fffffff);
}

struct seqpair {
	unsigned int seq;
	uint32_t state;
	u64 time;
};

typedef uint32_t __attribute__((may_alias)) u32_alias;

/* Everything the two threads share, one cache line each. */
static struct {
	struct ts_word pw __attribute__((aligned(64)));
	struct seqpair sp __attribute__((aligned(64)));
	int started __attribute__((aligned(64)));
	int stop;
} g __attribute__((aligned(64)));

/* ---- writers: one publication of write number i ---- */

static __always_inline void write_a(u64 i)
{
	ts_word_store(&g.pw, taskstate_pack(val_state(i), val_time(i)));
}

/*
 * The kernel's begin/end increments are plain "sequence++"; WRITE_ONCE()
 * stores the same non-locked increment but keeps the compiler from
 * merging one write's end with the next one's begin in this tight loop.
 */
static __always_inline void write_b(u64 i)
{
	WRITE_ONCE(g.sp.seq, g.sp.seq + 1);
	smp_wmb();
	WRITE_ONCE(g.sp.state, val_state(i));
	WRITE_ONCE(g.sp.time, val_time(i));
	smp_wmb();
	WRITE_ONCE(g.sp.seq, g.sp.seq + 1);
}

static __always_inline void write_c(u64 i)
{
	__atomic_fetch_add(&g.sp.seq, 1, __ATOMIC_SEQ_CST);
	WRITE_ONCE(g.sp.state, val_state(i));
	WRITE_ONCE(g.sp.time, val_time(i));
	__atomic_fetch_add(&g.sp.seq, 1, __ATOMIC_SEQ_CST);
}

static __always_inline void write_d(u64 i)
{
	__atomic_store_n(&g.pw.v.counter,
			 (s64)taskstate_pack(val_state(i), val_time(i)),
			 __ATOMIC_SEQ_CST);
}

/* Negative control: the 64-bit word as two separate 32-bit stores. */
static __always_inline void write_e(u64 i)
{
	volatile u32_alias *half = (volatile u32_alias *)&g.pw.v.counter;
	u64 w = taskstate_pack(val_state(i), val_time(i));

	half[LO] = (uint32_t)w;
	half[HI] = (uint32_t)(w >> 32);
}

#define WRITE_BATCH(x)							\
static __attribute__((noinline)) void write_batch_##x(u64 i, unsigned int n) \
{									\
	for (unsigned int j = 0; j < n; j++)				\
		write_##x(i + j);					\
}
WRITE_BATCH(a)
WRITE_BATCH(b)
WRITE_BATCH(c)
WRITE_BATCH(d)
WRITE_BATCH(e)

/* ---- readers: one (state, time) pair ---- */

static __always_inline u64 read_packed(uint32_t *state)
{
	u64 w = ts_word_load(&g.pw);

	*state = taskstate_state(w);
	return taskstate_since_ns(w);
}

/* read_seqcount_begin() + fields + read_seqcount_retry(). */
static __always_inline u64 read_seq(uint32_t *state, u64 *retries)
{
	for (;;) {
		unsigned int s = READ_ONCE(g.sp.seq);
		u64 t;

		if (s & 1) {
			++*retries;
			cpu_relax();
			continue;
		}
		smp_rmb();
		*state = READ_ONCE(g.sp.state);
		t = READ_ONCE(g.sp.time);
		smp_rmb();
		if (READ_ONCE(g.sp.seq) == s)
			return t;
		++*retries;
	}
}

static __attribute__((noinline)) u64 read_batch_packed(unsigned int n)
{
	u64 acc = 0;

	for (unsigned int j = 0; j < n; j++) {
		uint32_t st;
		u64 t = read_packed(&st);

		acc += t ^ st;
	}
	return acc;
}

static __attribute__((noinline)) u64 read_batch_seq(unsigned int n)
{
	u64 acc = 0, retries = 0;

	for (unsigned int j = 0; j < n; j++) {
		uint32_t st;
		u64 t = read_seq(&st, &retries);

		acc += t ^ st;
	}
	return acc + retries;
}

/* Contended reads: CBATCH checked reads, counted into *r. */
struct rstats {
	u64 reads, retries, torn, changed, last;
	uint32_t hist[HIST_NS];		/* time of one batch, ns */
};

static __attribute__((noinline)) void cread_packed(struct rstats *r)
{
	u64 torn = 0, changed = 0, last = r->last;

	for (int k = 0; k < CBATCH; k++) {
		uint32_t st;
		u64 t = read_packed(&st);

		torn += !val_ok(st, t);
		changed += t != last;
		last = t;
	}
	r->torn += torn;
	r->changed += changed;
	r->last = last;
	r->reads += CBATCH;
}

static __attribute__((noinline)) void cread_seq(struct rstats *r)
{
	u64 torn = 0, changed = 0, retries = 0, last = r->last;

	for (int k = 0; k < CBATCH; k++) {
		uint32_t st;
		u64 t = read_seq(&st, &retries);

		torn += !val_ok(st, t);
		changed += t != last;
		last = t;
	}
	r->torn += torn;
	r->changed += changed;
	r->retries += retries;
	r->last = last;
	r->reads += CBATCH;
}

static const struct scheme {
	const char *id;			/* CSV name */
	const char *desc;
	void (*write)(u64 i, unsigned int n);
	u64 (*read)(unsigned int n);	/* one-thread read phase, if any */
	void (*cread)(struct rstats *r);
	bool control;			/* contended phase only */
} schemes[] = {
	{ "a_packed_relaxed", "a packed word, ts_word_store (relaxed)",
	  write_batch_a, read_batch_packed, cread_packed, false },
	{ "b_seqcount_plain", "b seqcount, plain incs + smp_wmb",
	  write_batch_b, read_batch_seq, cread_seq, false },
	{ "c_seqcount_locked", "c seqcount, locked seq_cst incs",
	  write_batch_c, NULL, cread_seq, false },
	{ "d_packed_seqcst", "d packed word, seq_cst store (xchg)",
	  write_batch_d, NULL, cread_packed, false },
	{ "e_split_control", "e split 2x32-bit stores [NEG. CONTROL]",
	  write_batch_e, NULL, cread_packed, true },
};
#define NR_SCHEMES	(int)(sizeof(schemes) / sizeof(schemes[0]))

/* ---- helpers ---- */

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC + (u64)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		perror("calloc");
		exit(2);
	}
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary {
	double med, lo, hi;
};

static struct summary summarize(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return (struct summary){
		.med = n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
		.lo = v[0],
		.hi = v[n - 1],
	};
}

/* Batch time at quantile q, per read. */
static double hist_quantile(const struct rstats *r, double q)
{
	u64 total = r->reads / CBATCH, want = (u64)(q * (double)total), sum = 0;

	for (int b = 0; b < HIST_NS; b++) {
		sum += r->hist[b];
		if (sum > want)
			return (double)b / CBATCH;
	}
	return (double)(HIST_NS - 1) / CBATCH;
}

static int cpu_w = -1, cpu_r = -1;	/* -1: not pinned */

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
}

static void pick_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && cpu_r < 0; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (cpu_w < 0)
			cpu_w = c;
		else
			cpu_r = c;
	}
	if (cpu_r < 0)
		cpu_w = -1;
}

/* ---- output ---- */

struct row {
	const char *scheme, *metric, *unit;
	struct summary s;
};

static struct row rows[64];
static int nr_rows;

static double ratio_to_a(const struct row *r)
{
	for (int i = 0; i < nr_rows; i++)
		if (!strcmp(rows[i].metric, r->metric) &&
		    rows[i].scheme == schemes[0].id)
			return rows[i].s.med ? r->s.med / rows[i].s.med : NAN;
	return NAN;
}

static const struct row *add_row(const char *scheme, const char *metric,
				 const char *unit, struct summary s)
{
	if (nr_rows == (int)(sizeof(rows) / sizeof(rows[0]))) {
		fprintf(stderr, "too many rows\n");
		exit(2);
	}
	rows[nr_rows] = (struct row){ scheme, metric, unit, s };
	return &rows[nr_rows++];
}

static struct summary one(double v)
{
	return (struct summary){ v, v, v };
}

static int write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "scheme,metric,median,lo,hi,unit,ratio_to_a\n");
	for (int i = 0; i < nr_rows; i++) {
		const struct row *r = &rows[i];

		fprintf(f, "%s,%s,%.6g,%.6g,%.6g,%s,%.4f\n", r->scheme,
			r->metric, r->s.med, r->s.lo, r->s.hi, r->unit,
			ratio_to_a(r));
	}
	return fclose(f) ? -1 : 0;
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || strncmp(line, "model name", 10))
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

static double timer_overhead_ns(void)
{
	double v[101];

	for (int i = 0; i < 101; i++) {
		u64 t0 = now_ns();

		for (int j = 0; j < 100; j++)
			now_ns();
		v[i] = (double)(now_ns() - t0) / 101;
	}
	return summarize(v, 101).med;
}

static void header(const struct utsname *u, double timer)
{
	char model[128];

	cpu_model(model, sizeof(model));
	printf("taskstate ubench: packed 64-bit word vs seqcount\n");
	printf("cpu:      %s (%ld online)\n", model,
	       (long)sysconf(_SC_NPROCESSORS_ONLN));
#ifdef __clang__
	printf("compiler: clang %s\n", __clang_version__);
#else
	printf("compiler: gcc %s\n", __VERSION__);
#endif
	printf("word:     %d-bit build, CONFIG_64BIT=%d, ts_word_store() = %s\n",
	       (int)(8 * sizeof(void *)), IS_ENABLED(CONFIG_64BIT),
	       IS_ENABLED(CONFIG_64BIT) ? "WRITE_ONCE (plain 64-bit store)"
					: "atomic64_set (8-byte atomic store)");
	printf("kernel:   %s %s %s\n", u->sysname, u->release, u->machine);
	printf("timer:    clock_gettime(CLOCK_MONOTONIC), %.1f ns per call\n",
	       timer);
}

/* ---- phases ---- */

static u64 next_i = 1;			/* next write number */
static volatile u64 sink;

static void phase_write(int rounds, unsigned int batch)
{
	double *v = xcalloc((size_t)NR_SCHEMES * rounds, sizeof(*v));

	for (int k = -1; k < rounds; k++) {	/* round -1 warms up */
		for (int s = 0; s < NR_SCHEMES; s++) {
			u64 t0;

			if (schemes[s].control)
				continue;
			t0 = now_ns();
			schemes[s].write(next_i, batch);
			if (k >= 0)
				v[s * rounds + k] =
					(double)(now_ns() - t0) / batch;
			next_i += batch;
		}
	}
	printf("\n1. write cost, one thread: ns per write, %d rounds of %u\n",
	       rounds, batch);
	printf("   %-40s %8s %8s %8s %8s\n", "scheme", "median", "min", "max",
	       "x (a)");
	for (int s = 0; s < NR_SCHEMES; s++) {
		if (schemes[s].control)
			continue;
		const struct row *r = add_row(schemes[s].id, "write_ns", "ns",
					      summarize(v + s * rounds, rounds));

		printf("   %-40s %8.2f %8.2f %8.2f %8.2f\n", schemes[s].desc,
		       r->s.med, r->s.lo, r->s.hi, ratio_to_a(r));
	}
	free(v);
}

static void phase_read(int rounds, unsigned int batch)
{
	static const char *const desc[] = {
		"a packed word, ts_word_load (relaxed)",
		"b seqcount read (rmb, recheck)",
	};
	double *v = xcalloc(2 * (size_t)rounds, sizeof(*v));

	for (int k = -1; k < rounds; k++) {
		for (int s = 0; s < 2; s++) {
			u64 t0 = now_ns();

			sink += schemes[s].read(batch);
			if (k >= 0)
				v[s * rounds + k] =
					(double)(now_ns() - t0) / batch;
		}
	}
	printf("\n2. read cost, one thread: ns per read, %d rounds of %u\n",
	       rounds, batch);
	printf("   %-40s %8s %8s %8s %8s\n", "scheme", "median", "min", "max",
	       "x (a)");
	for (int s = 0; s < 2; s++) {
		const struct row *r = add_row(schemes[s].id, "read_ns", "ns",
					      summarize(v + s * rounds, rounds));

		printf("   %-40s %8.2f %8.2f %8.2f %8.2f\n", desc[s],
		       r->s.med, r->s.lo, r->s.hi, ratio_to_a(r));
	}
	free(v);
}

struct wctx {
	const struct scheme *s;
	u64 first, writes;
};

static void *writer(void *arg)
{
	struct wctx *w = arg;
	u64 i = w->first;

	pin_self(cpu_w);
	__atomic_store_n(&g.started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g.stop, __ATOMIC_RELAXED)) {
		w->s->write(i, 256);
		i += 256;
	}
	w->writes = i - w->first;
	return NULL;
}

/* What one contended slice measures, per scheme. */
enum { C_READS_S, C_MEAN, C_P50, C_P99, C_RETRIES, C_CHANGED, C_WRITES_S,
       C_TORN, NR_C };
static const struct {
	const char *metric, *unit;
} cmetric[NR_C] = {
	[C_READS_S]	= { "contended_reads_per_s", "1/s" },
	[C_MEAN]	= { "contended_read_ns_mean", "ns" },
	[C_P50]		= { "contended_read_ns_p50", "ns" },
	[C_P99]		= { "contended_read_ns_p99", "ns" },
	[C_RETRIES]	= { "contended_retries_per_read", "retries/read" },
	[C_CHANGED]	= { "contended_changed_per_read", "fraction" },
	[C_WRITES_S]	= { "contended_writes_per_s", "1/s" },
	[C_TORN]	= { "contended_torn_reads", "reads" },
};

/* One slice of one scheme: the writer thread writes while this reads. */
static void contended(const struct scheme *s, double seconds,
		      struct rstats *r, double out[NR_C])
{
	struct wctx w = { .s = s, .first = next_i };
	pthread_t tid;
	u64 t0, t, prev, end;
	double el;
	int err;

	memset(r, 0, sizeof(*r));
	g.started = g.stop = 0;
	err = pthread_create(&tid, NULL, writer, &w);
	if (err) {
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		exit(2);
	}
	while (!__atomic_load_n(&g.started, __ATOMIC_ACQUIRE))
		cpu_relax();
	t0 = prev = now_ns();
	end = t0 + (u64)(seconds * NSEC);
	do {
		s->cread(r);
		t = now_ns();
		r->hist[t - prev < HIST_NS ? t - prev : HIST_NS - 1]++;
		prev = t;
	} while (t < end);
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	pthread_join(tid, NULL);
	next_i += w.writes;

	el = (double)(t - t0) / NSEC;
	out[C_READS_S] = r->reads / el;
	out[C_MEAN] = el * NSEC / r->reads;
	out[C_P50] = hist_quantile(r, 0.50);
	out[C_P99] = hist_quantile(r, 0.99);
	out[C_RETRIES] = (double)r->retries / r->reads;
	out[C_CHANGED] = (double)r->changed / r->reads;
	out[C_WRITES_S] = w.writes / el;
	out[C_TORN] = r->torn;
}

static int phase_contended(double seconds, int slices)
{
	static struct rstats r;
	double *v = xcalloc((size_t)NR_SCHEMES * NR_C * slices, sizeof(*v));
	double one_slice[NR_C];
	int bad = 0;

	/* Slices interleaved (a b c d e a b c d e ...), like the rounds. */
	for (int k = 0; k < slices; k++) {
		for (int i = 0; i < NR_SCHEMES; i++) {
			contended(&schemes[i], seconds / slices, &r, one_slice);
			for (int m = 0; m < NR_C; m++)
				v[(i * NR_C + m) * slices + k] = one_slice[m];
		}
	}

	printf("\n3. contended: %.2f s per scheme in %d interleaved slices; "
	       "medians over slices\n", seconds, slices);
	if (cpu_r < 0)
		printf("   ONLY ONE CPU available: threads run unpinned and "
		       "time-share, so reads rarely overlap a write\n");
	else
		printf("   writer pinned to CPU %d, reader pinned to CPU %d\n",
		       cpu_w, cpu_r);
	printf("   ns per read: mean = 1/rate; p50/p99 from the time of each "
	       "batch of %d reads (+1/%d clock read)\n", CBATCH, CBATCH);
	printf("   retry = extra pass over seq (odd, or changed on recheck)\n");
	printf("   chgd = share of reads that saw a new value (real overlap)\n");
	printf("   torn = total over all slices\n");
	printf("   %-40s %8s %6s %6s %6s %6s %8s %6s %9s %6s\n", "scheme",
	       "Mreads/s", "mean", "p50", "p99", "x p50", "retry/rd", "chgd",
	       "torn", "Mwr/s");
	for (int i = 0; i < NR_SCHEMES; i++) {
		const struct scheme *s = &schemes[i];
		const struct row *row[NR_C];
		double c[NR_C], torn = 0;

		for (int k = 0; k < slices; k++)
			torn += v[(i * NR_C + C_TORN) * slices + k];
		for (int m = 0; m < NR_C; m++) {
			struct summary sum = m == C_TORN ? one(torn) :
				summarize(v + (i * NR_C + m) * slices, slices);

			row[m] = add_row(s->id, cmetric[m].metric,
					 cmetric[m].unit, sum);
			c[m] = sum.med;
		}
		printf("   %-40s %8.1f %6.2f %6.2f %6.2f %6.2f %8.4f %6.3f %9.0f "
		       "%6.1f%s\n", s->desc, c[C_READS_S] / 1e6, c[C_MEAN],
		       c[C_P50], c[C_P99], ratio_to_a(row[C_P50]),
		       c[C_RETRIES], c[C_CHANGED], torn, c[C_WRITES_S] / 1e6,
		       s->control ? (torn ? "  (tears: detector works)" :
				     "  (no tear caught this run)") :
		       torn ? "  FAIL: TORN" : "");
		if (torn && !s->control)
			bad = 1;
	}
	free(v);
	return bad;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--quick] [--rounds K] [--batch N] "
		"[--seconds S] [--slices N] [--csv FILE]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int rounds = 101, slices = 10, bad;
	unsigned int batch = 1 << 16;
	double seconds = 1.0;
	const char *csv = NULL;
	struct utsname u;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--quick")) {
			rounds = 5;
			batch = 4096;
			seconds = 0.05;
			slices = 2;
		} else if (!strcmp(a, "--rounds") && v) {
			rounds = atoi(v);
			i++;
		} else if (!strcmp(a, "--batch") && v) {
			batch = (unsigned int)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--seconds") && v) {
			seconds = atof(v);
			i++;
		} else if (!strcmp(a, "--slices") && v) {
			slices = atoi(v);
			i++;
		} else if (!strcmp(a, "--csv") && v) {
			csv = v;
			i++;
		} else {
			usage(argv[0]);
		}
	}
	if (rounds < 1 || batch < 1 || slices < 1 || !(seconds > 0))
		usage(argv[0]);

	uname(&u);
	pick_cpus();
	pin_self(cpu_r);
	if (!ts_word_init(&g.pw, taskstate_pack(val_state(next_i),
						 val_time(next_i))))
		fprintf(stderr, "ts_word_init: word was not empty\n");
	next_i++;
	header(&u, timer_overhead_ns());
	add_row("env", "word_bits", "bits", one(8 * sizeof(void *)));

	phase_write(rounds, batch);
	phase_read(rounds, batch);
	bad = phase_contended(seconds, slices);

	if (bad)
		printf("\nFAIL: torn reads in a scheme that must not tear\n");
	if (csv && write_csv(csv))
		return 2;
	return bad;
}
