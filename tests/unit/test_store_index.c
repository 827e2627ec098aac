// SPDX-License-Identifier: BSD-2-Clause
/*
 * The per-day index of the profile store (sinks/store/store_index.c):
 * the exact line appended for a record, appending after a cut line, a
 * failed append cut back off, loading with garbage and cut lines, and
 * compaction; errors of a broken directory.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/store/store_internal.h"
#include "util/fileio.h"

#define F1 "221320-postgres-4242-client_backend.pb.gz"
#define F2 "221420-postgres-77.pb.gz"
#define F3 "221520-postgres-5-checkpointer-1.pb.gz"

static char dir[] = "/tmp/ebprof-test-index-XXXXXX";
static int dayfd = -1;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	dayfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dayfd, 0);
}

static void teardown(void)
{
	char cmd[128];

	close(dayfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(store_index, .init = setup, .fini = teardown, .timeout = 30);

static char *index_text(void)
{
	char path[256];
	uint8_t *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/" STORE_INDEX, dir);
	cr_assert_eq(read_file(path, &buf, &len), 0, "%s", path);
	buf = realloc(buf, len + 1);
	buf[len] = '\0';
	return (char *)buf;
}

static void put_index(const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/" STORE_INDEX, dir);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)text, strlen(text)), 0);
}

static void touch(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"x", 1), 0);
}

static const char *label(const struct store_index_rec *r, const char *key)
{
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].key, key))
			return r->labels[i].value;
	return NULL;
}

static struct sink_profile record(uint32_t pid, const struct kv *labels, size_t n)
{
	return (struct sink_profile){ .start_ns = 1700000000000000000LL,
				      .end_ns = 1700000060000000000LL,
				      .pid = pid,
				      .service = "db1",
				      .comm = "postgres",
				      .backend_type = "client backend",
				      .labels = labels,
				      .nlabels = n };
}

/* The exact line: record labels in order, then the fields' labels the
 * record lacks; the first of two labels of one key wins. */
Test(store_index, append_writes_one_exact_line)
{
	const struct kv labels[] = { { "service", "db1" },   { "pid", "4242" },
				     { "pg_user", "alice" }, { "pg_user", "bob" },
				     { "", "empty key" },    { "exe", NULL } };
	struct sink_profile r = record(4242, labels, 6);
	char *text;

	cr_assert_eq(store_index_append(dayfd, &r, F1), 0);
	text = index_text();
	cr_expect_str_eq(text,
			 "{\"file\":\"" F1 "\",\"start_ns\":1700000000000000000,"
			 "\"end_ns\":1700000060000000000,\"pid\":4242,\"labels\":{\"service\":"
			 "\"db1\",\"pid\":\"4242\",\"pg_user\":\"alice\",\"comm\":\"postgres\","
			 "\"backend_type\":\"client backend\",\"type\":\"cpu\"}}\n");
	free(text);
}

/* Values that are not UTF-8 lose their odd bytes, not the line. */
Test(store_index, append_keeps_a_line_for_odd_values)
{
	const struct kv labels[] = { { "pg_database", "caf\xe9" } };
	struct sink_profile r = record(7, labels, 1);
	struct store_index_rec *recs;
	size_t n;

	r.backend_type = NULL;
	r.comm = NULL;
	cr_assert_eq(store_index_append(dayfd, &r, F2), 0);
	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(label(&recs[0], "pg_database"), "caf?");
	cr_expect_null(label(&recs[0], "comm"));
	cr_expect_null(label(&recs[0], "backend_type"));
	cr_expect_str_eq(label(&recs[0], "pid"), "7");
	store_index_free(recs, n);
}

Test(store_index, append_and_load_round_trip)
{
	struct sink_profile a = record(4242, NULL, 0), b = record(77, NULL, 0);
	struct store_index_rec *recs;
	size_t n;

	b.start_ns = -5;
	b.end_ns = 0;
	cr_assert_eq(store_index_append(dayfd, &a, F1), 0);
	cr_assert_eq(store_index_append(dayfd, &b, F2), 0);
	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(recs[0].file, F1);
	cr_expect_eq(recs[0].start_ns, a.start_ns);
	cr_expect_eq(recs[0].end_ns, a.end_ns);
	cr_expect_eq(recs[0].pid, 4242);
	cr_expect_str_eq(label(&recs[0], "service"), "db1");
	cr_expect_str_eq(label(&recs[0], "backend_type"), "client backend");
	cr_expect_eq(recs[0].nlabels, 5);
	cr_expect_str_eq(label(&recs[0], "type"), "cpu");
	cr_expect_str_eq(recs[1].file, F2);
	cr_expect_eq(recs[1].start_ns, -5);
	cr_expect_eq(recs[1].end_ns, 0);
	cr_expect_eq(recs[1].pid, 77);
	store_index_free(recs, n);
}

Test(store_index, missing_index_is_empty)
{
	struct store_index_rec *recs = (void *)1;
	size_t n = 99;

	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_null(recs);
	cr_expect_eq(store_index_compact(dayfd, dir), 0);
}

/* A line cut by a crash: the next record starts on a line of its own, and
 * the cut one is skipped when loading. */
Test(store_index, append_after_a_cut_line)
{
	struct sink_profile r = record(77, NULL, 0);
	struct store_index_rec *recs;
	size_t n;
	char *text;

	put_index("{\"file\":\"" F1 "\",\"start_ns\":1");
	cr_assert_eq(store_index_append(dayfd, &r, F2), 0);
	text = index_text();
	cr_expect(!strncmp(text, "{\"file\":\"" F1 "\",\"start_ns\":1\n{\"file\":\"" F2 "\"",
			   strlen("{\"file\":\"" F1 "\",\"start_ns\":1\n{\"file\":\"" F2 "\"")),
		  "%s", text);
	free(text);
	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(recs[0].file, F2);
	store_index_free(recs, n);
}

/* A write that fails half-way (here: past the file size limit) is cut
 * back off: the index is as it was. */
Test(store_index, failed_append_is_cut_back)
{
	struct sink_profile r = record(4242, NULL, 0);
	struct rlimit rl;
	struct stat st;
	char path[256], *before, *after;

	cr_assert_eq(store_index_append(dayfd, &r, F1), 0);
	before = index_text();
	snprintf(path, sizeof(path), "%s/" STORE_INDEX, dir);
	cr_assert_eq(stat(path, &st), 0);
	signal(SIGXFSZ, SIG_IGN);
	rl.rlim_cur = rl.rlim_max = (rlim_t)st.st_size + 20;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cr_expect_eq(store_index_append(dayfd, &r, F2), -EFBIG);
	after = index_text();
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
}

Test(store_index, load_skips_garbage_and_keeps_every_good_line_in_order)
{
	struct store_index_rec *recs;
	size_t n;

	put_index("garbage\n"
		  "\n"
		  "{\"file\":\"" F1 "\",\"start_ns\":1,\"end_ns\":2,\"pid\":4242,"
		  "\"labels\":{\"a\":\"1\",\"n\":5,\"o\":{}}}\n"
		  "{\"file\":\"not-a-profile\",\"start_ns\":1,\"end_ns\":2}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":\"1\",\"end_ns\":2}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":1}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":1.5,\"end_ns\":2}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":1,\"end_ns\":2,\"labels\":[]}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":1,\"end_ns\":2,\"file\":\"" F3 "\"}\n"
		  "{\"file\":5,\"start_ns\":1,\"end_ns\":2}\n"
		  "[1,2]\n"
		  "{\"file\":\"" F3 "\",\"start_ns\":3,\"end_ns\":4}\n"
		  "{\"file\":\"" F1 "\",\"start_ns\":5,\"end_ns\":6,\"pid\":\"x\"}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":7,\"end_ns\":8,\"pid\":77,\"labels\":{}}\n"
		  "{\"file\":\"" F2 "\",\"start_ns\":9,\"end_n");
	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_assert_eq(n, 4);
	cr_expect_str_eq(recs[0].file, F1);
	cr_expect_eq(recs[0].pid, 4242);
	cr_expect_eq(recs[0].nlabels, 1, "non-string label values are dropped");
	cr_expect_str_eq(label(&recs[0], "a"), "1");
	cr_expect_str_eq(recs[1].file, F3);
	cr_expect_eq(recs[1].pid, -1, "no pid");
	cr_expect_eq(recs[1].nlabels, 0);
	cr_expect_null(recs[1].labels);
	/* A later line for the same file comes later: the reader lets it win. */
	cr_expect_str_eq(recs[2].file, F1);
	cr_expect_eq(recs[2].start_ns, 5);
	cr_expect_eq(recs[2].pid, -1, "pid not an integer");
	cr_expect_str_eq(recs[3].file, F2);
	cr_expect_eq(recs[3].start_ns, 7);
	cr_expect_eq(recs[3].nlabels, 0);
	store_index_free(recs, n);
}

Test(store_index, compact_keeps_the_lines_of_existing_files)
{
	struct sink_profile r = record(4242, NULL, 0);
	struct store_index_rec *recs;
	char path[256], *text;
	size_t n;
	DIR *d;
	struct dirent *de;
	int entries = 0;

	touch(F1);
	touch(F3);
	cr_assert_eq(store_index_append(dayfd, &r, F1), 0);
	cr_assert_eq(store_index_append(dayfd, &r, F2), 0); /* no such file */
	text = index_text();
	text = realloc(text, strlen(text) + sizeof("garbage\n"));
	put_index(strcat(text, "garbage\n"));
	free(text);
	cr_assert_eq(store_index_append(dayfd, &r, F3), 0);
	cr_assert_eq(store_index_append(dayfd, &r, F2), 0);
	cr_assert_eq(store_index_compact(dayfd, dir), 0);
	cr_assert_eq(store_index_load(dayfd, &recs, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(recs[0].file, F1);
	cr_expect_str_eq(recs[1].file, F3);
	store_index_free(recs, n);
	text = index_text();
	cr_expect_null(strstr(text, "garbage"), "%s", text);
	cr_expect_null(strstr(text, F2), "%s", text);
	free(text);
	/* Nothing but the two profiles and the index (no temp file). */
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, "..")))
			entries++;
	closedir(d);
	cr_expect_eq(entries, 3);

	/* When no line is left, the index goes. */
	snprintf(path, sizeof(path), "%s/" F1, dir);
	cr_assert_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/" F3, dir);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(store_index_compact(dayfd, dir), 0);
	snprintf(path, sizeof(path), "%s/" STORE_INDEX, dir);
	cr_expect_neq(access(path, F_OK), 0, "the emptied index is still there");
}

Test(store_index, compact_path_too_long)
{
	struct sink_profile r = record(4242, NULL, 0);
	char *longpath = malloc(PATH_MAX + 10);

	touch(F1);
	cr_assert_eq(store_index_append(dayfd, &r, F1), 0);
	memset(longpath, 'd', PATH_MAX + 9);
	longpath[PATH_MAX + 9] = '\0';
	cr_expect_eq(store_index_compact(dayfd, longpath), -ENAMETOOLONG);
	free(longpath);
}

/* An index that is not a file: every function says so. */
Test(store_index, index_that_is_a_directory)
{
	struct sink_profile r = record(4242, NULL, 0);
	struct store_index_rec *recs;
	char path[256];
	size_t n;

	snprintf(path, sizeof(path), "%s/" STORE_INDEX, dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_expect_eq(store_index_append(dayfd, &r, F1), -EISDIR);
	cr_expect_eq(store_index_load(dayfd, &recs, &n), -EISDIR);
	cr_expect_eq(n, 0);
	cr_expect_eq(store_index_compact(dayfd, dir), -EISDIR);
}
