// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/taskstate: the ioctl ABI of include/uapi/linux/taskstate.h.
 *
 * Per-switch timestamps are a timing side channel, and
 * ptrace_may_access() is not exported to modules, so opening the device
 * needs CAP_PERFMON or CAP_SYS_ADMIN in the initial user namespace (the
 * same bar as system-wide perf).  The file mode lets anyone try.  Tids are
 * the caller's: they are resolved in its pid namespace, and threads
 * outside it cannot be named.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/moduleparam.h>
#include <linux/pid_namespace.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include <linux/uaccess.h>
#include "probes.h"
#include "readers.h"
#include "table.h"

/* Entries handled per copy in and out; 512 bytes of stack. */
#define TS_CHUNK	32

static bool ts_dev_track_all;

#ifdef TS_FAULT_INJECT
/*
 * Fault-injection builds only: hold TRACK between its grace period and
 * its snapshot, so that a test can untrack and track the thread again
 * meanwhile and see that the snapshot leaves the younger slot alone.
 */
#include <linux/delay.h>

static unsigned int snapshot_delay_ms;
module_param(snapshot_delay_ms, uint, 0644);
MODULE_PARM_DESC(snapshot_delay_ms, "Fault-injection build: TRACK sleeps this long (ms, at most 10000, as set when the call began) between its grace period and its snapshot");

static unsigned int ts_fault_snapshot_delay(void)
{
	return min(READ_ONCE(snapshot_delay_ms), 10000U);
}

static void ts_fault_sleep(unsigned int ms)
{
	if (ms)
		msleep(ms);
}
#else
static inline unsigned int ts_fault_snapshot_delay(void)
{
	return 0;
}

static inline void ts_fault_sleep(unsigned int ms)
{
}
#endif

/*
 * Read an argument struct that starts with its own size: accept any size
 * from the first version's up (copy_struct_from_user() zero-fills a short
 * one and wants the unknown tail of a long one zero).  Returns the user's
 * size, to write back no more than that.
 */
long ts_get_args(void *karg, size_t ksize, size_t ver0, void __user *uarg)
{
	u32 usize;
	int ret;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	if (usize < ver0)
		return -EINVAL;
	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	if (ret)
		return ret;
	return usize;
}

int ts_put_args(void __user *uarg, const void *karg, size_t ksize,
		size_t usize)
{
	return copy_to_user(uarg, karg, min(ksize, usize)) ? -EFAULT : 0;
}

/*
 * current's time namespace's CLOCK_BOOTTIME offset, in ns: what its
 * clock_gettime(CLOCK_BOOTTIME) reads minus the host's (the words' clock).
 * timens_add_boottime() (5.6 and later, an inline reading
 * current->nsproxy->time_ns; without CONFIG_TIME_NS it adds nothing).
 */
static s64 ts_boottime_offset_ns(void)
{
	struct timespec64 ts = { 0, 0 };

	timens_add_boottime(&ts);
	return timespec64_to_ns(&ts);
}

static long ts_ioctl_info(void __user *uarg)
{
	struct taskstate_info info;
	long usize;

	usize = ts_get_args(&info, sizeof(info), TASKSTATE_INFO_SIZE_VER0,
			    uarg);
	if (usize < 0)
		return usize;
	if (info.flags)
		return -EINVAL;
	info = (struct taskstate_info) {
		.size = usize,
		.abi_version = TASKSTATE_ABI_VERSION,
		.state_shift = TASKSTATE_STATE_SHIFT,
		.time_bits = TASKSTATE_TIME_BITS,
		.clock_id = CLOCK_BOOTTIME,
		.max_threads = ts_nr_slots,
		.batch_max = TASKSTATE_BATCH_MAX,
		.track_all = ts_dev_track_all,
		.nr_tracked = READ_ONCE(ts_nr_tracked),
		.nr_untracked = atomic_long_read(&ts_nr_untracked),
	};
	ts_map_info(&info);
	info.boottime_offset_ns = ts_boottime_offset_ns();
	return ts_put_args(uarg, &info, sizeof(info), usize);
}

/* The thread, or with @process the process, that @id names for current. */
static struct task_struct *ts_find(u32 id, bool process)
{
	if (!id || id > PID_MAX_LIMIT)
		return NULL;
	return pid_task(find_vpid(id), process ? PIDTYPE_TGID : PIDTYPE_PID);
}

/*
 * (Un)track @p, or with @process every thread of it, with inheritance so
 * the task_newtask probe adds their new threads and children.  Under
 * rcu_read_lock(), in the section that found @p, which is what makes
 * inserting it safe (see ts_track()).  A thread created during the walk
 * is seen either by the walk or by the probe: ts_track() explains how.
 */
static int ts_apply(struct task_struct *p, bool process, bool track,
		    u64 *nr)
{
	struct task_struct *t;
	int ret;

	if (!process) {
		if (!track) {
			*nr = ts_untrack(p);
			return 0;
		}
		ret = ts_track(p, 0);
		*nr = !ret;
		return ret;
	}
	/* The leader first: its slot holds the record the others join. */
	if (track) {
		ret = ts_track(p, TS_SLOT_INHERIT);
		if (ret)
			return ret;
		++*nr;
	}
	for_each_thread(p, t) {
		if (!track) {
			*nr += ts_untrack(t);
			continue;
		}
		if (t == p)
			continue;
		ret = ts_track(t, TS_SLOT_INHERIT);
		if (ret)
			return ret;
		++*nr;
	}
	return 0;
}

/*
 * TRACK and UNTRACK.  Tracking attaches the probes if they are not
 * (ts_probes_get()), publishes the slots, waits a grace period, then
 * gives the threads their current state (ts_snapshot()).  Untracking the
 * last tracked thread detaches them.  A table
 * that fills up part way leaves the threads tracked so far tracked, and
 * the call fails with ENOSPC.
 */
static long ts_ioctl_track(void __user *uarg, bool track)
{
	struct taskstate_track args;
	unsigned int delay_ms = ts_fault_snapshot_delay();
	struct task_struct *p, *t;
	bool process;
	long usize;
	int ret = 0;

	usize = ts_get_args(&args, sizeof(args), TASKSTATE_TRACK_SIZE_VER0,
			    uarg);
	if (usize < 0)
		return usize;
	if ((args.flags & ~TASKSTATE_TRACK_PROCESS) || args.__pad)
		return -EINVAL;
	process = args.flags & TASKSTATE_TRACK_PROCESS;
	args.nr_threads = 0;

	/* The probes first: every slot must have its free probe. */
	if (track) {
		ret = ts_probes_get();
		if (ret)
			return ret;
	}
	rcu_read_lock();
	p = ts_find(args.id, process);
	if (p) {
		ret = ts_apply(p, process, track, &args.nr_threads);
		get_task_struct(p);
	}
	rcu_read_unlock();
	if (track)
		ts_probes_put();
	else
		ts_probes_idle();
	if (!p)
		return -ESRCH;

	if (track) {
		u64 upto = ts_inserts_now();

		synchronize_rcu();
		ts_fault_sleep(delay_ms);
		rcu_read_lock();
		if (process)
			for_each_thread(p, t)
				ts_snapshot(t, upto);
		else
			ts_snapshot(p, upto);
		rcu_read_unlock();
	}
	put_task_struct(p);
	if (ret)
		return ret;
	return ts_put_args(uarg, &args, sizeof(args), usize);
}

/*
 * The slot of the thread @e->tid names in pid namespace @ns (the
 * caller's), with its tgid there in @e; NULL if none.  Under
 * rcu_read_lock(): the task cannot be freed, and a slot found for it
 * cannot be reused by another thread.  @ns is resolved once per call:
 * find_vpid() and task_tgid_vnr() would look it up again for every tid.
 */
static struct ts_slot *ts_sample_find(struct taskstate_entry *e,
				      struct pid_namespace *ns)
{
	struct task_struct *t;
	struct ts_slot *s;

	e->tgid = 0;
	e->word = 0;
	if (!e->tid || e->tid > PID_MAX_LIMIT)
		return NULL;
	t = pid_task(find_pid_ns(e->tid, ns), PIDTYPE_PID);
	if (!t)
		return NULL;
	s = ts_lookup(t);
	if (!s)
		return NULL;
	/*
	 * 0 while the last thread of a group is being released:
	 * __unhash_process() detaches its PID link, then its TGID one.  The
	 * ABI promises tgid 0 only for "not found", and so it is.
	 */
	e->tgid = task_tgid_nr_ns(t, ns);
	return e->tgid ? s : NULL;
}

/*
 * A slot whose word is still 0 belongs to a thread that TRACK has just
 * inserted and not yet given its snapshot, or to a new thread before its
 * first wakeup: it has no state to answer with, and is answered as not
 * found (uapi: every word SAMPLE and LIST answer has a state).
 */
static bool ts_sample_one(void *rec, struct pid_namespace *ns)
{
	struct taskstate_entry *e = rec;
	struct ts_slot *s = ts_sample_find(e, ns);

	if (!s)
		return false;
	e->word = ts_word_load(&ts_slot_pub(s)->word);
	if (!e->word)
		e->tgid = 0;
	return e->word;
}

/*
 * SAMPLE with totals (version 1): the batch loop of ts_batch() with a
 * second user array, the totals that match each word (ts_pub_read()).
 * Chunks of TS_CHUNK, the totals in a buffer of their own (1.5 KiB, too
 * much for the stack).
 */
static long ts_sample_totals(const struct taskstate_sample *args)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct taskstate_entry e[TS_CHUNK];
	struct taskstate_entry __user *ue;
	struct taskstate_totals __user *ut;
	struct taskstate_totals *t;
	u32 i, n, done;
	long found = 0;

	if (!ts_totals)
		return -EOPNOTSUPP;
	if (args->count && (!ts_user_ptr_fits(args->entries) ||
			    !ts_user_ptr_fits(args->totals)))
		return -EFAULT;
	t = kmalloc_array(TS_CHUNK, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ue = u64_to_user_ptr(args->entries);
	ut = u64_to_user_ptr(args->totals);
	for (done = 0; done < args->count; done += n) {
		struct ts_slot *s;

		cond_resched();
		n = min_t(u32, args->count - done, TS_CHUNK);
		if (copy_from_user(e, ue + done, n * sizeof(*e))) {
			found = -EFAULT;
			break;
		}
		memset(t, 0, n * sizeof(*t));
		rcu_read_lock();
		for (i = 0; i < n; i++) {
			s = ts_sample_find(&e[i], ns);
			if (!s)
				continue;
			/* Not readable now: the word, invalid totals (uapi). */
			if (!ts_pub_read(ts_slot_pub(s), &e[i].word, &t[i])) {
				e[i].word = ts_word_load(&ts_slot_pub(s)->word);
				memset(&t[i], 0, sizeof(t[i]));
			}
			/* No word yet: not found (ts_sample_one()). */
			if (!e[i].word) {
				e[i].tgid = 0;
				memset(&t[i], 0, sizeof(t[i]));
				continue;
			}
			found++;
		}
		rcu_read_unlock();
		if (copy_to_user(ue + done, e, n * sizeof(*e)) ||
		    copy_to_user(ut + done, t, n * sizeof(*t))) {
			found = -EFAULT;
			break;
		}
	}
	kfree(t);
	return found;
}

static long ts_ioctl_sample(void __user *uarg)
{
	struct taskstate_sample args;
	long usize, found;

	usize = ts_get_args(&args, sizeof(args), TASKSTATE_SAMPLE_SIZE_VER0,
			    uarg);
	if (usize < 0)
		return usize;
	if (args.flags)
		return -EINVAL;
	if (args.count > TASKSTATE_BATCH_MAX)
		return -E2BIG;
	if (args.totals)
		found = ts_sample_totals(&args);
	else
		found = ts_batch(args.entries, args.count,
				 sizeof(struct taskstate_entry),
				 ts_sample_one);
	if (found < 0)
		return found;
	args.found = found;
	if (ts_put_args(uarg, &args, sizeof(args), usize))
		return -EFAULT;
	return args.found;
}

/* Copy @n entries (and their totals, if @ut) out at @at. */
static int ts_list_flush(struct taskstate_entry __user *ue,
			 struct taskstate_totals __user *ut, u32 at,
			 const struct taskstate_entry *e,
			 const struct taskstate_totals *t, u32 n)
{
	if (copy_to_user(ue + at, e, n * sizeof(*e)))
		return -EFAULT;
	if (ut && copy_to_user(ut + at, t, n * sizeof(*t)))
		return -EFAULT;
	return 0;
}

static long ts_ioctl_list(void __user *uarg)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct taskstate_entry buf[TS_CHUNK];
	struct taskstate_totals __user *ut = NULL;
	struct taskstate_totals *tbuf = NULL;
	struct taskstate_entry __user *ue;
	struct taskstate_list args;
	unsigned int idx, used, n = 0;
	struct ts_view v;
	long usize, ret = 0;

	usize = ts_get_args(&args, sizeof(args), TASKSTATE_LIST_SIZE_VER0,
			    uarg);
	if (usize < 0)
		return usize;
	if (args.flags)
		return -EINVAL;
	args.filled = 0;
	args.total = 0;
	if (args.count > TASKSTATE_LIST_MAX)
		return -E2BIG;
	if (args.totals && !ts_totals)
		return -EOPNOTSUPP;
	if (args.count && (!ts_user_ptr_fits(args.entries) ||
			   !ts_user_ptr_fits(args.totals)))
		return -EFAULT;
	ue = u64_to_user_ptr(args.entries);
	if (args.totals) {
		ut = u64_to_user_ptr(args.totals);
		tbuf = kmalloc_array(TS_CHUNK, sizeof(*tbuf), GFP_KERNEL);
		if (!tbuf)
			return -ENOMEM;
	}
	used = ts_slots_used();
	for (idx = 0; idx < used; idx++) {
		if (!(idx % 1024))
			cond_resched();
		if (!ts_view_slot(idx, ns, &v))
			continue;
		if (args.pid && v.tgid != args.pid)
			continue;
		args.total++;
		if (args.filled + n >= args.count)
			continue;
		buf[n] = (struct taskstate_entry) {
			.tid = v.tid, .tgid = v.tgid, .word = v.word,
		};
		if (tbuf)
			tbuf[n] = v.totals;
		if (++n == TS_CHUNK) {
			ret = ts_list_flush(ue, ut, args.filled, buf, tbuf, n);
			if (ret)
				goto out;
			args.filled += n;
			n = 0;
		}
	}
	if (n) {
		ret = ts_list_flush(ue, ut, args.filled, buf, tbuf, n);
		if (ret)
			goto out;
	}
	args.filled += n;
	ret = ts_put_args(uarg, &args, sizeof(args), usize);
	if (!ret)
		ret = args.filled;
out:
	kfree(tbuf);
	return ret;
}

/* PROCESS: a process's totals, its exited threads' included (table.c). */
static long ts_ioctl_process(void __user *uarg)
{
	struct taskstate_process args;
	struct task_struct *p;
	long usize;

	usize = ts_get_args(&args, sizeof(args), TASKSTATE_PROCESS_SIZE_VER0,
			    uarg);
	if (usize < 0)
		return usize;
	if (args.flags)
		return -EINVAL;
	if (!ts_totals)
		return -EOPNOTSUPP;
	/* The out fields zero, for a process the module keeps no totals of. */
	args = (struct taskstate_process) { .size = usize, .pid = args.pid };
	rcu_read_lock();
	p = ts_find(args.pid, true);
	if (p)
		ts_proc_read(p, &args);
	rcu_read_unlock();
	if (!p)
		return -ESRCH;
	return ts_put_args(uarg, &args, sizeof(args), usize);
}

static long ts_dev_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case TASKSTATE_IOC_INFO:
		return ts_ioctl_info(uarg);
	case TASKSTATE_IOC_TRACK:
		return ts_ioctl_track(uarg, true);
	case TASKSTATE_IOC_UNTRACK:
		return ts_ioctl_track(uarg, false);
	case TASKSTATE_IOC_SAMPLE:
		return ts_ioctl_sample(uarg);
	case TASKSTATE_IOC_LIST:
		return ts_ioctl_list(uarg);
	case TASKSTATE_IOC_LOCATE:
		return ts_ioctl_locate(uarg);
	case TASKSTATE_IOC_PROCESS:
		return ts_ioctl_process(uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

static int ts_dev_open(struct inode *inode, struct file *file)
{
	if (!perfmon_capable())
		return -EPERM;
	return nonseekable_open(inode, file);
}

static const struct file_operations ts_dev_fops = {
	.owner = THIS_MODULE,
	.open = ts_dev_open,
	.unlocked_ioctl = ts_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = ts_dev_mmap,
};

static struct miscdevice ts_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KBUILD_MODNAME,
	.fops = &ts_dev_fops,
	.mode = 0444,
};

int ts_dev_init(bool track_all)
{
	BUILD_BUG_ON(sizeof(struct taskstate_info) != TASKSTATE_INFO_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct taskstate_track) != TASKSTATE_TRACK_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct taskstate_sample) !=
		     TASKSTATE_SAMPLE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct taskstate_list) != TASKSTATE_LIST_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct taskstate_totals) != 48);
	BUILD_BUG_ON(sizeof(struct taskstate_process) !=
		     TASKSTATE_PROCESS_SIZE_VER0);

	ts_dev_track_all = track_all;
	return misc_register(&ts_miscdev);
}

/* Open files pin the module, so no ioctl is running here. */
void ts_dev_exit(void)
{
	misc_deregister(&ts_miscdev);
}
