/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel names module/word.h, entry.h and index.h use, for user
 * space.  Include this, then the module header (with -I<repo>/include for
 * <uapi/linux/taskstate.h>).
 *
 * Only what they need: u32, u64, s64, bool, atomic64_t, READ_ONCE(),
 * WRITE_ONCE(), IS_ENABLED(CONFIG_64BIT), atomic64_set(), atomic64_read(),
 * atomic64_xchg(), atomic64_try_cmpxchg(), the barriers, hash_32(),
 * hash_64(), hash_ptr(), likely(), unlikely(), BUILD_BUG_ON(), __aligned()
 * and __always_inline; static_assert() is <assert.h>'s.
 */
#ifndef TASKSTATE_BENCH_KSHIM_H
#define TASKSTATE_BENCH_KSHIM_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/cdefs.h>		/* glibc's __always_inline, if it has one */

typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

/*
 * As in the kernel (x86-32 spells out __aligned(8) too): i386 aligns a
 * 64-bit integer to 4 only, and a 64-bit atomic access is single-copy
 * atomic only when it is naturally aligned.
 */
typedef struct {
	s64 counter __attribute__((aligned(8)));
} atomic64_t;

#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif

/* One access the compiler may neither split, merge, drop nor invent. */
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val)	(*(volatile __typeof__(x) *)&(x) = (val))

/* CONFIG_64BIT is set iff this is an LP64 build, as for the kernel. */
#ifdef __LP64__
#define CONFIG_64BIT 1
#endif

/* include/linux/kconfig.h: IS_ENABLED(CONFIG_FOO) is 1 iff it is 1. */
#define __ARG_PLACEHOLDER_1 0,
#define __take_second_arg(__ignored, val, ...) val
#define __is_defined(x)			___is_defined(x)
#define ___is_defined(val)		____is_defined(__ARG_PLACEHOLDER_##val)
#define ____is_defined(arg1_or_junk)	__take_second_arg(arg1_or_junk 1, 0)
#define IS_ENABLED(option)		__is_defined(option)

/*
 * The kernel's atomic64 ops, with their orderings: set and read are
 * relaxed but single-copy atomic (on i386 gcc does them with one 8-byte
 * x87/SSE load or store, or cmpxchg8b, never two 32-bit accesses);
 * try_cmpxchg is fully ordered and updates *old on failure.
 */
static __always_inline void atomic64_set(atomic64_t *v, s64 i)
{
	__atomic_store_n(&v->counter, i, __ATOMIC_RELAXED);
}

static __always_inline s64 atomic64_read(const atomic64_t *v)
{
	return __atomic_load_n(&v->counter, __ATOMIC_RELAXED);
}

/* Fully ordered exchange: xchg on x86. */
static __always_inline s64 atomic64_xchg(atomic64_t *v, s64 i)
{
	return __atomic_exchange_n(&v->counter, i, __ATOMIC_SEQ_CST);
}

static __always_inline bool atomic64_try_cmpxchg(atomic64_t *v, s64 *old,
						 s64 new)
{
	return __atomic_compare_exchange_n(&v->counter, old, new, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

#define __aligned(x)		__attribute__((__aligned__(x)))
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define BUILD_BUG_ON(c)		_Static_assert(!(c), #c)

#define barrier()	__asm__ __volatile__("" ::: "memory")
#if defined(__x86_64__) || defined(__i386__)
/* x86 orders loads with loads and stores with stores: compiler barriers. */
#define smp_wmb()	barrier()
#define smp_rmb()	barrier()
#define cpu_relax()	__asm__ __volatile__("rep; nop" ::: "memory")
#else
#define smp_wmb()	__atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_rmb()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define cpu_relax()	barrier()
#endif

/*
 * include/linux/hash.h's multiplicative hashes, as the kernel computes
 * them (no arch override on x86 and arm64).
 */
#ifdef __LP64__
#define BITS_PER_LONG		64
#else
#define BITS_PER_LONG		32
#endif
#define OPTIMIZER_HIDE_VAR(var)	__asm__ ("" : "=r" (var) : "0" (var))
#define GOLDEN_RATIO_32		0x61C88647u
#define GOLDEN_RATIO_64		0x61C8864680B583EBull

static inline u32 hash_32(u32 val, unsigned int bits)
{
	return (val * GOLDEN_RATIO_32) >> (32 - bits);
}

static inline u32 hash_64(u64 val, unsigned int bits)
{
	return (u32)((val * GOLDEN_RATIO_64) >> (64 - bits));
}

static inline u32 hash_ptr(const void *ptr, unsigned int bits)
{
#ifdef __LP64__
	return hash_64((uintptr_t)ptr, bits);
#else
	return hash_32((uintptr_t)ptr, bits);
#endif
}

#endif /* TASKSTATE_BENCH_KSHIM_H */
