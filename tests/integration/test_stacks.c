// SPDX-License-Identifier: BSD-2-Clause
/*
 * True stacks: each fixture of tests/fixtures/stacks/ under `ebprof record
 * --unwind dwarf` (and the tail-call way of unwinding, which kernels
 * without bpf_loop() take), read back with go tool pprof: the share of
 * samples whose stack holds the fixture's whole chain from the leaf to
 * main, with nothing cut short. Frame pointers are recorded too, to show
 * the check fails where they lose callers.
 *
 * With EBPROF_STACKS_REPORT set, each check prints "stacks: NAME MODE
 * share=P" (bench/unwind-fixtures.sh collects them).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopprof.h"
#include "record_env.h"

struct chain {
	const char *frames[8]; /* leaf first, NULL-terminated */
	bool ordered;	       /* in this order, other frames allowed between */
};

/* Does the sample hold the chain (from its first frame named like the
 * chain's leaf), with no frame marking a truncation? */
static bool holds(const struct gp_sample *s, const struct chain *c)
{
	size_t i, k = 0;

	if (gp_truncated(s))
		return false;
	for (i = 0; i < s->nframes; i++)
		if (s->frames[i].fn && !strcmp(s->frames[i].fn, c->frames[0]))
			break;
	for (; i < s->nframes && c->frames[k]; i++) {
		const char *fn = s->frames[i].fn;

		if (fn && !strcmp(fn, c->frames[k]))
			k++;
		else if (!c->ordered)
			return false;
	}
	return !c->frames[k];
}

/* How many times the last recording's BPF program entered a binary with
 * an unwind table ("binaries entered N times" of its summary), -1: none. */
static long long last_entered;
/* The last recording's log (-v), shown when a check fails. */
static char last_log[16384];

/*
 * A check that fails must say why: the heaviest stacks of pid that hold
 * none of the chains (and hold `within`, when given), each frame with its
 * mapping and address, on stderr (a vmtest guest keeps nothing but its
 * console).
 */
static void show_misses(const struct gp_profile *p, int64_t pid, const struct chain *chains,
			size_t nchains, const char *within)
{
	size_t shown = 0;

	fprintf(stderr, "stacks: the recorder's log:\n%s", last_log);
	for (size_t i = 0; i < p->nsamples && shown < 4; i++) {
		const struct gp_sample *s = &p->samples[i];
		size_t c = 0;

		if (gp_label_num(s, "pid") != pid || (within && gp_frame_pos(s, within) < 0))
			continue;
		while (c < nchains && !holds(s, &chains[c]))
			c++;
		if (c < nchains)
			continue;
		shown++;
		fprintf(stderr, "stacks: a sample (%lld) holding no chain, leaf first:\n",
			(long long)s->values[0]);
		for (size_t f = 0; f < s->nframes && f < 24; f++) {
			const struct gp_frame *fr = &s->frames[f];

			fprintf(stderr, "stacks:   %-28s %#llx %s%s\n",
				fr->fn ? fr->fn : "(no name)", (unsigned long long)fr->addr,
				fr->mapping ? fr->mapping->file : "(no mapping)",
				fr->inlined ? " (inlined)" : "");
		}
	}
}

/* Share (%) of pid's samples that hold one of the chains; *with_label:
 * samples with label key=value. */
static double share(const struct gp_profile *p, int64_t pid, const struct chain *chains,
		    size_t nchains, int64_t *counts, const char *key, const char *value,
		    int64_t *with_label)
{
	int64_t total = 0, good = 0;

	if (with_label)
		*with_label = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (gp_label_num(s, "pid") != pid)
			continue;
		total += s->values[0];
		for (size_t c = 0; c < nchains; c++) {
			if (holds(s, &chains[c])) {
				good += s->values[0];
				if (counts)
					counts[c] += s->values[0];
				break;
			}
		}
		if (with_label && key && gp_label(s, key) && !strcmp(gp_label(s, key), value))
			*with_label += s->values[0];
	}
	cr_assert_gt(total, 0, "no samples of pid %lld", (long long)pid);
	return 100.0 * good / total;
}

/* Record fixture name (argv: the fixture's arguments after the seconds)
 * for secs seconds with --unwind mode; the profile read back. */
static struct gp_profile *record(const char *name, const char *mode, const char *secs,
				 pid_t *pid_out)
{
	char *dir = tl_tmpdir("stacks"), out[512], exe[512], pidarg[16], *log;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	const char *e;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/%s.pb.gz", dir, name);
	snprintf(exe, sizeof(exe), "%s/%s", tl_path("fixtures/stacks"), name);
	pid = rec_start_fixture(&fx, (char *[]){ exe, (char *)secs, NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "-F", "99", "--unwind", (char *)mode, "-p", pidarg, "-d",
					   "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 60), 0, "%s did not exit 0", name);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	p = rec_read_back(out);
	log = tl_log_text(&rec.log);
	cr_assert_not_null(log);
	rec_expect_counts_agree(p, log);
	e = strstr(log, "binaries entered ");
	last_entered = e ? atoll(e + strlen("binaries entered ")) : -1;
	snprintf(last_log, sizeof(last_log), "%s", log);
	free(log);
	tl_log_free(&rec.log);
	*pid_out = pid;
	return p;
}

static void report(const char *name, const char *mode, double pct)
{
	if (getenv("EBPROF_STACKS_REPORT"))
		fprintf(stderr, "stacks: %s %s share=%.1f\n", name, mode, pct);
}

static const struct chain chain_chains[] = {
	{ { "leaf_three", "middle_a", "outer", "main", NULL } },
	{ { "leaf_one", "middle_b", "outer", "main", NULL } },
};

/* The -O2 chain: true callers in >= 95% of samples, the 3:1 split. */
static void check_chain(const char *name, const char *mode)
{
	int64_t counts[2] = { 0 };
	struct gp_profile *p;
	double pct, three;
	pid_t pid;

	rec_require_root();
	p = record(name, mode, "3", &pid);
	pct = share(p, pid, chain_chains, 2, counts, NULL, NULL, NULL);
	report(name, mode, pct);
	if (pct < 95.0)
		show_misses(p, pid, chain_chains, 2, NULL);
	cr_expect_geq(pct, 95.0,
		      "%s --unwind %s: %.1f%% of samples hold main -> outer -> middle_* "
		      "-> leaf_*",
		      name, mode, pct);
	cr_assert_gt(counts[0] + counts[1], 0);
	three = 100.0 * counts[0] / (counts[0] + counts[1]);
	cr_expect(three >= 65 && three <= 85,
		  "%s: leaf_three %.1f%% of the chain, expected 75 +- 10", name, three);
	gp_free(p);
}

Test(stacks, chain_with_frame_pointers, .timeout = 120)
{
	check_chain("chain_fp", "dwarf");
}

Test(stacks, chain_without_frame_pointers, .timeout = 120)
{
	check_chain("chain_nofp", "dwarf");
}

Test(stacks, chain_without_frame_pointers_by_tail_calls, .timeout = 120)
{
	check_chain("chain_nofp", "dwarf-tail");
}

Test(stacks, chain_with_only_debug_frame, .timeout = 120)
{
	check_chain("chain_debug_frame", "dwarf");
}

/* What this is all for: frame pointers skip the leaves' callers. */
Test(stacks, frame_pointers_lose_the_callers_of_leaves, .timeout = 120)
{
	struct gp_profile *p;
	pid_t pid;
	double pct;

	rec_require_root();
	p = record("chain_fp", "fp", "2", &pid);
	pct = share(p, pid, chain_chains, 2, NULL, NULL, NULL, NULL);
	report("chain_fp", "fp", pct);
	cr_expect_lt(pct, 50.0, "frame pointers: %.1f%% true chains (the check can fail)", pct);
	gp_free(p);
}

Test(stacks, callback_through_qsort, .timeout = 120)
{
	static const struct chain c[] = { { { "compare", "sorter", "main", NULL }, true } };
	struct gp_profile *p;
	pid_t pid;
	double pct;

	rec_require_root();
	p = record("qsort_cb", "dwarf", "3", &pid);
	pct = share(p, pid, c, 1, NULL, NULL, NULL, NULL);
	report("qsort_cb", "dwarf", pct);
	/* the sorting itself (libc's msort) is a part of the samples too */
	cr_expect_geq(pct, 60.0, "%.1f%% of samples hold main -> sorter -> qsort -> compare", pct);
	cr_expect_eq(gp_with(p, "[truncated: no unwind table]", pid, 0), 0);
	gp_free(p);
}

/* A fixture whose handler_leaf runs in a signal handler: of the handler's
 * samples, at least 95% hold the chain through the signal frame, and no
 * sample of it names `never` (NULL: not checked). */
static void check_signal(const char *fixture, const struct chain *c, const char *never)
{
	int64_t in_handler, named = 0;
	struct gp_profile *p;
	pid_t pid;
	double pct;

	rec_require_root();
	p = record(fixture, "dwarf", "3", &pid);
	in_handler = gp_with(p, "handler_leaf", pid, 0);
	if (never)
		named = gp_with(p, never, pid, 0);
	pct = share(p, pid, c, 1, NULL, NULL, NULL, NULL);
	report(fixture, "dwarf", pct);
	cr_assert_gt(in_handler, 0);
	pct = pct * gp_total(p, pid, 0) / in_handler; /* of the handler's samples */
	if (pct < 95.0 || named)
		show_misses(p, pid, c, 1, "handler_leaf");
	cr_expect_eq(named, 0, "%lld samples name %s", (long long)named, never);
	cr_expect_geq(pct, 95.0,
		      "of the handler's samples, %.1f%% hold the chain from main through %s and "
		      "__restore_rt to handler_leaf",
		      pct, c->frames[3]);
	gp_free(p);
}

Test(stacks, signal_handler_over_its_interrupted_code, .timeout = 120)
{
	static const struct chain c = {
		{ "handler_leaf", "on_signal", "__restore_rt", "busy_loop", "main", NULL }, true
	};

	check_signal("sig_busy", &c, NULL);
}

/* The frame under a signal frame is the interrupted instruction, not a
 * return address: at a function's first byte, PC - 1 is its neighbour's
 * (before_trap, which nothing calls). */
Test(stacks, signal_at_a_functions_first_byte_names_that_function, .timeout = 120)
{
	static const struct chain c = { { "handler_leaf", "on_sigill", "__restore_rt",
					  "trapped_at_entry", "main", NULL },
					true };

	check_signal("sig_entry", &c, "before_trap");
}

Test(stacks, plt_call_into_a_library_without_frame_pointers, .timeout = 120)
{
	/* the loop's work, a sample in lib_entry around its call, and the
	 * fixture's clock reads (through libc, without frame pointers too):
	 * every right stack; under TCG the last two are a few % of them */
	static const struct chain c[] = { { { "lib_leaf", "lib_entry", "caller", "main", NULL } },
					  { { "lib_entry", "caller", "main", NULL } },
					  { { "fixture_now", "main", NULL } } };
	int64_t counts[3] = { 0 };
	struct gp_profile *p;
	pid_t pid;
	double pct, leaf;

	rec_require_root();
	p = record("plt_main", "dwarf", "3", &pid);
	pct = share(p, pid, c, 3, counts, NULL, NULL, NULL);
	leaf = 100.0 * counts[0] / gp_total(p, pid, 0);
	report("plt_main", "dwarf", leaf);
	if (pct < 95.0)
		show_misses(p, pid, c, 3, NULL);
	cr_expect_geq(pct, 95.0,
		      "%.1f%% of samples hold main -> caller -> lib_entry [-> lib_leaf] or the "
		      "fixture's clock read",
		      pct);
	cr_expect_geq(leaf, 80.0, "%.1f%% of samples hold main -> caller -> lib_entry -> lib_leaf",
		      leaf);
	/* each sample enters the executable, the library and libc (the
	 * counts that decide which tables the memory budget keeps) */
	cr_expect_geq(last_entered, 3 * gp_total(p, pid, 0),
		      "binaries entered %lld times for %lld samples", last_entered,
		      (long long)gp_total(p, pid, 0));
	gp_free(p);
}

static void check_deep(const char *mode)
{
	static const struct chain c[] = { { { "bottom", "recurse", "main", NULL }, true } };
	int64_t deep = 0, total = 0;
	struct gp_profile *p;
	pid_t pid;
	double pct;

	rec_require_root();
	p = record("deep_recurse", mode, "3", &pid);
	pct = share(p, pid, c, 1, NULL, NULL, NULL, NULL);
	report("deep_recurse", mode, pct);
	if (pct < 95.0)
		show_misses(p, pid, c, 1, NULL);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (gp_label_num(s, "pid") != pid)
			continue;
		total += s->values[0];
		deep += s->nframes >= 1500 && gp_frame_pos(s, "main") >= 1500 ? s->values[0] : 0;
	}
	cr_expect_geq(pct, 95.0, "--unwind %s: %.1f%% of samples reach main from bottom", mode,
		      pct);
	cr_expect_geq(100.0 * deep / total, 95.0, "%.1f%% of samples 1500 frames deep",
		      100.0 * deep / total);
	gp_free(p);
}

Test(stacks, recursion_1500_frames_deep, .timeout = 120)
{
	check_deep("dwarf");
}

Test(stacks, recursion_1500_frames_deep_by_tail_calls, .timeout = 120)
{
	check_deep("dwarf-tail");
}

Test(stacks, jit_code_through_its_frame_pointer, .timeout = 120)
{
	static const struct chain c[] = { { { "jit_callee", "run_jit", "main", NULL }, true } };
	int64_t labelled;
	struct gp_profile *p;
	pid_t pid;
	double pct;

	rec_require_root();
	p = record("jit_anon", "dwarf", "3", &pid);
	pct = share(p, pid, c, 1, NULL, "unwind", "fp", &labelled);
	report("jit_anon", "dwarf", pct);
	if (pct < 95.0)
		show_misses(p, pid, c, 1, NULL);
	cr_expect_geq(pct, 95.0, "%.1f%% of samples hold main -> run_jit -> [anon] -> jit_callee",
		      pct);
	/* the frame found by frame pointer is marked */
	cr_expect_geq(100.0 * labelled / gp_total(p, pid, 0), 95.0,
		      "%.1f%% of samples labelled unwind=fp",
		      100.0 * labelled / gp_total(p, pid, 0));
	gp_free(p);
}
