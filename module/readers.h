/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TASKSTATE_READERS_H
#define TASKSTATE_READERS_H

#include <linux/build_bug.h>
#include <linux/minmax.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/types.h>
#include <linux/uaccess.h>

struct file;
struct taskstate_info;
struct vm_area_struct;

void ts_debugfs_init(void);
void ts_debugfs_exit(void);
int ts_dev_init(bool track_all);
void ts_dev_exit(void);

/* dev.c: the extensible-struct rules, for every ioctl. */
long ts_get_args(void *karg, size_t ksize, size_t ver0, void __user *uarg);
int ts_put_args(void __user *uarg, const void *karg, size_t ksize,
		size_t usize);

/*
 * Does the user pointer in a 64-bit field fit this kernel's pointers?
 * u64_to_user_ptr() keeps only the low half on a 32-bit kernel: an
 * address with bits above them set cannot be the caller's, and is
 * refused (EFAULT) rather than truncated into another one.  Checked only
 * when the array will be used (count > 0), as a 64-bit kernel never
 * looks at it otherwise.
 */
static inline bool ts_user_ptr_fits(u64 addr)
{
	return addr == (uintptr_t)addr;
}

/*
 * The batch loop of SAMPLE and LOCATE: @count records of @size bytes (16:
 * both start with the tid) in the user array at @uaddr, each answered in
 * place by @one() under rcu_read_lock() and copied back, in chunks of 32
 * (512 bytes of stack), rescheduling between chunks (up to 2048 of them).
 * Returns how many @one() found, or -EFAULT.  Always inlined, so that
 * @one() stays a direct call in each caller.
 */
#define TS_BATCH_CHUNK	32
#define TS_BATCH_RECORD	16

static __always_inline long
ts_batch(u64 uaddr, u32 count, size_t size,
	 bool (*one)(void *rec, struct pid_namespace *ns))
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	u8 buf[TS_BATCH_CHUNK * TS_BATCH_RECORD];
	u8 __user *ubuf;
	u32 i, n, done;
	long found = 0;

	BUILD_BUG_ON(size != TS_BATCH_RECORD);
	if (count && !ts_user_ptr_fits(uaddr))
		return -EFAULT;
	ubuf = u64_to_user_ptr(uaddr);
	for (done = 0; done < count; done += n) {
		cond_resched();
		n = min_t(u32, count - done, TS_BATCH_CHUNK);
		if (copy_from_user(buf, ubuf + done * size, n * size))
			return -EFAULT;
		rcu_read_lock();
		for (i = 0; i < n; i++)
			found += one(buf + i * size, ns);
		rcu_read_unlock();
		if (copy_to_user(ubuf + done * size, buf, n * size))
			return -EFAULT;
	}
	return found;
}

/* mmap.c */
void ts_map_info(struct taskstate_info *info);
int ts_dev_mmap(struct file *file, struct vm_area_struct *vma);
long ts_ioctl_locate(void __user *uarg);

#endif /* TASKSTATE_READERS_H */
