/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host unit tests' checks and TAP runner (lib/test_lib.c,
 * tools/test_format.c): one line per test function, each failed check as a
 * comment before it, exit status 1 if a check failed.  A test that lacks
 * a precondition calls skip_test() and reads "# SKIP why".  Not installed.
 */
#ifndef TASKSTATE_TEST_H
#define TASKSTATE_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int failures;
static const char *skip_why;	/* set by skip_test() in the running test */

#define CHECK(cond) check(cond, #cond, __FILE__, __LINE__)
#define CHECK_STR(got, want) check_str(got, want, __FILE__, __LINE__)

static inline void check(bool ok, const char *what, const char *file, int line)
{
	if (!ok) {
		printf("# %s:%d: failed: %s\n", file, line, what);
		failures++;
	}
}

static inline void check_str(const char *got, const char *want,
			     const char *file, int line)
{
	if (strcmp(got, want)) {
		printf("# %s:%d: got '%s', want '%s'\n", file, line, got, want);
		failures++;
	}
}

static inline void skip_test(const char *why)
{
	skip_why = why;
}

struct unit_test {
	const char *name;
	void (*fn)(void);
};

/* Run tests[0..n-1] as the TAP document of program @prog. */
static inline int run_tests(const char *prog, const struct unit_test *tests,
			    int n)
{
	int i, failed = 0, skipped = 0, before;

	printf("TAP version 13\n1..%d\n", n);
	for (i = 0; i < n; i++) {
		before = failures;
		skip_why = NULL;
		tests[i].fn();
		failed += failures != before;
		if (failures == before && skip_why) {
			skipped++;
			printf("ok %d %s %s # SKIP %s\n", i + 1, prog,
			       tests[i].name, skip_why);
			continue;
		}
		printf("%sok %d %s %s\n", failures != before ? "not " : "",
		       i + 1, prog, tests[i].name);
	}
	printf("# %s: %d passed, %d failed, %d skipped\n", prog,
	       n - failed - skipped, failed, skipped);
	return failed ? 1 : 0;
}

#endif /* TASKSTATE_TEST_H */
