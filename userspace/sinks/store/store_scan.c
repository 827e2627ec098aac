// SPDX-License-Identifier: BSD-2-Clause
/* Walks over the store's directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"
#include "util/array.h"

void store_files_free(struct store_file *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++)
		free(f[i].name);
	free(f);
}

static DIR *opendir_at(int fd)
{
	int d = dup(fd);
	DIR *dir;

	if (d < 0)
		return NULL;
	dir = fdopendir(d);
	if (!dir)
		close(d);
	else
		rewinddir(dir); /* the dup shares the offset of an earlier scan */
	return dir;
}

int store_scan_day(int dirfd, int64_t day_s, int64_t temp_age_s, struct store_file **out, size_t *n)
{
	struct store_file *files = NULL;
	size_t cap = 0, cnt = 0;
	struct timespec now;
	struct dirent *de;
	int err = 0;
	DIR *d;

	*out = NULL;
	*n = 0;
	/* the fine clock: files may carry fine-grained times (multigrain
	 * timestamps, 6.13+) a second ahead of time(), which is coarse */
	clock_gettime(CLOCK_REALTIME, &now);
	d = opendir_at(dirfd);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		struct store_name nm;
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		if (store_is_temp(de->d_name)) {
			if (temp_age_s >= 0 &&
			    !fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISREG(st.st_mode) && now.tv_sec - st.st_mtime >= temp_age_s)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (store_name_parse(de->d_name, day_s, &nm))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue; /* removed meanwhile, or not ours */
		if (ARRAY_RESERVE(files, &cap, cnt + 1)) {
			err = -ENOMEM;
			break;
		}
		files[cnt].name = strdup(de->d_name);
		if (!files[cnt].name) {
			err = -ENOMEM;
			break;
		}
		files[cnt].size = (int64_t)st.st_size;
		files[cnt].nm = nm;
		cnt++;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		store_files_free(files, cnt);
		return err;
	}
	*out = files;
	*n = cnt;
	return 0;
}

static bool is_dir_at(int fd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type == DT_DIR)
		return true;
	if (de->d_type != DT_UNKNOWN)
		return false;
	return !fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

static int walk_service(int svcfd, const char *service, store_day_fn fn, void *ctx)
{
	struct dirent *de;
	int err = 0;
	DIR *d;

	d = opendir_at(svcfd);
	if (!d)
		return -errno;
	while (!err && (errno = 0, de = readdir(d))) {
		int64_t day_s;
		int dayfd;

		if (store_date_parse(de->d_name, &day_s) || !is_dir_at(svcfd, de))
			continue;
		dayfd = openat(svcfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dayfd < 0)
			continue; /* removed meanwhile */
		err = fn(dayfd, service, day_s, ctx);
		close(dayfd);
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	return err;
}

int store_walk(const char *dir, const char *service, store_day_fn fn, void *ctx)
{
	struct dirent *de;
	int fd, svcfd, err = 0;
	DIR *d;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (service) {
		char name[STORE_COMPONENT_MAX + 1];

		store_sanitize(service, name);
		svcfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if (svcfd < 0)
			return errno == ENOENT ? 0 : -errno;
		err = walk_service(svcfd, name, fn, ctx);
		close(svcfd);
		return err;
	}
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!err && (errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.' || !is_dir_at(fd, de))
			continue;
		svcfd = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (svcfd < 0)
			continue;
		err = walk_service(svcfd, de->d_name, fn, ctx);
		close(svcfd);
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	return err;
}
