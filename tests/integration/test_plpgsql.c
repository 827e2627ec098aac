// SPDX-License-Identifier: BSD-2-Clause
/*
 * PL/pgSQL frames, end to end (root, BPF). The profiles are read back by
 * go tool pprof (gopprof.h).
 *
 * On PostgreSQL 15 under load: billing.close_month(integer) calls
 * billing.line_total(integer) in a loop whose hot statement is its line
 * 6, and an UPDATE fires the trigger function audit.log_row(), hot at its
 * line 3. Of the samples under a PL/pgSQL executor frame
 * (plpgsql_exec_function, plpgsql_exec_trigger), at least 90% must carry
 * each function right before (leafward of) the executor frame running it,
 * in the order they nest, the hot one at its hot line. It holds for
 * Debian's stripped plpgsql.so (its callback found in its code; a backend
 * that had it loaded before the recording) and for a copy of it given the
 * callback's symbol (.symtab: Debian's debug file is not reachable; the
 * language plpgsql_sym, loaded by a backend that starts under the
 * recording). The frames are in the folded output, the SVG and `top`, and
 * not with --no-plpgsql.
 *
 * A fixture (plpgsql_host and its stripped plpgsql.so, built as 16+
 * builds it) nests three functions through the library's handler, then
 * makes its error_context_stack a cycle, unmapped memory, states and
 * signatures unmapped: the walks end within their bounds, the process
 * and the recording are unharmed, and every cut is counted.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "pgcluster.h"
#include "record_env.h"
#include "sampling/plpgsql_chains.h"
#include "testlib.h"

static bool plpgsql_frame(const struct gp_frame *f)
{
	return f->fn && f->file && !strcmp(f->file, "plpgsql");
}

static bool is(const struct gp_sample *s, size_t i, const char *fn, int64_t line)
{
	const struct gp_frame *f = i < s->nframes ? &s->frames[i] : NULL;

	return f && f->fn && !strcmp(f->fn, fn) && (line < 0 || f->line == line);
}

static bool in_lib(const struct gp_sample *s, size_t i)
{
	return i < s->nframes && s->frames[i].mapping &&
	       strstr(s->frames[i].mapping->file, "fixtures/plpgsql/plpgsql.so");
}

/* The fixture's nesting, leafward from inner_body at i: each function
 * between its body and its executor, the handler above. */
static bool nested_right(const struct gp_sample *s)
{
	int i = gp_frame_pos(s, "inner_body");

	return i >= 0 && is(s, i + 1, "fixture.inner(text)", 9) && in_lib(s, i + 2) &&
	       is(s, i + 3, "plpgsql_call_handler", -1) && is(s, i + 4, "middle_body", -1) &&
	       is(s, i + 5, "fixture.middle()", 8) && in_lib(s, i + 6) &&
	       is(s, i + 7, "plpgsql_call_handler", -1) && is(s, i + 8, "outer_body", -1) &&
	       is(s, i + 9, "fixture.outer(integer)", 7) && in_lib(s, i + 10) &&
	       is(s, i + 11, "plpgsql_call_handler", -1) && is(s, i + 12, "run_ok", -1);
}

static size_t plpgsql_frames(const struct gp_sample *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nframes; i++)
		n += plpgsql_frame(&s->frames[i]);
	return n;
}

/* The fixture's samples in p of its nested functions, and of those the
 * ones whose PL/pgSQL frames nest right. */
static void count_nested(const struct gp_profile *p, pid_t pid, int64_t *ok, int64_t *right)
{
	*ok = *right = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (gp_label_num(s, "pid") != pid || gp_frame_pos(s, "run_ok") < 0 ||
		    gp_frame_pos(s, "burn") < 0)
			continue;
		*ok += s->values[0];
		*right += nested_right(s) ? s->values[0] : 0;
	}
}

Test(plpgsql, nested_functions_and_hostile_stacks_of_a_fixture, .timeout = 120)
{
	char *dir = tl_tmpdir("plpgsqlfx"), out[512], exe[512], lib[512], pidarg[16];
	int64_t ok = 0, ok_right = 0, bad = 0, bad_named = 0, cyc = 0, cyc_bounded = 0;
	const char *lost;
	struct gp_profile *p;
	struct tl_proc fx;
	struct rec_run rec;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/fx.pb.gz", dir);
	snprintf(exe, sizeof(exe), "%s", tl_path("fixtures/plpgsql/plpgsql_host"));
	snprintf(lib, sizeof(lib), "%s", tl_path("fixtures/plpgsql/plpgsql.so"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "6", lib, NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec,
			 (char *[]){ "-p", pidarg, "-F", "199", "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0, "the fixture was harmed");
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0, "the recording failed");
	p = rec_read_back(out);
	count_nested(p, pid, &ok, &ok_right);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t v = s->values[0];

		if (gp_label_num(s, "pid") != pid)
			continue;
		if (gp_frame_pos(s, "run_ok") >= 0 && gp_frame_pos(s, "burn") >= 0) {
			continue; /* counted above */
		} else if (gp_frame_pos(s, "bad_state") >= 0) {
			bad += v;
			bad_named += gp_frame_pos(s, PLPGSQL_UNREADABLE) >= 0 ? v : 0;
		} else if (gp_frame_pos(s, "cyclic") >= 0) {
			cyc += v;
			cyc_bounded +=
				plpgsql_frames(s) >= 1 && plpgsql_frames(s) <= EBPROF_PLPGSQL_DEPTH
					? v
					: 0;
		}
	}
	cr_log_info("fixture: %lld nested (%lld right), %lld bad state (%lld named), %lld cyclic",
		    (long long)ok, (long long)ok_right, (long long)bad, (long long)bad_named,
		    (long long)cyc);
	cr_expect_gt(ok, 20, "samples of the nested functions");
	cr_expect_geq(ok_right * 100, ok * 90, "%lld of %lld nested samples right",
		      (long long)ok_right, (long long)ok);
	cr_expect_gt(bad, 10);
	cr_expect_geq(bad_named * 100, bad * 90, "a function of unreadable signature is named so");
	cr_expect_gt(cyc, 10);
	cr_expect_eq(cyc_bounded, cyc, "a cycle's walk keeps at most %d functions",
		     EBPROF_PLPGSQL_DEPTH);
	lost = gp_comment(p, "lost");
	cr_assert_not_null(lost, "no losses counted");
	cr_expect(strstr(lost, "PL/pgSQL frames cut short (too deep, or a cycle)"), "%s", lost);
	cr_expect(strstr(lost, "PL/pgSQL frames cut short (backend memory unreadable)"), "%s",
		  lost);
	gp_free(p);
	tl_log_free(&rec.log);
	tl_rm_tree(dir);
	free(dir);
}

/*
 * An ad hoc HTTP profile taken from a running agent's sampling
 * (pipeline/tap.c) has the PL/pgSQL frames its continuous profile has:
 * the fixture's nested functions, at least 90% of them right.
 */
Test(plpgsql, ad_hoc_profile_from_the_agent_has_the_frames, .timeout = 120)
{
	char *dir = tl_tmpdir("plpgsqltap"), out[512], exe[512], lib[512], pidarg[16];
	char listen[32], url[256], adhoc[600];
	char *curl_argv[] = { "curl", "-sf", "-o", adhoc, url, NULL };
	int64_t ok, ok_right;
	struct gp_profile *p;
	struct tl_proc fx, ag, cu;
	struct tl_log agl;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(exe, sizeof(exe), "%s", tl_path("fixtures/plpgsql/plpgsql_host"));
	snprintf(lib, sizeof(lib), "%s", tl_path("fixtures/plpgsql/plpgsql.so"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "12", lib, NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 "/dev/null",
			 "-F",
			 "199",
			 "--interval",
			 "60",
			 "--output-dir",
			 out,
			 "--comm",
			 "x-none",
			 "--pid",
			 pidarg,
			 "--http-listen",
			 listen,
			 NULL };
	cr_assert_eq(tl_start_logged(&ag, &agl, argv, "sampling at", 30), 0);
	snprintf(adhoc, sizeof(adhoc), "%s/adhoc.pb.gz", dir);
	snprintf(url, sizeof(url), "http://%s/profile/cpu?seconds=3&frequency=199&pid=%s", listen,
		 pidarg);
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_spawn(&cu, curl_argv, false, false, false), 0);
	cr_assert_eq(tl_wait(&cu, 30), 0, "the ad hoc request failed");
	cr_assert_eq(tl_wait(&fx, 30), 0, "the fixture was harmed");
	cr_assert_eq(tl_finish_logged(&ag, &agl, SIGTERM, 60), 0);
	p = rec_read_back(adhoc);
	count_nested(p, pid, &ok, &ok_right);
	cr_log_info("ad hoc: %lld nested (%lld right)", (long long)ok, (long long)ok_right);
	cr_expect_gt(ok, 20, "samples of the nested functions");
	cr_expect_geq(ok_right * 100, ok * 90, "%lld of %lld nested samples right",
		      (long long)ok_right, (long long)ok);
	gp_free(p);
	tl_log_free(&agl);
	tl_rm_tree(dir);
	free(dir);
}

/* --- PostgreSQL 15 --- */

static struct pgcluster pg;
static pid_t benches[2];

static void stop_cluster(void)
{
	for (int i = 0; i < 2; i++)
		if (benches[i] > 0) {
			kill(benches[i], SIGTERM);
			waitpid(benches[i], NULL, 0);
		}
	pg_stop(&pg);
}

static void psql_file(const char *path)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd),
		 "psql -X -q -v ON_ERROR_STOP=1 -h %s -p %d -U postgres -f %s postgres 2>&1",
		 pg.dir, pg.port, path);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s: %s", path, out ? out : "");
	free(out);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* Line 1 of a function's body is the rest of its $$ line: line_total's
 * hot statement is its line 6, close_month's call of it too, the
 * trigger's its line 3. */
#define FUNCTIONS(schema, lang)                                                                    \
	"CREATE SCHEMA " schema ";\n"                                                              \
	"CREATE FUNCTION " schema ".line_total(n integer) RETURNS numeric LANGUAGE " lang          \
	" AS $$\n"                                                                                 \
	"DECLARE\n"                                                                                \
	"  s numeric := 0;\n"                                                                      \
	"BEGIN\n"                                                                                  \
	"  FOR i IN 1..n LOOP\n"                                                                   \
	"    s := s + sqrt(i::numeric) * ln(i + 1);\n"                                             \
	"  END LOOP;\n"                                                                            \
	"  RETURN s;\n"                                                                            \
	"END $$;\n"                                                                                \
	"CREATE FUNCTION " schema ".close_month(months integer) RETURNS numeric LANGUAGE " lang    \
	" AS $$\n"                                                                                 \
	"DECLARE\n"                                                                                \
	"  t numeric := 0;\n"                                                                      \
	"BEGIN\n"                                                                                  \
	"  FOR m IN 1..months LOOP\n"                                                              \
	"    t := t + " schema ".line_total(40);\n"                                                \
	"  END LOOP;\n"                                                                            \
	"  RETURN t;\n"                                                                            \
	"END $$;\n"

static const char setup_sql[] = FUNCTIONS(
	"billing",
	"plpgsql") "CREATE SCHEMA audit;\n"
		   "CREATE TABLE billing.accounts(id integer PRIMARY KEY, balance numeric, note "
		   "text);\n"
		   "INSERT INTO billing.accounts SELECT g, 0, '' FROM generate_series(1, 100) g;\n"
		   "CREATE FUNCTION audit.log_row() RETURNS trigger LANGUAGE plpgsql AS $$\n"
		   "BEGIN\n"
		   "  NEW.note := md5(repeat(NEW.id::text || NEW.balance::text, 40000));\n"
		   "  RETURN NEW;\n"
		   "END $$;\n"
		   "CREATE TRIGGER log_row BEFORE UPDATE ON billing.accounts\n"
		   "  FOR EACH ROW EXECUTE FUNCTION audit.log_row();\n";

/*
 * A copy of the installed plpgsql.so with the callback's symbol in a
 * .symtab beside those of the executors and the handler (a build with
 * symbols; Debian's debug file is not reachable) and a build-id of its own (else the symbolizer
 * takes it for the original), at dir/sym/plpgsql.so. The callback is found by objdump, not by
 * ebprof: the one function address all three exported executors load.
 */
static void symbol_copy(const char *dir)
{
	char cmd[4096], *out = NULL;

	snprintf(cmd, sizeof(cmd),
		 "set -e; lib=$(ls -d /usr/lib/postgresql/*/lib/plpgsql.so | sort -V | tail -1); "
		 "d=%s/sym; mkdir -p $d; "
		 "text=$(readelf -SW $lib | awk '{for (i = 1; i < NF; i++) if ($i == \".text\") "
		 "{ print $(i + 2), $(i + 4); exit }}'); "
		 "set -- $text; lo=$((0x$1)); hi=$((0x$1 + 0x$2)); "
		 "cb=$(for f in plpgsql_exec_function plpgsql_exec_trigger "
		 "plpgsql_exec_event_trigger; do "
		 "  set -- $(nm -DS --defined-only $lib | awk -v f=$f '$4 == f { print $1, $2 }'); "
		 "  objdump -d --no-show-raw-insn --start-address=0x$1 "
		 "    --stop-address=$((0x$1 + 0x$2)) $lib | "
		 "  sed -n 's/.*lea .*# \\([0-9a-f]*\\) .*/\\1/p' | sort -u; "
		 "done | sort | uniq -c | awk '$1 == 3 { print $2 }' | "
		 "while read a; do if [ $((0x$a)) -ge $lo ] && [ $((0x$a)) -lt $hi ]; then echo "
		 "$a; fi; "
		 "done); "
		 "[ $(echo \"$cb\" | wc -w) = 1 ]; "
		 "objcopy -O binary --only-section=.note.gnu.build-id $lib $d/note; "
		 "printf '\\377' | dd of=$d/note bs=1 seek=$(($(stat -c %%s $d/note) - 1)) "
		 "  conv=notrunc 2>/dev/null; "
		 "add=; for f in plpgsql_exec_function plpgsql_exec_trigger "
		 "plpgsql_exec_event_trigger plpgsql_call_handler; do "
		 "  a=$(nm -D --defined-only $lib | awk -v f=$f '$3 == f { print $1 }'); "
		 "  add=\"$add --add-symbol $f=.text:$((0x$a - lo)),function,global\"; "
		 "done; "
		 "objcopy --update-section .note.gnu.build-id=$d/note $add "
		 "  --add-symbol plpgsql_exec_error_callback=.text:$((0x$cb - lo)),function,local "
		 "  $lib $d/plpgsql.so; "
		 "chmod 755 $d; chmod 644 $d/plpgsql.so; "
		 "nm $d/plpgsql.so | grep -q \" t plpgsql_exec_error_callback\" && echo cb=$cb",
		 dir);
	cr_assert_eq(tl_sh(cmd, &out), 0, "no copy with symbols: %s", out ? out : "");
	cr_log_info("plpgsql.so with symbols: %s", out);
	free(out);
}

/* Where the installed plpgsql.so's executors are (nm's, not ebprof's:
 * its copy's .symtab names every function after the nearest one above
 * it, sizes unknown), as file offsets (its code is mapped at offsets
 * equal to its addresses): plpgsql_exec_function and _trigger. */
static uint64_t xlo[2], xhi[2];

static void executor_ranges(void)
{
	static const char *const names[] = { "plpgsql_exec_function", "plpgsql_exec_trigger" };

	for (int k = 0; k < 2; k++) {
		char cmd[512], *out = NULL;
		unsigned long a, n;

		snprintf(cmd, sizeof(cmd),
			 "nm -DS --defined-only $(ls -d /usr/lib/postgresql/*/lib/plpgsql.so | "
			 "sort -V | tail -1) | awk '$4 == \"%s\" { print $1, $2 }'",
			 names[k]);
		cr_assert_eq(tl_sh(cmd, &out), 0);
		cr_assert(out && sscanf(out, "%lx %lx", &a, &n) == 2, "%s: %s", names[k], out);
		xlo[k] = a;
		xhi[k] = a + n;
		free(out);
	}
}

/* 1 for plpgsql_exec_function, 2 for plpgsql_exec_trigger (either
 * plpgsql.so), else 0: a return address, looked up as the call. */
static int executor_kind(const struct gp_frame *f)
{
	uint64_t off;

	if (!f->mapping || !strstr(f->mapping->file, "plpgsql.so") || f->addr <= f->mapping->start)
		return 0;
	off = f->addr - 1 - f->mapping->start + f->mapping->offset;
	for (int k = 0; k < 2; k++)
		if (off >= xlo[k] && off < xhi[k])
			return k + 1;
	return 0;
}

static bool executor(const struct gp_frame *f)
{
	return executor_kind(f) != 0;
}

/* Up to 4 functions, each right before (leafward of) an executor frame,
 * from the root; false when an executor frame has none, or a PL/pgSQL
 * frame is anywhere else. */
static bool at_executors(const struct gp_sample *s, const char **fn, int64_t *line, size_t *n)
{
	*n = 0;
	for (size_t i = s->nframes; i-- > 0;) {
		const struct gp_frame *f = &s->frames[i];

		if (executor(f)) {
			if (!i || !plpgsql_frame(&s->frames[i - 1]) || *n == 4)
				return false;
			fn[*n] = s->frames[i - 1].fn;
			line[*n] = s->frames[i - 1].line;
			(*n)++;
		} else if (plpgsql_frame(f) &&
			   !(i + 1 < s->nframes && executor(&s->frames[i + 1]))) {
			return false;
		}
	}
	return *n > 0;
}

/* close_month (any line), close_month calling line_total at their hot
 * line 6, or the trigger at its hot line 3. */
static bool nesting_right(const char *schema, const char **fn, const int64_t *line, size_t n)
{
	char close[64], total[64];

	snprintf(close, sizeof(close), "%s.close_month(integer)", schema);
	snprintf(total, sizeof(total), "%s.line_total(integer)", schema);
	if (n == 1)
		return !strcmp(fn[0], close) || (!strcmp(fn[0], "audit.log_row()") && line[0] == 3);
	return n == 2 && !strcmp(fn[0], close) && line[0] == 6 && !strcmp(fn[1], total) &&
	       line[1] == 6;
}

static bool from_copy(const struct gp_sample *s)
{
	for (size_t i = 0; i < s->nframes; i++)
		if (s->frames[i].mapping && strstr(s->frames[i].mapping->file, "/sym/plpgsql.so"))
			return true;
	return false;
}

static void record_pg(const char *pm, const char *secs, const char *out, char *const extra[])
{
	char *args[16] = { "-p", (char *)pm, "-F", "99", "-d", (char *)secs, "-o", (char *)out };
	struct rec_run rec;
	int n = 8;

	while (extra && *extra && n < 15)
		args[n++] = *extra++;
	args[n] = NULL;
	rec_start_record(&rec, args);
	cr_assert_eq(rec_finish_record(&rec, 0, 60), 0, "record %s failed", out);
	tl_log_free(&rec.log);
}

Test(plpgsql, postgres_functions_and_trigger_at_their_lines_under_load, .timeout = 300,
     .fini = stop_cluster)
{
	char *dir = tl_tmpdir("plpgsqlpg"), path[512], out[512], pm[16], args[1024];
	char *text = NULL;
	/* [0]: Debian's stripped plpgsql.so, [1]: the copy with symbols */
	int64_t under[2] = { 0 }, right[2] = { 0 }, trig = 0;
	struct gp_profile *p;
	struct rec_run rec;

	rec_require_root();
	executor_ranges();
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	snprintf(pm, sizeof(pm), "%d", (int)pg.postmaster);
	snprintf(path, sizeof(path), "%s/setup.sql", dir);
	write_file(path, setup_sql);
	psql_file(path);
	/* a language of the copy with symbols, its functions in billing_sym */
	symbol_copy(pg.dir);
	snprintf(args, sizeof(args),
		 "CREATE FUNCTION plpgsql_sym_handler() RETURNS language_handler AS "
		 "'%s/sym/plpgsql.so', 'plpgsql_call_handler' LANGUAGE C;\n"
		 "CREATE LANGUAGE plpgsql_sym HANDLER plpgsql_sym_handler;\n" FUNCTIONS(
			 "billing_sym", "plpgsql_sym"),
		 pg.dir);
	snprintf(path, sizeof(path), "%s/sym.sql", dir);
	write_file(path, args);
	psql_file(path);
	snprintf(path, sizeof(path), "%s/a.sql", dir);
	write_file(path, "SELECT billing.close_month(20);\n");
	snprintf(path, sizeof(path), "%s/b.sql", dir);
	write_file(path, "\\set id random(1, 100)\n"
			 "UPDATE billing.accounts SET balance = balance + 1 WHERE id = :id;\n");
	snprintf(path, sizeof(path), "%s/s.sql", dir);
	write_file(path, "SELECT billing_sym.close_month(20);\n");

	/* one backend in PL/pgSQL before the recording, one that starts
	 * (and loads the copy) under it */
	snprintf(args, sizeof(args), "-c 1 -T 120 -f %s/a.sql@3 -f %s/b.sql@1", dir, dir);
	benches[0] = pg_bench_start(&pg, args);
	cr_assert_gt(benches[0], 0);
	sleep(1);
	snprintf(out, sizeof(out), "%s/pg.pb.gz", dir);
	rec_start_record(&rec, (char *[]){ "-p", pm, "-F", "99", "-d", "6", "-o", out, NULL });
	snprintf(args, sizeof(args), "-c 1 -T 120 -f %s/s.sql", dir);
	benches[1] = pg_bench_start(&pg, args);
	cr_assert_gt(benches[1], 0);
	cr_assert_eq(rec_finish_record(&rec, 0, 60), 0, "the recording failed");
	tl_log_free(&rec.log);

	p = rec_read_back(out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *fn[4];
		int64_t line[4], v = s->values[0];
		bool any = false;
		int g = from_copy(s);
		size_t n;

		for (size_t k = 0; k < s->nframes && !any; k++)
			any = executor(&s->frames[k]);
		if (!any)
			continue;
		under[g] += v;
		for (size_t k = 0; k < s->nframes; k++)
			if (executor_kind(&s->frames[k]) == 2) {
				trig += v;
				break;
			}
		if (at_executors(s, fn, line, &n) &&
		    nesting_right(g ? "billing_sym" : "billing", fn, line, n))
			right[g] += v;
	}
	cr_log_info("under an executor: stripped %lld (%lld right), with symbols %lld (%lld "
		    "right); %lld in the trigger",
		    (long long)under[0], (long long)right[0], (long long)under[1],
		    (long long)right[1], (long long)trig);
	for (int g = 0; g < 2; g++) {
		cr_expect_gt(under[g], 30, "%s: samples in PL/pgSQL",
			     g ? "with symbols" : "stripped");
		cr_expect_geq(right[g] * 100, under[g] * 90,
			      "%s: %lld of %lld samples with their functions, nesting and lines",
			      g ? "with symbols" : "stripped", (long long)right[g],
			      (long long)under[g]);
	}
	cr_expect_gt(trig, 0, "the trigger's samples");
	gp_free(p);

	/* the SVG, the folded stacks and top have the frames */
	snprintf(args, sizeof(args),
		 "%s flamegraph %s -o %s/pg.svg && grep -c 'billing.line_total(integer)' %s/pg.svg",
		 tl_path("ebprof"), out, dir, dir);
	cr_expect_eq(tl_sh(args, NULL), 0, "the SVG has the PL/pgSQL frames");
	snprintf(path, sizeof(path), "%s/pg.folded", dir);
	record_pg(pm, "2", path, (char *[]){ "--format", "folded", NULL });
	snprintf(args, sizeof(args),
		 "grep -c 'plpgsql_exec_function;billing.close_month(integer);.*"
		 "plpgsql_exec_function;billing.line_total(integer);' %s",
		 path);
	cr_expect_eq(tl_sh(args, NULL), 0, "the folded stacks have the PL/pgSQL frames in place");
	snprintf(args, sizeof(args), "%s top --once -d 3 -p %s 2>&1", tl_path("ebprof"), pm);
	cr_expect_eq(tl_sh(args, &text), 0, "%s", text ? text : "");
	cr_expect(text && strstr(text, "billing.line_total(integer)"),
		  "top shows the PL/pgSQL function among the hottest: %s", text ? text : "");
	free(text);
	/* and --no-plpgsql has none */
	snprintf(out, sizeof(out), "%s/none.pb.gz", dir);
	record_pg(pm, "2", out, (char *[]){ "--no-plpgsql", NULL });
	p = rec_read_back(out);
	cr_expect_gt(gp_with(p, "plpgsql_exec_function", -1, 0), 0);
	for (size_t i = 0; i < p->nsamples; i++)
		for (size_t k = 0; k < p->samples[i].nframes; k++)
			cr_expect_not(plpgsql_frame(&p->samples[i].frames[k]),
				      "a PL/pgSQL frame with --no-plpgsql");
	gp_free(p);
	free(dir);
}
