// SPDX-License-Identifier: BSD-2-Clause
/*
 * A task iterator link per target process (waits_links.h): the targets'
 * tgids read from the BPF map in batches, sorted, and merged with the
 * sorted tgids of the links held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "waits_links.h"

#define CHUNK 256 /* keys a batch read asks for */

struct waits_links {
	int prog_fd, targets_fd;
	size_t max;
	uint32_t *tgids; /* sorted; fds[i] is the link of tgids[i] */
	int *fds;
	size_t n;
	uint32_t *scan; /* the map's keys, read at a sync */
	uint8_t *vals;
	size_t scan_cap;
	uint64_t made, closed;
};

int waits_links_new(int prog_fd, int targets_fd, size_t max, struct waits_links **out)
{
	struct waits_links *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->prog_fd = prog_fd;
	l->targets_fd = targets_fd;
	l->max = max;
	*out = l;
	return 0;
}

static void close_all(struct waits_links *l)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->fds[i]);
	l->closed += l->n;
	l->n = 0;
}

void waits_links_free(struct waits_links *l)
{
	if (!l)
		return;
	close_all(l);
	free(l->tgids);
	free(l->fds);
	free(l->scan);
	free(l->vals);
	free(l);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
	size_t c = *cap ? *cap : CHUNK;
	void *q;

	if (want <= *cap)
		return 0;
	while (c < want)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Every key of the targets map into l->scan, sorted: how many, or a
 * negative errno. */
static long read_targets(struct waits_links *l)
{
	uint32_t in = 0, out = 0, count;
	size_t n = 0, vcap;
	bool first = true;

	for (;;) {
		vcap = l->scan_cap;
		if (grow((void **)&l->scan, &l->scan_cap, n + CHUNK, sizeof(*l->scan)) ||
		    grow((void **)&l->vals, &vcap, l->scan_cap, sizeof(*l->vals)))
			return -ENOMEM;
		count = CHUNK;
		if (bpf_map_lookup_batch(l->targets_fd, first ? NULL : &in, &out, l->scan + n,
					 l->vals + n, &count, NULL)) {
			if (errno != ENOENT)
				return -errno;
			n += count;
			break;
		}
		n += count;
		in = out;
		first = false;
	}
	qsort(l->scan, n, sizeof(*l->scan), cmp_u32);
	return (long)n;
}

static int link_for(struct waits_links *l, uint32_t tgid)
{
	union bpf_iter_link_info li = { .task.pid = tgid };
	LIBBPF_OPTS(bpf_link_create_opts, o, .iter_info = &li, .iter_info_len = sizeof(li));

	return bpf_link_create(l->prog_fd, 0, BPF_TRACE_ITER, &o);
}

int waits_links_sync(struct waits_links *l, size_t limit, size_t *ntargets)
{
	long nt = read_targets(l);
	size_t i = 0, j = 0, k = 0;
	uint32_t *tg;
	int *fds, fd;

	if (nt < 0)
		return (int)nt;
	*ntargets = (size_t)nt;
	if ((size_t)nt > l->max || (size_t)nt > limit) {
		close_all(l);
		return -E2BIG;
	}
	/* the merged set in new arrays: what stays, what comes */
	tg = malloc((size_t)nt * sizeof(*tg) + 1);
	fds = malloc((size_t)nt * sizeof(*fds) + 1);
	if (!tg || !fds) {
		free(tg);
		free(fds);
		return -ENOMEM;
	}
	while (i < l->n || j < (size_t)nt) {
		if (j == (size_t)nt || (i < l->n && l->tgids[i] < l->scan[j])) {
			close(l->fds[i++]); /* no longer a target */
			l->closed++;
		} else if (i < l->n && l->tgids[i] == l->scan[j]) {
			tg[k] = l->tgids[i];
			fds[k++] = l->fds[i++];
			j++;
		} else {
			fd = link_for(l, l->scan[j]);
			if (fd >= 0) { /* else gone already (or no fd: next time) */
				tg[k] = l->scan[j];
				fds[k++] = fd;
				l->made++;
			}
			j++;
		}
	}
	free(l->tgids);
	free(l->fds);
	l->tgids = tg;
	l->fds = fds;
	l->n = k;
	return 0;
}

size_t waits_links_visit(struct waits_links *l)
{
	char buf[64];
	size_t done = 0;
	int fd;

	for (size_t i = 0; i < l->n; i++) {
		fd = bpf_iter_create(l->fds[i]);
		if (fd < 0)
			continue;
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		done++;
	}
	return done;
}

size_t waits_links_count(const struct waits_links *l)
{
	return l ? l->n : 0;
}

void waits_links_totals(const struct waits_links *l, uint64_t *made, uint64_t *closed)
{
	*made = l ? l->made : 0;
	*closed = l ? l->closed : 0;
}

size_t waits_links_max(bool *forced)
{
	const char *e = getenv("EBPROF_WAITS_LINKS_MAX");
	struct rlimit r;

	*forced = e && *e;
	if (*forced)
		return strtoul(e, NULL, 10);
	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur == RLIM_INFINITY)
		return 4096;
	return r.rlim_cur / 2;
}

bool waits_links_usable(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	bool nested = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			/* one pid: the host's namespace; more: a child's */
			nested = strchr(line + 6, '\t') != strrchr(line + 6, '\t');
			break;
		}
	fclose(f);
	return !nested;
}

/* A link against a thread of another process walked (waits_links.h). */
#define LINK_THREADS 7

size_t waits_links_worth(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	unsigned long threads = 0;
	int n;

	if (!f)
		return SIZE_MAX;
	/* "0.50 0.40 0.30 2/212 4321": runnable/all scheduling entities */
	n = fscanf(f, "%*s %*s %*s %*u/%lu", &threads);
	fclose(f);
	return n == 1 && threads ? threads / LINK_THREADS : SIZE_MAX;
}
