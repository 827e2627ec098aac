// SPDX-License-Identifier: BSD-2-Clause
/* fileio.c: atomic writes, and what must not be replaced. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"

static char dir[] = "/tmp/ebprof-test-fileio-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(fileio, .init = setup, .fini = teardown);

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

/* `record -o /dev/null` once turned /dev/null into a regular file. */
Test(fileio, dev_null_stays_a_device)
{
	struct stat st;

	cr_assert_eq(write_file_atomic("/dev/null", (const uint8_t *)"x", 1), 0);
	cr_assert_eq(stat("/dev/null", &st), 0);
	cr_expect(S_ISCHR(st.st_mode), "/dev/null is no longer a character device");
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

	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	r.path = path;
	cr_assert_eq(pthread_create(&t, NULL, read_fifo, &r), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"profile", 7), 0);
	pthread_join(t, NULL);
	cr_expect_str_eq(r.got, "profile");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
}
