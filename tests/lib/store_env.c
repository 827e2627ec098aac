// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "store_env.h"
#include "testlib.h"

char *tmp;
char mnt[512];

void store_setup(void)
{
	tmp = tl_tmpdir("store");
	cr_assert_not_null(tmp);
	setenv("TZ", "UTC", 1);
	tzset();
}

void store_teardown(void)
{
	char cmd[1200];

	if (mnt[0])
		umount2(mnt, MNT_DETACH);
	if (tmp) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmp);
	}
	free(tmp);
}

static void make_record(const struct rec *in, struct sink_profile *r, struct kv *labels,
			char *pidbuf, uint8_t **data)
{
	size_t n = 0;

	snprintf(pidbuf, 16, "%u", in->pid);
	labels[n++] = (struct kv){ "service", in->service };
	labels[n++] = (struct kv){ "pid", pidbuf };
	labels[n++] = (struct kv){ "comm", in->comm };
	labels[n++] = (struct kv){ "exe", "/usr/lib/postgresql/15/bin/postgres" };
	if (in->bt)
		labels[n++] = (struct kv){ "backend_type", in->bt };
	if (in->user)
		labels[n++] = (struct kv){ "pg_user", in->user };
	*data = malloc(in->size);
	cr_assert_not_null(*data);
	for (size_t i = 0; i < in->size; i++)
		(*data)[i] = (uint8_t)(in->fill + i * 7 + (i >> 8) * 13);
	*r = (struct sink_profile){ .start_ns = in->start_ns,
				    .end_ns = in->end_ns ? in->end_ns : in->start_ns + 60 * S,
				    .pid = in->pid,
				    .service = in->service,
				    .comm = in->comm,
				    .backend_type = in->bt,
				    .labels = labels,
				    .nlabels = n,
				    .data = *data,
				    .len = in->size };
}

int put(struct store *s, const struct rec *in, char *path, size_t pathlen)
{
	struct sink_profile r;
	struct kv labels[8];
	char pid[16];
	uint8_t *data;
	int err;

	make_record(in, &r, labels, pid, &data);
	err = store_write(s, &r, path, pathlen);
	free(data);
	return err;
}

struct rec R(uint32_t pid, int64_t start_s, const char *bt) {
	return (struct rec){ .service = "db1",
			     .comm = "postgres",
			     .bt = bt,
			     .user = "alice",
			     .pid = pid,
			     .start_ns = start_s *S,
			     .size = 100,
			     .fill = (uint8_t)pid };
}

struct store *
open_store(const char *dir, int64_t max_age_s, int64_t max_bytes)
{
	struct store_opts o = { .dir = dir, .max_age_s = max_age_s, .max_bytes = max_bytes };
	struct store *s = NULL;

	cr_assert_eq(store_open(&o, &s), 0, "store_open %s", dir);
	return s;
}

const char *lab(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

size_t list(const char *dir, const struct store_query *q, struct store_entry **e)
{
	size_t n = 0;

	cr_assert_eq(store_list(dir, q, e, &n), 0);
	return n;
}

bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Temp files anywhere under dir (nftw callback state). */
static int ntemps;

static int count_temp(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (strstr(path + ftw->base, ".tmp"))
		ntemps++;
	return 0;
}

int temps_under(const char *dir)
{
	ntemps = 0;
	cr_assert_eq(nftw(dir, count_temp, 16, FTW_PHYS), 0);
	return ntemps;
}

void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}
