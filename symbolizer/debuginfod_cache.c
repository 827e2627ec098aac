// SPDX-License-Identifier: BSD-2-Clause
/*
 * The debuginfod client's on-disk cache (debuginfod.h): HEX.debug files,
 * HEX.missing markers, trimmed least recently used first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "debuginfod.h"
#include "sym_log.h"

int symdi_mkdirs(const char *path)
{
	char *p = strdup(path);
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s && !err; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			err = -errno;
		*s = '/';
	}
	if (!err && mkdir(p, 0700) && errno != EEXIST)
		err = -errno;
	free(p);
	return err;
}

char *symdi_cache_path(const char *dir, const char *hex, const char *suffix)
{
	char *p;

	if (asprintf(&p, "%s/%s.%s", dir, hex, suffix) < 0)
		return NULL;
	return p;
}

int symdi_cache_check(const char *dir, const char *hex, const char *missing, char **path)
{
	char *p = symdi_cache_path(dir, hex, "debug");
	struct stat st;

	if (!p)
		return -ENOMEM;
	if (!stat(p, &st) && S_ISREG(st.st_mode)) {
		utimensat(AT_FDCWD, p, NULL, 0); /* recently used: trimmed last */
		*path = p;
		return 0;
	}
	free(p);
	p = symdi_cache_path(dir, hex, missing);
	if (!p)
		return -ENOMEM;
	if (!stat(p, &st) && time(NULL) - st.st_mtime < SYMDI_MISSING_TTL) {
		free(p);
		return -ENOENT;
	}
	free(p);
	return -EAGAIN;
}

struct cached_file {
	char *name;
	time_t mtime;
	uint64_t size;
};

static int cmp_mtime(const void *a, const void *b)
{
	const struct cached_file *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

uint64_t symdi_cache_trim(const char *dirpath, uint64_t bound, const char *keep)
{
	struct cached_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *dir = opendir(dirpath);

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		time_t age;
		struct stat st;

		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		age = time(NULL) - st.st_mtime;
		/* downloads a crash left behind; markers past their day */
		if ((de->d_name[0] == '.' && age > SYMDI_TEMP_MAX_AGE) ||
		    (len > 8 && !strcmp(de->d_name + len - 8, ".missing") &&
		     age > SYMDI_MISSING_TTL)) {
			unlinkat(dirfd(dir), de->d_name, 0);
			continue;
		}
		if (len < 7 || strcmp(de->d_name + len - 6, ".debug"))
			continue;
		if (keep && !strcmp(de->d_name, keep)) {
			total += (uint64_t)st.st_size;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct cached_file *f = realloc(files, ncap * sizeof(*f));

			if (!f)
				break;
			files = f;
			cap = ncap;
		}
		files[n].name = strdup(de->d_name);
		if (!files[n].name)
			break;
		files[n].mtime = st.st_mtime;
		files[n].size = (uint64_t)st.st_size;
		total += files[n].size;
		n++;
	}
	if (n > 1) /* qsort() wants an array, and there may be none */
		qsort(files, n, sizeof(*files), cmp_mtime);
	for (size_t i = 0; i < n; i++) {
		if (total > bound && !unlinkat(dirfd(dir), files[i].name, 0)) {
			sym_debug("debuginfod: cache over %llu bytes, removed %s",
				  (unsigned long long)bound, files[i].name);
			total -= files[i].size;
		}
		free(files[i].name);
	}
	free(files);
	closedir(dir);
	return total;
}
