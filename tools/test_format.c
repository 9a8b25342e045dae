// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of the command's parsing and formatting: needs no
 * module (lib/test_lib.c tests the library).  TAP, by lib/test.h.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "libtaskstate.h"
#include "test.h"

/* name in lower case, as the command spells the library's names. */
static bool is_lower_of(const char *lower, const char *name)
{
	size_t i;

	for (i = 0; name[i]; i++)
		if (lower[i] != tolower((unsigned char)name[i]))
			return false;
	return !lower[i];
}

static void test_state_names(void)
{
	unsigned int s;

	/* The command's one spelling: lowercase, read back by the library. */
	for (s = 0; s < TASKSTATE_NR_STATES; s++) {
		CHECK(is_lower_of(ts_state_name(s), taskstate_state_name(s)));
		CHECK(taskstate_state_from_name(ts_state_name(s)) == (int)s);
	}
	for (s = 0; s < TASKSTATE_MAP_NR_TOTALS; s++)
		CHECK(is_lower_of(ts_total_name(s), taskstate_total_name(s)));
	CHECK_STR(ts_state_name(TASKSTATE_RUNNING), "running");
	CHECK_STR(ts_state_name(TASKSTATE_DEAD), "dead");
	CHECK_STR(ts_state_name(TASKSTATE_NR_STATES), "?");
	CHECK_STR(ts_total_name(TASKSTATE_TOTAL_RUNNABLE), "runnable");
	CHECK_STR(ts_total_name(TASKSTATE_TOTAL_OTHER), "other");
	CHECK_STR(ts_total_name(TASKSTATE_MAP_NR_TOTALS), "?");
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

/* What put(stream, in) printed is want. */
#define CHECK_PUT(put, in, want)					\
	do {								\
		char *out_;						\
									\
		CAPTURE(out_, put(stream, in));				\
		CHECK_STR(out_, want);					\
		free(out_);						\
	} while (0)

static void test_json(void)
{
	CHECK_PUT(json_put_string, "plain name", "\"plain name\"");
	CHECK_PUT(json_put_string, "a\"b\\c/\n\t\r\x01\x1f\x7f",
		  "\"a\\\"b\\\\c/\\n\\t\\u000d\\u0001\\u001f\\u007f\"");

	/* Valid UTF-8 passes; a cut, overlong or stray byte becomes U+FFFD. */
	CHECK_PUT(json_put_string, "\xc3\xa9t\xc3\xa9 \xe2\x82",
		  "\"\xc3\xa9t\xc3\xa9 \\ufffd\\ufffd\"");
	CHECK_PUT(json_put_string, "\xc0\xaf\x80\xed\xa0\x80x",
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdx\"");
	CHECK_PUT(json_put_string, "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
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

	w = (struct ts_widths){ .ns = true };
	table_widths(rows, 0, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line, "TID TGID STATE    SINCE_NS AGE_NS COMM");

	table_widths(rows, 2, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line,
		  "    TID TGID STATE           SINCE_NS     AGE_NS COMM");
	format_row(line, sizeof(line), &rows[0], &w);
	CHECK_STR(line,
		  "      7    7 blocked  123456789012345 2500000000 say \"hi\"?");
	format_row(line, sizeof(line), &rows[1], &w);
	CHECK_STR(line,
		  "1234567    7 running                5          0 -");

	/* Durations, and in colour. */
	w = (struct ts_widths){ 0 };
	table_widths(rows, 0, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line, "TID TGID STATE    SINCE AGE COMM");
	table_widths(rows, 2, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line, "    TID TGID STATE    SINCE  AGE COMM");
	format_row(line, sizeof(line), &rows[0], &w);
	CHECK_STR(line, "      7    7 blocked  1d10h 2.5s say \"hi\"?");
	format_row(line, sizeof(line), &rows[1], &w);
	CHECK_STR(line, "1234567    7 running    5ns  0ns -");
	w.color = true;
	format_row(line, sizeof(line), &rows[0], &w);
	CHECK_STR(line, "      7    7 \033[31mblocked \033[39m 1d10h 2.5s say \"hi\"?");

	r.d.age_ns = 1000000001;
	CHECK(row_is_stuck(&r, 1000000000, TASKSTATE_STUCK_MASK));
	CHECK(!row_is_stuck(&r, 1000000001, TASKSTATE_STUCK_MASK));
	/* The default is BLOCKED alone, as the hung-task detector's. */
	CHECK(TASKSTATE_STUCK_MASK == 1U << TASKSTATE_BLOCKED);
	r.d.state = TASKSTATE_SLEEPING;
	CHECK(!row_is_stuck(&r, 0, TASKSTATE_STUCK_MASK));
	CHECK(row_is_stuck(&r, 0, 1U << TASKSTATE_SLEEPING));
	r.d.state = TASKSTATE_RUNNABLE;
	CHECK(!row_is_stuck(&r, 0, TASKSTATE_STUCK_MASK));
	r.d.state = TASKSTATE_NONE;
	CHECK(!row_is_stuck(&r, 0, TASKSTATE_STUCK_MASK));
}

/*
 * Hostile thread names (prctl(PR_SET_NAME) takes any 15 bytes): what a
 * terminal gets has no control character and is valid UTF-8.
 */
static void test_sanitize(void)
{
	char out[TS_COMM_MAX], small[6];
	struct ts_widths w = { 0 };
	struct ts_row r = rows[0];
	char line[TS_LINE_MAX];

	CHECK_STR(ts_sanitize(out, sizeof(out), "kworker/0:1"), "kworker/0:1");
	/* Clear screen, set title, bell: each control byte one '?'. */
	CHECK_STR(ts_sanitize(out, sizeof(out), "x\033[2J\033]0;pw\a"),
		  "x?[2J?]0;pw?");
	CHECK_STR(ts_sanitize(out, sizeof(out), "a\tb\nc\rd\x7f"), "a?b?c?d?");
	/* C1 controls: 8-bit CSI, and U+009B (CSI) in UTF-8. */
	CHECK_STR(ts_sanitize(out, sizeof(out), "a\x9b" "2Jb"), "a?2Jb");
	CHECK_STR(ts_sanitize(out, sizeof(out), "a\xc2\x9b" "2J"), "a?2J");
	/* Invalid UTF-8 (stray, cut, overlong, surrogate) one '?' per byte. */
	CHECK_STR(ts_sanitize(out, sizeof(out), "\xff\xfe"), "??");
	CHECK_STR(ts_sanitize(out, sizeof(out), "ab\xe2\x82"), "ab??");
	CHECK_STR(ts_sanitize(out, sizeof(out), "\xc0\xaf\xed\xa0\x80"), "?????");
	/* Valid UTF-8 passes, U+00A0 and above. */
	CHECK_STR(ts_sanitize(out, sizeof(out), "caf\xc3\xa9 \xc2\xa0\xf0\x9f\x98\x80"),
		  "caf\xc3\xa9 \xc2\xa0\xf0\x9f\x98\x80");
	/* 15 bytes, the most a comm has: all kept. */
	CHECK_STR(ts_sanitize(out, sizeof(out), "123456789012345"), "123456789012345");
	/* Cut to fit, never inside a sequence. */
	CHECK_STR(ts_sanitize(small, sizeof(small), "abcdefgh"), "abcde");
	CHECK_STR(ts_sanitize(small, sizeof(small), "abc\xc3\xa9\xc3\xa9"), "abc\xc3\xa9");
	CHECK_STR(ts_sanitize(small, sizeof(small), "abcd\xc3\xa9"), "abcd");
	CHECK_STR(ts_sanitize(small, 1, "abc"), "");

	/* In a table row. */
	snprintf(r.comm, sizeof(r.comm), "\033]0;x\a\xff\xc2\x9b");
	table_widths(&r, 1, &w);
	format_row(line, sizeof(line), &r, &w);
	CHECK_STR(line, "  7    7 blocked  1d10h 2.5s ?]0;x???");
}

static void test_prom_label(void)
{
	CHECK_PUT(prom_put_label, "nginx: worker", "nginx: worker");
	/* Escaped as the text format says. */
	CHECK_PUT(prom_put_label, "a\\b\"c\nd", "a\\\\b\\\"c\\nd");
	/* Not UTF-8 or a control: U+FFFD. */
	CHECK_PUT(prom_put_label, "x\xff\033[1m\xc2\x9b\xe2\x82",
		  "x\xef\xbf\xbd\xef\xbf\xbd[1m\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_PUT(prom_put_label, "caf\xc3\xa9", "caf\xc3\xa9");
}

static void test_print_json(void)
{
	struct ts_widths w = { 0 };
	char line[TS_LINE_MAX];
	char *out;

	CAPTURE(out, print_json(stream, rows, 0, NULL));
	CHECK_STR(out, "{\"threads\": []}\n");
	free(out);

	CAPTURE(out, print_json(stream, rows, 2, NULL));
	CHECK_STR(out,
		  "{\"threads\": [\n"
		  "  {\"tid\": 7, \"tgid\": 7, \"state\": \"blocked\", "
		  "\"since_ns\": 123456789012345, \"age_ns\": 2500000000, "
		  "\"comm\": \"say \\\"hi\\\"\\n\"},\n"
		  "  {\"tid\": 1234567, \"tgid\": 7, \"state\": \"running\", "
		  "\"since_ns\": 5, \"age_ns\": 0, \"comm\": null}\n"
		  "]}\n");
	free(out);

	/* --since wall: the stamp plus the offset, in UTC, to the ms. */
	w.wall = true;
	w.wall_offset_ns = 1767225599000000000LL - 123456789012345LL + 123000000;
	CAPTURE(out, print_json(stream, rows, 1, &w));
	CHECK_STR(out,
		  "{\"threads\": [\n"
		  "  {\"tid\": 7, \"tgid\": 7, \"state\": \"blocked\", "
		  "\"since_ns\": 123456789012345, "
		  "\"since_wall\": \"2025-12-31T23:59:59.123Z\", "
		  "\"age_ns\": 2500000000, "
		  "\"comm\": \"say \\\"hi\\\"\\n\"}\n"
		  "]}\n");
	free(out);
	/* In a table, local time: here TZ=UTC. */
	setenv("TZ", "UTC", 1);
	tzset();
	table_widths(rows, 1, &w);
	format_header(line, sizeof(line), &w);
	CHECK_STR(line, "TID TGID STATE                      SINCE  AGE COMM");
	format_row(line, sizeof(line), &rows[0], &w);
	CHECK_STR(line, "  7    7 blocked  2025-12-31T23:59:59.123 2.5s say \"hi\"?");
	unsetenv("TZ");
	tzset();
	CHECK(ts_wall_offset_ns() > 0);
}

static void test_durations(void)
{
	static const struct {
		uint64_t ns;
		const char *text;
	} shown[] = {
		{ 0, "0ns" }, { 880, "880ns" }, { 999, "999ns" },
		{ 1000, "1.0us" }, { 6820, "6.8us" }, { 9999, "9.9us" },
		{ 10000, "10us" }, { 999999, "999us" }, { 1000000, "1.0ms" },
		{ 12345678, "12ms" }, { 999999999, "999ms" },
		{ 1900000000, "1.9s" }, { 1999999999, "1.9s" },
		{ 42000000000ULL, "42s" }, { 59999999999ULL, "59s" },
		{ 60000000000ULL, "1m00s" }, { 192000000000ULL, "3m12s" },
		{ 3599999999999ULL, "59m59s" }, { 3600000000000ULL, "1h00m" },
		{ 7500000000000ULL, "2h05m" }, { 86400000000000ULL, "1d00h" },
		{ 273600000000000ULL, "3d04h" },
		{ UINT64_MAX, "213503d23h" },
	};
	static const struct {
		const char *text;
		uint64_t bare, ns;
		int ret;
	} parsed[] = {
		{ "1", 1000000000, 1000000000, 0 },
		{ "1", 1000000, 1000000, 0 },
		{ "0.5", 1000000000, 500000000, 0 },
		{ "500ms", 1, 500000000, 0 },
		{ "1.5s", 1, 1500000000, 0 },
		{ "2m", 1, 120000000000ULL, 0 },
		{ "1h30m", 1, 5400000000000ULL, 0 },
		{ "1m30s", 1, 90000000000ULL, 0 },
		{ "1d", 1, 86400000000000ULL, 0 },
		{ "250us", 1, 250000, 0 },
		{ "7ns", 1, 7, 0 },
		{ "0", 1000000000, 0, 0 },
		{ "", 1, 0, -EINVAL },
		{ "s", 1, 0, -EINVAL },
		{ "1x", 1, 0, -EINVAL },
		{ "-1s", 1, 0, -EINVAL },
		{ "1.s", 1, 0, -EINVAL },
		{ ".5s", 1, 0, -EINVAL },
		{ "1m30", 1, 0, -EINVAL },
		{ "1 s", 1, 0, -EINVAL },
		{ "99999999999999999999", 1, 0, -ERANGE },
		{ "300000d", 1, 0, -ERANGE },
	};
	char buf[TS_DURATION_MAX];
	uint64_t ns;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(shown); i++) {
		CHECK(format_duration(buf, sizeof(buf), shown[i].ns) <
		      (int)sizeof(buf));
		CHECK_STR(buf, shown[i].text);
	}
	for (i = 0; i < ARRAY_SIZE(parsed); i++) {
		ns = 12345;
		if (parse_duration(parsed[i].text, parsed[i].bare, &ns) !=
		    parsed[i].ret)
			CHECK_STR(parsed[i].text, "(parses as expected)");
		else if (!parsed[i].ret && ns != parsed[i].ns)
			CHECK_STR(parsed[i].text, "(the right value)");
		else if (parsed[i].ret && ns != 12345)
			CHECK_STR(parsed[i].text, "(untouched on error)");
	}
}

static void test_selection(void)
{
	struct ts_row r = rows[0];	/* tid 7, tgid 7, BLOCKED for 2.5 s */
	struct ts_filter f = { 0 };
	unsigned int mask = 0;
	uint32_t *ids = NULL;
	size_t n = 0;

	CHECK(parse_id_list("7", &ids, &n) == 0 && n == 1 && ids[0] == 7);
	free(ids);
	CHECK(parse_id_list("1,22,2147483647", &ids, &n) == 0 && n == 3 &&
	      ids[0] == 1 && ids[1] == 22 && ids[2] == 2147483647);
	free(ids);
	ids = NULL;
	CHECK(parse_id_list("", &ids, &n) == -EINVAL);
	CHECK(parse_id_list("1,", &ids, &n) == -EINVAL);
	CHECK(parse_id_list(",1", &ids, &n) == -EINVAL);
	CHECK(parse_id_list("1,,2", &ids, &n) == -EINVAL);
	CHECK(parse_id_list("0", &ids, &n) == -EINVAL);
	CHECK(parse_id_list("2147483648", &ids, &n) == -EINVAL);
	CHECK(parse_id_list("1;2", &ids, &n) == -EINVAL);
	CHECK(ids == NULL);

	CHECK(parse_state_list("blocked", &mask) == 0 &&
	      mask == 1U << TASKSTATE_BLOCKED);
	CHECK(parse_state_list("RUNNING,Stopped", &mask) == 0 &&
	      mask == (1U << TASKSTATE_RUNNING | 1U << TASKSTATE_STOPPED));
	/* ps's letters, case-sensitive: R is running or runnable. */
	CHECK(parse_state_list("D", &mask) == 0 && mask == 1U << TASKSTATE_BLOCKED);
	CHECK(parse_state_list("R,S", &mask) == 0 &&
	      mask == (1U << TASKSTATE_RUNNING | 1U << TASKSTATE_RUNNABLE |
		       1U << TASKSTATE_SLEEPING));
	CHECK(parse_state_list("T,t", &mask) == 0 &&
	      mask == (1U << TASKSTATE_STOPPED | 1U << TASKSTATE_TRACED));
	CHECK(parse_state_list("Z", &mask) == 0 && mask == 1U << TASKSTATE_DEAD);
	CHECK(parse_state_list("d", &mask) == -EINVAL);
	CHECK(parse_state_list("Q", &mask) == -EINVAL);
	CHECK(parse_state_list("", &mask) == -EINVAL);
	CHECK(parse_state_list("run", &mask) == -EINVAL);
	CHECK(parse_state_list("blocked,", &mask) == -EINVAL);

	CHECK(row_matches(&f, &r));
	f.pids = (uint32_t[]){ 3, 7 };
	f.npids = 2;
	CHECK(row_matches(&f, &r));
	f.npids = 1;
	CHECK(!row_matches(&f, &r));
	f.npids = 0;
	f.tids = (uint32_t[]){ 7 };
	f.ntids = 1;
	CHECK(row_matches(&f, &r));
	r.tid = 8;
	CHECK(!row_matches(&f, &r));
	r.tid = 7;
	f.states = 1U << TASKSTATE_SLEEPING;
	CHECK(!row_matches(&f, &r));
	f.states |= 1U << TASKSTATE_BLOCKED;
	CHECK(row_matches(&f, &r));
	f.min_age_ns = 2500000000ULL;
	CHECK(row_matches(&f, &r));
	f.min_age_ns++;
	CHECK(!row_matches(&f, &r));
}

static void test_sort(void)
{
	struct ts_row s[4] = {
		{ .tid = 30, .d = { TASKSTATE_SLEEPING, 0, 500 } },
		{ .tid = 10, .d = { TASKSTATE_RUNNING, 0, 100 } },
		{ .tid = 40, .stuck = true, .d = { TASKSTATE_BLOCKED, 0, 900 } },
		{ .tid = 20, .stuck = true, .d = { TASKSTATE_SLEEPING, 0, 2000 } },
	};
	static const struct {
		const char *key;
		uint32_t order[4];
	} want[] = {
		{ "tid", { 10, 20, 30, 40 } },
		{ "age", { 20, 40, 30, 10 } },
		{ "state", { 10, 20, 30, 40 } },
		{ "stuck", { 20, 40, 10, 30 } },
	};
	size_t i, j;
	int key;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		key = parse_sort_key(want[i].key);
		CHECK(key >= 0);
		if (key < 0)
			continue;
		sort_rows(s, 4, key);
		for (j = 0; j < 4; j++)
			if (s[j].tid != want[i].order[j])
				CHECK_STR(want[i].key, "(sorted)");
	}
	CHECK(parse_sort_key("AGE") == -EINVAL);
	CHECK(parse_sort_key("") == -EINVAL);
}

static const struct unit_test tests[] = {
	{ "state_names", test_state_names },
	{ "parse_num", test_parse_num },
	{ "json", test_json },
	{ "table", test_table },
	{ "print_json", test_print_json },
	{ "durations", test_durations },
	{ "selection", test_selection },
	{ "sort", test_sort },
	{ "sanitize", test_sanitize },
	{ "prom_label", test_prom_label },
};

int main(void)
{
	return run_tests("test_format", tests, ARRAY_SIZE(tests));
}
