// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "util/log.h"
#include "util/fileio.h"
#include "remote_queue.h"
#include "util/timeutil.h"
#include "util/compare.h"
#include "util/array.h"

#define RQ_DROP_LOG_NS (60 * NSEC_PER_SEC)

struct rq_entry {
	uint64_t seq;
	int64_t size; /* bytes on disk */
};

struct rqueue {
	char *dir;
	char *what;
	int dirfd;
	int64_t max_bytes, bytes;
	struct rq_entry *v; /* oldest first */
	size_t n, cap;
	uint64_t next_seq;
	uint64_t inflight_seq;
	bool inflight;
	uint64_t dropped;
	uint64_t drops_unlogged;
	int64_t drop_logged_ns;
};

void rq_file_name(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "p-%020" PRIu64 ".ebpq", seq);
}

/* "<dir>/<name of seq>", malloc'ed. */
static char *entry_path(const struct rqueue *q, uint64_t seq)
{
	char name[32], *p;

	rq_file_name(seq, name, sizeof(name));
	if (asprintf(&p, "%s/%s", q->dir, name) < 0)
		return NULL;
	return p;
}

/* Seq of a queue file name, or 0 when the name is not one. */
static uint64_t parse_name(const char *name)
{
	uint64_t seq = 0;
	int i;

	if (strncmp(name, "p-", 2) || strlen(name) != 2 + 20 + 5 || strcmp(name + 22, ".ebpq"))
		return 0;
	for (i = 2; i < 22; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		if (seq > (UINT64_MAX - 9) / 10)
			return 0;
		seq = seq * 10 + (uint64_t)(name[i] - '0');
	}
	return seq;
}

/* ---- entries ------------------------------------------------------------ */

static int append_entry(struct rqueue *q, uint64_t seq, int64_t size)
{
	if (ARRAY_RESERVE(q->v, &q->cap, q->n + 1))
		return -ENOMEM;
	q->v[q->n++] = (struct rq_entry){ .seq = seq, .size = size };
	q->bytes += size;
	return 0;
}

/* Forget entry i (the file is the caller's business). */
static void remove_entry(struct rqueue *q, size_t i)
{
	q->bytes -= q->v[i].size;
	memmove(q->v + i, q->v + i + 1, (q->n - i - 1) * sizeof(*q->v));
	q->n--;
}

static void unlink_seq(struct rqueue *q, uint64_t seq)
{
	char name[32];

	rq_file_name(seq, name, sizeof(name));
	if (unlinkat(q->dirfd, name, 0) && errno != ENOENT)
		log_warn("%s: removing %s/%s: %s", q->what, q->dir, name, strerror(errno));
	fsync(q->dirfd);
}

static void move_aside(struct rqueue *q, const char *name, const char *why)
{
	char aside[64];

	snprintf(aside, sizeof(aside), "%s.corrupt", name);
	log_warn("%s: queue file %s/%s is unusable (%s), moved aside as %s, skipped", q->what,
		 q->dir, name, why, aside);
	if (renameat(q->dirfd, name, q->dirfd, aside) && errno != ENOENT)
		unlinkat(q->dirfd, name, 0);
	fsync(q->dirfd);
}

static void log_drops(struct rqueue *q, bool force)
{
	int64_t now = mono_ns();

	if (!q->drops_unlogged)
		return;
	if (!force && q->drop_logged_ns && now - q->drop_logged_ns < RQ_DROP_LOG_NS)
		return;
	log_warn("%s: queue over %" PRId64 " bytes, dropped the %" PRIu64
		 " oldest profile(s) (%" PRIu64 " dropped so far)",
		 q->what, q->max_bytes, q->drops_unlogged, q->dropped);
	q->drops_unlogged = 0;
	q->drop_logged_ns = now;
}

/* Drop the oldest entries (not the in-flight one) until need more bytes
 * fit; false if they cannot. */
static bool make_room(struct rqueue *q, int64_t need)
{
	size_t i = 0;

	while (q->bytes + need > q->max_bytes && i < q->n) {
		if (q->inflight && q->v[i].seq == q->inflight_seq) {
			i++;
			continue;
		}
		unlink_seq(q, q->v[i].seq);
		remove_entry(q, i);
		q->dropped++;
		q->drops_unlogged++;
	}
	return q->bytes + need <= q->max_bytes;
}

/* ---- API ---------------------------------------------------------------- */

/* Load and check every queue file of the directory, oldest first. */
static int load_dir(struct rqueue *q)
{
	uint64_t *seqs = NULL, max_seq = 0;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int err = 0, fd;
	DIR *d;

	fd = dup(q->dirfd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((de = readdir(d))) {
		uint64_t seq = parse_name(de->d_name);

		if (!seq) {
			/* temp files of write_file_atomic() left by a crash */
			if (!strncmp(de->d_name, "p-", 2) && strstr(de->d_name, ".ebpq.tmp."))
				unlinkat(q->dirfd, de->d_name, 0);
			continue;
		}
		if (ARRAY_RESERVE(seqs, &cap, n + 1)) {
			err = -ENOMEM;
			goto out;
		}
		seqs[n++] = seq;
	}
	if (n)
		sort_array(seqs, n, sizeof(*seqs), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		char name[32], *path;
		struct rq_item *it;
		uint8_t *buf;
		size_t len;

		if (seqs[i] > max_seq)
			max_seq = seqs[i];
		rq_file_name(seqs[i], name, sizeof(name));
		path = entry_path(q, seqs[i]);
		if (!path) {
			err = -ENOMEM;
			goto out;
		}
		err = read_file(path, &buf, &len);
		free(path);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err == -ENOMEM)
			goto out;
		if (err) {
			move_aside(q, name, strerror(-err));
			err = 0;
			continue;
		}
		err = rq_parse_item(buf, len, seqs[i], &it);
		if (err == -EBADMSG) {
			move_aside(q, name, "bad format or checksum");
			err = 0;
			continue;
		}
		if (err)
			goto out;
		rq_item_free(it);
		err = append_entry(q, seqs[i], (int64_t)len);
		if (err)
			goto out;
	}
	q->next_seq = max_seq + 1;
out:
	free(seqs);
	closedir(d);
	return err;
}

int rq_open(const char *dir, int64_t max_bytes, const char *what, struct rqueue **out)
{
	struct rqueue *q;
	size_t dlen;
	int err;

	*out = NULL;
	if (!dir || !*dir || max_bytes <= 0)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->dirfd = -1;
	q->max_bytes = max_bytes;
	q->next_seq = 1;
	q->dir = strdup(dir);
	q->what = strdup(what ? what : "queue");
	if (!q->dir || !q->what) {
		err = -ENOMEM;
		goto fail;
	}
	dlen = strlen(q->dir);
	while (dlen > 1 && q->dir[dlen - 1] == '/')
		q->dir[--dlen] = '\0';
	err = mkdir_p(q->dir, 0750);
	if (err)
		goto fail;
	q->dirfd = open(q->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (q->dirfd < 0) {
		err = -errno;
		goto fail;
	}
	/* one user at a time (two agents would send everything twice) */
	if (flock(q->dirfd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	err = load_dir(q);
	if (err)
		goto fail;
	if (q->bytes > q->max_bytes) {
		make_room(q, 0);
		log_drops(q, true);
	}
	*out = q;
	return 0;
fail:
	rq_close(q);
	return err;
}

int rq_push(struct rqueue *q, const struct sink_profile *rec)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char *path;
	int err;

	if (!rec || (!rec->data && rec->len) || (!rec->labels && rec->nlabels))
		return -EINVAL;
	err = rq_serialize(rec, &buf, &len);
	if (err)
		return err;
	if ((int64_t)len > q->max_bytes) {
		free(buf);
		q->dropped++;
		return -EFBIG;
	}
	make_room(q, (int64_t)len);
	log_drops(q, false);
	path = entry_path(q, q->next_seq);
	if (!path) {
		free(buf);
		return -ENOMEM;
	}
	err = write_file_atomic(path, buf, len);
	free(buf);
	if (!err) {
		err = append_entry(q, q->next_seq, (int64_t)len);
		if (err)
			unlink(path);
		else
			q->next_seq++;
	}
	free(path);
	return err;
}

int rq_peek(struct rqueue *q, struct rq_item **out)
{
	*out = NULL;
	while (q->n) {
		uint64_t seq = q->v[0].seq;
		char name[32], *path = entry_path(q, seq);
		uint8_t *buf;
		size_t len;
		int err;

		if (!path)
			return -ENOMEM;
		rq_file_name(seq, name, sizeof(name));
		err = read_file(path, &buf, &len);
		free(path);
		if (err == -ENOENT) {
			log_warn("%s: queue file %s/%s vanished, skipped", q->what, q->dir, name);
			remove_entry(q, 0);
			continue;
		}
		if (err)
			return err;
		err = rq_parse_item(buf, len, seq, out);
		if (err == -EBADMSG) {
			move_aside(q, name, "bad format or checksum");
			remove_entry(q, 0);
			continue;
		}
		if (err)
			return err;
		q->inflight = true;
		q->inflight_seq = seq;
		return 0;
	}
	return -ENOENT;
}

void rq_done(struct rqueue *q, uint64_t seq, bool remove)
{
	if (q->inflight && q->inflight_seq == seq)
		q->inflight = false;
	if (!remove)
		return;
	for (size_t i = 0; i < q->n; i++) {
		if (q->v[i].seq == seq) {
			unlink_seq(q, seq);
			remove_entry(q, i);
			return;
		}
	}
}

size_t rq_count(const struct rqueue *q)
{
	return q->n;
}

int64_t rq_bytes(const struct rqueue *q)
{
	return q->bytes;
}

uint64_t rq_dropped(const struct rqueue *q)
{
	return q->dropped;
}

void rq_close(struct rqueue *q)
{
	if (!q)
		return;
	log_drops(q, true);
	if (q->dirfd >= 0)
		close(q->dirfd);
	free(q->v);
	free(q->dir);
	free(q->what);
	free(q);
}
