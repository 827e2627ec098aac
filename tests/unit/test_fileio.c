// SPDX-License-Identifier: BSD-2-Clause
/* fileio.c: atomic writes, and what must not be replaced. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/fileio.h"

static char dir[] = "/tmp/ebprof-test-fileio-XXXXXX";
static char devdir[64];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	if (devdir[0])
		umount2(devdir, MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/*
 * A directory of the test's own where device nodes work: the temporary
 * directory, or, when /tmp is mounted nodev (a tmpfs /tmp), a tmpfs
 * mounted on a subdirectory in a mount namespace of this test process
 * alone (gone with it).
 */
static const char *device_dir(void)
{
	struct statvfs sv;

	cr_assert_eq(statvfs(dir, &sv), 0);
	if (!(sv.f_flag & ST_NODEV))
		return dir;
	snprintf(devdir, sizeof(devdir), "%s/dev", dir);
	cr_assert_eq(mkdir(devdir, 0700), 0);
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s (needs root)", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	cr_assert_eq(mount("ebprof-test", devdir, "tmpfs", 0, "mode=0700"), 0, "mount: %s",
		     strerror(errno));
	return devdir;
}

TestSuite(fileio, .init = setup, .fini = teardown, .timeout = 10);

Test(fileio, atomic_write_replaces_a_regular_file)
{
	char path[128];
	uint8_t *buf = NULL;
	size_t len = 0;
	struct stat st;

	snprintf(path, sizeof(path), "%s/f", dir);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"old contents", 12), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"new", 3), 0);
	cr_assert_eq(read_file(path, &buf, &len), 0);
	cr_expect_eq(len, 3);
	cr_expect_eq(memcmp(buf, "new", 3), 0);
	free(buf);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0644);
}

/* Entries of d other than "." and ".." (a leftover temp file shows). */
static int entries(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(dd, "opendir %s: %s", d, strerror(errno));
	while ((de = readdir(dd)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dd);
	return n;
}

/*
 * `record -o /dev/null` once turned /dev/null into a regular file. The
 * test's own node of the null device (character device 1,3) in a
 * directory of its own stands for it, so the machine's /dev/null is never
 * at risk: it stays the same device node (same inode), nothing is left
 * beside it.
 */
Test(fileio, a_device_stays_a_device)
{
	const char *d = device_dir();
	char path[128];
	struct stat before, after;

	snprintf(path, sizeof(path), "%s/null", d);
	cr_assert_eq(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0,
		     "mknod %s: %s (needs root: CAP_MKNOD)", path, strerror(errno));
	cr_assert_eq(stat(path, &before), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"x", 1), 0);
	cr_assert_eq(stat(path, &after), 0);
	cr_expect(S_ISCHR(after.st_mode), "%s is no longer a character device", path);
	cr_expect_eq(after.st_rdev, makedev(1, 3));
	cr_expect_eq(after.st_ino, before.st_ino, "%s was replaced", path);
	cr_expect_eq(entries(d), 1, "something was left beside %s", path);
}

/* The write goes to the device itself: a node of a device that does not
 * exist fails to open (ENXIO) and is neither replaced nor renamed over. */
Test(fileio, a_device_is_opened_not_replaced)
{
	const char *d = device_dir();
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/nodev", d);
	cr_assert_eq(mknod(path, S_IFCHR | 0666, makedev(4095, 4095)), 0,
		     "mknod %s: %s (needs root: CAP_MKNOD)", path, strerror(errno));
	cr_expect_eq(write_file_atomic(path, (const uint8_t *)"x", 1), -ENXIO);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect(S_ISCHR(st.st_mode), "%s was replaced", path);
	cr_expect_eq(st.st_rdev, makedev(4095, 4095));
	cr_expect_eq(entries(d), 1, "something was left beside %s", path);
}

struct fifo_reader {
	const char *path;
	char got[16];
};

static void *read_fifo(void *arg)
{
	struct fifo_reader *r = arg;
	int fd = open(r->path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, r->got, sizeof(r->got) - 1);
	if (n > 0)
		r->got[n] = '\0';
	close(fd);
	return NULL;
}

Test(fileio, a_fifo_is_written_in_place)
{
	struct fifo_reader r = { 0 };
	char path[128];
	pthread_t t;
	struct stat st;

	struct stat before;

	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(stat(path, &before), 0);
	r.path = path;
	cr_assert_eq(pthread_create(&t, NULL, read_fifo, &r), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"profile", 7), 0);
	pthread_join(t, NULL);
	cr_expect_str_eq(r.got, "profile");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_expect_eq(st.st_ino, before.st_ino, "the FIFO was replaced");
	cr_expect_eq(entries(dir), 1, "something was left beside the FIFO");
}

/* read_file_max: a regular file past the bound is refused before reading,
 * a pipe as soon as it passes it; at the bound it is read. */
Test(fileio, read_file_max_bounds_what_it_reads)
{
	char path[512], cmd[600];
	uint8_t *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/ten", dir);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"0123456789", 10), 0);
	cr_expect_eq(read_file_max(path, 9, &buf, &len), -EFBIG);
	cr_expect_null(buf);
	cr_assert_eq(read_file_max(path, 10, &buf, &len), 0);
	cr_expect_eq(len, 10);
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "%s/fifo-big", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(cmd, sizeof(cmd), "head -c 100000 /dev/zero > '%s' &", path);
	cr_assert_eq(system(cmd), 0);
	cr_expect_eq(read_file_max(path, 4096, &buf, &len), -EFBIG);
	cr_expect_null(buf);
}
