/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TASKSTATE_READERS_H
#define TASKSTATE_READERS_H

#include <linux/types.h>

void ts_debugfs_init(void);
void ts_debugfs_exit(void);
int ts_dev_init(bool track_all);
void ts_dev_exit(void);

#endif /* TASKSTATE_READERS_H */
