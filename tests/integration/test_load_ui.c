// SPDX-License-Identifier: BSD-2-Clause
/*
 * The database load view of `ebprof serve`'s web UI in a real browser:
 * headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core
 * (tests/browser/load_ui.js) over an hour of stored CPU and off-CPU
 * profiles of 5 minutes each: one session on the CPU all along, two
 * waiting on a lock in the first half and four in the second, ten idle
 * sessions and a background writer's main loop (neither is load). The
 * timeline must stack CPU and Lock only (1 + 2, then 1 + 4 sessions), a
 * click on a Lock band open the off-CPU flamegraph of that class and
 * bucket (the lock wait's stack, not the idle one's), one on a CPU band
 * the CPU flamegraph, the statement x wait-event table list the UPDATE
 * first (Lock 3) and the SELECT (CPU 1), a click on a row open that
 * statement's flamegraph, and a range backwards the 400's reason.
 * Screenshots are kept under BUILD/browser/artifacts.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser_env.h"
#include "formats/pprof.h"
#include "serve_env.h"
#include "testlib.h"

#define SCRIPT "tests/browser/load_ui.js"
#define Q_UPD "UPDATE acct SET v = v + $1 WHERE id = $2"
#define Q_SEL "SELECT * FROM t WHERE id = $1"
#define FP_UPD "00000000000000aa"
#define FP_SEL "00000000000000bb"
#define SLICE_S 300LL
#define NS 1000000000LL

struct lab {
	const char *k, *v;
};

static void sample(struct profile *p, const char *leaf, int64_t ns, const struct lab *labs)
{
	uint64_t m = tl_mapping(p, 0x400000, 0x900000, "/usr/lib/postgresql/15/bin/postgres");
	uint64_t ids[3] = { tl_loc(p, m,
				   strcmp(leaf, "lock_wait")
					   ? strcmp(leaf, "scan_rows") ? 0x403000 : 0x402000
					   : 0x401000,
				   leaf),
			    tl_loc(p, m, 0x404000, "PostgresMain"),
			    tl_loc(p, m, 0x405000, "main") };
	int64_t v[2] = { ns / 10000000, ns };
	struct pf_label l[8];
	size_t n = 0;

	for (; labs[n].k; n++)
		l[n] = profile_label_str(p, labs[n].k, labs[n].v);
	cr_assert_eq(profile_add_sample(p, ids, 3, v, l, n), 0);
}

static uint8_t *make(bool cpu, int64_t t_ns, int lockers, size_t *len)
{
	struct profile *p = profile_new();
	uint8_t *buf = NULL;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, cpu ? "cpu" : "offcpu", "nanoseconds"), 0);
	p->time_nanos = t_ns;
	p->duration_nanos = SLICE_S * NS;
	if (cpu) {
		sample(p, "scan_rows", SLICE_S * NS,
		       (struct lab[]){ { "backend_type", "client backend" },
				       { "query", Q_SEL },
				       { "query_fingerprint", FP_SEL },
				       {} });
	} else {
		sample(p, "lock_wait", lockers * SLICE_S * NS,
		       (struct lab[]){ { "backend_type", "client backend" },
				       { "state", "sleeping" },
				       { "wait_event_type", "Lock" },
				       { "wait_event", "transactionid" },
				       { "query", Q_UPD },
				       { "query_fingerprint", FP_UPD },
				       {} });
		sample(p, "read_client", 10 * SLICE_S * NS,
		       (struct lab[]){ { "backend_type", "client backend" },
				       { "state", "idle" },
				       { "wait_event_type", "Client" },
				       { "wait_event", "ClientRead" },
				       {} });
		sample(p, "bgwriter_sleep", SLICE_S * NS,
		       (struct lab[]){ { "backend_type", "background writer" },
				       { "state", "sleeping" },
				       { "wait_event_type", "Activity" },
				       { "wait_event", "BgWriterMain" },
				       {} });
	}
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

Test(load_ui, timeline_band_flamegraph_table, .timeout = 240)
{
	char *dir = tl_tmpdir("load-ui"), *out, base[64], at[32];
	struct tl_proc srv;
	struct tl_log srv_log;

	browser_env_ready(SCRIPT);
	serve_env_start(&srv, &srv_log, dir, NULL, base, sizeof(base));
	for (int i = 0; i < 12; i++) {
		/* 2026-01-01T10:00:00Z */
		int64_t t = (1767261600LL + i * SLICE_S) * NS;
		size_t len;
		uint8_t *pb = make(true, t, 0, &len);

		snprintf(at, sizeof(at), "2026-01-01T10:%02d:00", 5 * i);
		serve_env_post(base, "cpu", at, pb, len);
		free(pb);
		pb = make(false, t, i < 6 ? 2 : 4, &len);
		serve_env_post(base, "block", at, pb, len);
		free(pb);
	}

	out = browser_env_run(
		SCRIPT,
		(const char *[]){ base,
				  "service=pghost&from=2026-01-01T10:00:00&to=2026-01-01T11:00:00",
				  NULL });

	cr_expect_str_eq(tl_kv(out, "state1"), "ready");
	cr_expect_str_eq(tl_kv(out, "status1"), "database load from 24 CPU and off-CPU profiles");
	/* 120 buckets of 30 s, each with a CPU and a Lock band: no idle one */
	cr_expect_str_eq(tl_kv(out, "bands"), "240");
	cr_expect_str_eq(tl_kv(out, "classes"), "CPU,Lock");
	cr_expect_str_eq(tl_kv(out, "legend"), "CPU 1.00Lock 3.00");
	cr_expect(strstr(tl_kv(out, "axis"), "average 4.00 active sessions (peak 5.00)"), "%s",
		  tl_kv(out, "axis"));
	cr_expect_str_eq(tl_kv(out, "stack100"), "CPU:1.00,Lock:4.00");
	cr_expect_str_eq(tl_kv(out, "head"), "statement,sessions,CPU,Lock");
	cr_expect_str_eq(tl_kv(out, "rows"),
			 Q_UPD " ; 3.00 ;  ; 3.00 | " Q_SEL " ; 1.00 ; 1.00 ; ");
	/* a Lock band: the off-CPU flamegraph of that class and bucket */
	cr_expect_str_eq(tl_kv(out, "state2"), "ready");
	cr_expect_str_eq(tl_kv(out, "mode2"), "flame");
	cr_expect_str_eq(tl_kv(out, "type2"), "block");
	cr_expect_str_eq(tl_kv(out, "class2"), "Lock");
	cr_expect_str_eq(tl_kv(out, "range2"), "2026-01-01T10:50:00.000 2026-01-01T10:50:30.000");
	cr_expect_str_eq(tl_kv(out, "lock2"), "1");
	cr_expect_str_eq(tl_kv(out, "idle2"), "0");
	cr_expect(!strncmp(tl_kv(out, "status2"), "1 profile merged", 16), "%s",
		  tl_kv(out, "status2"));
	cr_expect_str_eq(tl_kv(out, "chip2"), "load: Lock \u00d7");
	/* a CPU band: the CPU flamegraph */
	cr_expect_str_eq(tl_kv(out, "state3b"), "ready");
	cr_expect_str_eq(tl_kv(out, "type3"), "cpu");
	cr_expect_str_eq(tl_kv(out, "scan3"), "1");
	/* a statement: its flamegraph */
	cr_expect_str_eq(tl_kv(out, "state4b"), "ready");
	cr_expect_str_eq(tl_kv(out, "mode4"), "flame");
	cr_expect_str_eq(tl_kv(out, "filter4"), "query_fingerprint=" FP_UPD);
	/* a range backwards: the 400's reason */
	cr_expect_str_eq(tl_kv(out, "state5"), "error");
	cr_expect(strstr(tl_kv(out, "status5"), "to"), "%s", tl_kv(out, "status5"));
	cr_expect_str_eq(tl_kv(out, "errors"), "0");
	cr_expect_str_eq(tl_kv(out, "foreign"), "0");
	free(out);
	serve_env_finish(&srv, &srv_log, dir);
}
