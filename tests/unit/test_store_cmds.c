// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof ls` and `ebprof merge` through cmd_ls() / cmd_merge(), each run
 * in a forked child with stdout and stderr captured, on a store of real
 * pprof files (tests/lib/store_fixture.h): selection by label, pid,
 * service and time, --json, merged profiles checked by decoding them and
 * by go tool pprof (-raw without warnings, -tagfocus on the added labels),
 * corrupt and mismatched files, and bad input (one line, exit 2).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/args.h"
#include "cli/commands.h"
#include "sinks/store/store.h"
#include "../lib/store_fixture.h"
#include "../lib/testlib.h"

#define S 1000000000LL

static char *tmp;
static char dir[512];

static void setup(void)
{
	tmp = tl_tmpdir("storecmd");
	cr_assert_not_null(tmp);
	setenv("TZ", "UTC", 1);
	tzset();
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

TestSuite(cmds, .init = setup, .fini = teardown, .timeout = 120);

struct run {
	int rc;
	char *out, *err;
	size_t outlen;
};

/* Run fn(args) in a child; args[0] is the command name, NULL-terminated. */
static struct run run(int (*fn)(int, char **), const char *const *args)
{
	char *argv[32];
	struct run r = { 0 };
	int argc = 0;

	while (args[argc] && argc < 31) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	r.rc = tl_run_captured(fn, argc, argv, tmp, &r.out, &r.outlen, &r.err);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The n-th line (0-based) of s, copied into buf. */
static const char *line(const char *s, size_t n, char *buf, size_t len)
{
	for (; n && s; n--) {
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	cr_assert_not_null(s);
	snprintf(buf, len, "%.*s", (int)strcspn(s, "\n"), s);
	return buf;
}

/* pid column (3rd) of an ls line. */
static unsigned pid_of(const char *l)
{
	char start[64], dur[32];
	unsigned pid = 0;

	cr_assert_eq(sscanf(l, "%63s %31s %u", start, dur, &pid), 3, "%s", l);
	return pid;
}

static void expect_pids(const struct run *r, const unsigned *pids, size_t n)
{
	char buf[1024];

	cr_assert_eq(r->rc, 0, "rc %d, stderr: %s", r->rc, r->err);
	cr_assert_eq(lines(r->out), n, "stdout:\n%s", r->out);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(pid_of(line(r->out, i, buf, sizeof(buf))), pids[i], "line %zu: %s", i,
			     buf);
}

/* ---- ls ---------------------------------------------------------------------- */

Test(cmds, ls_everything)
{
	const char *args[] = { "ls", "--dir", dir, NULL };
	const unsigned pids[] = { 100, 200, 400, 100, 201, 300 };
	struct run r = run(cmd_ls, args);
	char buf[1024], want[1024];

	expect_pids(&r, pids, 6);
	line(r.out, 0, buf, sizeof(buf));
	cr_assert(strstr(buf, "2023-11-14T22:13:20+00:00"), "%s", buf);
	cr_assert(strstr(buf, " 60s "), "%s", buf);
	cr_assert(strstr(buf, " postgres "), "%s", buf);
	cr_assert(strstr(buf, " checkpointer "), "%s", buf);
	snprintf(want, sizeof(want), " %s/db1/2023-11-14/221320-postgres-100-checkpointer.pb.gz",
		 dir);
	cr_assert(strstr(buf, want), "%s", buf);
	cr_assert(strstr(line(r.out, 1, buf, sizeof(buf)), " client backend "), "%s", buf);
	cr_assert_str_eq(r.err, "");
	run_free(&r);
}

Test(cmds, ls_selections)
{
	const char *a1[] = { "ls", "--dir", dir, "--label", "backend_type=checkpointer", NULL };
	const char *a2[] = { "ls",	  "--dir", dir, "--label", "backend_type=client backend",
			     "--service", "db1",   NULL };
	const char *a3[] = { "ls", "--dir", dir, "--pid", "200,300", "-p", "400", NULL };
	const char *a4[] = {
		"ls", "--dir", dir, "--from", "2023-11-14T22:14:30Z", "--to", "2023-11-14 22:15",
		NULL
	};
	const char *a5[] = { "ls",	"--dir",       dir, "--label", "pg_user=alice",
			     "--label", "service=db2", NULL };
	const char *a6[] = { "ls", "--dir", dir, "--from", "@1700000100", NULL };
	const unsigned p1[] = { 100, 100 }, p2[] = { 200, 201 }, p3[] = { 200, 400, 300 },
		       p4[] = { 100, 201 }, p5[] = { 400 }, p6[] = { 100, 201, 300 };
	struct run r;

	r = run(cmd_ls, a1);
	expect_pids(&r, p1, 2);
	run_free(&r);
	r = run(cmd_ls, a2);
	expect_pids(&r, p2, 2);
	run_free(&r);
	r = run(cmd_ls, a3);
	expect_pids(&r, p3, 3);
	run_free(&r);
	r = run(cmd_ls, a4);
	expect_pids(&r, p4, 2);
	run_free(&r);
	r = run(cmd_ls, a5);
	expect_pids(&r, p5, 1);
	run_free(&r);
	r = run(cmd_ls, a6);
	expect_pids(&r, p6, 3);
	run_free(&r);
}

Test(cmds, ls_json)
{
	const char *args[] = { "ls", "--dir", dir, "--json", "--pid", "201", NULL };
	struct run r = run(cmd_ls, args);
	json_t *o, *labels;

	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_eq(lines(r.out), 1);
	o = json_loads(r.out, 0, NULL);
	cr_assert(json_is_object(o), "%s", r.out);
	cr_assert_eq(json_integer_value(json_object_get(o, "pid")), 201);
	cr_assert_eq(json_integer_value(json_object_get(o, "start_ns")), (SF_T0 + 60) * S);
	cr_assert_eq(json_integer_value(json_object_get(o, "end_ns")), (SF_T0 + 120) * S);
	cr_assert_gt(json_integer_value(json_object_get(o, "size")), 100);
	cr_assert_str_eq(json_string_value(json_object_get(o, "start")),
			 "2023-11-14T22:14:20+00:00");
	cr_assert(
		strstr(json_string_value(json_object_get(o, "path")), "-201-client_backend.pb.gz"));
	labels = json_object_get(o, "labels");
	cr_assert_str_eq(json_string_value(json_object_get(labels, "pg_user")), "bob");
	cr_assert_str_eq(json_string_value(json_object_get(labels, "backend_type")),
			 "client backend");
	json_decref(o);
	run_free(&r);
}

/* ---- merge ------------------------------------------------------------------- */

static const char *sample_str(const struct profile *p, const struct pf_sample *s, const char *k)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(profile_string(p, s->labels[i].key), k) && s->labels[i].str)
			return profile_string(p, s->labels[i].str);
	return NULL;
}

Test(cmds, merge_client_backends)
{
	char out[600], *text = NULL;
	const char *args[] = { "merge", "--dir", dir, "--label", "backend_type=client backend",
			       "-o",	out,	 NULL };
	struct profile *p;
	struct run r;
	bool seen[3] = { false };

	snprintf(out, sizeof(out), "%s/merged.pb.gz", tmp);
	r = run(cmd_merge, args);
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_eq(lines(r.err), 1, "%s", r.err);
	cr_assert(strstr(r.err, "merged 3 profiles"), "%s", r.err);
	run_free(&r);

	p = tl_load_profile(out);
	cr_assert_not_null(p);
	cr_assert_eq(p->time_nanos, SF_T0 * S);
	cr_assert_eq(p->duration_nanos, 120 * S);
	cr_assert_eq(p->period, SF_PERIOD);
	cr_assert_eq(p->nsample_types, 2);
	cr_assert_eq(p->nmappings, 1);
	cr_assert_eq(p->nsamples, 3);
	cr_assert_eq(profile_total(p, 0), 3 * SF_SAMPLES);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		int64_t pid = tl_label_num(p, s, "pid");

		cr_assert_str_eq(sample_str(p, s, "comm"), "postgres");
		cr_assert_str_eq(sample_str(p, s, "backend_type"), "client backend");
		cr_assert_str_eq(sample_str(p, s, "thread_name"), "postgres");
		cr_assert(pid == 200 || pid == 201 || pid == 400, "pid %lld", (long long)pid);
		seen[pid == 200 ? 0 : pid == 201 ? 1 : 2] = true;
		cr_assert_eq(s->values[0], SF_SAMPLES);
	}
	cr_assert(seen[0] && seen[1] && seen[2]);
	cr_assert_eq(tl_samples_with(p, "exec_simple_query", -1, 0), 3 * SF_SAMPLES);
	profile_free(p);
	cr_assert_eq(tl_go_pprof_check(out, &text), 0);
	cr_assert(strstr(text, "exec_simple_query"), "%s", text);
	free(text);
}

Test(cmds, merge_everything_tagfocus)
{
	char out[600], cmd[1200], *text = NULL;
	const char *args[] = { "merge", "--dir", dir, "--output", out, NULL };
	struct profile *p;
	struct run r;

	snprintf(out, sizeof(out), "%s/all.pb.gz", tmp);
	r = run(cmd_merge, args);
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert(strstr(r.err, "merged 6 profiles (2023-11-14T22:13:20+00:00 to "
				"2023-11-14T22:16:20+00:00)"),
		  "%s", r.err);
	run_free(&r);
	p = tl_load_profile(out);
	cr_assert_not_null(p);
	cr_assert_eq(profile_total(p, 0), 6 * SF_SAMPLES);
	cr_assert_eq(tl_samples_with(p, "CheckpointerMain", 100, 0), 2 * SF_SAMPLES,
		     "pid 100's two intervals summed");
	profile_free(p);
	cr_assert_eq(tl_go_pprof_check(out, NULL), 0);

	snprintf(cmd, sizeof(cmd),
		 "HOME=/tmp GOCACHE=/tmp/ebprof-gocache go tool pprof -top "
		 "-tagfocus=backend_type=checkpointer '%s' 2>&1",
		 out);
	cr_assert_eq(tl_sh(cmd, &text), 0, "%s", text);
	cr_assert(strstr(text, "CheckpointerMain"), "%s", text);
	cr_assert_null(strstr(text, "exec_simple_query"), "%s", text);
	cr_assert_null(strstr(text, "do_autovacuum"), "%s", text);
	free(text);
}

Test(cmds, merge_to_stdout_and_folded)
{
	const char *a1[] = { "merge", "--dir", dir, "-p", "300", "-o", "-", NULL };
	const char *a2[] = { "merge", "--dir", dir,	   "-p",     "100",
			     "-o",    "-",     "--format", "folded", NULL };
	struct run r = run(cmd_merge, a1);

	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_gt(r.outlen, 20);
	cr_assert_eq((uint8_t)r.out[0], 0x1f);
	cr_assert_eq((uint8_t)r.out[1], 0x8b);
	cr_assert(strstr(r.err, "into stdout"), "%s", r.err);
	run_free(&r);
	r = run(cmd_merge, a2);
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "postgres;PostmasterMain;CheckpointerMain 10\n");
	run_free(&r);
}

Test(cmds, merge_skips_corrupt_profiles)
{
	struct store_opts o = { .dir = dir };
	static const uint8_t junk[] = "this is not a profile";
	char bad[1024], out[600];
	const char *args[] = { "merge", "--dir", dir, "--label", "backend_type=client backend",
			       "-o",	out,	 NULL };
	struct store *s;
	struct profile *p;
	struct run r;

	cr_assert_eq(store_open(&o, &s), 0);
	cr_assert_eq(sf_put(s, "db1", 500, "client backend", "eve", SF_T0 + 30, junk, sizeof(junk),
			    bad, sizeof(bad)),
		     0);
	store_close(s);
	snprintf(out, sizeof(out), "%s/merged.pb.gz", tmp);
	r = run(cmd_merge, args);
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert(strstr(r.err, "warning: skipping"), "%s", r.err);
	cr_assert(strstr(r.err, bad), "names the file: %s", r.err);
	cr_assert(strstr(r.err, "merged 3 profiles"), "%s", r.err);
	cr_assert(strstr(r.err, "skipped 1 unreadable"), "%s", r.err);
	run_free(&r);
	p = tl_load_profile(out);
	cr_assert_not_null(p);
	cr_assert_eq(profile_total(p, 0), 3 * SF_SAMPLES);
	profile_free(p);
}

Test(cmds, merge_refuses_other_sample_types)
{
	struct store_opts o = { .dir = dir };
	char other[1024], out[600];
	const char *args[] = { "merge", "--dir", dir, "-o", out, NULL };
	struct store *s;
	struct run r;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(sf_profile(600, "postgres", "palloc", SF_T0 + 200, 1, &buf, &len), 0);
	cr_assert_eq(store_open(&o, &s), 0);
	cr_assert_eq(sf_put(s, "db1", 600, "client backend", "eve", SF_T0 + 200, buf, len, other,
			    sizeof(other)),
		     0);
	store_close(s);
	free(buf);
	snprintf(out, sizeof(out), "%s/merged.pb.gz", tmp);
	r = run(cmd_merge, args);
	cr_assert_eq(r.rc, EXIT_USAGE, "%s", r.err);
	cr_assert_eq(lines(r.err), 1, "%s", r.err);
	cr_assert(strstr(r.err, other), "names the file: %s", r.err);
	cr_assert(strstr(r.err, "alloc_space/bytes"), "%s", r.err);
	cr_assert_eq(access(out, F_OK), -1, "no output written");
	run_free(&r);
}

/* ---- bad input ------------------------------------------------------------------ */

static void expect_usage_error(int (*fn)(int, char **), const char *const *args, const char *needle)
{
	struct run r = run(fn, args);

	cr_assert_eq(r.rc, EXIT_USAGE, "%s %s: rc %d, stderr %s", args[0], args[3], r.rc, r.err);
	cr_assert_eq(lines(r.err), 1, "one line: %s", r.err);
	cr_assert(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
	cr_assert_str_eq(r.out, "");
	run_free(&r);
}

Test(cmds, bad_input)
{
	char out[600];
	const char *b1[] = { "ls", "--dir", dir, "--from", "yesterday", NULL };
	const char *b2[] = { "ls", "--dir", dir, "--label", "backend_type", NULL };
	const char *b3[] = { "ls", "--dir", dir, "--bogus", NULL };
	const char *b4[] = { "ls", "--dir", dir, "--label", "backend_type=nope", NULL };
	const char *b5[] = { "ls", "--dir", "/nonexistent/ebprof", NULL };
	const char *b6[] = { "ls", "--dir", dir, "--from", "-1h", "--to", "-2h", NULL };
	const char *b7[] = { "ls", "--dir", dir, "--pid", "x", NULL };
	const char *b8[] = { "ls", "--dir", dir, "extra", NULL };
	const char *b9[] = { "ls", "--dir", dir, "--label", "Bad-Key=1", NULL };
	const char *m1[] = { "merge", "--dir", dir, NULL };
	const char *m2[] = { "merge", "--dir", dir, "-o", out, "--format", "svg", NULL };
	const char *m3[] = { "merge", "--dir", dir, "--to", "2001-01-01", "-o", out, NULL };
	const char *m4[] = { "merge", "--dir", dir, "-o", "/nonexistent/dir/x.pb.gz", NULL };
	const char *m5[] = { "merge", "--dir", dir, "-o", out, "--from", "2023-11-14T25:00", NULL };
	const char *t1[] = { "ls", "--dir", dir, "--type", "wall", NULL };
	const char *t2[] = { "ls", "--dir", dir, "--type", "cpu", "--type", "offcpu", NULL };
	const char *t3[] = { "merge", "--dir", dir, "--type", "offcpu", "-o", out, NULL };

	snprintf(out, sizeof(out), "%s/out.pb.gz", tmp);
	expect_usage_error(cmd_ls, b1, "bad time 'yesterday'");
	expect_usage_error(cmd_ls, b2, "bad label 'backend_type'");
	expect_usage_error(cmd_ls, b3, "unknown option '--bogus'");
	expect_usage_error(cmd_ls, b4, "no profiles match");
	expect_usage_error(cmd_ls, b5, "no profile store at /nonexistent/ebprof");
	expect_usage_error(cmd_ls, b6, "is not before");
	expect_usage_error(cmd_ls, b7, "x");
	expect_usage_error(cmd_ls, b8, "unexpected argument 'extra'");
	expect_usage_error(cmd_ls, b9, "bad label");
	expect_usage_error(cmd_merge, m1, "merge needs -o");
	expect_usage_error(cmd_merge, m2, "unknown format 'svg'");
	expect_usage_error(cmd_merge, m3, "no profiles match");
	expect_usage_error(cmd_merge, m4, "/nonexistent/dir");
	expect_usage_error(cmd_merge, m5, "bad time");
	expect_usage_error(cmd_ls, t1, "unknown type 'wall': use cpu, offcpu, faults or memory");
	expect_usage_error(cmd_ls, t2, "--type given twice (cpu, offcpu)");
	expect_usage_error(cmd_merge, t3, "no profiles match"); /* the fixture has CPU only */
	cr_assert_eq(access(out, F_OK), -1);
}

Test(cmds, help)
{
	const char *a1[] = { "ls", "--help", NULL };
	const char *a2[] = { "merge", "-h", NULL };
	struct run r = run(cmd_ls, a1);

	cr_assert_eq(r.rc, 0);
	cr_assert(strstr(r.out, "Usage: ebprof ls"));
	cr_assert(strstr(r.out, "--label KEY=VALUE"));
	run_free(&r);
	r = run(cmd_merge, a2);
	cr_assert_eq(r.rc, 0);
	cr_assert(strstr(r.out, "Usage: ebprof merge"));
	run_free(&r);
}
