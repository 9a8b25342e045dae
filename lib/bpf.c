// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * libtaskstate over the BPF backend (bpf/): the maps `taskstate bpf load`
 * pins under TS_BPF_PIN_DIR, read with bare bpf(2) calls and mmap(), so
 * that the library needs no libbpf.  taskstate_open() returns the pinned
 * entries map's fd; the other calls tell it from the module's character
 * device (backend.h) and answer from the mappings here.
 *
 * What the module does and this backend does not, and the errno each
 * says: EXITS (no descriptor to log to: the backend's fd is a map's) is
 * EOPNOTSUPP; the tids are the initial pid namespace's, as the module's
 * privileged mapping's, and it opens only there (EPERM).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/membarrier.h>

#include "backend.h"
#include "libtaskstate.h"
#include "taskstate-bpf.h"

/* Element i of a mapped __u32 array. */
#define STRIDE		(TS_BPF_ARRAY_STRIDE / sizeof(__u32))

/*
 * The maps as one process sees them: mapped once, at the first open, and
 * kept for the life of the process (a mapping outlives its fd, and the
 * maps outlive an unload while mapped).  A later open that finds another
 * load (another map id) maps that one; the old view stays mapped, since
 * another thread may be reading it.
 */
struct ts_bpf_view {
	const struct taskstate_map_entry *entries;
	const __u32 *hints;		/* element i at hints[i * STRIDE] */
	const __u32 *tgids;		/* the same */
	const struct ts_bpf_rec *recs;	/* indexed like entries */
	const struct ts_bpf_memb *membs;
	struct ts_bpf_config cfg;
	__u32 map_id;			/* the entries map's */
	size_t entries_size;
};

static struct ts_bpf_view *ts_view;
static bool ts_bpf_opened;

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	long ret = syscall(__NR_bpf, cmd, attr, sizeof(*attr));

	return ret < 0 ? -errno : (int)ret;
}

static int obj_get(const char *name, __u32 flags)
{
	char path[sizeof(TS_BPF_PIN_DIR) + 64];
	union bpf_attr a;

	snprintf(path, sizeof(path), "%s/%s", TS_BPF_PIN_DIR, name);
	memset(&a, 0, sizeof(a));
	a.pathname = (uintptr_t)path;
	a.file_flags = flags;
	return sys_bpf(BPF_OBJ_GET, &a);
}

static int map_id(int fd, __u32 *id)
{
	struct bpf_map_info info;
	union bpf_attr a;
	int ret;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uintptr_t)&info;
	ret = sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
	if (ret < 0)
		return ret;
	*id = info.id;
	return 0;
}

static size_t page_up(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

/*
 * The maps are mapped read-only through a read-write fd: mmap() drops
 * VM_SHARED for a file not open for writing, and bpf_map_mmap() refuses
 * a mapping without it (6.1 mm/mmap.c, kernel/bpf/syscall.c).  So who may
 * map is who may open the pin for writing (its mode: root's alone).
 */
#define TS_BPF_MAP_OPEN	0

/* Map pinned map name read-only: size bytes (page multiple). */
static const void *map_pinned(const char *name, size_t size, int *err)
{
	int fd = obj_get(name, TS_BPF_MAP_OPEN);
	void *p;

	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	return p;
}

static void view_free(struct ts_bpf_view *v)
{
	if (v->entries)
		munmap((void *)v->entries, v->entries_size);
	if (v->hints)
		munmap((void *)v->hints, page_up((size_t)v->cfg.max_tid * TS_BPF_ARRAY_STRIDE));
	if (v->tgids)
		munmap((void *)v->tgids, page_up((size_t)v->cfg.max_threads * TS_BPF_ARRAY_STRIDE));
	if (v->recs)
		munmap((void *)v->recs, page_up((size_t)v->cfg.max_threads * sizeof(*v->recs)));
	if (v->membs)
		munmap((void *)v->membs, page_up((size_t)v->cfg.max_threads * sizeof(*v->membs)));
	free(v);
}

/* The view of the load whose entries map is fd, made if it is new. */
static int view_of(int fd, struct ts_bpf_view **out)
{
	struct ts_bpf_view *v = __atomic_load_n(&ts_view, __ATOMIC_ACQUIRE);
	union bpf_attr a;
	__u32 id, id2, key = 0;
	int cfd, ret = 0;

	ret = map_id(fd, &id);
	if (ret)
		return ret;
	if (v && v->map_id == id) {
		*out = v;
		return 0;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->map_id = id;
	cfd = obj_get(TS_BPF_CONFIG, BPF_F_RDONLY);
	if (cfd < 0) {
		ret = cfd;
		goto fail;
	}
	memset(&a, 0, sizeof(a));
	a.map_fd = cfd;
	a.key = (uintptr_t)&key;
	a.value = (uintptr_t)&v->cfg;
	ret = sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
	close(cfd);
	if (ret < 0)
		goto fail;
	if (!v->cfg.max_threads || !v->cfg.max_tid) {
		ret = -EPROTO;
		goto fail;
	}
	v->entries_size = page_up((size_t)v->cfg.max_threads *
				  sizeof(struct taskstate_map_entry));
	v->entries = mmap(NULL, v->entries_size, PROT_READ, MAP_SHARED, fd, 0);
	if (v->entries == MAP_FAILED) {
		v->entries = NULL;
		ret = -errno;
		goto fail;
	}
	v->hints = map_pinned(TS_BPF_HINTS, page_up((size_t)v->cfg.max_tid * TS_BPF_ARRAY_STRIDE), &ret);
	if (!v->hints)
		goto fail;
	v->tgids = map_pinned(TS_BPF_TGIDS, page_up((size_t)v->cfg.max_threads * TS_BPF_ARRAY_STRIDE), &ret);
	if (!v->tgids)
		goto fail;
	/* Not pinned by an older loader: then PROCESS alone is refused. */
	v->recs = map_pinned(TS_BPF_RECS, page_up((size_t)v->cfg.max_threads * sizeof(*v->recs)), &ret);
	if (v->recs)
		v->membs = map_pinned(TS_BPF_MEMBS, page_up((size_t)v->cfg.max_threads * sizeof(*v->membs)), &ret);
	if (!v->membs && ret != -ENOENT)
		goto fail;
	ret = 0;
	/* The pins are still that load's (not unloaded and loaded again). */
	cfd = obj_get(TS_BPF_ENTRIES, TS_BPF_MAP_OPEN);
	if (cfd < 0) {
		ret = cfd;
		goto fail;
	}
	ret = map_id(cfd, &id2);
	close(cfd);
	if (!ret && id2 != id)
		ret = -EAGAIN;
	if (ret)
		goto fail;
	/* The newest load's view; an older one stays mapped (see above). */
	__atomic_store_n(&ts_view, v, __ATOMIC_RELEASE);
	*out = v;
	return 0;
fail:
	view_free(v);
	return ret;
}

/*
 * Is this process in the initial pid namespace?  That namespace's nsfs
 * inode number is fixed (PROC_PID_INIT_INO, 0xEFFFFFFC, in
 * include/linux/proc_ns.h), whichever procfs this process sees: a
 * container's own /proc would make /proc/self/status's NSpid look like
 * the initial namespace's.
 */
#define TS_PROC_PID_INIT_INO	0xEFFFFFFCU

static bool in_initial_pid_ns(void)
{
	struct stat st;

	return !stat("/proc/self/ns/pid", &st) && st.st_ino == TS_PROC_PID_INIT_INO;
}

int ts_bpf_open(void)
{
	struct ts_bpf_view *v;
	int fd, ret;

	/* Its tids are the initial pid namespace's, and nothing translates. */
	if (!in_initial_pid_ns())
		return access(TS_BPF_PIN_DIR, F_OK) ? -ENOENT : -EPERM;
	fd = obj_get(TS_BPF_ENTRIES, TS_BPF_MAP_OPEN);
	if (fd < 0)
		return fd;
	ret = view_of(fd, &v);
	if (ret) {
		close(fd);
		return ret;
	}
	/* obj_get's fd is not close-on-exec. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	__atomic_store_n(&ts_bpf_opened, true, __ATOMIC_RELAXED);
	return fd;
}

/*
 * Set once this process has opened the BPF backend.  Until then every fd
 * is the module's, without a system call to ask: the calls on the module
 * cost what they did.  After, fstat() tells (the module's is a character
 * device, a map's fd an anonymous inode).
 */
int ts_is_bpf(int fd)
{
	struct stat st;

	if (!__atomic_load_n(&ts_bpf_opened, __ATOMIC_RELAXED))
		return 0;
	if (fstat(fd, &st))
		return -errno;
	return !S_ISCHR(st.st_mode);
}

/*
 * Is thread tid gone (reaped)?  Its entry stays DEAD until the thread is
 * freed, an RCU grace period later; the module's SAMPLE, LOCATE and LIST
 * stop finding it when it is reaped, and so do these, for DEAD entries
 * only (one access() each).
 */
static bool reaped(__u64 word, __u32 tid)
{
	char path[32];

	if (taskstate_state(word) != TASKSTATE_DEAD)
		return false;
	snprintf(path, sizeof(path), "/proc/%u", tid);
	return access(path, F_OK) != 0;
}

/*
 * Entry i's tid, tgid, word and (t not NULL) totals by the mapping's
 * protocol: 1 if a thread owns it and has a word, 0 if not (or it is
 * DEAD and reaped).
 */
static int read_entry(const struct ts_bpf_view *v, __u32 i,
		      struct taskstate_entry *out, struct taskstate_totals *t)
{
	const struct taskstate_map_entry *e = &v->entries[i];
	struct taskstate_totals tmp;
	__u32 gen, tid, tgid;
	__u64 word;
	int tries, ret;

	for (tries = 0; tries < TASKSTATE_MAPPING_READ_TRIES; tries++) {
		gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
		if (!(gen & 1))
			return 0;
		tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
		tgid = __atomic_load_n(&v->tgids[i * STRIDE], __ATOMIC_RELAXED);
		ret = taskstate_map_entry_read_totals(e, gen, &word, t ? t : &tmp);
		if (ret < 0)
			continue;
		if (!ret || !word || reaped(word, tid))
			return 0;
		out->tid = tid;
		out->tgid = tgid;
		out->word = word;
		return 1;
	}
	return 0;
}

/* The entry index of thread tid, or -1. */
static long index_of(const struct ts_bpf_view *v, __u32 tid)
{
	__u32 h;

	if (!tid || tid >= v->cfg.max_tid)
		return -1;
	h = __atomic_load_n(&v->hints[tid * STRIDE], __ATOMIC_RELAXED);
	if (!h || h > v->cfg.max_threads)
		return -1;
	return h - 1;
}

static __u32 count_tracked(const struct ts_bpf_view *v)
{
	__u32 i, n = 0;

	for (i = 0; i < v->cfg.max_threads; i++)
		n += __atomic_load_n(&v->entries[i].gen, __ATOMIC_RELAXED) & 1;
	return n;
}

/* The threads the backend could not track: stats' full and tid, summed. */
static uint64_t untracked(void)
{
	int fd = obj_get(TS_BPF_STATS, BPF_F_RDONLY), ncpu = 0, lo, hi, c;
	__u32 keys[] = { TS_BPF_STAT_FULL, TS_BPF_STAT_TID }, k;
	uint64_t sum = 0, *vals;
	union bpf_attr a;
	char buf[256], *p;
	FILE *f;

	if (fd < 0)
		return 0;
	/* Per CPU: one value for each possible CPU ("0-3,8"). */
	f = fopen("/sys/devices/system/cpu/possible", "re");
	if (f && fgets(buf, sizeof(buf), f)) {
		for (p = strtok(buf, ","); p; p = strtok(NULL, ",")) {
			if (sscanf(p, "%d-%d", &lo, &hi) == 2)
				ncpu += hi - lo + 1;
			else
				ncpu++;
		}
	}
	if (f)
		fclose(f);
	vals = ncpu > 0 ? calloc(ncpu, sizeof(*vals)) : NULL;
	for (k = 0; vals && k < 2; k++) {
		memset(&a, 0, sizeof(a));
		a.map_fd = fd;
		a.key = (uintptr_t)&keys[k];
		a.value = (uintptr_t)vals;
		if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) < 0)
			continue;
		for (c = 0; c < ncpu; c++)
			sum += vals[c];
	}
	free(vals);
	close(fd);
	return sum;
}

int ts_bpf_info(int fd, struct taskstate_info *info)
{
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v);

	if (ret)
		return ret;
	info->abi_version = TASKSTATE_ABI_VERSION;
	info->state_shift = TASKSTATE_STATE_SHIFT;
	info->time_bits = TASKSTATE_TIME_BITS;
	info->clock_id = CLOCK_BOOTTIME;
	info->max_threads = v->cfg.max_threads;
	info->batch_max = TASKSTATE_BATCH_MAX;
	info->track_all = v->cfg.track_all;
	info->nr_untracked = untracked();
	info->scope = TASKSTATE_SCOPE_ALL;
	info->nr_tracked = count_tracked(v);
	info->map_entry_size = sizeof(struct taskstate_map_entry);
	info->map_layout = TASKSTATE_MAP_LAYOUT;
	info->map_entries = v->cfg.max_threads;
	info->map_flags = TASKSTATE_MAP_F_TOTALS;
	info->map_size = v->entries_size;
	return 0;
}

/*
 * One pass of TRACK or UNTRACK: the pinned iter/task program name run
 * over thread id (process: its threads).  counts[] gets how many bytes of
 * each kind it wrote (lib/taskstate-bpf.h): 't', 'F', 'u'.
 */
static int run_pass(const char *name, unsigned int id, bool process,
		    unsigned int counts[3])
{
	union bpf_iter_link_info info;
	char path[64], buf[256];
	int pfd, lfd, ifd, ret = 0;
	union bpf_attr a;
	ssize_t n, k;

	snprintf(path, sizeof(path), "progs/%s", name);
	pfd = obj_get(path, 0);
	if (pfd < 0)
		return pfd;
	memset(&info, 0, sizeof(info));
	if (process)
		info.task.pid = id;
	else
		info.task.tid = id;
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = pfd;
	a.link_create.attach_type = BPF_TRACE_ITER;
	a.link_create.iter_info = (uintptr_t)&info;
	a.link_create.iter_info_len = sizeof(info);
	lfd = sys_bpf(BPF_LINK_CREATE, &a);
	close(pfd);
	if (lfd < 0)
		return lfd;
	memset(&a, 0, sizeof(a));
	a.iter_create.link_fd = lfd;
	ifd = sys_bpf(BPF_ITER_CREATE, &a);
	close(lfd);
	if (ifd < 0)
		return ifd;
	while ((n = read(ifd, buf, sizeof(buf))) > 0)
		for (k = 0; k < n; k++)
			counts[buf[k] == 't' ? 0 : buf[k] == 'F' ? 1 : 2]++;
	if (n < 0)
		ret = -errno;
	close(ifd);
	return ret;
}

static const char *const ts_probes[TS_BPF_NR_PROBES] = TS_BPF_PROBES;

/*
 * With track_all 0, the tracepoint programs run only while something is
 * tracked: attached by a TRACK (each link pinned, so that it outlives
 * this process), in lib/taskstate-bpf.h's order, unless they are.
 */
static int attach_probes(void)
{
	char path[64];
	union bpf_attr a;
	int pfd, lfd, ret;
	unsigned int i;

	for (i = 0; i < TS_BPF_NR_PROBES; i++) {
		snprintf(path, sizeof(path), "%s/links/%s", TS_BPF_PIN_DIR, ts_probes[i]);
		if (!access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "progs/%s", ts_probes[i]);
		pfd = obj_get(path, 0);
		if (pfd < 0)
			return pfd;
		/* tp_btf: the tracepoint is the program's own (no name). */
		memset(&a, 0, sizeof(a));
		a.raw_tracepoint.prog_fd = pfd;
		lfd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
		close(pfd);
		if (lfd < 0)
			return lfd;
		snprintf(path, sizeof(path), "%s/links/%s", TS_BPF_PIN_DIR, ts_probes[i]);
		memset(&a, 0, sizeof(a));
		a.pathname = (uintptr_t)path;
		a.bpf_fd = lfd;
		ret = sys_bpf(BPF_OBJ_PIN, &a);
		close(lfd);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * ... and detached by the UNTRACK that leaves no entry taken, events
 * first.  No entry taken: no tracked task, so no claim can come (a claim
 * needs a tracked creator).  All but the free, ts_free, which stays
 * attached from the load (not in the scheduler's paths): an entry a fork
 * claimed while the entries were counted is still given back.  A table
 * that empties by exits keeps them attached until the next UNTRACK.
 */
static void detach_probes_if_idle(const struct ts_bpf_view *v)
{
	char path[64];
	unsigned int i;

	if (v->cfg.track_all || count_tracked(v))
		return;
	for (i = TS_BPF_NR_PROBES; i-- > 1;) {
		snprintf(path, sizeof(path), "%s/links/%s", TS_BPF_PIN_DIR, ts_probes[i]);
		unlink(path);
	}
}

static long proc_tgid(unsigned int tid);

/*
 * TRACK or UNTRACK: two passes, an RCU grace period between
 * (membarrier(MEMBARRIER_CMD_GLOBAL) is synchronize_rcu() in 6.1), under
 * an exclusive flock() of the pin directory: one call at a time, and none
 * during a load.  TRACK then joins the threads to their processes'
 * records (ts_join): over the whole process where it tracked a process or
 * a leader, whose threads tracked before it join its new record.
 */
static int run_two_passes(const struct ts_bpf_view *v, bool track, bool kin,
			  const unsigned int *ids, unsigned int n, bool process,
			  unsigned int counts[3])
{
	const char *first = track ? kin ? TS_BPF_PROG_CLAIM_KIN :
					  TS_BPF_PROG_CLAIM_ONE :
				    TS_BPF_PROG_LEAVE;
	const char *second = track ? TS_BPF_PROG_FIRST_WORD : TS_BPF_PROG_UNTRACK;
	unsigned int unused[3] = { 0 }, k;
	int lock, ret;

	lock = open(TS_BPF_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0)
		return -errno;
	if (flock(lock, LOCK_EX)) {
		ret = -errno;
		goto out;
	}
	/* Sure of the grace period before anything changes (nohz_full: no). */
	ret = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (ret < 0 || !(ret & MEMBARRIER_CMD_GLOBAL)) {
		ret = ret < 0 ? -errno : -EOPNOTSUPP;
		goto out;
	}
	/* Attached before the claims: the grace period covers both. */
	ret = track ? attach_probes() : 0;
	for (k = 0; !ret && k < n; k++)
		ret = run_pass(first, ids[k], process, counts);
	/* One grace period for all of them. */
	if (!ret && syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		ret = -errno;
	for (k = 0; !ret && k < n; k++)
		ret = run_pass(second, ids[k], process, unused);
	for (k = 0; !ret && track && k < n; k++)
		ret = run_pass(TS_BPF_PROG_JOIN, ids[k],
			       process || proc_tgid(ids[k]) == (long)ids[k], unused);
	if (!track)
		detach_probes_if_idle(v);
out:
	close(lock);
	return ret;
}

/* Thread tid's process id from /proc (any pid namespace's), or -errno. */
static long proc_tgid(unsigned int tid)
{
	char path[32], line[64];
	long tgid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* Is thread id there (with process: a process's leader)? */
static bool exists(unsigned int id, bool process)
{
	long tgid = id ? proc_tgid(id) : -ESRCH;

	return tgid > 0 && (!process || (unsigned long)tgid == id);
}

/*
 * A process's threads as /proc lists them now, each one TRACK or UNTRACK
 * left as it should not be (tracked or not), put right one at a time.
 * The process iterator of 6.1 stops early when the thread it last
 * visited is reaped meanwhile, and a thread that a tracked thread's fork
 * was creating during an UNTRACK gets its entry after the UNTRACK passed
 * it.  A few rounds: threads keep coming only while the process keeps
 * making them.
 */
static int settle_process(const struct ts_bpf_view *v, bool track,
			  unsigned int pid, unsigned int counts[3])
{
	unsigned int wrong[256], n;
	char path[40];
	struct dirent *d;
	unsigned long tid;
	int round, ret;
	long i;
	DIR *dir;

	for (round = 0; round < 4; round++) {
		snprintf(path, sizeof(path), "/proc/%u/task", pid);
		dir = opendir(path);
		if (!dir)
			return 0;	/* gone: nothing left to put right */
		n = 0;
		while (n < sizeof(wrong) / sizeof(wrong[0]) && (d = readdir(dir))) {
			tid = strtoul(d->d_name, NULL, 10);
			if (!tid)
				continue;
			/* Has an entry (maybe no word yet: a new thread). */
			i = index_of(v, tid);
			if ((i >= 0 && (__atomic_load_n(&v->entries[i].gen, __ATOMIC_ACQUIRE) & 1) &&
			     __atomic_load_n(&v->entries[i].tid, __ATOMIC_RELAXED) == tid) == track)
				continue;
			wrong[n++] = tid;
		}
		closedir(dir);
		if (!n)
			return 0;
		/* A thread of a tracked process passes it on (kin). */
		ret = run_two_passes(v, track, true, wrong, n, false, counts);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * TRACK (track) or UNTRACK: the thread, or the process's threads.  TRACK
 * also marks their entries to pass tracking on to their new threads and
 * children; UNTRACK clears that.  Errors as the module's: ESRCH no such
 * thread (or, with process, no such process leader); TRACK: ENOSPC none
 * could get an entry (the backend's table full, or the tid at or past its
 * --max-tid: taskstate bpf status counts which).  *nr_threads: TRACK, the
 * threads that have an entry now, new or not; UNTRACK, the threads it
 * untracked (a thread not tracked is not an error).
 */
static int track_call(int fd, bool track, unsigned int id, bool process,
		      uint64_t *nr_threads)
{
	unsigned int counts[3] = { 0 };
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v);

	if (ret)
		return ret;
	if (!exists(id, process))
		return -ESRCH;
	ret = run_two_passes(v, track, process, &id, 1, process, counts);
	if (!ret && process)
		ret = settle_process(v, track, id, counts);
	if (ret)
		return ret;
	if (track && !counts[0])
		return counts[1] ? -ENOSPC : -ESRCH;
	if (nr_threads)
		*nr_threads = track ? counts[0] : counts[2];
	return 0;
}

int ts_bpf_track(int fd, unsigned int id, bool process, uint64_t *nr_threads)
{
	return track_call(fd, true, id, process, nr_threads);
}

int ts_bpf_untrack(int fd, unsigned int id, bool process, uint64_t *nr_threads)
{
	return track_call(fd, false, id, process, nr_threads);
}

int ts_bpf_sample(int fd, struct taskstate_entry *e,
		  struct taskstate_totals *t, uint32_t n)
{
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v), found = 0;
	uint32_t k;
	long i;

	if (ret)
		return ret;
	if (n > INT_MAX)
		return -EINVAL;
	for (k = 0; k < n; k++) {
		struct taskstate_entry got;
		__u32 tid = e[k].tid;

		i = index_of(v, tid);
		if (i >= 0 && read_entry(v, i, &got, t ? &t[k] : NULL) &&
		    got.tid == tid) {
			e[k] = got;
			found++;
			continue;
		}
		e[k].tgid = 0;
		e[k].word = 0;
		if (t)
			memset(&t[k], 0, sizeof(t[k]));
	}
	return found;
}

int ts_bpf_list(int fd, unsigned int pid, struct taskstate_entry **out,
		struct taskstate_totals **tout, uint32_t *n)
{
	struct taskstate_totals *tbuf = NULL, tt;
	struct taskstate_entry *buf, got;
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v);
	uint32_t i, k = 0;

	if (ret)
		return ret;
	buf = malloc((size_t)v->cfg.max_threads * sizeof(*buf));
	if (tout)
		tbuf = malloc((size_t)v->cfg.max_threads * sizeof(*tbuf));
	if (!buf || (tout && !tbuf)) {
		free(buf);
		free(tbuf);
		return -ENOMEM;
	}
	for (i = 0; i < v->cfg.max_threads; i++) {
		if (!read_entry(v, i, &got, &tt))
			continue;
		if (pid && got.tgid != pid)
			continue;
		buf[k] = got;
		if (tbuf)
			tbuf[k] = tt;
		k++;
	}
	*out = buf;
	if (tout)
		*tout = tbuf;
	*n = k;
	return k;
}

/* As the module's privileged mapping: the tids are the initial namespace's. */
int ts_bpf_mapping_open(int fd, struct taskstate_mapping *m)
{
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v);

	if (ret)
		return ret;
	if (!in_initial_pid_ns())
		return -EPERM;
	m->entries = mmap(NULL, v->entries_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m->entries == MAP_FAILED) {
		m->entries = NULL;
		return -errno;
	}
	m->nr = v->cfg.max_threads;
	m->flags = TASKSTATE_MAP_F_TOTALS;
	m->size = v->entries_size;
	return 0;
}

int ts_bpf_locate(int fd, struct taskstate_location *l, uint32_t n)
{
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v), found = 0;
	uint32_t k, gen;
	long i;

	if (ret)
		return ret;
	if (n > INT_MAX)
		return -EINVAL;
	for (k = 0; k < n; k++) {
		i = index_of(v, l[k].tid);
		l[k].tgid = 0;
		l[k].index = TASKSTATE_LOCATE_NONE;
		l[k].gen = 0;
		if (i < 0)
			continue;
		gen = __atomic_load_n(&v->entries[i].gen, __ATOMIC_ACQUIRE);
		if (!(gen & 1) ||
		    __atomic_load_n(&v->entries[i].tid, __ATOMIC_RELAXED) != l[k].tid)
			continue;
		l[k].tgid = __atomic_load_n(&v->tgids[i * STRIDE], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&v->entries[i].gen, __ATOMIC_RELAXED) != gen) {
			l[k].tgid = 0;
			continue;
		}
		if (reaped(__atomic_load_n(&v->entries[i].word, __ATOMIC_RELAXED),
			   l[k].tid)) {
			l[k].tgid = 0;
			continue;
		}
		l[k].index = i;
		l[k].gen = gen;
		found++;
	}
	return found;
}

/* A thread counted live: its entry, and its part of the totals. */
struct ts_live {
	long i;
	__u64 ns[TASKSTATE_MAP_NR_TOTALS];
};

static int by_index(const void *a, const void *b)
{
	const struct ts_live *x = a, *y = b;

	return (x->i > y->i) - (x->i < y->i);
}

/*
 * The live threads of record li (started at start) that /proc/PID/task
 * lists, each with its totals up to now less its base, into *out (sorted
 * by entry, each once: a listing may repeat a thread).  Returns how many,
 * or -errno.
 */
static long live_members(const struct ts_bpf_view *v, unsigned int pid, __u32 li,
			 __u64 start, __u64 now, struct ts_live **out)
{
	struct ts_live *live = NULL, *nl;
	size_t n = 0, room = 0, j, k;
	struct taskstate_totals tt;
	struct taskstate_entry got;
	unsigned long tid;
	char path[40];
	struct dirent *d;
	DIR *dir;
	long i;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((d = readdir(dir))) {
		const struct ts_bpf_memb *m;
		uint64_t at[TASKSTATE_MAP_NR_TOTALS];

		tid = strtoul(d->d_name, NULL, 10);
		i = tid ? index_of(v, tid) : -1;
		if (i < 0)
			continue;
		m = &v->membs[i];
		if (__atomic_load_n(&m->rec_start, __ATOMIC_ACQUIRE) != start ||
		    __atomic_load_n(&m->rec, __ATOMIC_RELAXED) != li)
			continue;
		/* A word that kept changing: its share is left out, once. */
		if (!read_entry(v, i, &got, &tt) || got.tid != tid)
			continue;
		if (n == room) {
			room = room ? 2 * room : 64;
			nl = realloc(live, room * sizeof(*live));
			if (!nl) {
				free(live);
				closedir(dir);
				return -ENOMEM;
			}
			live = nl;
		}
		taskstate_totals_at(got.word, &tt, now, at);
		live[n].i = i;
		for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
			__u64 base = __atomic_load_n(&m->base_ns[k], __ATOMIC_RELAXED);

			live[n].ns[k] = at[k] - (base < at[k] ? base : at[k]);
		}
		n++;
	}
	closedir(dir);
	qsort(live, n, sizeof(*live), by_index);
	for (j = k = 0; j < n; j++)
		if (!k || live[k - 1].i != live[j].i)
			live[k++] = live[j];
	*out = live;
	return k;
}

/*
 * PROCESS (uapi "DOC: Process totals") from the records the programs keep
 * (taskstate.bpf.c): the record at the leader's entry li, and its threads
 * that still count live, found through /proc/PID/task and their membs
 * element.  Each thread is counted once, live or exited:
 *  1. no leave in flight (folds_begun == folds_done), the start;
 *  2. the live threads, each with its totals;
 *  3. the leaves since are done: the exited totals read now hold every
 *     thread that left before here, and a thread counted live in 2 that
 *     left since is dropped (its rec_start moved);
 *  4. the threads counted are all the record's members (a listing that
 *     missed one, a thread being made or in an exec's tid swap: again);
 *  5. no leave began since 3 (folds_begun), and it is the same record.
 * -EAGAIN where a check fails: the caller reads again.
 */
static int process_read(const struct ts_bpf_view *v, unsigned int pid,
			__u32 li, struct taskstate_process *p)
{
	const struct ts_bpf_rec *r = &v->recs[li];
	__u64 begun, done, start, now;
	struct ts_live *live = NULL;
	long n, j, kept = 0;
	unsigned int k;
	int ret = -EAGAIN;

	done = __atomic_load_n(&r->folds_done, __ATOMIC_ACQUIRE);
	begun = __atomic_load_n(&r->folds_begun, __ATOMIC_ACQUIRE);
	start = __atomic_load_n(&r->start_ns, __ATOMIC_ACQUIRE);
	if (begun != done || start == TS_REC_MAKING)
		return -EAGAIN;
	if (!start)
		return 0;
	now = taskstate_now_ns();	/* the kernel's: no time namespace's offset */
	n = live_members(v, pid, li, start, now, &live);
	if (n < 0)
		return n;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	done = __atomic_load_n(&r->folds_done, __ATOMIC_ACQUIRE);
	begun = __atomic_load_n(&r->folds_begun, __ATOMIC_ACQUIRE);
	if (begun != done)
		goto out;
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
		p->exited_ns[k] = __atomic_load_n(&r->exited_ns[k], __ATOMIC_RELAXED);
		p->children_ns[k] = __atomic_load_n(&r->children_ns[k], __ATOMIC_RELAXED);
		p->state_ns[k] = p->exited_ns[k];
	}
	p->nr_exited = __atomic_load_n(&r->nr_exited, __ATOMIC_RELAXED);
	p->nr_children = __atomic_load_n(&r->nr_children, __ATOMIC_RELAXED);
	p->parent_start_ns = __atomic_load_n(&r->parent_start_ns, __ATOMIC_RELAXED);
	for (j = 0; j < n; j++) {
		if (__atomic_load_n(&v->membs[live[j].i].rec_start, __ATOMIC_RELAXED) != start)
			continue;	/* left: in exited_ns now */
		for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
			__u64 sum = p->state_ns[k] + live[j].ns[k];

			p->state_ns[k] = sum < live[j].ns[k] ? ~0ULL : sum;
		}
		kept++;
	}
	if ((__u64)kept != __atomic_load_n(&r->members, __ATOMIC_RELAXED))
		goto out;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&r->folds_begun, __ATOMIC_RELAXED) != begun ||
	    __atomic_load_n(&r->start_ns, __ATOMIC_RELAXED) != start)
		goto out;
	p->nr_threads = kept;
	p->valid = 1;
	p->now_ns = now;
	p->start_ns = start;
	ret = 0;
out:
	free(live);
	return ret;
}

/*
 * The last answer for a few processes, so that the next one does not go
 * back (a change stamped before a read may be stored after it): the
 * module keeps one per record for every caller, this backend one per pid
 * slot, in this process.
 */
#define TS_SHOWN_SLOTS	64
static struct {
	unsigned int pid;
	__u64 start_ns, now_ns;
	__u64 ns[TASKSTATE_MAP_NR_TOTALS];
} ts_shown[TS_SHOWN_SLOTS];
static char ts_shown_lock;

static void process_not_back(struct taskstate_process *p)
{
	typeof(ts_shown[0]) *s = &ts_shown[p->pid % TS_SHOWN_SLOTS];
	unsigned int k;

	while (__atomic_test_and_set(&ts_shown_lock, __ATOMIC_ACQUIRE))
		;
	if (s->pid == p->pid && s->start_ns == p->start_ns) {
		if (p->now_ns < s->now_ns)
			p->now_ns = s->now_ns;
		for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
			if (p->state_ns[k] < s->ns[k])
				p->state_ns[k] = s->ns[k];
	}
	s->pid = p->pid;
	s->start_ns = p->start_ns;
	s->now_ns = p->now_ns;
	memcpy(s->ns, p->state_ns, sizeof(s->ns));
	__atomic_clear(&ts_shown_lock, __ATOMIC_RELEASE);
}

/*
 * Errors as the module's: ESRCH no such process (pid not a process's
 * leader), EAGAIN its record kept changing under the reads for about a
 * second (TS_PROCESS_WAIT_NS).  p->valid 0: no record (its leader not
 * tracked).  EOPNOTSUPP: a load without records (an older loader).
 */
#define TS_PROCESS_WAIT_NS	1000000000ULL
int ts_bpf_process(int fd, unsigned int pid, struct taskstate_process *p)
{
	struct ts_bpf_view *v;
	int ret = view_of(fd, &v), tries;
	uint64_t until;
	__u32 gen;
	long i;

	if (ret)
		return ret;
	/* Loaded by a taskstate-bpf older than the records. */
	if (!v->recs || !v->membs)
		return -EOPNOTSUPP;
	if (!exists(pid, true))
		return -ESRCH;
	for (tries = 0, until = taskstate_now_ns() + TS_PROCESS_WAIT_NS;
	     tries < 10 || taskstate_now_ns() < until; tries++) {
		i = index_of(v, pid);
		if (i < 0)
			return 0;
		gen = __atomic_load_n(&v->entries[i].gen, __ATOMIC_ACQUIRE);
		if (!(gen & 1) ||
		    __atomic_load_n(&v->entries[i].tid, __ATOMIC_RELAXED) != pid ||
		    __atomic_load_n(&v->tgids[i * STRIDE], __ATOMIC_RELAXED) != pid)
			return 0;
		ret = process_read(v, pid, i, p);
		if (ret != -EAGAIN)
			break;
		/*
		 * A leave in flight (a few instructions in a probe, or an
		 * UNTRACK's iterator), a thread being made or listed, an
		 * exec between its tid swap and its end: soon over.
		 */
		if (tries < 10)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (ret || !p->valid)
		return ret;
	process_not_back(p);
	return 0;
}
