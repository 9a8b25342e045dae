/* SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0 */
/*
 * libtaskstate: the ioctls of /dev/taskstate as plain C functions.
 *
 * Every function that can fail returns a non-negative value on success and
 * -errno on failure; none prints or exits.  Build with the uapi header on
 * the include path (<linux/taskstate.h>, i.e. -I<tree>/include/uapi).
 */
#ifndef LIBTASKSTATE_H
#define LIBTASKSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/taskstate.h>

#define TASKSTATE_DEV_PATH	"/dev/taskstate"

/* The device path: $TASKSTATE_DEV if set and not empty, else TASKSTATE_DEV_PATH. */
const char *taskstate_dev_path(void);

/* Open taskstate_dev_path() read-only, close-on-exec; returns the fd. */
int taskstate_open(void);
void taskstate_close(int fd);

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
 * Returns how many were found; n must be at most INT_MAX.
 */
int taskstate_sample(int fd, struct taskstate_entry *e, uint32_t n);

/*
 * The same, and t[0..n-1] the per-state totals that match each word
 * (zero for a thread not found): "DOC: Per-state totals" in the uapi
 * header.  -EOPNOTSUPP if the module keeps no totals (totals=0).
 */
int taskstate_sample_totals(int fd, struct taskstate_entry *e,
			    struct taskstate_totals *t, uint32_t n);

/*
 * All tracked threads visible to the caller, or only process pid's when
 * pid is not 0.  *out is allocated here (never NULL on success) and freed
 * by the caller; *n gets its number of entries.  Returns the number of
 * matching threads the kernel reported last, which is larger than *n only
 * if more than TASKSTATE_LIST_MAX match or the set kept growing faster
 * than the bounded retries.
 */
int taskstate_list(int fd, unsigned int pid, struct taskstate_entry **out,
		   uint32_t *n);

/* The same, and *totals (allocated here too) the totals of each entry. */
int taskstate_list_totals(int fd, unsigned int pid,
			  struct taskstate_entry **out,
			  struct taskstate_totals **totals, uint32_t *n);

/*
 * The per-state totals of process pid, those of its exited threads
 * included ("DOC: Process totals" in the uapi header): counters that go
 * down only when the process ends.  Returns 1 with *p filled, 0 if the
 * module keeps no totals for that process (its leader is not tracked:
 * *p's out fields are 0), or -errno: -ESRCH no such process,
 * -EOPNOTSUPP the module keeps no totals at all (totals=0).
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
 * Map every entry of the module behind fd, after checking INFO's layout
 * and entry size.  Returns 0, or -errno: -EPERM outside the initial pid
 * namespace, -EOPNOTSUPP for a module without a mapping, -EPROTO for a
 * layout this library does not know.  The mapping outlives fd.
 */
int taskstate_mapping_open(int fd, struct taskstate_mapping *m);
void taskstate_mapping_close(struct taskstate_mapping *m);

/*
 * Fill tgid, index and gen of l[0..n-1] from their tid (in the caller's
 * pid namespace), in batches of at most TASKSTATE_BATCH_MAX.  Unknown
 * threads get index TASKSTATE_LOCATE_NONE.  Returns how many were found.
 */
int taskstate_locate(int fd, struct taskstate_location *l, uint32_t n);

/*
 * The word of the located thread l, without a system call.  Returns 1 and
 * sets *word while the entry is still that thread's; 0 once it is not
 * (the thread is gone or untracked, or l was not found): locate again.
 */
static inline int taskstate_mapping_read(const struct taskstate_mapping *m,
			      const struct taskstate_location *l,
			      uint64_t *word)
{
	__u64 w;

	if (l->index >= m->nr ||
	    !taskstate_map_read(&m->entries[l->index], l->gen, &w))
		return 0;
	*word = w;
	return 1;
}

/*
 * Entry i as a scan sees it, by the same protocol: 1 with its tid and
 * word if a thread owns it (*gen its generation), 0 if free or changing.
 */
static inline int taskstate_mapping_entry(const struct taskstate_mapping *m, uint32_t i,
			       uint32_t *tid, uint64_t *word, uint32_t *gen)
{
	const struct taskstate_map_entry *e = &m->entries[i];
	uint32_t g = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);

	if (!(g & 1))
		return 0;
	*tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
	*word = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != g)
		return 0;
	*gen = g;
	return 1;
}

/*
 * The word and the per-state totals of the located thread l, without a
 * system call, consistent with each other.  Returns 1 with both set, 0
 * once the entry is not l's thread (as taskstate_mapping_read()),
 * -EOPNOTSUPP if the module keeps no totals (totals=0), -EAGAIN if a
 * change landed in every try (not seen).
 */
int taskstate_mapping_read_totals(const struct taskstate_mapping *m,
				  const struct taskstate_location *l,
				  uint64_t *word, struct taskstate_totals *t);

/*
 * The totals up to now_ns: t's, with the time in the current state
 * (word's age at now_ns) added to that state's total.  state_ns[i] is
 * indexed by TASKSTATE_TOTAL_*; their sum is now_ns - t->start_ns.
 */
void taskstate_totals_at(uint64_t word, const struct taskstate_totals *t,
			 uint64_t now_ns,
			 uint64_t state_ns[TASKSTATE_MAP_NR_TOTALS]);

/* "RUN", "WAIT", "SLEEP", "BLOCK", "OTHER" for TASKSTATE_TOTAL_*. */
const char *taskstate_total_name(unsigned int total);

/*
 * Now on the clock the words are stamped with, in ns: the initial time
 * namespace's CLOCK_BOOTTIME.  In a time namespace with a boottime offset
 * this process's CLOCK_BOOTTIME minus that offset, which taskstate_open()
 * and taskstate_info() learn from the module (INFO's boottime_offset_ns);
 * before either, the process's own clock.
 */
uint64_t taskstate_now_ns(void);

/* "RUNNING", ...; "?" for a value out of range. */
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
 * Stuck-worker detection (tools/stuck.c): which of n located threads
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
