/* SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0 */
/*
 * The BPF backend's objects as its three users see them: the program
 * (bpf/taskstate.bpf.c), its loader (bpf/loader.c, `taskstate bpf`) and the
 * library (lib/bpf.c), which reads the pinned maps with bare bpf(2)
 * calls.  Plain C types only: the BPF side has no libc.
 */
#ifndef TASKSTATE_BPF_H
#define TASKSTATE_BPF_H

/* Where the loader pins everything: a directory of the BPF filesystem. */
#define TS_BPF_PIN_DIR		"/sys/fs/bpf/taskstate"

/*
 * The maps, by pinned name (TS_BPF_PIN_DIR "/" name):
 *  entries  BPF_F_MMAPABLE array of struct taskstate_map_entry, the
 *           mapping of the uapi header, index for index
 *  hints    BPF_F_MMAPABLE array of __u32 indexed by tid: the entry
 *           index + 1 of the thread that last took that tid, 0 if none;
 *           a hint only, which owners[] confirms (readers: the entry's tid
 *           and gen)
 *  tgids    BPF_F_MMAPABLE array of __u32 indexed like entries: the
 *           owner's tgid, written before the entry's gen turns odd
 *  owners   array of __u64 indexed like entries: the task_struct address
 *           of the entry's owner, 0 while free (root-only: an address)
 *  tasks    hash from a task_struct address to its entry index, to
 *           give the entry back when the task is freed, whatever its tid
 *           is by then (root-only)
 *  spare    stack of the free entry indices
 *  recs     BPF_F_MMAPABLE array of struct ts_bpf_rec indexed like
 *           entries: a process's record, at its leader's entry
 *  membs    BPF_F_MMAPABLE array of struct ts_bpf_memb indexed like
 *           entries: the record each thread counts in
 *  config   array of one struct ts_bpf_config
 *  stats    per-CPU array of __u64 counters, TS_BPF_STAT_*
 */
#define TS_BPF_ENTRIES		"entries"
#define TS_BPF_HINTS		"hints"
#define TS_BPF_TGIDS		"tgids"
#define TS_BPF_OWNERS		"owners"
#define TS_BPF_TASKS		"tasks"
#define TS_BPF_SPARE		"spare"
#define TS_BPF_CONFIG		"config"
#define TS_BPF_RECS		"recs"
#define TS_BPF_MEMBS		"membs"
#define TS_BPF_STATS		"stats"

/*
 * A mapped array's elements are 8 bytes apart even when their value is a
 * __u32: 6.1 kernel/bpf/arraymap.c, elem_size = round_up(value_size, 8).
 * Readers of hints and tgids index with this stride.
 */
#define TS_BPF_ARRAY_STRIDE	8

/* What the loader decided, for `taskstate bpf status` and the library. */
struct ts_bpf_config {
	__u32 max_threads;	/* entries */
	__u32 max_tid;		/* hints: threads with a tid below it */
	__u64 loaded_ns;	/* CLOCK_BOOTTIME of the snapshot */
	__u32 track_all;	/* every thread (1), or what TRACK asks (0) */
	__u32 __pad;
};

/*
 * A process's record (uapi "DOC: Process totals"), at its leader's entry
 * index in recs, valid while start_ns is above 2 (0: none, 1: being
 * made).  Its threads count in it
 * through their membs element (below).  A thread leaving it (its exit,
 * its free, its UNTRACK) folds its totals into exited_ns: folds_begun is
 * bumped before, folds_done after, so that a reader that sees them equal
 * before it reads, and folds_begun unchanged after, counted every thread
 * once, live or exited (lib/bpf.c).  Written by the programs alone;
 * readers map it read-only.
 */
/* Not a record's start: one being made, a thread joining one. */
#define TS_REC_MAKING		1
#define TS_MEMB_JOINING		2

struct ts_bpf_rec {
	__u64 start_ns;		/* uapi start_ns; 0: no record here */
	__u64 folds_begun;
	__u64 folds_done;
	__u64 members;		/* threads counting in it, not folded yet */
	__u64 nr_exited;
	__u64 exited_ns[TASKSTATE_MAP_NR_TOTALS];
	__u64 children_ns[TASKSTATE_MAP_NR_TOTALS];
	__u64 nr_children;
	__u64 parent_start_ns;
	__u64 ended;		/* its last thread exited: added to its parent */
};

/*
 * The record a thread counts in: the one at index rec, while its
 * start_ns is still rec_start (0: none, 2: joining one); the thread's totals less base_ns
 * (what they held when it joined, at join_ns, and the time before then
 * that a first word dated back put in them) are its part.
 */
struct ts_bpf_memb {
	__u64 rec_start;
	__u32 rec;
	__u32 __pad;
	__u64 join_ns;
	__u64 base_ns[TASKSTATE_MAP_NR_TOTALS];
};

/*
 * The iter/task programs TRACK and UNTRACK run, pinned as
 * TS_BPF_PIN_DIR "/progs/" name (taskstate.bpf.c says what each pass
 * does), one call at a time: the caller holds flock(LOCK_EX) on
 * TS_BPF_PIN_DIR.  Each writes a byte per thread it changed: 't' given
 * (or already had) an entry, 'F' not (full, or its tid too large), 'u'
 * left.  After TRACK's two passes, ts_join makes the records of the
 * leaders it passes and joins the threads to them (writes nothing).
 */
/*
 * The tracepoint programs, pinned there too, in the order they are
 * attached (an entry given out must be given back: the free first, then
 * the claims, then the events); their links are pinned as
 * TS_BPF_PIN_DIR "/links/" name.  With track_all 0 they are attached by
 * the first TRACK and detached by the UNTRACK that leaves no entry taken
 * (lib/bpf.c): nothing runs in the scheduler while nothing is tracked.
 */
#define TS_BPF_PROBES { "ts_free", "ts_exec", "ts_exit", "ts_newtask",	\
			"ts_wakeup_new", "ts_wakeup", "ts_switch" }
#define TS_BPF_NR_PROBES	7

#define TS_BPF_PROG_CLAIM_ONE	"ts_claim_one"
#define TS_BPF_PROG_CLAIM_KIN	"ts_claim_kin"
#define TS_BPF_PROG_FIRST_WORD	"ts_first_word"
#define TS_BPF_PROG_LEAVE	"ts_leave"
#define TS_BPF_PROG_UNTRACK	"ts_untrack"
#define TS_BPF_PROG_JOIN	"ts_join"

/*
 * Counters, summed over the CPUs by `taskstate bpf status`.  A thread is
 * not tracked when every entry is taken (full) or when its tid is not
 * below max_tid (tid).  locked: threads whose entry could not be recorded
 * in tasks (an NMI inside another update of it on their CPU), given back
 * through their tid instead.  tracked and freed count entries given and
 * given back.
 */
enum {
	TS_BPF_STAT_FULL,
	TS_BPF_STAT_TID,
	TS_BPF_STAT_LOCKED,
	TS_BPF_STAT_TRACKED,
	TS_BPF_STAT_FREED,
	TS_BPF_NR_STATS,
};

#define TS_BPF_STAT_NAMES {						\
	[TS_BPF_STAT_FULL] = "full",		[TS_BPF_STAT_TID] = "tid",	\
	[TS_BPF_STAT_LOCKED] = "locked",	[TS_BPF_STAT_TRACKED] = "tracked", \
	[TS_BPF_STAT_FREED] = "freed",					\
}

#endif /* TASKSTATE_BPF_H */
