// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * The adaptive mutex of adaptive_mutex.h.
 *
 * The futex protocol is the classic three-state one (free, locked, locked
 * with waiters), with the owner's tid in place of "locked" so that a waiter
 * knows whose state to read:
 *  - lock: CAS 0 -> tid.  Contended: while the word is held, read the
 *    owner's state; RUNNING: spin (bounded); anything else, or unreadable:
 *    set AMUTEX_WAITERS with a CAS and FUTEX_WAIT on the word with that
 *    value.  A waiter that has slept takes the lock with AMUTEX_WAITERS
 *    set, as it cannot know whether others still sleep.
 *  - unlock: exchange with 0 (release); if AMUTEX_WAITERS was set,
 *    FUTEX_WAKE one.
 * No lost wakeup: a waiter sleeps only if the word still holds the value
 * with AMUTEX_WAITERS it saw (the kernel compares it under the futex
 * bucket lock), and an unlock that clears the word after that wakes it.
 * The spin decision never affects correctness, only who waits how.
 *
 * Memory order: the lock's CAS is an acquire, the unlock's exchange a
 * release (what arm64 and other weakly ordered CPUs need); the owner
 * index is a hint read and written relaxed, checked against the entry's
 * tid by the mapping's own read protocol.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"
#include "adaptive_mutex.h"

uint64_t amutex_spin_max_ns = 100000;
uint64_t amutex_dead_check_ns = 50000000;

/* The process's mapping; entries is NULL when the mutexes run plain. */
static struct taskstate_mapping map;
static int dev_fd = -1;
static unsigned int setup_flags;
static int setup_done;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

struct amutex_thread {
	uint32_t tid;		/* 0 until this thread's first lock */
	uint32_t index;		/* its entry, or AMUTEX_NO_INDEX */
	struct amutex_stats stats;
};

static __thread struct amutex_thread self;

enum owner_state { OWNER_UNKNOWN, OWNER_RUNNING, OWNER_OFF_CPU, OWNER_DEAD };

static void after_fork_child(void)
{
	/* A child does not inherit the mapping (VM_DONTCOPY), and its tid is new. */
	map.entries = NULL;
	map.nr = 0;
	memset(&self, 0, sizeof(self));
}

int amutex_setup(unsigned int flags)
{
	int fd;

	if (__atomic_load_n(&setup_done, __ATOMIC_ACQUIRE))
		return !!map.entries;
	pthread_mutex_lock(&setup_lock);
	if (!setup_done) {
		setup_flags = flags;
		if (!(flags & AMUTEX_PLAIN)) {
			fd = taskstate_open();
			if (fd >= 0 && taskstate_mapping_open(fd, &map)) {
				taskstate_close(fd);
				fd = -1;
			}
			dev_fd = fd;
		}
		pthread_atfork(NULL, NULL, after_fork_child);
		__atomic_store_n(&setup_done, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&setup_lock);
	return !!map.entries;
}

/* This thread's tid and entry, found at its first lock. */
static void thread_init(void)
{
	struct taskstate_location l = { 0 };

	amutex_setup(0);
	self.tid = (uint32_t)syscall(SYS_gettid);
	self.index = AMUTEX_NO_INDEX;
	if (!map.entries)
		return;
	l.tid = self.tid;
	if (taskstate_locate(dev_fd, &l, 1) != 1 &&
	    !(setup_flags & AMUTEX_NO_TRACK) &&
	    !taskstate_track(dev_fd, self.tid, false, NULL))
		taskstate_locate(dev_fd, &l, 1);
	if (l.index < map.nr)
		self.index = l.index;
}

static inline uint32_t my_tid(void)
{
	if (__builtin_expect(!self.tid, 0))
		thread_init();
	return self.tid;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static long futex(uint32_t *uaddr, int op, uint32_t val,
		  const struct timespec *timeout)
{
	return syscall(SYS_futex, uaddr, op | FUTEX_PRIVATE_FLAG, val, timeout,
		       NULL, 0);
}

/* The owner's state through the mapping, trusting the hint only for tid. */
static enum owner_state owner_state(const struct amutex *m, uint32_t tid)
{
	uint32_t i, etid, gen;
	uint64_t word;

	if (!map.entries)
		return OWNER_UNKNOWN;
	i = __atomic_load_n(&m->owner_index, __ATOMIC_RELAXED);
	if (taskstate_mapping_scan(&map, i, &etid, &word, &gen) ||
	    etid != tid)
		return OWNER_UNKNOWN;
	switch (taskstate_state(word)) {
	case TASKSTATE_RUNNING:
		return OWNER_RUNNING;
	case TASKSTATE_DEAD:
		return OWNER_DEAD;
	default:
		return OWNER_OFF_CPU;
	}
}

/*
 * Whether thread tid of this process has exited: gone (ESRCH), or a
 * zombie (a group leader stays one until the whole process exits).  Only
 * on the slow path: the mapping said DEAD, or a futex wait timed out.
 */
static bool owner_gone(uint32_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (syscall(SYS_tgkill, getpid(), tid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/self/task/%u/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the comm may hold anything */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static inline void publish(struct amutex *m)
{
	if (__atomic_load_n(&m->owner_index, __ATOMIC_RELAXED) != self.index)
		__atomic_store_n(&m->owner_index, self.index, __ATOMIC_RELAXED);
}

/* How long a waiter may spin on m now: see AMUTEX_SPIN_MIN_NS. */
static uint64_t spin_bound(const struct amutex *m)
{
	uint64_t est = __atomic_load_n(&m->spin_ns, __ATOMIC_RELAXED), b;

	if (!est)
		return amutex_spin_max_ns;
	b = 4 * est;
	if (b < AMUTEX_SPIN_MIN_NS)
		b = AMUTEX_SPIN_MIN_NS;
	return b < amutex_spin_max_ns ? b : amutex_spin_max_ns;
}

/*
 * A spin that took took_ns and ended in the lock (paid) or was cut short.
 * Racy updates between waiters lose a sample, nothing more.
 */
static void spin_learn(struct amutex *m, uint64_t took_ns, bool paid)
{
	int64_t est = __atomic_load_n(&m->spin_ns, __ATOMIC_RELAXED);

	if (!est)
		est = amutex_spin_max_ns / 4;
	if (paid)
		est += ((int64_t)took_ns - est) / 8;
	else
		est -= est / 4;
	if (est < 1)
		est = 1;
	if (est > UINT32_MAX)
		est = UINT32_MAX;
	__atomic_store_n(&m->spin_ns, (uint32_t)est, __ATOMIC_RELAXED);
}

static int lock_slow(struct amutex *m, uint32_t tid)
{
	const struct timespec dead_check = {
		.tv_sec = amutex_dead_check_ns / 1000000000u,
		.tv_nsec = amutex_dead_check_ns % 1000000000u,
	};
	uint32_t v, want = tid, owner;
	bool spun = false, spin_over = false, check_dead = false;
	uint64_t spin_start = 0, bound = 0;
	unsigned int spins = 0;
	enum owner_state st;
	long ret;

	for (;;) {
		v = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
		if (!v) {
			if (__atomic_compare_exchange_n(&m->word, &v, want, false,
							__ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				publish(m);
				if (spins && !spin_over)
					spin_learn(m, taskstate_now_ns() - spin_start, true);
				/* After a sleep it is counted as one. */
				if (!(want & AMUTEX_WAITERS))
					spun ? self.stats.spun++ : self.stats.fast++;
				return 0;
			}
			continue;
		}
		owner = v & AMUTEX_TID_MASK;
		st = owner_state(m, owner);
		if (st == OWNER_DEAD || check_dead) {
			check_dead = false;
			if (owner_gone(owner)) {
				if (!__atomic_compare_exchange_n(&m->word, &v,
								 tid | AMUTEX_WAITERS,
								 false, __ATOMIC_ACQUIRE,
								 __ATOMIC_RELAXED))
					continue;
				publish(m);
				self.stats.owner_dead++;
				return EOWNERDEAD;
			}
		}
		if (st == OWNER_RUNNING && !spin_over) {
			if (!spins++) {
				spin_start = taskstate_now_ns();
				bound = spin_bound(m);
			} else if (!(spins & 15) &&
				   taskstate_now_ns() - spin_start > bound) {
				spin_over = true;
				spin_learn(m, bound, false);
				self.stats.spin_limit++;
			}
			spun = true;
			cpu_relax();
			continue;
		}
		if (st == OWNER_UNKNOWN)
			self.stats.unknown++;
		if (!(v & AMUTEX_WAITERS)) {
			if (!__atomic_compare_exchange_n(&m->word, &v, v | AMUTEX_WAITERS,
							 false, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
				continue;
			v |= AMUTEX_WAITERS;
		}
		self.stats.sleeps++;
		ret = futex(&m->word, FUTEX_WAIT, v,
			    amutex_dead_check_ns ? &dead_check : NULL);
		if (ret && errno == ETIMEDOUT) {
			self.stats.timeouts++;
			check_dead = true;
		}
		/* Woken (or not): others may still sleep; spin afresh. */
		want = tid | AMUTEX_WAITERS;
		spins = 0;
		spin_over = false;
	}
}

void amutex_init(struct amutex *m)
{
	m->word = 0;
	m->owner_index = AMUTEX_NO_INDEX;
	m->spin_ns = 0;
}

int amutex_lock(struct amutex *m)
{
	uint32_t tid = my_tid(), v = 0;

	if (__atomic_compare_exchange_n(&m->word, &v, tid, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		publish(m);
		self.stats.fast++;
		return 0;
	}
	return lock_slow(m, tid);
}

int amutex_trylock(struct amutex *m)
{
	uint32_t tid = my_tid(), v = 0;

	if (!__atomic_compare_exchange_n(&m->word, &v, tid, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return EBUSY;
	publish(m);
	return 0;
}

int amutex_unlock(struct amutex *m)
{
	uint32_t v = __atomic_load_n(&m->word, __ATOMIC_RELAXED);

	if ((v & AMUTEX_TID_MASK) != my_tid())
		return EPERM;
	v = __atomic_exchange_n(&m->word, 0, __ATOMIC_RELEASE);
	if (v & AMUTEX_WAITERS)
		futex(&m->word, FUTEX_WAKE, 1, NULL);
	return 0;
}

const struct amutex_stats *amutex_thread_stats(void)
{
	return &self.stats;
}
