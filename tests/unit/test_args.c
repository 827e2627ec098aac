// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/args.h"

Test(args, pids)
{
	uint32_t *pids;
	size_t n;
	char err[256];

	cr_assert_eq(args_parse_pids("1234,5678", &pids, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 2);
	cr_expect_eq(pids[0], 1234);
	cr_expect_eq(pids[1], 5678);
	free(pids);
	cr_assert_eq(args_parse_pids("7", &pids, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 1);
	free(pids);
	const char *bad[] = {
		"", ",", "1,", ",1", "1,,2", "a", "12a", "-5", "0", "99999999", " 1"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(args_parse_pids(bad[i], &pids, &n, err, sizeof(err)), -EINVAL, "'%s'",
			     bad[i]);
		cr_expect(strstr(err, "pid list") != NULL, "'%s': %s", bad[i], err);
	}
}

Test(args, names)
{
	char **names, err[256];
	size_t n;

	cr_assert_eq(args_parse_names("postgres,pgbouncer", &names, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 2);
	cr_expect_str_eq(names[1], "pgbouncer");
	args_free_list(names, n);
	cr_expect_eq(args_parse_names("", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_names("a,,b", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_names("a/b", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_names("sixteen-chars-xx", &names, &n, err, sizeof(err)), -EINVAL);
}

Test(args, integers_and_seconds)
{
	char err[256];
	long v;
	double d;

	cr_expect_eq(args_parse_int("99", "frequency", 1, 10000, &v, err, sizeof(err)), 0);
	cr_expect_eq(v, 99);
	cr_expect_eq(args_parse_int("0", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "frequency must be between 1 and 10000, got 0");
	cr_expect_eq(args_parse_int("9x", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_int("", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_int("99999999999999999999", "f", 1, 10, &v, err, sizeof(err)),
		     -EINVAL);
	cr_expect_eq(args_parse_seconds("2.5", "duration", &d, err, sizeof(err)), 0);
	cr_expect_float_eq(d, 2.5, 1e-9);
	cr_expect_eq(args_parse_seconds("0", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_seconds("-1", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_seconds("nan", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(args_parse_seconds("1e99", "duration", &d, err, sizeof(err)), -EINVAL);
}

Test(args, output_paths)
{
	char err[256];

	cr_expect_eq(args_check_output("-", err, sizeof(err)), 0);
	cr_expect_eq(args_check_output("/tmp/x.pb.gz", err, sizeof(err)), 0);
	cr_expect_eq(args_check_output("relative.pb.gz", err, sizeof(err)), 0);
	cr_expect_eq(args_check_output("/no/such/dir/x", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "does not exist") != NULL, "%s", err);
	cr_expect_eq(args_check_output("/tmp", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "is a directory") != NULL, "%s", err);
	cr_expect_eq(args_check_output("", err, sizeof(err)), -EINVAL);
}

Test(args, durations)
{
	static const struct {
		const char *s;
		int64_t v;
	} ok[] = { { "1", 1 },	      { "3600", 3600 }, { "30s", 30 },
		   { "90m", 5400 },   { "12h", 43200 }, { "7d", 604800 },
		   { "2w", 1209600 }, { "007", 7 },	{ "9223372036854775807", INT64_MAX } };
	static const char *const bad[] = { "",	 "d",	 "7x",	"-1d", "+1d",  " 1",
					   "1 ", "1.5h", "1hh", "1H",  "0x10", "1h30m" };
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(args_parse_duration(ok[i].s, &v), 0, "%s", ok[i].s);
		cr_expect_eq(v, ok[i].v, "%s", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(args_parse_duration(bad[i], &v), -EINVAL, "'%s'", bad[i]);
	cr_expect_eq(args_parse_duration("0", &v), -ERANGE);
	cr_expect_eq(args_parse_duration("0w", &v), -ERANGE);
	cr_expect_eq(args_parse_duration("9223372036854775808", &v), -ERANGE);
	cr_expect_eq(args_parse_duration("15250284452472w", &v), -ERANGE);
	cr_expect_eq(args_parse_duration("15250284452471w", &v), 0);
}

Test(args, sizes)
{
	static const struct {
		const char *s;
		int64_t v;
	} ok[] = { { "1000", 1000 },
		   { "1024K", 1LL << 20 },
		   { "1k", 1024 },
		   { "512M", 512LL << 20 },
		   { "1G", 1LL << 30 },
		   { "2T", 2LL << 40 },
		   { "1KiB", 1024 },
		   { "3MiB", 3LL << 20 },
		   { "1GiB", 1LL << 30 },
		   { "1TiB", 1LL << 40 },
		   { "8388607T", 8388607LL << 40 } };
	static const char *const bad[] = { "",	  "G",	  "1Q",	 "1GB", "1 G", " 1G", "-1G",
					   "+1G", "1.5G", "1Gi", "1iB", "1P",  "0x1G" };
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(args_parse_size(ok[i].s, &v), 0, "%s", ok[i].s);
		cr_expect_eq(v, ok[i].v, "%s", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(args_parse_size(bad[i], &v), -EINVAL, "'%s'", bad[i]);
	cr_expect_eq(args_parse_size("0", &v), -ERANGE);
	cr_expect_eq(args_parse_size("0K", &v), -ERANGE);
	cr_expect_eq(args_parse_size("8388608T", &v), -ERANGE);
	cr_expect_eq(args_parse_size("99999999999T", &v), -ERANGE);
	cr_expect_eq(args_parse_size("99999999999999999999", &v), -ERANGE);
}

Test(args, ports)
{
	int port;

	cr_expect_eq(args_parse_port("1", 1, &port), 0);
	cr_expect_eq(port, 1);
	cr_expect_eq(args_parse_port("65535", 5, &port), 0);
	cr_expect_eq(port, 65535);
	cr_expect_eq(args_parse_port("80/path", 2, &port), 0);
	cr_expect_eq(port, 80);
	cr_expect_eq(args_parse_port("0", 1, &port), -EINVAL);
	cr_expect_eq(args_parse_port("65536", 5, &port), -EINVAL);
	cr_expect_eq(args_parse_port("", 0, &port), -EINVAL);
	cr_expect_eq(args_parse_port("+80", 3, &port), -EINVAL);
	cr_expect_eq(args_parse_port("8 0", 3, &port), -EINVAL);
	cr_expect_eq(args_parse_port("000080", 6, &port), -EINVAL);
}
