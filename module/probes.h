/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TASKSTATE_PROBES_H
#define TASKSTATE_PROBES_H

#include <linux/types.h>

int ts_probes_register(bool track_all);
void ts_probes_unregister(void);

#ifdef TS_BENCH
void ts_bench_probe(void);
#else
static inline void ts_bench_probe(void)
{
}
#endif

#endif /* TASKSTATE_PROBES_H */
