// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` end to end, as root with the real BPF program: short-
 * lived children each get their profile, PostgreSQL processes of the
 * test's own cluster carry their backend type, bad configuration is
 * refused, a disk that is really full (ENOSPC) does not stop sampling, a
 * reload loses no sample, processes entering a target cgroup are
 * followed. Profiles are found through the store's own listing and every
 * one is read back by go tool pprof (gp_read, testlib.h): what is
 * asserted about their content is what Go reads. The samples BPF counted
 * (the agent's "interval ...: N samples" lines) must equal the samples
 * the profiles hold, exactly, whenever no profile is removed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "pgcluster.h"
#include "procevents.h"
#include "sinks/store/store.h"
#include "testlib.h"

static char *empty_config(const char *dir)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/empty.conf", dir);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs("# no settings: defaults and flags only\n", f);
	fclose(f);
	return path;
}

/* A running agent, its stderr in log. */
struct agent {
	struct tl_proc p;
	struct tl_log log;
};

/* Start the agent with args and wait until it samples. */
static void start_agent(struct agent *ag, char **args)
{
	char *argv[40];
	int n = 0;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "agent";
	while (*args && n < 38)
		argv[n++] = *args++;
	argv[n] = NULL;
	cr_assert_eq(tl_start_logged(&ag->p, &ag->log, argv, "sampling at", 30), 0,
		     "the agent did not start sampling");
}

/* SIGTERM; the exit status. The log stays readable. */
static int stop_agent(struct agent *ag)
{
	return tl_finish_logged(&ag->p, &ag->log, SIGTERM, 60);
}

/*
 * The agent's interval lines ("interval from T (N s): P processes, S
 * samples, ...; W profiles written, F failed"): the sum of S, and of W
 * and F when asked.
 */
static int64_t logged_samples(const char *log, int64_t *written, int64_t *failed)
{
	int64_t samples = 0, w = 0, f = 0;

	for (const char *s = log; (s = strstr(s, "interval from ")); s++) {
		const char *c = strstr(s, "): "), *nl = strchr(s, '\n'), *wr;
		unsigned long long procs, n, pw, pf;

		if (!c || (nl && c > nl) ||
		    sscanf(c, "): %llu processes, %llu samples", &procs, &n) != 2)
			continue;
		samples += (int64_t)n;
		wr = strstr(c, "; ");
		while (wr && (!nl || wr < nl) &&
		       sscanf(wr, "; %llu profiles written, %llu failed", &pw, &pf) != 2)
			wr = strstr(wr + 1, "; ");
		if (wr && (!nl || wr < nl)) {
			w += (int64_t)pw;
			f += (int64_t)pf;
		}
	}
	if (written)
		*written = w;
	if (failed)
		*failed = f;
	return samples;
}

static const char *label(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

/* The store's profiles, each read back by go tool pprof (asserted). */
struct stored {
	struct store_entry *ents;
	struct gp_profile **gp;
	size_t n;
};

static void read_store(const char *dir, struct stored *st)
{
	struct store_query q = { 0 };

	cr_assert_eq(store_list(dir, &q, &st->ents, &st->n), 0, "cannot list %s", dir);
	st->gp = calloc(st->n + 1, sizeof(*st->gp));
	cr_assert_not_null(st->gp);
	for (size_t i = 0; i < st->n; i++) {
		st->gp[i] = gp_read(st->ents[i].path);
		cr_assert_not_null(st->gp[i], "go tool pprof cannot read %s", st->ents[i].path);
	}
}

static void free_store(struct stored *st)
{
	for (size_t i = 0; i < st->n; i++)
		gp_free(st->gp[i]);
	free(st->gp);
	store_entries_free(st->ents, st->n);
}

/*
 * A per-process profile holds that process only: every sample has the
 * numeric pid label of its file's name, and tid/thread_name; its
 * comments repeat its labels. Returns its samples.
 */
static int64_t check_process_profile(const struct store_entry *e, const struct gp_profile *p)
{
	char want[64];
	size_t bad = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		bad += gp_label_num(s, "pid") != (int64_t)e->pid || gp_label_num(s, "tid") <= 0 ||
		       !gp_label(s, "thread_name");
	}
	cr_expect_eq(bad, 0, "%s: %zu samples not labelled pid %u (or without tid/thread_name)",
		     e->path, bad, e->pid);
	snprintf(want, sizeof(want), "pid=%u", e->pid);
	cr_expect_not_null(gp_comment(p, want), "%s: no comment %s", e->path, want);
	cr_expect_eq(p->period_type ? strcmp(p->period_type, "cpu") : 1, 0);
	return gp_total(p, -1, 0);
}

Test(agent, every_short_lived_child_gets_a_symbolized_profile, .timeout = 180)
{
	char *dir = tl_tmpdir("agent"), out[512], line[128], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/forker"), NULL };
	int children[32], ms[32], nchildren = 0;
	struct stored st;
	struct tl_proc fx;
	struct agent ag;
	int64_t in_profiles = 0, counted;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "99", "--interval", "2",
				     "--output-dir", out, "--comm", "forker", "--http-listen", "",
				     NULL });
	fputs("go\n", fx.in);
	while (tl_wait_line(fx.out, "=", line, sizeof(line), 60) == 0 && !strstr(line, "done")) {
		if (sscanf(line, "child=%d ms=%d", &children[nchildren], &ms[nchildren]) == 2 &&
		    nchildren < 31)
			nchildren++;
	}
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3); /* at least one interval boundary after the last child */
	cr_assert_eq(stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	cr_assert_eq(nchildren, 12);
	log = tl_log_text(&ag.log);

	read_store(out, &st);
	cr_assert_gt(st.n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < st.n; i++) {
		int64_t n = check_process_profile(&st.ents[i], st.gp[i]);

		cr_expect_gt(n, 0, "empty profile %s", st.ents[i].path);
		in_profiles += n;
		for (size_t j = 0; j < i; j++)
			cr_expect(!(st.ents[j].pid == st.ents[i].pid &&
				    st.ents[j].start_ns == st.ents[i].start_ns),
				  "duplicate profile of pid %u: %s and %s", st.ents[i].pid,
				  st.ents[j].path, st.ents[i].path);
	}
	counted = logged_samples(log, NULL, NULL);
	cr_expect_eq(in_profiles, counted, "BPF counted %lld samples, the profiles hold %lld",
		     (long long)counted, (long long)in_profiles);
	for (int c = 0; c < nchildren; c++) {
		int64_t samples = 0;

		for (size_t i = 0; i < st.n; i++) {
			if (st.ents[i].pid != (uint32_t)children[c])
				continue;
			samples += gp_with(st.gp[i], "child_work", children[c], 0);
			cr_expect_str_eq(label(&st.ents[i], "comm"), "forker");
			cr_expect_not_null(gp_comment(st.gp[i], "comm=forker"));
		}
		cr_expect_gt(samples, 0, "child %d (%d ms of CPU) has no symbolized child_work",
			     children[c], ms[c]);
	}
	free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

Test(agent, postgres_profiles_carry_backend_types, .timeout = 300)
{
	char *dir = tl_tmpdir("agentpg"), out[512], cmd[1024];
	struct pgcluster pg;
	struct pe_listener *pe;
	struct {
		const char *type;
		int found;
	} want[] = { { "checkpointer", 0 }, { "client backend", 0 } };
	struct stored st;
	struct agent ag;
	int client_with_user = 0;
	int64_t *tree;
	size_t ntree;
	pid_t bench;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0);
	/* Which processes are this cluster's: the kernel's fork events. */
	cr_assert_eq(pe_start(pg.postmaster, &pe), 0, "cannot listen to the proc connector");
	cr_assert_eq(pg_bench_init(&pg, 5), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	/* The default target rule (postgres/postmaster by name). */
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "199", "--interval", "3",
				     "--output-dir", out, "--http-listen", "", NULL });
	bench = pg_bench_start(&pg, "-N -c 2 -j 2 -T 10");
	/* Dirty buffers for the checkpointer to write, then make it work. */
	for (int i = 0; i < 3; i++) {
		sleep(3);
		snprintf(cmd, sizeof(cmd),
			 "psql -h %s -p %d -U postgres -c CHECKPOINT postgres >/dev/null 2>&1",
			 pg.dir, pg.port);
		tl_sh(cmd, NULL);
	}
	waitpid(bench, NULL, 0);
	sleep(4);
	cr_assert_eq(stop_agent(&ag), 0);
	pe_stop(pe);
	cr_expect_eq(pe_tree(pe, &tree, &ntree), 0, "the kernel dropped process events");
	pg_stop(&pg);

	read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const char *type = label(&st.ents[i], "backend_type");
		const struct gp_profile *p = st.gp[i];
		char c[128];

		check_process_profile(&st.ents[i], p);
		/* another PostgreSQL on the host does not count */
		if (!type || !pe_member(tree, ntree, st.ents[i].pid))
			continue;
		snprintf(c, sizeof(c), "backend_type=%s", type);
		cr_expect_not_null(gp_comment(p, c), "%s: no comment %s", st.ents[i].path, c);
		for (size_t w = 0; w < 2; w++)
			if (!strcmp(type, want[w].type) && gp_total(p, st.ents[i].pid, 0) > 0)
				want[w].found++;
		if (!strcmp(type, "client backend")) {
			const char *u = label(&st.ents[i], "pg_user"),
				   *d = label(&st.ents[i], "pg_database");

			client_with_user += u && d && !strcmp(u, "postgres") &&
					    !strcmp(d, "postgres") &&
					    gp_comment(p, "pg_user=postgres") &&
					    gp_comment(p, "pg_database=postgres");
		}
	}
	cr_expect_gt(want[0].found, 0, "no profile of our checkpointer labelled checkpointer");
	cr_expect_gt(want[1].found, 0, "no profile of our backends labelled client backend");
	cr_expect_gt(client_with_user, 0, "client backends lack pg_user/pg_database");
	free(tree);
	pe_free(pe);
	free_store(&st);
	tl_log_free(&ag.log);
}

Test(agent, bad_configuration_is_refused, .timeout = 60)
{
	char *dir = tl_tmpdir("agentcfg"), cmd[1024], *text = NULL, conf[512];
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s agent --config %s --interval 0 2>&1", tl_path("ebprof"),
		 empty_config(dir));
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, "interval") != NULL, "%s", text);
	free(text);

	snprintf(cmd, sizeof(cmd), "%s agent --config /nonexistent/ebprof.conf 2>&1",
		 tl_path("ebprof"));
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, "/nonexistent/ebprof.conf") != NULL, "%s", text);
	free(text);

	snprintf(conf, sizeof(conf), "%s/bad.conf", dir);
	f = fopen(conf, "w");
	fputs("frequency = 19\n\ninterval = soon\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s agent --config %s 2>&1", tl_path("ebprof"), conf);
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, ":3:") != NULL && strstr(text, "interval") != NULL,
		  "message does not name line 3 and the key: %s", text);
	free(text);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A metric without labels from the agent's /metrics, or -1. */
static int64_t metric(const char *listen, const char *name)
{
	char url[128], want[128], *s;
	struct httpc_resp r;
	int64_t v = -1;

	snprintf(url, sizeof(url), "http://%s/metrics", listen);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s: %s", url, r.error);
	cr_assert_eq(r.status, 200);
	snprintf(want, sizeof(want), "\n%s ", name);
	s = strstr(r.body, want);
	if (s)
		v = strtoll(s + strlen(want), NULL, 10);
	httpc_free(&r);
	return v;
}

/* Fill the file system of dir to the last byte: a file written until
 * ENOSPC. Returns the bytes written. */
static int64_t fill_up(const char *dir)
{
	static char block[4096];
	char path[600];
	int64_t total = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/filler", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	memset(block, 'x', sizeof(block));
	for (size_t chunk = sizeof(block); chunk;) {
		ssize_t n = write(fd, block, chunk);

		if (n > 0) {
			total += n;
			continue;
		}
		cr_assert(n < 0 && errno == ENOSPC, "filling %s: %s", path, strerror(errno));
		chunk /= 2; /* the last page's bytes, if any */
	}
	close(fd);
	return total;
}

/*
 * A full disk: a 256 KiB tmpfs is filled to the last byte (a file the
 * store does not own) once the agent has written its first profiles, so
 * every later write meets ENOSPC. The store must free room by removing
 * its oldest profiles (ebprof_store_removed_total; retention by size and
 * age cannot be why: 1G and 7d) or count failed writes, and sampling and
 * writing must go on: profiles of intervals that began after the disk
 * was full exist, hold the workload's samples and read back.
 */
static char tiny_fs[512];

static void umount_tiny(void)
{
	if (tiny_fs[0])
		umount2(tiny_fs, MNT_DETACH);
	tiny_fs[0] = '\0';
}

Test(agent, full_disk_does_not_stop_sampling, .timeout = 120, .fini = umount_tiny)
{
	char *dir = tl_tmpdir("agentfull"), out[512], line[128], pidarg[16], listen[32], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "10", NULL };
	struct store_query q = { 0 };
	struct store_entry *ents = NULL;
	struct stored st;
	struct tl_proc fx;
	struct agent ag;
	int64_t removed, write_errors, files, full_ns, filled, written, failed, after,
		written_after;
	int64_t later = 0, later_burn = 0;
	size_t n = 0, at, full_at;
	int pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/tiny", dir);
	mkdir(out, 0755);
	cr_assert_eq(mount("tmpfs", out, "tmpfs", 0, "size=256k"), 0, "cannot mount a tmpfs");
	snprintf(tiny_fs, sizeof(tiny_fs), "%s", out);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "999", "--interval", "1",
				     "--output-dir", out, "--retention-size", "1G",
				     "--retention-age", "7d", "--comm", "x-none", "--pid", pidarg,
				     "--http-listen", listen, NULL });
	fputs("go\n", fx.in);
	/* Two profiles on disk, then not a byte left. */
	for (int i = 0; i < 100 && n < 2; i++) {
		store_entries_free(ents, n);
		ents = NULL;
		n = 0;
		usleep(100000);
		cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	}
	cr_assert_geq(n, 2, "the agent wrote no profiles before the disk was filled");
	store_entries_free(ents, n);
	filled = fill_up(out);
	full_ns = (int64_t)time(NULL) * 1000000000LL;
	full_at = tl_log_len(&ag.log);
	cr_log_info("filled the tmpfs with %lld bytes", (long long)filled);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	/* The interval the workload ended in is flushed; then nothing more is
	 * written, and the store's counters are final. */
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, ": 0 processes, 0 samples", 10, NULL), 0,
		     "no empty interval after the workload ended");
	removed = metric(listen, "ebprof_store_removed_total");
	write_errors = metric(listen, "ebprof_store_write_errors_total");
	files = metric(listen, "ebprof_store_files");
	cr_assert_eq(stop_agent(&ag), 0, "the agent failed on a full disk");
	log = tl_log_text(&ag.log);
	logged_samples(log, &written, &failed);
	after = logged_samples(log + full_at, &written_after, NULL);
	cr_log_info("removed %lld, write errors %lld; profiles written %lld, failed %lld; after "
		    "the disk was full: %lld samples, %lld profiles written",
		    (long long)removed, (long long)write_errors, (long long)written,
		    (long long)failed, (long long)after, (long long)written_after);
	cr_expect(removed > 0 || write_errors > 0,
		  "the store never met a full disk: nothing removed, no write failed");
	/* the workload ran for seconds after: an interval and a profile each */
	cr_expect_geq(written_after, 4, "%lld profiles written after the disk was full",
		      (long long)written_after);
	cr_expect_gt(after, 1000, "%lld samples after the disk was full", (long long)after);

	read_store(out, &st);
	cr_expect_gt(st.n, 0);
	for (size_t i = 0; i < st.n; i++) {
		check_process_profile(&st.ents[i], st.gp[i]);
		/* began a whole interval after the disk was full */
		if (st.ents[i].start_ns >= full_ns + 1000000000LL) {
			later++;
			later_burn += gp_with(st.gp[i], "burn_three", pid, 0);
		}
	}
	/* Each write removed older profiles: the newest are left, and they are
	 * of intervals that began after the disk was full. */
	cr_expect_geq(later, 1, "no profile of an interval after the disk was full");
	cr_expect_gt(later_burn, 0, "no samples of the workload after the disk was full");
	/* what the disk could not keep was removed, nothing else went */
	cr_expect_eq((int64_t)st.n, written - removed,
		     "%lld profiles written, %lld removed, but %zu on disk", (long long)written,
		     (long long)removed, st.n);
	cr_expect_eq(files, (int64_t)st.n, "ebprof_store_files %lld, %zu listed", (long long)files,
		     st.n);
	free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

static void write_conf(const char *path, int freq, const char *pid, const char *out)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f,
		"frequency = %d\ninterval = 1\ncomm = x-none\npid = %s\noutput-dir = %s\n"
		"http-listen = \"\"\n",
		freq, pid, out);
	fclose(f);
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_time(const void *a, const void *b)
{
	const struct gp_profile *x = *(struct gp_profile *const *)a,
				*y = *(struct gp_profile *const *)b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/*
 * The profiles of a process that burned all along tile time: each starts
 * where the previous one ended (20 ms of slack: Go rounds durations to
 * 10 ms), but for one gap while the sampler restarted, which lies between
 * the SIGHUP and the new sampler's first words. An interval dropped at
 * the reload would open a gap before the SIGHUP (sent half an interval
 * after a boundary).
 */
static void expect_contiguous(const struct stored *st, int64_t hup_ns, int64_t ready_ns)
{
	const int64_t slack = 20000000;
	struct gp_profile **v = calloc(st->n + 1, sizeof(*v));
	int gaps = 0;

	cr_assert_not_null(v);
	memcpy(v, st->gp, st->n * sizeof(*v));
	qsort(v, st->n, sizeof(*v), by_time);
	for (size_t i = 0; i + 1 < st->n; i++) {
		int64_t end = v[i]->time_ns + v[i]->duration_ns, gap = v[i + 1]->time_ns - end;

		cr_expect_geq(gap, -slack, "%s overlaps the next profile by %lld ms", v[i]->path,
			      (long long)(-gap / 1000000));
		if (gap <= slack)
			continue;
		gaps++;
		cr_log_info("sampling gap of %.1f ms, SIGHUP to ready: %.1f ms", gap / 1e6,
			    (ready_ns - hup_ns) / 1e6);
		cr_expect(end >= hup_ns - slack && v[i + 1]->time_ns <= ready_ns + slack,
			  "%.3f s not covered after %s, outside the reload (%.3f s before the "
			  "SIGHUP)",
			  gap / 1e9, v[i]->path, (hup_ns - end) / 1e9);
	}
	cr_expect_leq(gaps, 1, "%d gaps between the profiles: one reload was asked for", gaps);
	free(v);
}

/*
 * SIGHUP restarts sampling with the new configuration after flushing the
 * running interval; a bad file keeps the old one. Without losing samples
 * means: every sample BPF counted, before and after the reload, is in a
 * profile (the sum of the logged interval counts equals the profiles'
 * samples, exactly), and the profiles cover the time but for the restart
 * itself (expect_contiguous). The CPU-time comparison only checks that
 * sampling ran at both rates: it cannot be exact, the workload runs on
 * while the old sampler has stopped and the new one is not yet attached.
 */
Test(agent, sighup_reloads_without_losing_samples, .timeout = 120)
{
	char *dir = tl_tmpdir("agenthup"), out[512], conf[512], line[512], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "8", NULL };
	struct stored st;
	struct tl_proc fx;
	struct agent ag;
	int64_t cpu_ns = 0, periods[2] = { 0, 0 }, in_profiles = 0, counted, hup_ns, ready_ns;
	bool reloaded, kept;
	size_t at = 0;
	double cpu = 0;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	write_conf(conf, 49, pidarg, out);
	start_agent(&ag, (char *[]){ "--config", conf, NULL });
	fputs("go\n", fx.in);
	sleep(2);
	write_conf(conf, 97, pidarg, out);
	/* Mid-interval: half a second after a boundary. */
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 5, &at), 0);
	usleep(500000);
	hup_ns = wall_ns();
	kill(ag.p.pid, SIGHUP);
	/* the restarted sampler announces the new frequency */
	reloaded = tl_log_wait(&ag.log, at, "sampling at 97 Hz", 20, &at) == 0;
	ready_ns = wall_ns();
	sleep(2);
	FILE *f = fopen(conf, "w");
	fputs("frequency = lots\n", f);
	fclose(f);
	kill(ag.p.pid, SIGHUP);
	kept = tl_log_wait(&ag.log, at, "configuration not reloaded", 5, NULL) == 0;
	cr_expect(reloaded, "no reload was logged");
	cr_expect(kept, "a bad configuration on SIGHUP was not reported");
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(2);
	cr_assert_eq(stop_agent(&ag), 0, "the agent died after a bad reload");
	log = tl_log_text(&ag.log);
	cr_expect(strstr(log, "configuration not reloaded") &&
			  strstr(strstr(log, "configuration not reloaded"), "frequency"),
		  "the refusal does not name the key");

	read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct gp_profile *p = st.gp[i];

		in_profiles += check_process_profile(&st.ents[i], p);
		cpu_ns += gp_total(p, -1, 1);
		if (p->period == 1000000000LL / 49)
			periods[0]++;
		else if (p->period == 1000000000LL / 97)
			periods[1]++;
		else
			cr_expect_fail("%s: period %lld", st.ents[i].path, (long long)p->period);
	}
	expect_contiguous(&st, hup_ns, ready_ns);
	counted = logged_samples(log, NULL, NULL);
	cr_expect_gt(periods[0], 0, "no profile at the first frequency");
	cr_expect_gt(periods[1], 0, "no profile at the reloaded frequency");
	cr_expect_eq(in_profiles, counted,
		     "BPF counted %lld samples across the reloads, the profiles hold %lld",
		     (long long)counted, (long long)in_profiles);
	cr_log_info("profiles account for %.3f s of CPU, the workload used %.3f s", cpu_ns / 1e9,
		    cpu);
	cr_expect(cpu_ns >= 0.85 * cpu * 1e9 && cpu_ns <= 1.1 * cpu * 1e9,
		  "profiles account for %.2f s of CPU, the workload used %.2f s", cpu_ns / 1e9,
		  cpu);
	free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

/* The cgroup v2 mount: /sys/fs/cgroup itself, or .../unified on hybrid
 * hosts. */
static const char *cgroup2_root(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	static char root[256];
	char dev[64], dir[256], type[32];

	root[0] = '\0';
	while (f && fscanf(f, "%63s %255s %31s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2")) {
			snprintf(root, sizeof(root), "%s", dir);
			break;
		}
	if (f)
		fclose(f);
	return root;
}

Test(agent, processes_entering_a_target_cgroup_are_followed, .timeout = 120)
{
	char *dir = tl_tmpdir("agentcg"), out[512], cg[512], cmd[1024], line[128];
	struct stored st;
	struct tl_proc fx;
	struct agent ag;
	int64_t burn = 0;
	uint32_t pid = 0;

	cr_assert_eq(geteuid(), 0);
	cr_assert_neq(cgroup2_root()[0], '\0', "no cgroup v2 mount on this host");
	snprintf(cg, sizeof(cg), "%s/ebprof-test-%d", cgroup2_root(), (int)getpid());
	cr_assert_eq(mkdir(cg, 0755), 0, "cannot create cgroup %s", cg);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "99", "--interval", "2",
				     "--output-dir", out, "--comm", "x-none", "--cgroup", cg,
				     "--http-listen", "", NULL });
	/* Not a target when it starts: it joins the cgroup, then execs. */
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s 2", cg,
		 tl_path("fixtures/work_split"));
	cr_assert_eq(tl_spawn(&fx, (char *[]){ "sh", "-c", cmd, NULL }, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%u", &pid);
	fputs("go\n", fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	sleep(3);
	cr_assert_eq(stop_agent(&ag), 0);
	rmdir(cg);

	read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		check_process_profile(&st.ents[i], st.gp[i]);
		if (st.ents[i].pid == pid)
			burn += gp_with(st.gp[i], "burn_three", pid, 0);
	}
	cr_expect_gt(burn, 50, "the process in the target cgroup was not profiled (%lld samples)",
		     (long long)burn);
	free_store(&st);
	tl_log_free(&ag.log);
}
