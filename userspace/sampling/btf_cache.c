// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kernel BTF's part the BPF program relocates with, cached
 * (btf_cache.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <bpf/btf.h>

#include "btf_cache.h"
#include "util/fileio.h"
#include "util/log.h"

#define KERNEL_BTF "/sys/kernel/btf/vmlinux"
#define MAX_BYTES (4u << 20) /* a minimal BTF is a few KiB */
#define BPFTOOL_SECONDS 20
#define KEEP_PER_KERNEL 4	/* program builds kept for the running kernel */
#define STALE_TEMP_SECONDS 3600 /* a temporary file a killed agent left */
#define KEY_LEN 33		/* %08x%08zx-%08x%08zx */

extern char **environ;

/* CRC-32 and size of a file, read in chunks (the kernel's BTF is 5 MB:
 * not at once). */
static int file_sum(const char *path, uint32_t *crc, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *buf;
	ssize_t n;

	if (fd < 0)
		return -errno;
	buf = malloc(65536);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	*crc = crc32(0, NULL, 0);
	*size = 0;
	while ((n = read(fd, buf, 65536)) > 0) {
		*crc = crc32(*crc, buf, (uInt)n);
		*size += (size_t)n;
	}
	free(buf);
	close(fd);
	return n < 0 ? -EIO : 0;
}

/* Ours and written by no one else. */
static bool trusted(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The file name in dir that starts with key, into name. */
static bool find(const char *dir, const char *key, char *name, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		if (!strncmp(e->d_name, key, strlen(key)) &&
		    strlen(e->d_name) == strlen(key) + 13 && /* -%08x.btf */
		    !strcmp(e->d_name + strlen(key) + 9, ".btf")) {
			snprintf(name, len, "%s", e->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/* Open dir/name and check it: ours, a regular file, its checksum the one
 * its name ends with, a BTF libbpf parses. 0 and c filled, or a negative
 * errno and why. */
static int open_verified(const char *dir, const char *name, struct btf_cache *c, const char **why)
{
	char path[4096], *end;
	unsigned char *buf = NULL;
	struct btf *btf;
	struct stat st;
	uint32_t want;
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	want = (uint32_t)strtoul(name + strlen(name) - 12, &end, 16);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot open it";
		return -errno;
	}
	ret = -EPERM;
	*why = "not a regular file of this user that only it may write";
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !trusted(&st))
		goto fail;
	ret = -EFBIG;
	*why = "too large";
	if (st.st_size <= 0 || st.st_size > MAX_BYTES || !(buf = malloc(st.st_size)))
		goto fail;
	ret = -EIO;
	*why = "short read";
	n = pread(fd, buf, st.st_size, 0);
	if (n != st.st_size)
		goto fail;
	ret = -EBADMSG;
	*why = "its checksum is not the one of its name";
	if (crc32(crc32(0, NULL, 0), buf, (uInt)n) != want)
		goto fail;
	*why = "not a BTF file";
	btf = btf__new(buf, (uint32_t)n);
	if (!btf)
		goto fail;
	btf__free(btf);
	free(buf);
	c->fd = fd;
	snprintf(c->path, sizeof(c->path), "/proc/self/fd/%d", fd);
	return 0;
fail:
	free(buf);
	close(fd);
	return ret;
}

/* Run bpftool gen min_core_btf KERNEL_BTF out obj; 0 or a negative errno. */
static int run_bpftool(const char *out, const char *obj)
{
	char *argv[] = { "bpftool",   "gen", "min_core_btf", KERNEL_BTF, (char *)out,
			 (char *)obj, NULL };
	const char *tool = getenv("EBPROF_BPFTOOL"); /* the tests' fakes */
	posix_spawn_file_actions_t fa;
	int status, ret;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	ret = posix_spawnp(&pid, tool ? tool : "bpftool", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret)
		return -ret;
	for (int i = 0; i < BPFTOOL_SECONDS * 100; i++) {
		ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid)
			return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -ECHILD;
		if (ret < 0 && errno != EINTR)
			return -errno;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	kill(pid, SIGKILL); /* the child started above */
	waitpid(pid, &status, 0);
	return -ETIMEDOUT;
}

static void remove_in(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* A cache file's name: KEY-%08x.btf, the key in lower-case hex. */
static bool cache_name(const char *name)
{
	size_t n = strlen(name);

	if (n != KEY_LEN + 13 || strcmp(name + n - 4, ".btf"))
		return false;
	for (size_t i = 0; i < n - 4; i++)
		if (i == 16 || i == KEY_LEN ? name[i] != '-' : !strchr("0123456789abcdef", name[i]))
			return false;
	return true;
}

static int newest_first(const void *a, const void *b)
{
	const struct timespec *x = a, *y = b;

	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? 1 : -1;
	return (x->tv_nsec < y->tv_nsec) - (x->tv_nsec > y->tv_nsec);
}

/* After a file was made for key: remove the files of other kernels (a
 * kernel upgrade leaves them behind), the running kernel's beyond the
 * KEEP_PER_KERNEL newest (older builds of the program), and temporary
 * files a killed agent left over an hour ago. Only names of the cache's
 * own forms are touched. */
static void prune(const char *dir, const char *key)
{
	struct timespec mine[64], now;
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	size_t n = 0;

	if (!d)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	while ((e = readdir(d))) {
		bool temp = !strncmp(e->d_name, ".obj-", 5) || !strncmp(e->d_name, ".btf-", 5);

		if ((!temp && !cache_name(e->d_name)) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (temp ? now.tv_sec - st.st_mtim.tv_sec > STALE_TEMP_SECONDS
			 : strncmp(e->d_name, key, 16))
			unlinkat(dirfd(d), e->d_name, 0);
		else if (!temp && n < sizeof(mine) / sizeof(mine[0]))
			mine[n++] = st.st_mtim;
	}
	if (n > KEEP_PER_KERNEL) {
		qsort(mine, n, sizeof(mine[0]), newest_first);
		rewinddir(d);
		while ((e = readdir(d)))
			if (cache_name(e->d_name) && !strncmp(e->d_name, key, 16) &&
			    strncmp(e->d_name, key, KEY_LEN) &&
			    !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    newest_first(&st.st_mtim, &mine[KEEP_PER_KERNEL - 1]) > 0)
				unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* Make dir/key-CRC.btf with bpftool; 0 or a negative errno and why. */
static int generate(const char *dir, const char *key, const void *obj, size_t len, const char **why)
{
	char tobj[4096], tbtf[4096], final[4096];
	uint32_t crc;
	size_t size;
	int fd, ret;

	snprintf(tobj, sizeof(tobj), "%s/.obj-XXXXXX", dir);
	snprintf(tbtf, sizeof(tbtf), "%s/.btf-XXXXXX", dir);
	*why = "cannot write the cache directory";
	fd = mkstemp(tobj);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, obj, len);
	close(fd);
	if (ret)
		goto out;
	fd = mkstemp(tbtf);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	close(fd);
	*why = "bpftool gen min_core_btf failed (is bpftool installed?)";
	ret = run_bpftool(tbtf, tobj);
	if (ret)
		goto out;
	*why = "bpftool wrote nothing";
	ret = file_sum(tbtf, &crc, &size);
	if (!ret && !size)
		ret = -ENODATA;
	if (ret)
		goto out;
	snprintf(final, sizeof(final), "%s/%s-%08x.btf", dir, key, crc);
	*why = "cannot write the cache directory";
	if (chmod(tbtf, 0644) || rename(tbtf, final))
		ret = -errno;
	else
		prune(dir, key);
out:
	unlink(tobj);
	unlink(tbtf); /* gone when renamed */
	return ret;
}

int btf_cache_get(const char *dir, const void *obj, size_t len, struct btf_cache *c)
{
	char key[64], name[128];
	const char *why = NULL;
	uint32_t kcrc;
	size_t ksize;
	struct stat st;
	int ret;

	c->fd = -1;
	if (!dir)
		dir = BTF_CACHE_DEFAULT_DIR;
	if (!dir[0])
		return -ENOENT;
	ret = file_sum(KERNEL_BTF, &kcrc, &ksize);
	if (ret)
		return ret; /* no kernel BTF: the load says so */
	snprintf(key, sizeof(key), "%08x%08zx-%08x%08zx", kcrc, ksize,
		 (unsigned)crc32(crc32(0, NULL, 0), obj, (uInt)len), len);
	if ((ret = mkdir_p(dir, 0755)) || (ret = stat(dir, &st) ? -errno : 0) ||
	    (ret = trusted(&st) ? 0 : -EPERM)) {
		log_info("kernel BTF: %s is not a directory of this user that only it may write "
			 "(%s): the whole BTF is read at each start",
			 dir, strerror(-ret));
		return ret;
	}
	if (find(dir, key, name, sizeof(name))) {
		ret = open_verified(dir, name, c, &why);
		if (!ret) {
			log_debug("kernel BTF: the program's part from %s/%s", dir, name);
			return 0;
		}
		log_warn("kernel BTF: cached %s/%s is not used (%s): removed, made again", dir,
			 name, why);
		remove_in(dir, name);
	}
	ret = generate(dir, key, obj, len, &why);
	if (!ret && find(dir, key, name, sizeof(name)))
		ret = open_verified(dir, name, c, &why);
	if (ret) {
		log_info("kernel BTF: %s: the whole BTF is read at each start (+12 MiB for a "
			 "moment)",
			 why);
		return ret;
	}
	log_info("kernel BTF: the part the BPF program relocates with cached in %s/%s", dir, name);
	return 0;
}

void btf_cache_close(struct btf_cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}
