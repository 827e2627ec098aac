// SPDX-License-Identifier: BSD-2-Clause
/* File I/O shared by the profile writers, the store and the remote queue. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *buf = data;

	while (len) {
		ssize_t n = write(fd, buf, len > (1 << 30) ? (1 << 30) : len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Best-effort fsync of the directory holding path, so the rename is
 * durable too. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return;
	fsync(fd);
	close(fd);
}

/* A device or FIFO: nothing to replace atomically, and renaming over it
 * would turn /dev/null into a regular file. */
static int write_in_place(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = write_all(fd, buf, len);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int write_file_atomic(const char *path, const uint8_t *buf, size_t len)
{
	struct stat st;
	size_t tmplen;
	char *tmp;
	int fd = -1, err, tries;

	if (!path || !*path || (!buf && len))
		return -EINVAL;
	if (!strcmp(path, "-")) {
		fflush(stdout);
		return write_all(STDOUT_FILENO, buf, len);
	}
	if (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return write_in_place(path, buf, len);
	tmplen = strlen(path) + 64;
	tmp = malloc(tmplen);
	if (!tmp)
		return -ENOMEM;
	for (tries = 0; tries < 100; tries++) {
		uint64_t rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint64_t)tries * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
		snprintf(tmp, tmplen, "%s.tmp.%d.%016llx", path, (int)getpid(),
			 (unsigned long long)rnd);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = -errno;
		free(tmp);
		return err;
	}
	/* Exactly 0644 whatever the umask. */
	err = fchmod(fd, 0644) ? -errno : 0;
	if (!err)
		err = write_all(fd, buf, len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	else
		sync_dir(path);
	free(tmp);
	return err;
}

int read_file(const char *path, uint8_t **buf, size_t *len)
{
	return read_file_max(path, SIZE_MAX - 1, buf, len);
}

int read_file_max(const char *path, size_t max, uint8_t **buf, size_t *len)
{
	size_t cap = 64 * 1024, done = 0;
	bool is_stdin;
	struct stat st;
	uint8_t *b;
	int fd, err = 0;

	if (!path || !buf || !len)
		return -EINVAL;
	is_stdin = !strcmp(path, "-");
	fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max) {
		err = -EFBIG;
		goto out;
	}
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (unsigned long long)st.st_size < SIZE_MAX - 1)
		cap = (size_t)st.st_size + 1; /* +1: EOF seen without regrowing */
	b = malloc(cap);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (done == cap) {
			uint8_t *nb;

			if (cap > SIZE_MAX / 2) {
				err = -EFBIG;
				break;
			}
			nb = realloc(b, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
			cap *= 2;
		}
		n = read(fd, b + done, cap - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		done += (size_t)n;
		if (done > max) { /* a pipe, or a file that grew */
			err = -EFBIG;
			break;
		}
	}
	if (err) {
		free(b);
	} else {
		*buf = b;
		*len = done;
	}
out:
	if (!is_stdin)
		close(fd);
	return err;
}

int read_small_file(const char *path, char *buf, size_t size, size_t *len)
{
	ssize_t n;
	int fd;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}
