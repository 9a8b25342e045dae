/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fault-injection build of taskstate (fi/taskstate.ko, for the tests
 * only): Kbuild forces this header in before every file of the module
 * when TS_FAULT_INJECT is set, and links fault.c in.  It defines the
 * hooks of module/hooks.h that widen a race window or take an error path
 * on demand, each driven by a module parameter of taskstate:
 *
 *  - snapshot_delay_ms: TRACK sleeps between its grace period and its
 *    snapshot (ts_attach: the snapshot leaves a younger slot alone);
 *  - newtask_delay_us: the task_newtask probe busy-waits between its
 *    look at the parent's slot and the child's insert (run_vm.sh: an
 *    UNTRACK racing clone());
 *  - map_enodev: mmap() fails with ENODEV, as where user space cannot
 *    load a word whole (ts_mmap: the errno, and the ioctls still work);
 *  - proc_exited_start_ns: each new process record starts its exited
 *    totals there instead of 0 (ts_proc: the sums saturate at the edge).
 */
#ifndef TASKSTATE_FAULT_H
#define TASKSTATE_FAULT_H

#include <linux/types.h>

unsigned int ts_fault_snapshot_delay(void);
void ts_fault_sleep(unsigned int ms);
void ts_fault_newtask_delay(void);
bool ts_fault_map_enodev(void);
void ts_fault_proc_start(u64 *exited_ns);
void ts_fault_proc_hold_begin(void);
void ts_fault_proc_hold_end(unsigned int nr);

#define ts_hook_track_hold()		ts_fault_snapshot_delay()
#define ts_hook_track_wait(ms)		ts_fault_sleep(ms)
#define ts_hook_newtask()		ts_fault_newtask_delay()
#define ts_hook_map_refused()		ts_fault_map_enodev()
#define ts_hook_proc_start(exited_ns)	ts_fault_proc_start(exited_ns)
#define ts_hook_proc_hold_begin()	ts_fault_proc_hold_begin()
#define ts_hook_proc_hold_end(nr)	ts_fault_proc_hold_end(nr)

#endif /* TASKSTATE_FAULT_H */
