// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "agent/config.h"
#include "util/log.h"

#define NO_DEFAULT "/nonexistent/ebprof-test/ebprof.conf"
#define CGROUP2_MAGIC 0x63677270

/* Write content to a new temp file; path receives its name. */
static void write_tmp(char *path, size_t len, const char *content)
{
	int fd;

	snprintf(path, len, "/tmp/ebprof-test-config-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

/* config_parse_args_path() on "agent" + the NULL-terminated arguments,
 * without any default config file. */
static int parse_with(struct agent_config *c, const char *default_path, char *err, size_t errlen,
		      ...)
{
	char *argv[64] = { "agent" };
	int argc = 1;
	va_list ap;

	va_start(ap, errlen);
	for (const char *a; (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	err[0] = '\0';
	return config_parse_args_path(c, argc, argv, default_path, err, errlen);
}

#define parse(c, err, ...) parse_with(c, NO_DEFAULT, err, sizeof(err), __VA_ARGS__, NULL)

/* Where cgroup v2 is mounted here, or NULL (then the cgroup test fails). */
static const char *cgroup2_root(void)
{
	struct statfs sf;

	if (!statfs("/sys/fs/cgroup", &sf) && sf.f_type == CGROUP2_MAGIC)
		return "/sys/fs/cgroup";
	if (!statfs("/sys/fs/cgroup/unified", &sf) && sf.f_type == CGROUP2_MAGIC)
		return "/sys/fs/cgroup/unified";
	return NULL;
}

Test(config, defaults)
{
	struct agent_config c;
	char host[256] = "";

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(c.frequency, 19);
	cr_expect_eq(c.interval, 60);
	cr_expect_str_eq(c.output_dir, "/var/lib/ebprof/profiles");
	cr_expect_eq(c.retention_age, 7 * 86400);
	cr_expect_eq(c.retention_size, 1LL << 30);
	cr_assert_eq(c.ncomms, 2);
	cr_expect_str_eq(c.comms[0], "postgres");
	cr_expect_str_eq(c.comms[1], "postmaster");
	cr_expect_eq(c.npids, 0);
	cr_expect_null(c.pids);
	cr_expect_eq(c.ncgroups, 0);
	gethostname(host, sizeof(host) - 1);
	if (host[0] && !strpbrk(host, " /:"))
		cr_expect_str_eq(c.service, host);
	cr_expect_null(c.push_profefe);
	cr_expect_null(c.push_pyroscope);
	cr_expect_null(c.pyroscope_user);
	cr_expect_null(c.pyroscope_password);
	cr_expect_null(c.pyroscope_tenant);
	cr_expect_str_eq(c.queue_dir, "/var/lib/ebprof/queue");
	cr_expect_eq(c.queue_size, 256LL << 20);
	cr_expect_eq(c.remote_timeout, 30);
	cr_expect_str_eq(c.http_listen, "127.0.0.1:3080");
	cr_expect_not(c.no_kernel);
	cr_expect_not(c.no_user);
	cr_expect_null(c.btf);
	cr_expect_eq(c.log_level, LOG_INFO);
	cr_expect_null(c.config_path);
	config_free(&c);
	config_free(&c); /* idempotent after the memset */
}

Test(config, no_arguments_no_file)
{
	struct agent_config c;
	char err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse_with(&c, NO_DEFAULT, err, sizeof(err), NULL), 0, "%s", err);
	cr_expect_null(c.config_path);
	cr_expect_eq(parse_with(&c, NULL, err, sizeof(err), NULL), 0, "%s", err);
	cr_expect_eq(c.frequency, 19);
	config_free(&c);
}

static void check_all_keys(const struct agent_config *c, const char *cg)
{
	cr_expect_eq(c->frequency, 49);
	cr_expect_eq(c->interval, 30);
	cr_expect_str_eq(c->output_dir, "/srv/profiles");
	cr_expect_str_eq(c->btf, "/srv/btf/vmlinux");
	cr_expect_eq(c->retention_age, 12 * 3600);
	cr_expect_eq(c->retention_size, 512LL << 20);
	cr_assert_eq(c->ncomms, 3);
	cr_expect_str_eq(c->comms[0], "postgres");
	cr_expect_str_eq(c->comms[1], "pgbouncer");
	cr_expect_str_eq(c->comms[2], "patroni");
	cr_assert_eq(c->npids, 2);
	cr_expect_eq(c->pids[0], 1234);
	cr_expect_eq(c->pids[1], 5678);
	if (cg) {
		cr_assert_eq(c->ncgroups, 2);
		cr_expect_str_eq(c->cgroups[0], cg);
		cr_expect_str_eq(c->cgroups[1], cg);
	}
	cr_expect_str_eq(c->service, "db-01.prod_eu");
	cr_expect_str_eq(c->push_profefe, "http://127.0.0.1:10100");
	cr_expect_str_eq(c->push_pyroscope, "https://user@pyro.example.com:4040/base");
	cr_expect_str_eq(c->pyroscope_user, "alice");
	cr_expect_str_eq(c->pyroscope_password, "s3cret pass#1");
	cr_expect_str_eq(c->pyroscope_tenant, "team-a");
	cr_expect_str_eq(c->queue_dir, "/srv/queue");
	cr_expect_eq(c->queue_size, 64LL << 20);
	cr_expect_eq(c->remote_timeout, 7);
	cr_expect_str_eq(c->http_listen, "[::1]:9000");
	cr_expect(c->no_kernel);
	cr_expect_not(c->no_user);
	cr_expect_eq(c->log_level, LOG_DEBUG);
}

Test(config, every_key_from_file)
{
	const char *cg = cgroup2_root();
	struct agent_config c;
	char path[64], content[2048], err[512];

	snprintf(content, sizeof(content),
		 "# ebprof agent\n"
		 "frequency = 49\n"
		 "interval=30\n"
		 "output-dir = /srv/profiles\n"
		 "retention-age = 12h\n"
		 "retention-size = 512M\n"
		 "comm = postgres,pgbouncer,patroni\n"
		 "pid = 1234,5678\n"
		 "%s%s%s%s"
		 "service = db-01.prod_eu\n"
		 "push-profefe = http://127.0.0.1:10100/\n"
		 "push-pyroscope = https://user@pyro.example.com:4040/base\n"
		 "pyroscope-user = alice\n"
		 "pyroscope-password = \"s3cret pass#1\"\n"
		 "pyroscope-tenant = team-a\n"
		 "queue-dir = /srv/queue\n"
		 "queue-size = 64MiB\n"
		 "remote-timeout = 7\n"
		 "http-listen = [::1]:9000\n"
		 "no-kernel = yes\n"
		 "no-user = off\n"
		 "btf = /srv/btf/vmlinux\n"
		 "log-level = debug\n",
		 cg ? "cgroup = /," : "", cg ? cg : "", cg ? "/" : "", cg ? "\n" : "");
	write_tmp(path, sizeof(path), content);
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	check_all_keys(&c, cg);
	cr_expect_str_eq(c.config_path, path);
	config_free(&c);

	/* The same through --config. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--config", path), 0, "%s", err);
	check_all_keys(&c, cg);
	cr_expect_str_eq(c.config_path, path);
	config_free(&c);

	/* And as the default path. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse_with(&c, path, err, sizeof(err), NULL), 0, "%s", err);
	check_all_keys(&c, cg);
	cr_expect_str_eq(c.config_path, path);
	config_free(&c);
	unlink(path);
}

Test(config, every_key_from_flags)
{
	const char *cg = cgroup2_root();
	struct agent_config c;
	char cgs[PATH_MAX + 8], err[512];

	snprintf(cgs, sizeof(cgs), "/,%s", cg ? cg : "");
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "-F", "49", "--interval", "30", "--output-dir", "/srv/profiles",
			   "--retention-age", "12h", "--retention-size", "512M", "--comm",
			   "postgres,pgbouncer,patroni", "-p", "1234,5678", "--cgroup",
			   cg ? cgs : "", "--service", "db-01.prod_eu", "--push-profefe",
			   "http://127.0.0.1:10100", "--push-pyroscope",
			   "https://user@pyro.example.com:4040/base", "--pyroscope-user", "alice",
			   "--pyroscope-password", "s3cret pass#1", "--pyroscope-tenant", "team-a",
			   "--queue-dir", "/srv/queue", "--queue-size", "64M", "--remote-timeout",
			   "7", "--http-listen", "[::1]:9000", "--no-kernel", "--log-level",
			   "debug", "--btf", "/srv/btf/vmlinux"),
		     0, "%s", err);
	check_all_keys(&c, cg);
	cr_expect_null(c.config_path);
	config_free(&c);

	/* --key=value, --frequency for -F, --pid for -p, --no-user=false. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--frequency=49", "--interval=30", "--output-dir=/srv/profiles",
			   "--retention-age=43200", "--retention-size=524288K",
			   "--comm=postgres,pgbouncer,patroni", "--pid=1234,5678",
			   cg ? "--cgroup=/" : "--cgroup=", "--service=db-01.prod_eu",
			   "--push-profefe=http://127.0.0.1:10100//",
			   "--push-pyroscope=https://user@pyro.example.com:4040/base",
			   "--pyroscope-user=alice", "--pyroscope-password=s3cret pass#1",
			   "--pyroscope-tenant=team-a", "--queue-dir=/srv/queue",
			   "--queue-size=67108864", "--remote-timeout=7",
			   "--http-listen=[::1]:9000", "--no-kernel=on", "--no-user=false",
			   "--log-level=debug", "--btf=/srv/btf/vmlinux"),
		     0, "%s", err);
	if (cg) {
		cr_assert_eq(c.ncgroups, 1);
		cr_expect_str_eq(c.cgroups[0], cg);
	}
	check_all_keys(&c, NULL);
	config_free(&c);
}

/* Grouping of short-lived processes: on by default, "off" in the file or
 * on the command line for a profile per process, a sample minimum. */
Test(config, grouping_keys)
{
	struct agent_config c;
	char path[64], err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect(c.group_short_lived);
	cr_expect_eq(c.group_min_samples, 0);
	config_free(&c);

	write_tmp(path, sizeof(path), "group-short-lived = off\ngroup-min-samples = 5\n");
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_not(c.group_short_lived);
	cr_expect_eq(c.group_min_samples, 5);
	config_free(&c);
	unlink(path);

	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--group-short-lived=off", "--group-min-samples", "1000000"), 0,
		     "%s", err);
	cr_expect_not(c.group_short_lived);
	cr_expect_eq(c.group_min_samples, 1000000);
	config_free(&c);
}

Test(config, query_labels)
{
	struct agent_config c;
	char path[64], err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(c.query_labels, QUERY_LABELS_NORMALIZED);
	config_free(&c);

	write_tmp(path, sizeof(path), "query-labels = fingerprint\n");
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.query_labels, QUERY_LABELS_FINGERPRINT);
	config_free(&c);
	unlink(path);

	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--query-labels", "off"), 0, "%s", err);
	cr_expect_eq(c.query_labels, QUERY_LABELS_OFF);
	config_free(&c);
}

Test(config, debuginfod)
{
	struct agent_config c;
	char path[64], err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_null(c.debuginfod_urls, "unset: $DEBUGINFOD_URLS decides");
	cr_expect_str_eq(c.debuginfod_cache, "/var/cache/ebprof/debuginfod");
	cr_expect_eq(c.debuginfod_cache_size, 1LL << 30);
	cr_expect_eq(c.debuginfod_timeout, 10);
	cr_expect_not(c.offline);
	config_free(&c);

	write_tmp(path, sizeof(path),
		  "debuginfod-urls = http://a:8002 https://debuginfod.debian.net/\n"
		  "debuginfod-timeout = 3\noffline = yes\n");
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c.debuginfod_urls, "http://a:8002 https://debuginfod.debian.net/");
	cr_expect_eq(c.debuginfod_timeout, 3);
	cr_expect(c.offline);
	config_free(&c);
	unlink(path);

	/* "" is kept: it turns $DEBUGINFOD_URLS off */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--debuginfod-urls", ""), 0, "%s", err);
	cr_expect_str_eq(c.debuginfod_urls, "");
	config_free(&c);
}

Test(config, flags_override_file)
{
	struct agent_config c;
	char path[64], err[512];

	write_tmp(path, sizeof(path),
		  "frequency = 49\ninterval = 30\ncomm = a,b\nservice = fromfile\n"
		  "push-profefe = http://p:1\nno-user = true\nlog-level = warn\n");
	cr_assert_eq(config_defaults(&c), 0);
	/* --config after the flags: the file is still read first. */
	cr_assert_eq(parse(&c, err, "-F", "99", "--comm=x", "--push-profefe", "", "--no-user=0",
			   "--config", path),
		     0, "%s", err);
	cr_expect_eq(c.frequency, 99);
	cr_expect_eq(c.interval, 30);
	cr_assert_eq(c.ncomms, 1);
	cr_expect_str_eq(c.comms[0], "x");
	cr_expect_str_eq(c.service, "fromfile");
	cr_expect_null(c.push_profefe);
	cr_expect_not(c.no_user);
	cr_expect_eq(c.log_level, LOG_WARN);
	config_free(&c);

	/* Later flags win over earlier ones; the last --config wins. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--config", "/nonexistent", "--interval=5", "--interval", "7",
			   "--config=", "--config", path),
		     0, "%s", err);
	cr_expect_eq(c.interval, 7);
	cr_expect_str_eq(c.config_path, path);
	config_free(&c);
	unlink(path);
}

Test(config, file_syntax)
{
	struct agent_config c;
	char path[64], err[512];

	write_tmp(path, sizeof(path),
		  "\xef\xbb\xbf# comment line\n"
		  "\n"
		  "   \t\n"
		  "   # indented comment\n"
		  "  frequency\t=\t 77  \n"
		  "interval = 45 # trailing comment\n"
		  "service = \"svc\"   # quoted, then a comment\n"
		  "pyroscope-password = pass#word\n"
		  "pyroscope-user = \"  two  words \"\n"
		  "pyroscope-tenant = \"a \\\"quoted\\\" \\\\ tenant # not a comment\"\n"
		  "output-dir =\n"
		  "http-listen = \"\"\n"
		  "comm =\n"
		  "retention-age = 1d\r\n"
		  "retention-age = 2w\n" /* a key twice: the later wins */
		  "pid = 1,2\n"
		  "pid = 3\n"
		  "log-level = error"); /* no final newline */
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.frequency, 77);
	cr_expect_eq(c.interval, 45);
	cr_expect_str_eq(c.service, "svc");
	cr_expect_str_eq(c.pyroscope_password, "pass#word");
	cr_expect_str_eq(c.pyroscope_user, "  two  words ");
	cr_expect_str_eq(c.pyroscope_tenant, "a \"quoted\" \\ tenant # not a comment");
	cr_expect_str_eq(c.output_dir, "");
	cr_expect_str_eq(c.http_listen, "");
	cr_expect_eq(c.ncomms, 0);
	cr_expect_null(c.comms);
	cr_expect_eq(c.retention_age, 14 * 86400);
	cr_assert_eq(c.npids, 1);
	cr_expect_eq(c.pids[0], 3);
	cr_expect_eq(c.log_level, LOG_ERROR);
	config_free(&c);
	unlink(path);

	/* An empty file is fine. */
	write_tmp(path, sizeof(path), "");
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.frequency, 19);
	config_free(&c);
	unlink(path);
}

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
	{ "profile-types", "wall", "%s must be cpu, offcpu or cpu,offcpu, got 'wall'" },
	{ "profile-types", "", "%s must be cpu, offcpu or cpu,offcpu, got ''" },
	{ "profile-types", "cpu,", "%s must be cpu, offcpu or cpu,offcpu, got 'cpu,'" },
	{ "profile-types", "cpu,,offcpu",
	  "%s must be cpu, offcpu or cpu,offcpu, got 'cpu,,offcpu'" },
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

Test(config, verbose_and_log_level)
{
	struct agent_config c;
	char err[256];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "-v"), 0, "%s", err);
	cr_expect_eq(c.log_level, LOG_DEBUG);
	config_free(&c);

	/* -v applies after everything, whatever its position. */
	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "-v", "--log-level", "error"), 0, "%s", err);
	cr_expect_eq(c.log_level, LOG_WARN);
	config_free(&c);

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "-vvv", "--verbose"), 0, "%s", err);
	cr_expect_eq(c.log_level, LOG_DEBUG);
	config_free(&c);

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "--log-level=WARN"), 0, "%s", err);
	cr_expect_eq(c.log_level, LOG_WARN);
	config_free(&c);
}

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
	char err[256], out[8192];
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

Test(config, urls)
{
	struct agent_config c;
	char err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(config_set(&c, "push-profefe", "http://h", err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c.push_profefe, "http://h");
	cr_expect_eq(config_set(&c, "push-profefe", "HTTPS://h.example.com:443/", err, sizeof(err)),
		     0, "%s", err);
	cr_expect_str_eq(c.push_profefe, "HTTPS://h.example.com:443");
	cr_expect_eq(config_set(&c, "push-profefe", "http://[::1]:10100/p/", err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(c.push_profefe, "http://[::1]:10100/p");
	cr_expect_eq(config_set(&c, "push-pyroscope", "http://u:p@h:4040", err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(c.push_pyroscope, "http://u:p@h:4040");
	/* "" turns a remote off */
	cr_expect_eq(config_set(&c, "push-pyroscope", "", err, sizeof(err)), 0, "%s", err);
	cr_expect_null(c.push_pyroscope);
	cr_expect_eq(config_set(&c, "pyroscope-user", "", err, sizeof(err)), 0, "%s", err);
	cr_expect_null(c.pyroscope_user);
	config_free(&c);
}

Test(config, cgroups)
{
	const char *root = cgroup2_root();
	struct agent_config c;
	char err[1024], full[PATH_MAX + 32], expected[2 * PATH_MAX + 256];

	cr_assert_not_null(root, "no cgroup v2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified");
	cr_assert_eq(config_defaults(&c), 0);
	/* Relative to the cgroup root and absolute, with a trailing slash. */
	cr_assert_eq(config_set(&c, "cgroup", "/", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.ncgroups, 1);
	cr_expect_str_eq(c.cgroups[0], root);
	snprintf(full, sizeof(full), "%s/", root);
	cr_assert_eq(config_set(&c, "cgroup", full, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c.cgroups[0], root);
	/* "" empties the list. */
	cr_assert_eq(config_set(&c, "cgroup", "", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.ncgroups, 0);

	/* A cgroup that does not exist, relative and absolute. */
	snprintf(expected, sizeof(expected),
		 "cgroup: cgroup '/no-such.slice/x.service' does not exist "
		 "(%s/no-such.slice/x.service: No such file or directory)",
		 root);
	cr_expect_eq(config_set(&c, "cgroup", "/,/no-such.slice/x.service", err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, expected);
	cr_expect_eq(c.ncgroups, 0); /* unchanged on error */
	cr_expect_eq(config_set(&c, "cgroup", "/sys/fs/cgroup/no-such.slice", err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "cgroup: cgroup '/sys/fs/cgroup/no-such.slice' does not exist "
			      "(/sys/fs/cgroup/no-such.slice: No such file or directory)");
	/* Escaping /sys/fs/cgroup. */
	cr_expect_eq(config_set(&c, "cgroup", "/sys/fs/cgroup/../../../etc", err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "cgroup: cgroup '/sys/fs/cgroup/../../../etc' is not under "
			      "/sys/fs/cgroup (/etc)");
	/* A file, not a directory. */
	snprintf(full, sizeof(full), "%s/cgroup.procs", root);
	snprintf(expected, sizeof(expected), "cgroup: cgroup '%s' is not a directory (%s)", full,
		 full);
	cr_expect_eq(config_set(&c, "cgroup", full, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, expected);
	/* A cgroup v1 hierarchy on a hybrid host. */
	if (strcmp(root, "/sys/fs/cgroup")) {
		cr_expect_eq(config_set(&c, "cgroup", "/sys/fs/cgroup", err, sizeof(err)), -EINVAL);
		cr_expect_str_eq(err, "cgroup: cgroup '/sys/fs/cgroup' is not a cgroup v2 "
				      "directory (/sys/fs/cgroup)");
	}
	config_free(&c);

	/* From the file, with the path:line prefix. */
	{
		char path[64];

		write_tmp(path, sizeof(path), "cgroup = /no-such.slice\n");
		cr_assert_eq(config_defaults(&c), 0);
		cr_expect_eq(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
		snprintf(expected, sizeof(expected),
			 "%s:1: cgroup: cgroup '/no-such.slice' does not exist", path);
		cr_expect(!strncmp(err, expected, strlen(expected)), "%s", err);
		config_free(&c);
		unlink(path);
	}
}

Test(config, empty_and_replaced_lists)
{
	struct agent_config c;
	char err[256];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(parse(&c, err, "--comm", "", "-p", "1", "-p", "2,3"), 0, "%s", err);
	cr_expect_eq(c.ncomms, 0);
	cr_assert_eq(c.npids, 2);
	cr_expect_eq(c.pids[0], 2);
	cr_expect_eq(c.pids[1], 3);
	cr_expect_eq(parse(&c, err, "--pid="), 0, "%s", err);
	cr_expect_eq(c.npids, 0);
	cr_expect_null(c.pids);
	cr_expect_eq(parse(&c, err, "--comm", "a,b,c,d,e,f,g,h"), 0, "%s", err);
	cr_expect_eq(c.ncomms, 8);
	config_free(&c);
}
