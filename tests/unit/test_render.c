// SPDX-License-Identifier: BSD-2-Clause
/*
 * The output formats chosen in one place (formats/render.c): format names
 * and default file names, a profile rendered in every format (and read
 * back), SVG options and their errors, files written atomically and to
 * stdout, and pprof files read back: gzip or not, stdin, and every kind of
 * bad file with the message naming it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "formats/pprof.h"
#include "formats/render.h"
#include "util/fileio.h"
#include "testlib.h"

static void setup(void)
{
	tl_scratch_make("render");
}

TestSuite(render, .init = setup, .fini = tl_scratch_remove, .timeout = 60);

/* worker: main -> work (3 samples, 30 ms) and main -> work -> kernel
 * do_syscall_64 (1 sample, 10 ms). */
static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	struct pf_mapping km = { .start = 0xffffffff81000000ULL, .limit = 0xffffffff82000000ULL },
			  um = { .start = 0x400000, .limit = 0x500000 };
	int64_t fmain, fwork, fsys, lmain, lwork, lsys, mk, mu;
	struct pf_line line;
	struct pf_label lab;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	km.filename = profile_str(p, "[kernel.kallsyms]");
	um.filename = profile_str(p, "/usr/bin/app");
	mk = profile_add_mapping(p, &km);
	mu = profile_add_mapping(p, &um);
	fmain = profile_add_function(p, "main", NULL, "app.c", 10);
	fwork = profile_add_function(p, "work", NULL, "app.c", 20);
	fsys = profile_add_function(p, "do_syscall_64", NULL, NULL, 0);
	cr_assert(mk > 0 && mu > 0 && fmain > 0 && fwork > 0 && fsys > 0);
	line = (struct pf_line){ .function_id = (uint64_t)fmain, .line = 12 };
	lmain = profile_add_location(p, (uint64_t)mu, 0x401000, &line, 1);
	line = (struct pf_line){ .function_id = (uint64_t)fwork, .line = 22 };
	lwork = profile_add_location(p, (uint64_t)mu, 0x402000, &line, 1);
	line = (struct pf_line){ .function_id = (uint64_t)fsys };
	lsys = profile_add_location(p, (uint64_t)mk, 0xffffffff81001000ULL, &line, 1);
	cr_assert(lmain > 0 && lwork > 0 && lsys > 0);
	lab = profile_label_str(p, "thread_name", "worker");
	{
		uint64_t s1[] = { (uint64_t)lwork, (uint64_t)lmain };
		uint64_t s2[] = { (uint64_t)lsys, (uint64_t)lwork, (uint64_t)lmain };
		int64_t v1[] = { 3, 30000000 }, v2[] = { 1, 10000000 };

		cr_assert_eq(profile_add_sample(p, s1, 2, v1, &lab, 1), 0);
		cr_assert_eq(profile_add_sample(p, s2, 3, v2, &lab, 1), 0);
	}
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 1000000000;
	return p;
}

static char *text(const uint8_t *buf, size_t len)
{
	char *s = malloc(len + 1);

	memcpy(s, buf, len);
	s[len] = '\0';
	return s;
}

Test(render, format_names)
{
	enum render_format f = RENDER_FOLDED;

	cr_expect_eq(render_format_parse("pprof", &f), 0);
	cr_expect_eq(f, RENDER_PPROF_GZIP);
	cr_expect_eq(render_format_parse("folded", &f), 0);
	cr_expect_eq(f, RENDER_FOLDED);
	cr_expect_eq(render_format_parse("svg", &f), 0);
	cr_expect_eq(f, RENDER_SVG);
	static const char *const bad[] = {
		"PPROF", "pb", "pb.gz", "json", "", "svg ", "flamegraph"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = RENDER_SVG;
		cr_expect_eq(render_format_parse(bad[i], &f), -EINVAL, "'%s'", bad[i]);
		cr_expect_eq(f, RENDER_SVG, "'%s' changed the format", bad[i]);
	}
	cr_expect_str_eq(render_default_name(RENDER_PPROF_GZIP), "profile.pb.gz");
	cr_expect_str_eq(render_default_name(RENDER_PPROF), "profile.pb");
	cr_expect_str_eq(render_default_name(RENDER_FOLDED), "profile.folded");
	cr_expect_str_eq(render_default_name(RENDER_SVG), "profile.svg");
}

/* Both pprof forms decode to the same profile. */
Test(render, pprof_gzip_and_raw)
{
	struct profile *p = make_profile(), *back;
	uint8_t *gz, *raw;
	size_t gzlen, rawlen;
	char err[256] = "x";

	cr_assert_eq(render_profile(p, RENDER_PPROF_GZIP, NULL, &gz, &gzlen, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_gt(gzlen, 2);
	cr_expect(gz[0] == 0x1f && gz[1] == 0x8b, "not gzip");
	cr_assert_eq(render_profile(p, RENDER_PPROF, NULL, &raw, &rawlen, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect(!(raw[0] == 0x1f && raw[1] == 0x8b), "gzip, want raw");
	cr_assert_eq(pprof_decode(gz, gzlen, &back), 0);
	cr_expect_eq(back->nsamples, 2);
	cr_expect_eq(profile_total(back, 0), 4);
	cr_expect_eq(profile_total(back, 1), 40000000);
	cr_expect_eq(back->period, 10000000);
	profile_free(back);
	cr_assert_eq(pprof_decode(raw, rawlen, &back), 0);
	cr_expect_eq(back->nsamples, 2);
	profile_free(back);
	free(gz);
	free(raw);
	profile_free(p);
}

Test(render, folded)
{
	struct profile *p = make_profile();
	uint8_t *buf;
	size_t len;
	char err[256], *s;

	cr_assert_eq(render_profile(p, RENDER_FOLDED, NULL, &buf, &len, err, sizeof(err)), 0, "%s",
		     err);
	s = text(buf, len);
	cr_expect_str_eq(s, "worker;main;work 3\nworker;main;work;do_syscall_64_[k] 1\n");
	free(s);
	free(buf);
	profile_free(p);
}

Test(render, svg_and_its_options)
{
	struct profile *p = make_profile();
	struct render_opts o = { .title = "Night & day", .sample_type = "cpu", .width = 800 };
	uint8_t *buf;
	size_t len;
	char err[256], *s;

	cr_assert_eq(render_profile(p, RENDER_SVG, NULL, &buf, &len, err, sizeof(err)), 0, "%s",
		     err);
	s = text(buf, len);
	cr_expect(strstr(s, "<svg ") != NULL);
	cr_expect(strstr(s, "</svg>") != NULL);
	cr_expect(strstr(s, "CPU flame graph") != NULL, "the default title");
	cr_expect(strstr(s, "width=\"1200\"") != NULL, "the default width");
	cr_expect(strstr(s, "do_syscall_64") != NULL);
	cr_expect(strstr(s, ">work") != NULL || strstr(s, "work (") != NULL, "no frame 'work'");
	free(s);
	free(buf);

	cr_assert_eq(render_profile(p, RENDER_SVG, &o, &buf, &len, err, sizeof(err)), 0, "%s", err);
	s = text(buf, len);
	cr_expect(strstr(s, "Night &amp; day") != NULL, "title not used (or not escaped)");
	cr_expect(strstr(s, "width=\"800\"") != NULL, "width not used");
	cr_expect(strstr(s, "data-total=\"40000000\"") != NULL, "not drawn by cpu");
	free(s);
	free(buf);
	profile_free(p);
}

/* Bad options: -EINVAL with the reason, nothing returned. */
Test(render, svg_option_errors)
{
	struct profile *p = make_profile();
	struct render_opts o = { .sample_type = "alloc_space" };
	uint8_t *buf = (uint8_t *)1;
	size_t len = 9;
	char err[256] = "";

	cr_expect_eq(render_profile(p, RENDER_SVG, &o, &buf, &len, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "unknown sample type 'alloc_space'; the profile has samples (count), "
			      "cpu (nanoseconds)");
	cr_expect_null(buf);
	cr_expect_eq(len, 0);
	o = (struct render_opts){ .width = 5 };
	cr_expect_eq(render_profile(p, RENDER_SVG, &o, &buf, &len, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "width 5 out of range") == err, "%s", err);
	o = (struct render_opts){ .max_depth = -1 };
	cr_expect_eq(render_profile(p, RENDER_SVG, &o, &buf, &len, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "negative maximum depth -1");
	/* The sample type of another format is not looked at. */
	o = (struct render_opts){ .sample_type = "alloc_space" };
	cr_expect_eq(render_profile(p, RENDER_FOLDED, &o, &buf, &len, err, sizeof(err)), 0, "%s",
		     err);
	free(buf);
	profile_free(p);
}

/* A profile without samples still renders in every format. */
Test(render, profile_without_samples)
{
	struct profile *p = profile_new();
	uint8_t *buf;
	size_t len;
	char err[256], *s;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	for (int f = RENDER_PPROF_GZIP; f <= RENDER_SVG; f++) {
		cr_assert_eq(render_profile(p, (enum render_format)f, NULL, &buf, &len, err,
					    sizeof(err)),
			     0, "format %d: %s", f, err);
		if (f == RENDER_SVG) {
			s = text(buf, len);
			cr_expect(strstr(s, "No samples") != NULL, "%s", s);
			free(s);
		}
		if (f == RENDER_FOLDED)
			cr_expect_eq(len, 0);
		free(buf);
	}
	profile_free(p);
}

/* Without any sample type there is nothing to fold: an error (the SVG
 * says "No samples"). */
Test(render, profile_without_sample_types)
{
	struct profile *p = profile_new();
	uint8_t *buf;
	size_t len;
	char err[256] = "";

	cr_expect_eq(render_profile(p, RENDER_FOLDED, NULL, &buf, &len, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "cannot write folded stacks") == err, "%s", err);
	cr_expect(strstr(err, "no sample type"), "the message names the cause: %s", err);
	cr_assert_eq(render_profile(p, RENDER_SVG, NULL, &buf, &len, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_not_null(memmem(buf, len, "No samples", 10));
	free(buf);
	profile_free(p);
}

Test(render, to_a_file_atomically)
{
	struct profile *p = make_profile(), *back;
	char err[256] = "";
	uint8_t *buf;
	size_t len;
	struct stat st;

	cr_assert_eq(render_to_file(p, RENDER_FOLDED, NULL, tl_at("out.folded"), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(read_file(tl_at("out.folded"), &buf, &len), 0);
	cr_expect_eq(len, strlen("worker;main;work 3\nworker;main;work;do_syscall_64_[k] 1\n"));
	free(buf);
	cr_assert_eq(stat(tl_at("out.folded"), &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0644);
	/* Replaced whole by the next one. */
	cr_assert_eq(
		render_to_file(p, RENDER_PPROF_GZIP, NULL, tl_at("out.folded"), err, sizeof(err)),
		0, "%s", err);
	cr_assert_eq(pprof_read_file(tl_at("out.folded"), &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(back->nsamples, 2);
	profile_free(back);
	profile_free(p);
}

Test(render, to_a_file_errors)
{
	struct profile *p = make_profile();
	struct render_opts o = { .sample_type = "nope" };
	char err[512] = "", want[512];

	cr_expect_eq(
		render_to_file(p, RENDER_PPROF, NULL, tl_at("no/such/dir/x.pb"), err, sizeof(err)),
		-ENOENT);
	snprintf(want, sizeof(want), "cannot write %s: No such file or directory",
		 tl_at("no/such/dir/x.pb"));
	cr_expect_str_eq(err, want);
	cr_expect_eq(render_to_file(p, RENDER_PPROF, NULL, tl_scratch_dir(), err, sizeof(err)),
		     -EISDIR);
	snprintf(want, sizeof(want), "cannot write %s: Is a directory", tl_scratch_dir());
	cr_expect_str_eq(err, want);
	/* A render error is reported as it is, and nothing is written. */
	cr_expect_eq(render_to_file(p, RENDER_SVG, &o, tl_at("x.svg"), err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "unknown sample type 'nope'") == err, "%s", err);
	cr_expect_neq(access(tl_at("x.svg"), F_OK), 0);
	profile_free(p);
}

/* "-" is stdout, named so in messages. */
Test(render, to_stdout)
{
	struct profile *p = make_profile();
	char err[256] = "";
	uint8_t *buf;
	size_t len;
	int fd = open(tl_at("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(1), pfd[2];

	cr_assert_geq(fd, 0);
	fflush(stdout);
	cr_assert_eq(dup2(fd, 1), 1);
	cr_assert_eq(render_to_file(p, RENDER_FOLDED, NULL, "-", err, sizeof(err)), 0, "%s", err);
	/* A closed pipe: the write fails and the message says stdout. */
	cr_assert_eq(pipe(pfd), 0);
	close(pfd[0]);
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(dup2(pfd[1], 1), 1);
	cr_expect_eq(render_to_file(p, RENDER_FOLDED, NULL, "-", err, sizeof(err)), -EPIPE);
	cr_expect_str_eq(err, "cannot write stdout: Broken pipe");
	dup2(saved, 1);
	close(pfd[1]);
	close(fd);
	cr_assert_eq(read_file(tl_at("stdout"), &buf, &len), 0);
	cr_expect_eq(len, strlen("worker;main;work 3\nworker;main;work;do_syscall_64_[k] 1\n"));
	free(buf);
	profile_free(p);
}

/* ---- pprof_read_file ---------------------------------------------------------------- */

static void put(const char *rel, const void *data, size_t len)
{
	cr_assert_eq(write_file_atomic(tl_at(rel), data, len), 0);
}

static void read_fails(const char *path, int want, const char *msg)
{
	struct profile *p = (struct profile *)1;
	char err[512] = "";
	int ret = pprof_read_file(path, &p, err, sizeof(err));

	cr_expect_eq(ret, want, "%s: %d, want %d (%s)", path, ret, want, err);
	cr_expect_str_eq(err, msg, "%s:\n got  %s\n want %s", path, err, msg);
}

Test(render, read_gzip_raw_and_stdin)
{
	struct profile *p = make_profile(), *back;
	uint8_t *buf;
	size_t len;
	char err[256] = "";
	int fd, saved;

	cr_assert_eq(pprof_encode(p, false, &buf, &len), 0);
	put("raw.pb", buf, len);
	free(buf);
	cr_assert_eq(pprof_read_file(tl_at("raw.pb"), &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(profile_total(back, 1), 40000000);
	profile_free(back);
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	put("p.pb.gz", buf, len);
	free(buf);
	fd = open(tl_at("p.pb.gz"), O_RDONLY);
	saved = dup(0);
	cr_assert_eq(dup2(fd, 0), 0);
	cr_assert_eq(pprof_read_file("-", &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(profile_total(back, 0), 4);
	profile_free(back);
	/* stdin is named so in messages. */
	cr_assert_eq(dup2(open(tl_scratch_dir(), O_RDONLY | O_DIRECTORY), 0), 0);
	read_fails("-", -EISDIR, "cannot read stdin: Is a directory");
	dup2(saved, 0);
	close(fd);
	profile_free(p);
}

Test(render, read_bad_files)
{
	char want[1024];
	uint8_t *buf;
	size_t len;
	struct profile *p = make_profile();

	snprintf(want, sizeof(want), "cannot read %s: No such file or directory", tl_at("nothere"));
	read_fails(tl_at("nothere"), -ENOENT, want);
	snprintf(want, sizeof(want), "cannot read %s: Is a directory", tl_scratch_dir());
	read_fails(tl_scratch_dir(), -EISDIR, want);
	/* Not a profile. */
	put("text", "hello, world\n", 13);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)", tl_at("text"));
	read_fails(tl_at("text"), -EBADMSG, want);
	/* gzip of something that is not a profile. */
	put("gztext",
	    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00\x86"
	    "\xa6\x10\x36\x05\x00\x00\x00",
	    25);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)",
		 tl_at("gztext"));
	read_fails(tl_at("gztext"), -EBADMSG, want);
	/* A profile cut short, gzip'ed and not. */
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	put("cut.pb.gz", buf, len / 2);
	free(buf);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)",
		 tl_at("cut.pb.gz"));
	read_fails(tl_at("cut.pb.gz"), -EBADMSG, want);
	cr_assert_eq(pprof_encode(p, false, &buf, &len), 0);
	put("cut.pb", buf, len - 3);
	free(buf);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)",
		 tl_at("cut.pb"));
	read_fails(tl_at("cut.pb"), -EBADMSG, want);
	/* The gzip magic alone. */
	put("magic", "\x1f\x8b", 2);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)", tl_at("magic"));
	read_fails(tl_at("magic"), -EBADMSG, want);
	profile_free(p);
}

/* An empty file is no profile (not even the "" every string table starts
 * with). */
Test(render, read_empty_file)
{
	char want[512];

	put("empty", "", 0);
	snprintf(want, sizeof(want), "%s: not a valid pprof profile (Bad message)", tl_at("empty"));
	read_fails(tl_at("empty"), -EBADMSG, want);
}

/* A gzip bomb: more than 1 GiB once inflated is refused, not decoded. */
Test(render, read_gzip_bomb, .timeout = 120)
{
	static uint8_t zeros[1 << 20];
	size_t cap = 16 << 20, len;
	uint8_t *out = malloc(cap);
	char want[512];
	z_stream zs = { 0 };

	cr_assert_not_null(out);
	cr_assert_eq(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 9, Z_RLE), Z_OK);
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	for (int i = 0; i <= 1024; i++) { /* 1 GiB + 1 MiB */
		zs.next_in = zeros;
		zs.avail_in = sizeof(zeros);
		cr_assert_eq(deflate(&zs, i == 1024 ? Z_FINISH : Z_NO_FLUSH),
			     i == 1024 ? Z_STREAM_END : Z_OK);
		cr_assert_gt(zs.avail_out, 0, "deflate output buffer too small");
	}
	len = cap - zs.avail_out;
	deflateEnd(&zs);
	put("bomb.pb.gz", out, len);
	free(out);
	snprintf(want, sizeof(want),
		 "%s: not a valid pprof profile (decompresses to more than 1 GiB)",
		 tl_at("bomb.pb.gz"));
	read_fails(tl_at("bomb.pb.gz"), -EFBIG, want);
}

/* A file past the bound is refused before it is read: a sparse 1 GiB + 1
 * file costs nothing to make and must not be loaded. */
Test(render, read_refuses_a_file_past_1_gib)
{
	struct profile *p = NULL;
	char err[512] = "";
	int fd = open(tl_at("huge.pb.gz"), O_CREAT | O_WRONLY | O_TRUNC, 0644);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (1LL << 30) + 1), 0);
	close(fd);
	cr_expect_eq(pprof_read_file(tl_at("huge.pb.gz"), &p, err, sizeof(err)), -EFBIG);
	cr_expect_null(p);
	cr_expect(strstr(err, "larger than 1 GiB"), "%s", err);
}
