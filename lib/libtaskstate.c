// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * libtaskstate: see libtaskstate.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "libtaskstate.h"

/* The structs must match the first ABI version on every architecture. */
_Static_assert(sizeof(struct taskstate_info) == TASKSTATE_INFO_SIZE_VER3,
	       "taskstate_info size");
_Static_assert(sizeof(struct taskstate_track) == TASKSTATE_TRACK_SIZE_VER0,
	       "taskstate_track size");
_Static_assert(sizeof(struct taskstate_sample) == TASKSTATE_SAMPLE_SIZE_VER1,
	       "taskstate_sample size");
_Static_assert(sizeof(struct taskstate_list) == TASKSTATE_LIST_SIZE_VER1,
	       "taskstate_list size");
_Static_assert(sizeof(struct taskstate_totals) == 48, "taskstate_totals size");
_Static_assert(sizeof(struct taskstate_entry) == 16, "taskstate_entry size");
_Static_assert(sizeof(struct taskstate_locate) == TASKSTATE_LOCATE_SIZE_VER0,
	       "taskstate_locate size");
_Static_assert(sizeof(struct taskstate_location) == 16,
	       "taskstate_location size");
_Static_assert(sizeof(struct taskstate_map_entry) == TASKSTATE_MAP_ENTRY_SIZE,
	       "taskstate_map_entry size");
_Static_assert(sizeof(struct taskstate_process) == TASKSTATE_PROCESS_SIZE_VER1,
	       "taskstate_process size");

/* taskstate_list(): first buffer, and how many times it may grow. */
#define LIST_FIRST_COUNT	256
#define LIST_TRIES		4

const char *taskstate_dev_path(void)
{
	const char *path = getenv("TASKSTATE_DEV");

	return path && *path ? path : TASKSTATE_DEV_PATH;
}

/*
 * The offset of this process's CLOCK_BOOTTIME from the words' clock, the
 * initial time namespace's: its time namespace's boottime offset, which
 * taskstate_now_ns() subtracts.  Learnt from INFO (boottime_offset_ns) at
 * every open and INFO, and from /proc/self/timens_offsets before the first
 * use and whenever the namespace may have changed.
 *
 * A time namespace is a process's: its threads share it, as they share the
 * vDSO's data page.  The process's own changes only by setns(), which
 * needs a single-threaded process (6.1 kernel/time/namespace.c,
 * timens_install(): -EUSERS otherwise); a child forked after
 * unshare(CLONE_NEWTIME) starts in the new one.  So the offset never
 * changes under a second thread of the process: the cache needs no
 * sequence count, only loads that do not tear (int64_t, 8-aligned, atomic
 * loads: one 8-byte load on i686 too).
 *
 * The fork case: the child forgets the offset (pthread_atfork()) and
 * learns it again at its first use.  The setns() case: CLOCK_BOOTTIME
 * then moves against CLOCK_REALTIME, which no time namespace shifts, by
 * the difference of the two offsets.  The cache keeps realtime - boottime
 * as it was when the offset was learnt, and taskstate_now_ns() compares
 * it with the current one (one more vDSO read); a difference of more than
 * BOOT_SLACK_NS, measured again with care, sends it to learn the offset
 * again.  A step of the realtime clock (settimeofday(), an NTP step) does
 * the same, once.  Two namespaces whose offsets differ by less than the
 * slack are taken for one.
 */
#define BOOT_SLACK_NS	100000		/* 100 us */
#define BOOT_READ_NS	10000		/* a careful read within 10 us */

static int boot_learnt;
static int64_t boot_offset_ns __attribute__((aligned(8)));
static int64_t boot_rt_minus_boot __attribute__((aligned(8)));

static void boot_forget(void)
{
	__atomic_store_n(&boot_learnt, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void boot_init(void)
{
	pthread_atfork(NULL, NULL, boot_forget);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * CLOCK_REALTIME - CLOCK_BOOTTIME, with care: the realtime clock read
 * between two reads of the boottime clock, again while they are far
 * apart (a preemption between them), up to four times.
 */
static int64_t rt_minus_boot_careful(void)
{
	int64_t b1, rt, b2;
	int i;

	for (i = 0; ; i++) {
		b1 = clock_ns(CLOCK_BOOTTIME);
		rt = clock_ns(CLOCK_REALTIME);
		b2 = clock_ns(CLOCK_BOOTTIME);
		if (b2 - b1 <= BOOT_READ_NS || i == 3)
			break;
	}
	return rt - (b1 + (b2 - b1) / 2);
}

static void boot_offset_publish(int64_t offset, int64_t rt_minus_boot)
{
	__atomic_store_n(&boot_offset_ns, offset, __ATOMIC_RELAXED);
	__atomic_store_n(&boot_rt_minus_boot, rt_minus_boot, __ATOMIC_RELAXED);
	__atomic_store_n(&boot_learnt, 1, __ATOMIC_RELEASE);
}

/* "boottime SEC NSEC" in a /proc/self/timens_offsets text, as ns. */
static bool parse_boottime(const char *buf, int64_t *offset)
{
	const char *p = strstr(buf, "boottime ");
	long long sec, nsec;
	char *end;

	if (!p)
		return false;
	sec = strtoll(p + 9, &end, 10);
	if (end == p + 9 || *end != ' ')
		return false;
	p = end + 1;
	nsec = strtoll(p, &end, 10);
	if (end == p)
		return false;
	*offset = (int64_t)sec * 1000000000 + nsec;
	return true;
}

/*
 * This process's boottime offset, as its time namespace gives it:
 * /proc/self/timens_offsets shows the offsets of the namespace the
 * process's children get, which is its own unless it unshared one without
 * entering it (/proc/self/ns/time and time_for_children differ).  Then, or
 * without /proc, @known: the offset it had.  No stdio and no allocation:
 * readlink(), open(), read() and close() into buffers on the stack.
 */
static int64_t boot_offset_read(int64_t known)
{
	char own[64], children[64], buf[256];
	int64_t offset = known;
	ssize_t n1, n2, n;
	int fd;

	n1 = readlink("/proc/self/ns/time", own, sizeof(own));
	n2 = readlink("/proc/self/ns/time_for_children", children,
		      sizeof(children));
	if (n1 <= 0 || n1 != n2 || memcmp(own, children, n1))
		return known;
	fd = open("/proc/self/timens_offsets", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return known;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return known;
	buf[n] = '\0';
	return parse_boottime(buf, &offset) ? offset : known;
}

/*
 * The module's device; without it (and without $TASKSTATE_DEV naming
 * another), the BPF backend's pinned maps if they are there.
 */
int taskstate_open(void)
{
	int fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	struct taskstate_info info;
	const char *dev = getenv("TASKSTATE_DEV");

	if (fd < 0) {
		int err = -errno;

		if (err != -ENOENT || (dev && *dev))
			return err;
		fd = ts_bpf_open();
		if (fd < 0)
			return fd == -ENOENT ? err : fd;
	}
	taskstate_info(fd, &info);	/* for the offset; errors come later */
	return fd;
}

/* Asked of the fd itself (ts_is_bpf() assumes the module until a BPF open). */
const char *taskstate_backend(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	return S_ISCHR(st.st_mode) ? "module" : "bpf";
}

void taskstate_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int taskstate_info(int fd, struct taskstate_info *info)
{
	int bpf = ts_is_bpf(fd), ret;
	int64_t rt_minus_boot;

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (bpf < 0)
		return bpf;
	if (bpf) {
		/* No module to ask: this process's own offset. */
		ret = ts_bpf_info(fd, info);
		if (ret)
			return ret;
		info->boottime_offset_ns = boot_offset_read(0);
	} else if (ioctl(fd, TASKSTATE_IOC_INFO, info) < 0) {
		return -errno;
	}
	rt_minus_boot = rt_minus_boot_careful();
	boot_offset_publish(info->boottime_offset_ns, rt_minus_boot);
	return 0;
}

static int track_ioctl(int fd, unsigned long cmd, unsigned int id,
		       bool process, uint64_t *nr_threads)
{
	struct taskstate_track t = {
		.size = sizeof(t),
		.flags = process ? TASKSTATE_TRACK_PROCESS : 0,
		.id = id,
	};

	if (ioctl(fd, cmd, &t) < 0)
		return -errno;
	if (nr_threads)
		*nr_threads = t.nr_threads;
	return 0;
}

int taskstate_track(int fd, unsigned int id, bool process, uint64_t *nr_threads)
{
	int bpf = ts_is_bpf(fd);

	if (bpf)
		return bpf < 0 ? bpf : ts_bpf_track(fd, id, process, nr_threads);
	return track_ioctl(fd, TASKSTATE_IOC_TRACK, id, process, nr_threads);
}

int taskstate_untrack(int fd, unsigned int id, bool process, uint64_t *nr_threads)
{
	int bpf = ts_is_bpf(fd);

	if (bpf)
		return bpf < 0 ? bpf : ts_bpf_untrack(fd, id, process, nr_threads);
	return track_ioctl(fd, TASKSTATE_IOC_UNTRACK, id, process, nr_threads);
}

/*
 * The batch engine of SAMPLE and LOCATE: fn(fd, arg, done, chunk) does
 * elements done .. done + chunk - 1 of n, at most TASKSTATE_BATCH_MAX at
 * a time, and returns how many it found or -errno.
 */
static int in_batches(int fd, uint32_t n, void *arg,
		      int (*fn)(int fd, void *arg, uint32_t done, uint32_t chunk))
{
	uint32_t done, chunk;
	int ret, found = 0;

	if (n > INT_MAX)
		return -EINVAL;
	for (done = 0; done < n; done += chunk) {
		chunk = n - done;
		if (chunk > TASKSTATE_BATCH_MAX)
			chunk = TASKSTATE_BATCH_MAX;
		ret = fn(fd, arg, done, chunk);
		if (ret < 0)
			return ret;
		found += ret;
	}
	return found;
}

struct sample_arg {
	struct taskstate_entry *e;
	struct taskstate_totals *t;
};

/* One SAMPLE; with totals, version 1. */
static int sample_batch(int fd, void *arg, uint32_t done, uint32_t chunk)
{
	const struct sample_arg *a = arg;
	struct taskstate_sample s = {
		.size = a->t ? TASKSTATE_SAMPLE_SIZE_VER1 :
			       TASKSTATE_SAMPLE_SIZE_VER0,
		.count = chunk,
		.entries = (uintptr_t)(a->e + done),
		.totals = a->t ? (uintptr_t)(a->t + done) : 0,
	};
	int ret = ioctl(fd, TASKSTATE_IOC_SAMPLE, &s);

	return ret < 0 ? -errno : ret;
}

int taskstate_sample(int fd, struct taskstate_entry *e,
		     struct taskstate_totals *t, uint32_t n)
{
	struct sample_arg a = { .e = e, .t = t };
	int bpf;

	if (!n)
		return 0;
	bpf = ts_is_bpf(fd);
	if (bpf)
		return bpf < 0 ? bpf : ts_bpf_sample(fd, e, t, n);
	return in_batches(fd, n, &a, sample_batch);
}

/* LIST, growing the buffers; with tout, version 1 with the totals. */
int taskstate_list(int fd, unsigned int pid, struct taskstate_entry **out,
		   struct taskstate_totals **tout, uint32_t *n)
{
	struct taskstate_totals *tbuf = NULL;
	struct taskstate_entry *buf = NULL;
	uint32_t count = LIST_FIRST_COUNT;
	int tries, ret, err = 0, bpf;
	void *tmp;

	bpf = ts_is_bpf(fd);
	if (bpf)
		return bpf < 0 ? bpf : ts_bpf_list(fd, pid, out, tout, n);

	for (tries = 1; ; tries++) {
		struct taskstate_list l = {
			.size = tout ? TASKSTATE_LIST_SIZE_VER1 :
				       TASKSTATE_LIST_SIZE_VER0,
			.pid = pid,
			.count = count,
		};

		tmp = realloc(buf, count * sizeof(*buf));
		if (!tmp) {
			err = -ENOMEM;
			break;
		}
		buf = tmp;
		if (tout) {
			tmp = realloc(tbuf, count * sizeof(*tbuf));
			if (!tmp) {
				err = -ENOMEM;
				break;
			}
			tbuf = tmp;
			l.totals = (uintptr_t)tbuf;
		}
		l.entries = (uintptr_t)buf;
		ret = ioctl(fd, TASKSTATE_IOC_LIST, &l);
		if (ret < 0) {
			err = -errno;
			break;
		}
		if (l.total <= count || count == TASKSTATE_LIST_MAX ||
		    tries == LIST_TRIES) {
			*out = buf;
			if (tout)
				*tout = tbuf;
			*n = ret;
			return l.total > INT_MAX ? INT_MAX : (int)l.total;
		}
		/* Room for threads that appear before the next call. */
		count = l.total + l.total / 8 + 16;
		if (count > TASKSTATE_LIST_MAX || count < l.total)
			count = TASKSTATE_LIST_MAX;
	}
	free(buf);
	free(tbuf);
	return err;
}

int taskstate_process(int fd, unsigned int pid, struct taskstate_process *p)
{
	int tries = 0, bpf = ts_is_bpf(fd);

	if (bpf) {
		if (bpf < 0)
			return bpf;
		memset(p, 0, sizeof(*p));
		p->size = sizeof(*p);
		p->pid = pid;
		bpf = ts_bpf_process(fd, pid, p);
		return bpf ? bpf : p->valid ? 0 : -ENODATA;
	}
	do {
		memset(p, 0, sizeof(*p));
		p->size = sizeof(*p);
		p->pid = pid;
		if (ioctl(fd, TASKSTATE_IOC_PROCESS, p) == 0)
			return p->valid ? 0 : -ENODATA;
		/* EAGAIN: the record changed hands during the read. */
	} while (errno == EAGAIN && ++tries < 4);
	return -errno;
}

int taskstate_mapping_open(int fd, struct taskstate_mapping *m)
{
	struct taskstate_info info;
	void *p;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = ts_is_bpf(fd);
	if (ret)
		return ret < 0 ? ret : ts_bpf_mapping_open(fd, m);
	ret = taskstate_info(fd, &info);
	if (ret)
		return ret;
	/* A module older than the mapping leaves these 0. */
	if (!info.map_entry_size || !info.map_size)
		return -EOPNOTSUPP;
	if (info.map_layout != TASKSTATE_MAP_LAYOUT ||
	    info.map_entry_size != sizeof(struct taskstate_map_entry) ||
	    info.map_size / info.map_entry_size < info.map_entries ||
	    info.map_size > SIZE_MAX)
		return -EPROTO;
	p = mmap(NULL, info.map_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->entries = p;
	m->nr = info.map_entries;
	m->flags = info.map_flags;
	m->size = info.map_size;
	return 0;
}

void taskstate_mapping_close(struct taskstate_mapping *m)
{
	if (m->entries)
		munmap((void *)m->entries, m->size);
	memset(m, 0, sizeof(*m));
}

static int locate_batch(int fd, void *arg, uint32_t done, uint32_t chunk)
{
	struct taskstate_locate a = {
		.size = sizeof(a),
		.count = chunk,
		.locations = (uintptr_t)((struct taskstate_location *)arg + done),
	};
	int ret = ioctl(fd, TASKSTATE_IOC_LOCATE, &a);

	return ret < 0 ? -errno : ret;
}

int taskstate_locate(int fd, struct taskstate_location *l, uint32_t n)
{
	int bpf;

	if (!n)
		return 0;
	bpf = ts_is_bpf(fd);
	if (bpf)
		return bpf < 0 ? bpf : ts_bpf_locate(fd, l, n);
	return in_batches(fd, n, l, locate_batch);
}

uint64_t taskstate_now_ns(void)
{
	int64_t boot, rt, offset, known;

	boot = clock_ns(CLOCK_BOOTTIME);
	if (!__atomic_load_n(&boot_learnt, __ATOMIC_ACQUIRE)) {
		/* Before the first use, and in a forked child. */
		offset = boot_offset_read(0);
		boot_offset_publish(offset, rt_minus_boot_careful());
		return (uint64_t)boot - (uint64_t)offset;
	}
	rt = clock_ns(CLOCK_REALTIME);
	offset = __atomic_load_n(&boot_offset_ns, __ATOMIC_RELAXED);
	known = __atomic_load_n(&boot_rt_minus_boot, __ATOMIC_RELAXED);
	if (rt - boot - known > BOOT_SLACK_NS ||
	    known - (rt - boot) > BOOT_SLACK_NS) {
		int64_t now = rt_minus_boot_careful();

		/*
		 * Not a preemption between the reads: another namespace,
		 * or a step of the realtime clock.
		 */
		if (now - known > BOOT_SLACK_NS ||
		    known - now > BOOT_SLACK_NS) {
			offset = boot_offset_read(offset);
			boot_offset_publish(offset, now);
			boot = clock_ns(CLOCK_BOOTTIME);
		}
	}
	return (uint64_t)boot - (uint64_t)offset;
}

void taskstate_totals_at(uint64_t word, const struct taskstate_totals *t,
			 uint64_t now_ns,
			 uint64_t state_ns[TASKSTATE_MAP_NR_TOTALS])
{
	int i;

	for (i = 0; i < TASKSTATE_MAP_NR_TOTALS; i++)
		state_ns[i] = t->state_ns[i];
	/* A dead thread's time counts in no total (uapi). */
	if (word && taskstate_state(word) != TASKSTATE_DEAD)
		state_ns[taskstate_total_of(taskstate_state(word))] +=
			taskstate_age_ns(word, now_ns);
}

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* The uapi header's lists, the names' one source, in value order. */
static const char *const state_names[] = TASKSTATE_STATE_NAMES;
static const char *const total_names[] = TASKSTATE_TOTAL_NAMES;

_Static_assert(ARRAY_SIZE(state_names) == TASKSTATE_NR_STATES,
	       "a name for every state");
_Static_assert(ARRAY_SIZE(total_names) == TASKSTATE_MAP_NR_TOTALS,
	       "a name for every total");

const char *taskstate_total_name(unsigned int total)
{
	return total < TASKSTATE_MAP_NR_TOTALS && total_names[total] ?
	       total_names[total] : "?";
}

const char *taskstate_state_name(unsigned int state)
{
	return state < TASKSTATE_NR_STATES && state_names[state] ?
	       state_names[state] : "?";
}

int taskstate_state_from_name(const char *name)
{
	unsigned int state;

	for (state = 0; state < TASKSTATE_NR_STATES; state++)
		if (!strcasecmp(name, taskstate_state_name(state)))
			return state;
	return -EINVAL;
}

void taskstate_decode(uint64_t word, uint64_t now_ns, struct taskstate_decoded *d)
{
	d->state = taskstate_state(word);
	d->since_ns = taskstate_since_ns(word);
	d->age_ns = taskstate_age_ns(word, now_ns);
}

int taskstate_comm(unsigned int tid, char *buf, size_t len)
{
	char path[32];
	ssize_t n;
	int fd, err;

	if (!len)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return n;
}
