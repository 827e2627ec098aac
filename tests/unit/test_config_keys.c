// SPDX-License-Identifier: BSD-2-Clause
/* The agent's configuration read right: defaults, every key from the file
 * and from flags, the file's syntax, lists, URLs, cgroups. */
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

/* memory-budget: 20M by default, a size, 0 for none; nothing below 0. */
Test(config, memory_budget)
{
	struct agent_config c;
	char path[64], err[512];

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_eq(c.memory_budget, 20LL << 20);
	config_free(&c);

	write_tmp(path, sizeof(path), "memory-budget = 64M\n");
	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.memory_budget, 64LL << 20);
	config_free(&c);
	unlink(path);

	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(parse(&c, err, "--memory-budget", "0"), 0, "%s", err);
	cr_expect_eq(c.memory_budget, 0);
	config_free(&c);

	cr_assert_eq(config_defaults(&c), 0);
	cr_expect_neq(parse(&c, err, "--memory-budget", "-1"), 0);
	cr_expect(strstr(err, "--memory-budget must be a size"), "%s", err);
	config_free(&c);
}
