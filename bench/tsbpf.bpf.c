// SPDX-License-Identifier: GPL-2.0
/*
 * What a user would write with libbpf instead of loading taskstate: BTF
 * tracepoint programs on the same scheduler events keeping, per thread,
 * the same packed word (state << 61 | CLOCK_BOOTTIME ns) and per-state
 * totals, in task storage.  Every thread is tracked (its storage is
 * created at its first event), as with track_all=1.  For the counted
 * benchmark (scripts/count.sh, configuration L); bench/tsbpf.c loads it.
 *
 * The kernel's types are declared here with the fields used only;
 * libbpf relocates them against the running kernel's BTF (CO-RE).
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct task_struct {
	int pid;
	int on_rq;
	int on_cpu;
} __attribute__((preserve_access_index));

#define STATE_SHIFT	61
#define TIME_MASK	((1ULL << STATE_SHIFT) - 1)
#define RUNNING		1
#define RUNNABLE	2
#define SLEEPING	3
#define BLOCKED		4
#define STOPPED		5
#define TRACED		6
#define DEAD		7

/* The module's entry: the word, the owner's start and the five totals. */
struct entry {
	__u64 word;
	__u64 start_ns;
	__u64 state_ns[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct entry);
} words SEC(".maps");

/* The module's state_from_linux() (module/states.h), 6.1's bits. */
static __always_inline unsigned int from_linux(unsigned int st)
{
	if (st & 0x80)			/* TASK_DEAD */
		return DEAD;
	if (st & 0x8)			/* __TASK_TRACED */
		return TRACED;
	if (st & (0x4 | 0x8000))	/* __TASK_STOPPED, TASK_FROZEN */
		return STOPPED;
	if (st & (0x1 | 0x40))		/* INTERRUPTIBLE, PARKED */
		return SLEEPING;
	if (st & 0x2)			/* UNINTERRUPTIBLE */
		return (st & 0x400) ? SLEEPING : BLOCKED;
	if (st & 0x1000)		/* TASK_RTLOCK_WAIT */
		return BLOCKED;
	return RUNNABLE;
}

static __always_inline void set(struct task_struct *t, unsigned int state,
				__u64 now)
{
	struct entry *e = bpf_task_storage_get(&words, t, 0,
					       BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 old, since, d;
	unsigned int os;

	if (!e)
		return;
	old = e->word;
	os = old >> STATE_SHIFT;
	if (os == state)
		return;
	if (!old) {
		e->start_ns = now & TIME_MASK;
	} else {
		since = old & TIME_MASK;
		d = (now - since) & TIME_MASK;
		if (d > (TIME_MASK >> 1)) {
			d = 0;
			now = since;
		}
		os -= 1;	/* the module's taskstate_total_of() */
		if (os > 4)
			os = 4;
		e->state_ns[os] += d;
	}
	e->word = ((__u64)state << STATE_SHIFT) | (now & TIME_MASK);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ts_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_boot_ns();
	unsigned int ps = RUNNABLE;

	if (!preempt && prev_state && !prev->on_rq)
		ps = from_linux(prev_state);
	set(prev, ps, now);
	set(next, RUNNING, now);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ts_wakeup, struct task_struct *p)
{
	set(p, p->on_cpu ? RUNNING : RUNNABLE, bpf_ktime_get_boot_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(ts_wakeup_new, struct task_struct *p)
{
	set(p, p->on_cpu ? RUNNING : RUNNABLE, bpf_ktime_get_boot_ns());
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
