// SPDX-License-Identifier: BSD-2-Clause
/*
 * Statement normalization (normalize.h) on libpg_query's scanner: the
 * tokens are copied, constants replaced by $n after the highest $n the
 * text already has, comments dropped and white space folded to one space.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pg_query.h>
#include <pg_query/pg_query.pb-c.h>

#include "normalize.h"

struct out {
	char buf[2 * QUERY_LABEL_MAX];
	size_t len;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n >= sizeof(o->buf)) {
		o->full = true;
		n = sizeof(o->buf) - 1 - o->len;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static bool is_constant(PgQuery__Token t)
{
	switch (t) {
	case PG_QUERY__TOKEN__ICONST:
	case PG_QUERY__TOKEN__FCONST:
	case PG_QUERY__TOKEN__SCONST:
	case PG_QUERY__TOKEN__USCONST:
	case PG_QUERY__TOKEN__BCONST:
	case PG_QUERY__TOKEN__XCONST:
		return true;
	default:
		return false;
	}
}

static bool is_comment(PgQuery__Token t)
{
	return t == PG_QUERY__TOKEN__SQL_COMMENT || t == PG_QUERY__TOKEN__C_COMMENT;
}

/* Byte offset of the 1-based character position pos (libpg_query's
 * cursorpos counts characters) in UTF-8 text of len bytes. */
static size_t char_to_byte(const char *text, size_t len, int pos)
{
	size_t i = 0;

	for (int c = 1; c < pos && i < len; c++) {
		i++;
		while (i < len && ((unsigned char)text[i] & 0xc0) == 0x80)
			i++;
	}
	return i;
}

/* Scan text into its tokens; NULL when it cannot be scanned. */
static PgQuery__ScanResult *scan(const char *text, int *errpos)
{
	PgQueryScanResult r = pg_query_scan(text);
	PgQuery__ScanResult *res = NULL;

	*errpos = 0;
	if (r.error)
		*errpos = r.error->cursorpos; /* its message quotes the text: never logged */
	else
		res = pg_query__scan_result__unpack(NULL, r.pbuf.len, (const uint8_t *)r.pbuf.data);
	pg_query_free_scan_result(r);
	return res;
}

static unsigned max_param(const char *text, const PgQuery__ScanResult *res)
{
	unsigned max = 0;

	for (size_t i = 0; i < res->n_tokens; i++) {
		const PgQuery__ScanToken *t = res->tokens[i];

		if (t->token == PG_QUERY__TOKEN__PARAM) {
			unsigned long n = strtoul(text + t->start + 1, NULL, 10);

			if (n > max && n < 65536)
				max = (unsigned)n;
		}
	}
	return max;
}

/* The tokens of res over text, constants replaced; drop_last: the last
 * token may be cut (the text was). */
static void rewrite(const char *text, const PgQuery__ScanResult *res, bool drop_last,
		    unsigned *param, struct out *o)
{
	size_t n = res->n_tokens, prev = 0;
	char num[16];

	if (drop_last && n)
		n--;
	for (size_t i = 0; i < n && !o->full; i++) {
		const PgQuery__ScanToken *t = res->tokens[i];
		size_t start = (size_t)t->start, end = (size_t)t->end;

		if (is_comment(t->token) || start < prev || end < start)
			continue;
		if (start > prev && o->len && o->buf[o->len - 1] != ' ')
			put(o, " ", 1);
		if (is_constant(t->token)) {
			int k = snprintf(num, sizeof(num), "$%u", ++*param);

			put(o, num, (size_t)k);
		} else {
			put(o, text + start, end - start);
		}
		prev = end;
	}
}

/* Bytes of s that form whole UTF-8 characters within max; invalid bytes
 * are replaced by '?' first. */
static size_t utf8_fit(char *s, size_t len, size_t max)
{
	size_t i = 0, fit = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80	    ? 1
			   : (c >> 5) == 6  ? 2
			   : (c >> 4) == 14 ? 3
			   : (c >> 3) == 30 ? 4
					    : 0;
		bool ok = n && i + n <= len;

		for (size_t k = 1; ok && k < n; k++)
			ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		if (!ok) {
			s[i] = '?';
			n = 1;
		}
		if (i + n <= max)
			fit = i + n;
		i += n;
	}
	return fit;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int query_normalize(const char *text, size_t len, bool truncated, struct query_norm *out)
{
	static const char ellipsis[] = " …";
	char *copy = strndup(text, len);
	PgQuery__ScanResult *res;
	struct out *o = NULL;
	unsigned param = 0;
	bool cut_literal = false;
	size_t keep;
	int errpos, err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!copy || !(o = calloc(1, sizeof(*o))))
		goto done;
	res = scan(copy, &errpos);
	if (!res && errpos > 0) {
		/* An unterminated literal, quoted name or comment: what
		 * comes before it, and $n for a literal. */
		size_t at = char_to_byte(copy, strlen(copy), errpos);

		cut_literal = copy[at] != '/' && copy[at] != '"';
		copy[at] = '\0';
		truncated = true;
		res = scan(copy, &errpos);
	}
	if (!res) {
		err = -EINVAL;
		goto done;
	}
	param = max_param(copy, res);
	rewrite(copy, res, truncated && !cut_literal, &param, o);
	pg_query__scan_result__free_unpacked(res, NULL);
	if (cut_literal) {
		char num[16];
		int k = snprintf(num, sizeof(num), "%s$%u", o->len ? " " : "", ++param);

		put(o, num, (size_t)k);
	}
	if (!truncated) {
		PgQueryFingerprintResult f = pg_query_fingerprint(copy);

		out->parsed = !f.error;
		out->fingerprint = f.fingerprint;
		pg_query_free_fingerprint_result(f);
	}
	truncated |= o->full;
	keep = utf8_fit(o->buf, o->len,
			truncated ? QUERY_TRUNC_PREFIX : QUERY_LABEL_MAX - sizeof(ellipsis));
	if (!truncated && keep < o->len)
		truncated = true; /* longer normalized than the label allows */
	o->len = keep;
	o->buf[keep] = '\0';
	if (!out->parsed)
		out->fingerprint = fnv1a(o->buf, o->len);
	if (truncated)
		put(o, ellipsis + (o->len ? 0 : 1), sizeof(ellipsis) - (o->len ? 1 : 2));
	out->truncated = truncated;
	out->text = strdup(o->buf);
	err = out->text ? 0 : -ENOMEM;
done:
	free(o);
	free(copy);
	return err;
}

static bool ident_char(unsigned char c)
{
	return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') ||
	       ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

int query_shape(const char *s, size_t len, char *out, size_t cap)
{
	size_t i = 0, o = 0;

#define EMIT(c)                                                                                    \
	do {                                                                                       \
		if (o + 1 >= cap)                                                                  \
			return -1;                                                                 \
		out[o++] = (char)(c);                                                              \
	} while (0)
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			return -1;
		if (c == '-' && i + 1 < len && s[i + 1] == '-') { /* comment to the line's end */
			while (i < len && s[i] != '\n')
				i++;
			EMIT(' ');
		} else if (c == '/' && i + 1 < len && s[i + 1] == '*') { /* nested comments */
			int depth = 0;

			do {
				if (s[i] == '/' && i + 1 < len && s[i + 1] == '*')
					depth++, i += 2;
				else if (s[i] == '*' && i + 1 < len && s[i + 1] == '/')
					depth--, i += 2;
				else
					i++;
			} while (depth && i < len);
			EMIT(' ');
		} else if (c == '\'') { /* a literal: its quotes only */
			for (i++; i < len; i++)
				if (s[i] == '\\')
					return -1;
				else if (s[i] == '\'' && !(i + 1 < len && s[i + 1] == '\'' && ++i))
					break;
			i++;
			EMIT('\'');
			EMIT('\'');
		} else if (c == '"') { /* a quoted name: kept */
			EMIT(c);
			for (i++; i < len; i++) {
				EMIT(s[i]);
				if (s[i] == '"' && !(i + 1 < len && s[i + 1] == '"'))
					break;
			}
			i++;
		} else if (c == '$') { /* $n is kept; $tag$ quoting is not followed */
			if (i + 1 >= len || s[i + 1] < '0' || s[i + 1] > '9')
				return -1;
			EMIT(c);
			for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
				EMIT(s[i]);
		} else if ((c >= '0' && c <= '9') ||
			   (c == '.' && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9')) {
			while (i < len && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
					   ((s[i] | 0x20) == 'e' && i + 1 < len &&
					    ((s[i + 1] >= '0' && s[i + 1] <= '9') ||
					     s[i + 1] == '+' || s[i + 1] == '-'))))
				i += (s[i] | 0x20) == 'e' ? 2 : 1;
			EMIT('0');
		} else if (ident_char(c)) { /* a name or keyword, digits and all */
			while (i < len && ident_char((unsigned char)s[i]))
				EMIT(s[i++]);
		} else {
			EMIT(c);
			i++;
		}
	}
	out[o] = '\0';
	return (int)o;
#undef EMIT
}
