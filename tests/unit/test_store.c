// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk profile store: write/list round trip with labels, names and
 * collisions, queries (time overlap, labels, pids, service), retention by
 * age and by size (oldest first, also after out-of-order writes), a full
 * disk (a 1 MiB tmpfs), index tolerance (cut last line, no index, unknown
 * files) and the time syntax of ls/merge. Run as root (tmpfs mount).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "sinks/store/store.h"
#include "cli/store_select.h"
#include "sinks/store/store_internal.h"
#include "../lib/testlib.h"

#define S 1000000000LL
#define T0 1700000000LL /* 2023-11-14T22:13:20Z */

static char *tmp;
static char mnt[512];

static void setup(void)
{
	tmp = tl_tmpdir("store");
	cr_assert_not_null(tmp);
	setenv("TZ", "UTC", 1);
	tzset();
}

static void teardown(void)
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

TestSuite(store, .init = setup, .fini = teardown, .timeout = 120);

struct rec {
	const char *service, *comm, *bt, *user;
	uint32_t pid;
	int64_t start_ns, end_ns;
	size_t size;
	uint8_t fill;
};

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

static int put(struct store *s, const struct rec *in, char *path, size_t pathlen)
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

/* A record with defaults: service db1, comm postgres, 100 bytes. */
static struct rec R(uint32_t pid, int64_t start_s, const char *bt) {
	return (struct rec){ .service = "db1",
			     .comm = "postgres",
			     .bt = bt,
			     .user = "alice",
			     .pid = pid,
			     .start_ns = start_s *S,
			     .size = 100,
			     .fill = (uint8_t)pid };
}

static struct store *
open_store(const char *dir, int64_t max_age_s, int64_t max_bytes)
{
	struct store_opts o = { .dir = dir, .max_age_s = max_age_s, .max_bytes = max_bytes };
	struct store *s = NULL;

	cr_assert_eq(store_open(&o, &s), 0, "store_open %s", dir);
	return s;
}

static const char *lab(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

static size_t list(const char *dir, const struct store_query *q, struct store_entry **e)
{
	size_t n = 0;

	cr_assert_eq(store_list(dir, q, e, &n), 0);
	return n;
}

static bool exists(const char *path)
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

static int temps_under(const char *dir)
{
	ntemps = 0;
	cr_assert_eq(nftw(dir, count_temp, 16, FTW_PHYS), 0);
	return ntemps;
}

/* ---- names --------------------------------------------------------------- */

Test(store, names_sanitize_format_parse)
{
	char buf[STORE_NAME_MAX], c[STORE_COMPONENT_MAX + 1];
	struct store_name nm;
	int64_t day;

	store_sanitize("client backend", c);
	cr_assert_str_eq(c, "client_backend");
	store_sanitize("../etc/x-y", c);
	cr_assert_str_eq(c, "_._etc_x_y");
	store_sanitize("", c);
	cr_assert_str_eq(c, "_");
	store_sanitize("b\xc3\xa4r", c);
	cr_assert_str_eq(c, "b__r");

	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "postgres", 4242, "client backend",
				       false, 0),
		     0);
	cr_assert_str_eq(buf, "221320-postgres-4242-client_backend.pb.gz");
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "pg-x", 7, NULL, false, 2), 0);
	cr_assert_str_eq(buf, "221320-pg_x-7-2.pb.gz");

	cr_assert_eq(store_date_parse("2023-11-14", &day), 0);
	cr_assert_eq(day, T0 - T0 % 86400);
	cr_assert_eq(store_date_parse("2023-02-30", &day), -EINVAL);
	cr_assert_eq(store_date_parse("2023-1-14", &day), -EINVAL);

	cr_assert_eq(store_name_parse("221320-postgres-4242-client_backend-3.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.start_s, T0);
	cr_assert_str_eq(nm.comm, "postgres");
	cr_assert_eq(nm.pid, 4242);
	cr_assert_str_eq(nm.backend_type, "client_backend");
	cr_assert_eq(nm.suffix, 3);
	cr_assert_eq(store_name_parse("221320-pg_x-7-2.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.suffix, 2);
	cr_assert_str_eq(nm.backend_type, "");
	cr_assert_eq(store_name_parse("221320-postgres-7.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.pid, 7);
	cr_assert_not(nm.offcpu);
	/* an off-CPU profile beside the CPU one of the same process */
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "postgres", 4242, "client backend",
				       true, 1),
		     0);
	cr_assert_str_eq(buf, "221320-postgres-4242-client_backend-1.offcpu.pb.gz");
	cr_assert_eq(store_name_parse(buf, day, &nm), 0);
	cr_assert(nm.offcpu);
	cr_assert_eq(nm.pid, 4242);
	cr_assert_str_eq(nm.backend_type, "client_backend");
	cr_assert_eq(nm.suffix, 1);
	cr_assert_eq(store_name_parse("221320-postgres-7.offcpu.pb.gz", day, &nm), 0);
	cr_assert(nm.offcpu && nm.pid == 7);
	cr_assert_eq(store_name_parse(".offcpu.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("index.jsonl", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("garbage.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("256000-postgres-7.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("221320-postgres-x.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("221320-pg/x-7.pb.gz", day, &nm), -EINVAL);
	cr_assert(store_is_temp(".profile.tmp.12.ab"));
	cr_assert(store_is_temp("index.jsonl.tmp.12.ab"));
	cr_assert_not(store_is_temp("221320-postgres-7.pb.gz"));
}

/* ---- write and list ---------------------------------------------------------- */

Test(store, write_list_round_trip)
{
	struct rec a = R(4242, T0, "client backend"), b = R(77, T0 + 60, "checkpointer"),
		   c = R(5, T0 + 7200, NULL); /* next day (UTC) */
	char pa[1024], pb[1024], pc[1024], want[1200];
	struct store_stats st;
	struct store_entry *e;
	struct store *s = open_store(tmp, 0, 0);
	uint8_t *data;
	size_t n, len;

	a.end_ns = a.start_ns + 60 * S + 123;
	c.service = "db 2";
	c.size = 300;
	cr_assert_eq(put(s, &c, pc, sizeof(pc)), 0);
	cr_assert_eq(put(s, &a, pa, sizeof(pa)), 0);
	cr_assert_eq(put(s, &b, pb, sizeof(pb)), 0);
	snprintf(want, sizeof(want), "%s/db1/2023-11-14/221320-postgres-4242-client_backend.pb.gz",
		 tmp);
	cr_assert_str_eq(pa, want);
	snprintf(want, sizeof(want), "%s/db_2/2023-11-15/001320-postgres-5.pb.gz", tmp);
	cr_assert_str_eq(pc, want);
	store_get_stats(s, &st);
	cr_assert_eq(st.written, 3);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.bytes, 500);
	cr_assert_eq(st.write_errors, 0);
	store_close(s);

	cr_assert_eq(read_file(pa, &data, &len), 0);
	cr_assert_eq(len, 100);
	cr_assert_eq(data[1], (uint8_t)(4242 + 7));
	free(data);

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(e[0].path, pa);
	cr_assert_eq(e[0].start_ns, a.start_ns);
	cr_assert_eq(e[0].end_ns, a.end_ns);
	cr_assert_eq(e[0].pid, 4242);
	cr_assert_eq(e[0].size, 100);
	cr_assert_eq(e[0].nlabels, 7);
	cr_assert_str_eq(e[0].labels[0].key, "service"); /* the record's order */
	cr_assert_str_eq(lab(&e[0], "type"), "cpu");
	cr_assert_str_eq(lab(&e[0], "service"), "db1");
	cr_assert_str_eq(lab(&e[0], "pid"), "4242");
	cr_assert_str_eq(lab(&e[0], "comm"), "postgres");
	cr_assert_str_eq(lab(&e[0], "exe"), "/usr/lib/postgresql/15/bin/postgres");
	cr_assert_str_eq(lab(&e[0], "backend_type"), "client backend");
	cr_assert_str_eq(lab(&e[0], "pg_user"), "alice");
	cr_assert_str_eq(e[1].path, pb);
	cr_assert_str_eq(lab(&e[1], "backend_type"), "checkpointer");
	cr_assert_str_eq(e[2].path, pc);
	cr_assert_str_eq(lab(&e[2], "service"), "db 2", "label keeps the unsanitized name");
	cr_assert_null(lab(&e[2], "backend_type"));
	cr_assert_eq(e[2].size, 300);
	store_entries_free(e, n);
	cr_assert_eq(temps_under(tmp), 0);
}

Test(store, name_collisions_get_suffixes)
{
	struct store *s = open_store(tmp, 0, 0);
	char p[3][1024];
	struct store_entry *e;
	uint8_t *d;
	size_t n, len;

	for (int i = 0; i < 3; i++) {
		struct rec r = R(4242, T0, "walwriter");

		r.fill = (uint8_t)(10 * i);
		r.start_ns += i; /* same second */
		cr_assert_eq(put(s, &r, p[i], sizeof(p[i])), 0);
	}
	cr_assert(strstr(p[0], "/221320-postgres-4242-walwriter.pb.gz"));
	cr_assert(strstr(p[1], "/221320-postgres-4242-walwriter-1.pb.gz"));
	cr_assert(strstr(p[2], "/221320-postgres-4242-walwriter-2.pb.gz"));
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(read_file(p[i], &d, &len), 0);
		cr_assert_eq(d[0], (uint8_t)(10 * i), "file %d was overwritten", i);
		free(d);
	}
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(e[i].start_ns, T0 * S + (int64_t)i, "from the index: ns precision");
		cr_assert_str_eq(e[i].path, p[i]);
		cr_assert_str_eq(lab(&e[i], "backend_type"), "walwriter");
	}
	store_entries_free(e, n);
}

Test(store, queries)
{
	struct store *s = open_store(tmp, 0, 0);
	struct store_query q = { 0 };
	struct kv l[2];
	uint32_t pids[2] = { 2, 4 };
	struct store_entry *e;
	size_t n;

	/* pid i starts at T0 + 60 i for 60 s; pid 4 is on service db2. */
	for (uint32_t i = 1; i <= 5; i++) {
		struct rec r =
			R(i, T0 + 60 * (int64_t)i, i % 2 ? "client backend" : "checkpointer");

		if (i == 4)
			r.service = "db2";
		if (i == 5)
			r.user = "bob";
		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);

	/* [T0+150, T0+200): overlaps pid 2 (120..180) and 3 (180..240). */
	q.from_ns = (T0 + 150) * S;
	q.to_ns = (T0 + 200) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 3);
	store_entries_free(e, n);
	/* Boundaries: [T0+180, T0+240) is pid 3 only (2 ends at 180). */
	q.from_ns = (T0 + 180) * S;
	q.to_ns = (T0 + 240) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 3);
	store_entries_free(e, n);
	/* Open ends. */
	q.to_ns = 0;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 3);
	store_entries_free(e, n);
	q.from_ns = 0;
	q.to_ns = (T0 + 121) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	store_entries_free(e, n);

	memset(&q, 0, sizeof(q));
	l[0] = (struct kv){ "backend_type", "checkpointer" };
	q.labels = l;
	q.nlabels = 1;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 4);
	store_entries_free(e, n);
	l[0] = (struct kv){ "backend_type", "client backend" };
	l[1] = (struct kv){ "pg_user", "bob" };
	q.nlabels = 2;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 5);
	store_entries_free(e, n);
	l[1] = (struct kv){ "no_such_label", "x" };
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 0);
	store_entries_free(e, n);

	memset(&q, 0, sizeof(q));
	q.pids = pids;
	q.npids = 2;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 4);
	store_entries_free(e, n);
	q.service = "db1";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 2);
	store_entries_free(e, n);
	q.npids = 0;
	q.service = "db2";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 4);
	store_entries_free(e, n);
	q.service = "nope";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 0);
	store_entries_free(e, n);

	cr_assert_eq(store_list("/nonexistent/ebprof", NULL, &e, &n), -ENOENT);
}

/* ---- retention ----------------------------------------------------------------- */

Test(store, retention_by_age)
{
	int64_t now = (T0 + 30 * 86400) * S;
	struct store *s = open_store(tmp, 7 * 86400, 0);
	struct store_stats st;
	struct store_entry *e;
	char p[4][1024], day[1100];
	int64_t ages_h[4] = { 10 * 24, 8 * 24, 5 * 24, 1 };
	size_t n;

	for (int i = 0; i < 4; i++) {
		struct rec r = R(100 + (uint32_t)i, now / S - ages_h[i] * 3600, "checkpointer");

		cr_assert_eq(put(s, &r, p[i], sizeof(p[i])), 0);
	}
	cr_assert_eq(store_trim(s, now), 2);
	store_get_stats(s, &st);
	cr_assert_eq(st.removed, 2);
	cr_assert_eq(st.files, 2);
	cr_assert_eq(st.bytes, 200);
	cr_assert_not(exists(p[0]));
	cr_assert_not(exists(p[1]));
	cr_assert(exists(p[2]));
	cr_assert(exists(p[3]));
	/* The emptied day directories went with them. */
	snprintf(day, sizeof(day), "%s", p[0]);
	*strrchr(day, '/') = '\0';
	cr_assert_not(exists(day));
	cr_assert_eq(store_trim(s, now), 0);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 102);
	cr_assert_eq(e[1].pid, 103);
	store_entries_free(e, n);
}

Test(store, retention_by_size_oldest_first)
{
	struct store *s = open_store(tmp, 0, 1000);
	struct store_stats st;
	struct store_entry *e;
	size_t n;

	/* 16 profiles of 100 bytes over 4 days and two services, written out
	 * of time order within each day. */
	for (int i = 0; i < 16; i++) {
		int k = (i / 4) * 4 + (3 - i % 4);
		struct rec r = R(1000 + (uint32_t)k, T0 + k * 21600, NULL);

		r.service = k % 2 ? "db1" : "db2";
		cr_assert_eq(put(s, &r, NULL, 0), 0);
		store_get_stats(s, &st);
		cr_assert_leq(st.bytes, 1000, "over the limit after write %d", i);
	}
	store_get_stats(s, &st);
	cr_assert_eq(st.files, 10);
	cr_assert_eq(st.removed, 6);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 10);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(e[i].pid, 1006 + i, "the 10 newest are kept");
	store_entries_free(e, n);
}

Test(store, retention_after_out_of_order_write)
{
	struct store *s = open_store(tmp, 0, 300);
	struct store_entry *e;
	struct rec a1 = R(1, T0 + 3 * 86400, NULL), a2 = R(2, T0 + 3 * 86400 + 60, NULL),
		   b = R(3, T0 + 4 * 86400, NULL), d = R(4, T0 + 86400, NULL),
		   f = R(5, T0 + 6 * 86400, NULL);
	size_t n;

	cr_assert_eq(put(s, &a1, NULL, 0), 0);
	cr_assert_eq(put(s, &a2, NULL, 0), 0);
	cr_assert_eq(put(s, &b, NULL, 0), 0);
	cr_assert_eq(put(s, &d, NULL, 0), 0); /* removes a1, a2 still queued */
	cr_assert_eq(put(s, &f, NULL, 0), 0); /* must remove d, the oldest */
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 3);
	cr_assert_eq(e[2].pid, 5);
	store_entries_free(e, n);
}

Test(store, reopen_counts_and_trims)
{
	struct store *s = open_store(tmp, 0, 0);
	struct store_stats st;
	struct store_entry *e;
	char junk[1100];
	size_t n;
	int fd;

	for (int i = 0; i < 5; i++) {
		struct rec r = R(10 + (uint32_t)i, T0 + i * 100, "startup");

		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);
	/* A stale temp file of a crashed run, older than a minute. */
	snprintf(junk, sizeof(junk), "%s/db1/2023-11-14/.profile.tmp.1.2", tmp);
	fd = open(junk, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	{
		struct timespec old[2] = { { .tv_sec = T0 }, { .tv_sec = T0 } };

		cr_assert_eq(utimensat(AT_FDCWD, junk, old, 0), 0);
	}
	s = open_store(tmp, 0, 300);
	store_get_stats(s, &st);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.bytes, 300);
	cr_assert_eq(st.removed, 2);
	cr_assert_not(exists(junk), "stale temp file removed at open");
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 12);
	store_entries_free(e, n);
}

Test(store, full_disk_trims_and_keeps_writing)
{
	struct store_stats st;
	struct store_entry *e;
	struct store *s;
	char last[1024];
	size_t n;
	int i;

	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m")) {
		mnt[0] = '\0';
		cr_assert_fail("mount tmpfs: %s (tests run as root)", strerror(errno));
	}
	s = open_store(mnt, 0, 0);
	/* 120 x 20 kB of incompressible data into 1 MiB, over 3 days. */
	for (i = 0; i < 120; i++) {
		struct rec r = R(3000 + (uint32_t)i, T0 + i * 1800, "client backend");
		int err;

		r.size = 20000;
		r.fill = (uint8_t)(i * 31);
		err = put(s, &r, last, sizeof(last));
		cr_assert_eq(err, 0, "write %d: %s", i, strerror(-err));
	}
	store_get_stats(s, &st);
	cr_assert_eq(st.written, 120);
	cr_assert_eq(st.write_errors, 0);
	cr_assert_gt(st.removed, 60);
	cr_assert_leq(st.bytes, 1 << 20);
	cr_assert_eq(st.files + st.removed, 120);
	store_close(s);
	cr_assert_eq(temps_under(mnt), 0, "temp files left behind");
	cr_assert(exists(last));
	n = list(mnt, NULL, &e);
	cr_assert_geq(n, 10);
	cr_assert_eq(n, st.files);
	cr_assert_str_eq(e[n - 1].path, last);
	for (size_t k = 0; k < n; k++) /* only the newest survive, in order */
		cr_assert_eq(e[k].pid, 3000 + 120 - n + k);
	store_entries_free(e, n);
}

/* ---- index tolerance ------------------------------------------------------------- */

static void index_path(char *buf, size_t len, const char *day)
{
	snprintf(buf, len, "%s/db1/%s/index.jsonl", tmp, day);
}

Test(store, index_cut_last_line)
{
	struct store *s = open_store(tmp, 0, 0);
	struct rec r4 = R(4, T0 + 30, "client backend");
	struct store_entry *e;
	char idx[1100];
	struct stat st;
	size_t n;

	for (uint32_t i = 1; i <= 3; i++) {
		struct rec r = R(i, T0 + i, "client backend");

		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);
	index_path(idx, sizeof(idx), "2023-11-14");
	cr_assert_eq(stat(idx, &st), 0);
	cr_assert_eq(truncate(idx, st.st_size - 20), 0); /* crash mid-line */

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(lab(&e[0], "pg_user"), "alice");
	cr_assert_str_eq(lab(&e[1], "pg_user"), "alice");
	/* The third: from its name. */
	cr_assert_null(lab(&e[2], "pg_user"));
	cr_assert_eq(e[2].pid, 3);
	cr_assert_eq(e[2].start_ns, (T0 + 3) * S);
	cr_assert_str_eq(lab(&e[2], "service"), "db1");
	cr_assert_str_eq(lab(&e[2], "pid"), "3");
	cr_assert_str_eq(lab(&e[2], "comm"), "postgres");
	cr_assert_str_eq(lab(&e[2], "backend_type"), "client backend");
	store_entries_free(e, n);

	/* The next run appends on a fresh line. */
	s = open_store(tmp, 0, 0);
	cr_assert_eq(put(s, &r4, NULL, 0), 0);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 4);
	cr_assert_eq(e[3].pid, 4);
	cr_assert_str_eq(lab(&e[3], "pg_user"), "alice");
	cr_assert_eq(e[3].end_ns, r4.start_ns + 60 * S);
	store_entries_free(e, n);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

Test(store, older_run_without_index_and_unknown_files)
{
	char day[1100], p[1300];
	struct store_entry *e;
	struct store_query q = { 0 };
	struct kv l = { "backend_type", "checkpointer" };
	size_t n;

	snprintf(day, sizeof(day), "%s/svc/2023-11-14", tmp);
	snprintf(p, sizeof(p), "%s/svc", tmp);
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_eq(mkdir(day, 0755), 0);
	snprintf(p, sizeof(p), "%s/221320-postgres-100-checkpointer.pb.gz", day);
	write_text(p, "x");
	snprintf(p, sizeof(p), "%s/221321-postgres-101.pb.gz", day);
	write_text(p, "xy");
	snprintf(p, sizeof(p), "%s/221321-postgres-101-1.pb.gz", day);
	write_text(p, "xyz");
	snprintf(p, sizeof(p), "%s/README", day);
	write_text(p, "hello");
	snprintf(p, sizeof(p), "%s/garbage.pb.gz", day);
	write_text(p, "junk");
	snprintf(p, sizeof(p), "%s/.profile.tmp.1.2", day);
	write_text(p, "partial");
	snprintf(p, sizeof(p), "%s/sub", day);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/index.jsonl", day);
	write_text(p, "not json\n"
		      "{\"file\":\"../../../etc/passwd\",\"start_ns\":1,\"end_ns\":2}\n"
		      "{\"file\":\"221322-postgres-9.pb.gz\",\"start_ns\":1,\"end_ns\":2}\n"
		      "[1,2]\n\n");
	snprintf(p, sizeof(p), "%s/svc/notadate", tmp);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/stray-file", tmp);
	write_text(p, "x");

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 100);
	cr_assert_eq(e[0].size, 1);
	cr_assert_eq(e[0].start_ns, T0 * S);
	cr_assert_str_eq(lab(&e[0], "backend_type"), "checkpointer");
	cr_assert_str_eq(lab(&e[0], "service"), "svc");
	cr_assert_eq(e[1].pid, 101);
	cr_assert_null(lab(&e[1], "backend_type"));
	cr_assert_eq(e[1].size, 2);
	cr_assert_eq(e[2].size, 3, "the collision suffix sorts after");
	store_entries_free(e, n);
	q.labels = &l;
	q.nlabels = 1;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	store_entries_free(e, n);
}

Test(store, bad_arguments)
{
	struct store_opts o = { .dir = "" };
	struct sink_profile r = { 0 };
	struct store *s;
	char file[1100];

	cr_assert_eq(store_open(&o, &s), -EINVAL);
	o.dir = tmp;
	o.max_bytes = -1;
	cr_assert_eq(store_open(&o, &s), -EINVAL);
	snprintf(file, sizeof(file), "%s/file", tmp);
	write_text(file, "x");
	o.dir = file;
	o.max_bytes = 0;
	cr_assert_lt(store_open(&o, &s), 0);
	s = open_store(tmp, 0, 50);
	cr_assert_eq(store_write(s, &r, NULL, 0), -EINVAL, "no data");
	{
		struct rec big = R(1, T0, NULL);

		cr_assert_eq(put(s, &big, NULL, 0), -EFBIG, "larger than the whole store");
	}
	store_close(s);
}

/* ---- time syntax of ls / merge ------------------------------------------------------ */

Test(store, parse_times)
{
	int64_t now = (T0 + 3600) * S + 5, t;
	char err[256];

	/* TZ=UTC (setup). */
	cr_assert_eq(store_parse_time("2023-11-14T22:13:20Z", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14T22:13", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - 20) * S);
	cr_assert_eq(store_parse_time("2023-11-14 22:13:20", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - T0 % 86400) * S);
	cr_assert_eq(store_parse_time("22:13", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - 20) * S, "today");
	cr_assert_eq(store_parse_time("-30m", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 1800 * S);
	cr_assert_eq(store_parse_time("-2h", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 7200 * S);
	cr_assert_eq(store_parse_time("-1d", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 86400 * S);
	cr_assert_eq(store_parse_time("@1700000000", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("now", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now);

	/* Local time. */
	setenv("TZ", "CET-1", 1);
	tzset();
	cr_assert_eq(store_parse_time("2023-11-14T23:13:20", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14T22:13:20Z", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	{
		char buf[64];

		store_format_time(T0 * S, buf, sizeof(buf));
		cr_assert_str_eq(buf, "2023-11-14T23:13:20+01:00");
	}

	const char *bad[] = {
		"",  "yesterday", "2023-13-01",	   "2023-02-30T00:00",	 "25:00", "-5x", "-m",
		"@", "@12a",	  "2023-11-14T22", "2023-11-14T22:13Zx", "12:3",  "--1h"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(store_parse_time(bad[i], now, &t, err, sizeof(err)), -EINVAL, "%s",
			     bad[i]);
		cr_assert(strstr(err, "bad time"), "%s: %s", bad[i], err);
	}
}

/* Found by fuzz/fuzz_store_index.c: an index line starting at INT64_MAX
 * with no end made the listing's "a point" end overflow (start + 1),
 * wrapping it below any from and dropping the profile. */
Test(store, index_start_int64_max)
{
	struct store_query q = { .from_ns = 1 };
	struct store_entry *e;
	char dir[1100], p[1200];
	size_t n;

	snprintf(dir, sizeof(dir), "%s/db1", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/db1/2023-11-14", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/030000-postgres-4242.pb.gz", dir);
	write_text(p, "x");
	snprintf(p, sizeof(p), "%s/index.jsonl", dir);
	write_text(p, "{\"file\":\"030000-postgres-4242.pb.gz\",\"start_ns\":9223372036854775807,"
		      "\"end_ns\":0,\"pid\":4242,\"labels\":{}}\n");
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].start_ns, INT64_MAX);
	store_entries_free(e, n);
}
