// SPDX-License-Identifier: BSD-2-Clause
/* What the symbolizer reads of a binary's data (symbolizer/elf_data.c):
 * a global's address, a member's offset from DWARF, a .rodata string;
 * against the sym_pgdata fixture and what nm says of it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebprof/symbolizer.h"
#include "../fixtures/sym_pgdata.h"
#include "testlib.h"

static const char *fx(const char *name)
{
	static char buf[2][512];
	static int next;
	char *b = buf[next++ % 2];

	snprintf(b, sizeof(buf[0]), "%s/fixtures/%s", tl_build(), name);
	return b;
}

/* nm's address of a defined symbol. */
static uint64_t nm_addr(const char *bin, const char *name, bool dynamic)
{
	char cmd[1024], *out = NULL;
	uint64_t a = 0;

	snprintf(cmd, sizeof(cmd), "nm %s '%s' | awk '$3 == \"%s\" { print $1 }'",
		 dynamic ? "-D" : "", bin, name);
	cr_assert_eq(tl_sh(cmd, &out), 0);
	cr_assert(out && sscanf(out, "%lx", &a) == 1, "nm has no %s in %s", name, bin);
	free(out);
	return a;
}

struct env {
	struct symbolizer *sym;
	struct sym_elf *e;
};

static struct env open_bin(const char *bin)
{
	struct env v = { 0 };
	struct sym_binary b = { .path = bin };

	cr_assert_eq(sym_new(&(struct sym_opts){ .debug_dirs = "/nonexistent" }, &v.sym), 0);
	cr_assert_eq(sym_elf_get(v.sym, &b, &v.e), 0, "%s", bin);
	return v;
}

static void close_bin(struct env *v)
{
	sym_elf_put(v->sym, v->e);
	sym_free(v->sym);
}

Test(elf_data, symbols_members_and_strings_with_dwarf)
{
	const char *bin = fx("sym_pgdata");
	struct env v = open_bin(bin);
	uint64_t a, off;
	char s[64];

	cr_assert_eq(sym_elf_symbol(v.e, "debug_query_string", &a), 0);
	cr_expect_eq(a, nm_addr(bin, "debug_query_string", false));
	cr_assert_eq(sym_elf_symbol(v.e, "MyBEEntry", &a), 0);
	cr_expect_eq(a, nm_addr(bin, "MyBEEntry", false));
	cr_expect_eq(sym_elf_symbol(v.e, "no_such_symbol", &a), -ENOENT);
	cr_expect_eq(sym_elf_symbol(v.e, "printf", &a), -ENOENT, "undefined: not ours");

	cr_assert_eq(sym_elf_member_offset(v.e, "PgBackendStatus", "st_state", &off), 0);
	cr_expect_eq(off, offsetof(PgBackendStatus, st_state));
	cr_assert_eq(sym_elf_member_offset(v.e, "PgBackendStatus", "st_query_id", &off), 0);
	cr_expect_eq(off, offsetof(PgBackendStatus, st_query_id));
	cr_expect_eq(sym_elf_member_offset(v.e, "PgBackendStatus", "st_nothing", &off), -ENOENT);
	cr_expect_eq(sym_elf_member_offset(v.e, "NoSuchType", "st_state", &off), -ENOENT);

	cr_assert_eq(sym_elf_find_string(v.e, "postgres (PostgreSQL) ", s, sizeof(s)), 0);
	cr_expect_str_eq(s, SYM_PG_VERSION);
	cr_assert_eq(sym_elf_find_string(v.e, "postgres (PostgreSQL) ", s, 12), 0);
	cr_expect_str_eq(s, "postgres (P", "cut to the buffer");
	cr_expect_eq(sym_elf_find_string(v.e, "(PostgreSQL) 16", s, sizeof(s)), -ENOENT,
		     "only whole strings");
	close_bin(&v);
}

Test(elf_data, stripped_dynsym_only)
{
	const char *bin = fx("sym_pgdata_stripped");
	struct env v = open_bin(bin);
	uint64_t a, off, file_off, vaddr;

	cr_assert_eq(sym_elf_symbol(v.e, "debug_query_string", &a), 0);
	cr_expect_eq(a, nm_addr(bin, "debug_query_string", true));
	cr_expect_eq(sym_elf_member_offset(v.e, "PgBackendStatus", "st_state", &off), -ENODATA);
	/* the first loaded segment starts at file offset 0, vaddr 0 (PIE) */
	file_off = 0;
	cr_assert_eq(sym_elf_offset_vaddr(v.e, file_off, &vaddr), 0);
	cr_expect_eq(vaddr, 0);
	close_bin(&v);
}
