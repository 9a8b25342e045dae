/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe microbenchmark (scripts/bench.sh builds it: TS_BENCH=1).
 * Kbuild forces this header in before every file of the module and links
 * bench.c in; it defines two hooks of module/hooks.h: ts_probes_init()
 * hands over the sched_switch probe, and the end of the load runs the
 * benchmark (bench.c says what it times).
 */
#ifndef TASKSTATE_BENCH_KMOD_BENCH_H
#define TASKSTATE_BENCH_KMOD_BENCH_H

void ts_bench_set_probe(void *probe);
void ts_bench_probe(void);

#define ts_hook_switch_probe(probe)	ts_bench_set_probe(probe)
#define ts_hook_loaded()		ts_bench_probe()

#endif /* TASKSTATE_BENCH_KMOD_BENCH_H */
