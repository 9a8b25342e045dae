// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the taskstate selftests: see util.h.
 */
#include <signal.h>
#include <sys/ioctl.h>
#include "util.h"

pid_t ts_gettid(void)
{
	return syscall(SYS_gettid);
}

void ts_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

const char *ts_bin_dir(void)
{
	static char dir[4096];
	const char *env = getenv("TS_BIN");
	char path[4096 + 16];
	ssize_t n;

	if (env && *env)
		return env;
	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0 || !memchr(dir, '/', n))
		return NULL;
	dir[n] = '\0';
	*strrchr(dir, '/') = '\0';
	snprintf(path, sizeof(path), "%s/taskstate", dir);
	if (access(path, X_OK)) {
		dir[0] = '\0';
		return NULL;
	}
	return dir;
}

uint64_t nr_tracked(int fd)
{
	struct taskstate_info info;

	return taskstate_info(fd, &info) ? ~0ULL : info.nr_tracked;
}

uint64_t nr_untracked(int fd)
{
	struct taskstate_info info;

	return taskstate_info(fd, &info) ? ~0ULL : info.nr_untracked;
}

int ts_write_str(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, len) != (ssize_t)len)
		ret = -EIO;
	if (close(fd) && !ret)
		ret = -EIO;
	return ret;
}

int ts_write_uint(const char *path, unsigned int v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", v);
	return ts_write_str(path, buf);
}

/*
 * The mapping, when a test program mapped it (ts_xcheck_map()): then every
 * word ts_word_of() reads with SAMPLE is also read through the mapping and
 * must be the same.
 */
struct taskstate_mapping ts_xmap;

uint64_t ts_sample_word(int fd, pid_t tid)
{
	struct taskstate_entry e = { .tid = (uint32_t)tid };

	return taskstate_sample(fd, &e, NULL, 1) == 1 ? e.word : 0;
}

/*
 * @tid's word through the mapping, located once and again when its entry
 * changed hands or its thread is DEAD: a location names a thread, not a
 * tid, and a dead thread's tid may already name a new one (pid reuse) while
 * the dead one's entry is still its own.  0 if it cannot be located.
 */
static uint64_t ts_xmap_word(int fd, pid_t tid)
{
	static struct taskstate_location l = { .index = TASKSTATE_LOCATE_NONE };
	uint64_t m;

	if (l.tid == (uint32_t)tid && !taskstate_mapping_read(&ts_xmap, &l, &m, NULL) &&
	    taskstate_state(m) != TASKSTATE_DEAD)
		return m;
	l.tid = (uint32_t)tid;
	if (taskstate_locate(fd, &l, 1) != 1 || taskstate_mapping_read(&ts_xmap, &l, &m, NULL))
		return 0;
	return m;
}

/*
 * The mapping, SAMPLE, the mapping again, until both mapped reads agree:
 * then the word did not change in between (a change always moves its
 * time), so SAMPLE, between them, must have read that same word (0 when
 * the thread is not located or its entry changed hands).  One ioctl, as
 * without the check, once the thread is located.  Returns the word, or 0
 * after logging a disagreement.
 */
static uint64_t ts_xcheck_word(int fd, pid_t tid)
{
	uint64_t m1 = 0, m2 = 0, w = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		m1 = ts_xmap_word(fd, tid);
		w = ts_sample_word(fd, tid);
		m2 = ts_xmap_word(fd, tid);
		if (m1 != m2)
			continue;
		if (w == m1)
			return w;
		break;
	}
	fprintf(stderr, "# tid %d: SAMPLE's word %#llx, mapped %#llx and %#llx\n",
		(int)tid, (unsigned long long)w, (unsigned long long)m1,
		(unsigned long long)m2);
	return 0;
}

/* Map for ts_word_of()'s cross-check; returns 0 or -errno. */
int ts_xcheck_map(int fd)
{
	return taskstate_mapping_open(fd, &ts_xmap);
}

uint64_t ts_word_of(int fd, pid_t tid)
{
	if (ts_xmap.entries)
		return ts_xcheck_word(fd, tid);
	return ts_sample_word(fd, tid);
}

unsigned int ts_state_of(int fd, pid_t tid)
{
	return taskstate_state(ts_word_of(fd, tid));
}

/*
 * Polls every millisecond: states that last are what the tests provoke,
 * so a poll cannot miss them.
 */
uint64_t ts_wait_state(int fd, pid_t tid, unsigned int state,
		       unsigned int timeout_ms)
{
	uint64_t end = taskstate_now_ns() + timeout_ms * 1000000ULL;

	/* One more sample after the deadline: a stalled guest's nap ate it. */
	for (;;) {
		uint64_t w = ts_word_of(fd, tid);

		if (taskstate_state(w) == state)
			return w;
		if (taskstate_now_ns() >= end)
			return 0;
		ts_sleep_ms(1);
	}
}

/*
 * From /proc: the count grows each time the thread blocks, so an
 * unchanged count across a window means it did not go to sleep inside it.
 */
long long ts_nvcsw(pid_t tid)
{
	char path[64], buf[2048], *p;
	long long n = -1;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (p)
		n = strtoll(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
	return n;
}

int ts_schedstat(pid_t tid, uint64_t *run, uint64_t *wait)
{
	unsigned long long r, w;
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu", &r, &w);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*run = r;
	*wait = w;
	return 0;
}

int ts_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *ts_sleeper_fn(void *arg)
{
	struct ts_sleeper *s = arg;
	char c;

	__atomic_store_n(&s->tid, ts_gettid(), __ATOMIC_RELEASE);
	while (read(s->pipe[0], &c, 1) == 1)
		;
	return NULL;
}

int ts_sleeper_start(struct ts_sleeper *s)
{
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELAXED);
	if (pipe(s->pipe))
		return -1;
	if (pthread_create(&s->thread, NULL, ts_sleeper_fn, s)) {
		close(s->pipe[0]);
		close(s->pipe[1]);
		return -1;
	}
	while (!__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE))
		ts_sleep_ms(1);
	return 0;
}

void ts_sleeper_stop(struct ts_sleeper *s)
{
	close(s->pipe[1]);
	pthread_join(s->thread, NULL);
	close(s->pipe[0]);
}

const struct ts_cmd ts_cmds[TS_NR_CMDS] = {
	[TS_CMD_INFO] = { "INFO", TASKSTATE_IOC_INFO,
			  sizeof(struct taskstate_info), TASKSTATE_INFO_SIZE_VER0 },
	[TS_CMD_TRACK] = { "TRACK", TASKSTATE_IOC_TRACK,
			   sizeof(struct taskstate_track), TASKSTATE_TRACK_SIZE_VER0 },
	[TS_CMD_UNTRACK] = { "UNTRACK", TASKSTATE_IOC_UNTRACK,
			     sizeof(struct taskstate_track), TASKSTATE_TRACK_SIZE_VER0 },
	[TS_CMD_SAMPLE] = { "SAMPLE", TASKSTATE_IOC_SAMPLE,
			    sizeof(struct taskstate_sample), TASKSTATE_SAMPLE_SIZE_VER0 },
	[TS_CMD_LIST] = { "LIST", TASKSTATE_IOC_LIST,
			  sizeof(struct taskstate_list), TASKSTATE_LIST_SIZE_VER0 },
	[TS_CMD_LOCATE] = { "LOCATE", TASKSTATE_IOC_LOCATE,
			    sizeof(struct taskstate_locate), TASKSTATE_LOCATE_SIZE_VER0 },
	[TS_CMD_PROCESS] = { "PROCESS", TASKSTATE_IOC_PROCESS,
			     sizeof(struct taskstate_process),
			     TASKSTATE_PROCESS_SIZE_VER0 },
	[TS_CMD_EXITS] = { "EXITS", TASKSTATE_IOC_EXITS,
			   sizeof(struct taskstate_exits), TASKSTATE_EXITS_SIZE_VER0 },
};

const struct ts_cmd *ts_cmd_of(unsigned long req)
{
	int i;

	for (i = 0; i < TS_NR_CMDS; i++)
		if (ts_cmds[i].cmd == req)
			return &ts_cmds[i];
	return NULL;
}

int run_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 126;
	if (!pid)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid)
		return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
				   128 + WTERMSIG(status);
}

pid_t ts_fork_gated(int gate[2])
{
	pid_t pid;
	char c;

	if (pipe(gate))
		return -1;
	pid = fork();
	if (pid)
		return pid;
	close(gate[1]);
	if (read(gate[0], &c, 1) != 1)
		_exit(1);
	close(gate[0]);
	return 0;
}

int ts_take_exits(int fd, struct taskstate_exit *e, uint32_t count,
		  uint64_t *lost)
{
	struct taskstate_exits x = {
		.size = sizeof(x), .count = count, .exits = (uintptr_t)e,
	};

	if (ioctl(fd, TASKSTATE_IOC_EXITS, &x))
		return -errno;
	*lost = x.lost;
	return x.count;
}

int ts_unprivileged_on(void)
{
	char c = 0;
	int fd = open("/sys/module/taskstate/parameters/unprivileged",
		      O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == 'Y' ? 1 : c == 'N' ? 0 : -1;
}

pid_t ts_reaped_pid(void)
{
	int tries;

	for (tries = 0; tries < 10; tries++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return -1;
		/* Not reused by another task meanwhile. */
		if (kill(pid, 0) && errno == ESRCH)
			return pid;
	}
	return -1;
}

bool ts_bpf_backend(void)
{
	return access(TASKSTATE_DEV_PATH, F_OK) && !access("/sys/fs/bpf/taskstate", F_OK);
}
