// SPDX-License-Identifier: BSD-2-Clause
/*
 * PL/pgSQL frames' userspace half: the layouts of 13..17 against
 * PostgreSQL's structs laid out again here member by member (types as in
 * each release's plpgsql.h); the callback and its pushers found in the
 * plpgsql.so installed, by its exports and by its code alone (the way of
 * 16+, whose pushers are hidden), against objdump's disassembly; chains
 * decoded from hostile records; and their placement among C frames.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/plpgsql_bin.h"
#include "sampling/plpgsql_chains.h"
#include "symbolizer_env.h"
#include "testlib.h"

/* PLpgSQL_execstate of each release, member by member (LP64: pointers,
 * Datum and uint64 8 bytes, Oid and int 4, bool 1). */
#define EXECSTATE_HEAD                                                                             \
	void *func, *trigdata, *evtrigdata;                                                        \
	uintptr_t retval;                                                                          \
	bool retisnull;                                                                            \
	unsigned int rettype, fn_rettype;                                                          \
	bool retistuple, retisset, readonly_func, atomic;                                          \
	char *exitlabel;                                                                           \
	void *cur_error, *tuple_store, *tuple_store_desc, *tuple_store_cxt, *tuple_store_owner,    \
		*rsi;                                                                              \
	int found_varno, ndatums;                                                                  \
	void **datums;                                                                             \
	void *datum_context, *paramLI, *simple_eval_estate, *simple_eval_resowner;
#define EXECSTATE_EVAL                                                                             \
	void *stmt_mcontext, *stmt_mcontext_parent, *eval_tuptable;                                \
	uint64_t eval_processed;                                                                   \
	void *eval_econtext;

struct execstate13 {
	EXECSTATE_HEAD
	void *cast_hash, *cast_hash_context;
	EXECSTATE_EVAL
	void *err_stmt;
	const char *err_text;
	void *plugin_info;
};

struct execstate14 { /* procedure_resowner came */
	EXECSTATE_HEAD
	void *procedure_resowner;
	void *cast_hash, *cast_hash_context;
	EXECSTATE_EVAL
	void *err_stmt;
	const char *err_text;
	void *plugin_info;
};

struct execstate15 { /* err_var came */
	EXECSTATE_HEAD
	void *procedure_resowner;
	void *cast_hash, *cast_hash_context;
	EXECSTATE_EVAL
	void *err_stmt, *err_var;
	const char *err_text;
	void *plugin_info;
};

struct execstate16 { /* 16 and 17: cast_hash_context went */
	EXECSTATE_HEAD
	void *procedure_resowner;
	void *cast_hash;
	EXECSTATE_EVAL
	void *err_stmt, *err_var;
	const char *err_text;
	void *plugin_info;
};

struct function13 { /* 13..17: fn_signature first */
	char *fn_signature;
	unsigned int fn_oid;
};

struct stmt13 {	      /* 13..17 */
	int cmd_type; /* enum PLpgSQL_stmt_type */
	int lineno;
	unsigned int stmtid;
};

struct variable13 { /* 13..17 */
	int dtype;  /* enum PLpgSQL_datum_type */
	int dno;
	char *refname;
	int lineno;
	bool isconst, notnull;
	void *default_val;
};

static void expect_layout(int v, size_t err_stmt, size_t err_var)
{
	const struct plpgsql_layout *l = plpgsql_layout_for(v);

	cr_assert_not_null(l, "PostgreSQL %d", v);
	cr_expect_eq(l->func, 0, "%d: func first", v);
	cr_expect_eq(l->err_stmt, err_stmt, "%d: err_stmt %u, not %zu", v, l->err_stmt, err_stmt);
	cr_expect_eq(l->err_var, err_var, "%d: err_var %u, not %zu", v, l->err_var, err_var);
	cr_expect_eq(l->signature, offsetof(struct function13, fn_signature));
	cr_expect_eq(l->stmt_lineno, offsetof(struct stmt13, lineno));
	cr_expect_eq(l->var_lineno, offsetof(struct variable13, lineno));
}

Test(plpgsql, layouts_of_13_to_17_as_their_sources_lay_them_out)
{
	expect_layout(13, offsetof(struct execstate13, err_stmt), 0);
	expect_layout(14, offsetof(struct execstate14, err_stmt), 0);
	expect_layout(15, offsetof(struct execstate15, err_stmt),
		      offsetof(struct execstate15, err_var));
	expect_layout(16, offsetof(struct execstate16, err_stmt),
		      offsetof(struct execstate16, err_var));
	expect_layout(17, offsetof(struct execstate16, err_stmt),
		      offsetof(struct execstate16, err_var));
	/* as each release's plpgsql_exec_error_callback reads them */
	cr_expect_eq(offsetof(struct execstate13, err_stmt), 0xd0);
	cr_expect_eq(offsetof(struct execstate15, err_var), 0xe0);
	cr_expect_eq(offsetof(struct execstate16, err_var), 0xd8);
	cr_expect_null(plpgsql_layout_for(12));
	cr_expect_null(plpgsql_layout_for(18), "18 moved fn_signature behind a CachedFunction");
}

/* The plpgsql.so of the newest PostgreSQL installed, and its major. */
static const char *installed(int *major)
{
	static char path[256];
	char *out = NULL;

	cr_assert_eq(tl_sh("ls /usr/lib/postgresql | sort -n | tail -1", &out), 0);
	cr_assert(out && sscanf(out, "%d", major) == 1, "no PostgreSQL installed");
	free(out);
	snprintf(path, sizeof(path), "/usr/lib/postgresql/%d/lib/plpgsql.so", *major);
	return path;
}

struct env {
	struct symbolizer *sym;
	struct sym_elf *e;
};

static struct env open_bin(const char *bin)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);

	return (struct env){ sym, get_path(sym, bin) };
}

static void close_bin(struct env *v)
{
	sym_elf_put(v->sym, v->e);
	sym_free(v->sym);
}

/* How many times objdump's disassembly of [start, end) of bin has pat. */
static int objdump_count(const char *bin, uint64_t start, uint64_t end, const char *pat)
{
	char cmd[1024], *out = NULL;
	int n = -1;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d --no-show-raw-insn --start-address=0x%lx --stop-address=0x%lx %s | "
		 "grep -c -- '%s'",
		 (unsigned long)start, (unsigned long)end, bin, pat);
	tl_sh(cmd, &out);
	cr_assert(out && sscanf(out, "%d", &n) == 1, "%s", cmd);
	free(out);
	return n;
}

static uint64_t dynsym(const char *bin, const char *name)
{
	char cmd[512], *out = NULL;
	unsigned long a = 0;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only %s | awk '$3 == \"%s\" { print $1 }'", bin,
		 name);
	cr_assert_eq(tl_sh(cmd, &out), 0);
	cr_assert(out && sscanf(out, "%lx", &a) == 1, "%s does not export %s", bin, name);
	free(out);
	return a;
}

/* objdump sees each pusher load the callback's address. */
static void expect_loads(const char *bin, const struct plpgsql_bin *b)
{
	char pat[64];

	snprintf(pat, sizeof(pat), "lea .*# %lx ", (unsigned long)b->callback);
	for (unsigned k = 0; k < b->nexec; k++)
		cr_expect_geq(objdump_count(bin, b->exec_start[k], b->exec_end[k], pat), 1,
			      "objdump: the function at 0x%lx loads 0x%lx",
			      (unsigned long)b->exec_start[k], (unsigned long)b->callback);
}

/* Is one of b's pushers at vaddr? */
static bool pusher(const struct plpgsql_bin *b, uint64_t vaddr)
{
	for (unsigned k = 0; k < b->nexec; k++)
		if (b->exec_start[k] == vaddr)
			return true;
	return false;
}

Test(plpgsql, callback_of_the_installed_plpgsql_by_its_exports)
{
	static const char *const names[] = { "plpgsql_exec_function", "plpgsql_exec_trigger",
					     "plpgsql_exec_event_trigger" };
	int major;
	const char *bin = installed(&major);
	struct env v = open_bin(bin);
	struct plpgsql_bin b;
	struct ebprof_plpgsql_proc lay;
	char pat[64];
	uint64_t s, e;

	cr_assert(plpgsql_bin_is(v.e));
	cr_assert_eq(plpgsql_bin_find(v.sym, v.e, true, &b), 0);
	/* stripped: the pushers by their exports, the callback by their code */
	cr_expect_str_eq(b.how, "symbols and code");
	cr_assert_eq(b.nexec, 3);
	for (unsigned k = 0; k < 3; k++)
		cr_expect(pusher(&b, dynsym(bin, names[k])), "%s pushes it", names[k]);
	expect_loads(bin, &b);
	/* the callback reads err_stmt (and err_var) where the table says */
	cr_assert_eq(plpgsql_bin_layout(v.e, major, &lay), 0);
	cr_assert_eq(sym_elf_function_range(v.sym, v.e, b.callback, &s, &e), 0);
	cr_expect_eq(s, b.callback, "a function starts there");
	snprintf(pat, sizeof(pat), "0x%x(%%r", lay.err_stmt_off);
	cr_expect_geq(objdump_count(bin, s, e, pat), 1, "the callback reads err_stmt at 0x%x",
		      lay.err_stmt_off);
	if (lay.err_var_off) {
		snprintf(pat, sizeof(pat), "0x%x(%%r", lay.err_var_off);
		cr_expect_geq(objdump_count(bin, s, e, pat), 1,
			      "the callback reads err_var at 0x%x", lay.err_var_off);
	}
	cr_expect_eq(lay.span, (lay.err_var_off ? lay.err_var_off : lay.err_stmt_off) + 8);
	cr_expect_eq(plpgsql_bin_layout(v.e, 12, &lay), -ENOENT, "no table of 12, no DWARF");
	close_bin(&v);
}

/* 16+ exports its handlers only: the pushers are what they call. */
Test(plpgsql, callback_of_a_hidden_stripped_plpgsql_by_its_code_alone)
{
	const char *bin = tl_path("fixtures/plpgsql/plpgsql.so");
	struct env v = open_bin(bin);
	struct plpgsql_bin b, again;
	char cmd[512], *out = NULL;

	cr_assert(plpgsql_bin_is(v.e));
	snprintf(cmd, sizeof(cmd), "nm %s 2>&1; nm -D --defined-only %s | grep exec_", bin, bin);
	cr_assert_eq(tl_sh(cmd, &out), 1, "neither symbols nor the pushers exported: %s", out);
	free(out);
	cr_assert_eq(plpgsql_bin_find(v.sym, v.e, true, &b), 0);
	cr_expect_str_eq(b.how, "code");
	cr_expect_eq(b.nexec, 3, "the handler calls the three pushers");
	expect_loads(bin, &b);
	cr_assert_eq(plpgsql_bin_find(v.sym, v.e, false, &again), 0);
	cr_expect_eq(again.callback, b.callback);
	close_bin(&v);
}

Test(plpgsql, another_library_is_not_plpgsql)
{
	struct env v = open_bin("/usr/lib/x86_64-linux-gnu/libc.so.6");
	struct plpgsql_bin b;

	cr_expect_not(plpgsql_bin_is(v.e));
	cr_expect_eq(plpgsql_bin_find(v.sym, v.e, true, &b), -ENOENT);
	close_bin(&v);
}

/* A record of n levels: "sig" and line each. */
struct rec {
	struct ebprof_plpgsql r;
	size_t size;
};

static void rec_init(struct rec *x, uint64_t hash, uint32_t n, uint32_t flags)
{
	memset(x, 0, sizeof(*x));
	x->r.h.type = EVENT_PLPGSQL;
	x->r.hash = hash;
	x->r.n = n;
	x->r.flags = flags;
	x->size = offsetof(struct ebprof_plpgsql, level) + n * sizeof(x->r.level[0]);
}

static void rec_level(struct rec *x, uint32_t k, const char *sig, size_t len, int32_t line)
{
	memcpy(x->r.level[k].sig, sig, len);
	x->r.level[k].len = (uint32_t)len;
	x->r.level[k].line = line;
}

Test(plpgsql, chains_from_records_hostile_ones_refused_or_cleaned)
{
	struct plpgsql_chains *t;
	const struct plpgsql_chain *c;
	struct plpgsql_chains_stats st;
	struct rec x;
	char longsig[EBPROF_PLPGSQL_SIG_LEN];

	cr_assert_eq(plpgsql_chains_new(&t), 0);
	rec_init(&x, 7, 2, 0);
	rec_level(&x, 0, "billing.line_total(integer)", 27, 6);
	rec_level(&x, 1, "billing.close_month(integer)", 28, 5);
	cr_assert_eq(plpgsql_chains_add(t, &x.r, x.size, NULL), 0);
	c = plpgsql_chains_get(t, 7);
	cr_assert_not_null(c);
	cr_expect_eq(c->n, 2);
	cr_expect_not(c->cut);
	cr_expect_str_eq(c->f[0].signature, "billing.line_total(integer)");
	cr_expect_eq(c->f[0].line, 6);
	cr_expect_str_eq(c->f[1].signature, "billing.close_month(integer)");
	cr_expect_null(plpgsql_chains_get(t, 8));
	cr_expect_null(plpgsql_chains_get(t, 0));

	/* control bytes, invalid UTF-8, an unreadable signature, a
	 * negative line, a text cut at the buffer's end */
	memset(longsig, 'a', sizeof(longsig));
	rec_init(&x, 9, 4, EBPROF_PLPGSQL_CUT);
	rec_level(&x, 0, "s.f\n(\xff\xc3\xa9)", 9, -3);
	rec_level(&x, 1, "", 0, 2);
	rec_level(&x, 2, longsig, EBPROF_PLPGSQL_SIG_LEN - 1, 1);
	rec_level(&x, 3, "s.g()\0junk", 10, 1); /* len past its NUL */
	cr_assert_eq(plpgsql_chains_add(t, &x.r, x.size, NULL), 0);
	c = plpgsql_chains_get(t, 9);
	cr_assert_not_null(c);
	cr_expect(c->cut);
	cr_expect_str_eq(c->f[0].signature, "s.f?(?\xc3\xa9)");
	cr_expect_eq(c->f[0].line, 0);
	cr_expect_str_eq(c->f[1].signature, PLPGSQL_UNREADABLE);
	cr_expect_eq(strlen(c->f[2].signature), EBPROF_PLPGSQL_SIG_LEN - 1 + 3);
	cr_expect_str_eq(c->f[2].signature + EBPROF_PLPGSQL_SIG_LEN - 1, "...");
	cr_expect_str_eq(c->f[3].signature, "s.g()");

	/* malformed: refused, counted */
	rec_init(&x, 10, 0, 0);
	cr_expect_eq(plpgsql_chains_add(t, &x.r, x.size, NULL), -EINVAL, "no level");
	rec_init(&x, 10, EBPROF_PLPGSQL_DEPTH + 1, 0);
	cr_expect_eq(plpgsql_chains_add(t, &x.r, sizeof(x.r), NULL), -EINVAL, "too many");
	rec_init(&x, 10, 2, 0);
	cr_expect_eq(plpgsql_chains_add(t, &x.r, x.size - 1, NULL), -EINVAL, "short");
	cr_expect_eq(plpgsql_chains_add(t, &x.r, 8, NULL), -EINVAL, "no header");
	rec_init(&x, 10, 1, 0);
	x.r.level[0].len = EBPROF_PLPGSQL_SIG_LEN;
	cr_expect_eq(plpgsql_chains_add(t, &x.r, x.size, NULL), -EINVAL, "length past its buffer");
	cr_expect_null(plpgsql_chains_get(t, 10));
	plpgsql_chains_get_stats(t, &st);
	cr_expect_eq(st.malformed, 5);
	cr_expect_eq(st.chains, 2);

	/* sent again: replaced; aging keeps what was used since */
	rec_init(&x, 7, 1, 0);
	rec_level(&x, 0, "billing.renamed(integer)", 24, 3);
	cr_assert_eq(plpgsql_chains_add(t, &x.r, x.size, NULL), 0);
	cr_expect_str_eq(plpgsql_chains_get(t, 7)->f[0].signature, "billing.renamed(integer)");
	plpgsql_chains_age(t); /* both taken or asked for since: kept */
	cr_expect_not_null(plpgsql_chains_get(t, 7));
	plpgsql_chains_age(t); /* 7 asked for, 9 not */
	cr_expect_not_null(plpgsql_chains_get(t, 7));
	cr_expect_null(plpgsql_chains_get(t, 9));
	plpgsql_chains_get_stats(t, &st);
	cr_expect_eq(st.chains, 1);
	plpgsql_chains_free(t);
}

/* C frames: executor code at [0x1000, 0x2000). */
static const struct plpgsql_cframes fr = { 1, { 0x1000 }, { 0x2000 } };

/* Chain of n functions f0 (innermost) .., of a process with fr. */
static struct plpgsql_chain *chain(uint32_t n, bool cut)
{
	static const char *const names[] = { "f0", "f1", "f2", "f3" };
	struct plpgsql_chain *c = malloc(sizeof(*c) + n * sizeof(c->f[0]));

	cr_assert_not_null(c);
	c->fr = fr;
	c->n = n;
	c->cut = cut;
	for (uint32_t k = 0; k < n; k++)
		c->f[k] = (struct plpgsql_fn){ names[k], (int32_t)k + 10 };
	return c;
}

/* User stacks of return addresses, 'E' one in the executor, 'o' one
 * elsewhere, leaf first. */
static struct raw_sample stack(const char *shape, uint64_t *buf, uint16_t end)
{
	struct raw_sample s = { 0 };

	for (size_t i = 0; shape[i]; i++)
		buf[i] = shape[i] == 'E' ? 0x1800 : 0x5000;
	s.user = buf;
	s.nuser = (uint32_t)strlen(shape);
	s.nkernel = 1;
	s.user_end = end;
	return s;
}

static void expect_at(const struct raw_plpgsql *out, uint32_t n, const uint32_t *at)
{
	for (uint32_t k = 0; k < n; k++) {
		char name[4];

		snprintf(name, sizeof(name), "f%u", k);
		cr_expect_str_eq(out[k].signature, name);
		cr_expect_eq(out[k].line, (int32_t)k + 10);
		cr_expect_eq(out[k].at, at[k], "f%u at %u, not %u", k, out[k].at, at[k]);
	}
}

Test(plpgsql, functions_placed_at_their_executor_frames)
{
	uint64_t buf[16];
	struct raw_plpgsql out[4];
	struct plpgsql_chain *c1 = chain(1, false), *c2 = chain(2, false), *c2cut = chain(2, true),
			     *c3 = chain(3, false);
	struct raw_sample s;

	/* as many executor frames as functions: one each */
	s = stack("ooEooEo", buf, UNWIND_END_OK);
	plpgsql_place(c2, &s, out);
	expect_at(out, 2, (uint32_t[]){ 2, 5 });
	/* one more executor frame, innermost: it has not pushed its entry
	 * yet (or popped it) and gets none */
	s = stack("oEoEooEo", buf, UNWIND_END_OK);
	plpgsql_place(c2, &s, out);
	expect_at(out, 2, (uint32_t[]){ 3, 6 });
	/* the chain cut (too deep): its functions are the innermost */
	plpgsql_place(c2cut, &s, out);
	expect_at(out, 2, (uint32_t[]){ 1, 3 });
	/* the stack cut: from the innermost, the outer function after the
	 * user frames */
	s = stack("oEoo", buf, UNWIND_END_DEPTH);
	plpgsql_place(c2, &s, out);
	expect_at(out, 2, (uint32_t[]){ 1, 4 });
	/* fewer executor frames than functions in a whole stack: innermost */
	s = stack("oEoEo", buf, UNWIND_END_OK);
	plpgsql_place(c3, &s, out);
	expect_at(out, 3, (uint32_t[]){ 1, 3, 5 });
	/* no C frames known (a process without them): all after */
	c2->fr.n = 0;
	plpgsql_place(c2, &s, out);
	expect_at(out, 2, (uint32_t[]){ 5, 5 });
	/* a return address at the range's end is a call from inside it; an
	 * interrupted instruction (the leaf in user mode) at its end is not */
	s = stack("Eo", buf, UNWIND_END_OK);
	buf[0] = 0x2000;
	buf[1] = 0x2000;
	s.nkernel = 0;
	plpgsql_place(c1, &s, out);
	expect_at(out, 1, (uint32_t[]){ 1 });
	free(c1);
	free(c2);
	free(c2cut);
	free(c3);
}
