// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate's BPF backend: the module's words, per-state totals and mapped
 * entries, kept by BTF tracepoint programs where no module may load.
 *
 * With ts_track_all (the loader's default, the module's track_all=1) every
 * thread is tracked: the loader runs the TRACK programs (iter/task, at
 * the end of this file) over every task once the tracepoint programs are
 * attached, and ts_newtask gives every new thread an entry.  Without it,
 * TRACK and UNTRACK (lib/bpf.c) run them over one thread or process, and
 * a tracked process's new threads and children inherit.  The entries are
 * the uapi's struct taskstate_map_entry, same word, gen and totals
 * protocol, in a BPF_F_MMAPABLE array that readers map read-only.
 *
 * Finding a thread's entry in a probe: hints[tid] holds its index + 1,
 * and owners[index] the address of the task that owns it, which the probe
 * compares with its own task.  The hint may be stale (a tid that changed
 * hands, an exec that moved it); the owner decides, so a stale hint
 * costs a missed event, never a write to another thread's entry.  Why
 * not task local storage, the natural place: in 6.1
 * bpf_task_storage_get() fails while another task-storage call runs on
 * the CPU (a per-CPU busy count), and counted on this project's guests it
 * failed about once per process start (306 times in 300 runs of
 * /bin/true): lost state changes.  Two array loads and a compare fail
 * never, and cost less than a hash lookup by task (counted in a spike:
 * 1.145 of not loaded per pinned pipe round trip, against 1.093 here).
 *
 * One writer per entry: a thread's switch-out, switch-in and wakeups
 * are serialised by the scheduler (its run queue lock, or its own CPU),
 * as for the module (module/probes.c).  An entry is given back when its
 * task is freed (sched_process_free, an RCU callback after the task's
 * last switch: no probe can be writing it then, so it is emptied at once)
 * or a grace period after UNTRACK made it unreachable (ts_untrack).
 *
 * Fields of struct task_struct are read directly through BTF (never
 * bpf_probe_read_kernel() or BPF_CORE_READ()), which lockdown's
 * confidentiality mode allows; the struct declarations below carry only
 * the fields used, relocated by libbpf against the running kernel's BTF.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <linux/taskstate.h>
#include "taskstate-bpf.h"

/*
 * Loads and stores the compiler must not split, merge or drop: the
 * kernel's READ_ONCE() and WRITE_ONCE().  (clang 14 cannot select a
 * relaxed __atomic_load_n() for BPF.)
 */
#define TS_READ(x)	(*(const volatile typeof(x) *)&(x))
#define TS_WRITE(x, v)	(*(volatile typeof(x) *)&(x) = (v))

/*
 * The TASK_* bits of include/linux/sched.h, the same from 6.1 to 7.2
 * (the kernels the backend runs on), for the shared rule below.
 */
#define TASK_RUNNING		0x00000000
#define TASK_INTERRUPTIBLE	0x00000001
#define TASK_UNINTERRUPTIBLE	0x00000002
#define __TASK_STOPPED		0x00000004
#define __TASK_TRACED		0x00000008
#define TASK_PARKED		0x00000040
#define TASK_DEAD		0x00000080
#define TASK_WAKEKILL		0x00000100
#define TASK_WAKING		0x00000200
#define TASK_NOLOAD		0x00000400
#define TASK_NEW		0x00000800
#define TASK_RTLOCK_WAIT	0x00001000
#define TASK_FREEZABLE		0x00002000
#define TASK_FROZEN		0x00008000

#include "../module/linux-states.h"

struct sched_entity {
	unsigned char sched_delayed;	/* 6.12+ */
	__u64 sum_exec_runtime;
	__u64 prev_sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
	unsigned long long last_arrival;
	unsigned long long last_queued;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int __state;
	int on_cpu;
	int on_rq;
	int exit_state;
	int pid;
	int tgid;
	unsigned int policy;
	unsigned int flags;
	__u64 start_boottime;
	struct sched_entity se;
	struct sched_info sched_info;
	bool is_blocked;		/* 7.2+ */
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

struct signal_struct {
	struct {
		int counter;
	} live;
} __attribute__((preserve_access_index));


/* The same fields where a kernel made them one byte (7.2). */
struct task_struct___u8 {
	unsigned char on_cpu;
	unsigned char on_rq;
} __attribute__((preserve_access_index));

struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* Sizes set by the loader before load (bpf_map__set_max_entries()). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct taskstate_map_entry);
	__uint(max_entries, 1);
} entries SEC(".maps");

/*
 * The owner's task_struct address, or that address + 1 while it leaves
 * (UNTRACK's first pass, ts_leave()): no probe matches it then.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} owners SEC(".maps");

/* 1 where the owner's new tasks are tracked too (TRACK of a process). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} inherit SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} hints SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} tgids SEC(".maps");

/* Preallocated (no BPF_F_NO_PREALLOC): no allocation in a probe. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u32);
	__uint(max_entries, 1);
} tasks SEC(".maps");

/* LIFO: a freed entry is the next one given, as warm as it gets. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__type(value, __u32);
	__uint(max_entries, 1);
} spare SEC(".maps");

/* Process records, at their leader's index, and who counts in which. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ts_bpf_rec);
	__uint(max_entries, 1);
} recs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ts_bpf_memb);
	__uint(max_entries, 1);
} membs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct ts_bpf_config);
	__uint(max_entries, 1);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, TS_BPF_NR_STATS);
} stats SEC(".maps");

/*
 * Set by the loader: on a weakly ordered CPU (arm64) the stores that must
 * be seen in order (a total before its word) go through an atomic
 * exchange, which the JITs make a full barrier; x86 keeps stores in order
 * and stores plainly, as the module does.  A constant to the verifier:
 * the other branch is not even loaded.  (const volatile: libbpf's way to
 * a read-only global the loader sets, which the compiler cannot fold.)
 */
const volatile bool ts_weak_order;

/* Set by the loader: track every thread (true), or what TRACK asks. */
const volatile bool ts_track_all = true;

/*
 * smp_rmb(), as an atomic on a dummy: BPF has no barrier instruction, and
 * a fetching atomic is a full barrier in both JITs (ts_gen_bump()).
 */
static __u64 ts_fence_word;

static __always_inline void ts_rmb(void)
{
	__sync_val_compare_and_swap(&ts_fence_word, 0, 0);
}

static __always_inline void ts_count(__u32 stat)
{
	__u64 *n = bpf_map_lookup_elem(&stats, &stat);

	if (n)
		*n += 1;
}

static __always_inline bool ts_on_cpu(struct task_struct *t)
{
	if (bpf_core_field_size(t->on_cpu) == 1)
		return ((struct task_struct___u8 *)t)->on_cpu;
	return t->on_cpu;
}

static __always_inline bool ts_on_rq(struct task_struct *t)
{
	if (bpf_core_field_size(t->on_rq) == 1)
		return ((struct task_struct___u8 *)t)->on_rq;
	return t->on_rq;
}

/*
 * module/compat.h's ts_task_queued(): queued on a run queue and runnable.
 * 6.12's delayed dequeue keeps a sleeping task queued with
 * se.sched_delayed; 7.2 says that (and proxy execution's blocked tasks)
 * in is_blocked.
 */
static __always_inline bool ts_queued(struct task_struct *t)
{
	if (!ts_on_rq(t))
		return false;
	if (bpf_core_field_exists(t->is_blocked))
		return !t->is_blocked;
	if (bpf_core_field_exists(t->se.sched_delayed))
		return !t->se.sched_delayed;
	return true;
}

/* The index of a tracked task's entry, or -1: see the top of the file. */
static __always_inline long ts_index_of(struct task_struct *t)
{
	__u32 tid = t->pid;
	__u32 *hint = bpf_map_lookup_elem(&hints, &tid);
	__u64 *owner;
	__u32 i;

	if (!hint || !*hint)
		return -1;
	i = *hint - 1;
	owner = bpf_map_lookup_elem(&owners, &i);
	if (!owner || *owner != (__u64)t)
		return -1;
	return i;
}

/* The entry of a tracked task, or NULL. */
static __always_inline struct taskstate_map_entry *ts_entry_of(struct task_struct *t)
{
	long i = ts_index_of(t);
	__u32 k = i;

	return i < 0 ? NULL : bpf_map_lookup_elem(&entries, &k);
}

static __always_inline void ts_store_word(struct taskstate_map_entry *e, __u64 w)
{
	if (ts_weak_order)
		__sync_lock_test_and_set(&e->word, w);
	else
		TS_WRITE(e->word, w);
}

/*
 * module/entry.h's ts_pub_set(), totals always on: add the old state's
 * time to its total, then store the word.  The first word of an owner
 * may race with the snapshot's (ts_first()).
 */
static __always_inline bool ts_first(struct taskstate_map_entry *e, __u64 w)
{
	if (__sync_val_compare_and_swap(&e->word, 0, w) != 0)
		return false;
	e->start_ns = taskstate_since_ns(w);
	return true;
}

static __always_inline void ts_set(struct taskstate_map_entry *e,
				   unsigned int state, __u64 now)
{
	__u64 old = TS_READ(e->word);
	unsigned int total;
	__u64 d;

	if (taskstate_state(old) == state)
		return;
	if (!old) {
		if (ts_first(e, taskstate_pack(state, now)))
			return;
		old = TS_READ(e->word);
		if (taskstate_state(old) == state)
			return;
	}
	total = taskstate_total_of(taskstate_state(old));
	if (total >= TASKSTATE_MAP_NR_TOTALS)
		return;
	/* The difference mod 2^61, as ts_pub_add(): bit 60 is the sign. */
	d = (now - old) << (64 - TASKSTATE_TIME_BITS);
	if ((__s64)d < 0) {
		d = 0;
		now = taskstate_since_ns(old);
	}
	e->state_ns[total] += d >> (64 - TASKSTATE_TIME_BITS);
	ts_store_word(e, taskstate_pack(state, now));
}

/* module/probes.c's ts_prev_state(). */
static __always_inline unsigned int ts_prev_state(bool preempt,
						  struct task_struct *prev,
						  unsigned int prev_state)
{
	if (preempt || prev_state == TASK_RUNNING || ts_queued(prev))
		return TASKSTATE_RUNNABLE;
	return ts_state_from_linux(prev_state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ts_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct taskstate_map_entry *pe = ts_entry_of(prev);
	struct taskstate_map_entry *ne = ts_entry_of(next);
	__u64 now = 0;

	/*
	 * One clock read per event, as the module's: both words carry the
	 * same time.  (Not `if (!pe && !ne)`: clang ORs the two pointers,
	 * which the verifier refuses.)
	 */
	if (pe) {
		now = bpf_ktime_get_boot_ns();
		ts_set(pe, ts_prev_state(preempt, prev, prev_state), now);
	}
	if (ne) {
		if (!now)
			now = bpf_ktime_get_boot_ns();
		ts_set(ne, TASKSTATE_RUNNING, now);
	}
	return 0;
}

/* module/probes.c's ts_probe_wakeup(): on_cpu is exact here. */
static __always_inline void ts_woken(struct task_struct *p)
{
	struct taskstate_map_entry *e = ts_entry_of(p);

	if (e)
		ts_set(e, ts_on_cpu(p) ? TASKSTATE_RUNNING : TASKSTATE_RUNNABLE,
		       bpf_ktime_get_boot_ns());
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ts_wakeup, struct task_struct *p)
{
	ts_woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(ts_wakeup_new, struct task_struct *p)
{
	ts_woken(p);
	return 0;
}

/*
 * Bump an entry's gen, as a full barrier on every CPU.  The fetching form
 * (BPF_FETCH): an add whose result is unused compiles to a plain BPF_ADD,
 * which the arm64 JIT makes an unordered STADD; with the fetch it is
 * LDADDAL (or LL/SC and a dmb), lock xadd on x86.
 */
static __always_inline void ts_gen_bump(__u32 *gen)
{
	__u32 v = __sync_fetch_and_add(gen, 1);

	asm volatile("" : : "r"(v));
}

/*
 * Give task t an entry: pop a free index, take the entry (its tgid and
 * tid, then an odd gen, as the module's ts_pub_take()), record the owner,
 * publish the hint, then record the entry in tasks for the free.  The
 * entry's word and totals are zero: emptied when it was given back.
 * Returns the entry, or NULL (counted).
 *
 * The snapshot and a fork can claim one new task at once (copy_process()
 * makes it visible to the task iterator before task_newtask): the CAS of
 * the hint decides, and only the winner touches tasks.  A hint naming
 * another task is taken over: stale, or an exited thread's whose tid was
 * reused before it was freed (its free finds its entry through tasks).
 */
/* Mark entry i's owner's new tasks as tracked too, or not. */
static __always_inline void ts_set_inherit(long i, __u32 on)
{
	__u32 k = i, *in = bpf_map_lookup_elem(&inherit, &k);

	if (in)
		*in = on;
}

static __always_inline struct taskstate_map_entry *ts_claim(struct task_struct *t,
							   __u32 kin)
{
	__u32 tid = t->pid, old, i, j, *ip;
	struct taskstate_map_entry *e;
	__u32 *hint = bpf_map_lookup_elem(&hints, &tid), *tgid;
	__u64 *owner, key = (__u64)t;

	if (!hint) {
		ts_count(TS_BPF_STAT_TID);
		return NULL;
	}
	old = *hint;
	/*
	 * Its own entry already, found through tasks whatever its tid says
	 * (an exec's tid swap may be in progress, ts_exec()): this task's,
	 * or leaving, its UNTRACK cut short between its passes (the caller
	 * killed), which takes it back.  Else through the hint (an entry the
	 * tasks map could not record).
	 */
	ip = bpf_map_lookup_elem(&tasks, &key);
	if (ip) {
		j = *ip;
		owner = bpf_map_lookup_elem(&owners, &j);
		e = bpf_map_lookup_elem(&entries, &j);
		if (owner && e && *owner == key) {
			if (kin)
				ts_set_inherit(j, 1);
			return e;
		}
		if (owner && e && *owner == key + 1 &&
		    __sync_val_compare_and_swap(hint, old, j + 1) == old) {
			ts_set_inherit(j, kin);
			*owner = key;
			return e;
		}
	}
	if (old) {
		j = old - 1;
		owner = bpf_map_lookup_elem(&owners, &j);
		e = bpf_map_lookup_elem(&entries, &j);
		if (!owner || !e)
			return NULL;
		if (*owner == key) {
			if (kin)
				ts_set_inherit(j, 1);
			return e;
		}
	}
	if (bpf_map_pop_elem(&spare, &i)) {
		ts_count(TS_BPF_STAT_FULL);
		return NULL;
	}
	owner = bpf_map_lookup_elem(&owners, &i);
	e = bpf_map_lookup_elem(&entries, &i);
	tgid = bpf_map_lookup_elem(&tgids, &i);
	if (!owner || !e || !tgid)
		return NULL;	/* an index the loader never pushed */
	*tgid = t->tgid;
	e->tid = tid;
	/* Before the hint: a fork right after it must see it. */
	ts_set_inherit(i, kin);
	ts_gen_bump(&e->gen);	/* odd, after the tgid and tid */
	*owner = key;
	if (__sync_val_compare_and_swap(hint, old, i + 1) != old) {
		/* Another claim won; no probe could find this entry. */
		*owner = 0;
		ts_set_inherit(i, 0);
		ts_gen_bump(&e->gen);
		e->tid = 0;
		bpf_map_push_elem(&spare, &i, 0);
		/* The winner's entry, if it was a claim of this task too. */
		old = *hint;
		if (!old)
			return NULL;
		j = old - 1;
		owner = bpf_map_lookup_elem(&owners, &j);
		if (!owner || *owner != key)
			return NULL;
		return bpf_map_lookup_elem(&entries, &j);
	}
	/*
	 * Published: probes may write the entry now, so it is not undone if
	 * the update fails (an NMI inside another update on this CPU): the
	 * free then finds the entry through the hint.
	 */
	if (bpf_map_update_elem(&tasks, &key, &i, BPF_ANY))
		ts_count(TS_BPF_STAT_LOCKED);
	ts_count(TS_BPF_STAT_TRACKED);
	return e;
}

/*
 * Task t's own entry index, found through tasks (whatever its tid says
 * now: an exec's swap may be in progress), else through its hint; -1 if
 * it has none.
 */
static __always_inline long ts_own_index(struct task_struct *t)
{
	__u64 key = (__u64)t, *owner;
	__u32 *ip = bpf_map_lookup_elem(&tasks, &key), i;

	if (!ip)
		return ts_index_of(t);
	i = *ip;
	owner = bpf_map_lookup_elem(&owners, &i);
	return owner && *owner == key ? i : -1;
}

/*
 * Process records (uapi "DOC: Process totals"; lib/taskstate-bpf.h's
 * struct ts_bpf_rec and struct ts_bpf_memb), the module's, with these
 * differences (docs/design.md, "Two backends"):
 *  - a thread's totals move into its record's exited_ns at its exit
 *    (sched_process_exit), not at its free: its time from there to its
 *    death is in no total, as the module leaves it out of children_ns;
 *  - an answer never goes back from one PROCESS to the next in one
 *    reading process (the library keeps the last), not across processes.
 *
 * A record is made (a compare and exchange of its start_ns from 0: one
 * maker) and threads join it at task_newtask (a new task tracked: one
 * that leads its group makes its own, a thread joins its leader's) and
 * in TRACK's passes (ts_claim_iter(), ts_join).  A thread leaves it once
 * (a compare and exchange of its rec_start), at its exit, its UNTRACK
 * (ts_leave) or its free (if its exit did not: not attached then, or a
 * join in flight).  The record ends (start_ns 0) when its leader is
 * untracked or freed, or moves to the thread that takes the pid by an
 * exec (ts_take_pid()).
 */

/* include/linux/sched.h, 6.1 to 7.2: set before sched_process_exit. */
#define PF_EXITING		0x00000004

/* fetch-and-add that stays a full barrier (see ts_gen_bump()). */
static __always_inline __u64 ts_add(__u64 *p, __u64 v)
{
	__u64 old = __sync_fetch_and_add(p, v);

	asm volatile("" : : "r"(old));
	return old;
}

/*
 * Add v to a sum of thread time that stays at 2^64 - 1 once it gets
 * there (uapi: it saturates; a reader may see it wrapped in between).
 */
static __always_inline void ts_add_sat(__u64 *p, __u64 v)
{
	__u64 old = ts_add(p, v);

	if (old + v < old)
		__sync_lock_test_and_set(p, ~0ULL);
}

/*
 * module/table.c's ts_proc_totals(): entry e's totals up to now, its
 * current state's time included unless it is dead, into t.  False for an
 * entry with no word yet.  The word is read before the totals: a writer
 * adds to a total before it stores the word (ts_set()), so totals a
 * change already moved past the word's since-time count its current
 * state from there, not twice.
 */
static __always_inline bool ts_totals_now(struct taskstate_map_entry *e,
					  __u64 now, __u64 t[TASKSTATE_MAP_NR_TOTALS])
{
	__u64 word = TS_READ(e->word), start, ahead, since, age;
	unsigned int total;
	int k;

	ts_rmb();
	start = TS_READ(e->start_ns);
	ahead = start;
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
		t[k] = TS_READ(e->state_ns[k]);
		ahead += t[k];
	}
	if (!word)
		return false;
	since = taskstate_since_ns(word);
	ahead &= TASKSTATE_TIME_MASK;
	if (start && (__s64)(ahead - since) > 0)
		since = ahead;
	if (taskstate_state(word) == TASKSTATE_DEAD)
		return true;
	total = taskstate_total_of(taskstate_state(word));
	age = taskstate_age_ns(since, now);
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
		if (k == total)
			t[k] += age;
	return true;
}

/* The record thread m counts in, and its start_ns, or NULL. */
static __always_inline struct ts_bpf_rec *ts_memb_rec(struct ts_bpf_memb *m,
						      __u64 *rs)
{
	__u64 start = TS_READ(m->rec_start);
	__u32 ri = TS_READ(m->rec);
	struct ts_bpf_rec *r;

	if (start <= TS_MEMB_JOINING)
		return NULL;
	r = bpf_map_lookup_elem(&recs, &ri);
	if (!r || TS_READ(r->start_ns) != start)
		return NULL;
	*rs = start;
	return r;
}

/* Later than every record's start before (uapi start_ns). */
static __u64 ts_last_start;

/*
 * A new record at index li, empty, or NULL if one is there or being made
 * (its maker joins the leader; a thread that found it being made joins
 * at TRACK's last pass, ts_join, or not at all if it came by
 * task_newtask: then its time is missing from the record, a rare loss
 * noted in docs/design.md).  Its start_ns is written last.
 */
static __always_inline struct ts_bpf_rec *ts_rec_new(__u32 li, __u64 now)
{
	struct ts_bpf_rec *r = bpf_map_lookup_elem(&recs, &li);
	__u64 last, start = now;
	int k, tries;

	if (!r || __sync_val_compare_and_swap(&r->start_ns, 0, TS_REC_MAKING))
		return NULL;
	for (tries = 0; tries < 8; tries++) {
		last = TS_READ(ts_last_start);
		start = now > last ? now : last + 1;
		if (__sync_val_compare_and_swap(&ts_last_start, last, start) == last)
			break;
	}
	if (tries == 8)		/* still later than every start before */
		start = ts_add(&ts_last_start, 1) + 1;
	r->members = 0;
	r->nr_exited = 0;
	r->nr_children = 0;
	r->parent_start_ns = 0;
	r->ended = 0;
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
		r->exited_ns[k] = 0;
		r->children_ns[k] = 0;
	}
	__sync_lock_test_and_set(&r->start_ns, start);	/* after the rest */
	return r;
}

/*
 * The thread at index i leaves its record: its totals up to now, less
 * its base, move into exited_ns.  Returns the record it left, or NULL.
 * folds_begun is bumped before it stops counting live and folds_done
 * after its totals are in (lib/bpf.c's reader).
 */
static __always_inline struct ts_bpf_rec *ts_fold(__u32 i, __u64 now)
{
	struct ts_bpf_memb *m = bpf_map_lookup_elem(&membs, &i);
	struct taskstate_map_entry *e = bpf_map_lookup_elem(&entries, &i);
	__u64 t[TASKSTATE_MAP_NR_TOTALS] = {}, rs;
	struct ts_bpf_rec *r;
	int k;

	if (!m || !e)
		return NULL;
	r = ts_memb_rec(m, &rs);
	if (!r)
		return NULL;
	ts_add(&r->folds_begun, 1);
	/* Still that record (not ended meanwhile), and this thread's leave. */
	if (TS_READ(r->start_ns) != rs ||
	    __sync_val_compare_and_swap(&m->rec_start, rs, 0) != rs) {
		ts_add(&r->folds_done, 1);
		return NULL;
	}
	if (ts_totals_now(e, now, t))
		for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
			ts_add_sat(&r->exited_ns[k],
				   t[k] - (m->base_ns[k] < t[k] ? m->base_ns[k] : t[k]));
	ts_add(&r->nr_exited, 1);
	ts_add(&r->members, -1);
	ts_add(&r->folds_done, 1);
	return r;
}

/*
 * Process p's last thread exited (its signal's live count is 0) and its
 * record r has no member left: it ends, added to the record of its
 * parent (real_parent, a thread's is its leader's) if that has not ended
 * (uapi children_ns), with its own children.  Once: the first to set
 * ended adds it.
 */
static __always_inline void ts_rec_ended(struct task_struct *p, struct ts_bpf_rec *r)
{
	struct task_struct *parent = p->real_parent->group_leader;
	struct ts_bpf_rec *pr;
	__u64 ps, v, own;
	long pi;
	__u32 k;
	int j;

	if (__sync_val_compare_and_swap(&r->ended, 0, 1))
		return;
	pi = ts_own_index(parent);
	if (pi < 0)
		return;
	k = pi;
	pr = bpf_map_lookup_elem(&recs, &k);
	if (!pr || pr == r)
		return;
	ps = TS_READ(pr->start_ns);
	if (ps <= TS_MEMB_JOINING || TS_READ(pr->ended))
		return;
	for (j = 0; j < TASKSTATE_MAP_NR_TOTALS; j++) {
		own = TS_READ(r->exited_ns[j]);
		v = own + TS_READ(r->children_ns[j]);
		ts_add_sat(&pr->children_ns[j], v < own ? ~0ULL : v);
	}
	ts_add(&pr->nr_children, 1 + TS_READ(r->nr_children));
	TS_WRITE(r->parent_start_ns, ps);
}

/*
 * Exiting thread p (tracked at index i, or -1) leaves its record, and if
 * no thread of its process is live now (signal->live, which do_exit()
 * lowers before sched_process_exit) and none counts in the record, the
 * process has ended: whichever of its threads gets here last sees both.
 * The record is the one it left (an exec that swapped its tid and died
 * before sched_process_exec left it at the old leader's index), else its
 * leader's.
 */
static __always_inline void ts_exiting(struct task_struct *p, long i, __u64 now)
{
	struct task_struct *leader = p->group_leader;
	struct ts_bpf_rec *r = i >= 0 ? ts_fold(i, now) : NULL;
	__u32 k;

	if (p->signal->live.counter)
		return;
	if (!r) {
		i = leader == p ? i : ts_own_index(leader);
		if (i < 0)
			return;
		k = i;
		r = bpf_map_lookup_elem(&recs, &k);
	}
	if (r && TS_READ(r->start_ns) > TS_MEMB_JOINING && !TS_READ(r->members))
		ts_rec_ended(p, r);
}

/*
 * Task t, at index i, joins record r (at index li) now: what its totals
 * hold already stays out (base_ns).  Once: the first to mark its
 * rec_start joining joins it.  A thread that began to exit meanwhile
 * (its exit found it joining, and left it) leaves again at once.
 */
static __always_inline void ts_join_rec(struct task_struct *t, __u32 i, __u32 li,
					struct ts_bpf_rec *r, __u64 now)
{
	struct ts_bpf_memb *m = bpf_map_lookup_elem(&membs, &i);
	struct taskstate_map_entry *e = bpf_map_lookup_elem(&entries, &i);
	__u64 base[TASKSTATE_MAP_NR_TOTALS] = {}, old, rs, start;
	int k;

	if (!m || !e || ts_memb_rec(m, &rs))
		return;
	old = TS_READ(m->rec_start);
	if (old == TS_MEMB_JOINING ||
	    __sync_val_compare_and_swap(&m->rec_start, old, TS_MEMB_JOINING) != old)
		return;
	start = TS_READ(r->start_ns);
	if (start <= TS_MEMB_JOINING) {
		TS_WRITE(m->rec_start, 0);
		return;
	}
	ts_totals_now(e, now, base);
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
		m->base_ns[k] = base[k];
	m->join_ns = now;
	m->rec = li;
	ts_add(&r->members, 1);
	__sync_lock_test_and_set(&m->rec_start, start);
	/* The record ended or moved meanwhile (an exec): not in it. */
	if (TS_READ(r->start_ns) != start) {
		if (__sync_val_compare_and_swap(&m->rec_start, start, 0) == start)
			ts_add(&r->members, -1);
		return;
	}
	if (t->flags & PF_EXITING)
		ts_exiting(t, i, now);
}

/*
 * Task t, tracked at index i, joins its process's record if it counts in
 * none: its own, made now, if it leads its group, else its leader's, if
 * its leader is tracked (made now if it has none yet: a leader tracked is
 * a leader with a record, as in the module).  Not once it exits.
 */
static __always_inline void ts_join_task(struct task_struct *t, __u32 i, __u64 now)
{
	struct task_struct *leader = t->group_leader;
	struct ts_bpf_memb *m = bpf_map_lookup_elem(&membs, &i);
	struct ts_bpf_rec *r, *made;
	__u64 rs;
	long l;
	__u32 li;

	if (!m || (t->flags & PF_EXITING) || ts_memb_rec(m, &rs))
		return;
	l = leader == t ? (long)i : ts_own_index(leader);
	if (l < 0)
		return;
	li = l;
	r = bpf_map_lookup_elem(&recs, &li);
	if (!r)
		return;
	if (!TS_READ(r->start_ns)) {
		made = ts_rec_new(li, now);
		if (made)
			ts_join_rec(leader, li, li, made, now);
	}
	if (li != i)
		ts_join_rec(t, i, li, r, now);
}

/*
 * Task t, tracked at index j, has its process's pid now: an exec's tid
 * swap (de_thread()).  Its entry's tid and the pid's hint go with it,
 * and so does the record of its old leader if it counts in it, as the
 * module hands the record to it: the record first (its counts, under
 * folds_begun and folds_done, then its thread), then the hint, then the
 * old record ends, so that a PROCESS finds one or the other all along.
 * Every other thread of the process has exited, and so left the record,
 * before de_thread() returns (one still joining is left out of members).
 * A thread in no record (tracked alone) takes none, and the old one ends
 * at the old leader's free.  From sched_process_exec (tid its new pid),
 * or earlier from the old leader's free (only: that record; the hint
 * moved only from the old leader's index, hint_from; else 0).
 */
static __always_inline void ts_take_pid(__u32 j, __u32 tid, struct ts_bpf_rec *only,
					__u32 hint_from)
{
	struct taskstate_map_entry *e = bpf_map_lookup_elem(&entries, &j);
	struct ts_bpf_memb *m = bpf_map_lookup_elem(&membs, &j);
	struct ts_bpf_rec *from = NULL, *to = bpf_map_lookup_elem(&recs, &j);
	__u32 *hint = bpf_map_lookup_elem(&hints, &tid);
	__u64 rs;
	int k;

	if (!e || !hint || !m || !to)
		return;
	from = ts_memb_rec(m, &rs);
	if (only && from != only)
		return;
	if (from == to ||
	    (from && __sync_val_compare_and_swap(&to->start_ns, 0, TS_REC_MAKING)))
		from = NULL;
	if (from) {
		ts_add(&to->folds_begun, 1);
		/* It alone is live: a thread still joining then is not. */
		to->members = 1;
		to->nr_exited = TS_READ(from->nr_exited);
		to->nr_children = TS_READ(from->nr_children);
		to->parent_start_ns = TS_READ(from->parent_start_ns);
		to->ended = TS_READ(from->ended);
		for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++) {
			to->exited_ns[k] = TS_READ(from->exited_ns[k]);
			to->children_ns[k] = TS_READ(from->children_ns[k]);
		}
		TS_WRITE(m->rec, j);
		__sync_lock_test_and_set(&to->start_ns, rs);
		ts_add(&to->folds_done, 1);
	}
	e->tid = tid;
	if (hint_from)
		__sync_val_compare_and_swap(hint, hint_from, j + 1);
	else
		__sync_lock_test_and_set(hint, j + 1);
	if (from)
		TS_WRITE(from->start_ns, 0);
}

/* sched_process_exit: current, p, is exiting (do_exit()). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ts_exit, struct task_struct *p)
{
	ts_exiting(p, ts_own_index(p), bpf_ktime_get_boot_ns());
	return 0;
}

/*
 * task_newtask: every new task, from copy_process() once it cannot fail,
 * the creator being current.  Tracked with ts_track_all, else if its
 * creator is tracked with inheritance (a tracked process's new threads
 * and children), which it inherits.  It has not run: sched_wakeup_new
 * writes its first word.
 */
SEC("tp_btf/task_newtask")
int BPF_PROG(ts_newtask, struct task_struct *task)
{
	struct taskstate_map_entry *e = NULL;
	long i;
	__u32 k, *in;

	if (ts_track_all) {
		e = ts_claim(task, 0);
	} else {
		i = ts_index_of(bpf_get_current_task_btf());
		if (i < 0)
			return 0;
		k = i;
		in = bpf_map_lookup_elem(&inherit, &k);
		if (in && *in)
			e = ts_claim(task, 1);
	}
	/* Its process's record: its own, if it leads a new process. */
	i = e ? ts_own_index(task) : -1;
	if (i >= 0)
		ts_join_task(task, i, bpf_ktime_get_boot_ns());
	return 0;
}

/*
 * exec by a thread that is not the leader: de_thread() swapped its tid
 * with the leader's (exchange_tids()), so it now has the process's pid.
 * Move its hint there, and the entry's tid with it (same entry, same
 * gen), found through tasks.  From the swap until here its events find
 * the leader's hint and are missed; the iterators find it through tasks.
 * The leader's entry, if the leader is not freed yet, is given back when
 * it is (through tasks, not its tid).
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ts_exec, struct task_struct *p, int old_pid)
{
	__u32 tid = p->pid, old = old_pid, *ohint, i;
	long k;

	if (tid == old)
		return 0;
	/* Through tasks: its hint is at the old tid, or already taken. */
	k = ts_own_index(p);
	if (k < 0) {
		/*
		 * Not tracked: with ts_track_all a thread the load's snapshot
		 * missed, its tid swapped below where the walk had reached.
		 */
		if (ts_track_all)
			ts_claim(p, 0);
		return 0;
	}
	i = k;
	ts_take_pid(i, tid, NULL, 0);
	ohint = bpf_map_lookup_elem(&hints, &old);
	if (ohint)
		__sync_val_compare_and_swap(ohint, i + 1, 0);
	return 0;
}

/*
 * Give entry i back, if task key (its address) owns it, or is leaving it:
 * as the module's release and reset, gen even, tid 0, then the word and
 * totals.  The owner is cleared before the index is pushed, whose stack
 * lock orders all of it before the next claim's pop.  Only where no probe
 * can be writing the entry: its task freed, or (leaving_only) a grace
 * period after ts_leave() marked it leaving.
 */
static __always_inline int ts_release(__u64 key, __u32 i, bool leaving_only)
{
	struct taskstate_map_entry *e;
	struct ts_bpf_rec *rec;
	__u32 tid, *hint;
	__u64 *owner;
	int k;

	owner = bpf_map_lookup_elem(&owners, &i);
	e = bpf_map_lookup_elem(&entries, &i);
	if (!owner || !e || (*owner != key + 1 && (leaving_only || *owner != key)))
		return 0;
	/*
	 * Out of its record (if its exit did not take it out), and the
	 * record at its index ends: a leader's (uapi: with the process).
	 */
	ts_fold(i, bpf_ktime_get_boot_ns());
	rec = bpf_map_lookup_elem(&recs, &i);
	if (rec)
		TS_WRITE(rec->start_ns, 0);
	ts_set_inherit(i, 0);
	tid = e->tid;
	ts_gen_bump(&e->gen);	/* even, before the entry is emptied */
	e->tid = 0;
	e->word = 0;
	e->start_ns = 0;
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
		e->state_ns[k] = 0;
	*owner = 0;
	hint = bpf_map_lookup_elem(&hints, &tid);
	if (hint)
		__sync_val_compare_and_swap(hint, i + 1, 0);
	bpf_map_push_elem(&spare, &i, 0);
	ts_count(TS_BPF_STAT_FREED);
	return 1;
}

/*
 * sched_process_free: from delayed_put_task_struct(), an RCU callback
 * after the task's last switch and after it was unhashed.  No probe can
 * be writing its entry: give it back (ts_release()).  A leader whose
 * group_leader is another task now was replaced by an exec (de_thread()):
 * its record goes to that thread first, if it counts in it, which
 * sched_process_exec may not have done yet.
 */
SEC("tp_btf/sched_process_free")
int BPF_PROG(ts_free, struct task_struct *p)
{
	__u32 *ip, i, j, tid, *hint, *tgid;
	__u64 key = (__u64)p, lkey, *owner;
	struct ts_bpf_rec *rec;

	ip = bpf_map_lookup_elem(&tasks, &key);
	if (ip) {
		i = *ip;
		bpf_map_delete_elem(&tasks, &key);
	} else {
		/* Not in tasks (see ts_claim()): through its tid. */
		tid = p->pid;
		hint = bpf_map_lookup_elem(&hints, &tid);
		if (!hint || !*hint)
			return 0;
		i = *hint - 1;
	}
	/*
	 * Its group_leader's address only, never followed: that task may be
	 * freed too by now.  Found in tasks and still owning its entry, it
	 * takes the record only if it counts in it (ts_take_pid()).
	 */
	rec = bpf_map_lookup_elem(&recs, &i);
	lkey = (__u64)p->group_leader;
	tgid = bpf_map_lookup_elem(&tgids, &i);
	if (rec && tgid && lkey != key && TS_READ(rec->start_ns) > TS_MEMB_JOINING) {
		ip = bpf_map_lookup_elem(&tasks, &lkey);
		if (ip) {
			j = *ip;
			owner = bpf_map_lookup_elem(&owners, &j);
			if (owner && *owner == lkey)
				ts_take_pid(j, *tgid, rec, i + 1);
		}
	}
	ts_release(key, i, false);
	return 0;
}

/*
 * module/states.h's ts_state_of(): the state of a task not passing a
 * tracepoint now, for the snapshot.  The atomic on a dummy is the
 * smp_rmb() there (an on_cpu seen clear before the on_rq and __state the
 * switch-out left).
 */
static __always_inline unsigned int ts_state_of(struct task_struct *t)
{
	unsigned int st;

	if (ts_on_cpu(t))
		return TASKSTATE_RUNNING;
	ts_rmb();
	st = t->__state;
	if (st & TASK_NEW)
		return TASKSTATE_NONE;
	if (ts_queued(t))
		return TASKSTATE_RUNNABLE;
	return ts_state_from_linux(st);
}

/*
 * TRACK, UNTRACK and the snapshot at load: iter/task programs, pinned,
 * run by the loader and by the library (lib/bpf.c) over one thread, one
 * process's threads (bpf_iter_link_info's tid or pid) or every task,
 * one call at a time (the library holds a lock on the pin directory),
 * each in two passes with an RCU grace period between, as the module's
 * ts_snapshot() waits one (membarrier(MEMBARRIER_CMD_GLOBAL): lib/bpf.c).
 * Each writes one byte to its seq_file per thread it changed, which
 * the caller counts.
 *
 * TRACK: ts_claim_one (a thread) or ts_claim_kin (a process: its new
 * threads and children too) gives the entry, then ts_first_word writes
 * the first word if no probe has: the task's state now, since when the
 * scheduler's stamps say (ts_since_estimate()).  Without the wait, a
 * switch that looked the task up before the claim published it, and
 * changes on_cpu after the first word read it, would leave a running
 * task's word RUNNABLE until its next event.
 *
 * UNTRACK: ts_leave marks the owner leaving (its address + 1: no probe
 * matches it) and clears the hint; a grace period later no probe writes
 * the entry, and ts_untrack gives it back.  A task freed in between is
 * given back by its free.
 *
 * A task that has begun to exit is skipped by the claims: its free may
 * already have run, which would leave its entry taken forever.
 * exit_state read as 0 inside this RCU read-side section (the
 * iterator's) means the free cannot run before the section ends: it is
 * an RCU callback queued after exit_state was set.  The other passes
 * skip it too: its free gives its entry back.
 */
static __always_inline struct task_struct *ts_iter_task(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;

	return t && !t->exit_state ? t : NULL;
}

static __always_inline int ts_claim_iter(struct bpf_iter__task *ctx, __u32 kin)
{
	struct task_struct *t = ts_iter_task(ctx);
	long i;
	char c;

	if (!t)
		return 0;
	/* 't': it has an entry (new, or had), 'F': not (counted). */
	c = ts_claim(t, kin) ? 't' : 'F';
	/* Into its process's record from now (ts_join_task()). */
	i = c == 't' ? ts_own_index(t) : -1;
	if (i >= 0)
		ts_join_task(t, i, bpf_ktime_get_boot_ns());
	bpf_seq_write(ctx->meta->seq, &c, 1);
	return 0;
}

SEC("iter/task")
int ts_claim_one(struct bpf_iter__task *ctx)
{
	return ts_claim_iter(ctx, 0);
}

SEC("iter/task")
int ts_claim_kin(struct bpf_iter__task *ctx)
{
	return ts_claim_iter(ctx, 1);
}

/*
 * module/table.c's ts_since_estimate(), field for field: when a task not
 * passing a tracepoint entered its state, from the scheduler's own stamps
 * (sched_info's last arrival on a CPU and last queueing, the run time
 * since), read as there and bounded as there: never after now, never
 * before the task's start, now where nothing tells.  They are sched_clock
 * times, and no helper reads sched_clock: the offset to CLOCK_BOOTTIME is
 * taken against the calling task's own, its last arrival on this CPU plus
 * the run time counted since, which the scheduler brings up to date at
 * least every tick: the estimate is late by at most that.  (Not the run
 * queue's clock: the per-CPU runqueues symbol is not in arm64's
 * kallsyms, which the verifier needs.)
 */
static __always_inline __u64 ts_since_estimate(struct task_struct *t,
					       unsigned int state, __u64 now)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 start = t->start_boottime, arrival, queued = 0, ran = 0;
	__u64 offset, since, sum, prev;
	unsigned int policy = t->policy;
	bool on_rq;

	if (!bpf_core_field_exists(t->sched_info.last_queued))
		return now;
	offset = now - (cur->sched_info.last_arrival + cur->se.sum_exec_runtime -
			cur->se.prev_sum_exec_runtime);
	arrival = t->sched_info.last_arrival;
	on_rq = state == TASKSTATE_RUNNABLE && ts_queued(t);
	ts_rmb();
	if (state == TASKSTATE_RUNNABLE)
		queued = t->sched_info.last_queued;
	if (state == TASKSTATE_RUNNABLE && !queued &&
	    (!on_rq || t->__state == TASK_RUNNING))
		return now;
	if (!arrival && !queued)
		return now;
	/* SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE */
	if (policy == 0 || policy == 3 || policy == 5) {
		sum = t->se.sum_exec_runtime;
		prev = t->se.prev_sum_exec_runtime;
		if (sum > prev)
			ran = sum - prev;
	}
	since = arrival ? arrival + ran + offset : start;
	if (queued && (__s64)(queued + offset - since) > 0)
		since = queued + offset;
	if ((__s64)(since - now) > 0)
		return now;
	if ((__s64)(since - start) < 0)
		return start;
	return since;
}

/*
 * A first word dated back to since (the estimate) counts its state from
 * there; the record the thread joined, at its claim, counts it from the
 * join: the time between goes into its base (module/table.c's
 * ts_snapshot()).  Returns what it added; undo takes that back (the
 * first word was another's).
 */
static __always_inline __u64 ts_base_before_join(__u32 i, unsigned int state,
						 __u64 since, __u64 undo)
{
	struct ts_bpf_memb *m = bpf_map_lookup_elem(&membs, &i);
	unsigned int total = taskstate_total_of(state);
	__u64 rs, d;
	int k;

	if (!m || !ts_memb_rec(m, &rs))
		return 0;
	d = undo ? -undo : TS_READ(m->join_ns) - since;
	if (!undo && (__s64)d <= 0)
		return 0;
	for (k = 0; k < TASKSTATE_MAP_NR_TOTALS; k++)
		if (k == total)
			ts_add(&m->base_ns[k], d);
	return d;
}

SEC("iter/task")
int ts_first_word(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ts_iter_task(ctx);
	struct taskstate_map_entry *e;
	unsigned int state;
	__u64 since, ahead;
	__u32 k;
	long i;

	if (!t)
		return 0;
	i = ts_own_index(t);
	if (i < 0)
		return 0;
	k = i;
	e = bpf_map_lookup_elem(&entries, &k);
	if (!e)
		return 0;
	state = ts_state_of(t);
	if (state == TASKSTATE_NONE)
		return 0;
	since = ts_since_estimate(t, state, bpf_ktime_get_boot_ns());
	/* Into the base before the word: no reader counts it meanwhile. */
	ahead = ts_base_before_join(k, state, since, 0);
	if (!ts_first(e, taskstate_pack(state, since)) && ahead)
		ts_base_before_join(k, state, since, ahead);
	return 0;
}

SEC("iter/task")
int ts_leave(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ts_iter_task(ctx);
	struct taskstate_map_entry *e;
	struct ts_bpf_rec *rec;
	__u32 tid, k, *hint;
	__u64 *owner;
	char c = 'u';
	long i;

	if (!t)
		return 0;
	i = ts_own_index(t);
	if (i < 0)
		return 0;
	k = i;
	owner = bpf_map_lookup_elem(&owners, &k);
	e = bpf_map_lookup_elem(&entries, &k);
	if (!owner || !e)
		return 0;
	ts_set_inherit(i, 0);
	/*
	 * Its record: a leader's ends (uapi: UNTRACK of the leader), before
	 * its threads' passes; another thread's totals move into its
	 * process's.
	 */
	rec = t->group_leader == t ? bpf_map_lookup_elem(&recs, &k) : NULL;
	if (rec)
		TS_WRITE(rec->start_ns, 0);
	else
		ts_fold(k, bpf_ktime_get_boot_ns());
	*owner = (__u64)t + 1;
	/* The entry's tid: the task's may be mid-exec (ts_exec()). */
	tid = e->tid;
	hint = bpf_map_lookup_elem(&hints, &tid);
	if (hint)
		__sync_val_compare_and_swap(hint, k + 1, 0);
	bpf_seq_write(ctx->meta->seq, &c, 1);
	return 0;
}

SEC("iter/task")
int ts_untrack(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ts_iter_task(ctx);
	__u64 key;
	__u32 *ip;

	if (!t)
		return 0;
	key = (__u64)t;
	ip = bpf_map_lookup_elem(&tasks, &key);
	if (!ip)
		return 0;
	/* Only what ts_leave() marked: not a thread claimed since. */
	if (ts_release(key, *ip, true))
		bpf_map_delete_elem(&tasks, &key);
	return 0;
}

/*
 * TRACK's last pass, after the first words: each tracked thread joins its
 * process's record (ts_join_task()), from now.
 */
SEC("iter/task")
int ts_join(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ts_iter_task(ctx);
	long i;

	if (!t)
		return 0;
	i = ts_own_index(t);
	if (i >= 0)
		ts_join_task(t, i, bpf_ktime_get_boot_ns());
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
