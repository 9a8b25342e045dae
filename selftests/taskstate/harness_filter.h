/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A test filter for kselftest_harness.h (include it after the harness),
 * for test programs whose tests run_vm.sh runs under different loads.
 */
#ifndef TASKSTATE_HARNESS_FILTER_H
#define TASKSTATE_HARNESS_FILTER_H

static inline bool ts_harness_named(const char *name, const char *const *names,
				    int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/*
 * With arguments, run only the tests they name (6.1's harness has no
 * filter of its own): run_vm.sh runs each test under the load it needs.
 * A name that matches no test is an error, so a typo cannot pass.
 * Without, run every test but those in @by_name (NULL-terminated, or
 * NULL): tests that need a module load of their own (a parameter, the
 * fault-injection build, a test module), which run_vm.sh runs by name
 * where it provides it.
 */
static inline int ts_harness_main(int argc, char **argv,
				  const char *const *by_name)
{
	const char *const *names = (const char *const *)argv + 1;
	struct __test_metadata *t, *next, *head = NULL, *tail = NULL;
	struct __fixture_metadata *f;
	int nr = argc - 1, found = 0;
	bool keep;

	if (argc < 2) {
		if (!by_name)
			return test_harness_run(argc, argv);
		names = by_name;
		for (nr = 0; by_name[nr]; nr++)
			;
	}
	for (f = __fixture_list; f; f = f->next) {
		head = tail = NULL;
		for (t = f->tests; t; t = next) {
			next = t->next;
			keep = ts_harness_named(t->name, names, nr);
			if (argc < 2)
				keep = !keep;
			if (!keep)
				continue;
			found++;
			t->next = NULL;
			t->prev = tail;
			if (tail)
				tail->next = t;
			else
				head = t;
			tail = t;
		}
		if (head)
			head->prev = tail;
		f->tests = head;
	}
	if (argc >= 2 && found != argc - 1) {
		fprintf(stderr, "%s: %d of %d test names matched\n",
			argv[0], found, argc - 1);
		return 1;
	}
	return test_harness_run(argc, argv);
}

#endif /* TASKSTATE_HARNESS_FILTER_H */
