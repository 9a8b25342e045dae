/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TASKSTATE_READERS_H
#define TASKSTATE_READERS_H

#include <linux/types.h>

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

/* mmap.c */
void ts_map_info(struct taskstate_info *info);
int ts_dev_mmap(struct file *file, struct vm_area_struct *vma);
long ts_ioctl_locate(void __user *uarg);

#endif /* TASKSTATE_READERS_H */
