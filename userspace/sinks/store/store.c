// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profile store's writer: atomic, non-overwriting writes, the running
 * total of what is stored and retention (age, size, full disk).
 *
 * Bookkeeping is per day directory (files, bytes, a lower bound of the
 * oldest start), rebuilt by a rescan at open and every STORE_RESCAN_NS.
 * Retention takes victims from a queue: the profiles of the oldest date
 * (every service), sorted by start time, loaded from the directory when
 * needed; new writes never go before it, so the queue stays valid until
 * the next rescan.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/log.h"
#include "store_internal.h"

#define STORE_RESCAN_NS (600 * NS_PER_S)  /* full rescan at most this often */
#define STORE_AGE_TRIM_NS (60 * NS_PER_S) /* age retention from store_write */
#define STORE_TEMP_AGE_S 60		  /* temp files older than this are stale */
#define STORE_MAX_SUFFIX 1000
#define COMPACT_MIN_STALE 16

struct store_day {
	char *service; /* sanitized directory name */
	int64_t day_s; /* UTC midnight */
	uint64_t files, bytes;
	uint64_t stale;	      /* index lines of removed profiles */
	int64_t min_start_ns; /* lower bound of the oldest start */
	bool touched;	      /* profiles removed by the current trim */
};

struct victim {
	char *name;
	int64_t start_ns, size;
	struct store_day *day;
};

struct store {
	char *dir;
	int64_t max_age_s, max_bytes;
	struct store_day **days;
	size_t ndays, capdays;
	struct victim *q; /* [qhead, qn): oldest first */
	size_t qhead, qn;
	uint64_t files, bytes;
	int64_t next_rescan_ns, next_age_trim_ns; /* CLOCK_MONOTONIC */
	int last_trim_err, last_index_err;	  /* logged once until it changes */
	struct store_stats st;
};

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return a % b < 0 ? q - 1 : q;
}

static int day_path(const struct store *s, const struct store_day *d, char *buf, size_t len)
{
	char date[16];

	store_date_format(d->day_s, date, sizeof(date));
	if (snprintf(buf, len, "%s/%s/%s", s->dir, d->service, date) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static struct store_day *day_get(struct store *s, const char *service, int64_t day_s)
{
	struct store_day *d;

	for (size_t i = 0; i < s->ndays; i++)
		if (s->days[i]->day_s == day_s && !strcmp(s->days[i]->service, service))
			return s->days[i];
	if (s->ndays == s->capdays) {
		size_t nc = s->capdays ? s->capdays * 2 : 16;
		struct store_day **nd = realloc(s->days, nc * sizeof(*nd));

		if (!nd)
			return NULL;
		s->days = nd;
		s->capdays = nc;
	}
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

static void queue_clear(struct store *s)
{
	for (size_t i = s->qhead; i < s->qn; i++)
		free(s->q[i].name);
	free(s->q);
	s->q = NULL;
	s->qhead = s->qn = 0;
}

static void days_free(struct store *s)
{
	queue_clear(s);
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
		if (f[i].nm.start_s * NS_PER_S < d->min_start_ns)
			d->min_start_ns = f[i].nm.start_s * NS_PER_S;
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
	d = n ? day_get(s, service, day_s) : NULL;
	if (d)
		day_set(s, d, f, n);
	store_files_free(f, n);
	return n && !d ? -ENOMEM : 0;
}

static int rescan(struct store *s)
{
	int err;

	days_free(s);
	s->files = s->bytes = 0;
	err = store_walk(s->dir, NULL, rescan_day, s);
	s->next_rescan_ns = now_ns(CLOCK_MONOTONIC) + STORE_RESCAN_NS;
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
						 .start_ns = f[i].nm.start_s * NS_PER_S,
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

	queue_clear(s);
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
		qsort(s->q, s->qn, sizeof(*s->q), victim_cmp);
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

struct trim_goal {
	int64_t cutoff_ns;  /* remove what starts before; INT64_MIN: none */
	int64_t max_bytes;  /* remove until at most this; < 0: none */
	uint64_t min_files; /* remove at least this many */
	uint64_t min_freed; /* and at least this many bytes */
	uint64_t removed, freed;
};

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
static int trim(struct store *s, struct trim_goal *g)
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
		queue_clear(s);
	finish_days(s);
	if (err && !g->removed)
		return err;
	return (int)(g->removed > INT_MAX ? INT_MAX : g->removed);
}

static void log_trim_error(struct store *s, int err)
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
		g.cutoff_ns = now - s->max_age_s * NS_PER_S;
	if (s->max_bytes > 0)
		g.max_bytes = s->max_bytes;
	return trim(s, &g);
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int store_open(const struct store_opts *opts, struct store **out)
{
	struct store *s;
	struct stat st;
	int err;

	if (!opts || !out || !opts->dir || !*opts->dir || opts->max_age_s < 0 ||
	    opts->max_bytes < 0)
		return -EINVAL;
	err = mkdir_p(opts->dir);
	if (err)
		return err;
	if (stat(opts->dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = strdup(opts->dir);
	if (!s->dir) {
		free(s);
		return -ENOMEM;
	}
	for (size_t len = strlen(s->dir); len > 1 && s->dir[len - 1] == '/';)
		s->dir[--len] = '\0';
	s->max_age_s = opts->max_age_s;
	s->max_bytes = opts->max_bytes;
	err = rescan(s);
	if (err) {
		store_close(s);
		return err;
	}
	log_trim_error(s, store_trim(s, now_ns(CLOCK_REALTIME)));
	s->next_age_trim_ns = now_ns(CLOCK_MONOTONIC) + STORE_AGE_TRIM_NS;
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	days_free(s);
	free(s->dir);
	free(s);
}

void store_get_stats(const struct store *s, struct store_stats *out)
{
	*out = s->st;
	out->files = s->files;
	out->bytes = s->bytes;
}

struct wname {
	int64_t start_s;
	const char *comm, *backend_type;
	uint32_t pid;
};

/*
 * Give the written file fd its final name in dayfd, never replacing a
 * file: with O_TMPFILE (tmp == NULL) link the unnamed file, else link the
 * named temp file. name receives the name used.
 */
static int link_new_name(int dayfd, int fd, const char *tmp, const struct wname *w, char *name,
			 size_t namelen)
{
	char proc[64];
	int err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (unsigned sfx = 0; sfx < STORE_MAX_SUFFIX; sfx++) {
		err = store_name_format(name, namelen, w->start_s, w->comm, w->pid, w->backend_type,
					sfx);
		if (err)
			return err;
		if (tmp)
			err = linkat(dayfd, tmp, dayfd, name, 0);
		else {
			err = linkat(AT_FDCWD, proc, dayfd, name, AT_SYMLINK_FOLLOW);
			if (err && errno == ENOENT) /* no /proc */
				err = linkat(fd, "", dayfd, name, AT_EMPTY_PATH);
		}
		if (!err)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Write data under a new name in dayfd. tmpfile: try O_TMPFILE. */
static int write_profile(int dayfd, const uint8_t *data, size_t len, const struct wname *w,
			 bool tmpfile, char *name, size_t namelen)
{
	char tmp[STORE_NAME_MAX + 64];
	bool named = !tmpfile;
	int fd = -1, err;

	if (tmpfile) {
		fd = openat(dayfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
			named = true;
		else if (fd < 0)
			return -errno;
	}
	if (named) {
		uint64_t rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint64_t)now_ns(CLOCK_MONOTONIC);
		snprintf(tmp, sizeof(tmp), ".profile.tmp.%d.%016llx", (int)getpid(),
			 (unsigned long long)rnd);
		fd = openat(dayfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
	}
	err = fchmod(fd, 0644) ? -errno : 0; /* whatever the umask */
	if (!err)
		err = write_all(fd, data, len);
	if (!err && fsync(fd))
		err = -errno;
	if (!err)
		err = link_new_name(dayfd, fd, named ? tmp : NULL, w, name, namelen);
	if (close(fd) && !err)
		err = -errno;
	if (named)
		unlinkat(dayfd, tmp, 0);
	if (!err && fsync(dayfd))
		err = -errno;
	if (err == -EPERM && !named)
		return -EOPNOTSUPP; /* linking the unnamed file refused: retry named */
	return err;
}

static bool no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

static int write_once(struct store *s, const struct profile_record *r, const struct wname *w,
		      const char *service, int64_t day_s, char *name, size_t namelen)
{
	char path[PATH_MAX], date[16];
	int fd, err;

	store_date_format(day_s, date, sizeof(date));
	if (snprintf(path, sizeof(path), "%s/%s/%s", s->dir, service, date) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = mkdir_p(path);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = write_profile(fd, r->data, r->len, w, true, name, namelen);
	if (err == -EOPNOTSUPP)
		err = write_profile(fd, r->data, r->len, w, false, name, namelen);
	if (!err) {
		int ierr = store_index_append(fd, r, name);

		if (ierr && ierr != s->last_index_err)
			log_warn("profile store %s: cannot update the index of %s: %s (profiles "
				 "are still listed, by file name)",
				 s->dir, path, strerror(-ierr));
		s->last_index_err = ierr;
	}
	close(fd);
	return err;
}

int store_write(struct store *s, const struct profile_record *r, char *path, size_t pathlen)
{
	char service[STORE_COMPONENT_MAX + 1], name[STORE_NAME_MAX], date[16];
	int64_t mono = now_ns(CLOCK_MONOTONIC), day_s;
	struct store_day *d;
	struct wname w;
	int err;

	if (!s || !r || !r->data || !r->len)
		return -EINVAL;
	w.start_s = floor_div(r->start_ns, NS_PER_S);
	w.pid = r->pid;
	w.comm = r->comm ? r->comm : record_label(r, "comm");
	if (!w.comm)
		w.comm = "unknown";
	w.backend_type = r->backend_type ? r->backend_type : record_label(r, "backend_type");
	store_sanitize(r->service ? r->service : record_label(r, "service") ?: "default", service);
	day_s = store_day_of(w.start_s);

	if (mono >= s->next_rescan_ns) {
		err = rescan(s);
		if (err)
			log_debug("profile store %s: rescan: %s", s->dir, strerror(-err));
	}
	if (s->max_age_s > 0 && mono >= s->next_age_trim_ns) {
		struct trim_goal g = { .cutoff_ns =
					       now_ns(CLOCK_REALTIME) - s->max_age_s * NS_PER_S,
				       .max_bytes = -1 };

		log_trim_error(s, trim(s, &g));
		s->next_age_trim_ns = mono + STORE_AGE_TRIM_NS;
	}
	if (s->max_bytes > 0) {
		struct trim_goal g = { .cutoff_ns = INT64_MIN };

		if (r->len > (uint64_t)s->max_bytes) {
			s->st.write_errors++;
			return -EFBIG;
		}
		g.max_bytes = s->max_bytes - (int64_t)r->len;
		if (s->bytes > (uint64_t)g.max_bytes)
			log_trim_error(s, trim(s, &g));
	}

	err = write_once(s, r, &w, service, day_s, name, sizeof(name));
	if (no_space(err)) {
		/* Make room for this file and some more, then retry once. */
		struct trim_goal g = { .cutoff_ns = INT64_MIN, .max_bytes = -1, .min_files = 1 };

		g.min_freed = 2 * (uint64_t)r->len + 8192;
		if (g.min_freed < s->bytes / 10)
			g.min_freed = s->bytes / 10;
		err = trim(s, &g);
		log_debug("profile store %s: disk full, removed %d old profiles", s->dir, err);
		if (err > 0)
			err = write_once(s, r, &w, service, day_s, name, sizeof(name));
		else
			err = -ENOSPC;
	}
	if (err) {
		s->st.write_errors++;
		return err;
	}
	d = day_get(s, service, day_s);
	if (d) {
		d->files++;
		d->bytes += r->len;
		if (w.start_s * NS_PER_S < d->min_start_ns)
			d->min_start_ns = w.start_s * NS_PER_S;
	} else {
		s->next_rescan_ns = 0; /* out of memory: recount at the next write */
	}
	s->files++;
	s->bytes += r->len;
	s->st.written++;
	/* Written out of order, before what the queue holds: reload it. */
	if (s->qhead < s->qn && w.start_s * NS_PER_S < s->q[s->qn - 1].start_ns)
		queue_clear(s);
	if (path && pathlen) {
		store_date_format(day_s, date, sizeof(date));
		snprintf(path, pathlen, "%s/%s/%s/%s", s->dir, service, date, name);
	}
	return 0;
}
