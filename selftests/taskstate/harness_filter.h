/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A test filter for kselftest_harness.h (include it after the harness),
 * for test programs whose tests run_vm.sh runs under different loads.
 */
#ifndef TASKSTATE_HARNESS_FILTER_H
#define TASKSTATE_HARNESS_FILTER_H

/*
 * With arguments, run only the tests they name (6.1's harness has no
 * filter of its own): run_vm.sh runs each test under the load it needs.
 * A name that matches no test is an error, so a typo cannot pass.
 */
static inline int ts_harness_main(int argc, char **argv)
{
	struct __test_metadata *t, *next, *head = NULL, *tail = NULL;
	struct __fixture_metadata *f;
	int i, found = 0;

	if (argc < 2)
		return test_harness_run(argc, argv);
	for (f = __fixture_list; f; f = f->next) {
		head = tail = NULL;
		for (t = f->tests; t; t = next) {
			next = t->next;
			for (i = 1; i < argc && strcmp(argv[i], t->name); i++)
				;
			if (i == argc)
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
	if (found != argc - 1) {
		fprintf(stderr, "%s: %d of %d test names matched\n",
			argv[0], found, argc - 1);
		return 1;
	}
	return test_harness_run(argc, argv);
}

#endif /* TASKSTATE_HARNESS_FILTER_H */
