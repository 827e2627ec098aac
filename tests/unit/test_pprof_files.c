// SPDX-License-Identifier: BSD-2-Clause
/* pprof files: written atomically and read back, stdin and stdout, and
 * what we write accepted by `go tool pprof`. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "util/fileio.h"
#include "pprof_fixture.h"

static char *make_tmpdir(void)
{
	char *dir = strdup("/tmp/ebprof-test-pprof.XXXXXX");

	cr_assert_not_null(dir);
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static void rm_rf(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

Test(pprof, write_file_atomic_and_read_file)
{
	char *dir = make_tmpdir(), path[512], bad[512];
	uint8_t *back;
	size_t len;
	struct stat st;
	mode_t old_umask = umask(077);

	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"first", 5), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"second!", 7), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644);
	cr_assert_eq(read_file(path, &back, &len), 0);
	cr_assert_eq(len, 7);
	cr_expect_eq(memcmp(back, "second!", 7), 0);
	free(back);
	cr_expect_eq(count_entries(dir), 1, "no temp file left");

	/* Empty file. */
	cr_assert_eq(write_file_atomic(path, NULL, 0), 0);
	cr_assert_eq(read_file(path, &back, &len), 0);
	cr_expect_eq(len, 0);
	free(back);

	/* Failures: negative errno, no temp file left behind. */
	snprintf(bad, sizeof(bad), "%s/missing/out.pb.gz", dir);
	cr_expect_eq(write_file_atomic(bad, (const uint8_t *)"x", 1), -ENOENT);
	snprintf(bad, sizeof(bad), "%s/adir", dir);
	cr_assert_eq(mkdir(bad, 0755), 0);
	cr_expect_lt(write_file_atomic(bad, (const uint8_t *)"x", 1), 0, "rename over a dir");
	cr_expect_eq(count_entries(dir), 2, "only out.pb.gz and adir");
	cr_expect_eq(read_file(bad, &back, &len), -EISDIR);
	snprintf(bad, sizeof(bad), "%s/nope", dir);
	cr_expect_eq(read_file(bad, &back, &len), -ENOENT);
	umask(old_umask);
	rm_rf(dir);
	free(dir);
}

Test(pprof, stdin_and_stdout)
{
	int fds[2], saved;
	uint8_t *back, big[200000];
	size_t len, i;
	char got[16] = { 0 };

	/* read_file("-") reads fd 0 to EOF. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	cr_assert_eq(pipe(fds), 0);
	saved = dup(STDIN_FILENO);
	if (fork() == 0) {
		close(fds[0]);
		_exit(write(fds[1], big, sizeof(big)) == (ssize_t)sizeof(big) ? 0 : 1);
	}
	close(fds[1]);
	cr_assert_geq(dup2(fds[0], STDIN_FILENO), 0);
	close(fds[0]);
	cr_assert_eq(read_file("-", &back, &len), 0);
	cr_assert_eq(len, sizeof(big));
	cr_expect_eq(memcmp(back, big, len), 0);
	free(back);
	dup2(saved, STDIN_FILENO);
	close(saved);
	wait(NULL);

	/* write_file_atomic("-") writes to fd 1. */
	cr_assert_eq(pipe(fds), 0);
	saved = dup(STDOUT_FILENO);
	cr_assert_geq(dup2(fds[1], STDOUT_FILENO), 0);
	close(fds[1]);
	cr_assert_eq(write_file_atomic("-", (const uint8_t *)"to stdout", 9), 0);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	cr_assert_eq(read(fds[0], got, sizeof(got)), 9);
	cr_expect_str_eq(got, "to stdout");
	close(fds[0]);
}

static char *run(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *out = malloc(cap);

	cr_assert_not_null(f);
	cr_assert_not_null(out);
	while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len - 1 == 0) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
	}
	out[len] = '\0';
	*status = pclose(f);
	return out;
}

static void check_no_warnings(const char *out)
{
	static const char *const bad[] = { "warning",	  "Warning",	   "error",
					   "Error",	  "failed",	   "malformed",
					   "Main binary", "symbolization", "not available" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_null(strstr(out, bad[i]), "go tool pprof said \"%s\":\n%s", bad[i], out);
}

Test(pprof, go_tool_pprof_accepts_profile, .timeout = 120)
{
	struct profile *p = make_profile();
	char *dir = make_tmpdir(), path[512], cmd[2048], *out;
	uint8_t *buf;
	size_t len;
	int status;

	cr_assert_eq(system("command -v go >/dev/null 2>&1"), 0,
		     "go missing: `make deps` installs Debian's golang-go");
	snprintf(path, sizeof(path), "%s/cpu.pb.gz", dir);
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(write_file_atomic(path, buf, len), 0);

	/* stderr is merged so any warning shows up in the output. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env HOME='%s' GOCACHE='%s/gocache' GOFLAGS= GOPROXY=off "
		 "PPROF_TMPDIR='%s' PPROF_BINARY_PATH='%s' go tool pprof -raw '%s' 2>&1",
		 dir, dir, dir, dir, dir, path);
	out = run(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d:\n%s", status, out);
	check_no_warnings(out);
	cr_expect_not_null(strstr(out, "PeriodType: cpu nanoseconds"), "%s", out);
	cr_expect_not_null(strstr(out, "Period: 10000000"), "%s", out);
	cr_expect_not_null(strstr(out, "samples/count cpu/nanoseconds"), "%s", out);
	cr_expect_not_null(strstr(out, "inlined_helper"), "%s", out);
	cr_expect_not_null(strstr(out, "compute"), "%s", out);
	cr_expect_not_null(strstr(out, "main"), "%s", out);
	cr_expect_not_null(strstr(out, "do_syscall_64"), "%s", out);
	cr_expect_not_null(strstr(out, "entry_SYSCALL_64"), "%s", out);
	cr_expect_not_null(strstr(out, "[kernel.kallsyms]"), "%s", out);
	cr_expect_not_null(strstr(out, "thread_name:[worker]"), "%s", out);
	cr_expect_not_null(strstr(out, "pid:[100]"), "%s", out);
	cr_expect_not_null(strstr(out, "ebprof test"), "%s", out);
	free(out);

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env HOME='%s' GOCACHE='%s/gocache' GOFLAGS= GOPROXY=off "
		 "PPROF_TMPDIR='%s' PPROF_BINARY_PATH='%s' go tool pprof -top '%s' 2>&1",
		 dir, dir, dir, dir, dir, path);
	out = run(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d:\n%s", status, out);
	check_no_warnings(out);
	cr_expect_not_null(strstr(out, "inlined_helper"), "%s", out);
	cr_expect_not_null(strstr(out, "do_syscall_64"), "%s", out);
	free(out);

	free(buf);
	rm_rf(dir);
	free(dir);
	profile_free(p);
}
