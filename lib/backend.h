/* SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0 */
/*
 * The library's second backend, the pinned BPF maps (lib/bpf.c), as
 * libtaskstate.c calls it: each call that has a descriptor asks
 * ts_is_bpf() which backend it belongs to.  Return values as the public
 * functions of the same name.
 */
#ifndef LIBTASKSTATE_BACKEND_H
#define LIBTASKSTATE_BACKEND_H

#include "libtaskstate.h"

/* The pinned entries map's fd (close-on-exec), or -errno (-ENOENT: none). */
int ts_bpf_open(void);
/* 1 if fd is the BPF backend's, 0 if the module's device, or -errno. */
int ts_is_bpf(int fd);
int ts_bpf_info(int fd, struct taskstate_info *info);
int ts_bpf_track(int fd, unsigned int id, bool process, uint64_t *nr_threads);
int ts_bpf_untrack(int fd, unsigned int id, bool process, uint64_t *nr_threads);
int ts_bpf_sample(int fd, struct taskstate_entry *e,
		  struct taskstate_totals *t, uint32_t n);
int ts_bpf_list(int fd, unsigned int pid, struct taskstate_entry **out,
		struct taskstate_totals **totals, uint32_t *n);
int ts_bpf_mapping_open(int fd, struct taskstate_mapping *m);
int ts_bpf_locate(int fd, struct taskstate_location *l, uint32_t n);
int ts_bpf_process(int fd, unsigned int pid, struct taskstate_process *p);

#endif /* LIBTASKSTATE_BACKEND_H */
