// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profile store's writer (store.h): atomic, non-overwriting writes and
 * the running total of what is stored; retention is store_retention.c's.
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

#include "store_internal.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/timeutil.h"

#define STORE_AGE_TRIM_NS (60 * NSEC_PER_SEC) /* age retention from store_write */
#define STORE_MAX_SUFFIX 1000
#define STORE_FULL_LOG_NS (60 * NSEC_PER_SEC) /* "disk is full" at most this often */

int store_open(const struct store_opts *opts, struct store **out)
{
	struct store *s;
	struct stat st;
	int err;

	if (!opts || !out || !opts->dir || !*opts->dir || opts->max_age_s < 0 ||
	    opts->max_bytes < 0)
		return -EINVAL;
	err = mkdir_p(opts->dir, 0755);
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
	s->base.ops = &store_sink_ops;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->max_age_s = opts->max_age_s;
	s->max_bytes = opts->max_bytes;
	err = store_rescan(s);
	if (err) {
		store_close(s);
		return err;
	}
	store_log_trim_error(s, store_trim(s, wall_ns()));
	s->next_age_trim_ns = mono_ns() + STORE_AGE_TRIM_NS;
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	store_days_free(s);
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
	enum ptype type;
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
					w->type, sfx);
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
			rnd = (uint64_t)mono_ns();
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

/*
 * The store's directory removed (or replaced) under the running agent:
 * said once, counted, made again, and the bookkeeping rebuilt from what
 * is there now, so the counts and retention do not go by files that are
 * gone. A directory that cannot be made is said once per reason; writes
 * fail meanwhile (counted as write errors). 0 or -errno.
 */
static int check_dir(struct store *s)
{
	struct stat st;
	int err;

	if (!stat(s->dir, &st) && S_ISDIR(st.st_mode) && st.st_dev == s->dev && st.st_ino == s->ino)
		return 0;
	if (!s->dir_err)
		s->st.dir_lost++;
	err = mkdir_p(s->dir, 0755);
	if (!err && stat(s->dir, &st))
		err = -errno;
	if (!err && !S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	if (err) {
		if (err != s->dir_err)
			log_warn("profile store %s was removed and cannot be made again: %s; "
				 "profiles are not kept until it can",
				 s->dir, strerror(-err));
		s->dir_err = err;
		return err;
	}
	log_warn("profile store %s was removed while running: made it again (%llu profiles "
		 "written before are gone)",
		 s->dir, (unsigned long long)s->files);
	s->dir_err = 0;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	err = store_rescan(s);
	if (err)
		log_debug("profile store %s: rescan: %s", s->dir, strerror(-err));
	return 0;
}

static bool no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

static int write_once(struct store *s, const struct sink_profile *r, const struct wname *w,
		      const char *service, int64_t day_s, char *name, size_t namelen)
{
	char path[PATH_MAX], date[16];
	int fd, err;

	store_date_format(day_s, date, sizeof(date));
	if (snprintf(path, sizeof(path), "%s/%s/%s", s->dir, service, date) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = mkdir_p(path, 0755);
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

int store_write(struct store *s, const struct sink_profile *r, char *path, size_t pathlen)
{
	char service[STORE_COMPONENT_MAX + 1], name[STORE_NAME_MAX], date[16];
	int64_t mono = mono_ns(), day_s;
	struct store_day *d;
	struct wname w;
	int err;

	if (!s || !r)
		return -EINVAL;
	if (!r->data || !r->len) {
		s->st.write_errors++;
		return -EINVAL;
	}
	w.start_s = r->start_ns / NSEC_PER_SEC - (r->start_ns % NSEC_PER_SEC < 0);
	w.pid = r->pid;
	if (!ptype_of_record(r->type)) { /* no name for its files */
		s->st.write_errors++;
		return -EINVAL;
	}
	w.type = ptype_of_record(r->type)->id;
	w.comm = r->comm ? r->comm : sink_profile_label(r, "comm");
	if (!w.comm)
		w.comm = "unknown";
	w.backend_type = r->backend_type ? r->backend_type : sink_profile_label(r, "backend_type");
	store_sanitize(r->service ? r->service : sink_profile_label(r, "service") ?: "default", service);
	day_s = store_day_of(w.start_s);

	err = check_dir(s);
	if (err) {
		s->st.write_errors++;
		return err;
	}
	if (mono >= s->next_rescan_ns) {
		err = store_rescan(s);
		if (err)
			log_debug("profile store %s: rescan: %s", s->dir, strerror(-err));
	}
	if (s->max_age_s > 0 && mono >= s->next_age_trim_ns) {
		struct trim_goal g = { .cutoff_ns = wall_ns() - s->max_age_s * NSEC_PER_SEC,
				       .max_bytes = -1 };

		store_log_trim_error(s, store_trim_to(s, &g));
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
			store_log_trim_error(s, store_trim_to(s, &g));
	}

	err = write_once(s, r, &w, service, day_s, name, sizeof(name));
	if (no_space(err)) {
		/* Make room for this file and some more, then retry once. */
		struct trim_goal g = { .cutoff_ns = INT64_MIN, .max_bytes = -1, .min_files = 1 };

		g.min_freed = 2 * (uint64_t)r->len + 8192;
		if (g.min_freed < s->bytes / 10)
			g.min_freed = s->bytes / 10;
		err = store_trim_to(s, &g);
		s->st.disk_full++;
		s->full_unlogged++;
		if (!s->full_logged_ns || mono - s->full_logged_ns >= STORE_FULL_LOG_NS) {
			log_warn("profile store %s: the disk is full: removed %d old profiles to "
				 "make room%s (%llu writes met a full disk since the last warning)",
				 s->dir, err > 0 ? err : 0, err > 0 ? "" : ", none left to remove",
				 (unsigned long long)s->full_unlogged);
			s->full_logged_ns = mono;
			s->full_unlogged = 0;
		}
		if (err > 0)
			err = write_once(s, r, &w, service, day_s, name, sizeof(name));
		else
			err = -ENOSPC;
	}
	if (err) {
		s->st.write_errors++;
		return err;
	}
	d = store_day_get(s, service, day_s);
	if (d) {
		d->files++;
		d->bytes += r->len;
		if (w.start_s * NSEC_PER_SEC < d->min_start_ns)
			d->min_start_ns = w.start_s * NSEC_PER_SEC;
	} else {
		s->next_rescan_ns = 0; /* out of memory: recount at the next write */
	}
	s->files++;
	s->bytes += r->len;
	s->st.written++;
	/* Written out of order, before what the queue holds: reload it. */
	if (s->qhead < s->qn && w.start_s * NSEC_PER_SEC < s->q[s->qn - 1].start_ns)
		store_queue_clear(s);
	if (path && pathlen) {
		store_date_format(day_s, date, sizeof(date));
		snprintf(path, pathlen, "%s/%s/%s/%s", s->dir, service, date, name);
	}
	return 0;
}
