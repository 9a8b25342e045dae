// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * libtaskstate: see libtaskstate.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libtaskstate.h"

/* The structs must match the first ABI version on every architecture. */
_Static_assert(sizeof(struct taskstate_info) == TASKSTATE_INFO_SIZE_VER2,
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
_Static_assert(sizeof(struct taskstate_process) == TASKSTATE_PROCESS_SIZE_VER0,
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
 * This process's time namespace's CLOCK_BOOTTIME offset (INFO's
 * boottime_offset_ns), learnt at every open and INFO: taskstate_now_ns()
 * subtracts it to read the words' clock, the initial namespace's.
 */
static int64_t boot_offset_ns;

int taskstate_open(void)
{
	int fd = open(taskstate_dev_path(), O_RDONLY | O_CLOEXEC);
	struct taskstate_info info;

	if (fd < 0)
		return -errno;
	taskstate_info(fd, &info);	/* for the offset; errors come later */
	return fd;
}

void taskstate_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int taskstate_info(int fd, struct taskstate_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, TASKSTATE_IOC_INFO, info) < 0)
		return -errno;
	__atomic_store_n(&boot_offset_ns, info->boottime_offset_ns,
			 __ATOMIC_RELAXED);
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
	return track_ioctl(fd, TASKSTATE_IOC_TRACK, id, process, nr_threads);
}

int taskstate_untrack(int fd, unsigned int id, bool process, uint64_t *nr_threads)
{
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

	return in_batches(fd, n, &a, sample_batch);
}

/* LIST, growing the buffers; with tout, version 1 with the totals. */
int taskstate_list(int fd, unsigned int pid, struct taskstate_entry **out,
		   struct taskstate_totals **tout, uint32_t *n)
{
	struct taskstate_totals *tbuf = NULL;
	struct taskstate_entry *buf = NULL;
	uint32_t count = LIST_FIRST_COUNT;
	int tries, ret, err = 0;
	void *tmp;

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
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->pid = pid;
	if (ioctl(fd, TASKSTATE_IOC_PROCESS, p) < 0)
		return -errno;
	return p->valid ? 0 : -ENODATA;
}

int taskstate_mapping_open(int fd, struct taskstate_mapping *m)
{
	struct taskstate_info info;
	void *p;
	int ret;

	memset(m, 0, sizeof(*m));
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
	return in_batches(fd, n, l, locate_batch);
}

uint64_t taskstate_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec -
	       (uint64_t)__atomic_load_n(&boot_offset_ns, __ATOMIC_RELAXED);
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
