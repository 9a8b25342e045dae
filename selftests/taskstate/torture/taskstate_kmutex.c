// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: a kernel mutex that a kernel thread holds, for a user
 * thread to block on (selftests/taskstate/ts_kmutex.c).
 *
 * The owner, a kernel thread bound to CPU @cpu, takes the mutex when told
 * to and then stays runnable, spinning, until told to let go (or @hold_ms
 * passed): proxy execution (CONFIG_SCHED_PROXY_EXEC) lends a waiter's
 * place on its run queue only to an owner that is queued itself.  A user
 * thread on the same CPU blocks on it by writing to "lock": there the
 * owner is never on a CPU while the waiter runs, so the waiter does not
 * spin on the owner (mutex_optimistic_spin()) but sleeps at once.
 *
 * debugfs, in taskstate_kmutex/:
 *   hold    write 1: the owner takes the mutex (returns once it holds it);
 *           write 0: it lets go (returns once it has unlocked)
 *   lock    write 0: mutex_lock(), 1: mutex_lock_interruptible(); then
 *           unlock; returns when done (-EINTR if interrupted)
 *   waiter  read: "tid T queued Q": the thread inside "lock" (0: none)
 *           and whether it is on its run queue now (on_rq, read without
 *           the run queue lock: a hint that holds while it waits)
 * The read-only parameter proxy_exec says whether the kernel was built
 * with proxy execution.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU the owner is bound to (default 1)");

static unsigned int hold_ms = 30000;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "The owner lets go after this long at most (default 30000)");

static bool proxy_exec = IS_ENABLED(CONFIG_SCHED_PROXY_EXEC);
module_param(proxy_exec, bool, 0444);
MODULE_PARM_DESC(proxy_exec, "Result: the kernel has CONFIG_SCHED_PROXY_EXEC");

static DEFINE_MUTEX(tk_mutex);
static DECLARE_WAIT_QUEUE_HEAD(tk_wq);
static bool tk_want, tk_held;
static DEFINE_SPINLOCK(tk_waiter_lock);
static struct task_struct *tk_waiter;	/* under tk_waiter_lock */
static struct task_struct *tk_owner;
static struct dentry *tk_dir;

static int tk_owner_fn(void *unused)
{
	unsigned long end;

	for (;;) {
		wait_event_interruptible(tk_wq, READ_ONCE(tk_want) ||
					 kthread_should_stop());
		if (kthread_should_stop())
			break;
		mutex_lock(&tk_mutex);
		WRITE_ONCE(tk_held, true);
		wake_up_all(&tk_wq);
		end = jiffies + msecs_to_jiffies(hold_ms);
		while (READ_ONCE(tk_want) && !kthread_should_stop() &&
		       time_before(jiffies, end)) {
			/* Also a quiescent state for RCU-tasks (see qsleeper). */
			cond_resched_tasks_rcu_qs();
			cpu_relax();
		}
		mutex_unlock(&tk_mutex);
		WRITE_ONCE(tk_want, false);
		WRITE_ONCE(tk_held, false);
		wake_up_all(&tk_wq);
	}
	return 0;
}

static ssize_t tk_hold_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *ppos)
{
	bool on;
	int ret;

	ret = kstrtobool_from_user(buf, len, &on);
	if (ret)
		return ret;
	WRITE_ONCE(tk_want, on);
	wake_up_all(&tk_wq);
	ret = wait_event_interruptible(tk_wq, READ_ONCE(tk_held) == on);
	return ret ? ret : len;
}

static ssize_t tk_lock_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *ppos)
{
	bool intr;
	int ret;

	ret = kstrtobool_from_user(buf, len, &intr);
	if (ret)
		return ret;
	spin_lock(&tk_waiter_lock);
	if (tk_waiter) {
		spin_unlock(&tk_waiter_lock);
		return -EBUSY;
	}
	tk_waiter = current;
	spin_unlock(&tk_waiter_lock);
	if (intr) {
		ret = mutex_lock_interruptible(&tk_mutex);
	} else {
		mutex_lock(&tk_mutex);
		ret = 0;
	}
	if (!ret)
		mutex_unlock(&tk_mutex);
	spin_lock(&tk_waiter_lock);
	tk_waiter = NULL;
	spin_unlock(&tk_waiter_lock);
	return ret ? ret : len;
}

static ssize_t tk_waiter_read(struct file *file, char __user *buf,
			      size_t len, loff_t *ppos)
{
	int tid = 0, queued = 0, n;
	char s[48];

	/* The waiter clears tk_waiter before it returns: alive in here. */
	spin_lock(&tk_waiter_lock);
	if (tk_waiter) {
		tid = task_pid_nr(tk_waiter);
		/* Stored under its run queue lock, which is not ours. */
		queued = !!data_race(READ_ONCE(tk_waiter->on_rq));
	}
	spin_unlock(&tk_waiter_lock);
	n = scnprintf(s, sizeof(s), "tid %d queued %d\n", tid, queued);
	return simple_read_from_buffer(buf, len, ppos, s, n);
}

static const struct file_operations tk_hold_fops = {
	.owner = THIS_MODULE,
	.write = tk_hold_write,
	.llseek = noop_llseek,
};

static const struct file_operations tk_lock_fops = {
	.owner = THIS_MODULE,
	.write = tk_lock_write,
	.llseek = noop_llseek,
};

static const struct file_operations tk_waiter_fops = {
	.owner = THIS_MODULE,
	.read = tk_waiter_read,
	.llseek = default_llseek,
};

static int __init tk_init(void)
{
	struct task_struct *t;

	if (cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	t = kthread_create(tk_owner_fn, NULL, "ts_kmutex_owner");
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	tk_owner = t;
	wake_up_process(t);
	tk_dir = debugfs_create_dir("taskstate_kmutex", NULL);
	debugfs_create_file("hold", 0200, tk_dir, NULL, &tk_hold_fops);
	debugfs_create_file("lock", 0200, tk_dir, NULL, &tk_lock_fops);
	debugfs_create_file("waiter", 0444, tk_dir, NULL, &tk_waiter_fops);
	return 0;
}

static void __exit tk_exit(void)
{
	/* No writer is left: each holds a reference on the module. */
	debugfs_remove_recursive(tk_dir);
	kthread_stop(tk_owner);
}

module_init(tk_init);
module_exit(tk_exit);
MODULE_DESCRIPTION("taskstate test: a kernel mutex a kernel thread holds, for a user thread to block on");
MODULE_LICENSE("GPL");
