/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A statement's text to what may leave the agent: its normalized form
 * (every constant replaced by $n, comments dropped, white space folded)
 * and a 64-bit fingerprint, with libpg_query's scanner and fingerprint.
 *
 * Every constant token is replaced, whatever the statement: libpg_query's
 * own pg_query_normalize() leaves the literals of some utility statements
 * (COPY t FROM '/path') and of comments in place. Text that does not
 * parse (cut at the capture limit, not SQL) is normalized from its tokens
 * all the same; an unterminated literal at its end becomes $n. The raw
 * text is never logged, nor are libpg_query's error messages, which quote
 * it.
 */
#ifndef EBPROF_QUERY_NORMALIZE_H
#define EBPROF_QUERY_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUERY_LABEL_MAX 1024   /* bytes of a normalized statement, its NUL included */
#define QUERY_TRUNC_PREFIX 768 /* bytes of a cut statement that name it */

struct query_norm {
	char *text;	      /* normalized, NUL-terminated, malloc'ed; the caller frees */
	uint64_t fingerprint; /* libpg_query's when it parsed, else of text */
	bool parsed;	      /* libpg_query parsed the whole text */
	bool truncated;	      /* the text was cut: its label ends in "…" */
};

/*
 * Normalize len bytes of text (no NUL needed); truncated: the text went
 * on beyond them. A cut statement is named by the first
 * QUERY_TRUNC_PREFIX bytes of its normalized form, so the statement
 * groups under one fingerprint whatever the lengths of its literals.
 * 0, -EINVAL when not even its tokens can be read, -ENOMEM.
 */
int query_normalize(const char *text, size_t len, bool truncated, struct query_norm *out);

/*
 * A key for caching normalizations that ignores the values of literals:
 * digits of numbers and the contents of quoted strings are dropped,
 * comments folded to a space. Texts with the same key normalize alike.
 * Returns the key's length, written to out (NUL-terminated), or -1 when
 * the text has constructs the key does not follow (backslashes,
 * dollar quoting) or does not fit.
 */
int query_shape(const char *text, size_t len, char *out, size_t cap);

#endif /* EBPROF_QUERY_NORMALIZE_H */
