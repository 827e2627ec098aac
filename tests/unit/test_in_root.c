// SPDX-License-Identifier: BSD-2-Clause
/*
 * Opening a path inside a process's root (include/ebprof/in_root.h) on a
 * root made here (mkdtemp) and a "host secret" outside it: an absolute
 * symlink resolves inside the root (the in-root file of that name, or
 * ENOENT), never to the outside file; ".." stops at the root; a FIFO opens
 * without blocking and the symbolizer refuses it; a symlink loop, a final
 * link with O_NOFOLLOW, overlong paths and names are refused. Every case
 * runs through openat2 and through the walk that stands in for it on
 * kernels without openat2 (EBPROF_IN_ROOT_WALK).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ebprof/in_root.h"
#include "elf_binary.h"

static char root[] = "/tmp/ebprof-test-root-XXXXXX";
static char host[] = "/tmp/ebprof-test-host-XXXXXX";
static char secret[64]; /* host/secret: what must never be opened */
static int rootfd = -1;

static const unsigned modes[] = { 0, EBPROF_IN_ROOT_WALK };
static const char *const mode_names[] = { "openat2", "walk" };

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* mkdir -p root/rel */
static void dirs(const char *rel)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void link_in_root(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	cr_assert_eq(symlink(target, path), 0, "%s -> %s", path, target);
}

static void setup(void)
{
	FILE *f;

	cr_assert_not_null(mkdtemp(root));
	cr_assert_not_null(mkdtemp(host));
	snprintf(secret, sizeof(secret), "%s/secret", host);
	f = fopen(secret, "w");
	cr_assert_not_null(f);
	fputs("host secret\n", f);
	fclose(f);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(rootfd, 0);
}

static void teardown(void)
{
	char cmd[256];

	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, host);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(in_root, .init = setup, .fini = teardown, .timeout = 10);

/* Open rel in the root (O_RDONLY) and read what it holds into buf; the
 * negative errno when it does not open. */
static int read_in_root(const char *rel, unsigned mode, char *buf, size_t len)
{
	int fd = ebprof_open_in_root(rootfd, rel, O_RDONLY, mode);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return fd;
	cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return 0;
}

/* The absolute symlink /bin/x -> the host's secret, with nothing of that
 * name in the root: ENOENT; once the root has a file there: that file. */
Test(in_root, absolute_symlink_resolves_inside_the_root)
{
	char buf[64];

	dirs("bin");
	dirs("usr/bin");
	link_in_root(secret, "bin/x");
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root("/bin/x", modes[m], buf, sizeof(buf)), -ENOENT,
			     "%s: read '%s'", mode_names[m], buf);
		cr_expect_eq(read_in_root("bin/x", modes[m], buf, sizeof(buf)), -ENOENT,
			     "%s: read '%s'", mode_names[m], buf);
	}
	dirs(host);
	put(secret + 1, "in-root file\n");
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root("/bin/x", modes[m], buf, sizeof(buf)), 0, "%s",
			     mode_names[m]);
		cr_expect_str_eq(buf, "in-root file\n", "%s", mode_names[m]);
	}
	/* Links inside the root, relative and absolute, through directories. */
	put("usr/bin/real", "real\n");
	link_in_root("usr/bin", "ubin");
	link_in_root("/usr/bin/real", "bin/abs");
	link_in_root("../ubin/real", "bin/rel");
	for (int m = 0; m < 2; m++) {
		const char *paths[] = { "/ubin/real", "bin/abs", "/bin/rel", "ubin/../../bin/abs" };

		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			cr_expect_eq(read_in_root(paths[i], modes[m], buf, sizeof(buf)), 0,
				     "%s: %s", mode_names[m], paths[i]);
			cr_expect_str_eq(buf, "real\n", "%s: %s", mode_names[m], paths[i]);
		}
	}
}

/* ".." at the root stays there, in the path and in a link's text. */
Test(in_root, dotdot_is_clamped_at_the_root)
{
	char buf[64], path[512];

	dirs("a/b");
	link_in_root("../../../../../..", "a/b/up");
	snprintf(path, sizeof(path), "../../..%s", secret);
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root(path, modes[m], buf, sizeof(buf)), -ENOENT, "%s: '%s'",
			     mode_names[m], buf);
		snprintf(path, sizeof(path), "a/b/up%s", secret);
		cr_expect_eq(read_in_root(path, modes[m], buf, sizeof(buf)), -ENOENT, "%s: '%s'",
			     mode_names[m], buf);
		snprintf(path, sizeof(path), "../../..%s", secret);
	}
	dirs(host);
	put(secret + 1, "in-root file\n");
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root(path, modes[m], buf, sizeof(buf)), 0, "%s",
			     mode_names[m]);
		cr_expect_str_eq(buf, "in-root file\n", "%s", mode_names[m]);
	}
}

/* A FIFO opens at once (O_NONBLOCK), and the symbolizer refuses it. */
Test(in_root, fifo_does_not_block)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/fifo", root);
	cr_assert_eq(mkfifo(path, 0644), 0);
	for (int m = 0; m < 2; m++) {
		int fd = ebprof_open_in_root(rootfd, "/fifo", O_RDONLY, modes[m]);

		cr_assert_geq(fd, 0, "%s: %s", mode_names[m], strerror(-fd));
		cr_expect_eq(fstat(fd, &st), 0);
		cr_expect(S_ISFIFO(st.st_mode));
		close(fd);
	}
	/* Through /proc/self/root (the same root here), as a binary. */
	struct sym_binary b = { .path = path, .pid = getpid() };
	int fd = 7;

	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOEXEC);
	cr_expect_eq(fd, -1);
}

Test(in_root, links_are_bounded)
{
	char buf[64], name[32], target[32];

	link_in_root("loop2", "loop1");
	link_in_root("/loop1", "loop2");
	/* A chain of 30 links resolves, one of 41 does not. */
	put("end", "end\n");
	for (int i = 0; i < 41; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		snprintf(target, sizeof(target), i ? "l%d" : "end", i - 1);
		link_in_root(target, name);
	}
	link_in_root("end", "final");
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root("loop1", modes[m], buf, sizeof(buf)), -ELOOP, "%s",
			     mode_names[m]);
		cr_expect_eq(read_in_root("loop2/x", modes[m], buf, sizeof(buf)), -ELOOP, "%s",
			     mode_names[m]);
		cr_expect_eq(read_in_root("l29", modes[m], buf, sizeof(buf)), 0, "%s",
			     mode_names[m]);
		cr_expect_str_eq(buf, "end\n");
		cr_expect_eq(read_in_root("l40", modes[m], buf, sizeof(buf)), -ELOOP, "%s",
			     mode_names[m]);
		/* O_NOFOLLOW: a final link is refused; O_PATH opens the link */
		cr_expect_eq(ebprof_open_in_root(rootfd, "final", O_RDONLY | O_NOFOLLOW, modes[m]),
			     -ELOOP, "%s", mode_names[m]);
		int fd = ebprof_open_in_root(rootfd, "final", O_PATH | O_NOFOLLOW, modes[m]);
		struct stat st;

		cr_assert_geq(fd, 0, "%s", mode_names[m]);
		cr_expect(!fstat(fd, &st) && S_ISLNK(st.st_mode), "%s", mode_names[m]);
		close(fd);
	}
}

Test(in_root, what_is_not_there)
{
	char buf[64], long_path[8192], long_name[300];

	put("file", "x");
	dirs("dir");
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	for (size_t i = 0; i + 2 < sizeof(long_path); i += 2)
		memcpy(long_path + i, "d/", 2);
	long_path[sizeof(long_path) - 2] = 'x';
	long_path[sizeof(long_path) - 1] = '\0';
	for (int m = 0; m < 2; m++) {
		cr_expect_eq(read_in_root("file/x", modes[m], buf, sizeof(buf)), -ENOTDIR, "%s",
			     mode_names[m]);
		cr_expect_eq(read_in_root("/file/", modes[m], buf, sizeof(buf)), -ENOTDIR, "%s",
			     mode_names[m]);
		cr_expect_eq(read_in_root("nothere", modes[m], buf, sizeof(buf)), -ENOENT, "%s",
			     mode_names[m]);
		cr_expect_eq(read_in_root(long_name, modes[m], buf, sizeof(buf)), -ENAMETOOLONG,
			     "%s", mode_names[m]);
		cr_expect_eq(read_in_root(long_path, modes[m], buf, sizeof(buf)), -ENAMETOOLONG,
			     "%s", mode_names[m]);
		/* The root itself and a directory: opened; callers want regular files */
		int fd = ebprof_open_in_root(rootfd, "/", O_PATH, modes[m]);
		struct stat st, want;

		cr_assert_geq(fd, 0, "%s", mode_names[m]);
		cr_expect_eq(fstat(fd, &st), 0);
		cr_expect_eq(fstat(rootfd, &want), 0);
		cr_expect(st.st_ino == want.st_ino && st.st_dev == want.st_dev, "%s",
			  mode_names[m]);
		close(fd);
		fd = ebprof_open_in_root(rootfd, "dir/..//dir/.", O_RDONLY, modes[m]);
		cr_assert_geq(fd, 0, "%s", mode_names[m]);
		cr_expect(!fstat(fd, &st) && S_ISDIR(st.st_mode));
		close(fd);
	}
	cr_expect_eq(ebprof_open_in_root(-1, "file", O_RDONLY, 0), -EBADF);
}
