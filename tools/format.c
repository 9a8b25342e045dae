// SPDX-License-Identifier: GPL-2.0
/*
 * Argument parsing and output formatting of the taskstate command.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "format.h"

#define STATE_WIDTH	8	/* "RUNNABLE", "SLEEPING" */

int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*val = v;
	return 0;
}

bool row_is_stuck(const struct ts_row *r, uint64_t stuck_ns)
{
	switch (r->d.state) {
	case TASKSTATE_NONE:
	case TASKSTATE_RUNNING:
	case TASKSTATE_RUNNABLE:
		return false;
	}
	return r->d.age_ns > stuck_ns;
}

static int digits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static void widen(int *width, int w)
{
	if (*width < w)
		*width = w;
}

void table_widths(const struct ts_row *rows, size_t n, struct ts_widths *w)
{
	size_t i;

	w->tid = 3;	/* the header names */
	w->tgid = 4;
	w->since = 8;
	w->age = 6;
	for (i = 0; i < n; i++) {
		widen(&w->tid, digits(rows[i].tid));
		widen(&w->tgid, digits(rows[i].tgid));
		widen(&w->since, digits(rows[i].d.since_ns));
		widen(&w->age, digits(rows[i].d.age_ns));
	}
}

int format_header(char *buf, size_t len, const struct ts_widths *w)
{
	return snprintf(buf, len, "%*s %*s %-*s %*s %*s COMM",
			w->tid, "TID", w->tgid, "TGID", STATE_WIDTH, "STATE",
			w->since, "SINCE_NS", w->age, "AGE_NS");
}

int format_row(char *buf, size_t len, const struct ts_row *r,
	       const struct ts_widths *w)
{
	char comm[TS_COMM_MAX];
	size_t i;

	for (i = 0; i < sizeof(comm) - 1 && r->comm[i]; i++)
		comm[i] = iscntrl((unsigned char)r->comm[i]) ? '?' : r->comm[i];
	comm[i] = '\0';

	return snprintf(buf, len, "%*" PRIu32 " %*" PRIu32 " %-*s %*" PRIu64
			" %*" PRIu64 " %s",
			w->tid, r->tid, w->tgid, r->tgid,
			STATE_WIDTH, taskstate_state_name(r->d.state),
			w->since, r->d.since_ns, w->age, r->d.age_ns,
			r->has_comm ? comm : "-");
}

/* Length of the valid UTF-8 sequence s starts with, 0 if none does. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (s[0] == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* above U+10FFFF */
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi)	/* also stops at the NUL */
			return 0;
	return n;
}

void json_put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	putc('"', f);
	for (; *p; p += n) {
		n = utf8_len(p);
		if (!n) {
			fputs("\\ufffd", f);
			n = 1;
		} else if (n > 1) {
			fwrite(p, 1, n, f);
		} else if (*p == '"' || *p == '\\') {
			putc('\\', f);
			putc(*p, f);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else if (*p == '\t') {
			fputs("\\t", f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
		} else {
			putc(*p, f);
		}
	}
	putc('"', f);
}

void print_json(FILE *f, const struct ts_row *rows, size_t n)
{
	size_t i;

	putc('[', f);
	for (i = 0; i < n; i++) {
		const struct ts_row *r = &rows[i];

		fprintf(f, "%s\n  {\"tid\": %" PRIu32 ", \"tgid\": %" PRIu32
			", \"state\": \"%s\", \"since_ns\": %" PRIu64
			", \"age_ns\": %" PRIu64 ", \"comm\": ",
			i ? "," : "", r->tid, r->tgid,
			taskstate_state_name(r->d.state), r->d.since_ns, r->d.age_ns);
		if (r->has_comm)
			json_put_string(f, r->comm);
		else
			fputs("null", f);
		putc('}', f);
	}
	fputs(n ? "\n]\n" : "]\n", f);
}
