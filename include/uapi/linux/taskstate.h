/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * taskstate: one packed 64-bit word per tracked thread, holding its
 * scheduling state and the CLOCK_BOOTTIME time of its last state change.
 *
 * The word:
 *   bits 63..61  state (enum-like TASKSTATE_* values below)
 *   bits 60..0   CLOCK_BOOTTIME nanoseconds of the last state change,
 *                modulo 2^61 (about 73 years; see taskstate_age_ns())
 */
#ifndef _UAPI_LINUX_TASKSTATE_H
#define _UAPI_LINUX_TASKSTATE_H

#include <linux/ioctl.h>
#include <linux/types.h>

/**
 * DOC: General ioctl format
 *
 * The device /dev/taskstate answers the TASKSTATE_IOC_* ioctls below, and
 * mmap() (see "DOC: The mapping").  Every ioctl's argument is a struct
 * that starts with its own size, so that it can grow (openat2 style):
 *
 *  - The caller sets @size to the size of the struct it was built with.
 *    The kernel accepts any size from the first version's
 *    (TASKSTATE_*_SIZE_VER0) up to a page.  A smaller size is EINVAL, a
 *    larger one E2BIG; so is a size larger than the kernel's struct whose
 *    unknown tail is not all zero.  A shorter struct is read as if its
 *    missing fields were zero, so an old program gets the old behaviour.
 *  - The kernel writes back at most @size bytes.
 *  - Fields marked "in" are read, "out" written; @flags and padding are
 *    "in" and must be zero (EINVAL otherwise).
 *  - Pointers travel in __aligned_u64 fields.  A pointer that a 32-bit
 *    kernel cannot address (bits above 31 set) is EFAULT, as is any
 *    pointer the kernel cannot read or write.
 *  - All fields are __u32 and __aligned_u64 with explicit padding: the
 *    layout is the same for 32- and 64-bit programs, on every
 *    architecture.
 *
 * Errors common to every ioctl: ENOTTY for an unknown command, EFAULT
 * for an argument the kernel cannot read or write, EINVAL and E2BIG as
 * above.  Each ioctl lists its own below.
 *
 * Privilege is decided when the device is opened, and the descriptor is
 * then the capability, as with perf events: every ioctl, TRACK and
 * UNTRACK included, works for whoever holds it (inherited, or passed with
 * SCM_RIGHTS), with tids resolved in the pid namespace of the caller.
 * Opened with CAP_PERFMON or CAP_SYS_ADMIN in the initial user namespace
 * it sees every thread (INFO's scope TASKSTATE_SCOPE_ALL).  Opened
 * without, it is scoped (TASKSTATE_SCOPE_SELF; EPERM instead while the
 * module parameter unprivileged is 0): it sees the opener's process and
 * the processes that descend from it, at the time of each call, each
 * while all its uids and gids are the opener's and it is dumpable (a
 * set-user-ID exec or PR_SET_DUMPABLE 0 takes it out).  A thread outside
 * the scope answers exactly as a tid that names nothing: not found by
 * SAMPLE and LOCATE, ESRCH from TRACK, UNTRACK and PROCESS, left out of
 * LIST.  A scoped TRACK tracks only threads nothing tracks yet, charged
 * to the opener's user (ENOSPC past its share, INFO's
 * scope_max_threads), and they end when the descriptor's last holder
 * closes it; a scoped UNTRACK ends only what it tracked.  A scoped
 * descriptor maps only its own pages ("DOC: The mapping").
 */

#define TASKSTATE_ABI_VERSION	1

/* The word. */
#define TASKSTATE_STATE_SHIFT	61
#define TASKSTATE_TIME_BITS	61
#define TASKSTATE_TIME_MASK	((((__u64)1) << TASKSTATE_TIME_BITS) - 1)

#define TASKSTATE_NONE		0	/* free slot, or never observed */
#define TASKSTATE_RUNNING	1	/* on a CPU */
#define TASKSTATE_RUNNABLE	2	/* on a run queue, waiting for a CPU */
#define TASKSTATE_SLEEPING	3	/* interruptible sleep, idle, parked */
#define TASKSTATE_BLOCKED	4	/* uninterruptible sleep, RT lock wait */
#define TASKSTATE_STOPPED	5	/* job-control stop, frozen */
#define TASKSTATE_TRACED	6	/* ptrace stop */
#define TASKSTATE_DEAD		7	/* exited, not yet freed */
#define TASKSTATE_NR_STATES	8

/*
 * The states' names, the one list every surface spells them from
 * (debugfs, libtaskstate's taskstate_state_name(), the taskstate command
 * in lower case, the documentation): an initializer of a
 * const char *[TASKSTATE_NR_STATES], each name at its value's index and
 * spelt as its constant's suffix.
 */
#define TASKSTATE_STATE_NAMES {						\
	[TASKSTATE_NONE] = "NONE",		[TASKSTATE_RUNNING] = "RUNNING", \
	[TASKSTATE_RUNNABLE] = "RUNNABLE",	[TASKSTATE_SLEEPING] = "SLEEPING", \
	[TASKSTATE_BLOCKED] = "BLOCKED",	[TASKSTATE_STOPPED] = "STOPPED", \
	[TASKSTATE_TRACED] = "TRACED",		[TASKSTATE_DEAD] = "DEAD",	\
}

static __inline__ __u64 taskstate_pack(unsigned int state, __u64 ns)
{
	return ((__u64)(state & 7) << TASKSTATE_STATE_SHIFT) |
	       (ns & TASKSTATE_TIME_MASK);
}

static __inline__ unsigned int taskstate_state(__u64 word)
{
	return (unsigned int)(word >> TASKSTATE_STATE_SHIFT);
}

static __inline__ __u64 taskstate_since_ns(__u64 word)
{
	return word & TASKSTATE_TIME_MASK;
}

/*
 * Nanoseconds spent in the current state, given "now" read from
 * CLOCK_BOOTTIME.  Computed modulo 2^61, so it stays right across the
 * wrap of the time field for any age below 2^60 ns (36 years).  A "now"
 * read a little before the word was written (another CPU, a clock read
 * a few ns behind) gives 0, not a huge age.
 */
static __inline__ __u64 taskstate_age_ns(__u64 word, __u64 now_ns)
{
	__u64 age = (now_ns - word) & TASKSTATE_TIME_MASK;

	return age > (TASKSTATE_TIME_MASK >> 1) ? 0 : age;
}

/**
 * DOC: Per-state totals
 *
 * With the module's totals parameter on (INFO: map_flags has
 * TASKSTATE_MAP_F_TOTALS), each tracked thread also has cumulative
 * nanoseconds per state: RUNNING, RUNNABLE, SLEEPING, BLOCKED, and one
 * total for the rest (STOPPED, TRACED).  The scheduler's probes
 * keep them: at each change of state they add the time spent in the old
 * state, from its since-time to the change, to the old state's total.
 * start_ns is the since-time of the thread's first word (when tracking
 * began, or the scheduler's estimate of when the thread entered the
 * state it was in then; never 0).  So for every word W but the empty one
 * (0, whose totals are zero):
 *
 *	start_ns != 0 and start_ns + sum(state_ns[]) == since(W)  (mod 2^61)
 *
 * and the time in the current state, age(W), is in no total yet: a
 * reader adds it to its state's total (libtaskstate:
 * taskstate_totals_at()), unless that state is DEAD.  A dead thread's
 * time counts in no total: its totals stop at its death, since(W) of its
 * DEAD word, whether it is reaped at once or waits as a zombie (a zombie
 * leader may wait as long as its process lives).
 *
 * Reading them consistently without a lock.  One writer at a time
 * changes W to W' as: total[state(W)] += d, d = since(W') - since(W),
 * never negative (a clock behind since(W) stamps W' with since(W));
 * smp_wmb(); word = W'.  The first word is written by a compare-and-swap
 * from 0, and start_ns only after it, by the writer that won.  A reader
 * loads the word (acquire), then start_ns and the totals, and accepts
 * only if the invariant holds for that word.  Why that is enough:
 * (1) every total stored before W was stored is visible to a reader
 * whose acquire load returned W (the smp_wmb() before each word store;
 * for changes made on other CPUs, the scheduler's lock handoff between
 * them and each writer's data dependency on the word it read order the
 * earlier totals too); so each total read is at least W's.  (2) Within
 * one owner a total only grows, and start_ns is written once.  So the
 * sum read is W's sum plus what later changes added, and equals since(W)
 * only if they added nothing: the totals read are W's (a wrap mod 2^61
 * would need 73 years of changes during one read).  (3) Before its
 * start_ns is stored a first word reads start_ns 0: rejected.  Comparing
 * two loads of the word around the totals is not enough on its own: a
 * reader between a change's total and its word store sees the old word
 * twice around a newer total.  Reuse of the entry by another thread is
 * caught by the mapping's gen protocol above.  The totals are 64-bit
 * loads that must not tear, as the word.  A reader retries on a failed
 * check; a change takes nanoseconds.
 */
#define TASKSTATE_MAP_NR_TOTALS	5

#define TASKSTATE_TOTAL_RUNNING		0
#define TASKSTATE_TOTAL_RUNNABLE	1
#define TASKSTATE_TOTAL_SLEEPING	2
#define TASKSTATE_TOTAL_BLOCKED		3
#define TASKSTATE_TOTAL_OTHER		4	/* STOPPED, TRACED */

/* The totals' names, as the states': the TASKSTATE_TOTAL_* suffixes. */
#define TASKSTATE_TOTAL_NAMES {						\
	[TASKSTATE_TOTAL_RUNNING] = "RUNNING",				\
	[TASKSTATE_TOTAL_RUNNABLE] = "RUNNABLE",			\
	[TASKSTATE_TOTAL_SLEEPING] = "SLEEPING",			\
	[TASKSTATE_TOTAL_BLOCKED] = "BLOCKED",				\
	[TASKSTATE_TOTAL_OTHER] = "OTHER",				\
}

/*
 * Which total the time in @state goes to; DEAD's goes to none (see
 * above), and is given OTHER's index only to keep the index in range.
 */
static __inline__ unsigned int taskstate_total_of(unsigned int state)
{
	return state >= TASKSTATE_RUNNING && state <= TASKSTATE_BLOCKED ?
	       state - TASKSTATE_RUNNING : TASKSTATE_TOTAL_OTHER;
}

/**
 * struct taskstate_totals - a thread's per-state totals
 * @start_ns: since-time of its first word
 * @state_ns: ns spent in each state, indexed by TASKSTATE_TOTAL_*, up to
 *            the since-time of the word they match
 *
 * As in the mapping's entry; from SAMPLE and LIST version 1.
 */
struct taskstate_totals {
	__aligned_u64 start_ns;
	__aligned_u64 state_ns[TASKSTATE_MAP_NR_TOTALS];
};

/* The invariant above: do @t belong to @word? */
static __inline__ int taskstate_totals_match(__u64 word,
					     const struct taskstate_totals *t)
{
	__u64 sum = t->start_ns;
	int i;

	if (word && !t->start_ns)
		return 0;
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		sum += t->state_ns[i];
	return ((sum - word) & TASKSTATE_TIME_MASK) == 0;
}

/*
 * The largest count TASKSTATE_IOC_SAMPLE and TASKSTATE_IOC_LOCATE accept,
 * and the largest TASKSTATE_IOC_LIST accepts: the most threads the module
 * can track (its max_threads parameter is at most this).
 */
#define TASKSTATE_BATCH_MAX	65536
#define TASKSTATE_LIST_MAX	4194304

/**
 * struct taskstate_info - ioctl(TASKSTATE_IOC_INFO)
 * @size: in: sizeof(struct taskstate_info)
 * @flags: in: must be 0
 * @abi_version: out: TASKSTATE_ABI_VERSION
 * @state_shift: out: TASKSTATE_STATE_SHIFT
 * @time_bits: out: TASKSTATE_TIME_BITS
 * @clock_id: out: the clock of the words, CLOCK_BOOTTIME (7)
 * @max_threads: out: the table's capacity (module parameter max_threads)
 * @batch_max: out: TASKSTATE_BATCH_MAX
 * @track_all: out: the track_all module parameter
 * @scope: out: TASKSTATE_SCOPE_ALL for a privileged descriptor,
 *         TASKSTATE_SCOPE_SELF for a scoped one (see the top of this
 *         file); 0 (ALL) from a module older than scopes
 * @nr_tracked: out: threads tracked now, system-wide
 * @nr_untracked: out: threads left untracked since load because the table
 *                was full, system-wide: those the module should have
 *                tracked on its own (existing at load with track_all, or
 *                created by a thread tracked with inheritance); a TRACK
 *                refused with ENOSPC is not counted, nor a thread left
 *                untracked because a scoped descriptor's user had its
 *                share
 * @map_entry_size: out, version 1: sizeof(struct taskstate_map_entry)
 * @map_layout: out, version 1: TASKSTATE_MAP_LAYOUT
 * @map_entries: out, version 1: entries in the mapping (max_threads)
 * @map_flags: out, version 1: TASKSTATE_MAP_F_*, the optional fields the
 *             module keeps current
 * @map_size: out, version 1: bytes mmap() accepts, a page multiple
 * @boottime_offset_ns: out, version 2: the caller's time namespace's
 *                      CLOCK_BOOTTIME offset (time_namespaces(7)), signed;
 *                      0 in the initial time namespace
 * @scope_max_threads: out, version 3: for a scoped descriptor, the most
 *                     threads its user's scoped descriptors may have
 *                     tracked at once (TRACK past it: ENOSPC); else 0
 * @scope_nr_tracked: out, version 3: for a scoped descriptor, the threads
 *                    they have tracked now; else 0
 *
 * What the running module is and holds.  Errors: only the common ones.
 *
 * Time namespaces.  Every time taskstate gives out (the words' since,
 * start_ns and the totals; SAMPLE, LIST, the mapping, debugfs) is in the
 * initial time namespace's CLOCK_BOOTTIME, whichever namespace reads it:
 * one entry has one meaning for every reader, and the mapping is shared.
 * A caller whose time namespace shifts CLOCK_BOOTTIME (unshare -T
 * --boottime, CRIU's restore) subtracts @boottime_offset_ns from its
 * clock_gettime(CLOCK_BOOTTIME) before comparing it with a word (an age);
 * libtaskstate's taskstate_now_ns() does.  Ages and durations are the same
 * in every namespace.
 */
struct taskstate_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 state_shift;
	__u32 time_bits;
	__u32 clock_id;
	__u32 max_threads;
	__u32 batch_max;
	__u32 track_all;
	__u32 scope;
	__aligned_u64 nr_tracked;
	__aligned_u64 nr_untracked;
	__u32 map_entry_size;
	__u32 map_layout;
	__u32 map_entries;
	__u32 map_flags;
	__aligned_u64 map_size;
	__s64 boottime_offset_ns;		/* at 80: 8-aligned on every ABI */
	__u32 scope_max_threads;
	__u32 scope_nr_tracked;
};

#define TASKSTATE_INFO_SIZE_VER0	56
#define TASKSTATE_INFO_SIZE_VER1	80
#define TASKSTATE_INFO_SIZE_VER2	88
#define TASKSTATE_INFO_SIZE_VER3	96

/* INFO's scope. */
#define TASKSTATE_SCOPE_ALL	0	/* every thread */
#define TASKSTATE_SCOPE_SELF	1	/* the opener's process, descendants */

#define TASKSTATE_TRACK_PROCESS	(1U << 0)
#define TASKSTATE_TRACK_EXITS	(1U << 1)	/* TRACK, with _PROCESS */

/**
 * struct taskstate_track - ioctl(TASKSTATE_IOC_TRACK), (TASKSTATE_IOC_UNTRACK)
 * @size: in: sizeof(struct taskstate_track)
 * @flags: in: 0, or TASKSTATE_TRACK_PROCESS; TRACK also takes
 *         TASKSTATE_TRACK_PROCESS | TASKSTATE_TRACK_EXITS (see
 *         TASKSTATE_IOC_EXITS)
 * @id: in: a tid in the caller's pid namespace; with
 *      TASKSTATE_TRACK_PROCESS a pid: the whole process, its future threads
 *      and its children (and theirs)
 * @__pad: in: must be 0
 * @nr_threads: out: threads tracked (untracked) by this call
 *
 * Start or stop tracking.  Tracking a tracked thread is not an error.
 * Errors: ESRCH no such thread or process (or @id names a thread that is
 * not a process's leader, with TASKSTATE_TRACK_PROCESS); ENOSPC the table
 * is full (TRACK; the threads tracked before it filled stay tracked).
 * With TASKSTATE_TRACK_EXITS: EINVAL without TASKSTATE_TRACK_PROCESS;
 * EOPNOTSUPP the module keeps no totals (totals=0); EBUSY the process's
 * exits are logged to another descriptor (the process is tracked);
 * ENOMEM no memory for this descriptor's log; EAGAIN (scoped) set-user-ID
 * execs on the machine kept coming while it looked: try again.
 */
struct taskstate_track {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __pad;
	__aligned_u64 nr_threads;
};

#define TASKSTATE_TRACK_SIZE_VER0	24

/**
 * struct taskstate_entry - one thread, in SAMPLE and LIST
 * @tid: SAMPLE: in; LIST: out: the thread, in the caller's pid namespace
 * @tgid: out: its process, 0 if not found
 * @word: out: its word, 0 (NONE) if not found
 */
struct taskstate_entry {
	__u32 tid;
	__u32 tgid;
	__aligned_u64 word;
};

/**
 * struct taskstate_sample - ioctl(TASKSTATE_IOC_SAMPLE)
 * @size: in: sizeof(struct taskstate_sample)
 * @flags: in: must be 0
 * @count: in: entries, at most TASKSTATE_BATCH_MAX (else E2BIG)
 * @found: out: entries answered with a word
 * @entries: in: pointer to struct taskstate_entry[@count]
 * @totals: in, version 1: 0, or a pointer to struct
 *          taskstate_totals[@count], filled for entry i with the totals
 *          that match its word ("DOC: Per-state totals"): all zero for a
 *          word 0, or start_ns 0 with a non-zero word for a thread whose
 *          totals could not be read consistently in a bounded retry
 *          (taskstate_totals_match() rejects them; not seen)
 *
 * The words of many threads at once.  A tid that is unknown, gone or
 * untracked is answered with word 0 and tgid 0; it does not fail the
 * call.  So is a thread whose tracking has begun but that has no word
 * yet (another caller's TRACK still taking its snapshot, a new thread
 * before its first wakeup): every word answered has a state.  Returns
 * @found.  Errors: E2BIG @count too large; EOPNOTSUPP
 * @totals asked of a module that keeps none (totals=0: INFO's @map_flags
 * without TASKSTATE_MAP_F_TOTALS); ENOMEM.
 */
struct taskstate_sample {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 found;
	__aligned_u64 entries;
	__aligned_u64 totals;
};

#define TASKSTATE_SAMPLE_SIZE_VER0	24
#define TASKSTATE_SAMPLE_SIZE_VER1	32

/**
 * struct taskstate_list - ioctl(TASKSTATE_IOC_LIST)
 * @size: in: sizeof(struct taskstate_list)
 * @flags: in: must be 0
 * @pid: in: 0 for every process, else only this process's threads
 * @count: in: capacity of @entries, at most TASKSTATE_LIST_MAX (else
 *         E2BIG)
 * @entries: in: pointer to struct taskstate_entry[@count]
 * @filled: out: entries written
 * @total: out: matching tracked threads that have a word (see below); a
 *         caller whose buffer was too small retries with a larger one
 * @totals: in, version 1: 0, or a pointer to struct
 *          taskstate_totals[@count], as in SAMPLE
 *
 * Every tracked thread visible in the caller's pid namespace, with its
 * word (threads with no word yet left out, as in SAMPLE).  Returns
 * @filled.  Errors: E2BIG, EOPNOTSUPP, ENOMEM as SAMPLE.
 */
struct taskstate_list {
	__u32 size;
	__u32 flags;
	__u32 pid;
	__u32 count;
	__aligned_u64 entries;
	__u32 filled;
	__u32 total;
	__aligned_u64 totals;
};

#define TASKSTATE_LIST_SIZE_VER0	32
#define TASKSTATE_LIST_SIZE_VER1	40

#define TASKSTATE_LOCATE_NONE	0xffffffffU

/**
 * struct taskstate_location - one thread, in LOCATE
 * @tid: in: the thread, in the caller's pid namespace
 * @tgid: out: its process, 0 if not found
 * @index: out: its entry's index in the mapping, or TASKSTATE_LOCATE_NONE
 * @gen: out: the entry's generation at the time of the call (odd), 0 if
 *       not found
 */
struct taskstate_location {
	__u32 tid;
	__u32 tgid;
	__u32 index;
	__u32 gen;
};

/**
 * struct taskstate_locate - ioctl(TASKSTATE_IOC_LOCATE)
 * @size: in: sizeof(struct taskstate_locate)
 * @flags: in: must be 0
 * @count: in: locations, at most TASKSTATE_BATCH_MAX (else E2BIG)
 * @found: out: locations answered with an entry
 * @locations: in: pointer to struct taskstate_location[@count]
 *
 * Where threads are in the mapping ("DOC: The mapping").  A tid that is
 * unknown, gone or untracked gets tgid 0, index TASKSTATE_LOCATE_NONE
 * and gen 0; it does not fail the call.  Through a scoped descriptor the
 * index is in that descriptor's mapping, and LOCATE moves the thread's
 * entry there if it can: always for the calling thread and for a thread
 * that sleeps; not for one that is running on another CPU or waiting
 * for one, nor past the user's share of pages; such a thread gets its
 * tgid with index TASKSTATE_LOCATE_NONE and gen 0, is not counted in
 * @found, and may be located again (a thread can always locate itself).
 * A moved entry's old (index, gen) reads as gone.  Returns @found.
 * Errors: E2BIG.
 */
struct taskstate_locate {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 found;
	__aligned_u64 locations;
};

#define TASKSTATE_LOCATE_SIZE_VER0	24

/**
 * DOC: The mapping
 *
 * mmap() of /dev/taskstate gives every tracked thread's word without a
 * system call: an array of map_entries entries of map_entry_size bytes
 * (INFO), entry i at byte i * map_entry_size.  A reader checks INFO's
 * map_layout == TASKSTATE_MAP_LAYOUT and map_entry_size ==
 * sizeof(struct taskstate_map_entry), and refuses anything else: a module
 * that moves a field or changes its meaning reports another layout.
 * Optional fields are announced in map_flags, without a new layout.
 * Nothing else is in the pages: the rest of the last page is zero.
 *
 * A scoped descriptor (see the top of this header) maps its own pages
 * instead: map_entries entries again, at its own indices (LOCATE's
 * through it), holding the entries of the threads it tracks and locates
 * and of their new threads and children, and no byte of any other
 * thread's entry: a page is the descriptor's from its first use (an
 * entry, or a read) until it is closed, and reads as zero where no
 * thread owns an entry.  Its map_size is its user's share in whole pages;
 * a page past what that user's open descriptors may hold reads as
 * SIGBUS.  A thread that execs a set-user-ID or set-group-ID program
 * leaves it (its gen changes); one that calls prctl(PR_SET_DUMPABLE, 0)
 * leaves the ioctls' scope at once but the mapping only at its next
 * exec or its end.
 *
 * Rules (errno of mmap() in brackets):
 *  - A privileged descriptor maps every entry; a scoped one its own.
 *  - Only a caller in the initial pid namespace maps a privileged
 *    descriptor [EPERM]: the tids in the entries are that namespace's.
 *    A scoped descriptor maps in any pid namespace, its entries' tids
 *    still the initial namespace's: use LOCATE's answer, not the tid.
 *  - MAP_SHARED and read-only: PROT_WRITE or PROT_EXEC [EACCES], and
 *    mprotect() to either later [EACCES]; MAP_PRIVATE [EINVAL].
 *  - Offset and length within map_size, offset a page multiple [EINVAL].
 *    mremap() cannot grow the mapping [EFAULT]; it may shrink or move it.
 *  - A forked child does not inherit the mapping (VM_DONTCOPY): its
 *    address range is unmapped there.  It may mmap the inherited fd.
 *  - The mapping keeps the module and its memory: rmmod is refused while
 *    any mapping exists, also after its fd was closed.
 *  - Only where user space can load a 64-bit word whole (see the read
 *    protocol below) [ENODEV]: not on a kernel with CONFIG_GENERIC_ATOMIC64.
 *
 * An entry belongs to one thread at a time.  Its generation (gen) is even
 * while the entry is free and odd while a thread owns it; the kernel bumps
 * it when a thread is given the entry and again when the thread is no
 * longer tracked (freed, or untracked), so a located (index, gen) stays
 * valid exactly as long as gen reads the same.  Generations wrap after
 * 2^31 reuses of one entry; a reader that sleeps through that many
 * between two reads could be fooled.
 *
 * The read protocol for a located entry, correct on weakly ordered CPUs
 * (arm64) and on 32-bit ones:
 *
 *	g1 = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
 *	w  = __atomic_load_n(&e->word, __ATOMIC_RELAXED);  (8 bytes, tear-free)
 *	__atomic_thread_fence(__ATOMIC_ACQUIRE);            (smp_rmb())
 *	g2 = __atomic_load_n(&e->gen, __ATOMIC_RELAXED);
 *	valid = g1 == gen && g2 == gen;
 *
 * Why it is enough.  The kernel, for one entry, in this order:
 *   take:    word = 0 (at the last release, a grace period ago), tid = t,
 *            smp_wmb(), gen = odd (then the slot is published to the
 *            probes, which write word from now on);
 *   release: gen = even, smp_wmb(), tid = 0; after an RCU grace period
 *            (no probe writes the word any more) word = 0, and only then
 *            may take run again.
 * (1) g1 == gen, loaded with acquire, so the word load that follows sees
 *     every store before that gen's take, in particular the reset to 0
 *     that followed the previous owner's last write: w is never the
 *     previous owner's word.  (2) If w was written after the release of
 *     this gen (the reset, a later owner's word), that store follows the
 *     release's gen store in the kernel (the grace period orders it), and
 *     the fence before the second gen load makes g2 see that gen or a
 *     later one: g2 != gen.  So with both equal, w is this owner's word,
 *     0 (NONE: owned but not observed yet) or the last word it had before
 *     it was released.  The same argument holds for tid and any other
 *     field read between the two gen loads.
 *
 * The word is a 64-bit load that must not tear on 32-bit CPUs: the
 * kernel stores it with one atomic 64-bit store (atomic64_set() there),
 * and __atomic_load_n() of an aligned 8-byte value is one load (x86-32:
 * an x87 fild/fistp or SSE movq, never a cmpxchg8b, which would write to
 * the read-only page and fault; gcc 12, -march=i686, checked).  On 64-bit
 * CPUs it is a plain load.
 *
 * Staleness: a word may be a moment old, as everywhere; a thread that
 * exits is DEAD until freed, then its entry's gen changes.  A location
 * names a thread, not a tid: once it reads DEAD, the tid may already name
 * a new thread (pid reuse, before the dead one is freed); locate again to
 * follow the tid.  A scan of
 * every entry (no locate) may meet one tid twice for a moment (a tid
 * reused while the old thread's entry, DEAD, is not yet released, or a
 * thread that took its leader's tid in exec while the leader's entry is
 * released): the entry that is not DEAD is the live thread.  exec by a
 * non-leader thread changes that thread's tid to the process's pid
 * (de_thread()); the module updates the entry's tid, same entry and gen,
 * when the exec completes, or when the thread exits if the exec failed
 * after that change.  Until then (the rest of the exec: the new program's
 * loading) the entry shows the old tid, which may already name a new
 * thread: one tid in two entries neither of which is DEAD, for that
 * moment.
 */
#define TASKSTATE_MAP_LAYOUT	1

/* INFO's map_flags: which optional fields the module keeps current. */
#define TASKSTATE_MAP_F_TOTALS	(1U << 0)	/* start_ns and state_ns[] */

/**
 * struct taskstate_map_entry - one entry of the mapping
 * @word: the packed word, as SAMPLE returns it
 * @tid: its thread's tid in the initial pid namespace, 0 when free
 * @gen: odd while owned: see the read protocol above
 * @start_ns: with TASKSTATE_MAP_F_TOTALS, as struct taskstate_totals
 *            (zero without it)
 * @state_ns: with TASKSTATE_MAP_F_TOTALS: ns spent RUNNING, RUNNABLE,
 *            SLEEPING, BLOCKED, and in any other state, up to since(word);
 *            read by "DOC: Per-state totals"
 */
struct taskstate_map_entry {
	__aligned_u64 word;
	__u32 tid;
	__u32 gen;
	__aligned_u64 start_ns;
	__aligned_u64 state_ns[TASKSTATE_MAP_NR_TOTALS];
};

#define TASKSTATE_MAP_ENTRY_SIZE	64

#ifndef __KERNEL__
/*
 * The readers of the mapping's entries, named after the struct they read
 * (libtaskstate's taskstate_mapping_read() is built on them).  They are
 * the protocol's predicates, not library calls: 1 or 0 (and -1), not
 * -errno.
 *
 * One read of a located entry (index and gen from TASKSTATE_IOC_LOCATE)
 * by the protocol above.  Returns 1 and sets *word while the entry is
 * still that thread's, 0 once it is not (locate it again, or it is gone).
 */
static __inline__ int
taskstate_map_entry_read(const struct taskstate_map_entry *e, __u32 gen,
			 __u64 *word)
{
	__u64 w;

	if (__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) != gen)
		return 0;
	w = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen)
		return 0;
	*word = w;
	return 1;
}

/*
 * One read of a located entry's word and totals, by both protocols (the
 * mapping's and "DOC: Per-state totals"), for a module whose INFO
 * map_flags has TASKSTATE_MAP_F_TOTALS (without it the totals stay zero
 * and no read ever matches).  Returns 1 with *word and *t consistent, 0
 * once the entry is not that thread's, -1 if a change landed during the
 * read: read again.
 */
static __inline__ int
taskstate_map_entry_read_totals(const struct taskstate_map_entry *e,
				__u32 gen, __u64 *word,
				struct taskstate_totals *t)
{
	__u64 w;
	int i;

	if (__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) != gen)
		return 0;
	w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
	t->start_ns = __atomic_load_n(&e->start_ns, __ATOMIC_RELAXED);
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		t->state_ns[i] = __atomic_load_n(&e->state_ns[i],
						 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen)
		return 0;
	if (!taskstate_totals_match(w, t))
		return -1;
	*word = w;
	return 1;
}
#endif

/*
 * The size travels in the struct, not in the command number, so the
 * commands stay the same when a struct grows.
 */
#define TASKSTATE_IOC_TYPE	0xE9	/* free in ioctl-number.rst, 6.1 */
#define TASKSTATE_IOC_INFO	_IO(TASKSTATE_IOC_TYPE, 0x00)
#define TASKSTATE_IOC_TRACK	_IO(TASKSTATE_IOC_TYPE, 0x01)
#define TASKSTATE_IOC_UNTRACK	_IO(TASKSTATE_IOC_TYPE, 0x02)
#define TASKSTATE_IOC_SAMPLE	_IO(TASKSTATE_IOC_TYPE, 0x03)
#define TASKSTATE_IOC_LIST	_IO(TASKSTATE_IOC_TYPE, 0x04)
#define TASKSTATE_IOC_LOCATE	_IO(TASKSTATE_IOC_TYPE, 0x05)

/**
 * DOC: Process totals
 *
 * A process's per-state totals, as a counter that only goes down when
 * the process ends, or when the module's record of it restarts
 * (@start_ns changes): the totals of its tracked threads, and of those that
 * left it, kept by the module as the kernel keeps a dead thread's CPU
 * time in the process's signal_struct.  The module keeps them for a
 * process whose leader (the thread whose tid is the pid) is tracked:
 * every process with track_all, a process tracked with
 * TASKSTATE_TRACK_PROCESS.  A thread counts in its process's totals from
 * when its tracking begins, if its leader is tracked then (TRACK of a
 * lone thread whose leader is not tracked does not join it; the threads
 * already tracked join a leader tracked after them, alone or with
 * TASKSTATE_TRACK_PROCESS, from then, none of their past brought in):
 * every tracked thread of a process whose leader is tracked counts in
 * its record.  It counts until it leaves: when it
 * is freed after its exit, or untracked by UNTRACK while its leader
 * stays tracked.  Either way its totals, up to that moment (the time in
 * its last state included), move into @exited_ns and keep counting in
 * @state_ns: so a thread's UNTRACK does not lower its process's totals
 * either.  Tracking it again counts it again from then, as a new thread.
 *
 * The record ends, and @valid reads 0, when the leader is untracked
 * (UNTRACK of the leader or of the process); and with the process (the
 * leader freed after the last thread's exit; then its pid is ESRCH).  A
 * non-leader thread that calls exec takes its leader's pid (de_thread()):
 * the record stays the process's, across that exec as across any other,
 * if that thread is tracked (an untracked one becomes a leader that is
 * not tracked, and the record ends when the old leader is freed).
 *
 * The module counts each thread that is in the record at @now_ns once,
 * live or exited, never both, never neither: it walks the live
 * threads under the lock that moving a thread's totals takes, in chunks
 * of 256, that lock dropped in between, so that its time with interrupts
 * off does not grow with the process.  So a large process is counted up
 * to about @now_ns: a state change during the walk may count up to when
 * it happened, a thread that leaves during it is counted live up to its
 * leave, and threads that join during it are left out.  Exited threads
 * not yet freed (released, no longer listed by LIST) are still counted
 * live, up to their death:
 * the time a dead thread waits to be freed, or a zombie leader to be
 * reaped, is in no total.  So for one process
 * each @state_ns[i] never decreases from one call to the next, and
 * @now_ns neither.  (A live thread's current state is counted up to
 * @now_ns, and a change of state stamped on another CPU a moment before
 * it may land just after: the module then answers the state's last
 * answer again, until the count passes it, as the kernel keeps a
 * process's utime and stime from going back in cputime_adjust().)
 *
 * The totals are sums of thread time, and saturate: a @state_ns or
 * @exited_ns that would pass 2^64 - 1 ns (584 thread-years: 213 days of
 * a 1,000-thread process, 21 days of a 10,000-thread one) stays at
 * 2^64 - 1 for the rest of the record instead of wrapping.  A count that
 * reads 2^64 - 1 has stopped; it still never goes down, and restarts
 * with the record.
 */

/**
 * struct taskstate_process - ioctl(TASKSTATE_IOC_PROCESS)
 * @size: in: sizeof(struct taskstate_process)
 * @flags: in: must be 0
 * @pid: in: a process, in the caller's pid namespace
 * @valid: out: 1 if the module keeps this process's totals (see above),
 *         else 0 and every other out field 0
 * @now_ns: out: CLOCK_BOOTTIME time the totals are counted up to
 * @nr_threads: out: threads counted live (tracked, not freed yet, at
 *              @now_ns)
 * @nr_exited: out: threads whose totals moved into @exited_ns
 * @state_ns: out: ns the process's threads spent in each state
 *            (TASKSTATE_TOTAL_*) up to @now_ns: the live threads'
 *            totals with the time in their current state, plus
 *            @exited_ns
 * @exited_ns: out: the part of @state_ns that threads which left brought
 * @start_ns: out: CLOCK_BOOTTIME time the record began (its leader's
 *            tracking began): the counts above start from zero then.  A
 *            different @start_ns for the same pid from one call to the
 *            next means the record ended and a new one began between
 *            them (UNTRACK and TRACK of the leader): the counts
 *            restarted, as a counter does when its process restarts.
 *            Each new record's @start_ns is later than every one given
 *            before
 * @children_ns: out (version 1): ns the processes that ended as this
 *               one's children spent in each state, each with its own
 *               @children_ns, not part of @state_ns: a process is added
 *               when its last thread exits (not at its reaping, so a
 *               parent reads it before wait() returns), to the record of
 *               its parent at that moment if that is tracked and has not
 *               ended (an orphan's parent is init or a subreaper).  Left
 *               out: what its threads do after the exit tracepoint (the
 *               rest of do_exit(), on 7.x the release of the address
 *               space too), processes that ended untracked, and those
 *               whose parent was untracked or ending.  Totals of a child
 *               outside the caller's scope (a set-user-ID one) count here
 *               as wait4()'s rusage counts its CPU time
 * @nr_children: out (version 1): the processes in @children_ns
 * @parent_start_ns: out (version 1): once the process's last thread has
 *               exited, the @start_ns of the record it was added to (its
 *               parent's), else 0: a reader that collects processes
 *               itself counts one only if it was added to no record it
 *               reads
 *
 * Errors: ESRCH no such process in the caller's pid namespace;
 * EOPNOTSUPP the module keeps no totals (totals=0); EINTR a signal came
 * while waiting for another caller's PROCESS (reads are one at a time;
 * restarted after a handler installed with SA_RESTART); EAGAIN the
 * process's record changed hands or began again (exec by a non-leader
 * thread, UNTRACK and TRACK of its leader) so often during one read
 * that it gave up after 4 restarts: try again.
 */
struct taskstate_process {
	__u32 size;
	__u32 flags;
	__u32 pid;
	__u32 valid;
	__aligned_u64 now_ns;
	__aligned_u64 nr_threads;
	__aligned_u64 nr_exited;
	__aligned_u64 state_ns[TASKSTATE_MAP_NR_TOTALS];
	__aligned_u64 exited_ns[TASKSTATE_MAP_NR_TOTALS];
	__aligned_u64 start_ns;
	__aligned_u64 children_ns[TASKSTATE_MAP_NR_TOTALS];
	__aligned_u64 nr_children;
	__aligned_u64 parent_start_ns;
};

#define TASKSTATE_PROCESS_SIZE_VER0	128
#define TASKSTATE_PROCESS_SIZE_VER1	184	/* children_ns ... parent_start_ns */

#define TASKSTATE_IOC_PROCESS	_IO(TASKSTATE_IOC_TYPE, 0x06)

/**
 * DOC: Thread exits
 *
 * A thread's totals as it exits, for a reader that itemizes where each
 * thread's time went, complete to its end (`taskstate run --per-thread`),
 * whatever reaps it.  TRACK with TASKSTATE_TRACK_PROCESS |
 * TASKSTATE_TRACK_EXITS gives the descriptor a log (once, about 20 KiB,
 * charged to the caller's memory cgroup) and points the process's record
 * ("DOC: Process totals") at it: from then, each of the process's tracked
 * threads writes one struct taskstate_exit there when it exits (at the
 * sched_process_exit tracepoint: what it does after it, the rest of
 * do_exit(), is left out, as from @children_ns).  A process it starts
 * while tracked logs to the same descriptor, and so do its own children;
 * through a scoped descriptor only while they are in its scope (a
 * set-user-ID exec stops a process's logging, and a thread whose ids are
 * not the opener's logs nothing).  A process logs to one descriptor at a
 * time.  Its logging ends with its record, and with the descriptor (its
 * last holder's close).  A thread untracked before its exit logs
 * nothing: its time is in its process's totals only.
 *
 * TASKSTATE_IOC_EXITS takes the oldest entries out of the log.  The log
 * holds TASKSTATE_EXITS_LOG entries; a thread that exits when it is full
 * is not logged, only counted (@lost): read it more often than that many
 * threads end.
 */

#define TASKSTATE_EXITS_LOG	256

/**
 * struct taskstate_exit - one thread's exit, in TASKSTATE_IOC_EXITS
 * @tid: the thread, in the pid namespace of the caller of the TRACK that
 *       made the log (0 if it has none there)
 * @tgid: its process, likewise
 * @proc_start_ns: the @start_ns of its process's record (PROCESS's)
 * @since_ns: CLOCK_BOOTTIME time it began counting in that record
 * @state_ns: ns it spent in each state (TASKSTATE_TOTAL_*) from
 *            @since_ns to its exit: its part of the process's totals
 * @comm: its name at its exit, NUL-terminated
 */
struct taskstate_exit {
	__u32 tid;
	__u32 tgid;
	__aligned_u64 proc_start_ns;
	__aligned_u64 since_ns;
	__aligned_u64 state_ns[TASKSTATE_MAP_NR_TOTALS];
	char comm[16];
};

/**
 * struct taskstate_exits - ioctl(TASKSTATE_IOC_EXITS)
 * @size: in: sizeof(struct taskstate_exits)
 * @flags: in: must be 0
 * @count: in: room at @exits, in entries (0: none taken, @lost read);
 *         out: entries written there, oldest first, and taken out of the
 *         log
 * @__pad: in: must be 0
 * @exits: in: user pointer to @count struct taskstate_exit
 * @lost: out: threads that exited with the log full since the last call
 *
 * A descriptor with no log (no TRACK with TASKSTATE_TRACK_EXITS) answers
 * @count 0.  Errors: EFAULT @exits cannot be written: the entries it
 * took count in the next call's @lost (as does this call's @lost), or
 * the argument itself cannot be written back: then they are gone;
 * ENOMEM no memory for the copy.
 *
 * A thread made non-dumpable by PR_SET_DUMPABLE alone (no exec) still
 * logs to a scoped descriptor, as its entry stays in the scoped mapping.
 */
struct taskstate_exits {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 __pad;
	__aligned_u64 exits;
	__aligned_u64 lost;
};

#define TASKSTATE_EXITS_SIZE_VER0	32

#define TASKSTATE_IOC_EXITS	_IO(TASKSTATE_IOC_TYPE, 0x07)

#endif /* _UAPI_LINUX_TASKSTATE_H */
