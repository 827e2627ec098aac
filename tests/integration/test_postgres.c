// SPDX-License-Identifier: BSD-2-Clause
/*
 * A real PostgreSQL under pgbench -S, recorded with `record -p
 * POSTMASTER`: the cluster the test started and nothing else, whatever
 * else runs on the host. The profile, read back by go tool pprof
 * (gp_read, testlib.h), must hold PostgreSQL's own frames under the pids
 * of the cluster's backends, and only processes of that cluster: the
 * kernel's fork events (procevents.h) tell which processes are the
 * postmaster's, short-lived ones included. A decoy process named
 * "postgres" outside the cluster burns CPU meanwhile and must not appear
 * (a recording by name would take it). Debian's postgres is stripped:
 * its static functions are named after their start (profile/unnamed.h),
 * checked against readelf's FDEs (fde_oracle.h): one function, one name.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpfprogs.h"
#include "fde_oracle.h"
#include "pgcluster.h"
#include "procevents.h"
#include "profile/unnamed.h"
#include "testlib.h"

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* Whether a frame is a symbolized one of the postgres binary. */
static bool postgres_frame(const struct gp_frame *f)
{
	return gp_named(f) && f->mapping && strstr(f->mapping->file, "/bin/postgres");
}

/*
 * The frames of postgres that no symbol names, against readelf's FDEs of
 * the binary: a name "postgres+0xSTART" is that of an FDE's start and its
 * FDE holds the location's address (or the byte before: a return
 * address); one FDE has one name; a location left without a line is in
 * no FDE (at its address or the byte before). Returns the distinct names.
 */
static size_t check_function_starts(const struct gp_profile *p)
{
	const char *bin = NULL;
	struct fdo_range *r;
	size_t n, names = 0, locs = 0, bare = 0;
	uint64_t *named_by; /* per FDE: the name's start, 0 when none yet */

	for (size_t i = 0; i < p->nmappings && !bin; i++)
		if (strstr(p->mappings[i].file, "/bin/postgres"))
			bin = p->mappings[i].file;
	cr_assert_not_null(bin, "no postgres mapping");
	r = fdo_ranges(bin, &n);
	named_by = calloc(n, sizeof(*named_by));
	cr_assert_not_null(named_by);
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct gp_location *l = &p->locations[i];
		const struct gp_mapping *m = gp_mapping(p, l->mapping_id);
		const struct fdo_range *f;
		uint64_t off, start;
		const char *hex;

		if (!m || strcmp(m->file, bin) || l->addr < m->start || l->addr >= m->limit)
			continue;
		off = l->addr - m->start + m->offset;
		if (!l->nlines) { /* looked up at off (a leaf) or off - 1 */
			cr_expect(!fdo_find(r, n, off) || !fdo_find(r, n, off - 1),
				  "postgres+0x%" PRIx64 " is in an FDE but was not named after it",
				  off);
			bare++;
			continue;
		}
		if (l->nlines != 1 || !unnamed_name(l->lines[0].fn))
			continue;
		locs++;
		hex = strrchr(l->lines[0].fn, '+') + 3;
		start = strtoull(hex, NULL, 16);
		cr_expect(!strncmp(l->lines[0].fn, "postgres+0x", 11), "%s", l->lines[0].fn);
		f = fdo_find(r, n, start);
		cr_assert(f && f->start == start,
			  "%s (at postgres+0x%" PRIx64 ") is no FDE's start", l->lines[0].fn, off);
		cr_expect(start <= off && off <= f->end, "%s names postgres+0x%" PRIx64 ", outside",
			  l->lines[0].fn, off);
		if (!named_by[f - r])
			names++;
		cr_expect(!named_by[f - r] || named_by[f - r] == start,
			  "two names in one FDE: 0x%" PRIx64 " and 0x%" PRIx64, named_by[f - r],
			  start);
		named_by[f - r] = start;
	}
	cr_log_info("postgres: %zu functions named after their start, over %zu locations; %zu "
		    "locations in no FDE",
		    names, locs, bare);
	free(named_by);
	free(r);
	return names;
}

Test(postgres, pgbench_select_profile_has_backend_frames, .timeout = 300, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("pgrec"), out[512], cmd[1024], decoy[600], pidarg[16], line[128];
	int64_t total = 0, pg_frames = 0, backend_main = 0, misplaced = 0, outside = 0;
	int64_t *tree = NULL, *pids;
	size_t ntree = 0, npids;
	struct pe_listener *pe;
	struct tl_proc rec, fx;
	struct gp_profile *p;
	pid_t bench, decoy_pid;
	int dp = 0;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	cr_assert_eq(pg_bench_init(&pg, 1), 0);
	/* The cluster's processes: those alive now and every later fork. */
	cr_assert_eq(pe_start(pg.postmaster, &pe), 0, "cannot listen to the proc connector");

	/* Another "postgres" on the host, not of our cluster: a CPU burner. */
	snprintf(decoy, sizeof(decoy), "%s/postgres", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", tl_path("fixtures/work_split"), decoy);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	cr_assert_eq(tl_spawn(&fx, (char *[]){ decoy, "30", NULL }, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &dp);
	decoy_pid = dp;
	cr_assert_gt(decoy_pid, 0);
	fputs("go\n", fx.in);

	/* long enough to outlast a slow start: under TCG (the vmtest guests)
	 * loading and prewarming took over 30 s once */
	bench = pg_bench_start(&pg, "-S -c 2 -j 2 -T 40");
	cr_assert_gt(bench, 0);
	sleep(1);

	snprintf(out, sizeof(out), "%s/pg.pb.gz", dir);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)pg.postmaster);
	{
		char *argv[] = { (char *)tl_path("ebprof"),
				 "record",
				 "-F",
				 "99",
				 "-p",
				 pidarg,
				 "-d",
				 "6",
				 "-o",
				 out,
				 "-v",
				 NULL };

		cr_assert_eq(tl_start_until(&rec, argv, "sampling at", 60), 0);
	}
	/* a PostgreSQL target: the statement and PL/pgSQL readers loaded
	 * (test_record_options' no_statement_readers_without_postgres_targets
	 * is the other side) */
	cr_expect_eq(tl_bpf_rodata_u8(rec.pid, "do_sample", "want_queries"), 1,
		     "no statement reader in a recording of PostgreSQL");
	cr_expect_eq(tl_bpf_rodata_u8(rec.pid, "do_sample", "want_plpgsql"), 1,
		     "no PL/pgSQL reader in a recording of PostgreSQL");
	cr_assert_eq(tl_finish(&rec, 0, 60), 0, "ebprof record failed");
	kill(bench, SIGTERM); /* the load has done its part */
	waitpid(bench, NULL, 0);
	kill(decoy_pid, SIGKILL);
	tl_wait(&fx, 10);
	pe_stop(pe);
	cr_assert_eq(pe_tree(pe, &tree, &ntree), 0,
		     "the kernel dropped process events: the cluster's set is not known");

	p = gp_read(out);
	cr_assert_not_null(p, "go tool pprof cannot read %s", out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t pid = gp_label_num(s, "pid");
		bool has_pg = false;

		total += s->values[0];
		if (!pe_member(tree, ntree, pid))
			outside += s->values[0];
		for (size_t j = 0; j < s->nframes && !has_pg; j++)
			has_pg = postgres_frame(&s->frames[j]);
		pg_frames += has_pg ? s->values[0] : 0;
		if (gp_frame_pos(s, "PostgresMain") >= 0 ||
		    gp_frame_pos(s, "exec_simple_query") >= 0) {
			backend_main += s->values[0];
			if (pid == pg.postmaster)
				misplaced += s->values[0];
		}
	}
	pids = gp_pids(p, &npids);
	cr_log_info("samples %lld from %zu processes (the cluster had %zu), with symbolized "
		    "postgres frames %lld, under PostgresMain/exec_simple_query %lld",
		    (long long)total, npids, ntree, (long long)pg_frames, (long long)backend_main);
	cr_expect_gt(total, 100, "too few samples of a busy PostgreSQL");
	cr_expect_eq(outside, 0, "%lld samples of processes outside the test's cluster",
		     (long long)outside);
	for (size_t i = 0; i < npids; i++)
		cr_expect(pe_member(tree, ntree, pids[i]), "pid %lld is not of the test's cluster",
			  (long long)pids[i]);
	cr_expect_eq(gp_total(p, decoy_pid, 0), 0, "the decoy named postgres was sampled");
	cr_expect_eq(gp_with(p, "burn_three", -1, 0), 0, "the decoy's frames are in the profile");
	cr_expect_geq(pg_frames, total / 2, "too few symbolized frames of the postgres binary");
	cr_expect_gt(backend_main, 0, "no stack reaches PostgresMain or exec_simple_query");
	cr_expect_eq(misplaced, 0, "backend frames under the postmaster's pid");
	cr_expect_gt(check_function_starts(p), 0, "no static function of postgres was sampled");
	cr_expect_eq(gp_counted_samples(p), total,
		     "BPF counted %lld samples, the profile holds %lld",
		     (long long)gp_counted_samples(p), (long long)total);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tl_sh(cmd, NULL);
	free(pids);
	free(tree);
	pe_free(pe);
	gp_free(p);
}
