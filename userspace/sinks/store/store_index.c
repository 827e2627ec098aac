// SPDX-License-Identifier: BSD-2-Clause
/* The per-day index of the profile store: one JSON object per line,
 *   {"file":"030000-postgres-4242-checkpointer.pb.gz","start_ns":...,
 *    "end_ns":...,"pid":4242,"labels":{"service":"db1","pid":"4242",...}}
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "store_internal.h"
#include "util/array.h"
#include "util/jsonutil.h"

#define INDEX_MAX_BYTES (512LL << 20)

void store_kv_free(struct kv *kv, size_t n)
{
	for (size_t i = 0; kv && i < n; i++) {
		free((char *)kv[i].key);
		free((char *)kv[i].value);
	}
	free(kv);
}

void store_index_free(struct store_index_rec *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].file);
		store_kv_free(r[i].labels, r[i].nlabels);
	}
	free(r);
}

static int set_label(json_t *labels, const char *key, const char *value)
{
	json_t *v;

	if (!key || !*key || !value || json_object_get(labels, key))
		return 0;
	v = json_lossy_string(value);
	if (!v || json_object_set_new(labels, key, v))
		return -ENOMEM;
	return 0;
}

static char *index_line(const struct sink_profile *r, const char *file)
{
	json_t *o = json_object(), *labels = json_object();
	char pid[16], *line = NULL;
	int err = !o || !labels;

	snprintf(pid, sizeof(pid), "%u", r->pid);
	for (size_t i = 0; !err && i < r->nlabels; i++)
		err = set_label(labels, r->labels[i].key, r->labels[i].value);
	if (!err)
		err = set_label(labels, "service", r->service) || set_label(labels, "pid", pid) ||
		      set_label(labels, "comm", r->comm) ||
		      set_label(labels, "backend_type", r->backend_type) ||
		      set_label(labels, "type", r->type ? r->type : "cpu");
	if (!err)
		err = json_object_set_new(o, "file", json_lossy_string(file)) ||
		      json_object_set_new(o, "start_ns", json_integer(r->start_ns)) ||
		      json_object_set_new(o, "end_ns", json_integer(r->end_ns)) ||
		      json_object_set_new(o, "pid", json_integer(r->pid)) ||
		      json_object_set(o, "labels", labels);
	if (!err)
		line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	json_decref(labels);
	return line;
}

int store_index_append(int dayfd, const struct sink_profile *r, const char *file)
{
	char *line = index_line(r, file), *buf = NULL, last = '\n';
	struct stat st;
	size_t len;
	int fd, err;

	if (!line)
		return -ENOMEM;
	fd = openat(dayfd, STORE_INDEX, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		free(line);
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	/* A line cut by a crash or a full disk: start on a fresh line. */
	if (st.st_size > 0) {
		int rfd = openat(dayfd, STORE_INDEX, O_RDONLY | O_CLOEXEC);

		if (rfd >= 0) {
			if (pread(rfd, &last, 1, st.st_size - 1) != 1)
				last = '\n';
			close(rfd);
		}
	}
	len = strlen(line);
	buf = malloc(len + 3);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	snprintf(buf, len + 3, "%s%s\n", last == '\n' ? "" : "\n", line);
	/* No fsync: the index is advisory, a line lost in a crash only costs
	 * the labels the file name does not carry. */
	err = write_all(fd, buf, strlen(buf));
	if (err && ftruncate(fd, st.st_size)) {
		/* Nothing more to do: readers skip the cut line. */
	}
out:
	close(fd);
	free(buf);
	free(line);
	return err;
}

/* Whole index of dayfd; -ENOENT when there is none. */
static int read_index(int dayfd, char **buf, size_t *len)
{
	size_t cap = 0, n = 0;
	struct stat st;
	char *b = NULL;
	int fd, err = 0;

	fd = openat(dayfd, STORE_INDEX, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if (st.st_size > INDEX_MAX_BYTES) {
		err = -EFBIG;
		goto out;
	}
	cap = (size_t)st.st_size + 4096;
	b = malloc(cap + 1);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, b + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) /* grew meanwhile: what is there is enough */
			break;
	}
out:
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static char *json_strdup(json_t *v)
{
	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* One line -> record; -EINVAL when it is not a valid one. */
static int parse_line(const char *line, size_t len, struct store_index_rec *rec)
{
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL), *labels, *v;
	struct store_name nm;
	const char *key;
	size_t i = 0;
	int err = -EINVAL;

	memset(rec, 0, sizeof(*rec));
	if (!json_is_object(o))
		goto out;
	v = json_object_get(o, "file");
	if (!json_is_string(v) || store_name_parse(json_string_value(v), 0, &nm))
		goto out;
	if (!json_is_integer(json_object_get(o, "start_ns")) ||
	    !json_is_integer(json_object_get(o, "end_ns")))
		goto out;
	rec->start_ns = json_integer_value(json_object_get(o, "start_ns"));
	rec->end_ns = json_integer_value(json_object_get(o, "end_ns"));
	v = json_object_get(o, "pid");
	rec->pid = json_is_integer(v) ? json_integer_value(v) : -1;
	labels = json_object_get(o, "labels");
	if (labels && !json_is_object(labels))
		goto out;
	err = -ENOMEM;
	rec->file = json_strdup(json_object_get(o, "file"));
	if (!rec->file)
		goto out;
	if (labels && json_object_size(labels)) {
		rec->labels = calloc(json_object_size(labels), sizeof(*rec->labels));
		if (!rec->labels)
			goto out;
		json_object_foreach(labels, key, v)
		{
			if (!json_is_string(v))
				continue;
			rec->labels[i].key = strdup(key);
			rec->labels[i].value = json_strdup(v);
			if (!rec->labels[i].key || !rec->labels[i].value) {
				rec->nlabels = i + 1;
				goto out;
			}
			i++;
		}
		rec->nlabels = i;
	}
	err = 0;
out:
	json_decref(o);
	if (err) {
		free(rec->file);
		store_kv_free(rec->labels, rec->nlabels);
		memset(rec, 0, sizeof(*rec));
	}
	return err;
}

int store_index_load(int dayfd, struct store_index_rec **out, size_t *n)
{
	struct store_index_rec *recs = NULL;
	size_t len, cap = 0, cnt = 0;
	char *buf, *p, *end;
	int err;

	*out = NULL;
	*n = 0;
	err = read_index(dayfd, &buf, &len);
	if (err)
		return err == -ENOENT ? 0 : err;
	for (p = buf, end = buf + len; p < end && !err;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct store_index_rec rec;

		if (ll && parse_line(p, ll, &rec) == 0) {
			if (ARRAY_RESERVE(recs, &cap, cnt + 1)) {
				free(rec.file);
				store_kv_free(rec.labels, rec.nlabels);
				err = -ENOMEM;
				break;
			}
			recs[cnt++] = rec;
		}
		p += ll + 1;
	}
	free(buf);
	if (err) {
		store_index_free(recs, cnt);
		return err;
	}
	*out = recs;
	*n = cnt;
	return 0;
}

int store_index_compact(int dayfd, const char *day_path)
{
	char path[PATH_MAX], *buf, *p, *end, *kept;
	size_t len, klen = 0;
	int err;

	err = read_index(dayfd, &buf, &len);
	if (err)
		return err == -ENOENT ? 0 : err;
	kept = malloc(len + 1);
	if (!kept) {
		free(buf);
		return -ENOMEM;
	}
	for (p = buf, end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct store_index_rec rec;
		struct stat st;

		if (ll && parse_line(p, ll, &rec) == 0) {
			if (!fstatat(dayfd, rec.file, &st, AT_SYMLINK_NOFOLLOW)) {
				memcpy(kept + klen, p, ll);
				klen += ll;
				kept[klen++] = '\n';
			}
			free(rec.file);
			store_kv_free(rec.labels, rec.nlabels);
		}
		p += ll + 1;
	}
	free(buf);
	if (snprintf(path, sizeof(path), "%s/" STORE_INDEX, day_path) >= (int)sizeof(path))
		err = -ENAMETOOLONG;
	else if (klen)
		err = write_file_atomic(path, (const uint8_t *)kept, klen);
	else if (unlinkat(dayfd, STORE_INDEX, 0) && errno != ENOENT)
		err = -errno;
	free(kept);
	return err;
}
