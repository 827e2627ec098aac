// SPDX-License-Identifier: BSD-2-Clause
/* Selection of stored profiles for `ebprof ls` and `ebprof merge`. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "store_select.h"
#include "util/args.h"
#include "util/log.h"
#include "util/timeutil.h"

/* Exactly n digits at s -> value. */
static bool num(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + s[i] - '0';
	}
	*out = v;
	return true;
}

/* "HH:MM[:SS]" at s; returns the characters used, 0 when not a time. */
static int parse_hms(const char *s, struct tm *tm)
{
	int h, m, sec = 0, used = 5;

	if (!num(s, 2, &h) || s[2] != ':' || !num(s + 3, 2, &m))
		return 0;
	if (s[5] == ':') {
		if (!num(s + 6, 2, &sec))
			return 0;
		used = 8;
	}
	if (h > 23 || m > 59 || sec > 60)
		return 0;
	tm->tm_hour = h;
	tm->tm_min = m;
	tm->tm_sec = sec;
	return used;
}

static int relative(const char *s, int64_t now_ns, int64_t *out)
{
	static const struct {
		char unit;
		int64_t secs;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 604800 } };
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s + 1, &end, 10);
	if (errno || end == s + 1 || s[1] < '0' || s[1] > '9' || !end[0] || end[1] ||
	    v > 100LL * 365 * 86400)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (units[i].unit == end[0]) {
			if (v > 100LL * 365 * 86400 / units[i].secs)
				return -EINVAL;
			*out = now_ns - (int64_t)v * units[i].secs * NSEC_PER_SEC;
			return 0;
		}
	return -EINVAL;
}

int store_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, char *err, size_t errlen)
{
	struct tm tm = { 0 }, chk;
	bool utc = false;
	const char *p = s;
	time_t t;
	int y, mo, d, n;

	if (!s || !*s)
		goto bad;
	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		if (relative(s, now_ns, out_ns))
			goto bad;
		return 0;
	}
	if (s[0] == '@') {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(s + 1, &end, 10);
		if (errno || end == s + 1 || *end || s[1] < '0' || s[1] > '9' ||
		    v > INT64_MAX / NSEC_PER_SEC)
			goto bad;
		*out_ns = (int64_t)v * NSEC_PER_SEC;
		return 0;
	}
	n = parse_hms(s, &tm);
	if (n) { /* time of day, today */
		time_t now = (time_t)(now_ns / NSEC_PER_SEC);
		struct tm today;

		if (s[n] == 'Z' && !s[n + 1])
			utc = true;
		else if (s[n])
			goto bad;
		if (!(utc ? gmtime_r(&now, &today) : localtime_r(&now, &today)))
			goto bad;
		tm.tm_year = today.tm_year;
		tm.tm_mon = today.tm_mon;
		tm.tm_mday = today.tm_mday;
	} else {
		if (!num(p, 4, &y) || p[4] != '-' || !num(p + 5, 2, &mo) || p[7] != '-' ||
		    !num(p + 8, 2, &d))
			goto bad;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		/* Reject 2026-02-30 and the like. */
		chk = tm;
		t = timegm(&chk);
		if (mo < 1 || mo > 12 || chk.tm_mday != d || chk.tm_mon != mo - 1)
			goto bad;
		p += 10;
		if (*p == 'T' || *p == ' ') {
			n = parse_hms(p + 1, &tm);
			if (!n)
				goto bad;
			p += 1 + n;
		}
		if (*p == 'Z') {
			utc = true;
			p++;
		}
		if (*p)
			goto bad;
	}
	tm.tm_isdst = -1;
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1 && !(tm.tm_year == 69 && tm.tm_mon == 11 && tm.tm_mday == 31))
		goto bad;
	*out_ns = (int64_t)t * NSEC_PER_SEC;
	return 0;
bad:
	return args_fail(err, errlen,
			 "bad time '%s': use 2026-11-21T03:00[:SS][Z], '2026-11-21 03:00', 03:00, "
			 "-30m, -2h, -1d, now or @UNIXSECONDS",
			 s ? s : "");
}

void store_format_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / NSEC_PER_SEC - (ns % NSEC_PER_SEC < 0));
	struct tm tm;
	long off;
	size_t n;

	if (!localtime_r(&t, &tm)) {
		snprintf(buf, len, "@%lld", (long long)t);
		return;
	}
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	off = tm.tm_gmtoff;
	if (n)
		snprintf(buf + n, len - n, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 3600,
			 labs(off) / 60 % 60);
}

static bool label_key_ok(const char *k, size_t n)
{
	if (!n || (k[0] >= '0' && k[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

int store_label_parse(const char *s, struct kv *kv, char *err, size_t errlen)
{
	const char *eq = strchr(s, '=');

	if (!eq || !label_key_ok(s, (size_t)(eq - s)))
		return args_fail(err, errlen,
				 "bad label '%s': expected KEY=VALUE, KEY of [a-z0-9_] "
				 "(e.g. backend_type=checkpointer)",
				 s);
	kv->key = strndup(s, (size_t)(eq - s));
	kv->value = strdup(eq + 1);
	if (!kv->key || !kv->value) {
		free((char *)kv->key);
		free((char *)kv->value);
		return -ENOMEM;
	}
	return 0;
}

int store_select(const struct cli_values *v, bool one_type, struct store_entry **e, size_t *n)
{
	struct store_query q = { .from_ns = v->from.ns, .to_ns = v->to.ns, .service = v->service };
	struct kv *labels;
	bool typed = v->type != NULL;
	int err;

	if (v->from.arg && v->to.arg && v->from.ns >= v->to.ns) {
		log_error("--from %s is not before --to %s", v->from.arg, v->to.arg);
		return EXIT_USAGE;
	}
	labels = calloc(v->nlabels + 1, sizeof(*labels));
	if (!labels) {
		log_error("out of memory");
		return EXIT_RUNTIME;
	}
	for (size_t i = 0; i < v->nlabels; i++) {
		labels[i] = v->labels[i];
		typed |= !strcmp(v->labels[i].key, "type"); /* --label type=... */
	}
	q.labels = labels;
	q.nlabels = v->nlabels;
	if (v->type || (one_type && !typed))
		labels[q.nlabels++] = (struct kv){ "type", v->type ? v->type : "cpu" };
	q.pids = v->pids;
	q.npids = v->npids;
	err = store_list(v->dir, &q, e, n);
	free(labels);
	if (err == -ENOENT || err == -ENOTDIR) {
		log_error("no profile store at %s (see --dir)", v->dir);
		return EXIT_USAGE;
	}
	if (err) {
		log_error("cannot read the profile store %s: %s", v->dir, strerror(-err));
		return EXIT_RUNTIME;
	}
	if (!*n) {
		store_entries_free(*e, *n);
		*e = NULL;
		log_error("no profiles match in %s", v->dir);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
