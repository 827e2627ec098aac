// SPDX-License-Identifier: BSD-2-Clause
/* The agent's configuration refused right: every bad value, in the file
 * and as a flag, with its message; syntax errors, unknown keys and flags,
 * a missing file. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "util/log.h"
#include "config_fixture.h"

struct bad_value {
	const char *key, *value;
	const char *msg; /* %s = the key as named: "interval" or "--interval" */
};

#define INT_MSG(k, lo, hi) "%s must be an integer between " #lo " and " #hi ", got '" k "'"
#define DUR_MSG(v)                                                                                 \
	"%s must be a duration in seconds or with a suffix s, m, h, d or w (e.g. 7d), got '" v "'"
#define SIZE_MSG(v)                                                                                \
	"%s must be a size in bytes or with a suffix K, M, G or T (e.g. 512M), got '" v "'"
#define RANGE_MSG(v) "%s must be greater than 0 and fit in 64 bits, got '" v "'"
#define URL_MSG(v)                                                                                 \
	"%s must be an http:// or https:// URL with a host and no query, or \"\", got '" v "'"
#define URLS_MSG(v) "%s must be http:// or https:// URLs separated by spaces, or \"\", got '" v "'"
#define LISTEN_MSG(v)                                                                              \
	"%s must be ADDR:PORT (IPv4 address, [IPv6 address] or localhost; port 1..65535) or "      \
	"\"\", got '" v "'"
#define SERVICE_MSG(v) "%s must be 1 to 128 characters among A-Z a-z 0-9 . _ -, got '" v "'"
#define BOOL_MSG(v) "%s must be true/false, yes/no, on/off or 1/0, got '" v "'"
#define PIDS_MSG(v) "%s: malformed pid list '" v "': expected numbers separated by commas"
#define NAMES_MSG(v)                                                                               \
	"%s: bad process name list '" v "': names are 1 to 15 characters, separated by commas"

#define S200                                                                                       \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxx"

static const struct bad_value bad_values[] = {
	{ "frequency", "0", "%s must be between 1 and 10000, got 0" },
	{ "frequency", "10001", "%s must be between 1 and 10000, got 10001" },
	{ "frequency", "abc", INT_MSG("abc", 1, 10000) },
	{ "frequency", "", INT_MSG("", 1, 10000) },
	{ "interval", "0", "%s must be between 1 and 86400, got 0" },
	{ "interval", "86401", "%s must be between 1 and 86400, got 86401" },
	{ "interval", "soon", INT_MSG("soon", 1, 86400) },
	{ "retention-age", "7x", DUR_MSG("7x") },
	{ "retention-age", "-1d", DUR_MSG("-1d") },
	{ "retention-age", "", DUR_MSG("") },
	{ "retention-age", "d", DUR_MSG("d") },
	{ "retention-age", "7dd", DUR_MSG("7dd") },
	{ "retention-age", "1.5h", DUR_MSG("1.5h") },
	{ "retention-age", "0", RANGE_MSG("0") },
	{ "retention-age", "0d", RANGE_MSG("0d") },
	{ "retention-age", "99999999999999999w", RANGE_MSG("99999999999999999w") },
	{ "retention-age", "99999999999999999999", RANGE_MSG("99999999999999999999") },
	{ "retention-size", "1Q", SIZE_MSG("1Q") },
	{ "retention-size", "1GB", SIZE_MSG("1GB") },
	{ "retention-size", "-1G", SIZE_MSG("-1G") },
	{ "retention-size", "", SIZE_MSG("") },
	{ "retention-size", "0", RANGE_MSG("0") },
	{ "retention-size", "99999999999T", RANGE_MSG("99999999999T") },
	{ "queue-size", "1 G", SIZE_MSG("1 G") },
	{ "queue-size", "0M", RANGE_MSG("0M") },
	{ "queue-size", "8388608T", RANGE_MSG("8388608T") },
	{ "remote-timeout", "0", "%s must be between 1 and 600, got 0" },
	{ "remote-timeout", "601", "%s must be between 1 and 600, got 601" },
	{ "remote-timeout", "1.5", INT_MSG("1.5", 1, 600) },
	{ "remote-timeout", "", INT_MSG("", 1, 600) },
	{ "push-profefe", "ftp://x", URL_MSG("ftp://x") },
	{ "push-profefe", "http://", URL_MSG("http://") },
	{ "push-profefe", "http:///path", URL_MSG("http:///path") },
	{ "push-profefe", "127.0.0.1:10100", URL_MSG("127.0.0.1:10100") },
	{ "push-profefe", "http://h:0", URL_MSG("http://h:0") },
	{ "push-profefe", "http://h:70000", URL_MSG("http://h:70000") },
	{ "push-profefe", "http://h:", URL_MSG("http://h:") },
	{ "push-profefe", "http://h/x?a=b", URL_MSG("http://h/x?a=b") },
	{ "push-pyroscope", "https://", URL_MSG("https://") },
	{ "push-pyroscope", "https://u@", URL_MSG("https://u@") },
	{ "push-pyroscope", "https://[]:80", URL_MSG("https://[]:80") },
	{ "push-pyroscope", "http://a b", URL_MSG("http://a b") },
	{ "debuginfod-urls", "ftp://x", URLS_MSG("ftp://x") },
	{ "debuginfod-urls", "http://a:1 debuginfod.debian.net",
	  URLS_MSG("debuginfod.debian.net") },
	{ "debuginfod-timeout", "0", "%s must be between 1 and 600, got 0" },
	{ "debuginfod-cache-size", "lots", SIZE_MSG("lots") },
	{ "debuginfod-cache", "cache", "%s must be an absolute path, got 'cache'" },
	{ "offline", "maybe", BOOL_MSG("maybe") },
	{ "service", "my service", SERVICE_MSG("my service") },
	{ "service", S200, SERVICE_MSG(S200) },
	{ "service", "", SERVICE_MSG("") },
	{ "service", "a/b", SERVICE_MSG("a/b") },
	{ "output-dir", "profiles", "%s must be an absolute path or \"\", got 'profiles'" },
	{ "output-dir", "./x", "%s must be an absolute path or \"\", got './x'" },
	{ "queue-dir", "", "%s must be an absolute path, got ''" },
	{ "queue-dir", "queue", "%s must be an absolute path, got 'queue'" },
	{ "btf", "vmlinux", "%s must be an absolute path, got 'vmlinux'" },
	{ "http-listen", "127.0.0.1", LISTEN_MSG("127.0.0.1") },
	{ "http-listen", "127.0.0.1:0", LISTEN_MSG("127.0.0.1:0") },
	{ "http-listen", "127.0.0.1:70000", LISTEN_MSG("127.0.0.1:70000") },
	{ "http-listen", "127.0.0.1:", LISTEN_MSG("127.0.0.1:") },
	{ "http-listen", "127.0.0.1:80x", LISTEN_MSG("127.0.0.1:80x") },
	{ "http-listen", ":3080", LISTEN_MSG(":3080") },
	{ "http-listen", "::1:3080", LISTEN_MSG("::1:3080") },
	{ "http-listen", "[::1]", LISTEN_MSG("[::1]") },
	{ "http-listen", "[nope]:80", LISTEN_MSG("[nope]:80") },
	{ "http-listen", "example.com:80", LISTEN_MSG("example.com:80") },
	{ "http-listen", "1.2.3:80", LISTEN_MSG("1.2.3:80") },
	{ "log-level", "verbose", "%s must be error, warn, info or debug, got 'verbose'" },
	{ "log-level", "", "%s must be error, warn, info or debug, got ''" },
	{ "group-short-lived", "sometimes", BOOL_MSG("sometimes") },
	{ "group-min-samples", "-1", "%s must be between 0 and 1000000, got -1" },
	{ "group-min-samples", "1000001", "%s must be between 0 and 1000000, got 1000001" },
	{ "group-min-samples", "few", INT_MSG("few", 0, 1000000) },
	{ "query-labels", "full", "%s must be normalized, fingerprint or off, got 'full'" },
	{ "profile-types", "wall",
	  "%s must be a comma-separated list of cpu, offcpu, faults or memory, got 'wall'" },
	{ "profile-types", "",
	  "%s must be a comma-separated list of cpu, offcpu, faults or memory, got ''" },
	{ "profile-types", "cpu,",
	  "%s must be a comma-separated list of cpu, offcpu, faults or memory, got 'cpu,'" },
	{ "profile-types", "cpu,,offcpu",
	  "%s must be a comma-separated list of cpu, offcpu, faults or memory, got 'cpu,,offcpu'" },
	{ "faults-period", "0", "%s must be between 1 and 1000000, got 0" },
	{ "faults-period", "1000001", "%s must be between 1 and 1000000, got 1000001" },
	{ "offcpu-ratio", "0", "%s must be between 1 and 100, got 0" },
	{ "offcpu-ratio", "101", "%s must be between 1 and 100, got 101" },
	{ "offcpu-period", "-1", "%s must be between 0 and 1000000, got -1" },
	{ "offcpu-period", "1000001", "%s must be between 0 and 1000000, got 1000001" },
	{ "offcpu-min", "-1", "%s must be between 0 and 60000000, got -1" },
	{ "query-labels", "", "%s must be normalized, fingerprint or off, got ''" },
	{ "query-labels", "Normalized",
	  "%s must be normalized, fingerprint or off, got 'Normalized'" },
	{ "no-kernel", "maybe", BOOL_MSG("maybe") },
	{ "no-user", "2", BOOL_MSG("2") },
	{ "no-user", "", BOOL_MSG("") },
	{ "comm", "a,b,c,d,e,f,g,h,i", "%s takes at most 8 names, got 9 in 'a,b,c,d,e,f,g,h,i'" },
	{ "comm", "a,,b", NAMES_MSG("a,,b") },
	{ "comm", "sixteen-chars-xx", NAMES_MSG("sixteen-chars-xx") },
	{ "pid", "1,,2", PIDS_MSG("1,,2") },
	{ "pid", "abc", PIDS_MSG("abc") },
	{ "pid", "0", PIDS_MSG("0") },
	{ "pid", "1,", "%s: malformed pid list '1,': trailing comma" },
	{ "cgroup", "relative/path", "%s: cgroup 'relative/path' is not an absolute path" },
	{ "cgroup", ",/", "%s: empty or too long cgroup path" },
};

Test(config, bad_values_everywhere)
{
	char expected[1024], err[1024], path[64], content[512], flag[512];
	struct agent_config c;

	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		const struct bad_value *b = &bad_values[i];
		char dashed[64];

		/* config_set */
		cr_assert_eq(config_defaults(&c), 0);
		snprintf(expected, sizeof(expected), b->msg, b->key);
		cr_expect_eq(config_set(&c, b->key, b->value, err, sizeof(err)), -EINVAL,
			     "%s = '%s'", b->key, b->value);
		cr_expect_str_eq(err, expected);
		config_free(&c);

		/* the file: path:line prefix; quoted so that "" and spaces survive */
		snprintf(content, sizeof(content), "interval = 10\n\n# comment\n%s = \"%s\"\n",
			 b->key, b->value);
		write_tmp(path, sizeof(path), content);
		cr_assert_eq(config_defaults(&c), 0);
		snprintf(expected, sizeof(expected), "%s:4: ", path);
		snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected), b->msg,
			 b->key);
		cr_expect_eq(config_load_file(&c, path, err, sizeof(err)), -EINVAL, "%s = '%s'",
			     b->key, b->value);
		cr_expect_str_eq(err, expected);
		cr_expect_null(c.config_path);
		config_free(&c);
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(parse(&c, err, "--config", path), -EINVAL);
		cr_expect_str_eq(err, expected);
		config_free(&c);
		unlink(path);

		/* flags, --key=value form and --key value form */
		snprintf(dashed, sizeof(dashed), "--%s", b->key);
		snprintf(expected, sizeof(expected), b->msg, dashed);
		snprintf(flag, sizeof(flag), "--%s=%s", b->key, b->value);
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(parse(&c, err, flag), -EINVAL, "%s", flag);
		cr_expect_str_eq(err, expected);
		config_free(&c);
		if (strstr(b->msg, "must be true/false"))
			continue; /* boolean flags: the value only after '=' */
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(parse(&c, err, dashed, b->value), -EINVAL, "%s %s", dashed, b->value);
		cr_expect_str_eq(err, expected);
		config_free(&c);
	}
}

Test(config, short_flag_errors)
{
	struct agent_config c;
	char err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "-F", "0"), -EINVAL);
	cr_expect_str_eq(err, "--frequency must be between 1 and 10000, got 0");
	cr_expect_eq(parse(&c, err, "-F10001"), -EINVAL);
	cr_expect_str_eq(err, "--frequency must be between 1 and 10000, got 10001");
	cr_expect_eq(parse(&c, err, "-p", "1,,2"), -EINVAL);
	cr_expect_str_eq(err, "--pid: malformed pid list '1,,2': expected numbers separated by "
			      "commas");
	config_free(&c);
}

Test(config, file_syntax_errors)
{
	static const struct {
		const char *content, *msg; /* msg after "path:" */
	} cases[] = {
		{ "frequncy = 19\n", "1: unknown key 'frequncy'" },
		{ "# x\nfrequency 19\n", "2: expected 'key = value'" },
		{ "\n\n = 19\n", "3: expected 'key = value', the key is empty" },
		{ "=\n", "1: expected 'key = value', the key is empty" },
		{ "config = /etc/x\n", "1: unknown key 'config'" },
		{ "Frequency = 19\n", "1: unknown key 'Frequency'" },
		{ "fre quency = 19\n", "1: unknown key 'fre quency'" },
		{ "--frequency = 19\n", "1: unknown key '--frequency'" },
		{ "service = \"abc\n", "1: unterminated quoted value of 'service'" },
		{ "service = \"abc\" def\n", "1: unexpected text after the quoted value of "
					     "'service': 'def'" },
		{ "frequency = 19 Hz\n", "1: frequency must be an integer between 1 and 10000, "
					 "got '19 Hz'" },
		{ "interval = 60\ninterval = soon\n", "2: interval must be an integer between 1 "
						      "and 86400, got 'soon'" },
	};
	struct agent_config c;
	char path[64], err[512], expected[600];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_tmp(path, sizeof(path), cases[i].content);
		snprintf(expected, sizeof(expected), "%s:%s", path, cases[i].msg);
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(config_load_file(&c, path, err, sizeof(err)), -EINVAL, "%s",
			     cases[i].content);
		cr_expect_str_eq(err, expected);
		config_free(&c);
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(parse(&c, err, "--config", path), -EINVAL);
		cr_expect_str_eq(err, expected);
		config_free(&c);
		unlink(path);
	}

	/* A NUL byte in a line. */
	{
		int fd;

		snprintf(path, sizeof(path), "/tmp/ebprof-test-config-XXXXXX");
		fd = mkstemp(path);
		cr_assert(fd >= 0);
		static const char nul[] = "interval = 5\nfrequency = 1\0009\n";

		cr_assert_eq(write(fd, nul, sizeof(nul) - 1), (ssize_t)sizeof(nul) - 1);
		close(fd);
		cr_assert_eq(config_defaults(&c), 0);
		snprintf(expected, sizeof(expected), "%s:2: NUL byte in the line", path);
		cr_expect_eq(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
		cr_expect_str_eq(err, expected);
		config_free(&c);
		unlink(path);
	}
}

Test(config, unknown_key_set)
{
	struct agent_config c;
	char err[256];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(config_set(&c, "frequncy", "19", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "unknown key 'frequncy'");
	cr_expect_eq(config_set(&c, "", "19", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "unknown key ''");
	cr_expect_eq(config_set(&c, "pyroscope-tenant", "a\nb", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "pyroscope-tenant must not contain control characters");
	cr_expect_eq(config_set(&c, "frequency", "20", err, sizeof(err)), 0);
	cr_expect_eq(c.frequency, 20);
	config_free(&c);
}

Test(config, flag_errors)
{
	static const struct {
		const char *args[4];
		const char *msg;
	} cases[] = {
		{ { "--frequncy", "19" }, "unknown option '--frequncy' (see ebprof agent --help)" },
		{ { "--frequncy=19" }, "unknown option '--frequncy' (see ebprof agent --help)" },
		{ { "-x" }, "unknown option '-x' (see ebprof agent --help)" },
		{ { "-vx" }, "unknown option '-x' (see ebprof agent --help)" },
		{ { "--no" }, "ambiguous option '--no' (see ebprof agent --help)" },
		{ { "--help=yes" }, "option '--help' takes no value" },
		{ { "--verbose=1" }, "option '--verbose' takes no value" },
		{ { "--interval" }, "option --interval needs a value" },
		{ { "--config" }, "option --config needs a value" },
		{ { "-F" }, "option -F needs a value" },
		{ { "-p" }, "option -p needs a value" },
		{ { "extra" }, "unexpected argument 'extra' (see ebprof agent --help)" },
		{ { "-F", "20", "run" }, "unexpected argument 'run' (see ebprof agent --help)" },
		{ { "--no-kernel", "false" },
		  "unexpected argument 'false' (see ebprof agent --help)" },
		{ { "--no-kernel", "--no-user" },
		  "no-kernel and no-user together leave nothing to sample" },
	};
	struct agent_config c;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].args;

		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(parse(&c, err, a[0], a[1], a[2], a[3]), -EINVAL, "%s", a[0]);
		cr_expect_str_eq(err, cases[i].msg);
		config_free(&c);
	}
}

Test(config, config_file_missing)
{
	struct agent_config c;
	char err[512], path[64];

	/* An explicit --config that does not exist is an error. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "--config", "/nonexistent/ebprof.conf"), -ENOENT);
	cr_expect_str_eq(err, "cannot read config file /nonexistent/ebprof.conf: No such file or "
			      "directory");
	cr_expect_eq(parse(&c, err, "--config=/nonexistent/ebprof.conf"), -ENOENT);
	cr_expect_eq(config_load_file(&c, "/nonexistent/x.conf", err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "cannot read config file /nonexistent/x.conf: No such file or "
			      "directory");
	/* A directory is not a config file. */
	cr_expect_eq(parse(&c, err, "--config", "/tmp"), -EISDIR);
	cr_expect_str_eq(err, "cannot read config file /tmp: Is a directory");
	config_free(&c);

	/* The default path may be absent... */
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse_with(&c, "/nonexistent/ebprof.conf", err, sizeof(err), "-F", "7", NULL),
		     0, "%s", err);
	cr_expect_eq(c.frequency, 7);
	cr_expect_null(c.config_path);
	config_free(&c);

	/* ...but when present its errors count, and --config replaces it. */
	write_tmp(path, sizeof(path), "frequency = 0\n");
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse_with(&c, path, err, sizeof(err), NULL), -EINVAL);
	cr_expect(strstr(err, ":1: frequency must be between 1 and 10000, got 0") != NULL, "%s",
		  err);
	config_free(&c);
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(
		parse_with(&c, path, err, sizeof(err), "--config", "/nonexistent/x.conf", NULL),
		-ENOENT);
	config_free(&c);
	unlink(path);
}
