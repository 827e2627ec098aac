// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "util/fileio.h"

struct file_sink {
	struct sink base;
	char *path;
	enum render_format format;
	struct render_opts opts; /* strings owned */
};

static int write_profile(struct sink *s, const struct sink_profile *r)
{
	struct file_sink *f = (struct file_sink *)s;
	int err;

	s->err[0] = '\0';
	if (f->format == RENDER_PPROF_GZIP && r->data) { /* encoded once by the session */
		err = write_file_atomic(f->path, r->data, r->len);
		if (err)
			snprintf(s->err, sizeof(s->err), "cannot write %s: %s",
				 strcmp(f->path, "-") ? f->path : "stdout", strerror(-err));
		return err;
	}
	if (!r->profile) {
		snprintf(s->err, sizeof(s->err), "no profile to render");
		return -EINVAL;
	}
	return render_to_file(r->profile, f->format, &f->opts, f->path, s->err, sizeof(s->err));
}

static void close_sink(struct sink *s, double drain_s)
{
	struct file_sink *f = (struct file_sink *)s;

	(void)drain_s;
	free(f->path);
	free((char *)f->opts.title);
	free((char *)f->opts.sample_type);
	free(f);
}

static const struct sink_ops file_ops_pprof = {
	.kind = "file",
	.wants_pprof = true,
	.write = write_profile,
	.close = close_sink,
};

static const struct sink_ops file_ops_other = {
	.kind = "file",
	.write = write_profile,
	.close = close_sink,
};

static int dup_opt(const char *in, const char **out)
{
	*out = in ? strdup(in) : NULL;
	return in && !*out ? -ENOMEM : 0;
}

int file_sink_open(const char *path, enum render_format format, const struct render_opts *opts,
		   struct sink **out)
{
	struct file_sink *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->base.ops = format == RENDER_PPROF_GZIP ? &file_ops_pprof : &file_ops_other;
	f->format = format;
	if (opts) /* width, max_depth; the strings are copied below */
		f->opts = *opts;
	f->opts.title = f->opts.sample_type = NULL;
	if (dup_opt(opts ? opts->title : NULL, &f->opts.title) ||
	    dup_opt(opts ? opts->sample_type : NULL, &f->opts.sample_type) ||
	    !(f->path = strdup(path))) {
		close_sink(&f->base, 0);
		return -ENOMEM;
	}
	*out = &f->base;
	return 0;
}
