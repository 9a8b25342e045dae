// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/taskstate: the table for people and shell scripts.
 *
 * Read-only (0400) with no ioctl and no mmap, so it stays readable under
 * kernel lockdown, where debugfs refuses to open anything else.  Each read
 * shows the tracked threads visible in the reader's pid namespace, with
 * the tids that namespace gives them, and the per-state totals up to the
 * read (RUN_NS ... OTHER_NS, "-" with totals=0).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/pid_namespace.h>
#include <linux/seq_file.h>
#include "readers.h"
#include "table.h"

static struct dentry *ts_debugfs;

/*
 * Position 0 is the header, position n + 1 is slot n: the header must
 * come from ->show(), or it is lost when there is no slot.  Slot n is
 * passed as n + 2, clear of NULL and SEQ_START_TOKEN (1).
 */
static void *ts_seq_pos(loff_t pos)
{
	if (!pos)
		return SEQ_START_TOKEN;
	return pos <= ts_slots_used() ? (void *)(uintptr_t)(pos + 1) : NULL;
}

static void *ts_seq_start(struct seq_file *m, loff_t *pos)
{
	return ts_seq_pos(*pos);
}

/*
 * One read() fills a page, which can take the whole table when the slots
 * are empty or not visible in the reader's pid namespace: let others run
 * every 1024 slots.  No lock is held between ->start() and ->stop().
 */
static void *ts_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	if (!(*pos % 1024))
		cond_resched();
	return ts_seq_pos(++*pos);
}

static void ts_seq_stop(struct seq_file *m, void *v)
{
}

/*
 * Indexed by a word's 3-bit state: every value has a name, the uapi
 * header's (TASKSTATE_STATE_NAMES).
 */
static const char *const ts_state_names[TASKSTATE_NR_STATES] =
	TASKSTATE_STATE_NAMES;

static int ts_seq_show(struct seq_file *m, void *v)
{
	unsigned int i, state;
	struct ts_view view;
	u64 now, age;

	if (v == SEQ_START_TOKEN) {
		seq_printf(m, "%7s %7s %-8s %20s %20s %16s %16s %16s %16s %16s %s\n",
			   "TID", "TGID", "STATE", "SINCE_NS", "AGE_NS",
			   "RUN_NS", "WAIT_NS", "SLEEP_NS", "BLOCK_NS",
			   "OTHER_NS", "COMM");
		return 0;
	}
	if (!ts_view_slot((uintptr_t)v - 2, task_active_pid_ns(current),
			  &view, NULL))
		return 0;
	now = ktime_get_boot_fast_ns();
	age = taskstate_age_ns(view.word, now);
	seq_printf(m, "%7d %7d %-8s %20llu %20llu", view.tid, view.tgid,
		   ts_state_names[taskstate_state(view.word)],
		   taskstate_since_ns(view.word), age);
	/*
	 * The totals up to now: the current state's time added to its own,
	 * but a dead thread's, which counts in none (uapi: "DOC: Per-state
	 * totals").
	 */
	state = taskstate_state(view.word);
	if (view.word && state != TASKSTATE_DEAD)
		view.totals.state_ns[taskstate_total_of(state)] += age;
	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++) {
		if (ts_totals)
			seq_printf(m, " %16llu", view.totals.state_ns[i]);
		else
			seq_printf(m, " %16s", "-");
	}
	seq_printf(m, " %s\n", view.comm);
	return 0;
}

static const struct seq_operations ts_seq_sops = {
	.start = ts_seq_start,
	.next = ts_seq_next,
	.stop = ts_seq_stop,
	.show = ts_seq_show,
};
DEFINE_SEQ_ATTRIBUTE(ts_seq);

/**
 * ts_debugfs_init() - create /sys/kernel/debug/taskstate
 *
 * As elsewhere in the kernel, debugfs trouble is not fatal: the device
 * still works, and the log says why the table is missing.
 *
 * Context: module load; may sleep.
 */
void ts_debugfs_init(void)
{
	ts_debugfs = debugfs_create_file(KBUILD_MODNAME, 0400, NULL, NULL,
					 &ts_seq_fops);
	if (IS_ERR(ts_debugfs))
		pr_warn("no debugfs table: %ld\n", PTR_ERR(ts_debugfs));
}

/**
 * ts_debugfs_exit() - remove /sys/kernel/debug/taskstate
 *
 * Waits for readers inside a read; open files keep the module pinned.
 *
 * Context: module unload; may sleep.
 */
void ts_debugfs_exit(void)
{
	debugfs_remove(ts_debugfs);
}
