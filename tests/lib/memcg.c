// SPDX-License-Identifier: BSD-2-Clause
/* Memory cgroups for the tests (memcg.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot open %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0, "cannot write %s into %s", text, path);
}

static bool is_v2(void)
{
	struct stat st;

	return !stat("/sys/fs/cgroup/cgroup.controllers", &st);
}

void memcg_make(char *dir, size_t len, const char *name, const char *limit)
{
	char path[512];
	struct stat st;

	if (is_v2()) {
		FILE *f = fopen("/sys/fs/cgroup/cgroup.subtree_control", "w");

		if (f) /* may be there already */
			fputs("+memory", f), fclose(f);
		snprintf(dir, len, "/sys/fs/cgroup/%s-%d", name, (int)getpid());
		cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s", dir);
		snprintf(path, sizeof(path), "%s/memory.max", dir);
		write_file(path, limit);
		snprintf(path, sizeof(path), "%s/memory.swap.max", dir);
		if (!stat(path, &st))
			write_file(path, "0");
	} else {
		snprintf(dir, len, "/sys/fs/cgroup/memory/%s-%d", name, (int)getpid());
		cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s (no memory cgroup?)", dir);
		snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", dir);
		write_file(path, limit);
	}
}

void memcg_add(const char *dir, int pid)
{
	char path[512], text[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(text, sizeof(text), "%d", pid);
	write_file(path, text);
}

/* The number after key in file dir/name, or -1. */
static int64_t keyed(const char *dir, const char *name, const char *key)
{
	char path[512], k[64];
	long long v;
	int64_t found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", k, &v) == 2)
		if (!strcmp(k, key))
			found = v;
	fclose(f);
	return found;
}

int64_t memcg_oom_kills(const char *dir)
{
	return is_v2() ? keyed(dir, "memory.events", "oom_kill")
		       : keyed(dir, "memory.oom_control", "oom_kill");
}

int64_t memcg_peak(const char *dir)
{
	char path[512];
	long long v;
	int64_t peak = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 is_v2() ? "memory.peak" : "memory.max_usage_in_bytes");
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) == 1)
		peak = v;
	fclose(f);
	return peak;
}

void memcg_remove(char *dir)
{
	if (!dir[0])
		return;
	/* its processes may take a moment to leave it */
	for (int i = 0; i < 50 && rmdir(dir) && errno == EBUSY; i++)
		usleep(100000);
	dir[0] = '\0';
}
