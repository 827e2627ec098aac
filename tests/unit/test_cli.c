// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

Test(cli, pids)
{
	uint32_t *pids;
	size_t n;
	char err[256];

	cr_assert_eq(cli_parse_pids("1234,5678", &pids, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 2);
	cr_expect_eq(pids[0], 1234);
	cr_expect_eq(pids[1], 5678);
	free(pids);
	cr_assert_eq(cli_parse_pids("7", &pids, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 1);
	free(pids);
	const char *bad[] = {
		"", ",", "1,", ",1", "1,,2", "a", "12a", "-5", "0", "99999999", " 1"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(cli_parse_pids(bad[i], &pids, &n, err, sizeof(err)), -EINVAL, "'%s'",
			     bad[i]);
		cr_expect(strstr(err, "pid list") != NULL, "'%s': %s", bad[i], err);
	}
}

Test(cli, names)
{
	char **names, err[256];
	size_t n;

	cr_assert_eq(cli_parse_names("postgres,pgbouncer", &names, &n, err, sizeof(err)), 0);
	cr_expect_eq(n, 2);
	cr_expect_str_eq(names[1], "pgbouncer");
	cli_free_list(names, n);
	cr_expect_eq(cli_parse_names("", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_names("a,,b", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_names("a/b", &names, &n, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_names("sixteen-chars-xx", &names, &n, err, sizeof(err)), -EINVAL);
}

Test(cli, integers_and_seconds)
{
	char err[256];
	long v;
	double d;

	cr_expect_eq(cli_parse_int("99", "frequency", 1, 10000, &v, err, sizeof(err)), 0);
	cr_expect_eq(v, 99);
	cr_expect_eq(cli_parse_int("0", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "frequency must be between 1 and 10000, got 0");
	cr_expect_eq(cli_parse_int("9x", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_int("", "frequency", 1, 10000, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_int("99999999999999999999", "f", 1, 10, &v, err, sizeof(err)),
		     -EINVAL);
	cr_expect_eq(cli_parse_seconds("2.5", "duration", &d, err, sizeof(err)), 0);
	cr_expect_float_eq(d, 2.5, 1e-9);
	cr_expect_eq(cli_parse_seconds("0", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_seconds("-1", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_seconds("nan", "duration", &d, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cli_parse_seconds("1e99", "duration", &d, err, sizeof(err)), -EINVAL);
}

Test(cli, output_paths)
{
	char err[256];

	cr_expect_eq(cli_check_output("-", err, sizeof(err)), 0);
	cr_expect_eq(cli_check_output("/tmp/x.pb.gz", err, sizeof(err)), 0);
	cr_expect_eq(cli_check_output("relative.pb.gz", err, sizeof(err)), 0);
	cr_expect_eq(cli_check_output("/no/such/dir/x", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "does not exist") != NULL, "%s", err);
	cr_expect_eq(cli_check_output("/tmp", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "is a directory") != NULL, "%s", err);
	cr_expect_eq(cli_check_output("", err, sizeof(err)), -EINVAL);
}
