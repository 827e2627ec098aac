// SPDX-License-Identifier: BSD-2-Clause
/*
 * Database load (profile/dbload.h): CPU and off-CPU profiles built
 * through the profile API with the labels the builder gives; what counts
 * as load and in which class (idle sessions, Activity main loops and
 * non-PostgreSQL processes do not), the average of active sessions per
 * bucket with a profile's time spread over the buckets it overlaps, and
 * the statements by load.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "formats/pprof.h"
#include "profile/dbload.h"

#define S 1000000000LL

struct lab {
	const char *k, *v;
};

static struct profile *new_profile(bool cpu, int64_t t, int64_t d)
{
	struct profile *p = profile_new();

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, cpu ? "cpu" : "offcpu", "nanoseconds"), 0);
	p->time_nanos = t;
	p->duration_nanos = d;
	return p;
}

/* A sample of ns with labels (NULL-terminated pairs) on a one-frame stack. */
static void sample(struct profile *p, int64_t ns, const struct lab *labs)
{
	int64_t fn = profile_add_function(p, "f", "f", "f.c", 1);
	struct pf_line line = { (uint64_t)fn, 1, 0 };
	int64_t loc = profile_add_location(p, 0, 0x1000, &line, 1);
	uint64_t ids[1] = { (uint64_t)loc };
	int64_t v[2] = { 1, ns };
	struct pf_label l[8];
	size_t n = 0;

	for (; labs && labs[n].k; n++)
		l[n] = profile_label_str(p, labs[n].k, labs[n].v);
	cr_assert_eq(profile_add_sample(p, ids, 1, v, l, n), 0);
}

#define BACKEND                                                                                    \
	{                                                                                          \
		"backend_type", "client backend"                                                   \
	}

Test(dbload, classes_and_what_is_not_load)
{
	struct profile *off = new_profile(false, 0, 10 * S), *cpu = new_profile(true, 0, 10 * S);
	struct dbload *l;

	/* 2 sessions on a row lock all along, 1 on an LWLock half the time */
	sample(off, 20 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "sleeping" },
			       { "wait_event_type", "Lock" },
			       { "query", "UPDATE t SET v = $1" },
			       { "query_fingerprint", "00000000000000aa" },
			       {} });
	sample(off, 5 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "sleeping" },
			       { "wait_event_type", "LWLock" },
			       { "query", "UPDATE t SET v = $1" },
			       { "query_fingerprint", "00000000000000aa" },
			       {} });
	/* not load: idle sessions, background main loops, other programs */
	sample(off, 300 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "idle" },
			       { "wait_event_type", "Client" },
			       { "wait_event", "ClientRead" },
			       {} });
	sample(off, 7 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "runnable" },
			       { "wait_event_type", "Client" },
			       { "wait_event", "ClientRead" },
			       {} });
	sample(off, 10 * S,
	       (struct lab[]){ { "backend_type", "walwriter" },
			       { "state", "sleeping" },
			       { "wait_event_type", "Activity" },
			       { "wait_event", "WalWriterMain" },
			       {} });
	sample(off, 10 * S, (struct lab[]){ { "state", "sleeping" }, {} });
	/* asleep with no wait event: outside a statement not load, inside Other */
	sample(off, 10 * S,
	       (struct lab[]){ { "backend_type", "postmaster" },
			       { "state", "sleeping" },
			       { "wait_event_type", "uninstrumented" },
			       {} });
	sample(off, 1 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "disk" },
			       { "wait_event_type", "uninstrumented" },
			       { "query", "SELECT $1" },
			       { "query_fingerprint", "00000000000000bb" },
			       {} });
	/* preempted: left to the CPU sampler (not counted) */
	sample(off, 2 * S,
	       (struct lab[]){ BACKEND,
			       { "state", "runnable" },
			       { "wait_event_type", "uninstrumented" },
			       { "query", "SELECT $1" },
			       { "query_fingerprint", "00000000000000bb" },
			       {} });
	/* a class PostgreSQL may add later */
	sample(off, 1 * S,
	       (struct lab[]){
		       BACKEND, { "state", "sleeping" }, { "wait_event_type", "Newclass" }, {} });
	/* 2.8 sessions on the CPU; a non-PostgreSQL process's CPU is not load */
	sample(cpu, 28 * S,
	       (struct lab[]){ BACKEND,
			       { "query", "SELECT $1" },
			       { "query_fingerprint", "00000000000000bb" },
			       {} });
	sample(cpu, 50 * S, NULL);

	cr_assert_eq(dbload_new(0, 10 * S, 1, &l), 0);
	cr_assert_eq(dbload_add_profile(l, off), 0);
	cr_assert_eq(dbload_add_profile(l, cpu), 0);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_LOCK), 2.0, 1e-9);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_LWLOCK), 0.5, 1e-9);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_CPU), 2.8, 1e-9);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_OTHER), 0.2, 1e-9);
	cr_expect_eq(dbload_bucket_ns(l, 0, DBLOAD_CLIENT), 0, "idle sessions are not load");
	cr_expect_eq(dbload_profiles(l), 2);

	struct dbload_stmt *const *st;
	size_t n;

	cr_assert_eq(dbload_statements(l, &st, &n), 0);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(st[0]->key, "00000000000000bb");
	cr_expect_str_eq(st[0]->query, "SELECT $1");
	cr_expect_eq(st[0]->ns[DBLOAD_CPU], 28 * S);
	cr_expect_eq(st[0]->ns[DBLOAD_OTHER], 1 * S);
	cr_expect_eq(st[0]->total_ns, 29 * S);
	cr_expect_str_eq(st[1]->key, "00000000000000aa");
	cr_expect_eq(st[1]->ns[DBLOAD_LOCK], 20 * S);
	cr_expect_eq(st[1]->ns[DBLOAD_LWLOCK], 5 * S);
	cr_expect_str_eq(st[2]->key, "", "no statement");
	cr_expect_null(st[2]->query);
	cr_expect_eq(st[2]->ns[DBLOAD_OTHER], 1 * S);
	dbload_free(l);
	profile_free(off);
	profile_free(cpu);
}

/* A profile's time spreads over the buckets it overlaps; what falls
 * outside the range is not counted; a profile of another type is not
 * read. */
Test(dbload, time_spread_over_buckets)
{
	struct profile *p = new_profile(true, 5 * S, 10 * S), *mem = profile_new();
	struct dbload *l;

	sample(p, 10 * S, (struct lab[]){ BACKEND, {} });
	/* buckets of 4 s from 0: [0,4) [4,8) [8,12) [12,16) */
	cr_assert_eq(dbload_new(0, 4 * S, 3, &l), 0);
	cr_assert_eq(dbload_add_profile(l, p), 0);
	cr_expect_eq(dbload_bucket_ns(l, 0, DBLOAD_CPU), 0);
	cr_expect_eq(dbload_bucket_ns(l, 1, DBLOAD_CPU), 3 * S);
	cr_expect_eq(dbload_bucket_ns(l, 2, DBLOAD_CPU), 4 * S);
	cr_expect_eq(dbload_bucket_ns(l, 3, DBLOAD_CPU), 0, "out of range");
	cr_expect_eq(dbload_class_ns(l, DBLOAD_CPU), 7 * S, "the last 3 s fall after the range");
	cr_assert_eq(profile_add_sample_type(mem, "space", "bytes"), 0);
	cr_assert_eq(dbload_add_profile(l, mem), 0);
	cr_expect_eq(dbload_profiles(l), 1);
	dbload_reset(l, 100 * S);
	cr_expect_eq(dbload_class_ns(l, DBLOAD_CPU), 0);
	cr_expect_eq(dbload_from_ns(l), 100 * S);
	dbload_free(l);
	profile_free(p);
	profile_free(mem);
}

/* The same load from a profile read back from pprof as it stands (the
 * collector's way: no interning index). */
Test(dbload, from_a_profile_read_as_it_stands)
{
	struct profile *p = new_profile(false, 0, 2 * S);
	const struct profile *view;
	struct pprof_reader *r;
	struct dbload *l;
	uint8_t *buf;
	size_t len;

	sample(p, 2 * S,
	       (struct lab[]){ BACKEND, { "state", "sleeping" }, { "wait_event_type", "IO" }, {} });
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(pprof_reader_new(&r), 0);
	cr_assert_eq(pprof_view(r, buf, len, &view), 0);
	cr_assert_eq(dbload_new(0, 1 * S, 2, &l), 0);
	cr_assert_eq(dbload_add_profile(l, view), 0);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_IO), 1.0, 1e-9);
	cr_expect_float_eq(dbload_bucket_aas(l, 1, DBLOAD_IO), 1.0, 1e-9);
	cr_expect_eq(pprof_view(r, (const uint8_t *)"junk", 4, &view), -EBADMSG);
	dbload_free(l);
	pprof_reader_free(r);
	free(buf);
	profile_free(p);
}

/* A per-process profile (the agent's) names its backend type in its
 * comments, not in every sample: all its samples are PostgreSQL's. */
Test(dbload, per_process_profile)
{
	struct profile *p = new_profile(true, 0, 1 * S), *q = new_profile(true, 0, 1 * S);
	struct dbload *l;

	sample(p, 1 * S, NULL);
	cr_assert_eq(profile_add_comment(p, "pid=42"), 0);
	cr_assert_eq(profile_add_comment(p, "backend_type=client backend"), 0);
	sample(q, 1 * S, NULL);
	cr_assert_eq(profile_add_comment(q, "pid=43"), 0);
	cr_assert_eq(dbload_new(0, 1 * S, 1, &l), 0);
	cr_assert_eq(dbload_add_profile(l, p), 0);
	cr_assert_eq(dbload_add_profile(l, q), 0);
	cr_expect_float_eq(dbload_bucket_aas(l, 0, DBLOAD_CPU), 1.0, 1e-9, "not PostgreSQL: q");
	dbload_free(l);
	profile_free(p);
	profile_free(q);
}

Test(dbload, names_and_bad_input)
{
	struct dbload *l;

	for (int c = 0; c < DBLOAD_NCLASSES; c++)
		cr_expect_eq(dbload_class_parse(dbload_class_name(c)), c);
	cr_expect_eq(dbload_class_parse("Activity"), -EINVAL, "never load");
	cr_expect_eq(dbload_class_parse("lock"), -EINVAL);
	cr_expect_eq(dbload_class_parse(NULL), -EINVAL);
	cr_expect_str_eq(dbload_class_name(DBLOAD_NCLASSES), "");
	cr_expect_eq(dbload_new(0, 0, 1, &l), -EINVAL);
	cr_expect_eq(dbload_new(0, S, 0, &l), -EINVAL);
	cr_expect_null(l);
}
