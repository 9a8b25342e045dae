// SPDX-License-Identifier: GPL-2.0
/*
 * taskstate-bpf: load, unload and report taskstate's BPF backend
 * (taskstate.bpf.c), for kernels that refuse the module.  `taskstate bpf
 * ARGS` runs it.  Loading pins the maps and the programs' links under
 * TS_BPF_PIN_DIR, where the library finds them, and returns: the
 * programs stay attached until `unload` removes the pins.
 *
 * Exit status: 0 success, 1 runtime error, 2 usage error, 3 `status`
 * with nothing loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <linux/membarrier.h>
#include <linux/taskstate.h>

#include "taskstate-bpf.h"
/* <>: the O= build's, never a stale one beside this file. */
#include <taskstate.skel.h>

#define EXIT_USAGE	2
#define EXIT_NOT_LOADED	3

/* The module's default, and TASKSTATE_LIST_MAX's bound. */
#define DEFAULT_MAX_THREADS	32768

static const char usage[] =
"Usage: taskstate bpf load [--max-threads N] [--max-tid N] [--track-all 0|1]\n"
"       taskstate bpf unload\n"
"       taskstate bpf status\n"
"\n"
"The BPF backend of taskstate, for kernels that refuse its module (Secure\n"
"Boot lockdown, signed-module-only hosts).  load attaches it, tracking\n"
"every thread (or, with --track-all 0, what taskstate track asks), and\n"
"pins it under " TS_BPF_PIN_DIR "; unload detaches\n"
"it; status says whether it is loaded, whether its tracepoint programs\n"
"run (attached: with --track-all 0, only while something is tracked),\n"
"how many threads it tracks now\n"
"(threads), and counts what it could not track (full, tid), entries\n"
"given back through a tid (locked), and the entries it gave (tracked)\n"
"and took back (freed).\n"
"Needs root (CAP_BPF and CAP_PERFMON), BTF and Linux 6.1 or later.\n"
"\n"
"  --max-threads N   threads it can track at once (default 32768)\n"
"  --max-tid N       it tracks threads whose tid is below N (default:\n"
"                    kernel.pid_max); 8 bytes each\n"
"  --track-all 0|1   1 (default): every thread, from a snapshot at load;\n"
"                    0: only what taskstate track asks\n";

static const char *const stat_names[] = TS_BPF_STAT_NAMES;

/* The tracepoint programs, in attach order; their links pinned too. */
static const char *const probe_pins[TS_BPF_NR_PROBES] = TS_BPF_PROBES;

/* The iter/task programs the library runs (TRACK, UNTRACK). */
static const char *const prog_pins[] = {
	TS_BPF_PROG_CLAIM_ONE, TS_BPF_PROG_CLAIM_KIN, TS_BPF_PROG_FIRST_WORD,
	TS_BPF_PROG_LEAVE, TS_BPF_PROG_UNTRACK, TS_BPF_PROG_JOIN,
};

static const char *const map_pins[] = {
	TS_BPF_ENTRIES, TS_BPF_HINTS, TS_BPF_TGIDS, TS_BPF_OWNERS, TS_BPF_TASKS,
	TS_BPF_SPARE, TS_BPF_CONFIG, TS_BPF_STATS, TS_BPF_RECS, TS_BPF_MEMBS,
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static void __attribute__((format(printf, 1, 2)))
err(const char *fmt, ...)
{
	va_list ap;

	fputs("taskstate bpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s%s", TS_BPF_PIN_DIR, dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Remove every pin there is; missing ones are fine. */
static int unpin_all(void)
{
	char path[PATH_MAX];
	unsigned int i;
	int ret = 0;

	/* The links first, events first: removing one detaches it. */
	for (i = ARRAY_SIZE(probe_pins); i-- > 0;) {
		pin_path(path, sizeof(path), "links/", probe_pins[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -errno;
	}
	pin_path(path, sizeof(path), "", "links");
	if (rmdir(path) && errno != ENOENT)
		ret = -errno;
	for (i = 0; i < ARRAY_SIZE(prog_pins); i++) {
		pin_path(path, sizeof(path), "progs/", prog_pins[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -errno;
	}
	for (i = 0; i < ARRAY_SIZE(probe_pins); i++) {
		pin_path(path, sizeof(path), "progs/", probe_pins[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -errno;
	}
	pin_path(path, sizeof(path), "", "progs");
	if (rmdir(path) && errno != ENOENT)
		ret = -errno;
	for (i = 0; i < ARRAY_SIZE(map_pins); i++) {
		pin_path(path, sizeof(path), "", map_pins[i]);
		if (unlink(path) && errno != ENOENT)
			ret = -errno;
	}
	if (rmdir(TS_BPF_PIN_DIR) && errno != ENOENT)
		ret = -errno;
	return ret;
}

/* /sys/fs/bpf, mounted if it is not (a minimal system, a test guest). */
static int bpffs_ready(void)
{
	struct statfs sfs;

	if (!statfs("/sys/fs/bpf", &sfs) && sfs.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0755"))
		return -errno;
	return 0;
}

static int read_uint(const char *path, unsigned long *v)
{
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f)
		return -errno;
	if (fscanf(f, "%lu", v) != 1)
		ret = -EINVAL;
	fclose(f);
	return ret;
}

static int parse_count(const char *s, unsigned long max, __u32 *v)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || end == s || *end || !n || n > max)
		return -EINVAL;
	*v = n;
	return 0;
}

/* One pass of the snapshot over every task: the iterator's read drives it. */
static int run_iter(struct bpf_program *prog)
{
	struct bpf_link *link = bpf_program__attach_iter(prog, NULL);
	char buf[64];
	int fd, ret = 0;
	ssize_t n;

	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		ret = -errno;
	close(fd);
out:
	bpf_link__destroy(link);
	return ret;
}

/*
 * An RCU grace period: membarrier(MEMBARRIER_CMD_GLOBAL) is
 * synchronize_rcu() in 6.1 (kernel/sched/membarrier.c), which waits for
 * every probe running now (tracepoint probes run with preemption off).
 * It refuses on nohz_full kernels: there, a deletion from a map-in-map
 * would do; this loader says so and fails instead.
 */
static int grace_period(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) ? -errno : 0;
}

/*
 * The snapshot of every existing task, with track_all: TRACK's two
 * passes (taskstate.bpf.c) over every task, a grace period between,
 * then its last, which makes the records.
 */
static int run_snapshot(struct taskstate_bpf *skel)
{
	int ret = run_iter(skel->progs.ts_claim_kin);

	if (!ret)
		ret = grace_period();
	if (!ret)
		ret = run_iter(skel->progs.ts_first_word);
	if (!ret)
		ret = run_iter(skel->progs.ts_join);
	return ret;
}

/* The tracepoint programs of the skeleton, in probe_pins' order. */
static void probes_of(struct taskstate_bpf *skel,
		      struct bpf_program *progs[TS_BPF_NR_PROBES])
{
	progs[0] = skel->progs.ts_free;
	progs[1] = skel->progs.ts_exec;
	progs[2] = skel->progs.ts_exit;
	progs[3] = skel->progs.ts_newtask;
	progs[4] = skel->progs.ts_wakeup_new;
	progs[5] = skel->progs.ts_wakeup;
	progs[6] = skel->progs.ts_switch;
}

/* Every program, for the library: the iterators, the tracepoint ones. */
static int pin_progs(struct taskstate_bpf *skel)
{
	struct bpf_program *progs[] = {
		skel->progs.ts_claim_one, skel->progs.ts_claim_kin,
		skel->progs.ts_first_word, skel->progs.ts_leave,
		skel->progs.ts_untrack, skel->progs.ts_join,
	};
	struct bpf_program *probes[TS_BPF_NR_PROBES];
	char path[PATH_MAX];
	unsigned int i;

	pin_path(path, sizeof(path), "", "progs");
	if (mkdir(path, 0700))
		return -errno;
	pin_path(path, sizeof(path), "", "links");
	if (mkdir(path, 0700))
		return -errno;
	for (i = 0; i < ARRAY_SIZE(progs); i++) {
		pin_path(path, sizeof(path), "progs/", prog_pins[i]);
		if (bpf_program__pin(progs[i], path))
			return -errno;
	}
	probes_of(skel, probes);
	for (i = 0; i < ARRAY_SIZE(probes); i++) {
		pin_path(path, sizeof(path), "progs/", probe_pins[i]);
		if (bpf_program__pin(probes[i], path))
			return -errno;
	}
	return 0;
}

/*
 * Nothing in user space writes the entries, hints, tgids, recs or membs
 * again: frozen, so that no fd may map them writable or update them (the
 * programs still write them).
 */
static int freeze_maps(struct taskstate_bpf *skel)
{
	struct bpf_map *maps[] = {
		skel->maps.entries, skel->maps.hints, skel->maps.tgids,
		skel->maps.recs, skel->maps.membs,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maps); i++)
		if (bpf_map_freeze(bpf_map__fd(maps[i])))
			return -errno;
	return 0;
}

static int pin_maps(struct taskstate_bpf *skel)
{
	struct bpf_map *maps[] = {
		skel->maps.entries, skel->maps.hints, skel->maps.tgids,
		skel->maps.owners,
		skel->maps.tasks, skel->maps.spare, skel->maps.config,
		skel->maps.stats, skel->maps.recs, skel->maps.membs,
	};
	char path[PATH_MAX];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maps); i++) {
		pin_path(path, sizeof(path), "", map_pins[i]);
		if (bpf_map__pin(maps[i], path))
			return -errno;
		if (chmod(path, 0600))
			return -errno;
	}
	return 0;
}

/*
 * Attach the first n tracepoint programs, pinning their links: all with
 * track_all; else the free alone, which stays attached from the load (the
 * library attaches the others while something is tracked).
 */
static int attach_and_pin(struct taskstate_bpf *skel, unsigned int n)
{
	struct bpf_program *progs[TS_BPF_NR_PROBES];
	char path[PATH_MAX];
	unsigned int i;
	int ret = 0;

	probes_of(skel, progs);
	for (i = 0; i < n && i < ARRAY_SIZE(progs); i++) {
		struct bpf_link *link = bpf_program__attach(progs[i]);

		if (!link)
			return -errno;
		pin_path(path, sizeof(path), "links/", probe_pins[i]);
		if (bpf_link__pin(link, path))
			ret = -errno;
		/* The pin holds the link: attached until unload. */
		bpf_link__disconnect(link);
		bpf_link__destroy(link);
		if (ret)
			return ret;
	}
	return 0;
}

static int fill_free(struct taskstate_bpf *skel, __u32 n)
{
	int fd = bpf_map__fd(skel->maps.spare);
	__u32 i;

	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, NULL, &i, 0))
			return -errno;
	return 0;
}

static bool module_loaded(void)
{
	return !access("/sys/module/taskstate", F_OK) ||
	       !access("/dev/taskstate", F_OK);
}

static int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-threads", required_argument, NULL, 'n' },
		{ "max-tid", required_argument, NULL, 'm' },
		{ "track-all", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct ts_bpf_config cfg = {
		.max_threads = DEFAULT_MAX_THREADS, .track_all = 1,
	};
	struct taskstate_bpf *skel;
	unsigned long pid_max;
	struct timespec ts;
	__u32 key = 0;
	int c, ret, lock = -1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, TASKSTATE_LIST_MAX, &cfg.max_threads)) {
				err("--max-threads: 1 to %u", TASKSTATE_LIST_MAX);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			if (parse_count(optarg, 1UL << 22, &cfg.max_tid)) {
				err("--max-tid: 1 to %lu", 1UL << 22);
				return EXIT_USAGE;
			}
			break;
		case 'a':
			if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
				err("--track-all: 0 or 1");
				return EXIT_USAGE;
			}
			cfg.track_all = *optarg == '1';
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!cfg.max_tid) {
		if (read_uint("/proc/sys/kernel/pid_max", &pid_max) || !pid_max) {
			err("cannot read kernel.pid_max: give --max-tid");
			return 1;
		}
		cfg.max_tid = pid_max;
	}
	if (module_loaded()) {
		err("the taskstate module is loaded: both backends never run at once (rmmod taskstate first)");
		return 1;
	}
	ret = bpffs_ready();
	if (ret) {
		err("no BPF filesystem at /sys/fs/bpf: %s", strerror(-ret));
		return 1;
	}
	if (mkdir(TS_BPF_PIN_DIR, 0700)) {
		if (errno == EEXIST)
			err("already loaded (" TS_BPF_PIN_DIR " exists): unload first");
		else
			err("mkdir " TS_BPF_PIN_DIR ": %s", strerror(errno));
		return 1;
	}
	/* The library's TRACK and UNTRACK wait for the load to end. */
	lock = open(TS_BPF_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		err("cannot lock " TS_BPF_PIN_DIR ": %s", strerror(errno));
		goto out_unpin;
	}

	skel = taskstate_bpf__open();
	if (!skel) {
		ret = -errno;
		err("cannot open the BPF object: %s", strerror(-ret));
		goto out_unpin;
	}
#if !defined(__x86_64__) && !defined(__i386__)
	skel->rodata->ts_weak_order = true;
#endif
	skel->rodata->ts_track_all = cfg.track_all;
	bpf_map__set_max_entries(skel->maps.entries, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.tgids, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.owners, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.inherit, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.tasks, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.spare, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.recs, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.membs, cfg.max_threads);
	bpf_map__set_max_entries(skel->maps.hints, cfg.max_tid);
	ret = taskstate_bpf__load(skel);
	if (ret) {
		err("cannot load the BPF programs: %s (root? BTF? Linux 6.1 or later?)",
		    strerror(-ret));
		goto out_destroy;
	}
	ret = fill_free(skel, cfg.max_threads);
	if (!ret)
		ret = freeze_maps(skel);
	if (!ret)
		ret = pin_maps(skel);
	if (!ret)
		ret = pin_progs(skel);
	/* With track_all 0 the first TRACK attaches the rest (lib/bpf.c). */
	if (!ret)
		ret = attach_and_pin(skel, cfg.track_all ? TS_BPF_NR_PROBES : 1);
	if (ret) {
		err("cannot attach and pin: %s", strerror(-ret));
		goto out_destroy;
	}
	ret = cfg.track_all ? run_snapshot(skel) : 0;
	if (ret) {
		err("cannot take the snapshot of the threads: %s", strerror(-ret));
		goto out_destroy;
	}
	clock_gettime(CLOCK_BOOTTIME, &ts);
	cfg.loaded_ns = (__u64)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.config), &key, &cfg, 0)) {
		ret = -errno;
		err("cannot write the configuration: %s", strerror(-ret));
		goto out_destroy;
	}
	taskstate_bpf__destroy(skel);
	close(lock);
	return 0;

out_destroy:
	taskstate_bpf__destroy(skel);
out_unpin:
	unpin_all();
	if (lock >= 0)
		close(lock);
	return 1;
}

static int cmd_unload(int argc, char **argv)
{
	int ret, lock;

	(void)argv;
	if (argc != 1) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	/* After any TRACK or UNTRACK in progress (lib/bpf.c holds this). */
	lock = open(TS_BPF_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0) {
		err("not loaded (no " TS_BPF_PIN_DIR ")");
		return 1;
	}
	if (flock(lock, LOCK_EX)) {
		err("cannot lock " TS_BPF_PIN_DIR ": %s", strerror(errno));
		close(lock);
		return 1;
	}
	ret = unpin_all();
	close(lock);
	if (ret) {
		err("cannot remove " TS_BPF_PIN_DIR ": %s", strerror(-ret));
		return 1;
	}
	return 0;
}

static int open_map(const char *name)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), "", name);
	return bpf_obj_get(path);
}

static int cmd_status(int argc, char **argv)
{
	struct ts_bpf_config cfg;
	const struct taskstate_map_entry *e;
	__u64 sums[TS_BPF_NR_STATS] = { 0 }, *vals;
	int cfd, sfd, efd, ncpu, i, c;
	__u32 key = 0, s, tracked = 0;
	char path[PATH_MAX];
	size_t size;

	(void)argv;
	if (argc != 1) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	cfd = open_map(TS_BPF_CONFIG);
	if (cfd < 0) {
		if (errno == ENOENT) {
			printf("not loaded\n");
			return EXIT_NOT_LOADED;
		}
		err("cannot open " TS_BPF_PIN_DIR ": %s", strerror(errno));
		return 1;
	}
	if (bpf_map_lookup_elem(cfd, &key, &cfg)) {
		err("cannot read the configuration: %s", strerror(errno));
		return 1;
	}
	close(cfd);
	efd = open_map(TS_BPF_ENTRIES);
	sfd = open_map(TS_BPF_STATS);
	ncpu = libbpf_num_possible_cpus();
	if (efd < 0 || sfd < 0 || ncpu <= 0) {
		err("cannot open the maps: %s", strerror(errno));
		return 1;
	}
	size = (size_t)cfg.max_threads * sizeof(*e);
	e = mmap(NULL, size, PROT_READ, MAP_SHARED, efd, 0);
	if (e == MAP_FAILED) {
		err("cannot map the entries: %s", strerror(errno));
		return 1;
	}
	for (s = 0; s < cfg.max_threads; s++)
		tracked += __atomic_load_n(&e[s].gen, __ATOMIC_RELAXED) & 1;
	munmap((void *)e, size);
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return 1;
	for (s = 0; s < TS_BPF_NR_STATS; s++) {
		if (bpf_map_lookup_elem(sfd, &s, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			sums[s] += vals[c];
	}
	free(vals);
	printf("loaded\n");
	/* The scheduler's programs (the free one stays from the load). */
	pin_path(path, sizeof(path), "links/", probe_pins[TS_BPF_NR_PROBES - 1]);
	printf("max_threads %u\nmax_tid %u\ntrack_all %u\nattached %d\nthreads %u\n",
	       cfg.max_threads, cfg.max_tid, cfg.track_all, !access(path, F_OK),
	       tracked);
	for (i = 0; i < TS_BPF_NR_STATS; i++)
		printf("%s %llu\n", stat_names[i], (unsigned long long)sums[i]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	/* libbpf's own messages (the verifier's log) only when asked. */
	if (!getenv("TASKSTATE_BPF_DEBUG"))
		libbpf_set_print(NULL);
	if (!strcmp(argv[1], "load"))
		return cmd_load(argc - 1, argv + 1);
	if (!strcmp(argv[1], "unload"))
		return cmd_unload(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	err("unknown command '%s'", argv[1]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
