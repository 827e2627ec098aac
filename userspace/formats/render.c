// SPDX-License-Identifier: BSD-2-Clause
/*
 * The formats/ layer (ARCHITECTURE.md): a struct profile out to bytes and
 * back. This file picks the format (render.h); pprof_encode.c and
 * pprof_decode.c speak the wire format, folded.c collapsed stacks,
 * flamegraph*.c SVG. It uses util/ and profile/ only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "folded.h"
#include "pprof.h"
#include "render.h"
#include "util/fileio.h"

/* Largest pprof file read (compressed or not), as the decoder's bound on
 * what it decompresses to. */
#define RENDER_MAX_FILE (1ULL << 30)

static const struct {
	const char *name, *file;
	enum render_format f;
} formats[] = {
	{ "pprof", "profile.pb.gz", RENDER_PPROF_GZIP },
	{ "folded", "profile.folded", RENDER_FOLDED },
	{ "svg", "profile.svg", RENDER_SVG },
};

static const char *const group_keys[] = {
	"query",       "query_fingerprint", "query_id", "pid",	"tid",
	"thread_name", "backend_type",	    "database", "user", "comm",
};

const char *render_group_by_key(const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(group_keys) / sizeof(group_keys[0]); i++)
		if (!strcmp(name, group_keys[i]))
			return group_keys[i];
	snprintf(err, errlen,
		 "cannot group by '%.64s': use query, query_fingerprint, query_id, pid, tid, "
		 "thread_name, backend_type, database, user or comm",
		 name);
	return NULL;
}

int render_format_parse(const char *name, enum render_format *out)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (!strcmp(name, formats[i].name)) {
			*out = formats[i].f;
			return 0;
		}
	}
	return -EINVAL;
}

const char *render_default_name(enum render_format f)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].f == f)
			return formats[i].file;
	return "profile.pb";
}

/* Folded stacks or a flamegraph: text through a memory stream. */
static int render_text(const struct profile *p, enum render_format f, const struct render_opts *o,
		       uint8_t **buf, size_t *len, char *err, size_t errlen)
{
	struct flamegraph_opts fo = { 0 };
	char *text = NULL;
	FILE *mem = open_memstream(&text, len);
	int ret;

	if (!mem) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (f == RENDER_FOLDED && !p->nsample_types) {
		snprintf(err, errlen, "cannot write folded stacks: the profile has no sample type");
		ret = -EINVAL;
	} else if (f == RENDER_FOLDED) {
		ret = folded_write(p, 0, o ? o->group_by : NULL, mem);
		if (ret)
			snprintf(err, errlen, "cannot write folded stacks: %s", strerror(-ret));
	} else {
		if (o) {
			fo.title = o->title;
			fo.sample_type = o->sample_type;
			fo.width = o->width;
			fo.max_depth = o->max_depth;
			fo.group_by = o->group_by;
			fo.idle = o->idle;
		}
		ret = flamegraph_write(p, &fo, mem, err, errlen);
	}
	if (fclose(mem) && !ret) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	if (ret) {
		free(text);
		return ret;
	}
	*buf = (uint8_t *)text;
	return 0;
}

int render_profile(const struct profile *p, enum render_format f, const struct render_opts *o,
		   uint8_t **buf, size_t *len, char *err, size_t errlen)
{
	int ret;

	*buf = NULL;
	*len = 0;
	if (f == RENDER_FOLDED || f == RENDER_SVG)
		return render_text(p, f, o, buf, len, err, errlen);
	ret = pprof_encode(p, f == RENDER_PPROF_GZIP, buf, len);
	if (ret)
		snprintf(err, errlen, "cannot encode the profile: %s", strerror(-ret));
	return ret;
}

int render_to_file(const struct profile *p, enum render_format f, const struct render_opts *o,
		   const char *path, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = render_profile(p, f, o, &buf, &len, err, errlen);

	if (ret)
		return ret;
	ret = write_file_atomic(path, buf, len);
	if (ret)
		snprintf(err, errlen, "cannot write %s: %s", strcmp(path, "-") ? path : "stdout",
			 strerror(-ret));
	free(buf);
	return ret;
}

int pprof_read_file(const char *path, struct profile **out, char *err, size_t errlen)
{
	const char *name = strcmp(path, "-") ? path : "stdin";
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	ret = read_file_max(path, RENDER_MAX_FILE, &buf, &len);
	if (ret == -EFBIG) {
		snprintf(err, errlen, "%s: not a usable pprof profile (larger than 1 GiB)", name);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s", name, strerror(-ret));
		return ret;
	}
	ret = pprof_decode(buf, len, out);
	free(buf);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory decoding %s", name);
	else if (ret)
		snprintf(err, errlen, "%s: not a valid pprof profile (%s)", name,
			 ret == -EFBIG ? "decompresses to more than 1 GiB" : strerror(-ret));
	return ret;
}
