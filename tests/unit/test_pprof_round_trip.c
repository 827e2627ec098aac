// SPDX-License-Identifier: BSD-2-Clause
/* pprof encode / decode round trips: the fixture through gzip and raw
 * protobuf, the wire contract on the message itself, an empty profile,
 * concatenated gzip members, 100 000 locations. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "formats/pprof.h"
#include "pprof_fixture.h"

/* Wire-level contract, checked on the protobuf-c message itself. */
static void check_wire(const uint8_t *raw, size_t len)
{
	PbProfile *m = perftools__profiles__profile__unpack(NULL, len, raw);
	size_t i, j;

	cr_assert_not_null(m);
	cr_assert_geq(m->n_string_table, 1);
	cr_expect_str_eq(m->string_table[0], "");
	for (i = 0; i < m->n_mapping; i++)
		cr_expect_eq(m->mapping[i]->id, i + 1);
	for (i = 0; i < m->n_location; i++) {
		cr_expect_eq(m->location[i]->id, i + 1);
		for (j = 0; j < m->location[i]->n_line; j++)
			cr_expect_leq(m->location[i]->line[j]->function_id, m->n_function);
	}
	for (i = 0; i < m->n_function; i++)
		cr_expect_eq(m->function[i]->id, i + 1);
	for (i = 0; i < m->n_sample; i++)
		cr_expect_eq(m->sample[i]->n_value, m->n_sample_type);
	cr_expect_not_null(m->period_type);
	cr_expect_eq(m->n_comment, 2);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static uint8_t *gunzip_all(const uint8_t *in, size_t len, size_t *outlen)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream zs = { 0 };

	cr_assert_not_null(out);
	cr_assert_eq(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	cr_assert_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*outlen = zs.total_out;
	inflateEnd(&zs);
	return out;
}

Test(pprof, fixture_is_sane)
{
	struct profile *p = make_profile();

	check_fixture(p);
	profile_free(p);
}

Test(pprof, round_trip_gzip)
{
	struct profile *p = make_profile(), *q = NULL;
	uint8_t *gz, *raw, *inflated;
	size_t gzlen, rawlen, inflen;

	cr_assert_eq(pprof_encode(p, true, &gz, &gzlen), 0);
	cr_assert_eq(pprof_encode(p, false, &raw, &rawlen), 0);
	cr_assert_gt(gzlen, 18);
	cr_expect(gz[0] == 0x1f && gz[1] == 0x8b, "gzip magic");
	inflated = gunzip_all(gz, gzlen, &inflen);
	cr_assert_eq(inflen, rawlen);
	cr_expect_eq(memcmp(inflated, raw, rawlen), 0, "gzip wraps the raw encoding");
	check_wire(raw, rawlen);

	cr_assert_eq(pprof_decode(gz, gzlen, &q), 0);
	cr_assert_not_null(q);
	check_fixture(q);
	profile_free(q);
	free(inflated);
	free(raw);
	free(gz);
	profile_free(p);
}

Test(pprof, round_trip_raw_is_stable)
{
	struct profile *p = make_profile(), *q = NULL;
	uint8_t *a, *b;
	size_t alen, blen;

	cr_assert_eq(pprof_encode(p, false, &a, &alen), 0);
	cr_expect(alen < 2 || a[0] != 0x1f || a[1] != 0x8b);
	cr_assert_eq(pprof_decode(a, alen, &q), 0);
	check_fixture(q);
	/* decode(encode(p)) encodes to the same bytes. */
	cr_assert_eq(pprof_encode(q, false, &b, &blen), 0);
	cr_assert_eq(alen, blen);
	cr_expect_eq(memcmp(a, b, alen), 0);
	free(a);
	free(b);
	profile_free(q);
	profile_free(p);
}

Test(pprof, empty_profile_round_trip)
{
	struct profile *p = profile_new(), *q = NULL;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(pprof_decode(buf, len, &q), 0);
	cr_expect_eq(q->nstrings, 1);
	cr_expect_eq(q->nsamples, 0);
	free(buf);
	profile_free(q);
	profile_free(p);
}

Test(pprof, concatenated_gzip_members)
{
	struct profile *p = make_profile(), *q;
	uint8_t *raw, *out, *gz1, *gz2;
	size_t rawlen, half, l1 = 0, l2 = 0;
	z_stream zs;

	cr_assert_eq(pprof_encode(p, false, &raw, &rawlen), 0);
	half = rawlen / 2;
	gz1 = malloc(2 * rawlen + 64);
	gz2 = malloc(2 * rawlen + 64);
	for (int part = 0; part < 2; part++) {
		memset(&zs, 0, sizeof(zs));
		cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
			     Z_OK);
		zs.next_in = raw + (part ? half : 0);
		zs.avail_in = (uInt)(part ? rawlen - half : half);
		zs.next_out = part ? gz2 : gz1;
		zs.avail_out = (uInt)(2 * rawlen + 64);
		cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
		*(part ? &l2 : &l1) = zs.total_out;
		deflateEnd(&zs);
	}
	out = malloc(l1 + l2);
	memcpy(out, gz1, l1);
	memcpy(out + l1, gz2, l2);
	cr_assert_eq(pprof_decode(out, l1 + l2, &q), 0);
	check_fixture(q);
	profile_free(q);
	free(out);
	free(gz1);
	free(gz2);
	free(raw);
	profile_free(p);
}

Test(pprof, large_profile_round_trip, .timeout = 60)
{
	struct profile *p = profile_new(), *q;
	struct pf_mapping m = { .start = 0x400000, .limit = 0x4000000 };
	const size_t n = 100000;
	uint8_t *buf;
	size_t len, i;
	int64_t v[2] = { 1, 10 };

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	m.filename = profile_str(p, "/bin/big");
	m.has_functions = true;
	cr_assert_eq(profile_add_mapping(p, &m), 1);
	for (i = 0; i < n; i++) {
		char name[32];
		struct pf_line ln;
		struct pf_label lab[3];
		uint64_t stack[3];
		int64_t f;

		snprintf(name, sizeof(name), "func_%zu", i);
		f = profile_add_function(p, name, NULL, "big.c", 0);
		ln = (struct pf_line){ .function_id = (uint64_t)f, .line = 1 };
		stack[0] = (uint64_t)profile_add_location(p, 1, 0x400000 + i, &ln, 1);
		stack[1] = i ? stack[0] - 1 : stack[0];
		stack[2] = 1;
		lab[0] = profile_label_num(p, "pid", (int64_t)(i % 100), NULL);
		lab[1] = profile_label_num(p, "tid", (int64_t)(i % 1000), NULL);
		lab[2] = profile_label_str(p, "thread_name", "t");
		cr_assert_eq(profile_add_sample(p, stack, 3, v, lab, 3), 0);
	}
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(pprof_decode(buf, len, &q), 0);
	cr_expect_eq(q->nlocations, n);
	cr_expect_eq(q->nfunctions, n);
	cr_expect_eq(q->nsamples, n);
	cr_expect_eq(profile_total(q, 1), (int64_t)n * 10);
	free(buf);
	profile_free(q);
	profile_free(p);
}
