// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's catalog (userspace/serve/catalog.c) on a real SQLite file:
 * rows and labels back as written, selection by service, type, time and
 * labels (newest first, limited), services, expiry that hands over the
 * paths only once the rows are gone, reopening, and a catalog written by a
 * process killed with SIGKILL in the middle of adding rows.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve/catalog.h"
#include "testlib.h"

static char *dir;
static struct catalog *cat;

static void setup(void)
{
	char err[256];

	dir = tl_tmpdir("catalog");
	cr_assert_eq(catalog_open(dir, &cat, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	char cmd[600];

	catalog_close(cat);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}

/* Add a profile: id "idN", created at N seconds, value 10 * N (3 * N of it
 * idle for an off-CPU "block" one), labels as "k=v" pairs. */
static void add(struct catalog *c, int n, const char *service, const char *type, ...)
{
	struct catalog_label labels[8];
	struct catalog_row row = { 0 };
	char path[64], kv[8][64];
	const char *arg;
	va_list ap;

	snprintf(row.id, sizeof(row.id), "id%d", n);
	snprintf(path, sizeof(path), "%s/%d.pb.gz", service, n);
	row.service = (char *)service;
	row.type = (char *)type;
	row.created_ns = (int64_t)n * 1000000000LL;
	row.path = path;
	row.size = 100 + n;
	row.value = 10 * n;
	row.idle = strcmp(type, "block") ? 0 : 3 * n;
	va_start(ap, type);
	while ((arg = va_arg(ap, const char *)) && row.nlabels < 8) {
		char *eq;

		snprintf(kv[row.nlabels], sizeof(kv[0]), "%s", arg);
		eq = strchr(kv[row.nlabels], '=');
		*eq = '\0';
		labels[row.nlabels].key = kv[row.nlabels];
		labels[row.nlabels].value = eq + 1;
		row.nlabels++;
	}
	va_end(ap);
	row.labels = labels;
	cr_assert_eq(catalog_add(c, &row), 0, "add %s", row.id);
}

static void fill(void)
{
	add(cat, 1, "db1", "cpu", "backend_type=client backend", "query=SELECT $1", NULL);
	add(cat, 2, "db1", "cpu", "backend_type=checkpointer", NULL);
	add(cat, 3, "db2", "cpu", "backend_type=client backend", NULL);
	add(cat, 4, "db1", "block", "backend_type=client backend", NULL);
	add(cat, 5, "db1", "cpu", "backend_type=client backend", "pid=42", NULL);
}

/* The ids of a selection, space-separated. */
static char *ids(const struct catalog_query *q)
{
	static char out[256];
	struct catalog_row *rows;
	size_t n, len = 0;

	cr_assert_eq(catalog_list(cat, q, &rows, &n), 0);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s", i ? " " : "",
					rows[i].id);
	catalog_rows_free(rows, n);
	return out;
}

TestSuite(catalog, .init = setup, .fini = teardown);

Test(catalog, rows_come_back_as_written)
{
	struct catalog_row row;

	fill();
	cr_assert_eq(catalog_get(cat, "id1", &row), 0);
	cr_expect_str_eq(row.service, "db1");
	cr_expect_str_eq(row.type, "cpu");
	cr_expect_eq(row.created_ns, 1000000000LL);
	cr_expect_str_eq(row.path, "db1/1.pb.gz");
	cr_expect_eq(row.size, 101);
	cr_assert_eq(row.nlabels, 2);
	cr_expect_str_eq(row.labels[0].key, "backend_type");
	cr_expect_str_eq(row.labels[0].value, "client backend");
	cr_expect_str_eq(row.labels[1].key, "query");
	cr_expect_str_eq(row.labels[1].value, "SELECT $1");
	catalog_row_free(&row);
	cr_expect_eq(catalog_get(cat, "nope", &row), -ENOENT);
}

Test(catalog, duplicate_id_is_refused)
{
	struct catalog_row row = { .service = "s", .type = "cpu", .path = "p" };

	strcpy(row.id, "same");
	cr_assert_eq(catalog_add(cat, &row), 0);
	cr_expect_eq(catalog_add(cat, &row), -EEXIST);
}

Test(catalog, selections)
{
	struct catalog_label client = { "backend_type", "client backend" };
	struct catalog_label both[] = { { "backend_type", "client backend" }, { "pid", "42" } };
	struct catalog_label none = { "backend_type", "walwriter" };

	fill();
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5 id4 id3 id2 id1");
	cr_expect_str_eq(ids(&(struct catalog_query){ .service = "db1", .type = "cpu" }),
			 "id5 id2 id1");
	cr_expect_str_eq(ids(&(struct catalog_query){ .service = "db1",
						      .from_ns = 2000000000LL,
						      .to_ns = 4000000000LL }),
			 "id4 id2");
	cr_expect_str_eq(ids(&(struct catalog_query){ .labels = &client, .nlabels = 1 }),
			 "id5 id4 id3 id1");
	cr_expect_str_eq(ids(&(struct catalog_query){ .labels = both, .nlabels = 2 }), "id5");
	cr_expect_str_eq(ids(&(struct catalog_query){ .labels = &none, .nlabels = 1 }), "");
	cr_expect_str_eq(ids(&(struct catalog_query){ .service = "db1", .limit = 2 }), "id5 id4");
	cr_expect_str_eq(ids(&(struct catalog_query){ .service = "x'; DROP TABLE profiles; --" }),
			 "");
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5 id4 id3 id2 id1");
}

Test(catalog, services)
{
	char **names;
	size_t n;

	fill();
	cr_assert_eq(catalog_services(cat, &names, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(names[0], "db1");
	cr_expect_str_eq(names[1], "db2");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void collect(void *ctx, const char *path)
{
	char *buf = ctx;

	strcat(buf, path);
	strcat(buf, " ");
}

Test(catalog, expiry_hands_over_the_files)
{
	char gone[256] = "";

	fill();
	cr_expect_eq(catalog_expire(cat, 3000000000LL, 0, collect, gone), 2);
	cr_expect_str_eq(gone, "db1/1.pb.gz db1/2.pb.gz ");
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5 id4 id3");
	cr_expect_eq(catalog_expire(cat, 1, 0, collect, gone), 0);
}

/* Sizes are 101..105: a bound of 310 keeps the newest three (312 > 310
 * drops one more: 209). */
Test(catalog, expiry_by_size_drops_the_oldest)
{
	char gone[256] = "";
	int64_t count, bytes;

	fill();
	cr_expect_eq(catalog_expire(cat, 0, 1000, collect, gone), 0);
	cr_expect_eq(catalog_expire(cat, 0, 310, collect, gone), 3);
	cr_expect_str_eq(gone, "db1/1.pb.gz db1/2.pb.gz db2/3.pb.gz ");
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5 id4");
	cr_assert_eq(catalog_usage(cat, &count, &bytes), 0);
	cr_expect_eq(count, 2);
	cr_expect_eq(bytes, 209);
	/* age and size together: age first */
	cr_expect_eq(catalog_expire(cat, 4500000000LL, 150, collect, gone), 1);
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5");
}

/* Values 10 * n in 2-second buckets from t=1 s: [1,3) [3,5) [5,7); the
 * idle part of id4 (12 of its 40) only when asked. */
Test(catalog, timeline_sums_values_by_bucket)
{
	int64_t v[3];
	struct catalog_label l = { "backend_type", "client backend" };
	struct catalog_row row;

	fill();
	cr_assert_eq(catalog_timeline(cat, &(struct catalog_query){ .service = "db1" },
				      1000000000LL, 2000000000LL, true, v, 3),
		     0);
	cr_expect_eq(v[0], 10 + 20);
	cr_expect_eq(v[1], 40);
	cr_expect_eq(v[2], 50);
	cr_assert_eq(catalog_timeline(cat, &(struct catalog_query){ .service = "db1" },
				      1000000000LL, 2000000000LL, false, v, 3),
		     0);
	cr_expect_eq(v[0], 10 + 20);
	cr_expect_eq(v[1], 40 - 12, "idle left out: %lld", (long long)v[1]);
	cr_expect_eq(v[2], 50);
	cr_assert_eq(catalog_get(cat, "id4", &row), 0);
	cr_expect_eq(row.value, 40);
	cr_expect_eq(row.idle, 12);
	catalog_row_free(&row);
	cr_assert_eq(catalog_timeline(
			     cat,
			     &(struct catalog_query){
				     .service = "db1", .type = "cpu", .labels = &l, .nlabels = 1 },
			     1000000000LL, 2000000000LL, false, v, 3),
		     0);
	cr_expect_eq(v[0], 10);
	cr_expect_eq(v[1], 0);
	cr_expect_eq(v[2], 50);
	cr_expect_eq(catalog_timeline(cat, &(struct catalog_query){ 0 }, 0, 0, false, v, 3),
		     -EINVAL);
}

Test(catalog, label_values_with_counts)
{
	struct catalog_label_count *l;
	size_t n;

	fill();
	cr_assert_eq(
		catalog_label_values(cat, &(struct catalog_query){ .service = "db1" }, 100, &l, &n),
		0);
	cr_assert_eq(n, 4);
	cr_expect_str_eq(l[0].key, "backend_type");
	cr_expect_str_eq(l[0].value, "client backend");
	cr_expect_eq(l[0].rows, 3);
	cr_expect_str_eq(l[1].value, "checkpointer");
	cr_expect_str_eq(l[2].key, "pid");
	cr_expect_str_eq(l[3].key, "query");
	catalog_label_counts_free(l, n);
	cr_assert_eq(
		catalog_label_values(cat, &(struct catalog_query){ .service = "db1" }, 1, &l, &n),
		0);
	cr_expect_eq(n, 1);
	catalog_label_counts_free(l, n);
}

/* A catalog of the first collector (no value column) opens and gains it. */
Test(catalog, old_catalog_gains_the_value_column)
{
	char err[256], cmd[512];

	catalog_close(cat);
	cat = NULL;
	snprintf(cmd, sizeof(cmd),
		 "rm -f %s/catalog.sqlite* && sqlite3 %s/catalog.sqlite 'CREATE TABLE profiles("
		 "id TEXT PRIMARY KEY, service TEXT NOT NULL, type TEXT NOT NULL, created_ns "
		 "INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL); INSERT INTO "
		 "profiles VALUES (\"old\", \"db1\", \"cpu\", 7, \"db1/old.pb.gz\", 9)'",
		 dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	cr_assert_eq(catalog_open(dir, &cat, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "old");
	add(cat, 1, "db1", "cpu", NULL);
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id1 old");
}

/* A catalog of the collector before the idle column (value but no idle)
 * opens and gains it: its rows count whole in the timeline, new rows keep
 * their idle part. */
Test(catalog, old_catalog_gains_the_idle_column)
{
	char err[256], cmd[640];
	struct catalog_row row;
	int64_t v[1];

	catalog_close(cat);
	cat = NULL;
	snprintf(cmd, sizeof(cmd),
		 "rm -f %s/catalog.sqlite* && sqlite3 %s/catalog.sqlite 'CREATE TABLE profiles("
		 "id TEXT PRIMARY KEY, service TEXT NOT NULL, type TEXT NOT NULL, created_ns "
		 "INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, value INTEGER NOT "
		 "NULL DEFAULT 0); INSERT INTO profiles VALUES (\"old\", \"db1\", \"block\", "
		 "3000000000, \"db1/old.pb.gz\", 9, 70)'",
		 dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	cr_assert_eq(catalog_open(dir, &cat, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(catalog_get(cat, "old", &row), 0);
	cr_expect_eq(row.value, 70);
	cr_expect_eq(row.idle, 0);
	catalog_row_free(&row);
	add(cat, 4, "db1", "block", NULL);
	cr_assert_eq(catalog_timeline(cat, &(struct catalog_query){ .type = "block" }, 3000000000LL,
				      2000000000LL, false, v, 1),
		     0);
	cr_expect_eq(v[0], 70 + 40 - 12, "%lld", (long long)v[0]);
	cr_assert_eq(catalog_timeline(cat, &(struct catalog_query){ .type = "block" }, 3000000000LL,
				      2000000000LL, true, v, 1),
		     0);
	cr_expect_eq(v[0], 70 + 40, "%lld", (long long)v[0]);
}

Test(catalog, reopened_catalog_has_its_rows)
{
	char err[256];

	fill();
	catalog_close(cat);
	cr_assert_eq(catalog_open(dir, &cat, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(ids(&(struct catalog_query){ 0 }), "id5 id4 id3 id2 id1");
}

/* A writer killed with SIGKILL mid-stream: every committed row is there,
 * whole (its labels too), and the catalog opens and takes more rows. */
Test(catalog, kill_9_loses_no_committed_row)
{
	struct catalog_row *rows;
	char err[256];
	size_t n;
	int fds[2];
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		struct catalog *c;

		close(fds[0]);
		if (catalog_open(dir, &c, err, sizeof(err)))
			_exit(1);
		for (int i = 100;; i++) {
			add(c, i, "kill", "cpu", "k=v", NULL);
			if (write(fds[1], &i, sizeof(i)) != sizeof(i))
				_exit(1);
		}
	}
	close(fds[1]);
	int last = 0, got;

	while (last < 150 && read(fds[0], &got, sizeof(got)) == sizeof(got))
		last = got;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	while (read(fds[0], &got, sizeof(got)) == sizeof(got))
		last = got;
	close(fds[0]);
	catalog_close(cat);
	cr_assert_eq(catalog_open(dir, &cat, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(catalog_list(cat, &(struct catalog_query){ .service = "kill" }, &rows, &n), 0);
	cr_expect_geq(n, (size_t)(last - 99), "%zu rows, %d acknowledged", n, last - 99);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(rows[i].nlabels, 1, "%s lost its label", rows[i].id);
	catalog_rows_free(rows, n);
	add(cat, 1, "after", "cpu", NULL);
}
