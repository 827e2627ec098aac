// SPDX-License-Identifier: BSD-2-Clause
/*
 * The unwind-table compiler (symbolizer/unwind_table.c) against binutils'
 * own reading of the same CFI: every row `readelf --debug-dump=frames-interp`
 * prints (CFA rule, where rbp and the return address were saved) must be
 * the rule of our row at that address, for the stack fixtures (with and
 * without frame pointers, .debug_frame only, a library) and for libc (PLT
 * expressions, the signal trampoline, _start's undefined return address).
 * Then the disk cache: a round trip, and corrupt files refused and removed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"
#include "testlib.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static struct symbolizer *sym;

static void setup(void)
{
	cr_assert_eq(sym_new(&(struct sym_opts){ 0 }, &sym), 0);
}

static void teardown(void)
{
	sym_free(sym);
}

TestSuite(unwind_table, .init = setup, .fini = teardown, .timeout = 120);

static void compile(const char *path, struct sym_unwind_table *t)
{
	struct sym_binary b = { .path = path };
	struct sym_elf *e;

	cr_assert_eq(sym_elf_get(sym, &b, &e), 0, "cannot open %s", path);
	cr_assert_eq(sym_elf_unwind_table(sym, e, t), 0, "no table for %s", path);
	sym_elf_put(sym, e);
	cr_assert_gt(t->n, 0);
	for (size_t i = 1; i < t->n; i++)
		cr_assert_gt(t->rows[i].pc, t->rows[i - 1].pc, "%s: rows not sorted at %zu", path,
			     i);
}

static const struct unwind_row *row_at(const struct sym_unwind_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->rows[mid].pc <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

struct rule {
	char cfa[32]; /* "rsp+8", "rbp+16", "exp", "r10+0" */
	char rbp[16]; /* "c-16", "u", "" (not a column) */
	char ra[16];
};

struct tally {
	size_t rows, checked, mismatched, exprs, ends;
};

/* Does our row say what readelf's rule says? */
static bool agrees(const struct unwind_row *r, const struct rule *x, struct tally *n, uint64_t addr,
		   const char *path)
{
	char reg[8];
	long off;

	if (!strcmp(x->ra, "u")) {
		n->ends++;
		return r->cfa == UNWIND_CFA_END;
	}
	if (!strcmp(x->cfa, "exp")) {
		n->exprs++;
		return r->cfa == UNWIND_CFA_PLT || r->cfa == UNWIND_CFA_DEREF_RBP ||
		       r->cfa == UNWIND_CFA_SIGNAL || r->cfa == UNWIND_CFA_UNSUPPORTED;
	}
	if (strcmp(x->ra, "c-8"))
		return r->cfa == UNWIND_CFA_UNSUPPORTED;
	if (sscanf(x->cfa, "%7[a-z0-9]%ld", reg, &off) != 2)
		return false;
	if (strcmp(reg, "rsp") && strcmp(reg, "rbp"))
		return r->cfa == UNWIND_CFA_UNSUPPORTED;
	if (r->cfa != (strcmp(reg, "rsp") ? UNWIND_CFA_RBP : UNWIND_CFA_RSP) || r->cfa_off != off) {
		fprintf(stderr, "%s %#llx: readelf %s, ours kind %u off %d\n", path,
			(unsigned long long)addr, x->cfa, r->cfa, r->cfa_off);
		return false;
	}
	if (!strncmp(x->rbp, "c", 1))
		return r->rbp_off == atoi(x->rbp + 1);
	return r->rbp_off == 0;
}

/* Check every rule readelf prints for path against t. */
static struct tally check_against_readelf(const char *path, const struct sym_unwind_table *t)
{
	char cmd[600], line[1024], cols[32][16];
	struct rule cie_rules[4096], cur;
	uint64_t cie_off[4096];
	size_t ncie = 0, ncols = 0;
	bool in_cie = false;
	const struct rule *pending = NULL; /* an FDE's CIE rule, until it shows rows */
	uint64_t pending_at = 0;
	struct tally n = { 0 };
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off, cie;
		char *tok, *save;
		size_t k = 0;

		if (strstr(line, " CIE ") || strstr(line, " FDE ")) {
			/* the FDE before printed no rows: its CIE's initial rule */
			if (pending) {
				const struct unwind_row *r = row_at(t, pending_at);

				n.rows++;
				if (r) {
					n.checked++;
					n.mismatched += !agrees(r, pending, &n, pending_at, path);
				}
				pending = NULL;
			}
		}
		if (!strncmp(line, "Contents of", 11))
			ncie = 0; /* CIE offsets are per section */
		if (strstr(line, " CIE ")) {
			sscanf(line, "%llx", &off);
			in_cie = true;
			if (ncie < 4096)
				cie_off[ncie] = off;
			continue;
		}
		if (sscanf(line, "%llx %*x %*x FDE cie=%llx pc=%llx..%llx", &off, &cie, &a, &b) ==
		    4) {
			in_cie = false;
			for (size_t i = 0; i < ncie && a != b; i++) {
				if (cie_off[i] == cie) {
					pending = &cie_rules[i];
					pending_at = a;
					break;
				}
			}
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			ncols = 0;
			for (tok = strtok_r(line, " \n", &save); tok && ncols < 32;
			     tok = strtok_r(NULL, " \n", &save))
				snprintf(cols[ncols++], sizeof(cols[0]), "%s", tok);
			continue;
		}
		/* a rule: its LOC as 16 hex digits, then the columns */
		if (!ncols || strspn(line, "0123456789abcdef") != 16 || line[16] != ' ' ||
		    sscanf(line, "%llx", &a) != 1)
			continue;
		memset(&cur, 0, sizeof(cur));
		for (tok = strtok_r(line, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save), k++) {
			if (tok[0] == '(') { /* "r10 (r10)": one column */
				k--;
				continue;
			}
			if (k >= ncols)
				break;
			if (!strcmp(cols[k], "CFA"))
				snprintf(cur.cfa, sizeof(cur.cfa), "%s", tok);
			else if (!strcmp(cols[k], "rbp"))
				snprintf(cur.rbp, sizeof(cur.rbp), "%s", tok);
			else if (!strcmp(cols[k], "ra"))
				snprintf(cur.ra, sizeof(cur.ra), "%s", tok);
		}
		if (in_cie) {
			if (ncie < 4096)
				cie_rules[ncie++] = cur;
			in_cie = false;
			continue;
		}
		pending = NULL; /* the FDE has rows of its own */
		n.rows++;
		{
			const struct unwind_row *r = row_at(t, a);

			if (!r) {
				fprintf(stderr, "%s %#llx: readelf %s, no row of ours\n", path, a,
					cur.cfa);
				continue;
			}
			n.checked++;
			if (!agrees(r, &cur, &n, a, path)) {
				fprintf(stderr,
					"%s %#llx: readelf cfa %s rbp %s ra %s; ours kind %u off "
					"%d rbp %d\n",
					path, a, cur.cfa, cur.rbp, cur.ra, r->cfa, r->cfa_off,
					r->rbp_off);
				n.mismatched++;
			}
		}
	}
	pclose(f);
	return n;
}

static void expect_readelf_agrees(const char *path)
{
	struct sym_unwind_table t;
	struct tally n;

	compile(path, &t);
	n = check_against_readelf(path, &t);
	cr_expect_gt(n.rows, 5, "%s: readelf printed no rules", path);
	cr_expect_eq(n.checked, n.rows, "%s: %zu of readelf's %zu rules have no row", path,
		     n.rows - n.checked, n.rows);
	cr_expect_eq(n.mismatched, 0, "%s: %zu of %zu rules differ from readelf's", path,
		     n.mismatched, n.checked);
	sym_unwind_table_free(&t);
}

Test(unwind_table, chain_without_frame_pointers)
{
	expect_readelf_agrees(tl_path("fixtures/stacks/chain_nofp"));
}

Test(unwind_table, chain_with_frame_pointers_has_rbp_rules)
{
	struct sym_unwind_table t;
	size_t rbp = 0;

	expect_readelf_agrees(tl_path("fixtures/stacks/chain_fp"));
	compile(tl_path("fixtures/stacks/chain_fp"), &t);
	for (size_t i = 0; i < t.n; i++)
		rbp += t.rows[i].cfa == UNWIND_CFA_RBP && t.rows[i].rbp_off == -16;
	cr_expect_gt(rbp, 0, "no CFA = rbp + 16 with rbp saved at CFA - 16");
	sym_unwind_table_free(&t);
}

Test(unwind_table, library_without_frame_pointers)
{
	expect_readelf_agrees(tl_path("fixtures/stacks/libstacks_nofp.so"));
}

Test(unwind_table, debug_frame_covers_what_eh_frame_does_not)
{
	struct sym_unwind_table t;

	expect_readelf_agrees(tl_path("fixtures/stacks/chain_debug_frame"));
	compile(tl_path("fixtures/stacks/chain_debug_frame"), &t);
	cr_expect_str_eq(t.source, "eh_frame+debug_frame");
	sym_unwind_table_free(&t);
}

Test(unwind_table, libc_plt_signal_and_start)
{
	struct sym_unwind_table t;
	size_t plt = 0, sig = 0;

	expect_readelf_agrees(LIBC);
	compile(LIBC, &t);
	for (size_t i = 0; i < t.n; i++) {
		plt += t.rows[i].cfa == UNWIND_CFA_PLT;
		sig += t.rows[i].cfa == UNWIND_CFA_SIGNAL;
	}
	cr_expect_gt(plt, 0, "no PLT rows in libc");
	cr_expect_gt(sig, 0, "no signal frame (__restore_rt) in libc");
	cr_expect_eq(t.rows[t.n - 1].cfa, UNWIND_CFA_GAP, "the last range is not closed");
	sym_unwind_table_free(&t);
}

Test(unwind_table, not_an_elf_and_truncated_elf_are_errors)
{
	char *dir = tl_tmpdir("badelf"), path[512], cmd[1200];
	struct sym_unwind_table t;
	struct sym_elf *e;
	int ret;

	snprintf(path, sizeof(path), "%s/trunc", dir);
	snprintf(cmd, sizeof(cmd), "head -c 3000 '%s' > '%s'",
		 tl_path("fixtures/stacks/chain_nofp"), path);
	cr_assert_eq(system(cmd), 0);
	ret = sym_elf_get(sym, &(struct sym_binary){ .path = path }, &e);
	if (!ret) { /* opened: the table is an error or empty, never a crash */
		ret = sym_elf_unwind_table(sym, e, &t);
		if (!ret)
			sym_unwind_table_free(&t);
		sym_elf_put(sym, e);
	}
	cr_expect_neq(ret, 0, "a truncated binary gave a table");
	cr_expect_neq(sym_unwind_table_from_image("not an elf at all", 17, &t), 0);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

Test(unwind_table, disk_cache_round_trip_and_corrupt_files)
{
	char *dir = tl_tmpdir("ucache"), path[600], *buf;
	const char *bid = "0123456789abcdef0123456789abcdef01234567";
	struct sym_unwind_table t, back;
	struct stat st;
	FILE *f;
	long len;

	compile(tl_path("fixtures/stacks/chain_nofp"), &t);
	cr_assert_eq(sym_unwind_cache_save(dir, bid, &t), 0);
	cr_assert_eq(sym_unwind_cache_load(dir, bid, &back), 0);
	cr_expect_eq(back.n, t.n);
	cr_expect_eq(memcmp(back.rows, t.rows, t.n * sizeof(*t.rows)), 0);
	sym_unwind_table_free(&back);
	cr_expect_eq(sym_unwind_cache_load(dir, "feedface", &back), -ENOENT);
	cr_expect_eq(sym_unwind_cache_load(dir, "../../etc/passwd", &back), -EINVAL);

	snprintf(path, sizeof(path), "%s/%s.unwind", dir, bid);
	f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len);
	cr_assert_eq(fread(buf, 1, len, f), (size_t)len);
	fclose(f);

	/* truncated, bad magic, unsorted rows: refused and removed */
	write_file(path, buf, len - 5);
	cr_expect_eq(sym_unwind_cache_load(dir, bid, &back), -EINVAL);
	cr_expect_neq(stat(path, &st), 0, "a truncated cache file stays");
	buf[0] ^= 0xff;
	write_file(path, buf, len);
	cr_expect_eq(sym_unwind_cache_load(dir, bid, &back), -EINVAL);
	buf[0] ^= 0xff;
	if (t.n >= 2) {
		struct unwind_row *rows = (struct unwind_row *)(buf + len - t.n * sizeof(*rows));
		struct unwind_row tmp = rows[0];

		rows[0] = rows[1];
		rows[1] = tmp;
		write_file(path, buf, len);
		cr_expect_eq(sym_unwind_cache_load(dir, bid, &back), -EINVAL);
	}
	free(buf);
	sym_unwind_table_free(&t);
}
