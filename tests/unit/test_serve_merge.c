// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's merges with merged spans (serve/merge.c): 450 stored
 * profiles over 52 hours of 2026-01, with processes whose postgres is
 * mapped at three addresses, numeric and string labels, idle samples,
 * two profiles at the same instant, one of other sample types and one
 * that is not pprof, merged for ranges aligned and not, with and without
 * filters, both ways: every profile (serve_merge) and through the cache
 * (serve_merge_spans), cold and warm. The results must have the same
 * samples, values, stacks and labels, entries in the same order, header
 * and comments; only their string tables' order may differ. Then the
 * profiles change under a warm cache: one pushed late into a past hour,
 * one removed, one whose file went missing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "profile/merge.h"
#include "serve/mergecache.h"
#include "serve/serve_internal.h"
#include "testlib.h"
#include "util/fileio.h"

#define NS 1000000000LL
#define T0 1767225600LL /* 2026-01-01T00:00:00Z */
#define NPROF 450
#define MAXROWS (NPROF + 8)
#define MIXED 200   /* of other sample types */
#define CORRUPT 300 /* not pprof */

static const char *const fns[] = { "main",	  "PostgresMain", "exec_simple_query",
				   "ExecScan",	  "heap_getnext", "LWLockAcquire",
				   "hash_search", "palloc",	  "memcpy",
				   "do_syscall",  "schedule",	  "finish_task_switch" };
static const char *const queries[] = { "SELECT $1", "UPDATE t SET x = $1", "COMMIT" };

static char *dir;
static struct catalog_row rows[MAXROWS];
static size_t nrows;
static struct collector plain, cached;

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Profile k: a process of a few stacks of the pool, or another kind. */
static uint8_t *make(int k, size_t *len)
{
	struct profile *p = profile_new();
	uint64_t pg, libc, kern, locs[12][2];
	uint8_t *buf = NULL;
	int64_t pid = 100 + k % 7;

	cr_assert_not_null(p);
	if (k == MIXED) {
		cr_assert_eq(profile_add_sample_type(p, "alloc", "bytes"), 0);
	} else {
		cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
		cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
		cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 52631578), 0);
	}
	{
		struct pf_mapping m = { .start = 0x400000 + (uint64_t)(k % 3) * 0x100000,
					.limit = 0x900000 + (uint64_t)(k % 3) * 0x100000,
					.offset = 0 };

		m.filename = profile_str(p, "/usr/lib/postgresql/15/bin/postgres");
		m.build_id = profile_str(p, "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334");
		pg = (uint64_t)profile_add_mapping(p, &m);
	}
	libc = tl_mapping(p, 0x7f0000000000 + (uint64_t)k * 0x1000,
			  0x7f0000200000 + (uint64_t)k * 0x1000,
			  "/usr/lib/x86_64-linux-gnu/libc.so.6");
	kern = tl_mapping(p, 0, 0, "[kernel.kallsyms]");
	for (int f = 0; f < 12; f++) {
		uint64_t m = f < 8 ? pg : f == 8 ? libc : kern;
		uint64_t base = m == pg	    ? 0x401000 + (uint64_t)(k % 3) * 0x100000
				: m == libc ? 0x7f0000001000 + (uint64_t)k * 0x1000
					    : 0xffffffff81000000;

		locs[f][0] = tl_loc(p, m, base + (uint64_t)f * 0x40, fns[f]);
	}
	for (int s = 0, n = 3 + (int)(next() % 4); s < n; s++) {
		uint64_t stack[6];
		int depth = 2 + (int)(next() % 5);
		int64_t c = 1 + (int64_t)(next() % 9), v[2] = { c, c * 52631578 };
		struct pf_label lab[4];
		size_t nl = 0;

		for (int d = 0; d < depth; d++)
			stack[d] = locs[(depth - 1 - d + (int)(next() % 3)) % 12][0];
		lab[nl++] = profile_label_num(p, "pid", pid, NULL);
		lab[nl++] = profile_label_str(p, "thread_name", k % 5 ? "postgres" : "autovacuum");
		lab[nl++] = profile_label_str(p, "query", queries[next() % 3]);
		if (next() % 4 == 0)
			lab[nl++] = profile_label_str(p, "state", "idle");
		cr_assert_eq(profile_add_sample(p, stack, (size_t)depth, v, lab, nl), 0);
	}
	cr_assert_eq(profile_add_comment(p, k % 2 ? "ebprof 0.1.0" : "pid reused"), 0);
	p->time_nanos = (T0 + k * 420) * NS;
	p->duration_nanos = 60 * NS;
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct catalog_row *x = a, *y = b;

	if (x->created_ns != y->created_ns)
		return x->created_ns > y->created_ns ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* A stored profile of k at t (s since T0): its file and its row. */
static void store(int k, int64_t t)
{
	struct catalog_row *r = &rows[nrows++];
	char path[512];
	uint8_t *buf;
	size_t len;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%08x%024x", (unsigned)k * 2654435761u, k);
	r->created_ns = (T0 + t) * NS;
	cr_assert(asprintf(&r->path, "profiles/%s.pb.gz", r->id) > 0);
	snprintf(path, sizeof(path), "%s/%s", dir, r->path);
	if (k == CORRUPT) {
		cr_assert_eq(write_file_atomic(path, (const uint8_t *)"not a profile", 13), 0);
		return;
	}
	buf = make(k, &len);
	cr_assert_eq(write_file_atomic(path, buf, len), 0);
	free(buf);
}

static void setup(void)
{
	char sub[512];

	dir = tl_tmpdir("serve-merge");
	snprintf(sub, sizeof(sub), "%s/profiles", dir);
	cr_assert_eq(mkdir_p(sub, 0755), 0);
	for (int k = 0; k < NPROF; k++) /* every 7 minutes; 11 and 12 together */
		store(k, k == 12 ? 11 * 420 : k * 420);
	qsort(rows, nrows, sizeof(rows[0]), cmp_rows);
	plain.store = dir;
	cached.store = dir;
	cr_assert_eq(mergecache_new(64 << 20, &cached.cache), 0);
}

static void teardown(void)
{
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].path);
	mergecache_free(cached.cache);
	tl_rm_tree(dir);
	free(dir);
}

TestSuite(serve_merge, .init = setup, .fini = teardown, .timeout = 120);

/* Everything of p but the order of its strings, as text (malloc'd). */
static char *canon(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
#define STR(i) profile_string(p, i)
	for (size_t i = 0; i < p->nsample_types; i++)
		fprintf(f, "type %s/%s\n", STR(p->sample_types[i].type),
			STR(p->sample_types[i].unit));
	fprintf(f, "period %s/%s %lld time %lld %lld default %s drop %s keep %s\n",
		STR(p->period_type.type), STR(p->period_type.unit), (long long)p->period,
		(long long)p->time_nanos, (long long)p->duration_nanos, STR(p->default_sample_type),
		STR(p->drop_frames), STR(p->keep_frames));
	for (size_t i = 0; i < p->ncomments; i++)
		fprintf(f, "comment %s\n", STR(p->comments[i]));
	for (size_t i = 0; i < p->nmappings; i++) {
		const struct pf_mapping *m = &p->mappings[i];

		fprintf(f, "mapping %llx %llx %llx %s %s %d%d%d%d\n", (unsigned long long)m->start,
			(unsigned long long)m->limit, (unsigned long long)m->offset,
			STR(m->filename), STR(m->build_id), m->has_functions, m->has_filenames,
			m->has_line_numbers, m->has_inline_frames);
	}
	for (size_t i = 0; i < p->nfunctions; i++)
		fprintf(f, "function %s %s %s %lld\n", STR(p->functions[i].name),
			STR(p->functions[i].system_name), STR(p->functions[i].filename),
			(long long)p->functions[i].start_line);
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		fprintf(f, "location %llu %llx %d:", (unsigned long long)l->mapping_id,
			(unsigned long long)l->address, l->is_folded);
		for (size_t j = 0; j < l->nlines; j++)
			fprintf(f, " %llu/%lld/%lld", (unsigned long long)l->lines[j].function_id,
				(long long)l->lines[j].line, (long long)l->lines[j].column);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		fprintf(f, "sample");
		for (size_t j = 0; j < s->nlocations; j++)
			fprintf(f, " %llu", (unsigned long long)s->location_ids[j]);
		for (size_t j = 0; j < p->nsample_types; j++)
			fprintf(f, " =%lld", (long long)s->values[j]);
		for (size_t j = 0; j < s->nlabels; j++)
			fprintf(f, " %s:%s:%lld:%s", STR(s->labels[j].key), STR(s->labels[j].str),
				(long long)s->labels[j].num, STR(s->labels[j].num_unit));
		fputc('\n', f);
	}
#undef STR
	fclose(f);
	return buf;
}

static void expect_same(const struct profile *a, const struct profile *b, const char *what)
{
	char *x = canon(a), *y = canon(b);
	size_t i = 0;

	while (x[i] && x[i] == y[i])
		i++;
	cr_expect(x[i] == y[i],
		  "%s: the merges differ at byte %zu: ...%.80s... against ...%.80s...", what, i,
		  x + (i > 40 ? i - 40 : 0), y + (i > 40 ? i - 40 : 0));
	free(x);
	free(y);
}

/* The rows in [from, to] (s since T0; < 0: open), newest first. */
static size_t select_rows(int64_t from, int64_t to, struct catalog_row *out)
{
	size_t n = 0;

	for (size_t i = 0; i < nrows; i++)
		if ((from < 0 || rows[i].created_ns >= (T0 + from) * NS) &&
		    (to < 0 || rows[i].created_ns <= (T0 + to) * NS))
			out[n++] = rows[i];
	return n;
}

static bool keep_pid_101(const struct profile *src, const struct pf_sample *s, void *ctx)
{
	char buf[32];
	const char *v = profile_sample_label(src, s, "pid", buf, sizeof(buf));

	(void)ctx;
	return v && !strcmp(v, "101");
}

static bool not_idle(const struct profile *src, const struct pf_sample *s, void *ctx)
{
	char buf[32];
	const char *v = profile_sample_label(src, s, "state", buf, sizeof(buf));

	(void)ctx;
	return !v || strcmp(v, "idle");
}

/* Merge [from, to] both ways through f, the spans cold then warm; the
 * stats of the warm one in *warm. */
static void both_ways(int64_t from, int64_t to, const struct profile_merge_filter *f,
		      struct serve_merge_stats *warm)
{
	static struct catalog_row sel[MAXROWS];
	size_t n = select_rows(from, to, sel);
	int64_t fns = from < 0 ? 0 : (T0 + from) * NS, tns = to < 0 ? 0 : (T0 + to) * NS;
	struct profile *flat, *spans;
	struct serve_merge_stats st;
	char what[128];

	cr_assert_eq(serve_merge(&plain, sel, n, f, &flat), 0);
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(serve_merge_spans(&cached, sel, n, fns, tns, f, &spans, &st), 0);
		snprintf(what, sizeof(what), "[%lld, %lld] %s, pass %d", (long long)from,
			 (long long)to, f ? "filtered" : "whole", pass);
		expect_same(flat, spans, what);
		profile_free(spans);
	}
	*warm = st;
	profile_free(flat);
}

Test(serve_merge, spans_answer_as_every_profile)
{
	static const char *const pid[] = { "pid" };
	static const struct profile_merge_filter by_pid = { keep_pid_101, NULL, NULL, 0 },
						 idle = { not_idle, NULL, NULL, 0 },
						 drop = { NULL, NULL, pid, 1 };
	static const int64_t ranges[][2] = {
		{ -1, -1 },		 /* everything, open ends */
		{ 0, 86400 },		 /* the first day, as the UI asks: to inclusive */
		{ 3600, 7200 },		 /* an hour */
		{ 1033, 106867 },	 /* 00:17:13 to 29:41:07 */
		{ 86400 - 600, 90000 },	 /* across midnight */
		{ 600 * 140, 600 * 141 } /* the ten minutes of the other sample types */
	};
	struct serve_merge_stats st;

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		both_ways(ranges[i][0], ranges[i][1], NULL, &st);
		cr_expect_eq(st.made, 0, "range %zu: made again when warm", i);
		both_ways(ranges[i][0], ranges[i][1], &by_pid, &st);
		both_ways(ranges[i][0], ranges[i][1], &idle, &st);
		both_ways(ranges[i][0], ranges[i][1], &drop, &st);
	}
	/* the second day warm: one span of a day (with the profile that is
	 * not pprof left out of it), nothing else to read */
	both_ways(86400, 172800, NULL, &st);
	cr_expect_eq(st.spans, 1);
	cr_expect_eq(st.profiles, 0);
	/* an hour's spans of the ten minutes with other sample types is
	 * merged by its parts, its neighbours whole */
	both_ways(600 * 138, 600 * 144, NULL, &st);
	cr_expect_eq(st.spans, 5, "the five other ten minutes whole, not %zu (%zu read)", st.spans,
		     st.profiles);
	cr_expect_gt(st.profiles, 0);
}

/* Under a warm cache: a profile pushed late into a past hour, then one
 * removed by retention, then a file gone missing. */
Test(serve_merge, changed_spans_are_never_stale)
{
	struct serve_merge_stats st;
	int64_t late = 3600 + 1234;

	both_ways(-1, -1, NULL, &st);
	cr_expect_eq(st.made, 0);
	store(NPROF, late); /* late */
	qsort(rows, nrows, sizeof(rows[0]), cmp_rows);
	both_ways(-1, -1, NULL, &st);
	cr_expect_eq(st.made, 0, "made on the cold pass, before");
	both_ways(3600, 7199, NULL, &st);
	for (size_t i = 0; i < nrows; i++) /* retention: the oldest row */
		if (rows[i].created_ns == T0 * NS) {
			free(rows[i].path);
			memmove(&rows[i], &rows[i + 1], (nrows - i - 1) * sizeof(rows[0]));
			nrows--;
			break;
		}
	cr_assert_eq(nrows, NPROF);
	both_ways(-1, -1, NULL, &st);
	both_ways(86400, 172800, NULL, &st);
	cr_expect_eq(st.spans, 1);
}

Test(serve_merge, a_missing_file_is_merged_around_not_kept)
{
	struct serve_merge_stats st;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, rows[nrows / 2].path);
	cr_assert_eq(unlink(path), 0);
	both_ways(-1, -1, NULL, &st);
	cr_expect_gt(st.profiles, 0, "the spans holding it are read again every time");
	cr_expect_lt(st.profiles, 20, "but only those");
}

Test(serve_merge, a_cache_too_small_keeps_nothing)
{
	struct collector tiny = { .store = dir };
	static struct catalog_row sel[MAXROWS];
	size_t n = select_rows(-1, -1, sel);
	struct profile *flat, *spans;
	struct serve_merge_stats st;

	cr_assert_eq(mergecache_new(1024, &tiny.cache), 0);
	cr_assert_eq(serve_merge(&plain, sel, n, NULL, &flat), 0);
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(serve_merge_spans(&tiny, sel, n, 0, 0, NULL, &spans, &st), 0);
		expect_same(flat, spans, "tiny cache");
		cr_expect_gt(st.made, 0);
		profile_free(spans);
	}
	profile_free(flat);
	mergecache_free(tiny.cache);
}
