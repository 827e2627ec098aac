// SPDX-License-Identifier: BSD-2-Clause
/*
 * Names for stripped binaries, end to end (root, BPF): a stripped fixture
 * (work_split_stripped, its debug file only in <BUILD>/fixtures/remote)
 * recorded without debug information (its functions named after their
 * start, profile/unnamed.h) and named afterwards by `ebprof symbolize`; recorded with a debuginfod
 * server (Debian's, started here); and the agent, which writes its profiles on time while a server
 * does not answer and names later profiles once the debug file is there. Every profile is read back
 * by go tool pprof.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_env.h"
#include "debuginfod_env.h"
#include "profile/unnamed.h"
#include "record_env.h"
#include "testlib.h"

#define STRIPPED "fixtures/work_split_stripped"

/* Record the stripped fixture burning secs; the log in *log. */
static void record_stripped(const char *out, const char *secs, bool offline, char **log)
{
	struct tl_proc fx;
	struct rec_run rec;
	char pidarg[16];
	pid_t pid = rec_start_work_split(&fx, tl_path(STRIPPED), secs);

	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec,
			 offline ? (char *[]){ "-F", "99", "-p", pidarg, "--offline", "-o",
					       (char *)out, NULL }
				 : (char *[]){ "-F", "99", "-p", pidarg, "-o", (char *)out, NULL });
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	*log = tl_log_text(&rec.log);
	tl_log_free(&rec.log);
}

/* burn_three and burn_one named (burn_three the larger: not swapped) and
 * every sample kept: what a symbolized work_split profile shows. */
static void expect_named(const struct gp_profile *p, int64_t total)
{
	int64_t three = gp_with(p, "burn_three", -1, 0), one = gp_with(p, "burn_one", -1, 0);

	cr_expect_eq(gp_total(p, -1, 0), total, "samples changed");
	cr_assert_gt(three + one, 0, "burn_three and burn_one are not named");
	cr_expect_geq(three + one, total * 9 / 10, "%ld of %ld samples named", (long)(three + one),
		      (long)total);
	/* the split itself is test_record's; here: not swapped */
	cr_expect(three > one, "burn_three %ld, burn_one %ld", (long)three, (long)one);
	cr_expect_gt(gp_with(p, "main", -1, 0), total * 9 / 10, "main is not named");
}

/* A frame of the stripped fixture named after its function's start
 * ("work_split_stripped+0x...", profile/unnamed.h). */
static bool function_start(const struct gp_frame *f)
{
	return f->fn && unnamed_name(f->fn) && !strncmp(f->fn, "work_split_stripped+0x", 22);
}

static char *symbolize(const char *args)
{
	char cmd[2048], *out = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s symbolize %s 2>&1", tl_path("ebprof"), args);
	rc = tl_sh(cmd, &out);
	cr_assert_eq(rc, 0, "%s: exit %d\n%s", cmd, rc, out ? out : "");
	return out;
}

Test(symbolize, stored_profile_gets_names_later, .timeout = 120)
{
	char *dir = tl_tmpdir("symbolize"), rec[512], named[512], viadi[512], args[2048], id[160];
	char cmd[2048], *log, *out;
	struct dbgd_server server;
	struct gp_profile *before, *after;
	int64_t total;

	rec_require_root();
	snprintf(rec, sizeof(rec), "%s/rec.pb.gz", dir);
	record_stripped(rec, "3", true, &log);
	cr_expect(strstr(log, "by dynsym: ") && strstr(log, "work_split_stripped"),
		  "no per-binary report in the summary:\n%s", log);
	before = rec_read_back(rec);
	total = gp_total(before, -1, 0);
	cr_assert_gt(total, 50);
	cr_expect_eq(gp_with(before, "burn_three", -1, 0), 0, "named without debug info?");
	/* its functions by their starts, until a debug file names them */
	cr_expect_geq(gp_with_frame(before, function_start), total * 9 / 10,
		      "the stripped functions are not named after their start");

	/* 1. a debug directory by build-id */
	cr_assert_eq(dbgd_build_id(tl_path(STRIPPED), id), 0);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/debug/.build-id/%.2s && cp %s %s/debug/.build-id/%.2s/%s.debug", dir,
		 id, tl_path("fixtures/remote/work_split_stripped.debug"), dir, id, id + 2);
	cr_assert_eq(system(cmd), 0);
	snprintf(named, sizeof(named), "%s/named.pb.gz", dir);
	snprintf(args, sizeof(args), "--offline --debug-dir %s/debug %s -o %s", dir, rec, named);
	out = symbolize(args);
	cr_expect(strstr(out, "named "), "%s", out);
	free(out);
	after = rec_read_back(named);
	expect_named(after, total);
	cr_expect_eq(gp_with_frame(after, function_start), 0,
		     "function starts left after symbolize");
	rec_expect_sample_labels(after);
	gp_free(after);

	/* 2. debuginfod */
	cr_assert_eq(dbgd_start(&server, tl_path("fixtures/remote"), id), 0);
	snprintf(viadi, sizeof(viadi), "%s/viadi.pb.gz", dir);
	snprintf(args, sizeof(args), "--debuginfod-urls %s %s -o %s", server.url, rec, viadi);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
	out = symbolize(args);
	free(out);
	dbgd_stop(&server);
	after = rec_read_back(viadi);
	expect_named(after, total);
	gp_free(after);
	gp_free(before);
	free(log);
	free(dir);
}

Test(symbolize, bad_input_is_a_clear_error, .timeout = 60)
{
	char *dir = tl_tmpdir("symbolize-bad"), cmd[2048], *out = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s symbolize /nonexistent.pb.gz -o %s/x.pb.gz 2>&1",
		 tl_path("ebprof"), dir);
	rc = tl_sh(cmd, &out);
	cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "/nonexistent.pb.gz"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s symbolize /etc/passwd -o %s/x.pb.gz 2>&1; ls %s",
		 tl_path("ebprof"), dir, dir);
	rc = tl_sh(cmd, &out);
	cr_expect(strstr(out, "not a valid pprof"), "%s", out);
	cr_expect_null(strstr(out, "x.pb.gz\n"), "a file was written: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s symbolize --debuginfod-timeout 0 /etc/passwd -o %s/x 2>&1",
		 tl_path("ebprof"), dir);
	rc = tl_sh(cmd, &out);
	cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "--debuginfod-timeout"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s symbolize /etc/passwd 2>&1", tl_path("ebprof"));
	rc = tl_sh(cmd, &out);
	cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "needs -o"), "%s", out);
	free(out);
	free(dir);
}

/* `ebprof record` with $DEBUGINFOD_URLS: the debug file comes while it
 * samples, and the profile has names. */
Test(symbolize, record_fetches_from_debuginfod, .timeout = 120)
{
	char *dir = tl_tmpdir("record-dbgd"), out[512], id[160], *log;
	struct dbgd_server server;
	struct gp_profile *p;

	rec_require_root();
	cr_assert_eq(dbgd_build_id(tl_path(STRIPPED), id), 0);
	cr_assert_eq(dbgd_start(&server, tl_path("fixtures/remote"), id), 0);
	setenv("DEBUGINFOD_URLS", server.url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
	snprintf(out, sizeof(out), "%s/rec.pb.gz", dir);
	record_stripped(out, "3", false, &log);
	unsetenv("DEBUGINFOD_URLS");
	dbgd_stop(&server);
	cr_expect(strstr(log, "by debuginfod: "), "the summary does not say debuginfod:\n%s", log);
	p = rec_read_back(out);
	expect_named(p, gp_total(p, -1, 0));
	gp_free(p);
	free(log);
	free(dir);
}

/* A server that takes connections and never answers. */
static int blackhole(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 16), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Count the profiles of the store whose samples name fn. */
static size_t profiles_naming(const struct ag_stored *st, const char *fn, size_t *with_samples)
{
	size_t n = 0;

	*with_samples = 0;
	for (size_t i = 0; i < st->n; i++) {
		if (gp_total(st->gp[i], -1, 0) <= 0)
			continue;
		(*with_samples)++;
		n += gp_with(st->gp[i], fn, -1, 0) > 0;
	}
	return n;
}

Test(symbolize, agent_writes_on_time_while_debuginfod_hangs, .timeout = 120)
{
	char *dir = tl_tmpdir("agent-dbgd"), store[512], url[64], cache[512], *log;
	struct ag_stored st;
	struct ag_run ag;
	struct tl_proc fx;
	int64_t written = 0, failed = 0;
	size_t with_samples, named;
	int port, hole = blackhole(&port);
	double t0;

	rec_require_root();
	snprintf(store, sizeof(store), "%s/profiles", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	rec_start_work_split(&fx, tl_path(STRIPPED), "6");
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", store, "--comm", "work_split_stri",
					"--http-listen", "", "--debuginfod-urls", url,
					"--debuginfod-timeout", "60", "--debuginfod-cache", cache,
					NULL });
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx);
	sleep(1);
	t0 = rec_now();
	cr_assert_eq(ag_stop_agent(&ag), 0);
	/* the pending request does not hold the agent up either */
	cr_expect_lt(rec_now() - t0, 10, "stopping took %.1f s", rec_now() - t0);
	log = tl_log_text(&ag.log);
	ag_logged_samples(log, &written, &failed);
	/* 6 s of burning at a 1 s interval, the lookup pending all along */
	cr_expect_geq(written, 5, "%ld profiles written in 7 s:\n%s", (long)written, log);
	cr_expect_eq(failed, 0);
	ag_read_store(store, &st);
	named = profiles_naming(&st, "burn_three", &with_samples);
	cr_expect_geq(with_samples, 5);
	cr_expect_eq(named, 0, "names without debug info?");
	ag_free_store(&st);
	close(hole);
	tl_log_free(&ag.log);
	free(log);
	free(dir);
}

Test(symbolize, agent_names_later_profiles_once_the_file_arrives, .timeout = 120)
{
	char *dir = tl_tmpdir("agent-dbgd2"), store[512], cache[512], id[160], *log;
	struct dbgd_server server;
	struct ag_stored st;
	struct ag_run ag;
	struct tl_proc fx;
	size_t with_samples, named;

	rec_require_root();
	cr_assert_eq(dbgd_build_id(tl_path(STRIPPED), id), 0);
	cr_assert_eq(dbgd_start(&server, tl_path("fixtures/remote"), id), 0);
	snprintf(store, sizeof(store), "%s/profiles", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	rec_start_work_split(&fx, tl_path(STRIPPED), "5");
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", store, "--comm", "work_split_stri",
					"--http-listen", "", "--debuginfod-urls", server.url,
					"--debuginfod-cache", cache, NULL });
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx);
	sleep(1);
	cr_assert_eq(ag_stop_agent(&ag), 0);
	dbgd_stop(&server);
	log = tl_log_text(&ag.log);
	ag_read_store(store, &st);
	named = profiles_naming(&st, "burn_three", &with_samples);
	cr_expect_geq(with_samples, 3, "%s", log);
	/* the first may still have addresses; the last ones have names */
	cr_expect_geq(named, with_samples - 2, "%zu of %zu profiles name burn_three:\n%s", named,
		      with_samples, log);
	ag_free_store(&st);
	tl_log_free(&ag.log);
	free(log);
	free(dir);
}
