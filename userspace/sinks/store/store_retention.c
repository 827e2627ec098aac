// SPDX-License-Identifier: BSD-2-Clause
/*
 * Retention of the profile store (store.h): the bookkeeping per day
 * directory (files, bytes, a lower bound of the oldest start), rebuilt by
 * a rescan at open and every STORE_RESCAN_NS, and trimming by age, size and
 * full disk.
 *
 * Trimming takes victims from a queue: the profiles of the oldest date
 * (every service), sorted by start time, loaded from the directory when
 * needed; new writes never go before it, so the queue stays valid until
 * the next rescan (store_write() clears it when one does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_internal.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/array.h"
#include "util/compare.h"

#define COMPACT_MIN_STALE 16

static int day_path(const struct store *s, const struct store_day *d, char *buf, size_t len)
{
	char date[16];

	store_date_format(d->day_s, date, sizeof(date));
	if (snprintf(buf, len, "%s/%s/%s", s->dir, d->service, date) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

struct store_day *store_day_get(struct store *s, const char *service, int64_t day_s)
{
	struct store_day *d;

	for (size_t i = 0; i < s->ndays; i++)
		if (s->days[i]->day_s == day_s && !strcmp(s->days[i]->service, service))
			return s->days[i];
	if (ARRAY_RESERVE(s->days, &s->capdays, s->ndays + 1))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->service = strdup(service);
	if (!d->service) {
		free(d);
		return NULL;
	}
	d->day_s = day_s;
	d->min_start_ns = INT64_MAX;
	s->days[s->ndays++] = d;
	return d;
}

void store_queue_clear(struct store *s)
{
	for (size_t i = s->qhead; i < s->qn; i++)
		free(s->q[i].name);
	free(s->q);
	s->q = NULL;
	s->qhead = s->qn = 0;
}

void store_days_free(struct store *s)
{
	store_queue_clear(s);
	for (size_t i = 0; i < s->ndays; i++) {
		free(s->days[i]->service);
		free(s->days[i]);
	}
	free(s->days);
	s->days = NULL;
	s->ndays = s->capdays = 0;
}

/* Set a day's numbers from a directory listing, keeping the totals. */
static void day_set(struct store *s, struct store_day *d, const struct store_file *f, size_t n)
{
	s->files -= d->files;
	s->bytes -= d->bytes;
	d->files = n;
	d->bytes = 0;
	d->min_start_ns = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		d->bytes += (uint64_t)f[i].size;
		if (f[i].nm.start_s * NSEC_PER_SEC < d->min_start_ns)
			d->min_start_ns = f[i].nm.start_s * NSEC_PER_SEC;
	}
	s->files += d->files;
	s->bytes += d->bytes;
}

static int rescan_day(int dayfd, const char *service, int64_t day_s, void *ctx)
{
	struct store *s = ctx;
	struct store_file *f;
	struct store_day *d;
	size_t n;
	int err;

	err = store_scan_day(dayfd, day_s, STORE_TEMP_AGE_S, &f, &n);
	if (err)
		return err == -ENOENT ? 0 : err;
	d = n ? store_day_get(s, service, day_s) : NULL;
	if (d)
		day_set(s, d, f, n);
	store_files_free(f, n);
	return n && !d ? -ENOMEM : 0;
}

int store_rescan(struct store *s)
{
	int err;

	store_days_free(s);
	s->files = s->bytes = 0;
	err = store_walk(s->dir, NULL, rescan_day, s);
	s->next_rescan_ns = mono_ns() + STORE_RESCAN_NS;
	return err;
}

static int victim_cmp(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Append the profiles of day d to the queue. */
static int queue_add_day(struct store *s, struct store_day *d)
{
	char path[PATH_MAX];
	struct store_file *f;
	size_t n, i;
	int fd, err;

	err = day_path(s, d, path, sizeof(path));
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		day_set(s, d, NULL, 0);
		return 0;
	}
	err = store_scan_day(fd, d->day_s, -1, &f, &n);
	close(fd);
	if (err)
		return err;
	day_set(s, d, f, n);
	if (n) {
		struct victim *nq = realloc(s->q, (s->qn + n) * sizeof(*nq));

		if (!nq) {
			store_files_free(f, n);
			return -ENOMEM;
		}
		s->q = nq;
	}
	for (i = 0; i < n; i++) {
		s->q[s->qn++] = (struct victim){ .name = f[i].name,
						 .start_ns = f[i].nm.start_s * NSEC_PER_SEC,
						 .size = f[i].size,
						 .day = d };
		f[i].name = NULL;
	}
	store_files_free(f, n);
	return 0;
}

/* Load the profiles of the oldest date that still has some. */
static int queue_load(struct store *s)
{
	int err = 0;

	store_queue_clear(s);
	while (!s->qn && !err) {
		int64_t oldest = INT64_MAX;
		size_t i;

		for (i = 0; i < s->ndays; i++)
			if (s->days[i]->files && s->days[i]->day_s < oldest)
				oldest = s->days[i]->day_s;
		if (oldest == INT64_MAX)
			break;
		for (i = 0; i < s->ndays && !err; i++)
			if (s->days[i]->files && s->days[i]->day_s == oldest)
				err = queue_add_day(s, s->days[i]);
	}
	if (!err && s->qn)
		sort_array(s->q, s->qn, sizeof(*s->q), victim_cmp);
	return err;
}

static int remove_victim(struct store *s, struct victim *v)
{
	struct store_day *d = v->day;
	uint64_t size = (uint64_t)v->size;
	char path[PATH_MAX], date[16];

	store_date_format(d->day_s, date, sizeof(date));
	if (snprintf(path, sizeof(path), "%s/%s/%s/%s", s->dir, d->service, date, v->name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if (unlink(path) && errno != ENOENT)
		return -errno;
	if (d->files)
		d->files--;
	d->bytes -= size < d->bytes ? size : d->bytes;
	s->files -= s->files ? 1 : 0;
	s->bytes -= size < s->bytes ? size : s->bytes;
	d->stale++;
	d->touched = true;
	s->st.removed++;
	return 0;
}

/* After removals: drop emptied directories, compact indexes. */
static void finish_days(struct store *s)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < s->ndays; i++) {
		struct store_day *d = s->days[i];
		int fd;

		if (!d->touched || day_path(s, d, path, sizeof(path)))
			continue;
		d->touched = false;
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!d->files) {
			unlinkat(fd, STORE_INDEX, 0);
			if (!rmdir(path)) {
				*strrchr(path, '/') = '\0';
				rmdir(path); /* the service directory, when empty */
			}
			d->stale = 0;
		} else if (d->stale >= COMPACT_MIN_STALE && d->stale >= d->files) {
			if (!store_index_compact(fd, path))
				d->stale = 0;
		}
		close(fd);
	}
}

static bool want_more(const struct store *s, const struct trim_goal *g)
{
	if (g->removed < g->min_files || g->freed < g->min_freed)
		return true;
	if (g->max_bytes >= 0 && s->bytes > (uint64_t)g->max_bytes)
		return true;
	if (s->qhead < s->qn)
		return s->q[s->qhead].start_ns < g->cutoff_ns;
	for (size_t i = 0; i < s->ndays; i++)
		if (s->days[i]->files && s->days[i]->min_start_ns < g->cutoff_ns)
			return true;
	return false;
}

/* Remove oldest first until the goal is met or nothing is left. Returns
 * the number removed, or -errno when nothing could be removed. */
int store_trim_to(struct store *s, struct trim_goal *g)
{
	int err = 0;

	while (want_more(s, g)) {
		struct victim *v;

		if (s->qhead == s->qn) {
			err = queue_load(s);
			if (err || s->qhead == s->qn)
				break;
			continue; /* the age test needs the loaded front */
		}
		v = &s->q[s->qhead];
		err = remove_victim(s, v);
		if (err)
			break; /* retried at the next trim: the queue is reloaded */
		g->removed++;
		g->freed += (uint64_t)v->size;
		free(v->name);
		s->qhead++;
	}
	if (err)
		store_queue_clear(s);
	finish_days(s);
	if (err && !g->removed)
		return err;
	return (int)(g->removed > INT_MAX ? INT_MAX : g->removed);
}

void store_log_trim_error(struct store *s, int err)
{
	if (err < 0 && err != s->last_trim_err)
		log_warn("profile store %s: cannot remove old profiles: %s", s->dir,
			 strerror(-err));
	s->last_trim_err = err < 0 ? err : 0;
}

int store_trim(struct store *s, int64_t now)
{
	struct trim_goal g = { .cutoff_ns = INT64_MIN, .max_bytes = -1 };

	if (!s)
		return -EINVAL;
	if (s->max_age_s > 0)
		g.cutoff_ns = now - s->max_age_s * NSEC_PER_SEC;
	if (s->max_bytes > 0)
		g.max_bytes = s->max_bytes;
	return store_trim_to(s, &g);
}
