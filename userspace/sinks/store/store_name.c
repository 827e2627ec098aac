// SPDX-License-Identifier: BSD-2-Clause
/* File and directory names of the profile store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_';
}

void store_sanitize(const char *in, char *out)
{
	size_t n = 0;

	for (; in && in[n] && n < STORE_COMPONENT_MAX; n++)
		out[n] = name_char(in[n]) ? in[n] : '_';
	if (!n)
		out[n++] = '_';
	out[n] = '\0';
	if (out[0] == '.')
		out[0] = '_';
}

int64_t store_day_of(int64_t t_s)
{
	int64_t d = t_s / 86400;

	if (t_s % 86400 < 0)
		d--;
	return d * 86400;
}

void store_date_format(int64_t day_s, char *buf, size_t len)
{
	time_t t = (time_t)day_s;
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(buf, len, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

int store_date_parse(const char *s, int64_t *day_s)
{
	struct tm tm = { 0 };
	char check[16];
	time_t t;

	if (strlen(s) != 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
	    !digits(s + 8, 2))
		return -EINVAL;
	tm.tm_year = atoi(s) - 1900;
	tm.tm_mon = atoi(s + 5) - 1;
	tm.tm_mday = atoi(s + 8);
	t = timegm(&tm);
	store_date_format((int64_t)t, check, sizeof(check));
	if (strcmp(check, s)) /* 2026-02-30 and the like */
		return -EINVAL;
	*day_s = (int64_t)t;
	return 0;
}

int store_name_format(char *buf, size_t len, int64_t start_s, const char *comm, uint32_t pid,
		      const char *backend_type, enum ptype type, unsigned suffix)
{
	char c[STORE_COMPONENT_MAX + 1], bt[STORE_COMPONENT_MAX + 2], sfx[16] = "";
	int64_t sec = start_s - store_day_of(start_s);
	int n;

	store_sanitize(comm, c);
	bt[0] = '\0';
	if (backend_type && *backend_type) {
		bt[0] = '-';
		store_sanitize(backend_type, bt + 1);
	}
	if (suffix)
		snprintf(sfx, sizeof(sfx), "-%u", suffix);
	n = snprintf(buf, len, "%02d%02d%02d-%s-%u%s%s%s" STORE_EXT, (int)(sec / 3600),
		     (int)(sec / 60 % 60), (int)(sec % 60), c, pid, bt, sfx,
		     ptype_info(type) ? ptype_info(type)->store_suffix : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool component(const char *s, size_t n)
{
	if (!n || n > STORE_COMPONENT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

static int parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!digits(s, n) || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int store_name_parse(const char *name, int64_t day_s, struct store_name *out)
{
	size_t len = strlen(name), elen = strlen(STORE_EXT), ntok = 0, tl[6];
	enum ptype type = PTYPE_CPU;
	const char *tok[6], *p, *end;
	uint64_t v;
	int hh, mm, ss;

	if (len <= elen || strcmp(name + len - elen, STORE_EXT))
		return -EINVAL;
	end = name + len - elen;
	for (int t = 0; t < PTYPE_N; t++) { /* the type's suffix, cpu's none */
		const char *sfx = ptype_info(t)->store_suffix;
		size_t sl = strlen(sfx);

		if (sl && (size_t)(end - name) > sl && !strncmp(end - sl, sfx, sl)) {
			type = (enum ptype)t;
			end -= sl;
			break;
		}
	}
	for (p = name; ntok < 6;) {
		const char *dash = memchr(p, '-', (size_t)(end - p));

		tok[ntok] = p;
		tl[ntok++] = dash ? (size_t)(dash - p) : (size_t)(end - p);
		if (!dash)
			break;
		p = dash + 1;
	}
	if (ntok < 3 || ntok > 5 || p + tl[ntok - 1] != end)
		return -EINVAL;
	for (size_t i = 0; i < ntok; i++)
		if (!component(tok[i], tl[i]))
			return -EINVAL;
	if (tl[0] != 6 || !digits(tok[0], 6))
		return -EINVAL;
	hh = (tok[0][0] - '0') * 10 + tok[0][1] - '0';
	mm = (tok[0][2] - '0') * 10 + tok[0][3] - '0';
	ss = (tok[0][4] - '0') * 10 + tok[0][5] - '0';
	if (hh > 23 || mm > 59 || ss > 59)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->type = type;
	out->start_s = day_s + hh * 3600 + mm * 60 + ss;
	memcpy(out->comm, tok[1], tl[1]);
	if (parse_uint(tok[2], tl[2], UINT32_MAX, &v))
		return -EINVAL;
	out->pid = (uint32_t)v;
	if (ntok == 4 && digits(tok[3], tl[3])) {
		if (parse_uint(tok[3], tl[3], UINT32_MAX, &v))
			return -EINVAL;
		out->suffix = (unsigned)v;
	} else if (ntok >= 4) {
		memcpy(out->backend_type, tok[3], tl[3]);
	}
	if (ntok == 5) {
		if (parse_uint(tok[4], tl[4], UINT32_MAX, &v))
			return -EINVAL;
		out->suffix = (unsigned)v;
	}
	return 0;
}

bool store_is_temp(const char *name)
{
	static const char idx[] = STORE_INDEX ".tmp.";

	return (name[0] == '.' && strstr(name, ".tmp.")) || !strncmp(name, idx, sizeof(idx) - 1);
}
