// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof ls` and `ebprof merge` as commands of the real binary
 * (build/ebprof) on a store of real pprof files (tests/lib/store_fixture.h):
 * a label selection, a merge that go tool pprof reads without warnings and
 * filters by the added labels, and bad input (one line, exit status 2).
 * Every profile here (the store's and the merges') is read back by go
 * tool pprof (gp_read, testlib.h), and what is asserted about a merge is
 * what Go reads.
 * The command functions themselves are covered in
 * tests/unit/test_store_cmds.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/store_fixture.h"
#include "../lib/testlib.h"

static char *tmp;
static char dir[512];

static void setup(void)
{
	tmp = tl_tmpdir("storecli");
	cr_assert_not_null(tmp);
	snprintf(dir, sizeof(dir), "%s/store", tmp);
	cr_assert_eq(sf_build(dir), 0);
}

static void teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
	free(tmp);
}

TestSuite(store_cli, .init = setup, .fini = teardown, .timeout = 120);

/* Run `ebprof ARGS` (a shell fragment) with TZ=UTC; stdout only unless
 * the fragment redirects. Returns the exit status. */
static int ebprof(const char *args, char **out)
{
	char *cmd;
	int rc;

	cr_assert_geq(asprintf(&cmd, "TZ=UTC '%s' %s", tl_path("ebprof"), args), 0);
	rc = tl_sh(cmd, out);
	free(cmd);
	return rc;
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

Test(store_cli, ls_by_label)
{
	char args[1024], *out = NULL;
	int rc;

	snprintf(args, sizeof(args), "ls --dir '%s' --label backend_type=checkpointer", dir);
	rc = ebprof(args, &out);
	cr_assert_eq(rc, 0, "rc %d: %s", rc, out);
	cr_assert_eq(lines(out), 2, "%s", out);
	cr_assert(strstr(out, "2023-11-14T22:13:20+00:00    60s      100  postgres        "
			      "checkpointer"),
		  "%s", out);
	cr_assert(strstr(out, "/db1/2023-11-14/221420-postgres-100-checkpointer.pb.gz\n"), "%s",
		  out);
	cr_assert_null(strstr(out, "client backend"), "%s", out);
	free(out);

	snprintf(args, sizeof(args), "ls --dir '%s' --service db2 --json", dir);
	rc = ebprof(args, &out);
	cr_assert_eq(rc, 0, "rc %d: %s", rc, out);
	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert(strstr(out, "\"pid\":400"), "%s", out);
	free(out);
}

/* The store's own files, as the fixture wrote them, read back by Go. */
Test(store_cli, store_profiles_read_by_go_pprof)
{
	char cmd[700], *out = NULL, *save = NULL;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "find '%s' -name '*.pb.gz' | sort", dir);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	for (char *f = strtok_r(out, "\n", &save); f; f = strtok_r(NULL, "\n", &save), n++) {
		struct gp_profile *p = gp_read(f);
		unsigned pid = 0;

		cr_assert_not_null(p, "go tool pprof cannot read %s", f);
		sscanf(strrchr(f, '/'), "/%*6d-postgres-%u", &pid);
		cr_expect_eq(gp_total(p, pid, 0), SF_SAMPLES, "%s", f);
		cr_expect_eq(gp_total(p, -1, 1), SF_SAMPLES * SF_PERIOD, "%s", f);
		cr_expect_eq(p->period, SF_PERIOD);
		gp_free(p);
	}
	cr_expect_eq(n, SF_PROFILES);
	free(out);
}

/* Every sample of a merge: labels and stack as the fixture made them. */
static void expect_merged_samples(const struct gp_profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t pid = gp_label_num(s, "pid");

		cr_expect(pid == 100 || pid == 200 || pid == 201 || pid == 300 || pid == 400,
			  "sample %zu: pid %lld", i, (long long)pid);
		cr_expect_eq(gp_label_num(s, "tid"), pid);
		cr_expect_str_eq(gp_label(s, "comm"), "postgres");
		cr_expect_not_null(gp_label(s, "backend_type"));
		cr_expect_eq(s->nframes, 2);
		cr_expect_str_eq(s->frames[s->nframes - 1].fn, "PostmasterMain");
		cr_expect_str_eq(s->frames[0].mapping->file, "/usr/lib/postgresql/15/bin/postgres");
		cr_expect_str_eq(s->frames[0].mapping->build_id,
				 "0123456789abcdef0123456789abcdef01234567");
	}
}

Test(store_cli, merge_read_by_go_pprof)
{
	char args[2048], path[600], cmd[1200], *out = NULL;
	struct gp_profile *p;
	int64_t pids[] = { 200, 201, 400 };
	int rc;

	snprintf(path, sizeof(path), "%s/client.pb.gz", tmp);
	snprintf(args, sizeof(args),
		 "merge --dir '%s' --label 'backend_type=client backend' --from '2023-11-14 22:00' "
		 "-o '%s' 2>&1",
		 dir, path);
	rc = ebprof(args, &out);
	cr_assert_eq(rc, 0, "rc %d: %s", rc, out);
	cr_assert(strstr(out, "merged 3 profiles"), "%s", out);
	free(out);
	p = gp_read(path);
	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	expect_merged_samples(p);
	cr_expect_eq(gp_total(p, -1, 0), 3 * SF_SAMPLES);
	cr_expect_eq(gp_total(p, -1, 1), 3 * SF_SAMPLES * SF_PERIOD);
	for (size_t i = 0; i < 3; i++)
		cr_expect_eq(gp_total(p, pids[i], 0), SF_SAMPLES, "pid %lld", (long long)pids[i]);
	cr_expect_eq(gp_with(p, "exec_simple_query", -1, 0), 3 * SF_SAMPLES);
	cr_expect_eq(gp_with(p, "CheckpointerMain", -1, 0), 0);
	for (size_t i = 0; i < p->nsamples; i++)
		cr_expect_str_eq(gp_label(&p->samples[i], "backend_type"), "client backend");
	gp_free(p);

	snprintf(path, sizeof(path), "%s/all.pb.gz", tmp);
	snprintf(args, sizeof(args), "merge --dir '%s' -o '%s' 2>&1", dir, path);
	rc = ebprof(args, &out);
	cr_assert_eq(rc, 0, "rc %d: %s", rc, out);
	free(out);
	p = gp_read(path);
	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	expect_merged_samples(p);
	cr_expect_eq(gp_total(p, -1, 0), SF_PROFILES * SF_SAMPLES);
	cr_expect_eq(gp_with(p, "CheckpointerMain", 100, 0), 2 * SF_SAMPLES);
	cr_expect_eq(gp_with(p, "do_autovacuum", 300, 0), SF_SAMPLES);
	gp_free(p);
	snprintf(cmd, sizeof(cmd),
		 "HOME=/tmp GOCACHE=/tmp/ebprof-gocache go tool pprof -top "
		 "-tagfocus=backend_type=checkpointer '%s' 2>&1",
		 path);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "CheckpointerMain"), "%s", out);
	cr_assert_null(strstr(out, "exec_simple_query"), "%s", out);
	free(out);
}

Test(store_cli, bad_input_exits_2)
{
	static const char *const cases[][2] = {
		{ "ls --dir '%s' --from yesterday", "bad time 'yesterday'" },
		{ "ls --dir '%s' --label backend_type", "bad label" },
		{ "ls --dir '%s' --frobnicate", "unknown option '--frobnicate'" },
		{ "ls --dir '%s' --label backend_type=nope", "no profiles match" },
		{ "merge --dir '%s' --to 2001-01-01 -o /tmp/ebprof-never.pb.gz",
		  "no profiles match" },
		{ "merge --dir '%s'", "merge needs -o" },
	};
	char fmt[512], args[1024], *out = NULL;
	int rc;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(fmt, sizeof(fmt), "%s 2>&1 >/dev/null", cases[i][0]);
		snprintf(args, sizeof(args), fmt, dir);
		rc = ebprof(args, &out);
		cr_assert_eq(rc, 2, "%s: rc %d: %s", args, rc, out);
		cr_assert_eq(lines(out), 1, "%s: %s", args, out);
		cr_assert(strstr(out, cases[i][1]), "%s: %s", args, out);
		free(out);
	}
}
