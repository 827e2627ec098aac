// SPDX-License-Identifier: BSD-2-Clause
/*
 * The independent reader of the integration tests (gopprof.h): runs
 * `go tool pprof -raw` and `-top` on a profile, hands their output to
 * gopprof_parse.c, and frees what it built. The queries over a read
 * profile are gopprof_query.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "gopprof_internal.h"
#include "testlib.h"

static char *slurp(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char *s;

	if (read_file(path, &buf, &len))
		return NULL;
	s = realloc(buf, len + 1);
	if (!s) {
		free(buf);
		return NULL;
	}
	s[len] = '\0';
	return s;
}

struct gp_profile *gp_read(const char *path)
{
	char errpath[] = "/tmp/ebprof-gp-err-XXXXXX", *cmd = NULL, *out = NULL, *err = NULL;
	struct gp_profile *p = NULL;
	int fd = mkstemp(errpath), rc;

	if (fd < 0) {
		perror("gp: mkstemp");
		return NULL;
	}
	close(fd);
	if (asprintf(&cmd,
		     "export HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} "
		     "GOFLAGS=-mod=mod TZ=UTC; go tool pprof -raw -symbolize=none '%s' 2>'%s' && "
		     "echo '" TOP_MARK "' && "
		     "go tool pprof -top -nodecount=1 -symbolize=none '%s' 2>>'%s'",
		     path, errpath, path, errpath) < 0)
		abort();
	rc = tl_sh(cmd, &out);
	free(cmd);
	err = slurp(errpath);
	unlink(errpath);
	if (rc || !out || (err && err[0])) {
		fprintf(stderr, "go tool pprof cannot read %s (exit %d):\n%.2000s\n%.4000s\n", path,
			rc, err ? err : "", out ? out : "");
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	p->path = strdup(path);
	p->raw = strdup(out);
	p->duration_ns = -1;
	p->time_ns = -1;
	if (gp_parse(p, out)) {
		gp_free(p);
		p = NULL;
	}
out:
	free(out);
	free(err);
	return p;
}

struct gp_profile *gp_read_mem(const void *buf, size_t len)
{
	char path[] = "/tmp/ebprof-gp-XXXXXX";
	struct gp_profile *p;
	int fd = mkstemp(path);

	if (fd < 0) {
		perror("gp: mkstemp");
		return NULL;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		perror("gp: write");
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	p = gp_read(path);
	unlink(path);
	return p;
}

void gp_free(struct gp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncomments; i++)
		free(p->comments[i]);
	free(p->comments);
	for (size_t i = 0; i < p->ntypes; i++)
		free(p->types[i]);
	free(p->types);
	for (size_t i = 0; i < p->nsamples; i++) {
		struct gp_sample *s = &p->samples[i];

		for (size_t j = 0; j < s->nlabels; j++) {
			free(s->labels[j].key);
			free(s->labels[j].value);
		}
		free(s->labels);
		free(s->values);
		free(s->loc_ids);
		free(s->frames);
	}
	free(p->samples);
	for (size_t i = 0; i < p->nlocations; i++) {
		for (size_t j = 0; j < p->locations[i].nlines; j++) {
			free(p->locations[i].lines[j].fn);
			free(p->locations[i].lines[j].file);
		}
		free(p->locations[i].lines);
	}
	free(p->locations);
	for (size_t i = 0; i < p->nmappings; i++) {
		free(p->mappings[i].file);
		free(p->mappings[i].build_id);
	}
	free(p->mappings);
	free(p->period_type);
	free(p->period_unit);
	free(p->path);
	free(p->raw);
	free(p);
}
