// SPDX-License-Identifier: BSD-2-Clause
/*
 * File and directory names of the profile store (sinks/store/store_name.c):
 * components sanitized, profile names formatted and parsed back (round
 * trips over times, pids, backend types and suffixes), everything that is
 * not a profile name rejected, dates, days, temp files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sinks/store/store_internal.h"

#define T0 1700000000LL /* 2023-11-14T22:13:20Z */
#define DAY0 (T0 - T0 % 86400)

Test(store_name, sanitize)
{
	char out[STORE_COMPONENT_MAX + 1], in[200];

	store_sanitize("postgres", out);
	cr_expect_str_eq(out, "postgres");
	store_sanitize("a-b c/d", out);
	cr_expect_str_eq(out, "a_b_c_d");
	store_sanitize("Az09._", out);
	cr_expect_str_eq(out, "Az09._");
	store_sanitize(".hidden", out);
	cr_expect_str_eq(out, "_hidden");
	store_sanitize("..", out);
	cr_expect_str_eq(out, "_.");
	store_sanitize("", out);
	cr_expect_str_eq(out, "_");
	store_sanitize(NULL, out);
	cr_expect_str_eq(out, "_");
	store_sanitize("tab\there\n", out);
	cr_expect_str_eq(out, "tab_here_");
	/* Cut at STORE_COMPONENT_MAX bytes. */
	memset(in, 'x', sizeof(in) - 1);
	in[sizeof(in) - 1] = '\0';
	store_sanitize(in, out);
	cr_expect_eq(strlen(out), STORE_COMPONENT_MAX);
}

struct case_ {
	int64_t start_s;
	const char *comm;
	uint32_t pid;
	const char *bt;
	unsigned suffix;
	const char *name;		 /* what store_name_format gives */
	const char *comm_back, *bt_back; /* what store_name_parse reads back */
};

static const struct case_ cases[] = {
	{ T0, "postgres", 4242, "client backend", 0, "221320-postgres-4242-client_backend.pb.gz",
	  "postgres", "client_backend" },
	{ T0, "postgres", 4242, "client backend", 7, "221320-postgres-4242-client_backend-7.pb.gz",
	  "postgres", "client_backend" },
	{ T0, "pg-x", 7, NULL, 2, "221320-pg_x-7-2.pb.gz", "pg_x", "" },
	{ T0, "postgres", 1, "", 0, "221320-postgres-1.pb.gz", "postgres", "" },
	{ DAY0, "a", 4294967295u, "walwriter", 0, "000000-a-4294967295-walwriter.pb.gz", "a",
	  "walwriter" },
	{ DAY0 + 86399, ".x", 0, "autovacuum worker", 4294967295u,
	  "235959-_x-0-autovacuum_worker-4294967295.pb.gz", "_x", "autovacuum_worker" },
	{ DAY0 + 3600 + 60 + 1, "", 5, NULL, 0, "010101-_-5.pb.gz", "_", "" },
	/* Before 1970 too: the day is the one before. */
	{ -1, "c", 9, NULL, 0, "235959-c-9.pb.gz", "c", "" },
};

Test(store_name, format_and_parse_round_trip)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		char buf[STORE_NAME_MAX];
		struct store_name nm;

		cr_assert_eq(store_name_format(buf, sizeof(buf), c->start_s, c->comm, c->pid, c->bt,
					       PTYPE_CPU, c->suffix),
			     0, "case %zu", i);
		cr_expect_str_eq(buf, c->name, "case %zu: %s", i, buf);
		memset(&nm, 0x5a, sizeof(nm));
		cr_assert_eq(store_name_parse(buf, store_day_of(c->start_s), &nm), 0, "%s", buf);
		cr_expect_eq(nm.start_s, c->start_s, "%s", buf);
		cr_expect_str_eq(nm.comm, c->comm_back, "%s", buf);
		cr_expect_eq(nm.pid, c->pid, "%s", buf);
		cr_expect_str_eq(nm.backend_type, c->bt_back, "%s", buf);
		cr_expect_eq(nm.suffix, c->suffix, "%s", buf);
	}
}

/* The longest components still make a name that fits and reads back. */
Test(store_name, longest_components)
{
	char comm[200], bt[200], buf[STORE_NAME_MAX];
	struct store_name nm;

	memset(comm, 'c', sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = '\0';
	memset(bt, 'b', sizeof(bt) - 1);
	bt[sizeof(bt) - 1] = '\0';
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, comm, 4294967295u, bt, PTYPE_CPU,
				       4294967295u),
		     0);
	cr_assert_lt(strlen(buf), STORE_NAME_MAX);
	cr_assert_eq(store_name_parse(buf, DAY0, &nm), 0, "%s", buf);
	cr_expect_eq(strlen(nm.comm), STORE_COMPONENT_MAX);
	cr_expect_eq(strlen(nm.backend_type), STORE_COMPONENT_MAX);
	cr_expect_eq(nm.suffix, 4294967295u);
	/* A buffer too small is refused, not cut. */
	cr_expect_eq(store_name_format(buf, 20, T0, "postgres", 4242, "checkpointer", PTYPE_CPU, 0),
		     -ENAMETOOLONG);
	cr_expect_eq(store_name_format(buf, 26, T0, "postgres", 4242, NULL, PTYPE_CPU, 0),
		     -ENAMETOOLONG);
	cr_expect_eq(store_name_format(buf, 27, T0, "postgres", 4242, NULL, PTYPE_CPU, 0), 0);
	cr_expect_str_eq(buf, "221320-postgres-4242.pb.gz");
}

/* Documented ambiguity: a backend type made only of digits reads as a
 * collision suffix (no PostgreSQL backend type is one). */
Test(store_name, numeric_backend_type_reads_as_suffix)
{
	char buf[STORE_NAME_MAX];
	struct store_name nm;

	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "p", 3, "12", PTYPE_CPU, 0), 0);
	cr_assert_str_eq(buf, "221320-p-3-12.pb.gz");
	cr_assert_eq(store_name_parse(buf, DAY0, &nm), 0);
	cr_expect_eq(nm.suffix, 12);
	cr_expect_str_eq(nm.backend_type, "");
	/* With a suffix as well, the fourth field is the backend type. */
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "p", 3, "12", PTYPE_CPU, 4), 0);
	cr_assert_eq(store_name_parse(buf, DAY0, &nm), 0);
	cr_expect_str_eq(nm.backend_type, "12");
	cr_expect_eq(nm.suffix, 4);
}

Test(store_name, parse_rejects_what_is_not_a_profile_name)
{
	static const char *const bad[] = {
		"",
		".pb.gz",
		"index.jsonl",
		"221320-postgres-7.pb",
		"221320-postgres-7.pb.gz.tmp",
		"221320-postgres-7.PB.GZ",
		"garbage.pb.gz",
		"221320.pb.gz",
		"221320-postgres.pb.gz",    /* no pid */
		"22132-postgres-7.pb.gz",   /* 5 digits */
		"2213200-postgres-7.pb.gz", /* 7 digits */
		"22a320-postgres-7.pb.gz",
		"240000-postgres-7.pb.gz",  /* hour 24 */
		"226000-postgres-7.pb.gz",  /* minute 60 */
		"221360-postgres-7.pb.gz",  /* second 60 */
		"221320--7.pb.gz",	    /* empty comm */
		"221320-postgres-.pb.gz",   /* empty pid */
		"221320-postgres-7-.pb.gz", /* empty fourth field */
		"221320-postgres-7-client_backend-.pb.gz",
		"-221320-postgres-7.pb.gz",
		"221320-postgres-x.pb.gz", /* pid not a number */
		"221320-postgres-+7.pb.gz",
		"221320-postgres-4294967296.pb.gz",	 /* pid > UINT32_MAX */
		"221320-postgres-12345678901.pb.gz",	 /* 11 digits */
		"221320-postgres-7-bt-4294967296.pb.gz", /* suffix > UINT32_MAX */
		"221320-postgres-7-4294967296.pb.gz",
		"221320-postgres-7-bt-x.pb.gz",	  /* suffix not a number */
		"221320-postgres-7-bt-1-2.pb.gz", /* six fields */
		"221320-pg/x-7.pb.gz",
		"221320-pg x-7.pb.gz",
		"221320-p\xc3\xa4-7.pb.gz",
		"221320-postgres-7 .pb.gz",
	};
	struct store_name nm;
	char longcomm[STORE_NAME_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(store_name_parse(bad[i], DAY0, &nm), -EINVAL, "'%s' was accepted",
			     bad[i]);
	/* A component longer than STORE_COMPONENT_MAX. */
	snprintf(longcomm, sizeof(longcomm), "221320-%065d-7.pb.gz", 0);
	cr_expect_eq(store_name_parse(longcomm, DAY0, &nm), -EINVAL, "%s", longcomm);
	snprintf(longcomm, sizeof(longcomm), "221320-%064d-7.pb.gz", 0);
	cr_expect_eq(store_name_parse(longcomm, DAY0, &nm), 0, "%s", longcomm);
}

Test(store_name, dates)
{
	char buf[16];
	int64_t day;

	cr_assert_eq(store_date_parse("2023-11-14", &day), 0);
	cr_expect_eq(day, DAY0);
	store_date_format(day, buf, sizeof(buf));
	cr_expect_str_eq(buf, "2023-11-14");
	cr_assert_eq(store_date_parse("1970-01-01", &day), 0);
	cr_expect_eq(day, 0);
	cr_assert_eq(store_date_parse("2024-02-29", &day), 0);
	store_date_format(day, buf, sizeof(buf));
	cr_expect_str_eq(buf, "2024-02-29");
	cr_assert_eq(store_date_parse("1969-12-31", &day), 0);
	cr_expect_eq(day, -86400);

	static const char *const bad[] = {
		"2023-02-29", "2023-02-30",  "2023-13-01",  "2023-00-10",
		"2023-01-00", "2023-01-32",  "2023-1-14",   "23-11-14",
		"2023/11/14", "2023-11-14x", "2023-11-1",   "",
		"20a3-11-14", "2023-11-14 ", " 2023-11-14", "+023-11-14",
	};
	day = 12345;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(store_date_parse(bad[i], &day), -EINVAL, "'%s' was accepted", bad[i]);
	cr_expect_eq(day, 12345, "a refused date changed the output");
}

Test(store_name, day_of)
{
	cr_expect_eq(store_day_of(T0), DAY0);
	cr_expect_eq(store_day_of(DAY0), DAY0);
	cr_expect_eq(store_day_of(DAY0 + 86399), DAY0);
	cr_expect_eq(store_day_of(DAY0 + 86400), DAY0 + 86400);
	cr_expect_eq(store_day_of(0), 0);
	cr_expect_eq(store_day_of(-1), -86400);
	cr_expect_eq(store_day_of(-86400), -86400);
	cr_expect_eq(store_day_of(-86401), -2 * 86400);
}

Test(store_name, temp_files)
{
	cr_expect(store_is_temp(".221320-postgres-7.pb.gz.tmp.12.ab"));
	cr_expect(store_is_temp(".x.tmp."));
	cr_expect(store_is_temp("index.jsonl.tmp.12.ab"));
	cr_expect(store_is_temp("index.jsonl.tmp."));
	cr_expect_not(store_is_temp("221320-postgres-7.pb.gz"));
	cr_expect_not(store_is_temp("x.tmp.1"), "not hidden: not ours");
	cr_expect_not(store_is_temp(".hidden"));
	cr_expect_not(store_is_temp("index.jsonl"));
	cr_expect_not(store_is_temp("index.jsonl.tmp"));
	cr_expect_not(store_is_temp("index.json.tmp.1"));
}
