// SPDX-License-Identifier: BSD-2-Clause
/*
 * Off-CPU profiles (`ebprof record --type offcpu`), read back with go tool
 * pprof: the offcpu_split fixture's main thread waits 3:1 in two functions
 * (nanosleep, a pipe read), and its time away must split so, under
 * complete stacks from main, and with its CPU time account for its wall
 * time. On PostgreSQL 15 a backend blocked on a row another session holds
 * FOR UPDATE is away in Lock/transactionid under the lock wait (the
 * whole wait, through the deadlock check that wakes it after 1 s),
 * labelled with its statement; the session holding the row sleeps inside a
 * PL/pgSQL function, whose frame its wait carries on both paths; an idle
 * connection waits in Client/ClientRead, state idle; `ebprof flamegraph` draws the lock wait as a
 * Lock:transactionid frame and leaves the idle time out unless --idle.
 * (Bad options, and which path each kernel takes: test_offcpu_paths.c.)
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gopprof.h"
#include "pgcluster.h"
#include "record_env.h"
#include "testlib.h"

/* How one recording of the offcpu_split fixture split its main thread's
 * time away (ns), leaving out its wait for "go" (fixture_start()): the
 * sampled path counts it from the start, the switch path not at all (it
 * began before). */
struct split {
	int64_t sleeping, reading, main_ns, other, nsleeps, nreads;
};

static void read_split(const char *out, pid_t pid, struct split *sp)
{
	struct gp_profile *p = rec_read_back(out);
	int vi = gp_type(p, "offcpu/nanoseconds");

	memset(sp, 0, sizeof(*sp));
	cr_assert_eq(vi, 1, "sample types: samples/count, offcpu/nanoseconds");
	cr_expect_not_null(gp_comment(p, "off-CPU, "));
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (gp_label_num(s, "tid") != pid || rec_waits_for_go(s))
			continue; /* another thread, or the wait for "go" */
		sp->main_ns += s->values[vi];
		cr_expect_not_null(gp_label(s, "state"));
		if (gp_from_main(s, "wait_sleeping")) {
			sp->sleeping += s->values[vi];
			sp->nsleeps += s->values[0];
		} else if (gp_from_main(s, "wait_reading")) {
			sp->reading += s->values[vi];
			sp->nreads += s->values[0];
		} else
			sp->other += s->values[vi];
	}
	gp_free(p);
}

static void expect_split(const struct split *sp, const char *how, long long wall, long long cpu)
{
	double share;

	cr_assert_gt(sp->sleeping + sp->reading, 0,
		     "%s: no waits of the main thread under its "
		     "functions",
		     how);
	share = 100.0 * sp->sleeping / (sp->sleeping + sp->reading);
	cr_expect(share >= 65 && share <= 85,
		  "%s: nanosleep %.1f%% of the time away, expected 75 +- 10", how, share);
	cr_expect_leq(sp->other, sp->main_ns / 20,
		      "%s: %lld ns of %lld away not under either "
		      "function",
		      how, (long long)sp->other, (long long)sp->main_ns);
	/* the thread's time: on the CPU or away, nothing else */
	cr_expect(sp->main_ns + cpu >= wall * 0.9 && sp->main_ns + cpu <= wall * 1.1,
		  "%s: off-CPU %.3f s + CPU %.3f s against %.3f s of wall time", how,
		  sp->main_ns / 1e9, cpu / 1e9, wall / 1e9);
}

/* The fixture's main thread under `--unwind mode` with waits under
 * `period` microseconds taken by chance (NULL: the default), recorded at
 * once by the switch path and, when sampled is true, the iterator (at 100
 * Hz: 400 visits of 4 s). With a period of 20 ms, the 30 ms sleeps are
 * all taken whole and about half the 10 ms reads (as 20 ms each), which
 * must still add up. */
static void check_split(const char *mode, const char *period, bool sampled)
{
	char *dir = tl_tmpdir("offcpu"), out[512], out_it[512], exe[512], pidarg[16], line[128];
	long long wall = 0, cpu = 0;
	struct tl_proc fx;
	struct rec_run rec, rec_it;
	struct split sw, it;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/offcpu.pb.gz", dir);
	snprintf(out_it, sizeof(out_it), "%s/offcpu-iterator.pb.gz", dir);
	snprintf(exe, sizeof(exe), "%s/offcpu_split", tl_path("fixtures/stacks"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "4", NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	/* the iterator first: the switch path cuts a wait in progress at a
	 * drain (every second) with its kernel stack only, so the wait for
	 * "go" must not outlast its first one; the iterator's parts of it
	 * have their whole stacks */
	if (sampled)
		rec_start_record(&rec_it,
				 (char *[]){ "--type", "offcpu", "--offcpu-path", "iterator",
					     "--offcpu-rate", "100", "--unwind", (char *)mode, "-p",
					     pidarg, "-d", "60", "-o", out_it, NULL });
	rec_start_record(&rec, (char *[]){ "--type", "offcpu", "--offcpu-path", "switch",
					   "--unwind", (char *)mode, "--offcpu-period",
					   period ? (char *)period : "10000", "-p", pidarg, "-d",
					   "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait_line(fx.out, "wall_ns=", line, sizeof(line), 30), 0);
	sscanf(line, "wall_ns=%lld cpu_ns=%lld", &wall, &cpu);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	if (sampled)
		cr_assert_eq(rec_finish_record(&rec_it, 0, 30), 0);
	read_split(out, pid, &sw);
	expect_split(&sw, "switch", wall, cpu);
	if (period) /* each sleep taken, about half the reads */
		cr_expect(sw.nreads >= sw.nsleeps * 0.3 && sw.nreads <= sw.nsleeps * 0.7,
			  "period %s us: %lld reads taken for %lld sleeps, expected about half",
			  period, (long long)sw.nreads, (long long)sw.nsleeps);
	tl_log_free(&rec.log);
	if (!sampled)
		return;
	{
		char *log = tl_log_text(&rec_it.log);

		cr_expect(log && strstr(log, "off-CPU: sampled by a sleepable task iterator"),
			  "the iterator's recorder does not say it samples");
		free(log);
	}
	read_split(out_it, pid, &it);
	expect_split(&it, "iterator", wall, cpu);
	tl_log_free(&rec_it.log);
}

/* Both paths at once where the kernel has the iterator (5.18+); the
 * switch path alone where it does not (kernel_takes_its_path says which). */
Test(offcpu, time_away_splits_3_to_1_under_complete_stacks, .timeout = 120)
{
	check_split("dwarf", NULL, tl_kernel_at_least(5, 18));
}

/* Waits shorter than the period are taken by chance, counted as the
 * period: the split and the thread's time still hold. */
Test(offcpu, short_waits_taken_by_chance_still_add_up, .timeout = 120)
{
	check_split("dwarf", "20000", false);
}

/* kernels without bpf_loop() unwind off-CPU stacks by tail calls */
Test(offcpu, time_away_splits_3_to_1_by_tail_calls, .timeout = 120)
{
	check_split("dwarf-tail", NULL, false);
}

/* A target exits and an untargeted process is given its PID (clone3
 * set_tid): the newcomer's waits are not taken for the target's. The
 * target (a shell) waits for its input twice; the second wait, timed,
 * lasts 1.5 s; then cat, given its PID, waits as long. */
Test(offcpu, pid_taken_again_is_not_a_target, .timeout = 120)
{
	char *dir = tl_tmpdir("offcpureuse"), out[512], pids[64];
	char *sh[] = { "sh", "-c", "read a; read b", NULL };
	struct tl_proc keep, old, newer;
	int64_t old_ns = 0, new_ns = 0;
	struct gp_profile *p;
	struct rec_run rec;
	int vi;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/offcpu.pb.gz", dir);
	cr_assert_eq(tl_spawn(&keep, (char *[]){ "sleep", "60", NULL }, false, false, false), 0);
	cr_assert_eq(tl_spawn(&old, sh, true, false, false), 0);
	snprintf(pids, sizeof(pids), "%d,%d", keep.pid, old.pid);
	rec_start_record(&rec, (char *[]){ "--type", "offcpu", "--offcpu-period", "0", "-p", pids,
					   "-d", "60", "-o", out, NULL });
	fputs("a\n", old.in);
	usleep(1500 * 1000);
	fputs("b\n", old.in);
	cr_assert_eq(tl_wait(&old, 30), 0);
	/* its PID at once, to a process that waits as long */
	cr_assert_eq(tl_spawn_as(&newer, old.pid, (char *[]){ "cat", NULL }), 0,
		     "clone3 with set_tid %d", old.pid);
	usleep(1500 * 1000);
	fputs("x\n", newer.in);
	usleep(200 * 1000);
	cr_assert_eq(tl_wait(&newer, 10), 0);
	kill(keep.pid, SIGTERM);
	tl_wait(&keep, 10);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	p = rec_read_back(out);
	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_geq(vi, 0);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *name = gp_label(s, "thread_name");

		if (gp_label_num(s, "pid") != old.pid || !name)
			continue;
		if (!strcmp(name, "sh"))
			old_ns += s->values[vi];
		else
			new_ns += s->values[vi];
	}
	cr_expect_gt(old_ns, 1000000000, "the target waited %.3f s, expected 1.5", old_ns / 1e9);
	cr_expect_eq(new_ns, 0, "%.3f s of waits of the process given the target's PID",
		     new_ns / 1e9);
	gp_free(p);
	tl_log_free(&rec.log);
}

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* Sum of offcpu ns (value vi) of samples whose label key is value. */
static int64_t labelled(const struct gp_profile *p, int vi, const char *key, const char *value,
			const struct gp_sample **one)
{
	int64_t ns = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const char *v = gp_label(&p->samples[i], key);

		if (v && !strcmp(v, value)) {
			ns += p->samples[i].values[vi];
			if (one && (!*one || p->samples[i].values[vi] > (*one)->values[vi]))
				*one = &p->samples[i];
		}
	}
	return ns;
}

/* On a failed check: the waits of at least 0.2 s with their labels and
 * leaf frames, to tell a wait lost from one labelled otherwise. */
static void show_long_waits(const struct gp_profile *p, int vi)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		char labels[512] = "", frames[256] = "";
		size_t n = 0, m = 0;

		if (s->values[vi] < 200000000)
			continue;
		for (size_t l = 0; l < s->nlabels && n < sizeof(labels); l++)
			n += snprintf(labels + n, sizeof(labels) - n, " %s=%s", s->labels[l].key,
				      strcmp(s->labels[l].key, "query") ? s->labels[l].value
									: "(...)");
		for (size_t f = 0; f < s->nframes && f < 6 && m < sizeof(frames); f++)
			m += snprintf(frames + m, sizeof(frames) - m, " %s",
				      s->frames[f].fn ? s->frames[f].fn : "?");
		cr_log_info("%.3f s in %lld waits:%s; leaf:%s", s->values[vi] / 1e9,
			    (long long)s->values[0], labels, frames);
	}
}

/* The recording as an SVG: the lock wait as its wait-event frame, idle
 * time left out (and said so) unless --idle. */
static void check_svg(const char *in, const char *dir)
{
	char cmd[2048], *o = NULL;

	snprintf(cmd, sizeof(cmd),
		 "%s flamegraph -o %s/w.svg %s && %s flamegraph --idle -o %s/i.svg %s && "
		 "xmllint --noout %s/w.svg %s/i.svg && "
		 "grep -c 'data-name=\"Lock:transactionid\"' %s/w.svg && "
		 "grep -c 'idle (waiting for the client) .* not shown' %s/w.svg && "
		 "! grep -q 'ClientRead (idle)' %s/w.svg && "
		 "grep -c 'data-name=\"Client:ClientRead (idle)\"' %s/i.svg 2>&1",
		 tl_path("ebprof"), dir, in, tl_path("ebprof"), dir, in, dir, dir, dir, dir, dir,
		 dir);
	cr_expect_eq(tl_sh(cmd, &o), 0, "off-CPU SVG: %s", o ? o : "");
	free(o);
}

/* The recording at path of a wait in progress all along (a row lock held
 * from before it to after it): the waiting UPDATE's backend in
 * Lock/transactionid, under its normalized statement, for at least 80%
 * of the recording. */
static void check_in_progress(const char *path, const char *how)
{
	struct gp_profile *p = rec_read_back(path);
	int vi = gp_type(p, "offcpu/nanoseconds");
	int64_t ns = 0;

	cr_assert_eq(vi, 1, "%s", how);
	cr_assert_gt(p->duration_ns, 0, "%s", how);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *e = gp_label(s, "wait_event"), *q = gp_label(s, "query");

		if (e && !strcmp(e, "transactionid") && q &&
		    strstr(q, "UPDATE acct SET v = v + $1 WHERE id = $2"))
			ns += s->values[vi];
	}
	if (ns < p->duration_ns * 0.8)
		show_long_waits(p, vi);
	cr_expect_geq(ns, p->duration_ns * 0.8,
		      "%s: a lock wait in progress all along: %.3f s of Lock/transactionid under "
		      "the UPDATE in a recording of %.3f s",
		      how, ns / 1e9, p->duration_ns / 1e9);
	gp_free(p);
}

/* The lock wait and the idle client as one path recorded them. */
static void check_lock_and_idle(const char *out, const char *how, double update_ms, double idle_s)
{
	const struct gp_sample *lock = NULL, *idle = NULL;
	struct gp_profile *p = rec_read_back(out);
	int64_t lock_ns, idle_ns;
	const char *q;
	int vi;

	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_eq(vi, 1);
	lock_ns = labelled(p, vi, "wait_event", "transactionid", NULL);
	idle_ns = labelled(p, vi, "state", "idle", &idle);
	/* the longest part with a user stack: on the switch path, the part
	 * of the wait cut at a drain has its kernel stack only */
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *e = gp_label(s, "wait_event");

		if (e && !strcmp(e, "transactionid") && gp_frame_pos(s, "main") >= 0 &&
		    (!lock || s->values[vi] > lock->values[vi]))
			lock = s;
	}
	cr_log_info("%s: Lock/transactionid %.3f s (the UPDATE took %.3f s); idle %.3f s (the "
		    "session was %.3f s old)",
		    how, lock_ns / 1e9, update_ms / 1e3, idle_ns / 1e9, idle_s);
	if (!(lock_ns >= update_ms * 0.7e6 && lock_ns <= update_ms * 1.1e6) ||
	    !(idle_ns >= idle_s * 0.5e9 && idle_ns <= idle_s * 1.1e9 + 0.5e9))
		show_long_waits(p, vi);
	cr_expect(lock_ns >= update_ms * 0.7e6 && lock_ns <= update_ms * 1.1e6,
		  "%s: %.3f s in Lock/transactionid, the UPDATE took %.3f s", how, lock_ns / 1e9,
		  update_ms / 1e3);
	cr_assert_not_null(lock, "%s: no part of the lock wait with a user stack reaching main",
			   how);
	cr_expect_str_eq(gp_label(lock, "wait_event_type"), "Lock");
	q = gp_label(lock, "query");
	cr_expect(q && strstr(q, "UPDATE acct SET v = v + $1 WHERE id = $2"),
		  "%s: the waiting statement, normalized: %s", how, q ? q : "(none)");
	cr_expect_geq(gp_frame_pos(lock, "XactLockTableWait"), 0,
		      "%s: the lock wait's stack holds XactLockTableWait", how);

	/* its age counts its start (fork, authentication) too */
	/* 0.5 s more: the backend waits for its client from its fork, a
	 * moment before the server sets backend_start (0.25 s under TCG) */
	cr_expect(idle_ns >= idle_s * 0.5e9 && idle_ns <= idle_s * 1.1e9 + 0.5e9,
		  "%s: %.3f s idle, the session was %.3f s old at its first statement", how,
		  idle_ns / 1e9, idle_s);
	cr_assert_not_null(idle, "%s", how);
	cr_expect_str_eq(gp_label(idle, "wait_event_type"), "Client");
	cr_expect_str_eq(gp_label(idle, "wait_event"), "ClientRead");
	cr_expect_null(gp_label(idle, "query"));

	/* the numbering checked against the server's own names: its
	 * background writer waits in Activity/BgWriterMain or ...Hibernate */
	{
		const struct gp_sample *bg = NULL;
		const char *e;

		labelled(p, vi, "backend_type", "background writer", &bg);
		cr_assert_not_null(bg, "%s: no wait of the background writer", how);
		e = gp_label(bg, "wait_event");
		cr_expect_str_eq(gp_label(bg, "wait_event_type"), "Activity");
		cr_expect(e && !strncmp(e, "BgWriter", 8), "%s: background writer in %s", how,
			  e ? e : "-");
	}
	gp_free(p);
}

/* The session holding the row waits in PgSleep inside the PL/pgSQL
 * function hold_row(integer) (its signature as PostgreSQL prints it: no
 * schema on the search path), 0.1 s at a time at its line 4: the frame is
 * on most of the wait's stacks on both paths (the iterator reads it at a
 * visit; the switch path as a wait begins, so the sleeps begun before
 * userspace looked at the backend's plpgsql.so have none). */
static void check_plpgsql_hold(const char *out, const char *how)
{
	struct gp_profile *p = rec_read_back(out);
	int vi = gp_type(p, "offcpu/nanoseconds");
	int64_t ns = 0, framed = 0;

	cr_assert_eq(vi, 1);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *e = gp_label(s, "wait_event");
		bool hit = false;

		if (!e || strcmp(e, "PgSleep"))
			continue;
		ns += s->values[vi];
		for (size_t j = 0; j < s->nframes; j++) {
			const struct gp_frame *f = &s->frames[j];

			hit |= f->fn && f->file && !strcmp(f->file, "plpgsql") &&
			       !strcmp(f->fn, "hold_row(integer)") && f->line == 4;
		}
		framed += hit ? s->values[vi] : 0;
	}
	cr_log_info("%s: PgSleep %.3f s, %.3f s of it under hold_row(integer):4", how, ns / 1e9,
		    framed / 1e9);
	cr_expect_gt(ns, 0, "%s: no PgSleep wait", how);
	cr_expect_geq(framed * 2, ns,
		      "%s: %.3f s of %.3f s in PgSleep under the PL/pgSQL frame "
		      "hold_row(integer) at line 4",
		      how, framed / 1e9, ns / 1e9);
	gp_free(p);
}

/* On every kernel the path it takes (the iterator on 5.18+), where the
 * kernel has the iterator the switch path too, recording at once. */
Test(offcpu, postgres_lock_wait_and_idle_client, .timeout = 300, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("offcpu-pg"), out[512], out_sw[512], pm[16], cmd[4096], *o = NULL;
	bool both = tl_kernel_at_least(5, 18);
	struct rec_run rec, rec_sw;
	double update_ms = 0, idle_s = 0;
	const char *t;

	rec_require_root();
	cr_assert_eq(pg_start(&pg), 0, "cannot start PostgreSQL");
	snprintf(cmd, sizeof(cmd),
		 "psql -X -At -h %s -p %d -U postgres -c 'CREATE TABLE acct (id int PRIMARY KEY, "
		 "v int)' -c 'INSERT INTO acct VALUES (1, 0)' -c 'CREATE FUNCTION hold_row(s int) "
		 "RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n  FOR i IN 1..s * 10 LOOP\n    "
		 "PERFORM pg_sleep(0.1);\n  END LOOP;\nEND\n$$' "
		 "postgres 2>&1",
		 pg.dir, pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	free(o);
	snprintf(out, sizeof(out), "%s/pg.pb.gz", dir);
	snprintf(out_sw, sizeof(out_sw), "%s/pg-switch.pb.gz", dir);
	snprintf(pm, sizeof(pm), "%d", pg.postmaster);
	rec_start_record(&rec,
			 (char *[]){ "--type", "offcpu", "-p", pm, "-d", "90", "-o", out, NULL });
	if (both)
		rec_start_record(&rec_sw, (char *[]){ "--type", "offcpu", "--offcpu-path", "switch",
						      "-p", pm, "-d", "90", "-o", out_sw, NULL });
	/* one session holds the row; once it does, the other updates it
	 * (psql's \timing: how long it waited); once the server shows the
	 * UPDATE waiting on the row, two more recordings of 2 s run inside
	 * the wait (the path the kernel takes, and the switch path), then the
	 * holder is left 1 s more and cancelled, which ends its transaction.
	 * A third connection sits idle, its client silent for 10 s, then
	 * asks the server how long it has been connected. Under TCG (vmtest)
	 * every psql takes seconds to start (a fixed 8 s hold once ended
	 * before the UPDATE began), so the hold follows what the server sees,
	 * and what is expected is what the server saw, not the sleeps. */
	snprintf(
		cmd, sizeof(cmd),
		"P='psql -X -At -h %s -p %d -U postgres'; E='%s record --type offcpu -p %s -d 2'; "
		"$P -c 'BEGIN; SELECT v FROM acct WHERE id = 1 FOR UPDATE; SELECT hold_row(120); "
		"COMMIT;' postgres & "
		"until [ \"$($P -c \"SELECT count(*) FROM pg_stat_activity WHERE wait_event = "
		"'PgSleep'\" postgres)\" = 1 ]; do sleep 0.05; done; "
		"$P -c '\\timing on' -c 'UPDATE acct SET v = v + 1 WHERE id = 1' postgres & "
		"i=0; until [ \"$($P -c \"SELECT count(*) FROM pg_stat_activity WHERE wait_event = "
		"'transactionid'\" postgres)\" = 1 ] || [ $i -ge 600 ]; do sleep 0.05; "
		"i=$((i + 1)); done; "
		"$E -o %s/inprog.pb.gz 2>%s/inprog.log & a=$!; "
		"$E --offcpu-path switch -o %s/inprog-switch.pb.gz 2>%s/inprog-switch.log & b=$!; "
		"wait $a || echo 'in-progress recording failed'; "
		"wait $b || echo 'in-progress recording (switch) failed'; sleep 1; "
		"$P -c \"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE "
		"'%%hold_row(120)%%' AND pid <> pg_backend_pid()\" postgres >/dev/null; "
		"(sleep 10; echo \"SELECT 'idle_s=' || extract(epoch FROM statement_timestamp() - "
		"backend_start) FROM pg_stat_activity WHERE pid = pg_backend_pid();\") | "
		"$P postgres & wait",
		pg.dir, pg.port, tl_path("ebprof"), pm, dir, dir, dir, dir);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	cr_expect(o && !strstr(o, "recording failed"), "%s", o);
	cr_assert(o && (t = strstr(o, "Time: ")) && sscanf(t, "Time: %lf ms", &update_ms) == 1,
		  "no \\timing of the UPDATE in: %s", o ? o : "");
	cr_assert(o && (t = strstr(o, "idle_s=")) && sscanf(t, "idle_s=%lf", &idle_s) == 1,
		  "the idle session's age is not in: %s", o);
	cr_assert_gt(update_ms, 1000, "the UPDATE did not wait for the row: %.0f ms", update_ms);
	free(o);
	cr_assert_eq(rec_finish_record(&rec, SIGINT, 30), 0);
	if (both)
		cr_assert_eq(rec_finish_record(&rec_sw, SIGINT, 30), 0);

	check_lock_and_idle(out, both ? "iterator" : "switch", update_ms, idle_s);
	check_plpgsql_hold(out, both ? "iterator" : "switch");
	if (both) {
		check_lock_and_idle(out_sw, "switch", update_ms, idle_s);
		check_plpgsql_hold(out_sw, "switch");
	}
	snprintf(cmd, sizeof(cmd), "%s/inprog.pb.gz", dir);
	check_in_progress(cmd, both ? "in progress, iterator" : "in progress, switch");
	snprintf(cmd, sizeof(cmd), "%s/inprog-switch.pb.gz", dir);
	check_in_progress(cmd, "in progress, switch");
	tl_log_free(&rec.log);
	if (both)
		tl_log_free(&rec_sw.log);
	check_svg(out, dir);
}
