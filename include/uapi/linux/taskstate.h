/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * taskstate: one packed 64-bit word per tracked thread, holding its
 * scheduling state and the CLOCK_BOOTTIME time of its last state change.
 *
 * The word:
 *   bits 63..61  state (enum-like TASKSTATE_* values below)
 *   bits 60..0   CLOCK_BOOTTIME nanoseconds of the last state change,
 *                modulo 2^61 (about 73 years; see taskstate_age_ns())
 *
 * The device /dev/taskstate answers the ioctls below.  Every argument
 * struct starts with its own size so it can grow: a caller passes the
 * size it was built with, the kernel accepts any size from the first
 * version's (TASKSTATE_*_SIZE_VER0) up, rejects a larger struct whose
 * unknown tail is not zero with E2BIG, and writes back at most the size
 * passed in.  Fields marked "in" are read, "out" are written; flags and
 * padding marked "in" must be zero.
 *
 * Privilege is checked when the device is opened (CAP_PERFMON or
 * CAP_SYS_ADMIN); the descriptor is then the capability, as with perf
 * events: every ioctl, TRACK and UNTRACK included, works for whoever
 * holds it (inherited, or passed with SCM_RIGHTS), with tids resolved in
 * the caller's pid namespace.  A 64-bit pointer field that a 32-bit
 * kernel cannot address (bits above 31 set) is refused with EFAULT.
 */
#ifndef _UAPI_LINUX_TASKSTATE_H
#define _UAPI_LINUX_TASKSTATE_H

#include <linux/ioctl.h>
#include <linux/types.h>

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

static __inline__ const char *taskstate_state_name(unsigned int state)
{
	static const char *const names[TASKSTATE_NR_STATES] = {
		"NONE", "RUNNING", "RUNNABLE", "SLEEPING",
		"BLOCKED", "STOPPED", "TRACED", "DEAD",
	};

	return state < TASKSTATE_NR_STATES ? names[state] : "?";
}

/*
 * The largest count TASKSTATE_IOC_SAMPLE accepts, and the largest
 * TASKSTATE_IOC_LIST accepts: the most threads the module can track (its
 * max_threads parameter is at most this).
 */
#define TASKSTATE_BATCH_MAX	65536
#define TASKSTATE_LIST_MAX	4194304

/* TASKSTATE_IOC_INFO: what the running module is and holds. */
struct taskstate_info {
	__u32 size;		/* in: sizeof(struct taskstate_info) */
	__u32 flags;		/* in: 0 */
	__u32 abi_version;	/* out: TASKSTATE_ABI_VERSION */
	__u32 state_shift;	/* out: TASKSTATE_STATE_SHIFT */
	__u32 time_bits;	/* out: TASKSTATE_TIME_BITS */
	__u32 clock_id;		/* out: CLOCK_BOOTTIME (7) */
	__u32 max_threads;	/* out: table capacity (module parameter) */
	__u32 batch_max;	/* out: TASKSTATE_BATCH_MAX */
	__u32 track_all;	/* out: the track_all module parameter */
	__u32 __pad;		/* out: 0 */
	__u64 nr_tracked;	/* out: threads tracked now */
	__u64 nr_untracked;	/* out: threads left untracked, table full */
};

/*
 * nr_tracked and nr_untracked are system-wide, also for a caller in a
 * child pid namespace.  nr_untracked counts, since load, the threads the
 * module should have tracked on its own (existing at load with track_all,
 * or created by a thread tracked with inheritance) but had no room for;
 * a TRACK refused with ENOSPC is not counted.
 */

#define TASKSTATE_INFO_SIZE_VER0	56

/*
 * TASKSTATE_IOC_TRACK and TASKSTATE_IOC_UNTRACK: id is a tid in the
 * caller's pid namespace, or with TASKSTATE_TRACK_PROCESS a pid: the whole
 * process, its future threads and children.
 */
#define TASKSTATE_TRACK_PROCESS	(1U << 0)

struct taskstate_track {
	__u32 size;		/* in: sizeof(struct taskstate_track) */
	__u32 flags;		/* in: 0 or TASKSTATE_TRACK_PROCESS */
	__u32 id;		/* in: tid, or pid with _PROCESS */
	__u32 __pad;		/* in: 0 */
	__u64 nr_threads;	/* out: threads (un)tracked by this call */
};

#define TASKSTATE_TRACK_SIZE_VER0	24

/* One thread in TASKSTATE_IOC_SAMPLE and TASKSTATE_IOC_LIST. */
struct taskstate_entry {
	__u32 tid;		/* SAMPLE: in; LIST: out */
	__u32 tgid;		/* out: its process, 0 if not found */
	__u64 word;		/* out: its word, 0 (NONE) if not found */
};

/*
 * TASKSTATE_IOC_SAMPLE: the words of many threads at once.  A tid that is
 * unknown, gone or untracked is answered with word 0 (NONE) and tgid 0;
 * it does not fail the call.  Returns the number of threads found.
 */
struct taskstate_sample {
	__u32 size;		/* in: sizeof(struct taskstate_sample) */
	__u32 flags;		/* in: 0 */
	__u32 count;		/* in: entries, at most TASKSTATE_BATCH_MAX */
	__u32 found;		/* out: entries answered with a word */
	__u64 entries;		/* in: pointer to struct taskstate_entry[] */
};

#define TASKSTATE_SAMPLE_SIZE_VER0	24

/*
 * TASKSTATE_IOC_LIST: every tracked thread visible in the caller's pid
 * namespace (or only process pid's threads) with its word.  Fills at most
 * count entries; total says how many there were, so a caller whose buffer
 * was too small can retry with a larger one.  Returns filled.
 */
struct taskstate_list {
	__u32 size;		/* in: sizeof(struct taskstate_list) */
	__u32 flags;		/* in: 0 */
	__u32 pid;		/* in: 0 for all, else only this process */
	__u32 count;		/* in: capacity of entries, <= LIST_MAX */
	__u64 entries;		/* in: pointer to struct taskstate_entry[] */
	__u32 filled;		/* out: entries written */
	__u32 total;		/* out: matching tracked threads */
};

#define TASKSTATE_LIST_SIZE_VER0	32

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

#endif /* _UAPI_LINUX_TASKSTATE_H */
