// SPDX-License-Identifier: BSD-2-Clause
/*
 * Merging stored profiles (serve_internal.h): read one profile at a time
 * and merge it straight into the result (pprof_merge_into(): no decoded
 * profile in between), so memory stays bounded by the distinct stacks of
 * the result plus one input. (A reader thread decoding ahead made a merge
 * of 400 profiles slower on 2 CPUs, 0.65 s -> 0.83 s: the profiles it
 * allocated were freed on the merging thread, across malloc arenas.)
 *
 * serve_merge_spans() takes the past days, hours and ten minutes of a
 * range whole from the cache of merged spans (mergecache.h), making each
 * from the spans of the next width (from its profiles at the narrowest)
 * when it is not there. The result is the merge of the same profiles in
 * the same order, so it has the same samples, values, stacks and labels,
 * and entries in the same order; only its strings may come in another
 * order (a span lists its mappings' strings before its functions'), and
 * a merge of more than 64 distinct comments may keep others. That holds
 * because a span's profile is unfiltered (the view's filter sees its
 * samples, as it would theirs: each is the sum of samples with its
 * labels), and because a span whose profiles are not all of one sample
 * type list, or not of the result's, is merged by its parts instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/pprof.h"
#include "mergecache.h"
#include "serve_internal.h"
#include "util/fileio.h"
#include "util/log.h"

#define NS 1000000000LL

/* The spans a merge takes whole, widest first, each made of the next. */
static const int64_t span_widths_s[] = { 86400, 3600, 600 };
#define NWIDTHS (sizeof(span_widths_s) / sizeof(span_widths_s[0]))

struct run {
	struct collector *co;
	struct pprof_reader *r;
	struct serve_merge_stats *st;
};

/* Merge the stored profile of row into dst through f. 0 (merged, or not
 * pprof: logged and left out); -EINVAL: of other sample types than dst,
 * left out; -EAGAIN: not read for a reason that may pass (logged, left
 * out); -ENOMEM. */
static int merge_row(struct run *m, const struct catalog_row *row, struct profile *dst,
		     const struct profile_merge_filter *f)
{
	char path[4352];
	uint8_t *buf = NULL;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", m->co->store, row->path);
	ret = read_file_max(path, COLLECTOR_MAX_BODY, &buf, &len);
	if (!ret) {
		m->st->profiles++;
		ret = pprof_merge_into(m->r, dst, buf, len, f);
		free(buf);
		if (!ret || ret == -EINVAL || ret == -ENOMEM)
			return ret;
	} else if (ret == -ENOMEM) {
		return ret;
	}
	log_warn("serve: profile %s (%s): %s; left out of the merge", row->id, path,
		 strerror(-ret));
	return ret == -EBADMSG || ret == -EFBIG ? 0 : -EAGAIN;
}

/* Every row merged into a new profile, one at a time. */
static int merge_rows(struct run *m, const struct catalog_row *rows, size_t n,
		      const struct profile_merge_filter *f, struct profile **out)
{
	struct profile *acc = profile_new();
	int ret = acc ? pprof_reader_new(&m->r) : -ENOMEM;

	*out = NULL;
	for (size_t i = 0; i < n && !ret; i++)
		if (merge_row(m, &rows[i], acc, f) == -ENOMEM)
			ret = -ENOMEM;
	pprof_reader_free(m->r);
	if (ret) {
		profile_free(acc);
		return ret;
	}
	*out = acc;
	return 0;
}

int serve_merge(struct collector *co, const struct catalog_row *rows, size_t n,
		const struct profile_merge_filter *f, struct profile **out)
{
	struct serve_merge_stats st = { 0 };
	struct run m = { co, NULL, &st };

	return merge_rows(&m, rows, n, f, out);
}

/* Start of the span of width w (ns) that holds t. */
static int64_t span_start(int64_t t, int64_t w)
{
	return t - ((t % w) + w) % w;
}

/* rows[0..n) are newest first: the first of them past the span [b, e). */
static size_t span_end(const struct catalog_row *rows, size_t n, int64_t b, int64_t e)
{
	size_t j = 0;

	while (j < n && rows[j].created_ns >= b && rows[j].created_ns < e)
		j++;
	return j;
}

/* Keep a copy of the span's profile in the cache (best effort). */
static void keep(struct run *m, const struct mergecache_key *k, const uint8_t *gz, size_t len)
{
	uint8_t *copy = malloc(len);

	if (copy) {
		memcpy(copy, gz, len);
		mergecache_put(m->co->cache, k, copy, len);
	}
}

/*
 * The merged profile, gzip'd, of the span of width level starting at
 * start whose profiles are rows[0..n): from the cache, or made now and
 * kept. -EAGAIN when it cannot be one profile: *mixed when its profiles
 * are of more than one sample type list (for good: the cache keeps that
 * mark), else one cannot be read for now; -ENOMEM.
 */
static int span_bytes(struct run *m, size_t level, int64_t start, const struct catalog_row *rows,
		      size_t n, uint8_t **gz, size_t *len, bool *mixed)
{
	int64_t w = span_widths_s[level] * NS;
	struct mergecache_key k;
	struct profile *agg;
	int ret;

	*mixed = false;
	mergecache_key_of(rows, n, start, w, &k);
	ret = mergecache_get(m->co->cache, &k, gz, len);
	if (!ret && !*len)
		*mixed = true;
	if (!ret)
		return *len ? 0 : -EAGAIN;
	if (ret != -ENOENT)
		return ret;
	agg = profile_new();
	if (!agg)
		return -ENOMEM;
	ret = 0;
	if (level + 1 < NWIDTHS) {
		int64_t sw = span_widths_s[level + 1] * NS;

		for (size_t i = 0, j; !ret && i < n; i = j) {
			int64_t b = span_start(rows[i].created_ns, sw);
			uint8_t *sgz;
			size_t slen;

			j = i + span_end(rows + i, n - i, b, b + sw);
			ret = span_bytes(m, level + 1, b, rows + i, j - i, &sgz, &slen, mixed);
			if (!ret) {
				ret = pprof_merge_into(m->r, agg, sgz, slen, NULL);
				free(sgz);
				*mixed = ret == -EINVAL;
			}
		}
	} else {
		for (size_t i = 0; !ret && i < n; i++) {
			ret = merge_row(m, &rows[i], agg, NULL);
			*mixed = ret == -EINVAL;
		}
	}
	if (!ret)
		ret = pprof_encode(agg, true, gz, len);
	profile_free(agg);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		if (*mixed)
			mergecache_put(m->co->cache, &k, NULL, 0);
		return -EAGAIN;
	}
	m->st->made++;
	keep(m, &k, *gz, *len);
	return 0;
}

/* Merge the span of width level starting at start, whose profiles are
 * rows[0..n), into dst through f: whole when it can be one profile of
 * dst's sample types, else span by span of the next width, else profile
 * by profile. 0 or -ENOMEM. */
static int span_merge(struct run *m, size_t level, int64_t start, const struct catalog_row *rows,
		      size_t n, struct profile *dst, const struct profile_merge_filter *f)
{
	uint8_t *gz;
	size_t len;
	bool mixed;
	int ret = span_bytes(m, level, start, rows, n, &gz, &len, &mixed);

	if (!ret) {
		ret = pprof_merge_into(m->r, dst, gz, len, f);
		free(gz);
		if (!ret)
			m->st->spans++;
	}
	if (!ret || ret == -ENOMEM)
		return ret;
	if (level + 1 < NWIDTHS) {
		int64_t sw = span_widths_s[level + 1] * NS;

		for (size_t i = 0, j; i < n; i = j) {
			int64_t b = span_start(rows[i].created_ns, sw);

			j = i + span_end(rows + i, n - i, b, b + sw);
			ret = span_merge(m, level + 1, b, rows + i, j - i, dst, f);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (merge_row(m, &rows[i], dst, f) == -ENOMEM)
			return -ENOMEM;
	return 0;
}

/* The widest span that holds t, lies in [from, to] and ended by settled:
 * its level and *start, or -1. */
static int widest_span(int64_t t, int64_t from, int64_t to, int64_t settled, int64_t *start)
{
	for (size_t level = 0; level < NWIDTHS; level++) {
		int64_t w = span_widths_s[level] * NS, b = span_start(t, w), e;

		if (__builtin_add_overflow(b, w, &e))
			continue;
		if (b >= from && e - 1 <= to && e <= settled) {
			*start = b;
			return (int)level;
		}
	}
	return -1;
}

int serve_merge_spans(struct collector *co, const struct catalog_row *rows, size_t n,
		      int64_t from_ns, int64_t to_ns, const struct profile_merge_filter *f,
		      struct profile **out, struct serve_merge_stats *st)
{
	struct run m = { co, NULL, st };
	struct profile *acc;
	struct timespec now;
	int64_t settled, from = from_ns ? from_ns : INT64_MIN, to = to_ns ? to_ns : INT64_MAX;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!co->cache)
		return merge_rows(&m, rows, n, f, out);
	*out = NULL;
	clock_gettime(CLOCK_REALTIME, &now);
	settled = (int64_t)now.tv_sec * NS + now.tv_nsec - SERVE_SPAN_SETTLED_NS;
	acc = profile_new();
	ret = acc ? pprof_reader_new(&m.r) : -ENOMEM;
	for (size_t i = 0, j; !ret && i < n; i = j) {
		int64_t b;
		int level = widest_span(rows[i].created_ns, from, to, settled, &b);

		if (level < 0) {
			j = i + 1;
			ret = merge_row(&m, &rows[i], acc, f) == -ENOMEM ? -ENOMEM : 0;
			continue;
		}
		j = i + span_end(rows + i, n - i, b, b + span_widths_s[level] * NS);
		ret = span_merge(&m, (size_t)level, b, rows + i, j - i, acc, f);
	}
	pprof_reader_free(m.r);
	if (ret) {
		profile_free(acc);
		return ret;
	}
	*out = acc;
	return 0;
}
