// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SVG flamegraph in a real browser: headless Chromium (Debian's
 * /usr/bin/chromium) driven by playwright-core (tests/browser/flamegraph.js,
 * installed by tests/fixtures/browser.mk) clicks a frame and checks it
 * zooms to the full width, resets, searches through the prompt and Ctrl-F
 * and reads the matched percentage, hovers for the tooltip, and takes
 * screenshots kept under BUILD/browser/artifacts. Missing Chromium, node
 * or playwright-core fail the test: make test installs them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "browser_env.h"
#include "formats/flamegraph.h"
#include "testlib.h"

#define SCRIPT "tests/browser/flamegraph.js"

static void sample(struct profile *p, const uint64_t *stack, size_t n, int64_t count)
{
	int64_t v[2] = { count, count * 1000000 };
	struct pf_label lab = profile_label_str(p, "thread_name", "worker");

	cr_assert_eq(profile_add_sample(p, stack, n, v, &lab, 1), 0);
}

/*
 * all (10) -> worker (10) -> main (10) -> alpha 1, app+0x30ab 3
 * (-> do_syscall_64 [kernel] -> 0xffffffff81002000), beta 1, work 5
 * (-> helper [inlined]); 1 ms of cpu per sample.
 */
static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	uint64_t app, kern, l_main, l_inl, l_unres, l_sys, l_kunres, l_alpha, l_beta;
	struct pf_line chain[2];

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	app = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	kern = tl_mapping(p, 0xffffffff81000000, 0xffffffff82000000, "[kernel.kallsyms]");
	l_main = tl_loc(p, app, 0x401000, "main");
	chain[0] = (struct pf_line){ .function_id = (uint64_t)profile_add_function(p, "helper",
										   NULL, NULL, 0) };
	chain[1] = (struct pf_line){ .function_id = (uint64_t)profile_add_function(p, "work", NULL,
										   NULL, 0) };
	l_inl = (uint64_t)profile_add_location(p, app, 0x402000, chain, 2);
	l_unres = (uint64_t)profile_add_location(p, app, 0x4030ab, NULL, 0);
	l_sys = tl_loc(p, kern, 0xffffffff81001000, "do_syscall_64");
	l_kunres = (uint64_t)profile_add_location(p, kern, 0xffffffff81002000, NULL, 0);
	l_alpha = tl_loc(p, app, 0x405000, "alpha");
	l_beta = tl_loc(p, app, 0x406000, "beta");
	sample(p, (uint64_t[]){ l_inl, l_main }, 2, 5);
	sample(p, (uint64_t[]){ l_kunres, l_sys, l_unres, l_main }, 4, 3);
	sample(p, (uint64_t[]){ l_beta, l_main }, 2, 1);
	sample(p, (uint64_t[]){ l_alpha, l_main }, 2, 1);
	return p;
}

static void expect(const char *out, const char *key, const char *want)
{
	cr_expect_str_eq(tl_kv(out, key), want, "%s", key);
}

Test(flamegraph_browser, zoom_search_tooltips, .timeout = 180)
{
	char svgpath[600], err[256], *out, *svg = NULL;
	struct profile *p = make_profile();
	const char *artifacts = browser_env_ready(SCRIPT);
	size_t len = 0;
	FILE *f;

	f = open_memstream(&svg, &len);
	cr_assert_not_null(f);
	cr_assert_eq(flamegraph_write(p, &(struct flamegraph_opts){ .title = "Browser test" }, f,
				      err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(fclose(f), 0);
	snprintf(svgpath, sizeof(svgpath), "%s/flamegraph.svg", artifacts);
	f = fopen(svgpath, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(svg, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(svg);
	profile_free(p);

	out = browser_env_run(SCRIPT, (const char *[]){ svgpath, NULL });

	/* initial layout: work is half of the 1180 px inner width */
	expect(out, "work0_w", "590.00");
	expect(out, "work0_x", "600.00");
	/* click: work fills the width, its child too, main stays as a dimmed
	 * parent, siblings hide */
	expect(out, "work1_w", "1180.00");
	expect(out, "work1_x", "10.00");
	expect(out, "work1_label", "work");
	expect(out, "helper1_w", "1180.00");
	expect(out, "main1_w", "1180.00");
	expect(out, "main1_parent", "1");
	expect(out, "main1_hidden", "0");
	expect(out, "alpha1_hidden", "1");
	expect(out, "reset_off1", "0");
	/* Reset Zoom */
	expect(out, "work2_w", "590.00");
	expect(out, "work2_x", "600.00");
	expect(out, "alpha2_hidden", "0");
	/* tooltip in the details line */
	expect(out, "details", "do_syscall_64 [kernel] \xe2\x80\x94 3.00 ms (30.00%), 3 samples");
	/* search: 5 + 3 of 10 ms, matches highlighted */
	expect(out, "matched1", "Matched: 80.0%");
	expect(out, "search_label1", "Reset Search");
	expect(out, "matches1", "2");
	expect(out, "helper3_match", "1");
	expect(out, "helper3_fill", "rgb(230,0,230)");
	expect(out, "main3_match", "0");
	/* reset search */
	expect(out, "matched2", "");
	expect(out, "matches2", "0");
	/* Ctrl-F; helper is inside work: 50%, not 100% */
	expect(out, "matched3", "Matched: 50.0%");
	expect(out, "matches3", "2");
	expect(out, "matched4", "Invalid regular expression");
	/* zoom into app+0x30ab: its leaf (30%) becomes the full width */
	expect(out, "kun5_w", "1180.00");
	expect(out, "kun5_label", "0xffffffff81002000");
	expect(out, "errors", "0");
	expect(out, "foreign", "0");
	printf("flamegraph screenshots: %s/flamegraph-{initial,zoomed,search}.png\n", artifacts);
	free(out);
}
