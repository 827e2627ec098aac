// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kernel BTF's part the BPF program relocates with (sampling/
 * btf_cache.c): made once with bpftool, then loaded from the cache; a
 * corrupt or untrusted cache, or no bpftool, falls back to the kernel's
 * whole BTF with one line, and the program loads either way. Root.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampling/sampler.h"
#include "util/log.h"

static char dir[] = "/tmp/ebprof-test-btf-cache-XXXXXX";

static void setup(void)
{
	cr_assert_eq(geteuid(), 0, "the BPF program loads as root only");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	log_set_level(LOG_INFO);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	unsetenv("EBPROF_BPFTOOL");
}

/* Open and close a sampler with the cache in dir; was the cache used? */
static bool load(void)
{
	struct sampler_opts o = { .frequency = 19,
				  .kernel = true,
				  .user = true,
				  .btf_cache_dir = dir,
				  .unwind_cache_dir = "" };
	struct sampler *s = NULL;
	char err[512] = "";
	bool cached;

	cr_assert_eq(sampler_open(&o, NULL, NULL, &s, err, sizeof(err)), 0, "%s", err);
	cached = sampler_btf_cached(s);
	sampler_close(s);
	return cached;
}

/* The cached file's name (in dir) into name; how many there are. */
static int cached_file(char *name, size_t len, struct stat *st)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".btf") && e->d_name[0] != '.') {
			snprintf(name, len, "%s/%s", dir, e->d_name);
			n++;
		}
	closedir(d);
	if (n == 1)
		cr_assert_eq(stat(name, st), 0);
	return n;
}

/* Everything stderr got so far (redirected), malloc'ed. */
static char *stderr_text(void)
{
	FILE *f = cr_get_redirected_stderr();
	char *buf = calloc(1, 65536);

	fflush(stderr);
	cr_assert_not_null(buf);
	fread(buf, 1, 65535, f);
	return buf;
}

TestSuite(btf_cache, .init = setup, .fini = teardown);

Test(btf_cache, made_once_then_loaded_from_the_cache)
{
	char name[512], again[512];
	struct stat st, st2;

	cr_assert(load(), "the first load makes the cache and uses it");
	cr_assert_eq(cached_file(name, sizeof(name), &st), 1);
	cr_assert_gt(st.st_size, 0);
	cr_assert_lt(st.st_size, 256 * 1024, "a part of the kernel's BTF, not all of it: %lld",
		     (long long)st.st_size);
	cr_assert_eq(st.st_mode & 0777, 0644);
	/* no bpftool now: the cache alone serves */
	setenv("EBPROF_BPFTOOL", "/bin/false", 1);
	cr_assert(load(), "the second load uses the cache");
	cr_assert_eq(cached_file(again, sizeof(again), &st2), 1);
	cr_assert_str_eq(again, name);
	cr_assert_eq(st2.st_ino, st.st_ino, "not made again");
}

Test(btf_cache, corrupt_file_falls_back_with_one_line)
{
	char name[512], *log;
	struct stat st;
	FILE *f;

	cr_redirect_stderr();
	cr_assert(load());
	cr_assert_eq(cached_file(name, sizeof(name), &st), 1);
	f = fopen(name, "r+");
	cr_assert_not_null(f);
	fseek(f, st.st_size / 2, SEEK_SET);
	fputc(0x5a ^ fgetc(f), f); /* one byte changed, as a bad disk would */
	fclose(f);
	setenv("EBPROF_BPFTOOL", "/bin/false", 1); /* cannot make it again */
	cr_assert_not(load(), "loaded with the whole BTF");
	log = stderr_text();
	cr_assert_not_null(strstr(log, "is not used (its checksum is not the one of its name)"),
			   "%s", log);
	cr_assert_not_null(strstr(log, "the whole BTF is read"), "%s", log);
	cr_assert_eq(cached_file(name, sizeof(name), &st), 0, "the corrupt file removed");
	free(log);
	/* bpftool back: made again */
	unsetenv("EBPROF_BPFTOOL");
	cr_assert(load());
	cr_assert_eq(cached_file(name, sizeof(name), &st), 1);
}

Test(btf_cache, untrusted_directory_or_file_not_used)
{
	char name[512];
	struct stat st, st2;

	cr_assert(load());
	cr_assert_eq(chmod(dir, 0777), 0); /* anyone could have replaced the file */
	cr_assert_not(load());
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(cached_file(name, sizeof(name), &st), 1);
	cr_assert_eq(chmod(name, 0666), 0); /* the file writable by others */
	cr_assert(load(), "a file of our own made in its place");
	cr_assert_eq(cached_file(name, sizeof(name), &st2), 1);
	cr_assert_eq(st2.st_mode & 0777, 0644, "not the untrusted file (inode numbers are reused)");
}

Test(btf_cache, none_when_disabled)
{
	struct sampler_opts o = { .frequency = 19,
				  .kernel = true,
				  .user = true,
				  .btf_cache_dir = "",
				  .unwind_cache_dir = "" };
	struct sampler *s = NULL;
	char err[512] = "";

	cr_assert_eq(sampler_open(&o, NULL, NULL, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_not(sampler_btf_cached(s));
	sampler_close(s);
}

/* dir/name with its times set to hours ago. */
static void put(const char *name, int hours_ago)
{
	char path[1024];
	struct timespec t[2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs("x", f);
	fclose(f);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= hours_ago * 3600L;
	t[1] = t[0];
	cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool there(const char *name)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

Test(btf_cache, old_kernels_and_builds_removed_when_one_is_made)
{
	char path[512], kernel[17], name[128];
	struct stat st;

	cr_assert(load());
	cr_assert_eq(cached_file(path, sizeof(path), &st), 1);
	snprintf(kernel, sizeof(kernel), "%s", strrchr(path, '/') + 1); /* the running kernel's */
	cr_assert_eq(unlink(path), 0);
	put("0000000000000000-0000000000000000-00000000.btf", 0); /* another kernel */
	for (int i = 0; i < 5; i++) { /* older builds of the program, an hour apart */
		snprintf(name, sizeof(name), "%s-%016x-00000000.btf", kernel, i);
		put(name, i + 1);
	}
	put(".obj-AAAAAA", 2);		  /* left by an agent killed two hours ago */
	put(".btf-BBBBBB", 0);		  /* another agent's bpftool, running now */
	put("notes.txt", 100);		  /* not the cache's */
	put("0000000000000000.btf", 100); /* nor this */
	cr_assert(load(), "made again");
	cr_assert_not(there("0000000000000000-0000000000000000-00000000.btf"));
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "%s-%016x-00000000.btf", kernel, i);
		cr_assert_eq(there(name), i < 3, "build %d: the new file and the 3 newest kept", i);
	}
	cr_assert_not(there(".obj-AAAAAA"));
	cr_assert(there(".btf-BBBBBB"));
	cr_assert(there("notes.txt"));
	cr_assert(there("0000000000000000.btf"));
	cr_assert(load(), "the new file is used");
}
