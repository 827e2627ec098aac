// SPDX-License-Identifier: BSD-2-Clause
/*
 * Off-CPU SVG flamegraphs (flamegraph.h, flamegraph_waits.c): a real
 * off-CPU profile built through the profile API, with the labels the
 * builder gives (state, wait_event_type, wait_event), rendered: time away
 * as the value, a frame per wait event above the root, colours by wait
 * class with a legend, idle time left out by default and said so, drawn
 * with the option; the same through `ebprof flamegraph` on a pprof file.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "formats/flamegraph.h"
#include "formats/render.h"
#include "flamegraph_svg.h"
#include "testlib.h"

#define S 1000000000LL /* ns */

/* The frame named name whose class list has cls. */
static struct frame frame_in(const char *svg, const char *name, const char *cls)
{
	struct frame fr;

	for (int i = 0; nth_frame(svg, name, i, &fr) == 0; i++)
		if (strstr(fr.cls, cls))
			return fr;
	cr_assert_fail("no frame %s of class %s", name, cls);
	return fr;
}

/* The <g id="legend"> element's text. */
static char *legend(const char *svg)
{
	const char *s = strstr(svg, "<g id=\"legend\">"), *e;

	cr_assert_not_null(s);
	e = strstr(s, "</g>");
	cr_assert_not_null(e);
	return strndup(s, (size_t)(e - s));
}

/* ---- the profile --------------------------------------------------- */

struct locs {
	uint64_t main, lock, xlog, read, sched, secure, io;
};

static void wait_sample(struct profile *p, const uint64_t *stack, size_t n, int64_t waits,
			int64_t ns, const char *state, const char *type, const char *event,
			const char *db)
{
	int64_t v[2] = { waits, ns };
	struct pf_label lab[6];
	size_t nl = 0;

	lab[nl++] = profile_label_num(p, "pid", 4242, NULL);
	lab[nl++] = profile_label_str(p, "thread_name", "postgres");
	lab[nl++] = profile_label_str(p, "state", state);
	if (type) {
		lab[nl++] = profile_label_str(p, "wait_event_type", type);
		lab[nl++] = profile_label_str(p, "wait_event", event);
	}
	if (db)
		lab[nl++] = profile_label_str(p, "database", db);
	cr_assert_eq(profile_add_sample(p, stack, n, v, lab, nl), 0);
}

/*
 * Lock:transactionid 3 s (3 waits), LWLock:WALWrite 0.5 s, IO:DataFileRead
 * 1 s (disk), no wait event: runnable 0.25 s, uninstrumented (sleeping)
 * 0.25 s; idle (Client:ClientRead, no statement) 12.3 s in 10 waits.
 */
static struct profile *offcpu_profile(void)
{
	struct profile *p = profile_new();
	uint64_t app, kern;
	struct locs L;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "offcpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "offcpu", "nanoseconds", 1), 0);
	app = tl_mapping(p, 0x400000, 0x900000, "/usr/lib/postgresql/16/bin/postgres");
	kern = tl_mapping(p, 0xffffffff81000000, 0xffffffff82000000, "[kernel.kallsyms]");
	L.main = tl_loc(p, app, 0x401000, "PostgresMain");
	L.lock = tl_loc(p, app, 0x402000, "XactLockTableWait");
	L.xlog = tl_loc(p, app, 0x403000, "XLogFlush");
	L.read = tl_loc(p, app, 0x404000, "mdread");
	L.secure = tl_loc(p, app, 0x405000, "secure_read");
	L.io = tl_loc(p, kern, 0xffffffff81002000, "io_schedule");
	L.sched = tl_loc(p, kern, 0xffffffff81001000, "schedule");

	wait_sample(p, (uint64_t[]){ L.sched, L.lock, L.main }, 3, 3, 3 * S, "sleeping", "Lock",
		    "transactionid", "shop");
	wait_sample(p, (uint64_t[]){ L.sched, L.xlog, L.main }, 3, 1, S / 2, "sleeping", "LWLock",
		    "WALWrite", "shop");
	wait_sample(p, (uint64_t[]){ L.io, L.read, L.main }, 3, 2, S, "disk", "IO", "DataFileRead",
		    "crm");
	wait_sample(p, (uint64_t[]){ L.sched, L.main }, 2, 1, S / 4, "runnable", NULL, NULL, "crm");
	wait_sample(p, (uint64_t[]){ L.sched, L.main }, 2, 1, S / 4, "sleeping", "uninstrumented",
		    "uninstrumented", NULL);
	wait_sample(p, (uint64_t[]){ L.sched, L.secure, L.main }, 3, 10, 12300000000LL, "idle",
		    "Client", "ClientRead", "shop");
	return p;
}

/* ---- tests --------------------------------------------------------- */

Test(flamegraph_offcpu, wait_event_frames_over_time_away)
{
	struct profile *p = offcpu_profile();
	char *svg = render_ok(p, NULL);
	struct frame f;

	xmllint_ok(svg);
	cr_expect(flamegraph_type(p) && flamegraph_type(p)->id == PTYPE_OFFCPU);
	cr_expect_not_null(strstr(svg, ">Off-CPU time</text>"));
	cr_expect_not_null(strstr(svg, "offcpu (nanoseconds) \xc2\xb7 total 5.00 s"));
	/* 5 s without the idle time */
	cr_expect_not_null(strstr(svg, "data-total=\"5000000000\""));
	f = frame_of(svg, "Lock:transactionid");
	cr_expect_eq(f.l, 1, "wait frames stand on the root");
	cr_expect_eq(f.v, 3 * S);
	cr_expect_not_null(strstr(f.cls, "k-wait"), "%s", f.cls);
	cr_expect_not_null(
		strstr(f.title, "Lock:transactionid [wait] \xe2\x80\x94 3.00 s (60.00%)"), "%s",
		f.title);
	cr_expect_not_null(strstr(f.title, ", 3 samples"), "%s", f.title);
	cr_expect_eq(frame_of(svg, "LWLock:WALWrite").v, S / 2);
	cr_expect_eq(frame_of(svg, "LWLock:WALWrite").l, 1);
	cr_expect_eq(frame_of(svg, "IO:DataFileRead").v, S);
	/* no wait event: the state */
	cr_expect_eq(frame_of(svg, "runnable").v, S / 4);
	cr_expect_eq(frame_of(svg, "sleeping").v, S / 4);
	cr_expect_eq(frame_of(svg, "sleeping").l, 1);
	/* thread, then the stack above the wait frame */
	f = frame_of(svg, "XactLockTableWait");
	cr_expect_eq(f.l, 4);
	cr_expect_not_null(strstr(f.title, "3.00 s"), "%s", f.title);
	f = frame_in(svg, "schedule", "w-lwlock");
	cr_expect_not_null(strstr(f.title, "500.00 ms"), "%s", f.title);
	free(svg);
	profile_free(p);
}

static bool reddish(struct frame f)
{
	return f.r > f.g && f.r > f.b;
}

static bool bluish(struct frame f)
{
	return f.b > f.r && f.b > f.g;
}

Test(flamegraph_offcpu, colours_by_wait_class)
{
	struct profile *p = offcpu_profile();
	char *svg = render_ok(p, NULL), *leg;
	struct frame lock, io, lw, run, lmain, imain, lk, ik;

	lock = frame_of(svg, "Lock:transactionid");
	io = frame_of(svg, "IO:DataFileRead");
	lw = frame_of(svg, "LWLock:WALWrite");
	run = frame_of(svg, "runnable");
	cr_expect(reddish(lock), "Lock rgb(%u,%u,%u)", lock.r, lock.g, lock.b);
	cr_expect(bluish(io), "IO rgb(%u,%u,%u)", io.r, io.g, io.b);
	cr_expect(lw.r > lw.g && lw.b > lw.g, "LWLock pink rgb(%u,%u,%u)", lw.r, lw.g, lw.b);
	/* greys without a wait event */
	cr_expect_lt(abs((int)run.r - (int)run.b), 40, "runnable rgb(%u,%u,%u)", run.r, run.g,
		     run.b);
	/* every frame of a stack takes its wait's colour: the same function
	 * is red under the lock, blue under the read */
	lmain = frame_in(svg, "PostgresMain", "w-lock");
	imain = frame_in(svg, "PostgresMain", "w-io");
	cr_expect(reddish(lmain), "rgb(%u,%u,%u)", lmain.r, lmain.g, lmain.b);
	cr_expect(bluish(imain), "rgb(%u,%u,%u)", imain.r, imain.g, imain.b);
	lk = frame_in(svg, "schedule", "w-lock");
	ik = frame_in(svg, "io_schedule", "w-io");
	cr_expect(strstr(lk.cls, "k-kernel") && reddish(lk), "%s rgb(%u,%u,%u)", lk.cls, lk.r, lk.g,
		  lk.b);
	cr_expect(bluish(ik), "rgb(%u,%u,%u)", ik.r, ik.g, ik.b);
	cr_expect_not_null(strstr(frame_of(svg, "postgres").cls, "w-"));
	/* the root stays neutral */
	cr_expect_null(strstr(frame_of(svg, "all").cls, "w-"));
	/* a legend of the classes drawn, in a fixed order */
	leg = legend(svg);
	cr_expect_not_null(strstr(leg, ">Lock</text>"), "%s", leg);
	cr_expect_not_null(strstr(leg, ">LWLock</text>"));
	cr_expect_not_null(strstr(leg, ">IO</text>"));
	cr_expect_not_null(strstr(leg, ">no wait event</text>"));
	cr_expect_null(strstr(leg, ">Client</text>"), "idle is not drawn");
	cr_expect_null(strstr(leg, ">kernel</text>"), "no legend by kind");
	cr_expect_lt(strstr(leg, ">Lock<"), strstr(leg, ">IO<"));
	free(leg);
	free(svg);
	profile_free(p);
}

Test(flamegraph_offcpu, idle_left_out_unless_asked)
{
	struct profile *p = offcpu_profile();
	char *svg = render_ok(p, NULL), *leg;
	struct frame f;

	cr_expect_null(strstr(svg, "secure_read"));
	cr_expect_null(strstr(svg, "ClientRead"));
	cr_expect_not_null(strstr(svg, "idle (waiting for the client) 12.30 s not shown"));
	free(svg);

	svg = render_ok(p, &(struct flamegraph_opts){ .idle = true });
	xmllint_ok(svg);
	cr_expect_null(strstr(svg, "not shown"));
	cr_expect_not_null(strstr(svg, "data-total=\"17300000000\""));
	f = frame_of(svg, "Client:ClientRead (idle)");
	cr_expect_eq(f.l, 1);
	cr_expect_eq(f.v, 12300000000LL);
	cr_expect(f.g > f.r && f.g > f.b, "Client green rgb(%u,%u,%u)", f.r, f.g, f.b);
	cr_expect_not_null(strstr(frame_of(svg, "secure_read").cls, "w-client"));
	leg = legend(svg);
	cr_expect_not_null(strstr(leg, ">Client</text>"), "%s", leg);
	free(leg);
	free(svg);
	profile_free(p);
}

/* Only idle time: nothing drawn, and the subtitle says why. */
Test(flamegraph_offcpu, only_idle)
{
	struct profile *p = profile_new();
	uint64_t app, loc;
	char *svg;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "offcpu", "nanoseconds"), 0);
	app = tl_mapping(p, 0x400000, 0x900000, "/usr/bin/postgres");
	loc = tl_loc(p, app, 0x401000, "secure_read");
	wait_sample(p, &loc, 1, 2, 2 * S, "idle", "Client", "ClientRead", NULL);
	svg = render_ok(p, NULL);
	xmllint_ok(svg);
	cr_expect_not_null(strstr(svg, ">No samples</text>"));
	cr_expect_not_null(strstr(svg, "idle (waiting for the client) 2.00 s not shown"));
	free(svg);
	profile_free(p);
}

/* An explicit group_by: its frames on the root, the wait frames above. */
Test(flamegraph_offcpu, group_by_below_the_waits)
{
	struct profile *p = offcpu_profile();
	char *svg = render_ok(p, &(struct flamegraph_opts){ .group_by = "database" });
	struct frame f;

	xmllint_ok(svg);
	cr_expect_eq(frame_of(svg, "shop").l, 1);
	cr_expect_eq(frame_of(svg, "shop").v, 3 * S + S / 2);
	cr_expect_eq(frame_of(svg, "(no database)").l, 1);
	f = frame_of(svg, "Lock:transactionid");
	cr_expect_eq(f.l, 2);
	cr_expect(reddish(f));
	free(svg);
	profile_free(p);
}

/* A CPU profile keeps the colours by kind. */
Test(flamegraph_offcpu, cpu_profiles_unchanged)
{
	struct profile *p = profile_new();
	uint64_t app, loc;
	int64_t v[2] = { 1, 10000000 };
	struct pf_label lab;
	char *svg;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	app = tl_mapping(p, 0x400000, 0x900000, "/usr/bin/postgres");
	loc = tl_loc(p, app, 0x401000, "ExecScan");
	lab = profile_label_str(p, "state", "idle"); /* not an off-CPU profile: kept */
	cr_assert_eq(profile_add_sample(p, &loc, 1, v, &lab, 1), 0);
	cr_expect(flamegraph_type(p) && flamegraph_type(p)->id == PTYPE_CPU);
	svg = render_ok(p, NULL);
	cr_expect_not_null(strstr(svg, ">CPU flame graph</text>"));
	cr_expect_not_null(strstr(svg, "data-name=\"ExecScan\""));
	cr_expect_null(strstr(svg, " w-"));
	cr_expect_null(strstr(svg, "not shown"));
	free(svg);
	profile_free(p);
}

/* ---- through `ebprof flamegraph` ----------------------------------- */

Test(flamegraph_offcpu, the_command_takes_offcpu_profiles)
{
	char *dir = tl_tmpdir("fgoff"), in[512], out[512], err[256], cmd[600];
	struct profile *p = offcpu_profile();
	char *svg;

	snprintf(in, sizeof(in), "%s/offcpu.pb.gz", dir);
	snprintf(out, sizeof(out), "%s/offcpu.svg", dir);
	cr_assert_eq(render_to_file(p, RENDER_PPROF_GZIP, NULL, in, err, sizeof(err)), 0, "%s",
		     err);
	profile_free(p);

	fflush(NULL);
	cr_assert_eq(cmd_flamegraph(4, (char *[]){ "flamegraph", "-o", out, in, NULL }), 0);
	svg = slurp(out);
	xmllint_ok(svg);
	cr_expect_not_null(strstr(svg, ">Off-CPU time</text>"));
	cr_expect_eq(frame_of(svg, "Lock:transactionid").l, 1);
	cr_expect_not_null(strstr(svg, "12.30 s not shown"));
	cr_expect_null(strstr(svg, "secure_read"));
	free(svg);

	fflush(NULL);
	cr_assert_eq(cmd_flamegraph(5, (char *[]){ "flamegraph", "--idle", "-o", out, in, NULL }),
		     0);
	svg = slurp(out);
	cr_expect_not_null(strstr(svg, "data-name=\"secure_read\""));
	cr_expect_null(strstr(svg, "not shown"));
	free(svg);

	/* the number of waits instead of the time */
	fflush(NULL);
	cr_assert_eq(cmd_flamegraph(6, (char *[]){ "flamegraph", "--sample-type", "samples", "-o",
						   out, in, NULL }),
		     0);
	svg = slurp(out);
	cr_expect_not_null(strstr(svg, ">Off-CPU time</text>"));
	cr_expect_not_null(strstr(svg, "data-total=\"8\""));
	cr_expect_not_null(strstr(frame_of(svg, "Lock:transactionid").title, "3 samples"));
	free(svg);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(tl_sh(cmd, NULL), 0);
	free(dir);
}
