/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Scoped descriptors: /dev/taskstate opened without CAP_PERFMON or
 * CAP_SYS_ADMIN in the initial user namespace (scope.c).
 */
#ifndef TASKSTATE_SCOPE_H
#define TASKSTATE_SCOPE_H

#include <linux/list.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include "table.h"

struct cred;
struct pid;
struct task_struct;

/* One user's scoped descriptors, and the slots they hold (ts_lock). */
struct ts_user {
	struct list_head node;		/* ts_users, ts_users_mutex */
	kuid_t uid;
	unsigned int nr_scopes;		/* ts_users_mutex */
	unsigned int nr_slots;		/* ts_lock */
	unsigned int nr_pages;		/* ts_lock: its descriptors' mappings */
};

/*
 * What a scoped descriptor (one open file, however many holders) sees:
 * the process that opened it and that process's descendants, under the
 * opener's credentials (ts_scope_sees()); and the slots it inserted,
 * which end with it (ts_untrack_owned()).
 */
struct ts_scope {
	struct pid *tgid;		/* the opener's process */
	const struct cred *cred;	/* the opener's */
	struct ts_user *user;
	struct ts_owner owner;		/* its slots, table.c's */
};

/*
 * What an open /dev/taskstate holds: its scope (NULL: privileged, it
 * sees every thread), and the log of thread exits its first TRACK with
 * TASKSTATE_TRACK_EXITS made (dev.c), or NULL.
 */
struct ts_file {
	struct ts_scope *sc;
	struct ts_exits *exits;
};

extern bool ts_unprivileged;

struct ts_scope *ts_scope_new(void);
void ts_scope_put(struct ts_scope *sc);
bool ts_scope_sees(const struct ts_scope *sc, struct task_struct *t);

#endif /* TASKSTATE_SCOPE_H */
