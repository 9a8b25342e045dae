// SPDX-License-Identifier: GPL-2.0
/*
 * tscount: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) that counts
 * the guest instructions each vCPU executes between two marker
 * instructions of the guest program (bench/count.c):
 *
 *	66 87 db	xchg %bx,%bx	start a span on this vCPU
 *	66 87 c9	xchg %cx,%cx	end it: one line
 *				"span SEQ VCPU INSNS KINSNS MACC MSTORES MLINES"
 *	66 87 d2	xchg %dx,%dx	write the profile of the spans so far
 *
 * Only the vCPU that executed the start marker is counted, from the
 * instruction after it up to and including the end marker: what the
 * other vCPU runs meanwhile is not in the span.  KINSNS is the part
 * executed at kernel addresses (the upper half of the address space).
 * With mem=1, MACC and MSTORES are the memory accesses and stores made in
 * the span by code in the x86-64 module area (loadable modules and BPF
 * JIT images: 0xffffffffc0000000 up to 0xffffffffff000000), and MLINES
 * the distinct 64-byte lines they touched (stack included); 0 without.
 * With mem=1 a span line is followed by
 *				"lines SEQ INSN:LINE ..."
 * the distinct pairs of a module-area instruction's address and a line
 * it touched, in hex (or "lines SEQ overflow" past PAIRS_MAX of them):
 * bench/count.py tells the lines apart by the code that touched them.
 *
 * A memory callback counts only while its own instruction is the one
 * running: an instruction's execution callback arms it, the start of the
 * next TB disarms it.  QEMU 7.2 leaves a TB's memory callbacks installed
 * for helpers when the TB ends with an instruction that calls one (the
 * probes' final ret looks its target up in a helper; QEMU issue 1381,
 * fixed in later QEMU), so every access QEMU then performs in a helper (the
 * FPU state's FXSAVE and FXRSTOR under the default CPU model, atomics)
 * called the ret's callback: 360 accesses a pipe round trip without
 * this check, 94 with it.  One such path remains: an interrupt taken
 * right after such a TB pushes its frame before the next TB's start
 * disarms; the probes run with interrupts off, and a span with an
 * interrupt in it is not a floor.
 *
 * Counting is per translation block: a TB's instructions are added when
 * it starts (a callback with the vCPU's index: the API's inline adds
 * have one counter for all vCPUs, which race), and a marker subtracts
 * the instructions of its TB that follow it.  A TB left early by a fault
 * counts whole; none does in a steady benchmark loop.
 *
 * With prof=1 each TB started inside a span on the counted vCPU is
 * counted too, and the third marker writes, into OUT.prof.N (N from 0),
 * one line "VADDR NINSNS EXECS" per TB address executed since the last
 * dump, then zeroes the counts: scripts/count.sh maps the addresses to
 * the guest's /proc/kallsyms and the module's sections.
 *
 *	qemu-system-x86_64 ... -plugin tscount.so,out=FILE[,prof=1][,mem=1]
 *
 * QEMU does not install its plugin header; the few functions used here
 * are declared below from the API's documented signatures (version 1).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plugin API, version 1 (QEMU 7.2): what this plugin uses ---- */
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info_t;

typedef uint32_t qemu_plugin_meminfo_t;

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index,
					  qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags,
					    void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags,
				      enum qemu_plugin_mem_rw rw,
				      void *userdata);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;
/* ---- end of the API ---- */

#define MAX_VCPUS	64
#define KERNEL_HALF	0xffff800000000000ULL
#define MODULES_START	0xffffffffc0000000ULL
#define MODULES_END	0xffffffffff000000ULL
#define LINE_SET	1024	/* distinct lines kept per span, a power of 2 */
#define PAIRS_MAX	256	/* distinct (instruction, line) pairs a span */

/* One per translated TB; the same address may be translated again. */
struct tb_info {
	uint64_t vaddr;
	uint64_t execs;		/* TB starts in spans, prof=1 */
	uint32_t n;		/* instructions */
	bool kernel;
	struct tb_info *next;	/* every TB, for the dump */
};

/* A marker: its kind and how many of its TB's instructions follow it. */
struct marker {
	int kind;
	uint32_t after;
};

static struct vcpu {
	uint64_t insns, kinsns;	/* since boot */
	uint64_t start, kstart;	/* at the start marker */
	bool active;
	uint64_t armed;		/* the module instruction running, mem=1 */
	uint64_t macc, mstores;	/* module-area accesses in the span */
	unsigned int nlines;
	uint64_t lines[LINE_SET];	/* line + 1, 0 free */
	unsigned int npairs;		/* PAIRS_MAX + 1: overflowed */
	struct { uint64_t insn, line; } pairs[PAIRS_MAX];
} __attribute__((aligned(64))) vcpus[MAX_VCPUS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tb_info *all_tbs;		/* under lock */
static FILE *out;
static char *out_path;
static bool prof, mem;
static unsigned long span_seq, dump_seq;

static void tb_exec(unsigned int vcpu, void *udata)
{
	struct tb_info *tb = udata;
	struct vcpu *v = &vcpus[vcpu % MAX_VCPUS];

	v->insns += tb->n;
	v->armed = 0;
	if (tb->kernel)
		v->kinsns += tb->n;
	if (prof && v->active)
		__atomic_fetch_add(&tb->execs, 1, __ATOMIC_RELAXED);
}

/* The running instruction's (instruction, line) pair, once a span. */
static void add_pair(struct vcpu *v, uint64_t line)
{
	unsigned int n;

	if (v->npairs > PAIRS_MAX)	/* overflowed: no more */
		return;
	for (n = 0; n < v->npairs; n++)
		if (v->pairs[n].insn == v->armed && v->pairs[n].line == line)
			return;
	if (n == PAIRS_MAX) {
		v->npairs = PAIRS_MAX + 1;
		return;
	}
	v->pairs[n].insn = v->armed;
	v->pairs[n].line = line;
	v->npairs++;
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info,
		       uint64_t vaddr, void *udata)
{
	struct vcpu *v = &vcpus[vcpu % MAX_VCPUS];
	uint64_t line = (vaddr >> 6) + 1;
	unsigned int h, n;

	if (!v->active || v->armed != (uint64_t)(uintptr_t)udata)
		return;
	v->macc++;
	if (qemu_plugin_mem_is_store(info))
		v->mstores++;
	add_pair(v, line);
	h = (line * 0x9e3779b97f4a7c15ULL) >> 54;	/* 10 bits */
	for (n = 0; n < LINE_SET; n++, h = (h + 1) & (LINE_SET - 1)) {
		if (v->lines[h] == line)
			return;
		if (!v->lines[h]) {
			if (v->nlines < LINE_SET / 2) {
				v->lines[h] = line;
				v->nlines++;
			}
			return;
		}
	}
}

/* The span's (instruction, line) pairs, after its span line; under lock. */
static void write_pairs(const struct vcpu *v)
{
	unsigned int n;

	fprintf(out, "lines %lu", span_seq - 1);
	if (v->npairs > PAIRS_MAX)
		fputs(" overflow", out);
	else
		for (n = 0; n < v->npairs; n++)
			fprintf(out, " %" PRIx64 ":%" PRIx64, v->pairs[n].insn,
				(v->pairs[n].line - 1) << 6);
	fputc('\n', out);
}

/* The instruction about to run: its memory callbacks count (see above). */
static void mem_arm(unsigned int vcpu, void *udata)
{
	vcpus[vcpu % MAX_VCPUS].armed = (uint64_t)(uintptr_t)udata;
}

static void dump_prof(void)
{
	struct tb_info *tb;
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.prof.%lu", out_path, dump_seq++);
	f = fopen(path, "w");
	if (!f) {
		qemu_plugin_outs("tscount: cannot write the profile\n");
		return;
	}
	for (tb = all_tbs; tb; tb = tb->next) {
		uint64_t e = __atomic_exchange_n(&tb->execs, 0,
						 __ATOMIC_RELAXED);

		if (e)
			fprintf(f, "%" PRIx64 " %u %" PRIu64 "\n", tb->vaddr,
				tb->n, e);
	}
	fclose(f);
}

static void marker_exec(unsigned int vcpu, void *udata)
{
	struct marker *m = udata;
	struct vcpu *v = &vcpus[vcpu % MAX_VCPUS];
	uint64_t now = v->insns - m->after;

	switch (m->kind) {
	case 0:
		v->start = now;
		v->kstart = v->kinsns;
		if (v->nlines)
			memset(v->lines, 0, sizeof(v->lines));
		v->macc = v->mstores = v->nlines = v->npairs = 0;
		v->active = true;
		break;
	case 1:
		if (!v->active)
			break;
		v->active = false;
		pthread_mutex_lock(&lock);
		fprintf(out, "span %lu %u %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %u\n", span_seq++, vcpu, now - v->start,
			v->kinsns - v->kstart, v->macc, v->mstores, v->nlines);
		if (mem)
			write_pairs(v);
		fflush(out);
		pthread_mutex_unlock(&lock);
		break;
	case 2:
		pthread_mutex_lock(&lock);
		if (prof)
			dump_prof();
		fprintf(out, "dump %lu\n", dump_seq - 1);
		fflush(out);
		pthread_mutex_unlock(&lock);
		break;
	}
}

static int marker_kind(struct qemu_plugin_insn *insn)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);

	if (qemu_plugin_insn_size(insn) != 3 || b[0] != 0x66 || b[1] != 0x87)
		return -1;
	switch (b[2]) {
	case 0xdb: return 0;
	case 0xc9: return 1;
	case 0xd2: return 2;
	}
	return -1;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct tb_info *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->vaddr = qemu_plugin_tb_vaddr(tb);
	t->n = n;
	t->kernel = t->vaddr >= KERNEL_HALF;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     t);
	pthread_mutex_lock(&lock);
	t->next = all_tbs;
	all_tbs = t;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		struct marker *m;
		int kind;

		if (mem && va >= MODULES_START && va < MODULES_END) {
			void *token = (void *)(uintptr_t)va;

			qemu_plugin_register_vcpu_insn_exec_cb(insn, mem_arm,
							       QEMU_PLUGIN_CB_NO_REGS,
							       token);
			qemu_plugin_register_vcpu_mem_cb(insn, mem_access,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, token);
		}
		if (t->kernel)
			continue;
		kind = marker_kind(insn);
		if (kind < 0)
			continue;
		m = malloc(sizeof(*m));
		if (!m)
			abort();
		m->kind = kind;
		m->after = n - i - 1;
		qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec,
						       QEMU_PLUGIN_CB_NO_REGS, m);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	if (out)
		fclose(out);
	out = NULL;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
			int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = strdup(argv[i] + 4);
		} else if (!strcmp(argv[i], "prof=1") || !strcmp(argv[i], "prof=on")) {
			prof = true;
		} else if (!strcmp(argv[i], "mem=1") || !strcmp(argv[i], "mem=on")) {
			mem = true;
		} else if (strcmp(argv[i], "prof=0") && strcmp(argv[i], "prof=off") &&
			   strcmp(argv[i], "mem=0") && strcmp(argv[i], "mem=off")) {
			fprintf(stderr, "tscount: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "tscount: out=FILE is required\n");
		return -1;
	}
	out = fopen(out_path, "w");
	if (!out) {
		perror(out_path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
