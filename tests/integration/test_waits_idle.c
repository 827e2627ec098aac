// SPDX-License-Identifier: BSD-2-Clause
/*
 * The wait sampler's shortcut for a backend idle for its client (issue
 * 31, bpf/waits.bpf.h): such a visit takes the stacks of the thread's last
 * idle visit rather than unwinding again. Two waits carry the same labels
 * (Client/ClientRead, no statement) at different places: the password
 * exchange of a new connection (under ClientAuthentication) and the wait
 * for the next statement (ReadCommand). A client stalls 2 s before its
 * password, then stays idle 3 s: the stacks of its idle time must be the
 * wait for the next statement, not the authentication's taken again. On
 * the switch path (kernels without the iterator) every wait takes its own
 * stacks: the same expectations hold.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopprof.h"
#include "pgcluster.h"
#include "record_env.h"
#include "testlib.h"

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* The clients' wire protocol: a socket to argv[1], msg() and read(). */
#define PY_WIRE                                                                                    \
	"import socket, struct, sys, time\n"                                                       \
	"s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"                              \
	"def msg(t, b): return t + struct.pack('!I', len(b) + 4) + b\n"                            \
	"def read():\n"                                                                            \
	"    h = b''\n"                                                                            \
	"    while len(h) < 5: h += s.recv(5 - len(h))\n"                                          \
	"    n = struct.unpack('!I', h[1:5])[0] - 4; b = b''\n"                                    \
	"    while len(b) < n: b += s.recv(n - len(b))\n"                                          \
	"    return h[:1], b\n"

/* A client of the server at the socket argv[1] as user waiter (password
 * "pw", cleartext): its startup packet, 2 s of silence when asked for the
 * password, the password, 3 s idle, then its backend's pid ("pid=N"). */
static const char client_py[] =
	PY_WIRE "p = struct.pack('!I', 196608) + b'user\\0waiter\\0database\\0postgres\\0\\0'\n"
		"s.sendall(struct.pack('!I', len(p) + 4) + p)\n"
		"t, b = read(); assert t == b'R' and b[:4] == struct.pack('!I', 3), (t, b)\n"
		"time.sleep(2)\n"
		"s.sendall(msg(b'p', b'pw\\0'))\n"
		"while read()[0] != b'Z': pass\n"
		"time.sleep(3)\n"
		"s.sendall(msg(b'Q', b'SELECT pg_backend_pid()\\0'))\n"
		"while True:\n"
		"    t, b = read()\n"
		"    if t == b'D': print('pid=%s' % b[6:].decode())\n"
		"    if t == b'Z': break\n";

/* The offcpu recording of the cluster while the client script (written
 * as dir/name) runs against it: read back, its backend's pid in *pid, the
 * recorder's log in rec. */
static struct gp_profile *record_client(const char *dir, const char *name, const char *script,
					long *pid, struct rec_run *rec)
{
	char out[512], pm[16], cmd[4096], *o = NULL;
	const char *t;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/%s.py", dir, name);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs(script, f);
	fclose(f);
	snprintf(out, sizeof(out), "%s/%s.pb.gz", dir, name);
	snprintf(pm, sizeof(pm), "%d", pg.postmaster);
	rec_start_record(rec,
			 (char *[]){ "--type", "offcpu", "-p", pm, "-d", "60", "-o", out, NULL });
	snprintf(cmd, sizeof(cmd), "python3 %s/%s.py %s/.s.PGSQL.%d 2>&1", dir, name, pg.dir,
		 pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "the client: %s", o ? o : "");
	cr_assert(o && (t = strstr(o, "pid=")) && sscanf(t, "pid=%ld", pid) == 1 && *pid > 0,
		  "no backend pid in: %s", o ? o : "");
	free(o);
	cr_assert_eq(rec_finish_record(rec, SIGINT, 30), 0);
	return rec_read_back(out);
}

Test(waits_idle, idle_stacks_taken_again_where_the_wait_is_elsewhere, .timeout = 180,
     .fini = stop_cluster)
{
	char *dir = tl_tmpdir("waits-idle"), cmd[4096], *o = NULL;
	int64_t auth_ns = 0, idle_ns = 0, other_ns = 0;
	struct gp_profile *p;
	struct rec_run rec;
	long pid = 0;
	int vi;

	rec_require_root();
	cr_assert_eq(pg_start(&pg), 0, "cannot start PostgreSQL");
	/* the waiter's connections authenticate by password, the rest as before */
	snprintf(
		cmd, sizeof(cmd),
		"psql -X -At -h %s -p %d -U postgres -c \"CREATE ROLE waiter LOGIN PASSWORD "
		"'pw'\" postgres && f=%s/data/pg_hba.conf && "
		"{ echo 'local all waiter password'; cat $f; } >$f.new && chown postgres $f.new && "
		"mv $f.new $f && psql -X -At -h %s -p %d -U postgres -c 'SELECT pg_reload_conf()' "
		"postgres 2>&1",
		pg.dir, pg.port, pg.dir, pg.dir, pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	free(o);
	/* its waits for the client: under the authentication, or not */
	p = record_client(dir, "client", client_py, &pid, &rec);
	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_eq(vi, 1);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *e = gp_label(s, "wait_event");

		if (gp_label_num(s, "tid") != pid || !e || strcmp(e, "ClientRead"))
			continue;
		if (gp_frame_pos(s, "ClientAuthentication") >= 0)
			auth_ns += s->values[vi];
		else if (gp_frame_pos(s, "ReadCommand") >= 0 || gp_frame_pos(s, "pq_getbyte") >= 0)
			idle_ns += s->values[vi];
		else
			other_ns += s->values[vi];
	}
	cr_log_info("backend %ld in ClientRead: %.3f s authenticating, %.3f s idle, %.3f s "
		    "elsewhere",
		    pid, auth_ns / 1e9, idle_ns / 1e9, other_ns / 1e9);
	cr_expect_geq(auth_ns, 1000000000LL, "%.3f s under ClientAuthentication, of 2 s",
		      auth_ns / 1e9);
	cr_expect_geq(idle_ns, 2000000000LL,
		      "%.3f s idle under ReadCommand, of 3 s (%.3f s under ClientAuthentication, "
		      "%.3f s elsewhere)",
		      idle_ns / 1e9, auth_ns / 1e9, other_ns / 1e9);
	gp_free(p);
	tl_log_free(&rec.log);
}

/* A client of the server at the socket argv[1] (trust) that sends a
 * statement every 20 ms for 4 s, idle in between, then its backend's pid
 * ("pid=N"): its backend runs between any two visits of the wait sampler. */
static const char busy_py[] =
	PY_WIRE "p = struct.pack('!I', 196608) + b'user\\0postgres\\0database\\0postgres\\0\\0'\n"
		"s.sendall(struct.pack('!I', len(p) + 4) + p)\n"
		"while read()[0] != b'Z': pass\n"
		"end = time.time() + 4\n"
		"while time.time() < end:\n"
		"    s.sendall(msg(b'Q', b'SELECT 1\\0'))\n"
		"    while read()[0] != b'Z': pass\n"
		"    time.sleep(0.02)\n"
		"s.sendall(msg(b'Q', b'SELECT pg_backend_pid()\\0'))\n"
		"while True:\n"
		"    t, b = read()\n"
		"    if t == b'D': print('pid=%s' % b[6:].decode())\n"
		"    if t == b'Z': break\n";

/* A backend that ran since the last visit but waits for its client where
 * it waited idle then (the same user pc and sp) is counted under its idle
 * labels and stacks with no read of its memory: the same profile (its
 * idle time under ReadCommand, Client/ClientRead, no statement) as when
 * every such visit read its statement and wait event. */
Test(waits_idle, idle_again_between_statements_reads_nothing, .timeout = 180, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("waits-busy");
	int64_t idle_ns = 0, other_ns = 0;
	struct gp_profile *p;
	struct rec_run rec;
	long long again = -1;
	const char *l;
	long pid = 0;
	int vi;

	rec_require_root();
	cr_assert_eq(pg_start(&pg), 0, "cannot start PostgreSQL");
	p = record_client(dir, "busy", busy_py, &pid, &rec);
	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_eq(vi, 1);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *e = gp_label(s, "wait_event");

		if (gp_label_num(s, "tid") != pid)
			continue;
		if (e && !strcmp(e, "ClientRead") && !gp_label(s, "query") &&
		    (gp_frame_pos(s, "ReadCommand") >= 0 || gp_frame_pos(s, "pq_getbyte") >= 0))
			idle_ns += s->values[vi];
		else
			other_ns += s->values[vi];
	}
	cr_log_info("backend %ld: %.3f s idle for its client, %.3f s otherwise", pid, idle_ns / 1e9,
		    other_ns / 1e9);
	cr_expect_geq(idle_ns, 3000000000LL, "%.3f s idle under ReadCommand, of ~4 s",
		      idle_ns / 1e9);
	if (!strstr(rec.log.buf, "timed at every switch")) {
		l = strstr(rec.log.buf, "not run since, ");
		if (l)
			sscanf(l, "not run since, %lld idle where", &again);
		cr_log_info("visits idle where idle last: %lld", again);
		cr_expect_geq(again, 20, "%lld visits idle where idle last (of ~40)", again);
	}
	gp_free(p);
	tl_log_free(&rec.log);
}
