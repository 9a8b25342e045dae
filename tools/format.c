// SPDX-License-Identifier: GPL-2.0
/*
 * Argument parsing and output formatting of the taskstate command.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "format.h"

#define STATE_WIDTH	8	/* "runnable", "sleeping" */
#define TIME_MAX	32	/* a SINCE or AGE cell: ns, duration, wall */
#define NAME_LEN	16	/* a state's or a total's name, with its NUL */

#define NS_PER_US	1000ULL
#define NS_PER_MS	1000000ULL
#define NS_PER_S	1000000000ULL
#define NS_PER_MIN	(60 * NS_PER_S)
#define NS_PER_HOUR	(60 * NS_PER_MIN)
#define NS_PER_DAY	(24 * NS_PER_HOUR)

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

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {	/* longest names first: "ms" before "m" and "s" */
	{ "ns", 1 }, { "us", NS_PER_US }, { "ms", NS_PER_MS },
	{ "s", NS_PER_S }, { "m", NS_PER_MIN }, { "h", NS_PER_HOUR },
	{ "d", NS_PER_DAY },
};

int parse_duration(const char *s, uint64_t bare_unit_ns, uint64_t *ns)
{
	uint64_t total = 0, whole, frac, scale, unit, part;
	const char *p = s;
	size_t i, len;
	int parts = 0;

	if (!*s)
		return -EINVAL;
	while (*p) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (whole = 0; isdigit((unsigned char)*p); p++) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (*p - '0');
		}
		frac = 0;
		scale = 1;
		if (*p == '.') {
			if (!isdigit((unsigned char)*++p))
				return -EINVAL;
			for (; isdigit((unsigned char)*p); p++) {
				if (scale < NS_PER_S) {	/* 9 digits count */
					frac = frac * 10 + (*p - '0');
					scale *= 10;
				}
			}
		}
		unit = 0;
		for (i = 0; i < ARRAY_SIZE(units); i++) {
			len = strlen(units[i].name);
			if (!strncmp(p, units[i].name, len)) {
				unit = units[i].ns;
				p += len;
				break;
			}
		}
		if (!unit) {
			/* A bare number only alone: not "1m30", not "5x". */
			if (*p || parts)
				return -EINVAL;
			unit = bare_unit_ns;
		}
		parts++;
		if (whole && unit > UINT64_MAX / whole)
			return -ERANGE;
		part = whole * unit;
		/*
		 * frac / scale of a unit, in 64 bits: frac < scale <= 10^9,
		 * so (unit % scale) * frac < 10^18.
		 */
		part += unit / scale * frac + unit % scale * frac / scale;
		if (part > UINT64_MAX - total)
			return -ERANGE;
		total += part;
	}
	*ns = total;
	return 0;
}

int format_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		uint64_t below, unit;
		const char *name;
	} dec[] = {	/* one decimal below ten of a unit, none above */
		{ 10 * NS_PER_US, NS_PER_US, "us" },
		{ NS_PER_MS, NS_PER_US, "us" },
		{ 10 * NS_PER_MS, NS_PER_MS, "ms" },
		{ NS_PER_S, NS_PER_MS, "ms" },
		{ 10 * NS_PER_S, NS_PER_S, "s" },
		{ NS_PER_MIN, NS_PER_S, "s" },
	};
	unsigned long long v;
	size_t i;

	if (ns < NS_PER_US)
		return snprintf(buf, len, "%lluns", (unsigned long long)ns);
	for (i = 0; i < ARRAY_SIZE(dec); i++) {
		if (ns >= dec[i].below)
			continue;
		v = ns / dec[i].unit;
		if (dec[i].below == 10 * dec[i].unit)
			return snprintf(buf, len, "%llu.%llu%s", v,
					(unsigned long long)(ns / (dec[i].unit / 10) % 10),
					dec[i].name);
		return snprintf(buf, len, "%llu%s", v, dec[i].name);
	}
	if (ns < NS_PER_HOUR)
		return snprintf(buf, len, "%llum%02llus",
				(unsigned long long)(ns / NS_PER_MIN),
				(unsigned long long)(ns % NS_PER_MIN / NS_PER_S));
	if (ns < NS_PER_DAY)
		return snprintf(buf, len, "%lluh%02llum",
				(unsigned long long)(ns / NS_PER_HOUR),
				(unsigned long long)(ns % NS_PER_HOUR / NS_PER_MIN));
	return snprintf(buf, len, "%llud%02lluh",
			(unsigned long long)(ns / NS_PER_DAY),
			(unsigned long long)(ns % NS_PER_DAY / NS_PER_HOUR));
}

int parse_id_list(const char *s, uint32_t **ids, size_t *n)
{
	size_t cap = 1, nr = 0;
	const char *p;
	uint32_t *out;
	char num[24];
	uint64_t v;

	for (p = s; *p; p++)
		cap += *p == ',';
	out = calloc(cap, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (p = s; ; p++) {
		size_t len = strcspn(p, ",");

		if (!len || len >= sizeof(num))
			goto bad;
		memcpy(num, p, len);
		num[len] = '\0';
		if (parse_num(num, 1, INT32_MAX, &v))
			goto bad;
		out[nr++] = v;
		p += len;
		if (!*p)
			break;
	}
	*ids = out;
	*n = nr;
	return 0;
bad:
	free(out);
	return -EINVAL;
}

/*
 * The library's name (the uapi header's list) in lower case, made once
 * into lower[i]; "?" stays "?".
 */
static const char *lower_name(char (*lower)[NAME_LEN], unsigned int i,
			      const char *name)
{
	char *o = lower[i];
	size_t k;

	if (!o[0]) {
		for (k = 0; name[k] && k < NAME_LEN - 1; k++)
			o[k] = tolower((unsigned char)name[k]);
		o[k] = '\0';
	}
	return o;
}

const char *ts_state_name(unsigned int state)
{
	static char lower[TASKSTATE_NR_STATES][NAME_LEN];

	if (state >= TASKSTATE_NR_STATES)
		return "?";
	return lower_name(lower, state, taskstate_state_name(state));
}

const char *ts_total_name(unsigned int total)
{
	static char lower[TASKSTATE_MAP_NR_TOTALS][NAME_LEN];

	if (total >= TASKSTATE_MAP_NR_TOTALS)
		return "?";
	return lower_name(lower, total, taskstate_total_name(total));
}

/* A letter of ps's STAT column as a mask of states, 0 if none. */
static unsigned int ps_letter(const char *s)
{
	if (!s[0] || s[1])
		return 0;
	switch (s[0]) {
	case 'R':
		return 1U << TASKSTATE_RUNNING | 1U << TASKSTATE_RUNNABLE;
	case 'S':
		return 1U << TASKSTATE_SLEEPING;
	case 'D':
		return 1U << TASKSTATE_BLOCKED;
	case 'T':
		return 1U << TASKSTATE_STOPPED;
	case 't':
		return 1U << TASKSTATE_TRACED;
	case 'Z':
	case 'X':
		return 1U << TASKSTATE_DEAD;
	}
	return 0;
}

int parse_state_list(const char *s, unsigned int *mask)
{
	unsigned int m = 0, letter;
	char name[16];
	const char *p;
	int state;

	for (p = s; ; p++) {
		size_t len = strcspn(p, ",");

		if (!len || len >= sizeof(name))
			return -EINVAL;
		memcpy(name, p, len);
		name[len] = '\0';
		letter = ps_letter(name);
		if (letter) {
			m |= letter;
		} else {
			state = taskstate_state_from_name(name);
			if (state < 0)
				return -EINVAL;
			m |= 1U << state;
		}
		p += len;
		if (!*p)
			break;
	}
	*mask = m;
	return 0;
}

bool id_in(uint32_t id, const uint32_t *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

bool row_matches(const struct ts_filter *f, const struct ts_row *r)
{
	if (f->npids && !id_in(r->tgid, f->pids, f->npids))
		return false;
	if (f->ntids && !id_in(r->tid, f->tids, f->ntids))
		return false;
	if (f->states && !(f->states & (1U << r->d.state)))
		return false;
	return r->d.age_ns >= f->min_age_ns;
}

int parse_sort_key(const char *s)
{
	static const char *const keys[] = {
		[TS_SORT_STUCK] = "stuck", [TS_SORT_AGE] = "age",
		[TS_SORT_STATE] = "state", [TS_SORT_TID] = "tid",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(s, keys[i]))
			return i;
	return -EINVAL;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct ts_row *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Longest in its state first, then by tid. */
static int cmp_age(const void *a, const void *b)
{
	const struct ts_row *x = a, *y = b;

	if (x->d.age_ns != y->d.age_ns)
		return x->d.age_ns < y->d.age_ns ? 1 : -1;
	return cmp_tid(a, b);
}

static int cmp_state(const void *a, const void *b)
{
	const struct ts_row *x = a, *y = b;

	if (x->d.state != y->d.state)
		return x->d.state < y->d.state ? -1 : 1;
	return cmp_age(a, b);
}

/* The stuck first, longest stuck on top, then by tid. */
static int cmp_stuck(const void *a, const void *b)
{
	const struct ts_row *x = a, *y = b;

	if (x->stuck != y->stuck)
		return y->stuck - x->stuck;
	if (x->stuck)
		return cmp_age(a, b);
	return cmp_tid(a, b);
}

void sort_rows(struct ts_row *rows, size_t n, enum ts_sort key)
{
	static int (*const cmp[])(const void *, const void *) = {
		[TS_SORT_STUCK] = cmp_stuck, [TS_SORT_AGE] = cmp_age,
		[TS_SORT_STATE] = cmp_state, [TS_SORT_TID] = cmp_tid,
	};

	qsort(rows, n, sizeof(*rows), cmp[key]);
}

bool row_is_stuck(const struct ts_row *r, uint64_t stuck_ns, unsigned int mask)
{
	return (mask & (1U << r->d.state)) && r->d.age_ns > stuck_ns;
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

int64_t ts_wall_offset_ns(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)rt.tv_sec * (int64_t)NS_PER_S + rt.tv_nsec -
	       (int64_t)taskstate_now_ns();
}

/*
 * A CLOCK_BOOTTIME stamp as wall-clock time, to the ms: local time for a
 * table, "2026-01-31T23:59:59.123", or UTC for JSON, with a 'Z'.
 */
static void wall_time(char *buf, size_t len, uint64_t boot_ns,
		      int64_t offset_ns, bool utc)
{
	int64_t ns = (int64_t)boot_ns + offset_ns;
	time_t sec = ns / (int64_t)NS_PER_S;
	struct tm tm;
	size_t n;

	if (ns < 0 || !(utc ? gmtime_r(&sec, &tm) : localtime_r(&sec, &tm))) {
		snprintf(buf, len, "?");
		return;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03d%s",
		 (int)(ns % (int64_t)NS_PER_S / (int64_t)NS_PER_MS), utc ? "Z" : "");
}

/* SINCE and AGE of r as shown: ns, or durations; SINCE maybe wall time. */
static void row_times(const struct ts_row *r, const struct ts_widths *w,
		      char *since, char *age)
{
	if (w->ns) {
		snprintf(since, TIME_MAX, "%" PRIu64, r->d.since_ns);
		snprintf(age, TIME_MAX, "%" PRIu64, r->d.age_ns);
	} else {
		format_duration(since, TIME_MAX, r->d.since_ns);
		format_duration(age, TIME_MAX, r->d.age_ns);
	}
	if (w->wall)
		wall_time(since, TIME_MAX, r->d.since_ns, w->wall_offset_ns,
			  false);
}

void table_widths(const struct ts_row *rows, size_t n, struct ts_widths *w)
{
	char since[TIME_MAX], age[TIME_MAX];
	size_t i;

	w->tid = 3;	/* the header names */
	w->tgid = 4;
	w->since = w->ns && !w->wall ? 8 : 5;
	w->age = w->ns ? 6 : 3;
	for (i = 0; i < n; i++) {
		widen(&w->tid, digits(rows[i].tid));
		widen(&w->tgid, digits(rows[i].tgid));
		row_times(&rows[i], w, since, age);
		widen(&w->since, strlen(since));
		widen(&w->age, strlen(age));
	}
}

int format_header(char *buf, size_t len, const struct ts_widths *w)
{
	return snprintf(buf, len, "%*s %*s %-*s %*s %*s COMM",
			w->tid, "TID", w->tgid, "TGID", STATE_WIDTH, "STATE",
			w->since, w->ns && !w->wall ? "SINCE_NS" : "SINCE",
			w->age, w->ns ? "AGE_NS" : "AGE");
}

/* SGR colour of a state name on a terminal; NULL: the default. */
static const char *state_color(unsigned int state)
{
	switch (state) {
	case TASKSTATE_RUNNING:
		return "\033[32m";	/* green */
	case TASKSTATE_RUNNABLE:
		return "\033[36m";	/* cyan */
	case TASKSTATE_BLOCKED:
		return "\033[31m";	/* red */
	case TASKSTATE_STOPPED:
	case TASKSTATE_TRACED:
		return "\033[33m";	/* yellow */
	case TASKSTATE_DEAD:
		return "\033[35m";	/* magenta */
	}
	return NULL;
}

int format_row(char *buf, size_t len, const struct ts_row *r,
	       const struct ts_widths *w)
{
	const char *color = w->color ? state_color(r->d.state) : NULL;
	char since[TIME_MAX], age[TIME_MAX];
	char comm[TS_COMM_MAX];

	ts_sanitize(comm, sizeof(comm), r->comm);
	row_times(r, w, since, age);

	return snprintf(buf, len, "%*" PRIu32 " %*" PRIu32 " %s%-*s%s %*s %*s %s",
			w->tid, r->tid, w->tgid, r->tgid,
			color ? color : "", STATE_WIDTH,
			ts_state_name(r->d.state), color ? "\033[39m" : "",
			w->since, since, w->age, age,
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

/* The UTF-8 sequence of n bytes at s is a control character: C0, DEL, C1. */
static bool utf8_control(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	return n == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

char *ts_sanitize(char *out, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n;

	if (!len)
		return out;
	for (; *p; p += n) {
		n = utf8_len(p);
		if (!n || utf8_control(p, n)) {
			n = n ? n : 1;
			if (o + 1 >= len)
				break;
			out[o++] = '?';
			continue;
		}
		if (o + n >= len)
			break;
		memcpy(out + o, p, n);
		o += n;
	}
	out[o] = '\0';
	return out;
}

void prom_put_label(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n) {
		n = utf8_len(p);
		if (n == 1 && (*p == '\\' || *p == '"')) {
			putc('\\', f);
			putc(*p, f);
		} else if (n == 1 && *p == '\n') {
			fputs("\\n", f);
		} else if (!n || utf8_control(p, n)) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			n = n ? n : 1;
		} else {
			fwrite(p, 1, n, f);
		}
	}
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

void print_json(FILE *f, const struct ts_row *rows, size_t n,
		const struct ts_widths *w)
{
	char wall[TIME_MAX];
	size_t i;

	fputs("{\"threads\": [", f);
	for (i = 0; i < n; i++) {
		const struct ts_row *r = &rows[i];

		fprintf(f, "%s\n  {\"tid\": %" PRIu32 ", \"tgid\": %" PRIu32
			", \"state\": \"%s\", \"since_ns\": %" PRIu64,
			i ? "," : "", r->tid, r->tgid,
			ts_state_name(r->d.state), r->d.since_ns);
		if (w && w->wall) {
			wall_time(wall, sizeof(wall), r->d.since_ns,
				  w->wall_offset_ns, true);
			fprintf(f, ", \"since_wall\": \"%s\"", wall);
		}
		fprintf(f, ", \"age_ns\": %" PRIu64 ", \"comm\": ", r->d.age_ns);
		if (r->has_comm)
			json_put_string(f, r->comm);
		else
			fputs("null", f);
		putc('}', f);
	}
	fputs(n ? "\n]}\n" : "]}\n", f);
}
