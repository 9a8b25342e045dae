/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The points where a test or benchmark build reaches into the module, and
 * nothing else: in the product each hook is empty.  Kbuild forces a build
 * variant's header in before every file, which defines the hooks it uses:
 *
 *  - TS_FAULT_INJECT: selftests/taskstate/fault/fault.h (fi/taskstate.ko);
 *  - TS_BENCH: bench/kmod/bench.h, the probe microbenchmark.
 *
 * A third variant, TS_WRITE_SCHEME (bench/kmod/word.h), replaces the word
 * itself: module/word.h includes it in place of its own.
 */
#ifndef TASKSTATE_HOOKS_H
#define TASKSTATE_HOOKS_H

/* TRACK's start: a test build's hold before the snapshot, in ms. */
#ifndef ts_hook_track_hold
#define ts_hook_track_hold()		0U
#endif

/* TRACK, between its grace period and its snapshot: hold @ms. */
#ifndef ts_hook_track_wait
#define ts_hook_track_wait(ms)		((void)(ms))
#endif

/* The newtask probe, between its look at the parent and the insert. */
#ifndef ts_hook_newtask
#define ts_hook_newtask()		do { } while (0)
#endif

/*
 * A process record's start, its exited_ns[] zeroed: a test build may
 * start them elsewhere (near the edge where the sums saturate).
 */
#ifndef ts_hook_proc_start
#define ts_hook_proc_start(exited_ns)	((void)(exited_ns))
#endif

/*
 * PROCESS's walk (ts_proc_read()): ts_lock just taken, and about to be
 * dropped after counting @nr threads in that hold; for a test build to
 * time the holds.  Under ts_lock, interrupts off.
 */
#ifndef ts_hook_proc_hold_begin
#define ts_hook_proc_hold_begin()	do { } while (0)
#endif
#ifndef ts_hook_proc_hold_end
#define ts_hook_proc_hold_end(nr)	((void)(nr))
#endif

/* mmap(): refuse the mapping (ENODEV) now. */
#ifndef ts_hook_map_refused
#define ts_hook_map_refused()		false
#endif

/*
 * 1 in a build whose entry is not the uapi's (a seqcount word): mmap()
 * always fails with ENODEV, and the layout checks do not apply.
 */
#ifndef TS_HOOK_ENTRY_UNMAPPED
#define TS_HOOK_ENTRY_UNMAPPED		0
#endif

/* ts_probes_init(): the sched_switch probe, for a benchmark to call. */
#ifndef ts_hook_switch_probe
#define ts_hook_switch_probe(probe)	do { } while (0)
#endif

/* Load done, every existing thread tracked (track_all). */
#ifndef ts_hook_loaded
#define ts_hook_loaded()		do { } while (0)
#endif

#endif /* TASKSTATE_HOOKS_H */
