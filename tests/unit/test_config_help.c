// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof agent --help` and -h: the usage text, every key in it. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>

#include "agent/config.h"
#include "config_fixture.h"

Test(config, help, .init = cr_redirect_stdout)
{
	static const char *const expect[] = {
		"Usage: ebprof agent",
		"-F, --frequency HZ",
		"(default: 19)",
		"--interval SECS",
		"(default: 60)",
		"--no-kernel",
		"--no-user",
		"--btf PATH",
		"--comm NAME[,NAME]",
		"(default: postgres,postmaster)",
		"-p, --pid PID[,PID]",
		"--cgroup PATH[,PATH]",
		"--output-dir DIR",
		"(default: /var/lib/ebprof/profiles)",
		"--retention-age AGE",
		"(default: 7d)",
		"--retention-size SIZE",
		"(default: 1G)",
		"--service NAME",
		"(default: the host name)",
		"--push-profefe URL",
		"--push-pyroscope URL",
		"--pyroscope-user USER",
		"--pyroscope-password PASS",
		"--pyroscope-tenant ID",
		"--queue-dir DIR",
		"(default: /var/lib/ebprof/queue)",
		"--queue-size SIZE",
		"(default: 256M)",
		"--remote-timeout SECS",
		"(default: 30)",
		"--http-listen ADDR:PORT",
		"(default: 127.0.0.1:3080)",
		"--log-level LEVEL",
		"(default: info)",
		"--config PATH",
		"-v, --verbose",
		"-h, --help",
	};
	struct agent_config c;
	char err[256], out[16384];
	size_t n;
	FILE *f;

	cr_assert_eq(config_defaults(&c), 0);
	/* --help wins even over a broken flag or a missing --config. */
	cr_expect_eq(parse(&c, err, "-F", "0", "--config", "/nonexistent", "--help"), 1);
	cr_expect_eq(c.frequency, 19);
	config_free(&c);
	fflush(stdout);
	f = cr_get_redirected_stdout();
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		cr_expect(strstr(out, expect[i]) != NULL, "usage lacks '%s'", expect[i]);
	for (char *line = out, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cr_assert(nl);
		cr_expect_leq(nl - line, 80, "usage line too long: %.*s", (int)(nl - line), line);
	}
}

Test(config, help_short, .init = cr_redirect_stdout)
{
	struct agent_config c;
	char err[256];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "-h"), 1);
	config_free(&c);
}
