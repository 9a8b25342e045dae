// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of libtaskstate and the command's formatting: needs
 * no module.  Prints each failure, exits 1 if there was one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format.h"
#include "libtaskstate.h"

static int failures;

#define CHECK(cond) check(cond, #cond, __LINE__)
#define CHECK_STR(got, want) check_str(got, want, __LINE__)

static void check(bool ok, const char *what, int line)
{
	if (!ok) {
		fprintf(stderr, "test_lib.c:%d: failed: %s\n", line, what);
		failures++;
	}
}

static void check_str(const char *got, const char *want, int line)
{
	if (strcmp(got, want)) {
		fprintf(stderr, "test_lib.c:%d: got\n%s\nwant\n%s\n",
			line, got, want);
		failures++;
	}
}

static void test_decode(void)
{
	const uint64_t top = TASKSTATE_TIME_MASK;	/* 2^61 - 1 */
	struct taskstate_decoded d;

	taskstate_decode(taskstate_pack(TASKSTATE_BLOCKED, 1000), 5000, &d);
	CHECK(d.state == TASKSTATE_BLOCKED);
	CHECK(d.since_ns == 1000);
	CHECK(d.age_ns == 4000);

	taskstate_decode(0, 12345, &d);
	CHECK(d.state == TASKSTATE_NONE && d.since_ns == 0);

	taskstate_decode(taskstate_pack(TASKSTATE_DEAD, UINT64_MAX), top, &d);
	CHECK(d.state == TASKSTATE_DEAD);
	CHECK(d.since_ns == top);
	CHECK(d.age_ns == 0);

	/* Stamped 11 ns before the time field wraps, read 16 ns later. */
	taskstate_decode(taskstate_pack(TASKSTATE_SLEEPING, top - 10), top + 6, &d);
	CHECK(d.state == TASKSTATE_SLEEPING);
	CHECK(d.since_ns == top - 10);
	CHECK(d.age_ns == 16);
	/* Same, with a clock past 2^62: only the low 61 bits count. */
	taskstate_decode(taskstate_pack(TASKSTATE_SLEEPING, top - 10),
		  (3ULL << 61) + 5, &d);
	CHECK(d.age_ns == 16);

	CHECK(taskstate_now_ns() > 0);
}

static void test_state_names(void)
{
	unsigned int s;

	for (s = 0; s < TASKSTATE_NR_STATES; s++)
		CHECK(taskstate_state_from_name(taskstate_state_name(s)) == (int)s);
	CHECK_STR(taskstate_state_name(TASKSTATE_RUNNABLE), "RUNNABLE");
	CHECK_STR(taskstate_state_name(TASKSTATE_NR_STATES), "?");
	CHECK(taskstate_state_from_name("running") == TASKSTATE_RUNNING);
	CHECK(taskstate_state_from_name("Blocked") == TASKSTATE_BLOCKED);
	CHECK(taskstate_state_from_name("none") == TASKSTATE_NONE);
	CHECK(taskstate_state_from_name("") == -EINVAL);
	CHECK(taskstate_state_from_name("?") == -EINVAL);
	CHECK(taskstate_state_from_name("RUN") == -EINVAL);
	CHECK(taskstate_state_from_name("RUNNING ") == -EINVAL);
}

static void test_parse_num(void)
{
	uint64_t v = 42;

	CHECK(parse_num("0", 0, 10, &v) == 0 && v == 0);
	CHECK(parse_num("007", 0, 10, &v) == 0 && v == 7);
	CHECK(parse_num("4294967295", 0, UINT32_MAX, &v) == 0 &&
	      v == UINT32_MAX);
	CHECK(parse_num("18446744073709551615", 0, UINT64_MAX, &v) == 0 &&
	      v == UINT64_MAX);
	v = 42;
	CHECK(parse_num("4294967296", 0, UINT32_MAX, &v) == -ERANGE);
	CHECK(parse_num("18446744073709551616", 0, UINT64_MAX, &v) == -ERANGE);
	CHECK(parse_num("0", 1, 10, &v) == -ERANGE);
	CHECK(parse_num("11", 1, 10, &v) == -ERANGE);
	CHECK(parse_num("", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("-1", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("+1", 0, 10, &v) == -EINVAL);
	CHECK(parse_num(" 1", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("1 ", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("1x", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("0x1", 0, 10, &v) == -EINVAL);
	CHECK(parse_num("1.5", 0, 10, &v) == -EINVAL);
	CHECK(v == 42);		/* untouched on error */
}

/* What f(stream, ...) printed, as a string to free. */
#define CAPTURE(buf, call)						\
	do {								\
		size_t size_;						\
		FILE *stream = open_memstream(&(buf), &size_);		\
									\
		call;							\
		fclose(stream);						\
	} while (0)

static void test_json(void)
{
	char *out;

	CAPTURE(out, json_put_string(stream, "plain name"));
	CHECK_STR(out, "\"plain name\"");
	free(out);

	CAPTURE(out, json_put_string(stream, "a\"b\\c/\n\t\r\x01\x1f\x7f"));
	CHECK_STR(out, "\"a\\\"b\\\\c/\\n\\t\\u000d\\u0001\\u001f\\u007f\"");
	free(out);

	/* Valid UTF-8 passes; a cut, overlong or stray byte becomes U+FFFD. */
	CAPTURE(out, json_put_string(stream, "\xc3\xa9t\xc3\xa9 \xe2\x82"));
	CHECK_STR(out, "\"\xc3\xa9t\xc3\xa9 \\ufffd\\ufffd\"");
	free(out);
	CAPTURE(out, json_put_string(stream, "\xc0\xaf\x80\xed\xa0\x80x"));
	CHECK_STR(out, "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdx\"");
	free(out);
	CAPTURE(out, json_put_string(stream, "\xf0\x9f\x98\x80"));
	CHECK_STR(out, "\"\xf0\x9f\x98\x80\"");
	free(out);
}

static const struct ts_row rows[] = {
	{ .tid = 7, .tgid = 7, .has_comm = true, .comm = "say \"hi\"\n",
	  .d = { TASKSTATE_BLOCKED, 123456789012345ULL, 2500000000ULL } },
	{ .tid = 1234567, .tgid = 7,
	  .d = { TASKSTATE_RUNNING, 5, 0 } },
};

static void test_table(void)
{
	char line[TS_LINE_MAX];
	struct ts_widths w;
	struct ts_row r = rows[0];

	table_widths(rows, 0, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line, "TID TGID STATE    SINCE_NS AGE_NS COMM");

	table_widths(rows, 2, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line,
		  "    TID TGID STATE           SINCE_NS     AGE_NS COMM");
	format_row(line, sizeof(line), &rows[0], &w);
	CHECK_STR(line,
		  "      7    7 BLOCKED  123456789012345 2500000000 say \"hi\"?");
	format_row(line, sizeof(line), &rows[1], &w);
	CHECK_STR(line,
		  "1234567    7 RUNNING                5          0 -");

	r.d.age_ns = 1000000001;
	CHECK(row_is_stuck(&r, 1000000000));
	CHECK(!row_is_stuck(&r, 1000000001));
	r.d.state = TASKSTATE_RUNNABLE;
	CHECK(!row_is_stuck(&r, 0));
	r.d.state = TASKSTATE_NONE;
	CHECK(!row_is_stuck(&r, 0));
}

static void test_print_json(void)
{
	char *out;

	CAPTURE(out, print_json(stream, rows, 0));
	CHECK_STR(out, "[]\n");
	free(out);

	CAPTURE(out, print_json(stream, rows, 2));
	CHECK_STR(out,
		  "[\n"
		  "  {\"tid\": 7, \"tgid\": 7, \"state\": \"BLOCKED\", "
		  "\"since_ns\": 123456789012345, \"age_ns\": 2500000000, "
		  "\"comm\": \"say \\\"hi\\\"\\n\"},\n"
		  "  {\"tid\": 1234567, \"tgid\": 7, \"state\": \"RUNNING\", "
		  "\"since_ns\": 5, \"age_ns\": 0, \"comm\": null}\n"
		  "]\n");
	free(out);
}

/* The calls that reach the kernel, against stand-ins for the device. */
static void test_device_errors(void)
{
	struct taskstate_entry e = { .tid = 1 }, *list = NULL;
	struct taskstate_info info;
	uint32_t n = 99;
	char comm[TS_COMM_MAX];
	int fd;

	setenv("TASKSTATE_DEV", "/nonexistent/taskstate", 1);
	CHECK_STR(taskstate_dev_path(), "/nonexistent/taskstate");
	CHECK(taskstate_open() == -ENOENT);

	setenv("TASKSTATE_DEV", "", 1);
	CHECK_STR(taskstate_dev_path(), TASKSTATE_DEV_PATH);

	/* /dev/null opens but knows no ioctl. */
	setenv("TASKSTATE_DEV", "/dev/null", 1);
	fd = taskstate_open();
	CHECK(fd >= 0);
	CHECK(taskstate_info(fd, &info) == -ENOTTY);
	CHECK(info.size == sizeof(info));
	CHECK(taskstate_track(fd, 1, true, NULL) == -ENOTTY);
	CHECK(taskstate_untrack(fd, 1, false, NULL) == -ENOTTY);
	CHECK(taskstate_sample(fd, &e, 1) == -ENOTTY);
	CHECK(taskstate_sample(fd, &e, 0) == 0);
	CHECK(taskstate_sample(fd, &e, (uint32_t)INT32_MAX + 1) == -EINVAL);
	CHECK(taskstate_list(fd, 0, &list, &n) == -ENOTTY);
	CHECK(list == NULL && n == 99);
	taskstate_close(fd);
	unsetenv("TASKSTATE_DEV");

	CHECK(taskstate_comm(syscall(SYS_gettid), comm, sizeof(comm)) == 8);
	CHECK_STR(comm, "test_lib");
	CHECK(taskstate_comm(syscall(SYS_gettid), comm, 5) == 4);
	CHECK_STR(comm, "test");
	CHECK(taskstate_comm(0, comm, sizeof(comm)) == -ENOENT);
}

int main(void)
{
	test_decode();
	test_state_names();
	test_parse_num();
	test_json();
	test_table();
	test_print_json();
	test_device_errors();
	if (failures) {
		fprintf(stderr, "test_lib: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_lib: all checks passed\n");
	return 0;
}
