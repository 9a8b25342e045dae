// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/taskstate: the device, and every ioctl of
 * include/uapi/linux/taskstate.h.  mmap() is mmap.c's.
 *
 * Per-switch timestamps are a timing side channel: a descriptor opened
 * with CAP_PERFMON or CAP_SYS_ADMIN in the initial user namespace (the
 * same bar as system-wide perf) sees every thread; one opened without is
 * scoped to the opener's process and its descendants (scope.c; the
 * unprivileged parameter turns those opens off), and a thread outside
 * its scope answers exactly as a tid that does not exist.  The file mode
 * lets anyone try.  Tids are the caller's: they are resolved in its pid
 * namespace, and threads outside it cannot be named.
 *
 * Each ioctl is a handler and a row of ts_ioctl_ops[].  The dispatcher,
 * ts_dev_ioctl(), does for all of them what the uapi header's "DOC:
 * General ioctl format" promises: it reads the argument's size (EFAULT),
 * refuses one above a page (E2BIG) or below the first version's (EINVAL),
 * reads the struct (copy_struct_from_user(): a short one zero-filled, a
 * long one's unknown tail must be zero, else E2BIG), refuses flags the
 * row does not accept (EINVAL), runs the handler and, if it succeeded,
 * writes back at most the caller's size.  A handler sees the kernel's
 * struct and returns the ioctl's value or -errno.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/pid_namespace.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include <linux/uaccess.h>
#include "hooks.h"
#include "probes.h"
#include "readers.h"
#include "scope.h"
#include "table.h"

/* Each struct is the latest version the uapi header gives its size of. */
static_assert(sizeof(struct taskstate_info) == TASKSTATE_INFO_SIZE_VER3);
static_assert(sizeof(struct taskstate_track) == TASKSTATE_TRACK_SIZE_VER0);
static_assert(sizeof(struct taskstate_sample) == TASKSTATE_SAMPLE_SIZE_VER1);
static_assert(sizeof(struct taskstate_list) == TASKSTATE_LIST_SIZE_VER1);
static_assert(sizeof(struct taskstate_locate) == TASKSTATE_LOCATE_SIZE_VER0);
static_assert(sizeof(struct taskstate_process) == TASKSTATE_PROCESS_SIZE_VER1);
static_assert(sizeof(struct taskstate_totals) == 48);
static_assert(sizeof(struct taskstate_exits) == TASKSTATE_EXITS_SIZE_VER0);
static_assert(sizeof(struct taskstate_exit) == 80);

static bool ts_dev_track_all;

/*
 * The task @id names in pid namespace @ns, the thread (PIDTYPE_PID) or
 * the process (PIDTYPE_TGID), or NULL.  Under rcu_read_lock().
 */
static struct task_struct *ts_task_of(u32 id, struct pid_namespace *ns,
				      enum pid_type type)
{
	if (!id || id > PID_MAX_LIMIT)
		return NULL;
	return pid_task(find_pid_ns(id, ns), type);
}

/* The table's side of scope @sc: the slots it owns; NULL for none. */
static struct ts_owner *ts_owner_of(struct ts_scope *sc)
{
	return sc ? &sc->owner : NULL;
}

/*
 * The slot of the tracked thread @tid names in @ns, in scope @sc, with
 * its tgid there in @tgid; NULL and tgid 0 if none.  Under
 * rcu_read_lock(): the task cannot be freed, and a slot found for it
 * cannot be reused by another thread.  The tgid is 0 while the last
 * thread of a group is being released (__unhash_process() detaches its
 * PID link, then its TGID one): the ABI promises tgid 0 only for "not
 * found", and so it is.  A thread outside @sc is not found either, as a
 * tid that names nothing: nothing tells the two apart.
 */
static struct ts_slot *ts_slot_task_of(const struct ts_scope *sc, u32 tid,
				       struct pid_namespace *ns, u32 *tgid,
				       struct task_struct **task)
{
	struct task_struct *t = ts_task_of(tid, ns, PIDTYPE_PID);
	struct ts_slot *s = t && ts_scope_sees(sc, t) ? ts_lookup(t) : NULL;

	*tgid = s ? task_tgid_nr_ns(t, ns) : 0;
	*task = t;
	return *tgid ? s : NULL;
}

static struct ts_slot *ts_slot_of(const struct ts_scope *sc, u32 tid,
				  struct pid_namespace *ns, u32 *tgid)
{
	struct task_struct *t;

	return ts_slot_task_of(sc, tid, ns, tgid, &t);
}

/*
 * Does the user pointer in a 64-bit field fit this kernel's pointers?
 * u64_to_user_ptr() keeps only the low half on a 32-bit kernel: an
 * address with bits above them set cannot be the caller's, and is
 * refused (EFAULT) rather than truncated into another one.  Checked only
 * when the array will be used (count > 0), as a 64-bit kernel never
 * looks at it otherwise.
 */
static bool ts_user_ptr_fits(u64 addr)
{
	return addr == (uintptr_t)addr;
}

/*
 * The batch engine of SAMPLE, LOCATE and LIST: a user array of 16-byte
 * records (struct taskstate_entry or taskstate_location) and, if asked,
 * the parallel array of their totals, moved TS_CHUNK records at a time
 * through a kernel buffer (512 bytes of stack; the totals' 1.5 KiB from
 * the heap).
 */
#define TS_CHUNK	32
#define TS_RECORD	16
static_assert(sizeof(struct taskstate_entry) == TS_RECORD);
static_assert(sizeof(struct taskstate_location) == TS_RECORD);

struct ts_batch {
	u8 __user *urec;
	struct taskstate_totals __user *utot;	/* NULL: no totals */
	struct taskstate_totals *tot;		/* TS_CHUNK, with utot */
	struct pid_namespace *ns;		/* the caller's */
	struct ts_scope *sc;			/* the descriptor's, or NULL */
	u32 done;				/* records copied out */
	union {
		u8 bytes[TS_CHUNK * TS_RECORD];
		struct taskstate_entry e[TS_CHUNK];
		struct taskstate_location l[TS_CHUNK];
	} rec;
};

/*
 * Start a batch of @count records at @urec, with their totals at @utot
 * unless it is 0, for a descriptor of scope @sc.  Returns 0, -EFAULT for
 * an address this kernel cannot have given, or -ENOMEM.  ts_batch_end()
 * in every case.
 */
static int ts_batch_start(struct ts_batch *b, struct ts_scope *sc,
			  u64 urec, u64 utot, u32 count)
{
	b->sc = sc;
	b->urec = u64_to_user_ptr(urec);
	b->utot = NULL;
	b->tot = NULL;
	b->ns = task_active_pid_ns(current);
	b->done = 0;
	if (count && (!ts_user_ptr_fits(urec) || !ts_user_ptr_fits(utot)))
		return -EFAULT;
	if (!utot)
		return 0;
	b->tot = kmalloc_array(TS_CHUNK, sizeof(*b->tot), GFP_KERNEL);
	if (!b->tot)
		return -ENOMEM;
	b->utot = u64_to_user_ptr(utot);
	return 0;
}

/* Copy the buffer's first @n records (and totals) out, after the last. */
static int ts_batch_out(struct ts_batch *b, u32 n)
{
	if (copy_to_user(b->urec + b->done * TS_RECORD, b->rec.bytes,
			 n * TS_RECORD))
		return -EFAULT;
	if (b->utot &&
	    copy_to_user(b->utot + b->done, b->tot, n * sizeof(*b->tot)))
		return -EFAULT;
	b->done += n;
	return 0;
}

static void ts_batch_end(struct ts_batch *b)
{
	kfree(b->tot);
}

/*
 * SAMPLE and LOCATE: each of the @count records at @urec (with their
 * totals at @utot, unless 0) read in, answered in place by @one() (record
 * @i of the buffer, and its totals) under rcu_read_lock(), and copied
 * back, rescheduling between chunks (up to 2048 of them).  Returns how
 * many @one() found, or -errno: E2BIG for more than TASKSTATE_BATCH_MAX
 * records, then EOPNOTSUPP for totals from a module that keeps none.
 * Always inlined, so that @one() stays a direct call in each handler.
 */
static __always_inline long
ts_batch_lookup(struct ts_scope *sc, u64 urec, u64 utot, u32 count,
		bool (*one)(struct ts_batch *b, u32 i))
{
	struct ts_batch b;
	long found = 0;
	int ret;
	u32 i, n;

	if (count > TASKSTATE_BATCH_MAX)
		return -E2BIG;
	if (utot && !ts_totals)
		return -EOPNOTSUPP;
	ret = ts_batch_start(&b, sc, urec, utot, count);
	while (!ret && b.done < count) {
		cond_resched();
		n = min_t(u32, count - b.done, TS_CHUNK);
		if (copy_from_user(b.rec.bytes, b.urec + b.done * TS_RECORD,
				   n * TS_RECORD)) {
			ret = -EFAULT;
			break;
		}
		rcu_read_lock();
		for (i = 0; i < n; i++)
			found += one(&b, i);
		rcu_read_unlock();
		ret = ts_batch_out(&b, n);
	}
	ts_batch_end(&b);
	return ret ? ret : found;
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
	/*
	 * Not timespec64_to_ns(): where it tests tv_sec as unsigned (the
	 * 5.10 headers Debian ships), any negative offset reads KTIME_MAX.
	 * proc_timens_set_offset() keeps the namespace's boottime within
	 * [0, KTIME_SEC_MAX / 2] s, so the offset's ns fit an s64.
	 */
	return (s64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static long ts_ioctl_info(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_info *info = arg;
	u32 usize = info->size;

	*info = (struct taskstate_info) {
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
		.boottime_offset_ns = ts_boottime_offset_ns(),
		.scope = sc ? TASKSTATE_SCOPE_SELF : TASKSTATE_SCOPE_ALL,
		.scope_max_threads = sc ? ts_user_max() : 0,
		.scope_nr_tracked = sc ? ts_owned_by_user(&sc->owner) : 0,
	};
	ts_map_info(info, sc);
	return 0;
}

/*
 * TRACK's and UNTRACK's task: the thread, or the process, in scope @sc.
 * Under rcu_read_lock().
 */
static struct task_struct *ts_track_task(const struct ts_scope *sc,
					 const struct taskstate_track *args)
{
	struct task_struct *p;

	p = ts_task_of(args->id, task_active_pid_ns(current),
		       args->flags & TASKSTATE_TRACK_PROCESS ?
		       PIDTYPE_TGID : PIDTYPE_PID);
	return p && ts_scope_sees(sc, p) ? p : NULL;
}

/*
 * Track @p, or with @process every thread of it, with inheritance so
 * the task_newtask probe adds their new threads and children, counting
 * them in @nr.  Under rcu_read_lock(), in the section that found @p,
 * which is what makes inserting it safe (see ts_track()).  A thread
 * created during the walk is seen either by the walk or by the probe:
 * ts_track() explains how.
 */
static int ts_track_threads(struct ts_scope *sc, struct task_struct *p,
			    bool process, u64 *nr, unsigned long seen)
{
	struct task_struct *t;
	int ret;

	if (!process) {
		ret = ts_track(p, 0, ts_owner_of(sc), seen);
		*nr = !ret;
		/*
		 * A leader's record takes in its threads tracked before it,
		 * from now (ts_proc_join()): a thread that is tracked while
		 * its leader is then counts in the leader's record, however
		 * the two were tracked, so a later exec by it keeps the
		 * record (ts_proc_leave_locked()).
		 */
		if (!ret && thread_group_leader(p))
			for_each_thread(p, t)
				if (t != p)
					ts_proc_join(t, ts_owner_of(sc));
		return ret;
	}
	/* The leader first: its slot holds the record the others join. */
	ret = ts_track(p, TS_SLOT_INHERIT, ts_owner_of(sc), seen);
	if (ret)
		return ret;
	++*nr;
	for_each_thread(p, t) {
		/* A thread whose ids changed alone (setresuid(2)) is outside. */
		if (t == p || !ts_scope_sees(sc, t))
			continue;
		ret = ts_track(t, TS_SLOT_INHERIT, ts_owner_of(sc), seen);
		if (ret)
			return ret;
		++*nr;
	}
	return 0;
}

/*
 * TRACK's TASKSTATE_TRACK_EXITS: point process @p's record (@p tracked
 * just now) at the descriptor's log.  A scoped descriptor's look that
 * sees @p and the attach must have no set-user-ID exec between them
 * (ts_exits_attach()): a few looks, then -EAGAIN, as unlikely as four
 * set-id execs on the machine within as many looks.
 */
#define TS_EXITS_TRIES	4

static int ts_track_exits(struct ts_file *f,
			  const struct taskstate_track *args,
			  struct task_struct *p)
{
	unsigned long seen;
	int i, ret = -EAGAIN;

	for (i = 0; i < TS_EXITS_TRIES && ret == -EAGAIN; i++) {
		seen = ts_setid_execs_now();
		rcu_read_lock();
		ret = ts_track_task(f->sc, args) == p ?
		      ts_exits_attach(p, f->exits, seen) : -ESRCH;
		rcu_read_unlock();
	}
	return ret;
}

/*
 * TRACK attaches the probes if they are not (ts_probes_get()), publishes
 * the slots, waits a grace period, then gives the threads their current
 * state (ts_snapshot()).  A table that fills up part way leaves the
 * threads tracked so far tracked, and the call fails with ENOSPC.
 */
static long ts_ioctl_track(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_track *args = arg;
	bool process = args->flags & TASKSTATE_TRACK_PROCESS;
	bool exits = args->flags & TASKSTATE_TRACK_EXITS;
	unsigned int hold_ms = ts_hook_track_hold();
	struct task_struct *p, *t;
	unsigned long seen;
	u64 upto;
	int ret;

	if (args->__pad || (exits && !process))
		return -EINVAL;
	if (exits && !ts_totals)
		return -EOPNOTSUPP;
	args->nr_threads = 0;
	/*
	 * A scoped caller naming nothing it may see is answered before the
	 * probes are attached: it cannot make them come and go for no
	 * thread of its own.
	 */
	if (sc) {
		rcu_read_lock();
		p = ts_track_task(sc, args);
		rcu_read_unlock();
		if (!p)
			return -ESRCH;
	}
	/* The descriptor's log, once: before the table lock is taken. */
	if (exits && !READ_ONCE(f->exits)) {
		struct ts_exits *x = ts_exits_new(sc ? &sc->owner : NULL);

		if (!x)
			return -ENOMEM;
		if (cmpxchg(&f->exits, NULL, x))
			ts_exits_free(x);	/* another TRACK's came first */
	}
	/* The probes first: every slot must have its free probe. */
	ret = ts_probes_get();
	if (ret)
		return ret;
	/*
	 * Before the look, with the exec probe attached (ts_track()); the
	 * barrier orders the attach before the count's load.
	 */
	smp_mb();
	seen = ts_setid_execs_now();
	rcu_read_lock();
	p = ts_track_task(sc, args);
	if (p) {
		ret = ts_track_threads(sc, p, process, &args->nr_threads,
				       seen);
		get_task_struct(p);
	}
	rcu_read_unlock();
	if (p && !ret && exits)
		ret = ts_track_exits(f, args, p);
	ts_probes_put();
	if (!p)
		return -ESRCH;

	upto = ts_inserts_now();
	synchronize_rcu();
	ts_hook_track_wait(hold_ms);
	rcu_read_lock();
	if (process)
		for_each_thread(p, t)
			ts_snapshot(t, upto);
	else
		ts_snapshot(p, upto);
	rcu_read_unlock();
	put_task_struct(p);
	/* A user past its share (ts_track()): as a full table, to the user. */
	return ret == -EDQUOT ? -ENOSPC : ret;
}

/*
 * UNTRACK: the thread, or every thread of the process; through a scoped
 * descriptor only what it tracked itself.  Untracking the last tracked
 * thread detaches the probes (ts_probes_idle()).
 */
static long ts_ioctl_untrack(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_track *args = arg;
	struct task_struct *p, *t;

	if (args->__pad)
		return -EINVAL;
	args->nr_threads = 0;
	rcu_read_lock();
	p = ts_track_task(sc, args);
	if (p && !(args->flags & TASKSTATE_TRACK_PROCESS))
		args->nr_threads = ts_untrack(p, ts_owner_of(sc));
	else if (p)
		for_each_thread(p, t)
			args->nr_threads += ts_untrack(t, ts_owner_of(sc));
	rcu_read_unlock();
	ts_probes_idle();
	return p ? 0 : -ESRCH;
}

/*
 * One SAMPLE record: the word of the thread its tid names, and with
 * totals asked the totals that match it (ts_pub_read(); not readable
 * now: the word, zero totals, which the uapi calls invalid).  A slot
 * whose word is still 0 belongs to a thread that TRACK has just inserted
 * and not yet given its snapshot, or to a new thread before its first
 * wakeup: it has no state to answer with, and is answered as not found
 * (uapi: every word SAMPLE and LIST answer has a state).
 */
static bool ts_sample_one(struct ts_batch *b, u32 i)
{
	struct taskstate_entry *e = &b->rec.e[i];
	struct taskstate_totals *t = b->tot ? &b->tot[i] : NULL;
	struct ts_slot *s = ts_slot_of(b->sc, e->tid, b->ns, &e->tgid);

	if (!s)
		goto none;
	if (!t) {
		e->word = ts_word_load(&ts_slot_pub(s)->word);
	} else if (!ts_pub_read(ts_slot_pub(s), &e->word, t)) {
		e->word = ts_word_load(&ts_slot_pub(s)->word);
		memset(t, 0, sizeof(*t));
	}
	/* A word of 0 read with its totals stays 0: not found. */
	if (e->word)
		return true;
none:
	e->word = 0;
	e->tgid = 0;
	if (t)
		memset(t, 0, sizeof(*t));
	return false;
}

static long ts_ioctl_sample(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_sample *args = arg;
	long found;

	found = ts_batch_lookup(sc, args->entries, args->totals, args->count,
				ts_sample_one);
	if (found >= 0)
		args->found = found;
	return found;
}

/*
 * One LOCATE record: where the thread its tid names is.  Under
 * rcu_read_lock(): a slot found for the task is not reused before the
 * section ends, so the gen read here is either its owner's (odd), or, if
 * it was released just now, the next even one: then the thread counts
 * as not found.  The odd gen was stored before the slot was published
 * (ts_pub_take()), and the slot was reached through the RCU hash: it is
 * at least that gen.
 */
static bool ts_locate_one(struct ts_batch *b, u32 i)
{
	struct taskstate_location *l = &b->rec.l[i];
	unsigned long seen = b->sc ? ts_setid_execs_now() : 0;
	struct task_struct *t;
	struct ts_slot *s;
	u32 e;

	s = ts_slot_task_of(b->sc, l->tid, b->ns, &l->tgid, &t);
	/*
	 * A scoped mapping shows only the descriptor's pages: the entry
	 * moves there if it can (ts_entry_claim()), if no set-id exec
	 * happened since the look at @t.
	 */
	if (s && b->sc)
		ts_entry_claim(t, &b->sc->owner, seen);
	e = s ? READ_ONCE(s->entry) : 0;
	l->gen = s ? READ_ONCE(ts_pub[e].gen) : 0;
	if (l->gen & 1) {
		l->index = b->sc ? ts_view_index(&b->sc->owner, e) : e;
		if (l->index != TASKSTATE_LOCATE_NONE)
			return true;
		/* Found, not in the mapping now (uapi: LOCATE). */
		l->gen = 0;
		return false;
	}
	l->tgid = 0;
	l->index = TASKSTATE_LOCATE_NONE;
	l->gen = 0;
	return false;
}

static long ts_ioctl_locate(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_locate *args = arg;
	long found;

	found = ts_batch_lookup(sc, args->locations, 0, args->count,
				ts_locate_one);
	if (found >= 0)
		args->found = found;
	return found;
}

/*
 * LIST: the tracked threads visible in the caller's pid namespace (of
 * one process, with @pid), as many as fit, and how many there are.
 */
static long ts_ioctl_list(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_list *args = arg;
	unsigned int idx, used, n = 0;
	struct task_struct *t;
	struct ts_batch b;
	struct ts_view v;
	bool seen;
	long ret;

	args->filled = 0;
	args->total = 0;
	if (args->count > TASKSTATE_LIST_MAX)
		return -E2BIG;
	if (args->totals && !ts_totals)
		return -EOPNOTSUPP;
	ret = ts_batch_start(&b, sc, args->entries, args->totals, args->count);
	if (ret)
		goto out;
	used = ts_slots_used();
	for (idx = 0; idx < used; idx++) {
		if (!(idx % 1024))
			cond_resched();
		if (!ts_view_slot(idx, b.ns, &v, sc ? &t : NULL))
			continue;
		if (sc) {
			/* Held, and seen only if not released (pid_alive()). */
			rcu_read_lock();
			seen = ts_scope_sees(sc, t);
			rcu_read_unlock();
			put_task_struct(t);
			if (!seen)
				continue;
		}
		if (args->pid && v.tgid != args->pid)
			continue;
		args->total++;
		if (b.done + n >= args->count)
			continue;
		b.rec.e[n] = (struct taskstate_entry) {
			.tid = v.tid, .tgid = v.tgid, .word = v.word,
		};
		if (b.tot)
			b.tot[n] = v.totals;
		if (++n < TS_CHUNK)
			continue;
		ret = ts_batch_out(&b, n);
		if (ret)
			goto out;
		n = 0;
	}
	ret = ts_batch_out(&b, n);
	if (!ret) {
		args->filled = b.done;
		ret = b.done;
	}
out:
	ts_batch_end(&b);
	return ret;
}

/* PROCESS: a process's totals, its exited threads' included (table.c). */
static long ts_ioctl_process(struct ts_file *f, void *arg)
{
	struct ts_scope *sc = f->sc;
	struct taskstate_process *args = arg;
	u32 usize = args->size, pid = args->pid;
	struct task_struct *p;
	int ret;

	if (!ts_totals)
		return -EOPNOTSUPP;
	/* The out fields zero, for a process the module keeps no totals of. */
	*args = (struct taskstate_process) { .size = usize, .pid = pid };
	rcu_read_lock();
	p = ts_task_of(pid, task_active_pid_ns(current), PIDTYPE_TGID);
	if (p && !ts_scope_sees(sc, p))
		p = NULL;
	if (p)
		get_task_struct(p);
	rcu_read_unlock();
	if (!p)
		return -ESRCH;
	/* It may sleep between chunks of threads: @p held, not RCU. */
	ret = ts_proc_read(p, args);
	put_task_struct(p);
	return ret;
}

/*
 * EXITS: the oldest entries of the descriptor's log of thread exits
 * (table.c), through a buffer: they are copied out under ts_lock.  Those
 * the caller's buffer could not take are counted in the next call's lost.
 */
static long ts_ioctl_exits(struct ts_file *f, void *arg)
{
	struct taskstate_exits *args = arg;
	struct ts_exits *x = READ_ONCE(f->exits);
	struct taskstate_exit *buf = NULL;
	unsigned int n;

	if (args->__pad)
		return -EINVAL;
	args->lost = 0;
	n = min_t(u32, args->count, TASKSTATE_EXITS_LOG);
	args->count = 0;
	if (!x)
		return 0;
	/* count 0 takes no entry, only the lost count. */
	if (n && !ts_user_ptr_fits(args->exits))
		return -EFAULT;
	if (n) {
		buf = kvmalloc_array(n, sizeof(*buf), GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	n = ts_exits_take(x, buf, n, &args->lost);
	if (n && copy_to_user(u64_to_user_ptr(args->exits), buf,
			      n * sizeof(*buf))) {
		/* Not delivered: the next call's lost, with what this took. */
		ts_exits_lose(x, n + args->lost);
		kvfree(buf);
		return -EFAULT;
	}
	kvfree(buf);
	args->count = n;
	return 0;
}

/* Every argument struct starts with its size, then its flags. */
struct ts_ioctl_head {
	u32 size;
	u32 flags;
};

union ts_ioctl_buf {
	struct ts_ioctl_head head;
	struct taskstate_info info;
	struct taskstate_track track;
	struct taskstate_sample sample;
	struct taskstate_list list;
	struct taskstate_locate locate;
	struct taskstate_process process;
	struct taskstate_exits exits;
};

/*
 * One ioctl: its number, the kernel's struct's size and its first
 * version's, the flags it accepts, and its handler.
 */
struct ts_ioctl_op {
	unsigned int cmd;
	u32 size;
	u32 min_size;
	u32 flags;
	long (*execute)(struct ts_file *f, void *arg);
};

#define TS_IOCTL_OP(_cmd, _fn, _struct, _min_size, _flags)		\
	{								\
		.cmd = _cmd,						\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union ts_ioctl_buf) <	\
					  sizeof(_struct)) +		\
			BUILD_BUG_ON_ZERO(offsetof(_struct, flags) !=	\
				offsetof(struct ts_ioctl_head, flags)),	\
		.min_size = _min_size,					\
		.flags = _flags,					\
		.execute = _fn,						\
	}

static const struct ts_ioctl_op ts_ioctl_ops[] = {
	TS_IOCTL_OP(TASKSTATE_IOC_INFO, ts_ioctl_info, struct taskstate_info,
		    TASKSTATE_INFO_SIZE_VER0, 0),
	TS_IOCTL_OP(TASKSTATE_IOC_TRACK, ts_ioctl_track,
		    struct taskstate_track, TASKSTATE_TRACK_SIZE_VER0,
		    TASKSTATE_TRACK_PROCESS | TASKSTATE_TRACK_EXITS),
	TS_IOCTL_OP(TASKSTATE_IOC_UNTRACK, ts_ioctl_untrack,
		    struct taskstate_track, TASKSTATE_TRACK_SIZE_VER0,
		    TASKSTATE_TRACK_PROCESS),
	TS_IOCTL_OP(TASKSTATE_IOC_SAMPLE, ts_ioctl_sample,
		    struct taskstate_sample, TASKSTATE_SAMPLE_SIZE_VER0, 0),
	TS_IOCTL_OP(TASKSTATE_IOC_LIST, ts_ioctl_list, struct taskstate_list,
		    TASKSTATE_LIST_SIZE_VER0, 0),
	TS_IOCTL_OP(TASKSTATE_IOC_LOCATE, ts_ioctl_locate,
		    struct taskstate_locate, TASKSTATE_LOCATE_SIZE_VER0, 0),
	TS_IOCTL_OP(TASKSTATE_IOC_PROCESS, ts_ioctl_process,
		    struct taskstate_process, TASKSTATE_PROCESS_SIZE_VER0, 0),
	TS_IOCTL_OP(TASKSTATE_IOC_EXITS, ts_ioctl_exits,
		    struct taskstate_exits, TASKSTATE_EXITS_SIZE_VER0, 0),
};

/* The row of @cmd, or NULL: eight rows, a scan. */
static const struct ts_ioctl_op *ts_ioctl_op_of(unsigned int cmd)
{
	const struct ts_ioctl_op *op;

	for (op = ts_ioctl_ops; op < ts_ioctl_ops + ARRAY_SIZE(ts_ioctl_ops);
	     op++)
		if (op->cmd == cmd)
			return op;
	return NULL;
}

static long ts_dev_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	const struct ts_ioctl_op *op = ts_ioctl_op_of(cmd);
	void __user *uarg = (void __user *)arg;
	union ts_ioctl_buf buf;
	u32 usize;
	long ret;

	if (!op)
		return -ENOIOCTLCMD;
	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	if (usize < op->min_size)
		return -EINVAL;
	ret = copy_struct_from_user(&buf, op->size, uarg, usize);
	if (ret)
		return ret;
	if (buf.head.flags & ~op->flags)
		return -EINVAL;
	ret = op->execute(file->private_data, &buf);
	if (ret < 0)
		return ret;
	if (copy_to_user(uarg, &buf, min(op->size, usize)))
		return -EFAULT;
	return ret;
}

/*
 * A privileged open sees everything (a ts_file without a scope); any
 * other gets a scope, unless the unprivileged parameter is off (EPERM, as
 * before scopes existed).
 */
static int ts_dev_open(struct inode *inode, struct file *file)
{
	bool scoped = !perfmon_capable();
	struct ts_file *f;
	int ret = -ENOMEM;

	if (scoped && !READ_ONCE(ts_unprivileged))
		return -EPERM;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	if (scoped) {
		f->sc = ts_scope_new();
		if (!f->sc)
			goto err_free;
	}
	ret = nonseekable_open(inode, file);
	if (ret)
		goto err_scope;
	file->private_data = f;
	return 0;

err_scope:
	if (f->sc)
		ts_scope_put(f->sc);
err_free:
	kfree(f);
	return ret;
}

/*
 * The last holder closed it: its log goes, and what its scope tracked
 * ends.
 */
static int ts_dev_release(struct inode *inode, struct file *file)
{
	struct ts_file *f = file->private_data;
	struct ts_scope *sc = f->sc;

	if (f->exits)
		ts_exits_free(f->exits);
	if (sc) {
		ts_untrack_owned(&sc->owner);
		ts_owner_pages_put(&sc->owner);
		ts_scope_put(sc);
		ts_probes_idle();
	}
	kfree(f);
	return 0;
}

static const struct file_operations ts_dev_fops = {
	.owner = THIS_MODULE,
	.open = ts_dev_open,
	.release = ts_dev_release,
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

/**
 * ts_dev_init() - register /dev/taskstate
 * @track_all: the track_all parameter, which INFO reports
 *
 * Context: module load, after the table and the probes are ready.
 * Return: 0, or misc_register()'s -errno.
 */
int ts_dev_init(bool track_all)
{
	ts_dev_track_all = track_all;
	return misc_register(&ts_miscdev);
}

/**
 * ts_dev_exit() - unregister /dev/taskstate
 *
 * Open files and mappings pin the module, so no ioctl or mapping is
 * left when this runs.
 *
 * Context: module unload.
 */
void ts_dev_exit(void)
{
	misc_deregister(&ts_miscdev);
}
