// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's parameters without a connection (serve/params.c and
 * serve_parse_time): times in and out of the int64_t nanosecond range,
 * labels, Pyroscope names, selections, drop_labels, pushed bodies.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "profile/profile.h"
#include "serve/collector.h"
#include "serve/serve_internal.h"

Test(serve_params, time)
{
	int64_t ns = 0;

	cr_expect_eq(serve_parse_time("2026-01-02T03:04:05", &ns), 0);
	cr_expect_eq(ns, 1767323045LL * 1000000000);
	cr_expect_eq(serve_parse_time("2026-01-02T03:04:05.5+01:00", &ns), 0);
	cr_expect_eq(ns, (1767323045LL - 3600) * 1000000000 + 500000000);
	cr_expect_eq(serve_parse_time("2262-04-11T23:47:16Z", &ns), 0);
	cr_expect_eq(ns, 9223372036000000000LL);
	cr_expect_eq(serve_parse_time("1677-09-21T00:12:44Z", &ns), 0);
	cr_expect_eq(serve_parse_time("2026-01-02T03:04:05+24:00", &ns), -EINVAL);
	cr_expect_eq(serve_parse_time("2026-01-02", &ns), -EINVAL);
}

/* Found by fuzz/fuzz_collector.c: seconds * 1e9 overflowed (undefined
 * behaviour, a wrapped time in practice) for years past 2262. */
Test(serve_params, time_out_of_range)
{
	int64_t ns = 42;

	cr_expect_eq(serve_parse_time("4052-01-02T03:00:00.123456789+02:00", &ns), -EINVAL);
	cr_expect_eq(serve_parse_time("2262-04-11T23:47:17Z", &ns), -EINVAL);
	cr_expect_eq(serve_parse_time("1677-09-21T00:12:43Z", &ns), -EINVAL);
	cr_expect_eq(serve_parse_time("9999-12-31T23:59:59.999999999Z", &ns), -EINVAL);
	cr_expect_eq(ns, 42);
}

Test(serve_params, labels_and_names)
{
	struct catalog_label l[CATALOG_MAX_LABELS];
	char buf[LABELS_TEXT_MAX], name[64];
	const char *keys[CATALOG_MAX_LABELS];

	cr_expect_eq(serve_parse_labels("role=primary,dc=eu%2C1", buf, sizeof(buf), l), 2);
	cr_expect_str_eq(l[1].value, "eu,1");
	cr_expect_eq(serve_parse_labels("=v", buf, sizeof(buf), l), -EINVAL);
	cr_expect_eq(serve_parse_labels("k=%zz", buf, sizeof(buf), l), -EINVAL);
	strcpy(name, "db1{role=primary}");
	cr_expect_eq(serve_parse_name(name, buf, sizeof(buf), l), 1);
	cr_expect_str_eq(name, "db1");
	strcpy(name, "db1{role=primary");
	cr_expect_eq(serve_parse_name(name, buf, sizeof(buf), l), -EINVAL);
	cr_expect(serve_valid_service("db1.primary-2"));
	cr_expect_not(serve_valid_service(".db"));
	cr_expect(serve_valid_type("cpu"));
	cr_expect_not(serve_valid_type("cpux"));
	cr_expect_eq(serve_parse_keys("pid,,backend_type", buf, sizeof(buf), keys), 2);
}

struct args {
	const char *const *kv; /* key, value, ..., NULL */
};

static const char *arg(void *ctx, const char *name)
{
	const struct args *a = ctx;

	for (size_t i = 0; a->kv[i]; i += 2)
		if (!strcmp(a->kv[i], name))
			return a->kv[i + 1];
	return NULL;
}

Test(serve_params, selection)
{
	static const char *const ok[] = { "service", "db1",
					  "type",    "cpu",
					  "from",    "2026-01-02T03:00:00",
					  "to",	     "2026-01-02T04:00:00",
					  "limit",   "10",
					  NULL };
	static const char *const far[] = {
		"service", "db1", "from", "2026-01-02T03:00:00", "to", "4052-01-02T03:00:00", NULL
	};
	struct args a = { ok }, b = { far };
	struct catalog_label l[CATALOG_MAX_LABELS];
	struct catalog_query q;
	char buf[LABELS_TEXT_MAX], why[128];

	cr_expect_eq(
		serve_parse_selection(arg, &a, true, &q, buf, sizeof(buf), l, why, sizeof(why)), 0);
	cr_expect_eq(q.limit, 10);
	cr_expect_eq(q.to_ns - q.from_ns, 3600LL * 1000000000);
	cr_expect_eq(
		serve_parse_selection(arg, &b, false, &q, buf, sizeof(buf), l, why, sizeof(why)),
		-EINVAL);
	cr_expect_str_eq(why, "to: not a time after from");
	cr_expect_eq(
		serve_parse_selection(arg, &b, true, &q, buf, sizeof(buf), l, why, sizeof(why)),
		-EINVAL);
	cr_expect_str_eq(why, "type: missing");
}

Test(serve_params, body)
{
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	int64_t value = 0, idle = 0;
	char err[256];

	cr_expect_eq(
		serve_prepare_body(NULL, 0, &gz, &gzlen, &value, &idle, NULL, err, sizeof(err)),
		400);
	cr_expect_eq(serve_prepare_body((const uint8_t *)"\x1f\x8bxx", 4, &gz, &gzlen, &value,
					&idle, NULL, err, sizeof(err)),
		     400);
	cr_expect_null(gz);
}

/* What the catalog keeps of an off-CPU profile: its total and the part of
 * it in samples labelled state=idle (any wait of an idle backend), for a
 * pushed body as for a profile read from the store. */
Test(serve_params, totals_split_the_idle_time)
{
	static const struct {
		const char *state;
		int64_t ns;
	} w[] = { { "sleeping", 1000 }, { "idle", 3000 }, { "runnable", 200 }, { "idle", 40 } };
	struct profile *p = profile_new();
	uint8_t *pb = NULL, *gz = NULL;
	size_t len = 0, gzlen = 0;
	int64_t value = 0, idle = 0;
	char err[256];

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count") ||
			     profile_add_sample_type(p, "offcpu", "nanoseconds"),
		     0);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		struct pf_label lab[2] = { profile_label_num(p, "pid", (int64_t)i, NULL),
					   profile_label_str(p, "state", w[i].state) };
		int64_t v[2] = { 1, w[i].ns };

		cr_assert_eq(profile_add_sample(p, NULL, 0, v, lab, 2), 0);
	}
	serve_totals(p, &value, &idle);
	cr_expect_eq(value, 4240);
	cr_expect_eq(idle, 3040);
	cr_assert_eq(pprof_encode(p, true, &pb, &len), 0);
	cr_assert_eq(
		serve_prepare_body(pb, len, &gz, &gzlen, &value, &idle, NULL, err, sizeof(err)), 0,
		"%s", err);
	cr_expect_eq(value, 4240);
	cr_expect_eq(idle, 3040);
	free(pb);
	free(gz);
	profile_free(p);
}
