// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate: one packed 64-bit word per tracked thread, its scheduling
 * state and the time of its last change, kept current by the scheduler's
 * tracepoints and read without locks.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/namei.h>
#include <linux/rcupdate.h>
#include <linux/timekeeping.h>
#include "hooks.h"
#include "probes.h"
#include "readers.h"
#include "table.h"

#define TS_MIN_THREADS	64
#define TS_MAX_THREADS	TASKSTATE_LIST_MAX

static unsigned int max_threads = 32768;
module_param(max_threads, uint, 0444);
MODULE_PARM_DESC(max_threads,
		 "Most threads tracked at once, 64..4194304 (default 32768); about 440 bytes each on 64-bit. Threads beyond it go untracked and are counted.");

static bool track_all = true;
module_param(track_all, bool, 0444);
MODULE_PARM_DESC(track_all,
		 "Track every thread: existing ones at load, new ones at fork (default 1). With 0, only threads and processes added through /dev/taskstate are tracked.");

/*
 * Fixed before the probes are registered, which test it as a static key
 * (ts_totals_key, set from this by ts_probes_init()); the readers and the
 * snapshot test the bool (entry.h).
 */
bool ts_totals __read_mostly = true;
module_param_named(totals, ts_totals, bool, 0444);
MODULE_PARM_DESC(totals,
		 "Keep per-state cumulative time for every tracked thread (default 1): debugfs columns, SAMPLE/LIST totals, the mapping's state_ns[].");

/*
 * Never both backends at once: the BPF backend (bpf/, `taskstate bpf
 * load`) pins itself under this path, and its loader refuses while this
 * module is loaded; this refuses while it is.  The path is the contract:
 * a BPF filesystem mounted elsewhere is not seen.
 */
static bool __init ts_bpf_backend_loaded(void)
{
	struct path path;

	if (kern_path("/sys/fs/bpf/taskstate", LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
}

static int __init taskstate_init(void)
{
	u64 probes_since;
	int ret;

	if (ts_bpf_backend_loaded()) {
		pr_err("the BPF backend is loaded (/sys/fs/bpf/taskstate): taskstate bpf unload first\n");
		return -EBUSY;
	}

	if (max_threads < TS_MIN_THREADS || max_threads > TS_MAX_THREADS) {
		pr_err("max_threads=%u is outside %u..%u\n", max_threads,
		       TS_MIN_THREADS, TS_MAX_THREADS);
		return -EINVAL;
	}
	ret = ts_table_init(max_threads);
	if (ret)
		return ret;
	probes_since = ktime_get_ns();
	ret = ts_probes_init(track_all);
	if (ret)
		goto out_table;
	if (track_all)
		ts_track_existing(probes_since);
	ts_hook_loaded();
	ts_debugfs_init();
	ret = ts_dev_init(track_all);
	if (ret)
		goto out_debugfs;
	return 0;

out_debugfs:
	ts_debugfs_exit();
	ts_probes_exit();
out_table:
	ts_table_exit();
	return ret;
}

static void __exit taskstate_exit(void)
{
	ts_dev_exit();
	ts_debugfs_exit();
	ts_probes_exit();
	ts_table_exit();
}

module_init(taskstate_init);
module_exit(taskstate_exit);

MODULE_DESCRIPTION("Per-thread scheduling state and time in one packed word");
MODULE_AUTHOR("The taskstate developers");
MODULE_LICENSE("GPL");
