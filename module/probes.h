/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TASKSTATE_PROBES_H
#define TASKSTATE_PROBES_H

#include <linux/types.h>

int ts_probes_init(bool track_all);
void ts_probes_exit(void);
int ts_probes_get(void);
void ts_probes_put(void);
void ts_probes_idle(void);

#endif /* TASKSTATE_PROBES_H */
