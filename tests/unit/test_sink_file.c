// SPDX-License-Identifier: BSD-2-Clause
/*
 * A file as a sink (sinks/file.c) through the sink interface (sinks/sink.h):
 * which records it wants, each format written (the session's encoding
 * taken as it is for pprof, the profile rendered for the others), options
 * copied, a second profile replacing the first, "-" as stdout, and the
 * one-line reason a failed write leaves; describe, metrics, flush, close.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "sinks/file.h"
#include "util/fileio.h"
#include "testlib.h"

static void setup(void)
{
	tl_scratch_make("sinkfile");
}

TestSuite(sink_file, .init = setup, .fini = tl_scratch_remove, .timeout = 30);

/* One sample main -> fn (count n) of thread "worker". */
static struct profile *make_profile(const char *fn, int64_t n)
{
	struct profile *p = profile_new();
	struct pf_mapping m = { .start = 0x400000, .limit = 0x500000 };
	struct pf_line line;
	int64_t mid, fmain, ffn, lmain, lfn;
	struct pf_label lab;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	m.filename = profile_str(p, "/usr/bin/app");
	mid = profile_add_mapping(p, &m);
	fmain = profile_add_function(p, "main", NULL, NULL, 0);
	ffn = profile_add_function(p, fn, NULL, NULL, 0);
	line = (struct pf_line){ .function_id = (uint64_t)fmain };
	lmain = profile_add_location(p, (uint64_t)mid, 0x401000, &line, 1);
	line = (struct pf_line){ .function_id = (uint64_t)ffn };
	lfn = profile_add_location(p, (uint64_t)mid, 0x402000, &line, 1);
	cr_assert(lmain > 0 && lfn > 0);
	lab = profile_label_str(p, "thread_name", "worker");
	{
		uint64_t locs[] = { (uint64_t)lfn, (uint64_t)lmain };

		cr_assert_eq(profile_add_sample(p, locs, 2, &n, &lab, 1), 0);
	}
	return p;
}

static char *slurp(const char *path, size_t *len)
{
	uint8_t *buf = NULL;
	size_t n = 0;

	cr_assert_eq(read_file(path, &buf, &n), 0, "%s", path);
	buf = realloc(buf, n + 1);
	buf[n] = '\0';
	if (len)
		*len = n;
	return (char *)buf;
}

static struct sink *open_sink(const char *path, enum render_format f, const struct render_opts *o)
{
	struct sink *s = NULL;

	cr_assert_eq(file_sink_open(path, f, o, &s), 0);
	cr_assert_not_null(s);
	return s;
}

Test(sink_file, what_it_is)
{
	struct sink *s = open_sink(tl_at("p.pb.gz"), RENDER_PPROF_GZIP, NULL);
	struct sink_metric m[SINK_MAX_METRICS];
	char buf[64] = "x";

	cr_expect_str_eq(s->ops->kind, "file");
	cr_expect(s->ops->wants_pprof, "a gzip pprof file takes the session's encoding");
	cr_expect_eq(sink_flush(s), 0);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "");
	cr_expect_eq(sink_metrics(s, m), 0);
	sink_close(s, 0);
	for (int f = RENDER_PPROF; f <= RENDER_SVG; f++) {
		s = open_sink(tl_at("p"), (enum render_format)f, NULL);
		cr_expect_str_eq(s->ops->kind, "file");
		cr_expect_not(s->ops->wants_pprof, "format %d renders the profile itself", f);
		sink_close(s, 0);
	}
	sink_close(NULL, 0);
}

/* gzip pprof: the bytes the session encoded, as they are. */
Test(sink_file, pprof_takes_the_encoded_record)
{
	struct sink *s = open_sink(tl_at("p.pb.gz"), RENDER_PPROF_GZIP, NULL);
	struct profile *p = make_profile("work", 3), *back;
	struct sink_profile r = { .profile = p };
	uint8_t *enc;
	size_t len, n;
	char *got, err[256];

	cr_assert_eq(pprof_encode(p, true, &enc, &len), 0);
	r.data = enc;
	r.len = len;
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	got = slurp(tl_at("p.pb.gz"), &n);
	cr_expect_eq(n, len);
	cr_expect_eq(memcmp(got, enc, len), 0, "not the session's bytes");
	free(got);
	free(enc);
	/* Without the encoding, it renders the profile itself. */
	r.data = NULL;
	r.len = 0;
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	cr_assert_eq(pprof_read_file(tl_at("p.pb.gz"), &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(profile_total(back, 0), 3);
	profile_free(back);
	sink_close(s, 0);
	profile_free(p);
}

/* The other formats render the profile; a second profile replaces the
 * first (one file, one profile: ebprof record). */
Test(sink_file, folded_replaced_by_the_next_profile)
{
	struct sink *s = open_sink(tl_at("out.folded"), RENDER_FOLDED, NULL);
	struct profile *a = make_profile("work", 3), *b = make_profile("other", 5);
	struct sink_profile r = { .profile = a, .data = (const uint8_t *)"ignored", .len = 7 };
	char *got;

	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	got = slurp(tl_at("out.folded"), NULL);
	cr_expect_str_eq(got, "worker;main;work 3\n");
	free(got);
	r.profile = b;
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	got = slurp(tl_at("out.folded"), NULL);
	cr_expect_str_eq(got, "worker;main;other 5\n");
	free(got);
	sink_close(s, 0);
	profile_free(a);
	profile_free(b);
}

/* Options: copied at open, used for the SVG. */
Test(sink_file, svg_options_are_copied)
{
	char title[32] = "Title of mine", stype[32] = "samples";
	struct render_opts o = { .title = title, .sample_type = stype };
	struct sink *s = open_sink(tl_at("f.svg"), RENDER_SVG, &o);
	struct profile *p = make_profile("work", 3);
	struct sink_profile r = { .profile = p };
	char *got;

	strcpy(title, "changed");
	strcpy(stype, "nonsense");
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	got = slurp(tl_at("f.svg"), NULL);
	cr_expect(strstr(got, "<svg ") != NULL);
	cr_expect(strstr(got, "Title of mine") != NULL, "the title given at open");
	free(got);
	sink_close(s, 0);
	/* A sample type the profile lacks: the reason, nothing written. */
	o.title = NULL;
	o.sample_type = "cpu";
	s = open_sink(tl_at("g.svg"), RENDER_SVG, &o);
	cr_expect_eq(sink_write(s, &r), -EINVAL);
	cr_expect_str_eq(s->err, "unknown sample type 'cpu'; the profile has samples (count)");
	cr_expect_neq(access(tl_at("g.svg"), F_OK), 0);
	sink_close(s, 0);
	profile_free(p);
}

Test(sink_file, failed_writes_say_why)
{
	struct profile *p = make_profile("work", 3);
	struct sink_profile r = { .profile = p };
	struct sink *s = open_sink(tl_at("missing/dir/out.folded"), RENDER_FOLDED, NULL);
	char want[512];

	cr_expect_eq(sink_write(s, &r), -ENOENT);
	snprintf(want, sizeof(want), "cannot write %s: No such file or directory",
		 tl_at("missing/dir/out.folded"));
	cr_expect_str_eq(s->err, want);
	/* Nothing to write. */
	r.profile = NULL;
	cr_expect_eq(sink_write(s, &r), -EINVAL);
	cr_expect_str_eq(s->err, "no profile to render");
	sink_close(s, 0);

	/* The encoded pprof to a place that cannot take it. */
	s = open_sink(tl_at("missing/x.pb.gz"), RENDER_PPROF_GZIP, NULL);
	r.data = (const uint8_t *)"data";
	r.len = 4;
	cr_expect_eq(sink_write(s, &r), -ENOENT);
	snprintf(want, sizeof(want), "cannot write %s: No such file or directory",
		 tl_at("missing/x.pb.gz"));
	cr_expect_str_eq(s->err, want);
	r.data = NULL;
	r.len = 0;
	cr_expect_eq(sink_write(s, &r), -EINVAL);
	cr_expect_str_eq(s->err, "no profile to render");
	sink_close(s, 0);

	/* A success clears the previous reason. */
	s = open_sink(tl_at("ok.folded"), RENDER_FOLDED, NULL);
	cr_expect_eq(sink_write(s, &r), -EINVAL);
	r.profile = p;
	cr_expect_eq(sink_write(s, &r), 0);
	cr_expect_str_eq(s->err, "");
	sink_close(s, 0);
	profile_free(p);
}

/* "-": stdout, named so when it fails. */
Test(sink_file, stdout)
{
	struct profile *p = make_profile("work", 3);
	struct sink_profile r = { .profile = p, .data = (const uint8_t *)"RAW", .len = 3 };
	struct sink *s = open_sink("-", RENDER_PPROF_GZIP, NULL);
	int fd = open(tl_at("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(1);
	char *got;

	cr_assert_geq(fd, 0);
	fflush(stdout);
	dup2(fd, 1);
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	/* A closed stdout. */
	close(1);
	cr_expect_eq(sink_write(s, &r), -EBADF);
	cr_expect_str_eq(s->err, "cannot write stdout: Bad file descriptor");
	dup2(saved, 1);
	close(fd);
	got = slurp(tl_at("stdout"), NULL);
	cr_expect_str_eq(got, "RAW");
	free(got);
	sink_close(s, 0);
	profile_free(p);
}

/* The SVG options are the file's own copies, width and depth included. */
Test(sink_file, svg_options_are_kept)
{
	char title[] = "first title";
	struct render_opts o = { .title = title, .width = 300, .max_depth = 4 };
	struct sink *s = open_sink(tl_at("f.svg"), RENDER_SVG, &o);
	struct profile *p = make_profile("work", 3);
	struct sink_profile r = { .profile = p };
	char *svg;

	strcpy(title, "changed!!!!");
	cr_assert_eq(sink_write(s, &r), 0, "%s", s->err);
	svg = slurp(tl_at("f.svg"), NULL);
	cr_expect(strstr(svg, "first title"), "the title was not copied");
	cr_expect(strstr(svg, "width=\"300\""), "the width did not reach the flamegraph");
	free(svg);
	profile_free(p);
	sink_close(s, 0);
}
