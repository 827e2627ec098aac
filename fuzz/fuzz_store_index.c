// SPDX-License-Identifier: BSD-2-Clause
/*
 * The store directory as the agent, `ebprof ls`/`merge` and the collector
 * find it: a hostile or corrupt index.jsonl and odd file names. The input
 * is "NAME\nNAME\n...\n--\nINDEX": each NAME becomes a small file in one
 * day directory of a tmpfs store (DIR/svc/2026-01-02/), the rest its
 * index.jsonl. Then the index is loaded, the day scanned, the names
 * parsed, the store listed with a label/pid/time filter, reopened with
 * retention (rescan, trim: files removed) and the index compacted.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "sinks/store/store.h"
#include "sinks/store/store_internal.h"
#include "util/log.h"

#define DAY "2026-01-02"

static char root[64], day[128];

static void clear_day(void)
{
	DIR *d = opendir(day);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static void setup(void)
{
	strcpy(root, "/dev/shm/ebprof-fuzz-store.XXXXXX");
	if (!mkdtemp(root)) {
		strcpy(root, "/tmp/ebprof-fuzz-store.XXXXXX");
		if (!mkdtemp(root))
			abort(); /* the harness cannot run */
	}
	snprintf(day, sizeof(day), "%s/svc/" DAY, root);
	log_set_level(LOG_ERROR);
}

/* Retention removes emptied directories: make them again. */
static void make_day(void)
{
	char svc[128];

	snprintf(svc, sizeof(svc), "%s/svc", root);
	mkdir(svc, 0755);
	mkdir(day, 0755);
}

/* Each name of text (lines) as a file in the day directory. */
static void plant(int dayfd, char *text)
{
	for (char *save = NULL, *n = strtok_r(text, "\n", &save); n;
	     n = strtok_r(NULL, "\n", &save)) {
		int fd;

		if (strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, "..") || strlen(n) > 255)
			continue;
		fd = openat(dayfd, n, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			if (write(fd, n, strlen(n)) < 0) {
				/* a shorter file is as good */
			}
			close(fd);
		}
	}
}

static void names(char *text, int64_t day_s)
{
	for (char *save = NULL, *n = strtok_r(text, "\n", &save); n;
	     n = strtok_r(NULL, "\n", &save)) {
		struct store_name nm;
		char out[STORE_COMPONENT_MAX + 1], buf[STORE_NAME_MAX];
		int64_t d;

		if (strlen(n) > 4096)
			continue;
		if (!store_name_parse(n, day_s, &nm))
			store_name_format(buf, sizeof(buf), nm.start_s, nm.comm, nm.pid,
					  nm.backend_type, nm.type, nm.suffix);
		store_is_temp(n);
		store_date_parse(n, &d);
		store_sanitize(n, out);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *sep = memmem(data, size, "\n--\n", 4);
	size_t nlen = sep ? (size_t)(sep - (const char *)data) : 0;
	const uint8_t *index = sep ? (const uint8_t *)sep + 4 : data;
	size_t ilen = size - (size_t)(index - data);
	struct store_index_rec *recs;
	struct store_entry *ents;
	struct store_file *files;
	struct store_opts o = { 0 };
	struct store *s;
	char *text, path[256];
	int64_t day_s = 0;
	size_t n;
	int dayfd, fd;

	if (!root[0])
		setup();
	make_day();
	clear_day();
	text = strndup((const char *)data, nlen);
	if (!text)
		return 0;
	dayfd = open(day, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dayfd < 0) {
		free(text);
		return 0;
	}
	plant(dayfd, text);
	free(text);
	fd = openat(dayfd, STORE_INDEX, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (ilen && write(fd, index, ilen) < 0) {
			/* an empty index is an input too */
		}
		close(fd);
	}
	store_date_parse(DAY, &day_s);

	text = strndup((const char *)data, nlen);
	if (text)
		names(text, day_s);
	free(text);

	if (!store_index_load(dayfd, &recs, &n))
		store_index_free(recs, n);
	if (!store_scan_day(dayfd, day_s, size & 1 ? 0 : STORE_TEMP_AGE_S, &files, &n))
		store_files_free(files, n);

	{
		struct kv label = { "role", "primary" };
		uint32_t pid = 4242;
		struct store_query q = {
			.from_ns = size & 2 ? 1767312000LL * 1000000000 : 0,
			.labels = &label,
			.nlabels = size & 4 ? 1 : 0,
			.pids = &pid,
			.npids = size & 8 ? 1 : 0,
			.service = size & 16 ? "svc" : NULL,
		};

		if (!store_list(root, &q, &ents, &n)) {
			for (size_t i = 0; i < n; i++)
				store_entry_label(&ents[i], "role");
			store_entries_free(ents, n);
		}
	}

	/* Retention over what was found: a byte bound removes the oldest,
	 * rewriting the index without them. */
	o.dir = root;
	o.max_bytes = size & 32 ? 64 : 0;
	o.max_age_s = size & 64 ? 86400 : 0;
	if (!store_open(&o, &s)) {
		store_trim(s, 1767398400LL * 1000000000);
		store_close(s);
	}
	snprintf(path, sizeof(path), "%s", day);
	store_index_compact(dayfd, path);
	close(dayfd);
	return 0;
}
