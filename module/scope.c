// SPDX-License-Identifier: GPL-2.0
/*
 * Scoped descriptors.  /dev/taskstate opened without CAP_PERFMON or
 * CAP_SYS_ADMIN in the initial user namespace gives a descriptor that
 * sees, and changes, only the opener's own process and its descendants:
 * what the opener could already read of them in /proc/PID/task/, with
 * the rule Yama's ptrace scope 1 applies (a descendant, at the time of
 * each call), and the credential and dumpability checks ptrace's
 * PTRACE_MODE_READ_REALCREDS makes (ptrace_may_access() is not exported
 * to modules; this is its check against the opener's credentials, not
 * the caller's: the descriptor is the capability, as a privileged one
 * is).  A thread outside the scope answers as a tid that does not exist
 * (dev.c).
 *
 * What a scoped descriptor inserted into the table (its TRACKs, and the
 * threads and children those create while tracked with inheritance) is
 * its (struct ts_owner, table.c keeps it) and charged to its user
 * (ts_user), up to user_share percent of the table, and all unprivileged
 * users together to half of it, so that root's tools always find room;
 * it ends when the descriptor's last holder closes it (the device's
 * release), if the thread has not ended before.
 * Tracking that someone else set up (root's TRACK, track_all) is never
 * changed by a scoped descriptor.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include "compat.h"
#include "scope.h"

bool ts_unprivileged = true;
module_param_named(unprivileged, ts_unprivileged, bool, 0644);
MODULE_PARM_DESC(unprivileged,
		 "Let a user without CAP_PERFMON open /dev/taskstate, scoped to the opener's own process and its descendants (default 1). 0 refuses such opens with EPERM from then on; descriptors already open keep working.");

static LIST_HEAD(ts_users);
static DEFINE_MUTEX(ts_users_mutex);

/*
 * The uid a scoped open is charged to.  Inside a user namespace that an
 * unprivileged user made (directly or nested), that user, the owner of
 * the outermost one: the uids it maps (subordinate ranges, thousands of
 * them) are all one person's, and must not multiply its share.  Else
 * (the initial namespace, or one root made and gave its own uid range,
 * as rootful container engines do) the opener's real uid.
 */
static kuid_t ts_account_uid(const struct cred *cred)
{
	struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return uid_eq(ns->owner, GLOBAL_ROOT_UID) ? cred->uid : ns->owner;
}

/**
 * ts_scope_new() - the scope of a descriptor opened without privilege
 *
 * The caller's process, its credentials, and its user's account.  Two
 * small allocations, charged to the caller's memory cgroup and freed
 * with the file: a user holds no more of them than open files.
 *
 * Context: process context (open()); may sleep.
 * Return: the scope, or NULL for no memory.
 */
struct ts_scope *ts_scope_new(void)
{
	kuid_t uid = ts_account_uid(current_cred());
	struct ts_user *u, *nu;
	struct ts_scope *sc;

	sc = kzalloc(sizeof(*sc), GFP_KERNEL_ACCOUNT);
	nu = kzalloc(sizeof(*nu), GFP_KERNEL_ACCOUNT);
	if (!sc || !nu)
		goto out_free;
	mutex_lock(&ts_users_mutex);
	list_for_each_entry(u, &ts_users, node)
		if (uid_eq(u->uid, uid))
			goto found;
	u = nu;
	nu = NULL;
	u->uid = uid;
	list_add(&u->node, &ts_users);
found:
	u->nr_scopes++;
	mutex_unlock(&ts_users_mutex);
	kfree(nu);
	sc->user = u;
	sc->tgid = get_pid(task_tgid(current));
	sc->cred = get_current_cred();
	ts_owner_init(&sc->owner, &u->nr_slots, &u->nr_pages, sc->cred);
	return sc;

out_free:
	kfree(nu);
	kfree(sc);
	return NULL;
}

/**
 * ts_scope_put() - the descriptor's last holder closed it
 * @sc: its scope, whose slots the caller untracked (ts_untrack_owned())
 *
 * Context: process context (release()); may sleep.
 */
void ts_scope_put(struct ts_scope *sc)
{
	struct ts_user *u = sc->user;

	mutex_lock(&ts_users_mutex);
	if (!--u->nr_scopes) {
		list_del(&u->node);
		kfree(u);
	}
	mutex_unlock(&ts_users_mutex);
	put_pid(sc->tgid);
	put_cred(sc->cred);
	kfree(sc);
}

/*
 * Is @t the opener's process or a descendant of it?  Yama's
 * task_is_descendant(): up the real_parent links, each a process's
 * (a thread's real_parent is its leader's), to the idle task (pid 0).
 * Under rcu_read_lock().
 */
static bool ts_scope_descends(const struct ts_scope *sc,
			      struct task_struct *t)
{
	struct task_struct *root = pid_task(sc->tgid, PIDTYPE_TGID);
	struct task_struct *w;

	if (!root)
		return false;
	for (w = t; w->pid > 0; w = rcu_dereference(w->real_parent))
		if (same_thread_group(w, root))
			return true;
	return false;
}

/*
 * ptrace's PTRACE_MODE_READ_REALCREDS credential check (6.1
 * kernel/ptrace.c, __ptrace_may_access()), with the opener's real ids:
 * all of @t's uids and gids are the opener's.  Under rcu_read_lock().
 */
static bool ts_scope_ids_match(const struct ts_scope *sc,
			       struct task_struct *t)
{
	const struct cred *o = sc->cred, *c = __task_cred(t);

	return uid_eq(o->uid, c->euid) && uid_eq(o->uid, c->suid) &&
	       uid_eq(o->uid, c->uid) && gid_eq(o->gid, c->egid) &&
	       gid_eq(o->gid, c->sgid) && gid_eq(o->gid, c->gid);
}

/**
 * ts_scope_sees() - is @t in the scope of a descriptor?
 * @sc: the descriptor's scope, NULL for a privileged one
 * @t: a task found by its pid, or held
 *
 * A privileged descriptor sees every task.  A scoped one sees the
 * opener's process and its descendants (now: an orphan adopted by
 * init or a subreaper is no longer one), whose ids are all the opener's
 * and that are dumpable: exec of a set-user-ID or set-group-ID program
 * changes the ids (or, where the ids stay, makes the process
 * non-dumpable, as PR_SET_DUMPABLE 0 does), and the task leaves the
 * scope.  A task whose mm is gone (exiting, or a zombie leader) is
 * judged by the dumpability it had then, as ptrace judges it
 * (ts_task_dumpable()).  A task already released (!pid_alive())
 * is seen by no scope: its real_parent is no longer kept current, and
 * the walk up from it could meet a freed parent.
 *
 * Context: process context, under rcu_read_lock(), @t held or found in
 * that section; takes task_lock(@t), a spinlock_t, so never under
 * ts_lock.
 * Return: whether the descriptor may see @t.
 */
bool ts_scope_sees(const struct ts_scope *sc, struct task_struct *t)
{
	if (!sc)
		return true;
	if (!pid_alive(t) || !ts_scope_descends(sc, t) ||
	    !ts_scope_ids_match(sc, t))
		return false;
	/*
	 * The ids before the dumpability, as __ptrace_may_access() orders
	 * them: pairs with commit_creds(), which makes a task non-dumpable
	 * before it installs new ids.
	 */
	smp_rmb();
	return ts_task_dumpable(t);
}
