// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/jitsyms.h"
#include "process/processes.h"

static struct jit_syms *perfmap(const char *text, int *ret)
{
	struct jit_syms *js = jitsyms_new();

	cr_assert_not_null(js);
	*ret = jitsyms_parse_perfmap(text, strlen(text), js);
	return js;
}

static void expect_name(const struct jit_syms *js, uint64_t addr, const char *name)
{
	const char *got = jitsyms_find(js, addr);

	if (!name)
		cr_expect_null(got, "%#llx: expected nothing, got %s", (unsigned long long)addr,
			       got);
	else if (!got)
		cr_expect_fail("%#llx: expected %s, got nothing", (unsigned long long)addr, name);
	else
		cr_expect_str_eq(got, name, "%#llx", (unsigned long long)addr);
}

Test(jitsyms, perfmap_lines)
{
	int ret;
	struct jit_syms *js = perfmap("1000 10 foo\n"
				      "0x2000 0x20 bar baz\n"
				      "0X3000\t0XA\tUpper\r\n"
				      "  4000   8   spaced name  \n"
				      "5000 4 last, no newline",
				      &ret);

	cr_expect_eq(ret, 5);
	cr_expect_eq(jitsyms_count(js), 5);
	cr_expect_eq(jitsyms_skipped(js), 0);
	expect_name(js, 0xfff, NULL);
	expect_name(js, 0x1000, "foo");
	expect_name(js, 0x100f, "foo");
	expect_name(js, 0x1010, NULL);
	expect_name(js, 0x2000, "bar baz");
	expect_name(js, 0x201f, "bar baz");
	expect_name(js, 0x2020, NULL);
	expect_name(js, 0x3009, "Upper");
	expect_name(js, 0x300a, NULL);
	expect_name(js, 0x4007, "spaced name");
	expect_name(js, 0x5003, "last, no newline");
	jitsyms_free(js);
}

Test(jitsyms, perfmap_garbage_skipped_and_counted)
{
	int ret;
	struct jit_syms *js = perfmap("garbage\n"
				      "1000\n"
				      "1000 10\n"
				      "zz 10 x\n"
				      "1000 zz x\n"
				      "-1 10 x\n"
				      "0x 10 x\n"
				      "10g0 10 x\n"
				      "\n"
				      "   \n"
				      "3000 0 zero size\n"
				      "1000 10 ok\n",
				      &ret);

	cr_expect_eq(ret, 1);
	cr_expect_eq(jitsyms_count(js), 1);
	cr_expect_eq(jitsyms_skipped(js), 8);
	expect_name(js, 0x1000, "ok");
	expect_name(js, 0x3000, NULL);
	jitsyms_free(js);
}

Test(jitsyms, perfmap_overflow)
{
	int ret;
	struct jit_syms *js = perfmap("ffffffffffffff00 101 wraps\n"
				      "10000000000000000 10 seventeen digits\n"
				      "1000 10000000000000000 huge size\n"
				      "ffffffffffffff00 ff top\n"
				      "0000000000000000000000002000 10 leading zeros\n",
				      &ret);

	cr_expect_eq(ret, 2);
	cr_expect_eq(jitsyms_skipped(js), 3);
	expect_name(js, 0xfffffffffffffffeULL, "top");
	expect_name(js, 0xffffffffffffffffULL, NULL);
	expect_name(js, 0xfffffffffffffeffULL, NULL);
	expect_name(js, 0x2000, "leading zeros");
	jitsyms_free(js);
}

Test(jitsyms, perfmap_names_bounded_and_printable)
{
	static char text[4096];
	char want[JITSYMS_NAME_MAX + 1];
	const char *got;
	int ret, n;
	struct jit_syms *js = jitsyms_new();

	n = snprintf(text, sizeof(text), "1000 10 ");
	memset(text + n, 'n', 2000);
	n += 2000;
	n += snprintf(text + n, sizeof(text) - (size_t)n, "\n2000 10 a\tb\x01\x7f\xff");
	text[n++] = '\0'; /* a NUL inside the name */
	n += snprintf(text + n, sizeof(text) - (size_t)n, "c\n");
	ret = jitsyms_parse_perfmap(text, (size_t)n, js);
	cr_expect_eq(ret, 2);
	memset(want, 'n', JITSYMS_NAME_MAX);
	want[JITSYMS_NAME_MAX] = '\0';
	got = jitsyms_find(js, 0x1000);
	cr_assert_not_null(got);
	cr_expect_eq(strlen(got), JITSYMS_NAME_MAX);
	cr_expect_str_eq(got, want);
	expect_name(js, 0x2000, "a?b????c");
	jitsyms_free(js);
}

Test(jitsyms, later_record_wins)
{
	int ret;
	struct jit_syms *js = perfmap("1000 100 old\n"
				      "1080 10 new\n"
				      "2000 10 first\n"
				      "2000 10 second\n"
				      "3000 20 a\n"
				      "3010 20 b\n",
				      &ret);

	cr_expect_eq(ret, 6);
	expect_name(js, 0x1000, "old");
	expect_name(js, 0x107f, "old");
	expect_name(js, 0x1080, "new");
	expect_name(js, 0x108f, "new");
	expect_name(js, 0x1090, "old");
	expect_name(js, 0x10ff, "old");
	expect_name(js, 0x1100, NULL);
	expect_name(js, 0x2005, "second");
	expect_name(js, 0x300f, "a");
	expect_name(js, 0x3010, "b");
	expect_name(js, 0x302f, "b");
	/* A second parse wins over what the table held. */
	cr_expect_eq(jitsyms_parse_perfmap("1000 8 newest\n", 14, js), 1);
	expect_name(js, 0x1007, "newest");
	expect_name(js, 0x1008, "old");
	expect_name(js, 0x1085, "new");
	jitsyms_free(js);
}

Test(jitsyms, empty_and_null)
{
	struct jit_syms *js = jitsyms_new();

	cr_expect_null(jitsyms_find(NULL, 0x1000));
	cr_expect_null(jitsyms_find(js, 0x1000));
	cr_expect_eq(jitsyms_count(js), 0);
	cr_expect_eq(jitsyms_parse_perfmap("", 0, js), 0);
	cr_expect_eq(jitsyms_parse_jitdump("", 0, js), -EINVAL);
	jitsyms_free(js);
	jitsyms_free(NULL);
}

Test(jitsyms, entries_capped, .timeout = 60)
{
	size_t n = JITSYMS_MAX_ENTRIES + 100, len = 0;
	char *text = malloc(n * 16);
	struct jit_syms *js = jitsyms_new();

	cr_assert_not_null(text);
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%zx 1 f%zu\n", 2 * i, i % 10);
	cr_expect_eq(jitsyms_parse_perfmap(text, len, js), (int)JITSYMS_MAX_ENTRIES);
	cr_expect_eq(jitsyms_count(js), JITSYMS_MAX_ENTRIES);
	expect_name(js, 2 * (JITSYMS_MAX_ENTRIES - 1), "f5");
	expect_name(js, 2 * JITSYMS_MAX_ENTRIES, NULL);
	cr_expect_eq(jitsyms_parse_perfmap("ffff0000 1 more\n", 16, js), 0);
	free(text);
	jitsyms_free(js);
}

/* --- jitdump images -------------------------------------------------- */

struct img {
	uint8_t d[65536];
	size_t n;
};

static void put(struct img *b, const void *p, size_t n)
{
	cr_assert_leq(b->n + n, sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put32(struct img *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put64(struct img *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

static void jd_header(struct img *b, uint32_t magic, uint32_t version)
{
	b->n = 0;
	put32(b, magic);
	put32(b, version);
	put32(b, 40); /* total_size */
	put32(b, 62); /* EM_X86_64 */
	put32(b, 0);
	put32(b, 1234);
	put64(b, 1);
	put64(b, 0);
}

static void jd_load(struct img *b, uint64_t addr, uint64_t size, uint64_t index, const char *name)
{
	static const uint8_t code[8] = { 0x90, 0x90, 0x90, 0xc3 };
	size_t nlen = strlen(name) + 1;

	put32(b, 0);
	put32(b, (uint32_t)(16 + 40 + nlen + sizeof(code)));
	put64(b, 2);
	put32(b, 1234);
	put32(b, 1234);
	put64(b, addr);
	put64(b, addr);
	put64(b, size);
	put64(b, index);
	put(b, name, nlen);
	put(b, code, sizeof(code));
}

static void jd_move(struct img *b, uint64_t from, uint64_t to, uint64_t size, uint64_t index)
{
	put32(b, 1);
	put32(b, 16 + 48);
	put64(b, 3);
	put32(b, 1234);
	put32(b, 1234);
	put64(b, to);
	put64(b, from);
	put64(b, to);
	put64(b, size);
	put64(b, index);
}

/* A record of another kind, with body bytes of zeros. */
static void jd_other(struct img *b, uint32_t id, uint32_t body)
{
	put32(b, id);
	put32(b, 16 + body);
	put64(b, 4);
	for (uint32_t i = 0; i < body; i++)
		put(b, "", 1);
}

static struct img img;

Test(jitsyms, jitdump_loads)
{
	struct jit_syms *js = jitsyms_new();

	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x10000, 0x100, 0, "evalexpr_0_0");
	jd_other(&img, 2, 40); /* DEBUG_INFO */
	jd_load(&img, 0x10100, 0x80, 1, "deform_0_1");
	jd_other(&img, 4, 24); /* UNWINDING_INFO */
	jd_other(&img, 77, 0); /* unknown: skipped */
	jd_load(&img, 0x20000, 0, 2, "zero size");
	jd_other(&img, 3, 0); /* CLOSE */
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), 2);
	cr_expect_eq(jitsyms_count(js), 2);
	cr_expect_eq(jitsyms_skipped(js), 0);
	expect_name(js, 0xffff, NULL);
	expect_name(js, 0x10000, "evalexpr_0_0");
	expect_name(js, 0x100ff, "evalexpr_0_0");
	expect_name(js, 0x10100, "deform_0_1");
	expect_name(js, 0x1017f, "deform_0_1");
	expect_name(js, 0x10180, NULL);
	expect_name(js, 0x20000, NULL);
	jitsyms_free(js);
}

Test(jitsyms, jitdump_reuse_later_wins_and_move)
{
	struct jit_syms *js = jitsyms_new();

	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x1000, 0x100, 0, "query1");
	jd_load(&img, 0x1000, 0x80, 1, "query2");
	jd_load(&img, 0x3000, 0x40, 7, "moved");
	jd_move(&img, 0x3000, 0x5000, 0x40, 7);
	jd_move(&img, 0x3000, 0x6000, 0x40, 99); /* no such code: counted */
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), 4);
	cr_expect_eq(jitsyms_skipped(js), 1);
	expect_name(js, 0x1000, "query2");
	expect_name(js, 0x107f, "query2");
	expect_name(js, 0x1080, "query1");
	expect_name(js, 0x10ff, "query1");
	expect_name(js, 0x5000, "moved");
	expect_name(js, 0x503f, "moved");
	expect_name(js, 0x6000, NULL);
	jitsyms_free(js);
}

Test(jitsyms, jitdump_malformed_records)
{
	char longname[1000];
	struct jit_syms *js = jitsyms_new();
	size_t at;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x1000, 0x10, 0, "good");
	/* Name without its NUL inside the record. */
	at = img.n;
	jd_load(&img, 0x2000, 0x10, 1, "nonul");
	memset(img.d + at + 16 + 40, 'y', img.n - at - 16 - 40);
	jd_other(&img, 0, 20);			    /* a load shorter than its fields */
	jd_load(&img, ~0ULL - 4, 0x10, 2, "wraps"); /* code_addr + code_size overflows */
	jd_load(&img, 0x3000, 0x10, 3, longname);
	jd_load(&img, 0x4000, 0x10, 4, "ctl\x01\x1b[0m");
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), 3);
	cr_expect_eq(jitsyms_skipped(js), 3);
	expect_name(js, 0x1000, "good");
	expect_name(js, 0x2000, NULL);
	cr_expect_eq(strlen(jitsyms_find(js, 0x3000)), JITSYMS_NAME_MAX);
	expect_name(js, 0x4000, "ctl??[0m");
	jitsyms_free(js);
}

Test(jitsyms, jitdump_truncated_keeps_what_was_read)
{
	struct jit_syms *js;
	size_t full;

	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x1000, 0x10, 0, "first");
	jd_load(&img, 0x2000, 0x10, 1, "second");
	full = img.n;
	/* Cut inside the second record's body, then inside its header. */
	for (size_t cut = 10; cut <= 60; cut += 50) {
		js = jitsyms_new();
		cr_expect_eq(jitsyms_parse_jitdump(img.d, full - cut, js), 1, "cut %zu", cut);
		cr_expect_eq(jitsyms_skipped(js), 1);
		expect_name(js, 0x1000, "first");
		expect_name(js, 0x2000, NULL);
		jitsyms_free(js);
	}
	/* total_size 0, < 16 and past the end stop the parse. */
	for (uint32_t bad = 0; bad < 3; bad++) {
		uint32_t sizes[] = { 0, 15, 0xffffffffu };

		img.n = full;
		put32(&img, 0);
		put32(&img, sizes[bad]);
		put64(&img, 5);
		jd_load(&img, 0x3000, 0x10, 2, "after");
		js = jitsyms_new();
		cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), 2, "size %u", sizes[bad]);
		expect_name(js, 0x2000, "second");
		expect_name(js, 0x3000, NULL);
		jitsyms_free(js);
	}
}

Test(jitsyms, jitdump_header_rejected)
{
	struct jit_syms *js = jitsyms_new();

	jd_header(&img, 0x4454694A, 0x01000000); /* written by the other byte order */
	jd_load(&img, 0x1000, 0x10, 0, "x");
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), -EINVAL);
	jd_header(&img, 0x4A695444, 2);
	jd_load(&img, 0x1000, 0x10, 0, "x");
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), -EINVAL);
	jd_header(&img, 0x12345678, 1);
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), -EINVAL);
	jd_header(&img, 0x4A695444, 1);
	cr_expect_eq(jitsyms_parse_jitdump(img.d, 39, js), -EINVAL);
	memset(img.d + 8, 0, 4); /* header total_size 0 */
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), -EINVAL);
	jd_header(&img, 0x4A695444, 1);
	cr_expect_eq(jitsyms_parse_jitdump(img.d, img.n, js), 0); /* no records yet */
	cr_expect_eq(jitsyms_count(js), 0);
	jitsyms_free(js);
}

/* --- a live process ---------------------------------------------------- */

struct child {
	pid_t pid;
	int go, done; /* parent -> child, child -> parent */
	char dir[64], dump[128], perfmap[64];
};

/* A child that maps dump (named after its pid) PROT_EXEC, as LLVM does,
 * and waits until the parent closes its pipe. */
static void start_child(struct child *c)
{
	int p2c[2], c2p[2];
	char byte;

	strcpy(c->dir, "/tmp/ebprof-jitsyms-XXXXXX");
	cr_assert_not_null(mkdtemp(c->dir));
	cr_assert_eq(pipe(p2c), 0);
	cr_assert_eq(pipe(c2p), 0);
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (!c->pid) {
		char path[128];
		void *p;
		int fd;

		close(p2c[1]);
		close(c2p[0]);
		if (read(p2c[0], &byte, 1) != 1)
			_exit(1);
		snprintf(path, sizeof(path), "%s/jit-%d.dump", c->dir, (int)getpid());
		fd = open(path, O_RDONLY);
		p = fd < 0 ? MAP_FAILED
			   : mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED || write(c2p[1], "k", 1) != 1)
			_exit(2);
		while (read(p2c[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	close(p2c[0]);
	close(c2p[1]);
	c->go = p2c[1];
	c->done = c2p[0];
	snprintf(c->dump, sizeof(c->dump), "%s/jit-%d.dump", c->dir, (int)c->pid);
	snprintf(c->perfmap, sizeof(c->perfmap), "/tmp/perf-%d.map", (int)c->pid);
}

static void write_text(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static void stop_child(struct child *c)
{
	int status;

	close(c->go);
	close(c->done);
	waitpid(c->pid, &status, 0);
	unlink(c->perfmap);
	unlink(c->dump);
	rmdir(c->dir);
}

static struct jit_syms *load(uint32_t pid)
{
	struct jit_syms *js = NULL;

	cr_assert_eq(jitsyms_load(pid, NULL, &js), 0);
	cr_assert_not_null(js);
	return js;
}

Test(jitsyms, load_live_process, .timeout = 30)
{
	struct child c;
	struct proc_maps *maps;
	struct jit_syms *js;
	uint64_t stamp1, stamp2;
	char byte, path[128];
	bool mapped = false;

	cr_assert_eq(geteuid(), 0, "needs root (chown to another user)");
	start_child(&c);
	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x7f0000001000, 0x200, 0, "evalexpr_0_0");
	jd_load(&img, 0x7f0000001200, 0x100, 1, "deform_0_1");
	write_text(c.dump, img.d, img.n);
	write_text(c.perfmap, "7f0000009000 40 perf_fn\n", 24);
	cr_assert_eq(write(c.go, "g", 1), 1);
	cr_assert_eq(read(c.done, &byte, 1), 1, "the child could not map its jitdump");

	cr_assert_eq(procmaps_read(c.pid, true, &maps), 0);
	for (size_t i = 0; i < maps->n; i++)
		mapped |= maps->entries[i].path && !strcmp(maps->entries[i].path, c.dump);
	cr_expect(mapped, "the jitdump is among the executable mappings");
	cr_assert_eq(jitsyms_load((uint32_t)c.pid, maps, &js), 0);
	cr_expect_eq(jitsyms_count(js), 3);
	expect_name(js, 0x7f0000001000, "evalexpr_0_0");
	expect_name(js, 0x7f00000012ff, "deform_0_1");
	expect_name(js, 0x7f0000009000, "perf_fn");
	jitsyms_free(js);

	/* The stamp moves when a file changes. */
	cr_assert_eq(jitsyms_stamp((uint32_t)c.pid, maps, &stamp1), 0);
	cr_assert_eq(jitsyms_stamp((uint32_t)c.pid, NULL, &stamp2), 0);
	cr_expect_eq(stamp1, stamp2);
	write_text(c.perfmap, "7f0000009000 40 perf_fn\n7f000000a000 10 perf_fn2\n", 49);
	cr_assert_eq(jitsyms_stamp((uint32_t)c.pid, maps, &stamp2), 0);
	cr_expect_neq(stamp1, stamp2);
	procmaps_free(maps);

	/* Owned by another user: ignored. */
	cr_assert_eq(chown(c.perfmap, 12345, 12345), 0);
	js = load((uint32_t)c.pid);
	expect_name(js, 0x7f0000009000, NULL);
	expect_name(js, 0x7f0000001000, "evalexpr_0_0");
	jitsyms_free(js);
	cr_assert_eq(chown(c.dump, 12345, 12345), 0);
	js = load((uint32_t)c.pid);
	cr_expect_eq(jitsyms_count(js), 0);
	jitsyms_free(js);
	cr_assert_eq(chown(c.dump, 0, 0), 0);

	/* A FIFO under the perf map's name: neither read nor waited on. */
	unlink(c.perfmap);
	cr_assert_eq(mkfifo(c.perfmap, 0644), 0);
	js = load((uint32_t)c.pid);
	cr_expect_eq(jitsyms_count(js), 2);
	jitsyms_free(js);

	/* A symlink under the perf map's name: not followed. */
	unlink(c.perfmap);
	snprintf(path, sizeof(path), "%s/target.map", c.dir);
	write_text(path, "7f0000009000 40 via_link\n", 25);
	cr_assert_eq(symlink(path, c.perfmap), 0);
	js = load((uint32_t)c.pid);
	expect_name(js, 0x7f0000009000, NULL);
	cr_expect_eq(jitsyms_count(js), 2);
	jitsyms_free(js);
	unlink(path);

	stop_child(&c);
	cr_expect_eq(jitsyms_load((uint32_t)c.pid, NULL, &js), -ESRCH);
}

Test(jitsyms, registry_reloads_on_change_at_most_once_a_second, .timeout = 30)
{
	struct proc_registry *reg;
	uint64_t addr = 0x7f000000a000;
	uint32_t pid;
	struct child c;
	char byte;

	start_child(&c);
	pid = (uint32_t)c.pid;
	jd_header(&img, 0x4A695444, 1);
	jd_load(&img, 0x7f0000001000, 0x200, 0, "evalexpr_0_0");
	write_text(c.dump, img.d, img.n);
	write_text(c.perfmap, "7f0000009000 40 perf_fn\n", 24);
	cr_assert_eq(write(c.go, "g", 1), 1);
	cr_assert_eq(read(c.done, &byte, 1), 1);

	cr_assert_eq(procs_new(&reg), 0);
	cr_expect_null(procs_jit_name(reg, pid, 0x7f0000001000)); /* not registered */
	cr_assert_not_null(procs_add(reg, pid));
	cr_expect_str_eq(procs_jit_name(reg, pid, 0x7f0000001000), "evalexpr_0_0");
	cr_expect_str_eq(procs_jit_name(reg, pid, 0x7f0000009000), "perf_fn");
	cr_expect_null(procs_jit_name(reg, pid, 0x7f0000001200));
	cr_expect_null(procs_jit_name(reg, pid, addr));
	write_text(c.perfmap, "7f0000009000 40 perf_fn\n7f000000a000 10 perf_fn2\n", 49);
	/* Within the second: not looked at again; after it, read again. */
	cr_expect_null(procs_jit_name(reg, pid, addr));
	usleep(1100 * 1000);
	cr_expect_str_eq(procs_jit_name(reg, pid, addr), "perf_fn2");

	/* Gone: the last table stays until the entry goes. */
	stop_child(&c);
	usleep(1100 * 1000);
	cr_expect_str_eq(procs_jit_name(reg, pid, addr), "perf_fn2");
	procs_on_exit(reg, pid, 1);
	cr_expect_null(procs_jit_name(reg, pid, addr)); /* removed: never sampled */
	procs_free(reg);
}
