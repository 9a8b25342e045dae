/* SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0 */
/*
 * libtaskstate: the ioctls and the mapping of /dev/taskstate as plain C
 * functions.  Build with -I<tree>/lib -I<tree>/include/uapi, or
 * `pkg-config --cflags --libs libtaskstate` once installed.  Each function
 * has a man page in section 3 (taskstate_open(3), ...).
 *
 * One return convention: every function that can fail returns a value
 * >= 0 on success and -errno on failure (the result says it: errno is not
 * part of the interface); none prints or exits.  The few that cannot fail return a name, a time
 * or nothing.
 *
 * Names.  <linux/taskstate.h> names the ABI's objects: a word's helpers
 * are taskstate_<part of the word>() (taskstate_state(), taskstate_age_ns()),
 * a struct's helpers start with the struct's name
 * (taskstate_map_entry_read() reads one struct taskstate_map_entry).  This
 * library's functions are taskstate_<verb>() on the device's fd, and
 * taskstate_mapping_<verb>() on a struct taskstate_mapping.  No public
 * name is another with a word added, dropped or changed for the same
 * meaning: one call per reader, with an optional totals pointer.
 */
#ifndef LIBTASKSTATE_H
#define LIBTASKSTATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/taskstate.h>

#define TASKSTATE_DEV_PATH	"/dev/taskstate"

/* The device path: $TASKSTATE_DEV if set and not empty, else TASKSTATE_DEV_PATH. */
const char *taskstate_dev_path(void);

/*
 * Open taskstate_dev_path() read-only, close-on-exec: the fd, or -errno.
 * Without the device, the BPF backend if it is loaded (taskstate_backend()).
 * Without CAP_PERFMON the fd is scoped to the caller's own processes
 * (INFO's scope); every call works on those.
 */
int taskstate_open(void);
void taskstate_close(int fd);

/*
 * Which backend fd belongs to: "module" (/dev/taskstate) or "bpf" (the
 * maps `taskstate bpf load` pinned, which taskstate_open() opens when
 * there is no device and $TASKSTATE_DEV is not set); NULL for a bad fd.
 * On the BPF backend tids are the initial pid namespace's (the library
 * opens it only there), and there is no log of thread exits
 * (TASKSTATE_IOC_EXITS).
 */
const char *taskstate_backend(int fd);

/* TASKSTATE_IOC_INFO into *info (size and flags set here). */
int taskstate_info(int fd, struct taskstate_info *info);

/*
 * Start or stop tracking thread id, or with process the whole process id
 * (its threads, future threads and children).  *nr_threads, if not NULL,
 * gets how many threads the call changed.
 */
int taskstate_track(int fd, unsigned int id, bool process, uint64_t *nr_threads);
int taskstate_untrack(int fd, unsigned int id, bool process, uint64_t *nr_threads);

/*
 * Fill tgid and word of e[0..n-1] from their tid, in batches of at most
 * TASKSTATE_BATCH_MAX.  Unknown threads get tgid 0 and word 0 (NONE).
 * With t not NULL, t[0..n-1] also get the per-state totals that match
 * each word (zero for a thread not found): "DOC: Per-state totals" in the
 * uapi header.  Returns how many were found, or -errno: -EINVAL n above
 * INT_MAX, -EOPNOTSUPP t given and the module keeps no totals (totals=0).
 * n == 0 returns 0 without a system call (so without either check).
 */
int taskstate_sample(int fd, struct taskstate_entry *e,
		     struct taskstate_totals *t, uint32_t n);

/*
 * All tracked threads visible to the caller, or only process pid's when
 * pid is not 0.  *out is allocated here (never NULL on success) and freed
 * by the caller; *n gets its number of entries.  With totals not NULL,
 * *totals (allocated here too) gets the totals of each entry.  Returns
 * the number of matching threads the kernel reported last, which is
 * larger than *n only if more than TASKSTATE_LIST_MAX match or the set
 * kept growing faster than the bounded retries; or -errno (-ENOMEM,
 * -EOPNOTSUPP as taskstate_sample()), with *out, *totals and *n untouched.
 */
int taskstate_list(int fd, unsigned int pid, struct taskstate_entry **out,
		   struct taskstate_totals **totals, uint32_t *n);

/*
 * The per-state totals of process pid, those of its exited threads
 * included ("DOC: Process totals" in the uapi header): counters that go
 * down only when the process ends.  Returns 0 with *p filled, or -errno:
 * -ENODATA the module keeps no totals for that process (its leader is not
 * tracked; *p's out fields are 0), -ESRCH no such process, -EOPNOTSUPP
 * the module keeps no totals at all (totals=0), -EINTR a signal came
 * while it waited for another caller's read.  (EAGAIN, a record that
 * changed hands during the read, is retried here.)
 */
int taskstate_process(int fd, unsigned int pid, struct taskstate_process *p);

/*
 * Zero-syscall reads: the module's entries mapped read-only (rules and
 * read protocol: "DOC: The mapping" in <linux/taskstate.h>).
 */
struct taskstate_mapping {
	const struct taskstate_map_entry *entries;
	uint32_t nr;		/* entries mapped */
	uint32_t flags;		/* INFO's map_flags: TASKSTATE_MAP_F_* */
	size_t size;		/* bytes mapped */
};

/*
 * Map the entries of the module behind fd, after checking INFO's layout
 * and entry size: every entry for a privileged fd, the fd's own pages for
 * a scoped one (locate through the same fd).  Returns 0, or -errno:
 * -EPERM for a privileged fd outside the initial pid namespace,
 * -EOPNOTSUPP for a module without a mapping, -EPROTO for a layout this
 * library does not know.  The mapping outlives fd.
 */
int taskstate_mapping_open(int fd, struct taskstate_mapping *m);
void taskstate_mapping_close(struct taskstate_mapping *m);

/*
 * Fill tgid, index and gen of l[0..n-1] from their tid (in the caller's
 * pid namespace), in batches of at most TASKSTATE_BATCH_MAX.  Unknown
 * threads get index TASKSTATE_LOCATE_NONE, as do threads a scoped fd
 * could not bring into its mapping now (uapi: LOCATE).  Returns how many
 * were found.
 */
int taskstate_locate(int fd, struct taskstate_location *l, uint32_t n);

/*
 * taskstate_mapping_read(): reads of the totals that may meet a change in
 * progress before giving up.  A change takes nanoseconds; only a writer
 * stopped between a first word and its start_ns (interrupts are off
 * there, but a vCPU can be preempted by its host) could outlast them.
 */
#define TASKSTATE_MAPPING_READ_TRIES	100000

/*
 * The word of the located thread l, without a system call, and with t not
 * NULL its per-state totals, consistent with the word.  Returns 0 with
 * *word (and *t) set, or -errno: -ESRCH the entry is not l's thread any
 * more (it is gone or untracked, or l was not found: locate again),
 * -EOPNOTSUPP t given and the module keeps no totals (totals=0), -EAGAIN
 * a change landed in every try (not seen).  Inline: a read with t NULL is
 * a few loads.
 */
static inline int taskstate_mapping_read(const struct taskstate_mapping *m,
					 const struct taskstate_location *l,
					 uint64_t *word,
					 struct taskstate_totals *t)
{
	const struct taskstate_map_entry *e;
	int i, ret;
	__u64 w;

	if (t && !(m->flags & TASKSTATE_MAP_F_TOTALS))
		return -EOPNOTSUPP;
	if (l->index >= m->nr)
		return -ESRCH;
	e = &m->entries[l->index];
	if (!t)
		ret = taskstate_map_entry_read(e, l->gen, &w);
	else
		for (i = 0, ret = -1; ret < 0 && i < TASKSTATE_MAPPING_READ_TRIES; i++)
			ret = taskstate_map_entry_read_totals(e, l->gen, &w, t);
	if (ret < 0)
		return -EAGAIN;
	if (!ret)
		return -ESRCH;
	*word = w;
	return 0;
}

/*
 * Entry i as a scan of the whole mapping sees it, by the same protocol:
 * 0 with its tid and word if a thread owns it (*gen its generation),
 * -ESRCH if it is free or changing, -EINVAL if i is not below m->nr.
 */
static inline int taskstate_mapping_scan(const struct taskstate_mapping *m,
					 uint32_t i, uint32_t *tid,
					 uint64_t *word, uint32_t *gen)
{
	const struct taskstate_map_entry *e;
	uint32_t g;

	if (i >= m->nr)
		return -EINVAL;
	e = &m->entries[i];
	g = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
	if (!(g & 1))
		return -ESRCH;
	*tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
	*word = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != g)
		return -ESRCH;
	*gen = g;
	return 0;
}

/*
 * The totals up to now_ns: t's, with the time in the current state
 * (word's age at now_ns) added to that state's total.  state_ns[i] is
 * indexed by TASKSTATE_TOTAL_*; their sum is now_ns - t->start_ns, or,
 * for a DEAD word, since - t->start_ns: a dead thread's time counts in no
 * total.
 */
void taskstate_totals_at(uint64_t word, const struct taskstate_totals *t,
			 uint64_t now_ns,
			 uint64_t state_ns[TASKSTATE_MAP_NR_TOTALS]);

/*
 * The name of a TASKSTATE_TOTAL_* value, from the uapi header's
 * TASKSTATE_TOTAL_NAMES: "RUNNING", "RUNNABLE", "SLEEPING", "BLOCKED",
 * "OTHER"; "?" for a value out of range.
 */
const char *taskstate_total_name(unsigned int total);

/*
 * Now on the clock the words are stamped with, in ns: the initial time
 * namespace's CLOCK_BOOTTIME.  In a time namespace with a boottime offset
 * this process's CLOCK_BOOTTIME minus that offset, which taskstate_open()
 * and taskstate_info() learn from the module (INFO's boottime_offset_ns).
 * Before either, and in a child after fork(), it reads the offset from
 * /proc/self/timens_offsets.  It follows the process into another
 * namespace (setns()): CLOCK_BOOTTIME then moves against CLOCK_REALTIME,
 * and the offset is read again.  Two clock reads a call; no stdio, no
 * allocation.
 */
uint64_t taskstate_now_ns(void);

/*
 * The name of a state, from the uapi header's TASKSTATE_STATE_NAMES:
 * "NONE", "RUNNING", ..., "DEAD"; "?" for a value out of range.
 */
const char *taskstate_state_name(unsigned int state);

/* The state named name, case-insensitive; -EINVAL if none is. */
int taskstate_state_from_name(const char *name);

struct taskstate_decoded {
	unsigned int state;	/* TASKSTATE_* */
	uint64_t since_ns;	/* CLOCK_BOOTTIME of the last change, mod 2^61 */
	uint64_t age_ns;	/* time in this state at now_ns, mod 2^61 */
};

/* Split word; now_ns should be read after the word was. */
void taskstate_decode(uint64_t word, uint64_t now_ns, struct taskstate_decoded *d);

/*
 * The comm of thread tid from /proc/<tid>/comm, without the newline,
 * truncated to fit len.  Returns its length; -ENOENT when the thread is
 * gone, which is normal for a list taken a moment ago.
 */
int taskstate_comm(unsigned int tid, char *buf, size_t len);

/*
 * Stuck-worker detection (lib/stuck.c): which of n located threads
 * (taskstate_locate()) have been in one of the states of state_mask
 * (bits 1 << TASKSTATE_*; 0 means TASKSTATE_STUCK_MASK, BLOCKED, as
 * the kernel's hung-task detector counts) for longer than threshold_ns.
 * Reads only the mapping and the clock once per call (vDSO): no system
 * call per thread checked.
 */
#define TASKSTATE_STUCK_MASK	(1U << TASKSTATE_BLOCKED)

struct taskstate_stuck {
	uint32_t which;		/* index into the locations passed */
	uint32_t state;		/* TASKSTATE_* it is stuck in */
	uint64_t age_ns;	/* how long, at the check */
};

/*
 * Fill out[0..max_out-1] with the stuck threads among l[0..n-1], in the
 * order of l.  Returns how many are stuck (more than max_out if out was
 * too small); *nr_gone, if not NULL, gets how many locations do not
 * name their thread (exited, untracked, or never found: locate again).
 */
int taskstate_stuck_check(const struct taskstate_mapping *m,
			  const struct taskstate_location *l, uint32_t n,
			  uint64_t threshold_ns, unsigned int state_mask,
			  struct taskstate_stuck *out, uint32_t max_out,
			  uint32_t *nr_gone);

#endif /* LIBTASKSTATE_H */
