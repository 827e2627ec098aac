// SPDX-License-Identifier: BSD-2-Clause
/*
 * A real PostgreSQL under pgbench -S, recorded with the default target
 * rule (processes named postgres/postmaster and their children): the
 * profile must hold PostgreSQL's own frames under the pids of the
 * cluster's backends, and go tool pprof must read it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pgcluster.h"
#include "process/processes.h"
#include "testlib.h"

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* Children of the postmaster right now, added to set. */
static void collect_children(pid_t parent, int *set, int *n, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		uint32_t ppid;
		int pid = atoi(de->d_name);
		bool known = false;

		if (pid <= 0 || proc_read_ppid(pid, &ppid) || (pid_t)ppid != parent)
			continue;
		for (int i = 0; i < *n; i++)
			known |= set[i] == pid;
		if (!known && *n < max)
			set[(*n)++] = pid;
	}
	if (d)
		closedir(d);
}

static bool in_set(const int *set, int n, int64_t pid)
{
	for (int i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

Test(postgres, pgbench_select_profile_has_backend_frames, .timeout = 300, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("pgrec"), out[512], cmd[1024], *text = NULL;
	int children[512], nchildren = 0;
	int64_t total = 0, ours = 0, pg_frames = 0, backend_main = 0, misplaced = 0;
	struct tl_proc rec;
	struct profile *p;
	pid_t bench;
	char line[256];

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	cr_assert_eq(pg_bench_init(&pg, 1), 0);
	bench = pg_bench_start(&pg, "-S -c 2 -j 2 -T 15");
	cr_assert_gt(bench, 0);
	sleep(1);

	snprintf(out, sizeof(out), "%s/pg.pb.gz", dir);
	{
		char *argv[] = { (char *)tl_path("ebprof"),
				 "record",
				 "-F",
				 "99",
				 "-d",
				 "6",
				 "-o",
				 out,
				 "-v",
				 NULL };

		cr_assert_eq(tl_spawn(&rec, argv, false, false, true), 0);
	}
	cr_assert_eq(tl_wait_line(rec.err, "sampling at", line, sizeof(line), 30), 0);
	for (int i = 0; i < 5; i++) {
		collect_children(pg.postmaster, children, &nchildren, 512);
		sleep(1);
	}
	while (fgets(line, sizeof(line), rec.err))
		fputs(line, stderr);
	cr_assert_eq(tl_wait(&rec, 60), 0, "ebprof record failed");
	waitpid(bench, NULL, 0);

	p = tl_load_profile(out);
	cr_assert_not_null(p);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		int64_t pid = tl_label_num(p, s, "pid");
		bool mine = pid == pg.postmaster || in_set(children, nchildren, pid);
		bool has_pg = false;

		total += s->values[0];
		ours += mine ? s->values[0] : 0;
		for (size_t j = 0; j < s->nlocations && !has_pg; j++) {
			const struct pf_location *loc = &p->locations[s->location_ids[j] - 1];
			const struct pf_mapping *m =
				loc->mapping_id ? &p->mappings[loc->mapping_id - 1] : NULL;

			has_pg = m && loc->nlines &&
				 strstr(profile_string(p, m->filename), "/bin/postgres");
		}
		pg_frames += has_pg ? s->values[0] : 0;
		if (tl_frame_pos(p, s, "PostgresMain") >= 0 ||
		    tl_frame_pos(p, s, "exec_simple_query") >= 0) {
			backend_main += s->values[0];
			if (!in_set(children, nchildren, pid))
				misplaced += s->values[0];
		}
	}
	cr_log_info("samples %lld, of our cluster %lld, with symbolized postgres frames %lld, "
		    "under PostgresMain/exec_simple_query %lld",
		    (long long)total, (long long)ours, (long long)pg_frames,
		    (long long)backend_main);
	cr_expect_gt(total, 100, "too few samples of a busy PostgreSQL");
	cr_expect_geq(ours, total * 9 / 10, "samples from processes outside the cluster");
	cr_expect_geq(pg_frames, total / 2, "too few symbolized frames of the postgres binary");
	cr_expect_gt(backend_main, 0, "no stack reaches PostgresMain or exec_simple_query");
	cr_expect_eq(misplaced, 0, "backend frames under pids that are not backends");
	cr_expect_eq(tl_go_pprof_check(out, &text), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tl_sh(cmd, NULL);
	free(text);
	profile_free(p);
}
