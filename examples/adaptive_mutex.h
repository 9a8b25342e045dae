/* SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0 */
/*
 * An adaptive mutex on a futex, whose waiters spin while the owner is on a
 * CPU and sleep otherwise, the way the kernel's own mutexes do: they read
 * the owner's scheduling state from the taskstate mapping, without a
 * system call.  Without the mapping (no module, no privilege, not in the
 * initial pid namespace) it is a plain futex mutex that never spins.
 *
 * The lock word is 0 when free, else the owner's tid (gettid()), with
 * AMUTEX_WAITERS set once a waiter may sleep in the futex.  Beside it the
 * owner publishes the index of its entry in the mapping, located once per
 * thread; a waiter trusts that index only while the entry's tid is the
 * owner's tid in the lock word, so a stale index (a new owner that has
 * not published its own yet) only makes a waiter sleep instead of spin.
 *
 * Process-private (FUTEX_PRIVATE_FLAG): not for memory shared between
 * processes.  Not recursive.
 *
 * An owner that exits while holding the lock: the next waiter that sees it
 * gone (its entry DEAD in the mapping, or, at the latest, when its futex
 * wait times out every amutex_dead_check_ns, tgkill() answering ESRCH or
 * /proc showing a zombie) takes the lock over and gets EOWNERDEAD, as with
 * a robust pthread mutex; the caller then owns the lock and must make the
 * data it protects consistent.  Undetected: a dead owner whose tid was
 * already reused by a live thread of the same process (the waiters then
 * wait, as on a non-robust mutex).
 */
#ifndef ADAPTIVE_MUTEX_H
#define ADAPTIVE_MUTEX_H

#include <stdint.h>

#define AMUTEX_WAITERS		0x80000000U
#define AMUTEX_TID_MASK		0x3fffffffU
#define AMUTEX_NO_INDEX		0xffffffffU	/* TASKSTATE_LOCATE_NONE */

struct amutex {
	uint32_t word;		/* 0, or owner tid | AMUTEX_WAITERS */
	uint32_t owner_index;	/* hint: the owner's entry in the mapping */
	uint32_t spin_ns;	/* what its spins that paid off took; 0: none yet */
};

#define AMUTEX_INITIALIZER	{ 0, AMUTEX_NO_INDEX, 0 }

/*
 * A waiter spins at most 4x what the lock's spins that ended in the lock
 * took (a moving average), within [AMUTEX_SPIN_MIN_NS,
 * amutex_spin_max_ns]; a spin cut short shrinks that average.  So a lock
 * whose owners hold it long, or whose "running" owners make no progress
 * (a vCPU the host has preempted looks RUNNING to the guest), wastes
 * little on spins that do not pay.
 */
#define AMUTEX_SPIN_MIN_NS	10000

/* amutex_setup() flags */
#define AMUTEX_PLAIN		(1U << 0)	/* never use the mapping */
#define AMUTEX_NO_TRACK		(1U << 1)	/* do not TRACK untracked threads */

/*
 * Process-wide setup, once, before the first lock (otherwise the first
 * lock does it with flags 0): opens /dev/taskstate, maps it, and keeps
 * both for the life of the process.  With the module's track_all=0, each
 * thread that takes a lock TRACKs itself the first time (unless
 * AMUTEX_NO_TRACK), so waiters can see it.  Returns 1 if waiters read
 * owners through the mapping, 0 if the mutexes run as plain futex
 * mutexes; later calls return the same and ignore flags.
 */
int amutex_setup(unsigned int flags);

/* Longest a waiter ever spins in one go before it sleeps; default 100 us. */
extern uint64_t amutex_spin_max_ns;

/*
 * How long a waiter sleeps in the futex before it checks whether the
 * owner still lives; default 50 ms.  0: no timeout (a dead owner is then
 * found only through the mapping, while its entry reads DEAD).
 */
extern uint64_t amutex_dead_check_ns;

void amutex_init(struct amutex *m);

/* 0, or EOWNERDEAD: the owner died holding it, the caller now owns it. */
int amutex_lock(struct amutex *m);

/* 0, or EBUSY. */
int amutex_trylock(struct amutex *m);

/* 0, or EPERM if the caller does not own it. */
int amutex_unlock(struct amutex *m);

/* What this thread's lock calls did (for tests and benchmarks). */
struct amutex_stats {
	uint64_t fast;		/* taken at once */
	uint64_t spun;		/* taken after spinning, without sleeping */
	uint64_t sleeps;	/* futex waits */
	uint64_t timeouts;	/* futex waits ended by amutex_dead_check_ns */
	uint64_t spin_limit;	/* spins cut short by the bound */
	uint64_t unknown;	/* waits with the owner's state unreadable */
	uint64_t owner_dead;	/* EOWNERDEAD returned */
};

const struct amutex_stats *amutex_thread_stats(void);

#endif /* ADAPTIVE_MUTEX_H */
