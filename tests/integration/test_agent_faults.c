// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` under faults, as root with the real BPF program: a disk
 * that is really full (ENOSPC) does not stop sampling, a SIGHUP reload
 * loses no sample and leaves no gap in time but the reload's own, a
 * storm of them restarts only what was edited and leaks nothing. Every
 * profile is read back by go tool pprof (gopprof.h).
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
#include "agent_env.h"
#include "testlib.h"

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
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int64_t removed, write_errors, disk_full, files, full_ns, filled, written, failed, after,
		written_after;
	int64_t later = 0, later_burn = 0;
	size_t n = 0, at, full_at;
	int pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/tiny", dir);
	mkdir(out, 0755);
	cr_assert_eq(mount("tmpfs", out, "tmpfs", 0, "size=256k"), 0, "cannot mount a tmpfs");
	snprintf(tiny_fs, sizeof(tiny_fs), "%s", out);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "999", "--interval",
					"1", "--output-dir", out, "--retention-size", "1G",
					"--retention-age", "7d", "--comm", "x-none", "--pid",
					pidarg, "--http-listen", listen, NULL });
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
	removed = ag_metric(listen, "ebprof_store_removed_total");
	write_errors = ag_metric(listen, "ebprof_store_write_errors_total");
	disk_full = ag_metric(listen, "ebprof_store_disk_full_total");
	files = ag_metric(listen, "ebprof_store_files");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent failed on a full disk");
	log = tl_log_text(&ag.log);
	ag_logged_samples(log, &written, &failed);
	after = ag_logged_samples(log + full_at, &written_after, NULL);
	cr_log_info("removed %lld, write errors %lld; profiles written %lld, failed %lld; after "
		    "the disk was full: %lld samples, %lld profiles written",
		    (long long)removed, (long long)write_errors, (long long)written,
		    (long long)failed, (long long)after, (long long)written_after);
	cr_expect(removed > 0 || write_errors > 0,
		  "the store never met a full disk: nothing removed, no write failed");
	cr_expect_gt(disk_full, 0, "ebprof_store_disk_full_total does not say the disk was full");
	cr_expect(strstr(log, "the disk is full"), "no warning said the disk was full");
	/* the workload ran for seconds after: an interval and a profile each */
	cr_expect_geq(written_after, 4, "%lld profiles written after the disk was full",
		      (long long)written_after);
	cr_expect_gt(after, 1000, "%lld samples after the disk was full", (long long)after);

	ag_read_store(out, &st);
	cr_expect_gt(st.n, 0);
	for (size_t i = 0; i < st.n; i++) {
		ag_check_process_profile(&st.ents[i], st.gp[i]);
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
	ag_free_store(&st);
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

#define PATH_LEN 512

/* A work_split of secs seconds, told to go, and an agent on it at 49 Hz
 * from dir/ebprof.conf (write_conf), its store dir/profiles: out and conf
 * (PATH_LEN bytes) and pidarg (16) are filled. */
static void start_on_work_split(const char *dir, const char *secs, char *out, char *conf,
				char *pidarg, struct tl_proc *fx, struct ag_run *ag)
{
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), (char *)secs, NULL };
	char line[512];

	cr_assert_eq(geteuid(), 0);
	snprintf(out, PATH_LEN, "%s/profiles", dir);
	snprintf(conf, PATH_LEN, "%s/ebprof.conf", dir);
	cr_assert_eq(tl_spawn(fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	write_conf(conf, 49, pidarg, out);
	ag_start_agent(ag, (char *[]){ "--config", conf, NULL });
	fputs("go\n", fx->in);
	fflush(fx->in);
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
static void expect_contiguous(const struct ag_stored *st, int64_t hup_ns, int64_t ready_ns)
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
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int64_t cpu_ns = 0, periods[2] = { 0, 0 }, in_profiles = 0, counted, hup_ns, ready_ns;
	bool reloaded, kept;
	size_t at = 0;
	double cpu = 0;

	start_on_work_split(dir, "8", out, conf, pidarg, &fx, &ag);
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
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent died after a bad reload");
	log = tl_log_text(&ag.log);
	cr_expect(strstr(log, "configuration not reloaded") &&
			  strstr(strstr(log, "configuration not reloaded"), "frequency"),
		  "the refusal does not name the key");

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct gp_profile *p = st.gp[i];

		in_profiles += ag_check_process_profile(&st.ents[i], p);
		cpu_ns += gp_total(p, -1, 1);
		if (p->period == 1000000000LL / 49)
			periods[0]++;
		else if (p->period == 1000000000LL / 97)
			periods[1]++;
		else
			cr_expect_fail("%s: period %lld", st.ents[i].path, (long long)p->period);
	}
	expect_contiguous(&st, hup_ns, ready_ns);
	counted = ag_logged_samples(log, NULL, NULL);
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
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

/* The frequency of the last "sampling at N Hz" line of log, or -1. */
static int last_sampling_hz(const char *log)
{
	const char *at = NULL, *p = log;
	int hz = -1;

	while ((p = strstr(p, "sampling at "))) {
		at = p;
		p++;
	}
	if (at)
		sscanf(at, "sampling at %d Hz", &hz);
	return hz;
}

static int count_lines_with(const char *log, const char *needle)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * A SIGHUP storm. First 200 signals 5 ms apart with the file untouched:
 * nothing restarts ("configuration unchanged"; a restart per signal would
 * stop sampling for as long as the storm lasts). Then 40 edits of the
 * file, each with its SIGHUP, 10 ms apart (a restart takes longer: at
 * 50 ms apart one may finish before the next signal, nothing to fold),
 * alternating the frequency and ending on the first one: the signals
 * that arrive during a reload fold into one, the agent ends on the last
 * file, and the restarts leave nothing behind: as many descriptors as
 * before the storm, RSS within 5 MiB, every sample BPF counted in a
 * profile that reads back.
 */
Test(agent, sighup_storm, .timeout = 180)
{
	char *dir = tl_tmpdir("agentstorm"), out[512], conf[512], line[512], pidarg[16], *log;
	int fds_before, fds_after, reloads, unchanged;
	int64_t rss_before, rss_after, in_profiles = 0;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	size_t at;

	start_on_work_split(dir, "20", out, conf, pidarg, &fx, &ag);
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	fds_before = tl_proc_settled_nfds(ag.p.pid);
	rss_before = tl_proc_rss_kib(ag.p.pid);

	for (int i = 0; i < 200; i++, usleep(5000))
		kill(ag.p.pid, SIGHUP);
	cr_expect_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0,
		     "no interval after the storm of unchanged reloads");
	log = tl_log_text(&ag.log);
	unchanged = count_lines_with(log, "configuration unchanged");
	cr_expect_gt(unchanged, 0, "no SIGHUP of the storm was seen");
	cr_expect_eq(count_lines_with(log, "reloading the configuration"), 0,
		     "an unchanged file restarted sampling");
	free(log);

	for (int i = 1; i <= 40; i++, usleep(10000)) {
		write_conf(conf, i % 2 ? 97 : 49, pidarg, out);
		kill(ag.p.pid, SIGHUP);
	}
	/* settled: an interval ends after the last restart began */
	sleep(3);
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 20, &at), 0,
		     "no interval after the storm of edits");
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 20, &at), 0);
	fds_after = tl_proc_settled_nfds(ag.p.pid);
	rss_after = tl_proc_rss_kib(ag.p.pid);
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 40), 0);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(2);
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent died in the storm");
	log = tl_log_text(&ag.log);
	reloads = count_lines_with(log, "reloading the configuration");
	cr_log_info("storm: %d unchanged, %d reloads for 40 edits; fds %d -> %d, RSS %lld -> %lld "
		    "KiB",
		    count_lines_with(log, "configuration unchanged"), reloads, fds_before,
		    fds_after, (long long)rss_before, (long long)rss_after);
	cr_expect(reloads >= 1 && reloads < 40,
		  "%d reloads for 40 edits: the signals of a reload in progress do not fold",
		  reloads);
	cr_expect_eq(last_sampling_hz(log), 49, "the agent ended at %d Hz, the last file says 49",
		     last_sampling_hz(log));
	/* fewer is no leak: the memory budget closes the debug files of
	 * binaries it drops at an interval's end (agent/membudget.h) */
	cr_expect_leq(fds_after, fds_before, "%d descriptors before the storm, %d after: leaked",
		      fds_before, fds_after);
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer keeps freed memory in quarantine (256 MiB) and
	 * shadow for all it touched: RSS is the sanitizer's, not the
	 * agent's. LeakSanitizer checks the agent's memory at its exit. */
	cr_log_info("sanitized build: the RSS bound (5 MiB) NOT CHECKED: ASan's quarantine "
		    "holds freed memory (%lld -> %lld KiB)",
		    (long long)rss_before, (long long)rss_after);
#else
	cr_expect_leq(rss_after, rss_before + 5 * 1024, "RSS %lld KiB before the storm, %lld after",
		      (long long)rss_before, (long long)rss_after);
#endif

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++)
		in_profiles += ag_check_process_profile(&st.ents[i], st.gp[i]);
	cr_expect_eq(in_profiles, ag_logged_samples(log, NULL, NULL),
		     "BPF counted %lld samples across the storm, the profiles hold %lld",
		     (long long)ag_logged_samples(log, NULL, NULL), (long long)in_profiles);
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

/*
 * A reload whose file parses but cannot start (the BTF file it names does
 * not exist) goes on with the configuration that ran: one line says so,
 * sampling resumes at the old frequency and profiles keep coming; before,
 * the agent exited.
 */
Test(agent, reload_that_cannot_start_keeps_the_old_configuration, .timeout = 120)
{
	char *dir = tl_tmpdir("agentbadstart"), out[512], conf[512], line[512], pidarg[16], *log;
	struct tl_proc fx;
	struct ag_run ag;
	size_t at;
	FILE *f;

	start_on_work_split(dir, "10", out, conf, pidarg, &fx, &ag);
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	write_conf(conf, 97, pidarg, out);
	f = fopen(conf, "a");
	cr_assert_not_null(f);
	fprintf(f, "btf = %s/no-such-vmlinux\n", dir);
	fclose(f);
	kill(ag.p.pid, SIGHUP);
	cr_expect_eq(tl_log_wait(&ag.log, at, "did not start", 30, &at), 0,
		     "a reload that cannot start was not reported");
	cr_expect_eq(tl_log_wait(&ag.log, at, "sampling at 49 Hz", 30, &at), 0,
		     "sampling did not resume with the previous configuration");
	cr_expect_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0,
		     "no interval after the failed reload");
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	cr_expect_eq(ag_stop_agent(&ag), 0, "the agent did not exit 0 after a failed reload");
	log = tl_log_text(&ag.log);
	cr_expect(strstr(log, "no-such-vmlinux"), "the error does not name the file");
	free(log);
	tl_log_free(&ag.log);
}
