/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The readers' entry points: debugfs.c (the table as text), dev.c (the
 * device and its ioctls), mmap.c (the mapping, which dev.c's file
 * operations and INFO use).
 */
#ifndef TASKSTATE_READERS_H
#define TASKSTATE_READERS_H

#include <linux/types.h>

struct file;
struct taskstate_info;
struct ts_scope;
struct vm_area_struct;

void ts_debugfs_init(void);
void ts_debugfs_exit(void);
int ts_dev_init(bool track_all);
void ts_dev_exit(void);
void ts_map_info(struct taskstate_info *info, const struct ts_scope *sc);
int ts_dev_mmap(struct file *file, struct vm_area_struct *vma);

#endif /* TASKSTATE_READERS_H */
