// SPDX-License-Identifier: GPL-2.0
/*
 * The soak: everything hostile at once, for a bounded time, from several
 * threads and processes, so that the kernel's own checkers (lockdep,
 * KASAN, KCSAN, kmemleak, DEBUG_OBJECTS) see the module's every path
 * racing every other:
 *
 *  - two ioctl fuzzers: every command and random command numbers, random
 *    sizes (0, short, exact, long with and without a non-zero tail, a
 *    page, more), random flags and padding, counts up to and past the
 *    limits, pointers that are valid, NULL, misaligned, read-only,
 *    unmapped, kernel addresses, beyond 32 bits, and a buffer that
 *    another thread keeps unmapping and mapping again; TRACK and UNTRACK
 *    of live, dead and reused tids and processes; mmap() with good and
 *    bad arguments, mprotect() and mremap() of the mapping;
 *  - churn: short-lived threads and processes, exec from a thread that
 *    is not the leader (its tid changes), pid reuse forced through
 *    /proc/sys/kernel/ns_last_pid;
 *  - readers: the debugfs table and LIST in loops, in the initial pid
 *    namespace and in a child one (where mmap() must be EPERM); SAMPLE
 *    in a tight loop of two threads that bounce a byte over pipes, so
 *    that the kernel reads words (and totals) while their probes write
 *    them, which is where KCSAN can see a store that is not marked;
 *  - with -k MODULE: unload and load cycles under all of it, track_all=1
 *    and =0 in turn (an unload is refused while anyone holds the device).
 *
 *   ts_soak [-d SECONDS] [-k taskstate.ko] [-s SEED]
 *
 * Every result is checked against what the uapi header promises: an errno
 * it does not list for that command, an errno other than the one the
 * arguments must produce, a word whose time is in the future or whose
 * state does not fit its answer, a count out of bounds, all fail.  Prints
 * what it did and TAP lines; leaves the module loaded (track_all=1 if it
 * had to load it).
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include "util.h"

#define DEV		"/dev/taskstate"
#define DEBUGFS		"/sys/kernel/debug/taskstate"
#define NR_FUZZERS	2
#define BUF_ENTRIES	(TASKSTATE_BATCH_MAX + 1)
#define NR_TIDS		256
#define SLACK_NS	1000000ULL	/* the fast clock may lag, never lead */

enum {
	RES_OK, RES_EINVAL, RES_E2BIG, RES_EFAULT, RES_ENOTTY, RES_ESRCH,
	RES_ENOSPC, RES_EOPNOTSUPP, RES_ENOMEM, RES_EPERM, RES_EACCES,
	RES_EBUSY, RES_OTHER, NR_RESULTS
};
static const int result_errno[NR_RESULTS] = {
	0, EINVAL, E2BIG, EFAULT, ENOTTY, ESRCH, ENOSPC, EOPNOTSUPP, ENOMEM,
	EPERM, EACCES, EBUSY, -1,
};
static const char *const result_name[NR_RESULTS] = {
	"ok", "EINVAL", "E2BIG", "EFAULT", "ENOTTY", "ESRCH", "ENOSPC",
	"EOPNOTSUPP", "ENOMEM", "EPERM", "EACCES", "EBUSY", "other",
};

/* The commands of ts_cmds[] (util.c), then random numbers and mmap(). */
enum {
	C_INFO = TS_CMD_INFO, C_TRACK = TS_CMD_TRACK,
	C_UNTRACK = TS_CMD_UNTRACK, C_SAMPLE = TS_CMD_SAMPLE,
	C_LIST = TS_CMD_LIST, C_LOCATE = TS_CMD_LOCATE,
	C_PROCESS = TS_CMD_PROCESS, C_EXITS = TS_CMD_EXITS,
	C_RANDOM = TS_NR_CMDS, C_MMAP, NR_CMDS
};

static const char *cmd_name(int cmd)
{
	if (cmd < TS_NR_CMDS)
		return ts_cmds[cmd].name;
	return cmd == C_RANDOM ? "random" : "mmap";
}
/* What each command may answer, beyond success (uapi header). */
static const unsigned int allowed[NR_CMDS] = {
#define B(r) (1U << (r))
	[C_INFO] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT),
	[C_TRACK] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) | B(RES_ESRCH) |
		    B(RES_ENOSPC) | B(RES_EBUSY) | B(RES_ENOMEM) |
		    B(RES_EOPNOTSUPP),
	[C_UNTRACK] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) | B(RES_ESRCH),
	[C_SAMPLE] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) |
		     B(RES_EOPNOTSUPP) | B(RES_ENOMEM),
	[C_LIST] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) | B(RES_EOPNOTSUPP) |
		   B(RES_ENOMEM),
	[C_LOCATE] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT),
	[C_PROCESS] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) | B(RES_ESRCH) |
		      B(RES_EOPNOTSUPP),
	[C_EXITS] = B(RES_EINVAL) | B(RES_E2BIG) | B(RES_EFAULT) | B(RES_ENOMEM),
	[C_RANDOM] = B(RES_ENOTTY),
	[C_MMAP] = B(RES_EINVAL) | B(RES_EACCES) | B(RES_EPERM),
#undef B
};

/* Counters, in shared memory: the child pid namespace's reader adds too. */
struct stats {
	unsigned long calls[NR_CMDS][NR_RESULTS];
	unsigned long threads, procs, execs, reused, reuse_tries;
	unsigned long debugfs_reads, debugfs_rows, lists, listed;
	unsigned long ns_lists, ns_reads, ns_mmap_eperm;
	unsigned long unloads, refused, loads, opens_absent;
	unsigned long hot_samples, hot_switches;
	unsigned long mprotect_refused, mremap_refused;
	unsigned long failures;
	char first_failure[512];
	int quiesce;		/* an unload is waiting: do not open now */
};
static struct stats *st;
static int stop;		/* __atomic: set once, at the end */

static bool stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}
static const char *ko;
static long page;
static int bits = (int)(sizeof(long) * 8);

/* Regions shared by the fuzzers: never written by the kernel for good. */
static char *none_region;	/* PROT_NONE: any access faults */
static char *ro_region;		/* PROT_READ: reads work, writes fault */
static char *victim;		/* RW or PROT_NONE, flipped by a thread */
#define VICTIM_PAGES	4

static void failf(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&st->failures, 1, __ATOMIC_RELAXED) == 0) {
		va_start(ap, fmt);
		vsnprintf(st->first_failure, sizeof(st->first_failure), fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	fprintf(stderr, "# FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static void count(int cmd, int res)
{
	__atomic_fetch_add(&st->calls[cmd][res], 1, __ATOMIC_RELAXED);
}

static void bump(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* xorshift64*, one state per thread. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static unsigned int below(uint64_t *s, unsigned int n)
{
	return (unsigned int)(rnd(s) % n);
}

static int result_of(int ret)
{
	int r;

	if (ret >= 0)
		return RES_OK;
	for (r = 1; r < RES_OTHER; r++)
		if (errno == result_errno[r])
			return r;
	return RES_OTHER;
}

/* Tids seen lately, live or dead: what TRACK, UNTRACK and SAMPLE name. */
static uint32_t tids[NR_TIDS];
static unsigned int tids_at;

static void note_tid(pid_t tid)
{
	unsigned int i = __atomic_fetch_add(&tids_at, 1, __ATOMIC_RELAXED);

	__atomic_store_n(&tids[i % NR_TIDS], (uint32_t)tid, __ATOMIC_RELAXED);
}

static uint32_t some_tid(uint64_t *s)
{
	switch (below(s, 8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return (uint32_t)ts_gettid();
	case 3: return (uint32_t)getpid();
	case 4: return 4194304 + below(s, 100);		/* past PID_MAX_LIMIT */
	case 5: return (uint32_t)rnd(s);
	default:
		return __atomic_load_n(&tids[below(s, NR_TIDS)], __ATOMIC_RELAXED);
	}
}

/* The words in an answer: a state for every found entry, no future time. */
static bool word_ok(uint64_t word, bool found, uint64_t now)
{
	uint64_t since = word & TASKSTATE_TIME_MASK;

	if (!found)
		return word == 0;
	return taskstate_state(word) != TASKSTATE_NONE &&
	       since <= ((now + SLACK_NS) & TASKSTATE_TIME_MASK);
}

struct fuzzer {
	pthread_t th;
	uint64_t seed;
	int fd;
	bool totals;			/* the open module keeps totals */
	uint32_t map_entries, max_threads;
	uint64_t map_size;
	char *arg;			/* two pages: the argument struct */
	struct taskstate_entry *ent;	/* BUF_ENTRIES */
	struct taskstate_totals *tot;	/* BUF_ENTRIES */
	struct taskstate_location *loc;	/* BUF_ENTRIES */
	struct taskstate_exit *exits;	/* TASKSTATE_EXITS_LOG */
};

enum {
	P_VALID, P_NULL, P_MISALIGNED, P_RDONLY, P_NONE, P_KERNEL, P_HIGH,
	P_VICTIM, NR_PTRS
};

static bool ptr_bad_for_read(int p)
{
	return p == P_NULL || p == P_NONE || p == P_KERNEL || p == P_HIGH;
}

/* Mostly a valid pointer, else any kind of bad one. */
static int some_ptr(uint64_t *s)
{
	return below(s, 4) ? P_VALID : below(s, NR_PTRS);
}

static uint64_t pointer(int kind, void *valid)
{
	switch (kind) {
	case P_NULL: return 0;
	case P_MISALIGNED: return (uintptr_t)valid + 1;
	case P_RDONLY: return (uintptr_t)ro_region;
	case P_NONE: return (uintptr_t)none_region;
	case P_KERNEL:
		return bits == 64 ? 0xffff888000000000ULL : 0xc0000000ULL;
	/* 32-bit: bits above 31 (EFAULT by the ABI); 64-bit: past TASK_SIZE. */
	case P_HIGH: return (1ULL << 48) | (uintptr_t)valid;
	case P_VICTIM: return (uintptr_t)victim;
	default: return (uintptr_t)valid;
	}
}

/* Sizes of the argument struct: @ver0, the kernel's @cur, and around. */
static uint32_t arg_size(uint64_t *s, uint32_t ver0, uint32_t cur,
			 bool *tail)
{
	*tail = false;
	switch (below(s, 12)) {
	case 0: return 0;
	case 1: return ver0 - 1 - below(s, ver0 - 1);
	case 2: return ver0;
	case 3:
		*tail = true;
		return cur + 8;
	case 4: return cur + 8;
	case 5: return (uint32_t)page;
	case 6: return (uint32_t)page + 1 + below(s, 4096);
	case 7: return below(s, 2 * (uint32_t)page);
	case 8: return (uint32_t)rnd(s);
	default: return cur;
	}
}

/*
 * A size between version 0's and the current one would cut a pointer
 * field in two, and the kernel would write to what is left of it.
 */
static uint32_t whole_fields(uint32_t size, uint32_t ver0, uint32_t cur)
{
	return size > ver0 && size < cur ? ver0 : size;
}

static uint32_t some_count(uint64_t *s, uint32_t max)
{
	switch (below(s, 8)) {
	case 0: return 0;
	case 1: return 1 + below(s, 4);
	case 2: return max;
	case 3: return max + 1;
	case 4: return (uint32_t)rnd(s);
	case 5: return TASKSTATE_LIST_MAX + 1;
	default: return 1 + below(s, 64);
	}
}

/*
 * One ioctl with random arguments, checked.  The argument struct is
 * built at f->arg (zero beyond what is set, so a size up to a page reads
 * zeros), or the call gets a bad pointer in its place.
 */
static void fuzz_ioctl(struct fuzzer *f, uint64_t *s)
{
	int cmd = below(s, NR_CMDS - 1), argp = P_VALID, bufp, totp = -1;
	uint32_t size = 0, ver0 = 0, cur = 0, n = 0, max = 0;
	unsigned int req, res, must = 0;
	uint64_t now;
	bool tail = false, flags = false, exits = false;
	char *a = f->arg;
	uint32_t id = 0;
	long ret;

	memset(a, 0, 2 * page);
	if (!below(s, 8))
		argp = below(s, NR_PTRS);
	/* ioctl()'s own argument is a long: no bits above 31 on 32-bit. */
	if (argp == P_HIGH && sizeof(long) == 4)
		argp = P_KERNEL;
	bufp = some_ptr(s);
	if (cmd < TS_NR_CMDS) {
		ver0 = ts_cmds[cmd].ver0;
		cur = ts_cmds[cmd].ksize;
	}
	switch (cmd) {
	case C_TRACK:
	case C_UNTRACK: {
		struct taskstate_track *t = (void *)a;

		id = some_tid(s);
		t->id = id;
		if (below(s, 2))
			t->flags = TASKSTATE_TRACK_PROCESS;
		/* TRACK's log of exits: valid with PROCESS only. */
		if (!below(s, 8)) {
			t->flags |= TASKSTATE_TRACK_EXITS;
			exits = true;
			flags |= cmd == C_UNTRACK ||
				 !(t->flags & TASKSTATE_TRACK_PROCESS);
		}
		if (!below(s, 16)) {
			t->flags |= 1U << (2 + below(s, 30));
			flags = true;
		}
		if (!below(s, 16)) {
			t->__pad = 1;
			flags = true;
		}
		break;
	}
	case C_SAMPLE: {
		struct taskstate_sample *t = (void *)a;
		uint32_t i;

		max = TASKSTATE_BATCH_MAX;
		n = t->count = some_count(s, max);
		for (i = 0; i < n && i < 256; i++)
			f->ent[i].tid = some_tid(s);	/* the rest: earlier tids */
		t->entries = pointer(bufp, f->ent);
		if (below(s, 2)) {
			totp = some_ptr(s);
			t->totals = pointer(totp, f->tot);
		}
		break;
	}
	case C_LIST: {
		struct taskstate_list *t = (void *)a;

		max = TASKSTATE_LIST_MAX;
		n = t->count = some_count(s, max);
		/* The buffer holds BUF_ENTRIES: more than can be tracked. */
		if (n > BUF_ENTRIES && n <= max && f->max_threads >= BUF_ENTRIES)
			n = t->count = BUF_ENTRIES;
		t->pid = below(s, 2) ? 0 : some_tid(s);
		t->entries = pointer(bufp, f->ent);
		if (below(s, 2)) {
			totp = some_ptr(s);
			t->totals = pointer(totp, f->tot);
		}
		break;
	}
	case C_LOCATE: {
		struct taskstate_locate *t = (void *)a;
		uint32_t i;

		max = TASKSTATE_BATCH_MAX;
		n = t->count = some_count(s, max);
		for (i = 0; i < n && i < 256; i++)
			f->loc[i].tid = some_tid(s);	/* the rest: earlier tids */
		t->locations = pointer(bufp, f->loc);
		break;
	}
	case C_PROCESS:
		id = some_tid(s);
		((struct taskstate_process *)(void *)a)->pid = id;
		break;
	case C_EXITS: {
		struct taskstate_exits *t = (void *)a;

		/* Any count: the kernel takes at most a log's worth. */
		n = t->count = some_count(s, TASKSTATE_EXITS_LOG);
		t->exits = pointer(bufp, f->exits);
		if (!below(s, 16)) {
			t->__pad = 1;
			flags = true;
		}
		break;
	}
	}
	if (cmd == C_RANDOM) {
		/*
		 * Our type, every other direction, size and number: the VFS
		 * answers its own commands (FIOCLEX, FIFREEZE...) before the
		 * driver, and some of those are not harmless on /dev.
		 */
		do {
			req = (uint32_t)rnd(s);
			req = (req & ~(0xffU << 8)) | (TASKSTATE_IOC_TYPE << 8);
		} while (ts_cmd_of(req));
		must = RES_ENOTTY;
	} else {
		req = ts_cmds[cmd].cmd;
		if (!below(s, 8) && cmd != C_TRACK && cmd != C_UNTRACK) {
			((uint32_t *)a)[1] = 1U << below(s, 32);
			flags = true;
		}
		size = whole_fields(arg_size(s, ver0, cur, &tail), ver0, cur);
		/* A version 0 struct has no totals: the kernel ignores them. */
		if (size < cur)
			totp = -1;
		((uint32_t *)a)[0] = size;
		if (tail && size <= 2 * page)
			a[size - 1 - below(s, size - cur)] = 1;
		/* The order the kernel checks in: the first broken rule wins. */
		if (ptr_bad_for_read(argp))
			must = RES_EFAULT;
		else if (argp == P_RDONLY || argp == P_VICTIM)
			must = 0;	/* its own contents: anything allowed */
		else if (size > page)
			must = RES_E2BIG;
		else if (size < ver0)
			must = RES_EINVAL;
		else if (tail)
			must = RES_E2BIG;
		else if (flags)
			must = RES_EINVAL;
		else if (max && n > max)
			must = RES_E2BIG;
		else if (exits && !f->totals)
			must = RES_EOPNOTSUPP;
		else if ((cmd == C_TRACK || cmd == C_UNTRACK ||
			  (cmd == C_PROCESS && f->totals)) &&
			 (!id || id > 4194304))
			must = RES_ESRCH;
		/* The same struct, one byte off its alignment. */
		if (argp == P_MISALIGNED)
			memmove(a + 1, a, page);
	}
	ret = ioctl(f->fd, req, (void *)(uintptr_t)pointer(argp, a));
	now = taskstate_now_ns();
	res = result_of((int)ret);
	count(cmd, res);
	if (res != RES_OK && !(allowed[cmd] & (1U << res))) {
		failf("%s (req %#x, size %u): %s (%d), not an errno the ABI gives it",
		      cmd_name(cmd), req, size, strerror(errno), errno);
		return;
	}
	if (must && res != must) {
		failf("%s (req %#x, size %u, arg %d, count %u): %s, must be %s",
		      cmd_name(cmd), req, size, argp, n,
		      res ? strerror(errno) : "success", result_name[must]);
		return;
	}
	if (res == RES_EOPNOTSUPP && f->totals)
		failf("%s: EOPNOTSUPP from a module that keeps totals", cmd_name(cmd));
	if (res != RES_OK || argp != P_VALID)
		return;
	/* Success with our own struct: check what came back. */
	if (cmd == C_TRACK && id == 0)
		failf("TRACK of tid 0 succeeded");
	if (cmd == C_PROCESS &&
	    (id == 0 || ((struct taskstate_process *)(void *)a)->valid > 1))
		failf("PROCESS of pid %u: valid %u", id,
		      ((struct taskstate_process *)(void *)a)->valid);
	if (cmd == C_SAMPLE && bufp == P_VALID && (totp == -1 || totp == P_VALID)) {
		uint32_t i, found = 0;

		if ((uint32_t)ret != ((struct taskstate_sample *)a)->found || ret > n)
			failf("SAMPLE returned %ld, found %u, of %u", ret,
			      ((struct taskstate_sample *)a)->found, n);
		for (i = 0; i < n; i++) {
			bool fnd = f->ent[i].tgid != 0;

			found += fnd;
			if (!word_ok(f->ent[i].word, fnd, now)) {
				failf("SAMPLE: tid %u tgid %u word %#llx (now %llu)",
				      f->ent[i].tid, f->ent[i].tgid,
				      (unsigned long long)f->ent[i].word,
				      (unsigned long long)now);
				break;
			}
			if (totp == P_VALID && fnd && f->tot[i].start_ns &&
			    !taskstate_totals_match(f->ent[i].word, &f->tot[i]))
				failf("SAMPLE: tid %u: totals do not match the word",
				      f->ent[i].tid);
		}
		if (found != (uint32_t)ret)
			failf("SAMPLE: %u entries with a tgid, found %ld", found, ret);
	}
	if (cmd == C_LIST && bufp == P_VALID && (totp == -1 || totp == P_VALID)) {
		struct taskstate_list *l = (void *)a;
		uint32_t i;

		if ((uint32_t)ret != l->filled || l->filled > n ||
		    l->filled > l->total)
			failf("LIST returned %ld, filled %u, total %u, count %u",
			      ret, l->filled, l->total, n);
		for (i = 0; i < l->filled && i < BUF_ENTRIES; i++)
			if (!f->ent[i].tid || !f->ent[i].tgid ||
			    (l->pid && f->ent[i].tgid != l->pid) ||
			    !word_ok(f->ent[i].word, true, now)) {
				failf("LIST: tid %u tgid %u word %#llx (pid %u)",
				      f->ent[i].tid, f->ent[i].tgid,
				      (unsigned long long)f->ent[i].word, l->pid);
				break;
			}
	}
	if (cmd == C_LOCATE && bufp == P_VALID) {
		uint32_t i, found = 0;

		for (i = 0; i < n; i++) {
			struct taskstate_location *l = &f->loc[i];
			bool none = l->index == TASKSTATE_LOCATE_NONE;

			found += !none;
			if (none ? (l->tgid || l->gen) :
			    (!l->tgid || !(l->gen & 1) || l->index >= f->map_entries)) {
				failf("LOCATE: tid %u tgid %u index %u gen %u",
				      l->tid, l->tgid, l->index, l->gen);
				break;
			}
		}
		if (found != (uint32_t)ret)
			failf("LOCATE: %u located, found %ld", found, ret);
	}
	if (cmd == C_INFO && size >= TASKSTATE_INFO_SIZE_VER0) {
		struct taskstate_info *i = (void *)a;

		if (i->abi_version != TASKSTATE_ABI_VERSION ||
		    i->state_shift != TASKSTATE_STATE_SHIFT ||
		    i->nr_tracked > i->max_threads)
			failf("INFO: abi %u shift %u tracked %llu of %u",
			      i->abi_version, i->state_shift,
			      (unsigned long long)i->nr_tracked, i->max_threads);
	}
}

/*
 * mmap() with random protections, flags, offsets and lengths; a good
 * mapping is read, mprotect()ed and mremap()ed, and unmapped.
 */
static void fuzz_mmap(struct fuzzer *f, uint64_t *s)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_EXEC, PROT_WRITE };
	int prot = below(s, 3) ? PROT_READ : prots[below(s, 4)];
	int flags = below(s, 6) ? MAP_SHARED : MAP_PRIVATE;
	uint64_t len = f->map_size, off = 0, now;
	unsigned int res, must = 0;
	bool good;
	char *m;

	switch (below(s, 6)) {
	case 0:
		off = page;
		break;
	case 1:
		len = f->map_size + page;
		break;
	case 2:
		off = f->map_size;
		len = page;
		break;
	case 3:
		off = 1;
		break;
	case 4:
		len = page;
		break;
	}
	good = prot == PROT_READ && flags == MAP_SHARED && !(off % page) &&
	       off < f->map_size && off + len <= f->map_size;
	/* The syscall's rule, the VFS's, then the module's (mmap.c). */
	if (off % page)
		must = RES_EINVAL;
	else if (flags == MAP_SHARED && (prot & PROT_WRITE))
		must = RES_EACCES;	/* a descriptor opened read-only */
	else if (prot & PROT_EXEC)
		must = 0;		/* EACCES, or EPERM on a noexec /dev */
	else if (!good)
		must = RES_EINVAL;	/* private, or out of range */
	m = mmap(NULL, len, prot, flags, f->fd, (off_t)off);
	res = m == MAP_FAILED ? result_of(-1) : RES_OK;
	count(C_MMAP, res);
	if (res != RES_OK && !(allowed[C_MMAP] & (1U << res))) {
		failf("mmap(len %llu, prot %d, flags %d, off %llu): %s",
		      (unsigned long long)len, prot, flags,
		      (unsigned long long)off, strerror(errno));
		return;
	}
	if (must ? res != must : (good ? res != RES_OK : res == RES_OK)) {
		failf("mmap(len %llu, prot %d, flags %d, off %llu): %s, must be %s",
		      (unsigned long long)len, prot, flags,
		      (unsigned long long)off,
		      res ? strerror(errno) : "success", result_name[must]);
		if (res == RES_OK)
			munmap(m, len);
		return;
	}
	if (res != RES_OK)
		return;
	/* Every entry: a word that fits its generation, no future time. */
	now = taskstate_now_ns();
	for (uint64_t i = 0; i < len / sizeof(struct taskstate_map_entry); i++) {
		const struct taskstate_map_entry *e = (const void *)(m + i * sizeof(*e));
		uint64_t w = __atomic_load_n(&e->word, __ATOMIC_RELAXED);

		if (w && (w & TASKSTATE_TIME_MASK) >
		    ((taskstate_now_ns() + SLACK_NS) & TASKSTATE_TIME_MASK)) {
			failf("mapped entry %llu: word %#llx in the future (%llu)",
			      (unsigned long long)i, (unsigned long long)w,
			      (unsigned long long)now);
			break;
		}
	}
	if (mprotect(m, page, PROT_READ | PROT_WRITE) == 0)
		failf("mprotect() of the mapping to writable succeeded");
	else if (errno == EACCES)
		bump(&st->mprotect_refused);
	else
		failf("mprotect() of the mapping: %s, not EACCES", strerror(errno));
	{
		void *g = mremap(m, len, len + page, MREMAP_MAYMOVE);

		if (g != MAP_FAILED) {
			failf("mremap() grew the mapping");
			munmap(g, len + page);
			return;
		}
		if (errno == EFAULT)
			bump(&st->mremap_refused);
		else
			failf("mremap() to grow: %s, not EFAULT", strerror(errno));
	}
	munmap(m, len);
}

/*
 * While the cycler waits to unload, holders of the device let go after
 * their batch and open it again only once it is loaded anew: the unload
 * is refused (counted) until they do.
 */
static bool quiescing(void)
{
	return __atomic_load_n(&st->quiesce, __ATOMIC_RELAXED);
}

static bool open_dev(struct fuzzer *f)
{
	struct taskstate_info info = { .size = sizeof(info) };

	f->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		/* Between an unload and the next load: only then. */
		if (ko && (errno == ENOENT || errno == ENXIO || errno == ENODEV)) {
			bump(&st->opens_absent);
			return false;
		}
		failf("open %s: %s", DEV, strerror(errno));
		return false;
	}
	if (ioctl(f->fd, TASKSTATE_IOC_INFO, &info) < 0) {
		failf("INFO: %s", strerror(errno));
		close(f->fd);
		return false;
	}
	f->totals = info.map_flags & TASKSTATE_MAP_F_TOTALS;
	f->map_entries = info.map_entries;
	f->max_threads = info.max_threads;
	f->map_size = info.map_size;
	return true;
}

static void *fuzzer_main(void *arg)
{
	struct fuzzer *f = arg;
	uint64_t s = f->seed;
	int i;

	while (!stopping()) {
		if (quiescing() || !open_dev(f)) {
			ts_sleep_ms(5);
			continue;
		}
		/* Hold the device for a batch, then let an unload through. */
		for (i = 0; i < 40 && !stopping() && !quiescing(); i++) {
			if (!below(&s, 16))
				fuzz_mmap(f, &s);
			else
				fuzz_ioctl(f, &s);
		}
		close(f->fd);
		ts_sleep_ms(1 + below(&s, 4));
	}
	return NULL;
}

/* The victim buffer: RW, then PROT_NONE, in place (no gap to reuse). */
static void *unmapper_main(void *arg)
{
	size_t len = VICTIM_PAGES * page;

	while (!stopping()) {
		mmap(victim, len, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		sched_yield();
		mmap(victim, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		sched_yield();
		madvise(victim, len, MADV_DONTNEED);
	}
	return NULL;
}

static void *short_thread(void *arg)
{
	note_tid(ts_gettid());
	if ((uintptr_t)arg & 1)
		ts_sleep_ms(1);
	return NULL;
}

static void *thread_churn_main(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	pthread_t th;

	while (!stopping()) {
		if (pthread_create(&th, NULL, short_thread,
				   (void *)(uintptr_t)below(&s, 2)))
			continue;
		pthread_join(th, NULL);
		bump(&st->threads);
	}
	return NULL;
}

static char self_exe[4096];

/* In a child: exec from a thread that is not the leader. */
static void *exec_thread(void *arg)
{
	char *const argv[] = { self_exe, (char *)"--exec-exit", NULL };

	execv(self_exe, argv);
	_exit(3);
}

static void child(uint64_t *s)
{
	pthread_t th;

	switch (below(s, 4)) {
	case 0:
		_exit(0);
	case 1:
		if (pthread_create(&th, NULL, exec_thread, NULL))
			_exit(4);
		pthread_join(th, NULL);	/* the exec ends us first */
		_exit(5);
	case 2:
		if (pthread_create(&th, NULL, short_thread, NULL))
			_exit(4);
		ts_sleep_ms(1);
		_exit(0);	/* with the thread maybe still there */
	default:
		ts_sleep_ms(below(s, 3));
		_exit(0);
	}
}

/*
 * Processes: fork, some exec from a second thread, reap; now and then
 * ask for the pid just reaped again (ns_last_pid), so that a tid the
 * fuzzers name changes hands.
 */
static void *proc_churn_main(void *arg)
{
	uint64_t s = 0xd1b54a32d192ed03ULL;
	pid_t pid, last = 0;
	int status;

	while (!stopping()) {
		if (last && !below(&s, 3)) {
			FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");

			if (f) {
				fprintf(f, "%d", last - 1);
				fclose(f);
				bump(&st->reuse_tries);
			}
		}
		pid = fork();
		if (pid < 0) {
			ts_sleep_ms(10);
			continue;
		}
		if (!pid)
			child(&s);
		note_tid(pid);
		if (pid == last)
			bump(&st->reused);
		if (waitpid(pid, &status, 0) != pid) {
			failf("waitpid(%d): %s", pid, strerror(errno));
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failf("child %d ended with status %#x", pid, status);
			continue;
		}
		bump(&st->procs);
		last = pid;
	}
	return NULL;
}

/* The debugfs table: a header, then rows with a known state name. */
static void read_debugfs(unsigned long *reads, unsigned long *rows)
{
	char line[512], state[32];
	unsigned int tid, tgid, n = 0;
	int s;
	FILE *f = fopen(DEBUGFS, "r");

	if (!f) {
		/* Unloading: gone, or going (ENXIO from debugfs' proxy). */
		if (!ko || (errno != ENOENT && errno != ENXIO))
			failf("open %s: %s", DEBUGFS, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (n++ == 0)
			continue;
		if (sscanf(line, "%u %u %31s", &tid, &tgid, state) != 3) {
			failf("debugfs row: %s", line);
			break;
		}
		/* A state's name as the library spells it, never NONE's. */
		s = taskstate_state_from_name(state);
		if (s <= TASKSTATE_NONE || strcmp(state, taskstate_state_name(s)) ||
		    !tid || !tgid) {
			failf("debugfs row: %s", line);
			break;
		}
	}
	fclose(f);
	bump(reads);
	__atomic_fetch_add(rows, n ? n - 1 : 0, __ATOMIC_RELAXED);
}

/* LIST of everything, checked. */
static void list_all(struct taskstate_entry *e, unsigned long *lists,
		     unsigned long *listed)
{
	struct taskstate_list l = { .size = sizeof(l), .count = BUF_ENTRIES,
				    .entries = (uintptr_t)e };
	uint64_t now;
	uint32_t i;
	int fd;

	if (quiescing())
		return;
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (!ko)
			failf("open %s: %s", DEV, strerror(errno));
		return;
	}
	if (ioctl(fd, TASKSTATE_IOC_LIST, &l) < 0) {
		failf("LIST: %s", strerror(errno));
		close(fd);
		return;
	}
	now = taskstate_now_ns();
	for (i = 0; i < l.filled; i++)
		if (!e[i].tid || !e[i].tgid || !word_ok(e[i].word, true, now)) {
			failf("LIST: tid %u tgid %u word %#llx", e[i].tid,
			      e[i].tgid, (unsigned long long)e[i].word);
			break;
		}
	close(fd);
	bump(lists);
	__atomic_fetch_add(listed, l.filled, __ATOMIC_RELAXED);
}

/* Two threads bouncing a byte: their words change at every switch. */
static int bounce[2][2];
static uint32_t hot_tid[2];

static void *bouncer_main(void *arg)
{
	int i = (int)(uintptr_t)arg;
	char c;

	__atomic_store_n(&hot_tid[i], (uint32_t)ts_gettid(), __ATOMIC_RELEASE);
	while (read(bounce[i][0], &c, 1) == 1) {
		if (i == 0)
			bump(&st->hot_switches);
		if (write(bounce[!i][1], &c, 1) != 1)
			break;
	}
	return NULL;
}

/* SAMPLE the bouncers, with totals when the module keeps them, flat out. */
static void *hot_reader_main(void *arg)
{
	struct taskstate_entry e[2];
	struct taskstate_totals t[2];
	struct fuzzer f = {};
	uint64_t now;
	int n, i;

	while (!stopping()) {
		if (quiescing() || !open_dev(&f)) {
			ts_sleep_ms(2);
			continue;
		}
		for (n = 0; n < 2000 && !stopping() && !quiescing(); n++) {
			struct taskstate_sample smp = {
				.size = sizeof(smp), .count = 2,
				.entries = (uintptr_t)e,
				.totals = f.totals ? (uintptr_t)t : 0,
			};

			for (i = 0; i < 2; i++)
				e[i].tid = __atomic_load_n(&hot_tid[i], __ATOMIC_ACQUIRE);
			if (ioctl(f.fd, TASKSTATE_IOC_SAMPLE, &smp) < 0) {
				failf("SAMPLE of the bouncers: %s", strerror(errno));
				break;
			}
			now = taskstate_now_ns();
			for (i = 0; i < 2; i++) {
				if (!e[i].tgid)
					continue;	/* not tracked (track_all=0) */
				if (!word_ok(e[i].word, true, now) ||
				    (f.totals && t[i].start_ns &&
				     !taskstate_totals_match(e[i].word, &t[i])))
					failf("SAMPLE of bouncer %u: word %#llx, totals %s",
					      e[i].tid, (unsigned long long)e[i].word,
					      t[i].start_ns ? "do not match" : "unreadable");
			}
			bump(&st->hot_samples);
		}
		close(f.fd);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct taskstate_entry *e = calloc(BUF_ENTRIES, sizeof(*e));

	while (!stopping() && e) {
		read_debugfs(&st->debugfs_reads, &st->debugfs_rows);
		list_all(e, &st->lists, &st->listed);
		ts_sleep_ms(2);
	}
	free(e);
	return NULL;
}

/*
 * The same from a child pid namespace, as its init, until @end; mmap()
 * is refused there (EPERM, uapi "DOC: The mapping").
 */
static int pidns_reader(uint64_t end)
{
	struct taskstate_entry *e = calloc(BUF_ENTRIES, sizeof(*e));
	unsigned long dummy = 0;

	while (e && taskstate_now_ns() < end) {
		int fd = quiescing() ? -1 : open(DEV, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			void *m = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);

			if (m != MAP_FAILED) {
				failf("mmap() in a child pid namespace succeeded");
				munmap(m, page);
			} else if (errno == EPERM) {
				bump(&st->ns_mmap_eperm);
			} else {
				failf("mmap() in a child pid namespace: %s", strerror(errno));
			}
			close(fd);
		}
		list_all(e, &st->ns_lists, &dummy);
		read_debugfs(&st->ns_reads, &dummy);
		ts_sleep_ms(3);
	}
	free(e);
	return 0;
}

static pid_t start_pidns_reader(uint64_t end)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	if (unshare(CLONE_NEWPID)) {
		failf("unshare(CLONE_NEWPID): %s", strerror(errno));
		_exit(1);
	}
	pid = fork();
	if (pid == 0)
		_exit(pidns_reader(end));
	_exit(pid > 0 && waitpid(pid, NULL, 0) == pid ? 0 : 1);
}

static bool module_loaded(void)
{
	return access("/sys/module/taskstate", F_OK) == 0;
}

static bool load(int track_all)
{
	char params[64];
	int fd = open(ko, O_RDONLY | O_CLOEXEC);
	long ret;

	if (fd < 0) {
		failf("open %s: %s", ko, strerror(errno));
		return false;
	}
	snprintf(params, sizeof(params), "track_all=%d", track_all);
	ret = syscall(SYS_finit_module, fd, params, 0);
	close(fd);
	if (ret) {
		failf("insmod %s %s: %s", ko, params, strerror(errno));
		return false;
	}
	bump(&st->loads);
	return true;
}

/*
 * Unload as soon as nobody holds the device (EWOULDBLOCK/EBUSY until
 * then), load again with the other track_all, every ~half second.
 */
static void *cycler_main(void *arg)
{
	int track_all = 0, i;

	while (!stopping()) {
		ts_sleep_ms(300);
		/*
		 * Until the unload goes through (up to ~20 s: a batch can hold
		 * a TRACK's grace period or a 65536-entry SAMPLE, slow under
		 * KASAN and emulation).
		 */
		__atomic_store_n(&st->quiesce, 1, __ATOMIC_RELAXED);
		for (i = 0; i < 100000 && !stopping(); i++) {
			if (syscall(SYS_delete_module, "taskstate", O_NONBLOCK) == 0)
				break;
			if (errno != EWOULDBLOCK && errno != EBUSY) {
				failf("unload: %s", strerror(errno));
				return NULL;
			}
			bump(&st->refused);
			usleep(100);
		}
		if (module_loaded()) {
			__atomic_store_n(&st->quiesce, 0, __ATOMIC_RELAXED);
			continue;
		}
		bump(&st->unloads);
		ts_sleep_ms(5);
		if (!load(track_all))
			return NULL;
		__atomic_store_n(&st->quiesce, 0, __ATOMIC_RELAXED);
		track_all = !track_all;
	}
	return NULL;
}

static void print_stats(double secs)
{
	int c, r;

	printf("# soak: %.0f s\n", secs);
	for (c = 0; c < NR_CMDS; c++) {
		printf("# %-8s", cmd_name(c));
		for (r = 0; r < NR_RESULTS; r++)
			if (st->calls[c][r])
				printf(" %s %lu", result_name[r], st->calls[c][r]);
		printf("\n");
	}
	printf("# mapping: mprotect refused %lu, mremap refused %lu\n",
	       st->mprotect_refused, st->mremap_refused);
	printf("# churn: %lu threads, %lu processes, pid asked again %lu times, reused %lu\n",
	       st->threads, st->procs, st->reuse_tries, st->reused);
	printf("# readers: debugfs %lu reads (%lu rows), LIST %lu (%lu entries)\n",
	       st->debugfs_reads, st->debugfs_rows, st->lists, st->listed);
	printf("# hot words: %lu SAMPLEs of two threads that switched %lu times\n",
	       st->hot_samples, st->hot_switches);
	printf("# child pid namespace: LIST %lu, debugfs %lu, mmap EPERM %lu\n",
	       st->ns_lists, st->ns_reads, st->ns_mmap_eperm);
	printf("# module: %lu unloads, %lu loads, %lu unloads refused while held, %lu opens while unloaded\n",
	       st->unloads, st->loads, st->refused, st->opens_absent);
}

int main(int argc, char **argv)
{
	struct fuzzer fz[NR_FUZZERS] = {};
	pthread_t unmapper, tchurn, pchurn, reader, cycler, hot, bouncer[2];
	uint64_t seed = 0, start, end;
	unsigned int secs = 20, t = 0;
	unsigned long ioctls = 0;
	pid_t nsreader;
	int opt, i, c, status;
	ssize_t len;

	if (argc == 2 && !strcmp(argv[1], "--exec-exit"))
		return 0;
	while ((opt = getopt(argc, argv, "d:k:s:")) != -1) {
		switch (opt) {
		case 'd':
			secs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			ko = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-d SECONDS] [-k taskstate.ko] [-s SEED]\n",
				argv[0]);
			return 2;
		}
	}
	page = sysconf(_SC_PAGESIZE);
	if (!seed)
		seed = taskstate_now_ns() | 1;
	len = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (len <= 0) {
		printf("not ok 1 soak: /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	self_exe[len] = 0;
	printf("# seed %#llx, %u s%s%s\n", (unsigned long long)seed, secs,
	       ko ? ", unload/load cycles of " : "", ko ? ko : "");
	fflush(stdout);

	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	none_region = mmap(NULL, 2 * page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro_region = mmap(NULL, 2 * page, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	victim = mmap(NULL, VICTIM_PAGES * page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED || none_region == MAP_FAILED ||
	    ro_region == MAP_FAILED || victim == MAP_FAILED) {
		printf("not ok 1 soak: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (ko && !module_loaded() && !load(1)) {
		printf("not ok 1 soak: %s\n", st->first_failure);
		return 1;
	}
	if (!ko && !module_loaded()) {
		printf("ok 1 soak # SKIP taskstate is not loaded and no -k\n");
		return 4;
	}
	note_tid(getpid());

	start = taskstate_now_ns();
	end = start + secs * 1000000000ULL;
	nsreader = start_pidns_reader(end);
	for (i = 0; i < NR_FUZZERS; i++) {
		fz[i].seed = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
		fz[i].arg = aligned_alloc(page, 2 * page);
		fz[i].ent = calloc(BUF_ENTRIES, sizeof(*fz[i].ent));
		fz[i].tot = calloc(BUF_ENTRIES, sizeof(*fz[i].tot));
		fz[i].loc = calloc(BUF_ENTRIES, sizeof(*fz[i].loc));
		fz[i].exits = calloc(TASKSTATE_EXITS_LOG, sizeof(*fz[i].exits));
		if (!fz[i].arg || !fz[i].ent || !fz[i].tot || !fz[i].loc ||
		    !fz[i].exits ||
		    pthread_create(&fz[i].th, NULL, fuzzer_main, &fz[i])) {
			printf("not ok 1 soak: fuzzer %d: out of memory\n", i);
			return 1;
		}
	}
	pthread_create(&unmapper, NULL, unmapper_main, NULL);
	pthread_create(&tchurn, NULL, thread_churn_main, NULL);
	pthread_create(&pchurn, NULL, proc_churn_main, NULL);
	pthread_create(&reader, NULL, reader_main, NULL);
	for (i = 0; i < 2; i++)
		if (pipe(bounce[i]) ||
		    pthread_create(&bouncer[i], NULL, bouncer_main,
				   (void *)(uintptr_t)i)) {
			printf("not ok 1 soak: bouncers: %s\n", strerror(errno));
			return 1;
		}
	if (write(bounce[0][1], "x", 1) != 1) {
		printf("not ok 1 soak: bouncers: %s\n", strerror(errno));
		return 1;
	}
	pthread_create(&hot, NULL, hot_reader_main, NULL);
	if (ko)
		pthread_create(&cycler, NULL, cycler_main, NULL);

	while (taskstate_now_ns() < end) {
		ts_sleep_ms(1000);
		if (++t % 10 == 0) {
			printf("# %u s: %lu failures so far\n", t, st->failures);
			fflush(stdout);
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NR_FUZZERS; i++)
		pthread_join(fz[i].th, NULL);
	pthread_join(unmapper, NULL);
	pthread_join(tchurn, NULL);
	pthread_join(pchurn, NULL);
	pthread_join(reader, NULL);
	pthread_join(hot, NULL);
	for (i = 0; i < 2; i++)
		close(bounce[i][1]);	/* their reads end */
	for (i = 0; i < 2; i++)
		pthread_join(bouncer[i], NULL);
	if (ko)
		pthread_join(cycler, NULL);
	if (waitpid(nsreader, &status, 0) != nsreader || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		failf("the child pid namespace's reader ended with %#x", status);
	if (ko && !module_loaded())
		load(1);

	print_stats((taskstate_now_ns() - start) / 1e9);
	for (c = 0; c < NR_CMDS; c++)
		for (i = 0; i < NR_RESULTS; i++)
			ioctls += st->calls[c][i];
	/* A soak that did nothing proves nothing. */
	if (ioctls < 100 || !st->procs || !st->threads || !st->lists ||
	    !st->ns_lists || (ko && !st->unloads) || st->hot_samples < 100)
		failf("too little done: %lu calls, %lu processes, %lu threads, %lu lists, %lu in the child namespace, %lu unloads, %lu hot samples",
		      ioctls, st->procs, st->threads, st->lists, st->ns_lists,
		      st->unloads, st->hot_samples);
	if (st->failures) {
		printf("not ok 1 soak: %lu unexpected results, the first: %s\n",
		       st->failures, st->first_failure);
		return 1;
	}
	printf("ok 1 soak: %lu calls and mappings, every result as the ABI promises\n",
	       ioctls);
	return 0;
}
