// SPDX-License-Identifier: BSD-2-Clause
/*
 * Debug files from debuginfod (symbolizer/debuginfod.c through the public
 * symbolizer API), against Debian's real debuginfod server serving
 * <BUILD>/fixtures/remote, and MiniDebugInfo. sym_prog_remote is stripped
 * and its debug file is nowhere but on that server.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "debuginfod_env.h"
#include "symfix.h"
#include "testlib.h"

#define MAXF 16

static struct dbgd_server server;
static char remote_id[160];

static void start_server(void)
{
	cr_assert_eq(dbgd_build_id(fx("sym_prog_remote"), remote_id), 0);
	cr_assert_eq(dbgd_start(&server, fx("remote"), remote_id), 0,
		     "debuginfod did not start over %s", fx("remote"));
}

static void stop_server(void)
{
	dbgd_stop(&server);
}

static struct symbolizer *new_sym(const char *urls, const char *cache, bool wait)
{
	struct sym_opts o = {
		.debug_dirs = "/nonexistent",
		.debuginfod_urls = urls,
		.debuginfod_cache = cache,
		.debuginfod_timeout_ms = 3000,
		.debuginfod_wait = wait,
	};
	struct symbolizer *sym = NULL;

	cr_assert_eq(sym_new(&o, &sym), 0);
	return sym;
}

static struct sym_elf *get(struct symbolizer *sym, const char *path)
{
	struct sym_binary b = { .path = path };
	struct sym_elf *e = NULL;

	cr_assert_eq(sym_elf_get(sym, &b, &e), 0, "sym_elf_get(%s)", path);
	return e;
}

/* sym_prog_work of sym_prog_remote resolves with its file and line. */
static void expect_named(struct symbolizer *sym, struct sym_elf *e)
{
	const char *bin = fx("sym_prog_remote");
	char full[512];
	struct sym_frame f[MAXF];
	int n, line = source_line("sym_prog.c", "SYM_LINE:sym_prog_work");

	snprintf(full, sizeof(full), "%s.full", bin);
	n = sym_elf_resolve(sym, e, sym_offset(bin, full, "sym_prog_work"), f, MAXF);
	cr_assert_eq(n, 1, "%d frames", n);
	cr_expect_str_eq(f[0].function, "sym_prog_work");
	cr_expect(ends_with(f[0].file, "sym_prog.c"), "file %s", f[0].file ? f[0].file : "(null)");
	cr_expect(f[0].line >= line && f[0].line <= line + 8, "line %d", f[0].line);
}

static size_t files_in(const char *dir, const char *suffix)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	cr_assert_not_null(d, "%s", dir);
	while ((de = readdir(d)))
		n += ends_with(de->d_name, suffix);
	closedir(d);
	return n;
}

TestSuite(debuginfod, .init = start_server, .fini = stop_server, .timeout = 120);

Test(debuginfod, names_static_functions_with_file_and_line)
{
	char *cache = tl_tmpdir("dbgd-cache");
	struct symbolizer *sym = new_sym(server.url, cache, true);
	struct sym_elf *e = get(sym, fx("sym_prog_remote"));
	struct sym_stats st;

	cr_expect_str_eq(sym_elf_debug_source(e), "debuginfod");
	cr_expect(sym_elf_has_lines(e));
	expect_named(sym, e);
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_found, 1);
	cr_expect_eq(files_in(cache, ".debug"), 1);
	sym_free(sym);

	/* a second symbolizer finds it in the cache: no request */
	sym = new_sym(server.url, cache, true);
	e = get(sym, fx("sym_prog_remote"));
	cr_expect_str_eq(sym_elf_debug_source(e), "debuginfod");
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_requests, 0);
	sym_free(sym);
	free(cache);
}

/* The agent's way: the first answer has no names, a later one has. */
Test(debuginfod, background_lookup_names_later_binaries)
{
	char *cache = tl_tmpdir("dbgd-cache");
	struct symbolizer *sym = new_sym(server.url, cache, false);
	struct sym_elf *e = get(sym, fx("sym_prog_remote"));
	struct timespec t0, t1;
	int rounds = 0;

	cr_expect_str_eq(sym_elf_debug_source(e), "dynsym");
	cr_expect_not(sym_elf_has_lines(e));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (strcmp(sym_elf_debug_source(e), "debuginfod")) {
		sym_elf_put(sym, e);
		cr_assert_lt(++rounds, 200, "the debug file never arrived");
		usleep(50 * 1000);
		e = get(sym, fx("sym_prog_remote"));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_log_info("arrived after %d rounds", rounds);
	expect_named(sym, e);
	sym_elf_put(sym, e);
	sym_free(sym);
	free(cache);
}

/* A binary pinned for a whole session (as pg_attach pins postgres): new
 * lookups get the debug file; the old handle stays usable until put. */
Test(debuginfod, pinned_binary_is_reopened_for_new_lookups)
{
	char *cache = tl_tmpdir("dbgd-cache");
	struct symbolizer *sym = new_sym(server.url, cache, false);
	struct sym_elf *held = get(sym, fx("sym_prog_remote")), *e;
	int rounds = 0;

	cr_expect_str_eq(sym_elf_debug_source(held), "dynsym");
	for (e = get(sym, fx("sym_prog_remote")); strcmp(sym_elf_debug_source(e), "debuginfod");
	     e = get(sym, fx("sym_prog_remote"))) {
		sym_elf_put(sym, e);
		cr_assert_lt(++rounds, 200, "the debug file never reached a new lookup");
		usleep(50 * 1000);
	}
	cr_expect_neq(e, held);
	expect_named(sym, e);
	cr_expect_str_eq(sym_elf_debug_source(held), "dynsym");
	cr_expect_str_eq(sym_elf_build_id(held), sym_elf_build_id(e));
	sym_elf_put(sym, e);
	sym_elf_put(sym, held);
	e = get(sym, fx("sym_prog")); /* frees the old entry, now unpinned */
	sym_elf_put(sym, e);
	sym_free(sym);
	free(cache);
}

Test(debuginfod, missing_build_id_is_asked_once)
{
	char *cache = tl_tmpdir("dbgd-cache");
	struct symbolizer *sym = new_sym(server.url, cache, true);
	struct sym_elf *e = get(sym, fx("sym_prog_dynsym")); /* not on the server */
	struct sym_stats st;

	cr_expect_str_eq(sym_elf_debug_source(e), "dynsym");
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_missing, 1);
	cr_expect_eq(st.debuginfod_requests, 1);
	cr_expect_eq(files_in(cache, ".missing"), 1);
	sym_free(sym);
	/* remembered on disk: a new symbolizer does not ask again */
	sym = new_sym(server.url, cache, true);
	e = get(sym, fx("sym_prog_dynsym"));
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_requests, 0);
	sym_free(sym);
	free(cache);
}

/* A server that is not there: a warning, addresses, and no second try
 * within the minute; the lookup does not hold the caller. */
Test(debuginfod, unreachable_server_is_an_error_not_a_stall)
{
	char *cache = tl_tmpdir("dbgd-cache"), url[64];
	struct symbolizer *sym;
	struct sym_elf *e;
	struct sym_stats st;
	struct timespec t0, t1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", dbgd_free_port());
	sym = new_sym(url, cache, false);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	e = get(sym, fx("sym_prog_remote"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 1000,
		     "sym_elf_get waited for the network");
	cr_expect_str_eq(sym_elf_debug_source(e), "dynsym");
	sym_elf_put(sym, e);
	for (int i = 0; i < 100; i++) {
		sym_get_stats(sym, &st);
		if (st.debuginfod_errors)
			break;
		usleep(50 * 1000);
	}
	cr_expect_eq(st.debuginfod_errors, 1);
	cr_expect_eq(st.debuginfod_queued, 0);
	sym_free(sym);

	sym = new_sym(url, cache, true);
	e = get(sym, fx("sym_prog_remote"));
	sym_elf_put(sym, e);
	sym_free(sym);
	free(cache);
}

Test(debuginfod, bad_urls_are_ignored)
{
	struct symbolizer *sym = new_sym("ftp://example.org file:///tmp nonsense", NULL, true);
	struct sym_elf *e = get(sym, fx("sym_prog_remote"));
	struct sym_stats st;

	cr_expect_str_eq(sym_elf_debug_source(e), "dynsym");
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_requests, 0);
	sym_free(sym);
}

/* A server that answers every request with 200 and one file. */
struct liar {
	int fd;
	const char *file;
	pthread_t thread;
};

static void *liar_run(void *arg)
{
	struct liar *l = arg;
	int c;

	while ((c = accept(l->fd, NULL, NULL)) >= 0) {
		char req[4096], head[128], *body = NULL;
		size_t len = 0;
		FILE *f = fopen(l->file, "rb");

		if (read(c, req, sizeof(req)) <= 0 || !f) {
			close(c);
			continue;
		}
		body = malloc(1 << 20);
		len = fread(body, 1, 1 << 20, f);
		fclose(f);
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 len);
		if (write(c, head, strlen(head)) < 0 || write(c, body, len) < 0)
			cr_log_warn("liar: write failed");
		free(body);
		close(c);
	}
	return NULL;
}

static int liar_start(struct liar *l, const char *file)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	l->file = file;
	l->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l->fd, 0);
	cr_assert_eq(bind(l->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l->fd, 8), 0);
	cr_assert_eq(getsockname(l->fd, (struct sockaddr *)&a, &len), 0);
	cr_assert_eq(pthread_create(&l->thread, NULL, liar_run, l), 0);
	return ntohs(a.sin_port);
}

static void liar_stop(struct liar *l)
{
	shutdown(l->fd, SHUT_RDWR);
	close(l->fd);
	pthread_join(l->thread, NULL);
}

/* A server answering with the wrong file (another build): not kept. */
Test(debuginfod, wrong_file_is_refused)
{
	char *cache = tl_tmpdir("dbgd-cache"), url[64];
	struct symbolizer *sym;
	struct liar liar;
	struct sym_elf *e;
	struct sym_stats st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", liar_start(&liar, fx("sym_prog")));
	sym = new_sym(url, cache, true);
	e = get(sym, fx("sym_prog_remote"));
	cr_expect_str_eq(sym_elf_debug_source(e), "dynsym");
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.debuginfod_requests, 1);
	cr_expect_eq(st.debuginfod_errors, 1);
	cr_expect_eq(files_in(cache, ".debug"), 0);
	sym_free(sym);
	liar_stop(&liar);
	free(cache);
}

/* The cache keeps at most its bound: the older file goes. */
Test(debuginfod, cache_is_bounded)
{
	char *cache = tl_tmpdir("dbgd-cache"), *served = tl_tmpdir("dbgd-served"), cmd[1024];
	char id[160];
	struct dbgd_server two;
	struct symbolizer *sym;
	struct sym_opts o = { .debug_dirs = "/nonexistent",
			      .debuginfod_cache_bytes = 1,
			      .debuginfod_wait = true };
	struct sym_elf *e;

	/* a second server over both remote debug files */
	snprintf(cmd, sizeof(cmd), "cp %s/*.debug %s/", fx("remote"), served);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(dbgd_build_id(fx("work_split_stripped"), id), 0);
	cr_assert_eq(dbgd_start(&two, served, id), 0);
	o.debuginfod_urls = two.url;
	o.debuginfod_cache = cache;
	cr_assert_eq(sym_new(&o, &sym), 0);
	e = get(sym, fx("sym_prog_remote"));
	cr_expect_str_eq(sym_elf_debug_source(e), "debuginfod");
	sym_elf_put(sym, e);
	e = get(sym, fx("work_split_stripped"));
	cr_expect_str_eq(sym_elf_debug_source(e), "debuginfod");
	sym_elf_put(sym, e);
	cr_expect_eq(files_in(cache, ".debug"), 1, "the bound keeps only the newest");
	snprintf(cmd, sizeof(cmd), "%s/%s.debug", cache, id);
	cr_expect_eq(access(cmd, F_OK), 0, "the newest is kept");
	sym_free(sym);
	dbgd_stop(&two);
	free(cache);
	free(served);
}

/* Fedora's MiniDebugInfo: static functions named from .gnu_debugdata. */
Test(minidebuginfo, names_static_functions)
{
	struct sym_opts o = { .debug_dirs = "/nonexistent" };
	const char *bin = fx("sym_prog_minidebug");
	struct symbolizer *sym = NULL;
	struct sym_frame f[MAXF];
	struct sym_elf *e;
	char full[512];
	int n;

	cr_assert_eq(sym_new(&o, &sym), 0);
	e = get(sym, bin);
	cr_expect_str_eq(sym_elf_debug_source(e), "minidebuginfo");
	snprintf(full, sizeof(full), "%s.full", bin);
	n = sym_elf_resolve(sym, e, sym_offset(bin, full, "sym_prog_other"), f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "sym_prog_other");
	sym_elf_put(sym, e);
	sym_free(sym);
}
