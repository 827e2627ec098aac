// SPDX-License-Identifier: BSD-2-Clause
/*
 * PL/pgSQL's callback, its pushers and its structs' layouts
 * (plpgsql_bin.h): from symbols, else from the code; offsets from DWARF,
 * else from the table of versions below.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plpgsql_bin.h"

/* A function scanned for calls and loads, at most (plpgsql_exec_function
 * is 1.3-1.4 KiB in 13..17, the handlers under 1 KiB). */
#define SCAN_MAX 16384
/* Call targets of the handlers looked at, at most. */
#define MAX_CANDIDATES 32

/*
 * The structs the walk reads, on x86-64 (LP64), by major version. From
 * each release's src/pl/plpgsql/src/plpgsql.h (as vendored, unchanged, in
 * libpg_query's 13-latest .. 17-latest branches), laid out by the C rules
 * (tests/unit/test_plpgsql.c lays them out again); and as each release's
 * plpgsql_exec_error_callback reads them (13.23, 14.23, 16.14, 17.10 from
 * their .symtab, Debian's 15.18 from the code): err_stmt at 0xd0 (13),
 * 0xd8 (14, 15; 14 added procedure_resowner), 0xd0 (16, 17: 16 dropped
 * cast_hash_context); err_var, new in 15, right after it. func and
 * PLpgSQL_function's fn_signature are first in every version;
 * PLpgSQL_stmt's lineno follows its cmd_type, PLpgSQL_variable's its
 * dtype, dno and refname. 18 puts a CachedFunction before fn_signature:
 * not in the table.
 */
static const struct plpgsql_layout layouts[] = {
	{ 13, 0, 208, 0, 0, 4, 16 },   { 14, 0, 216, 0, 0, 4, 16 },   { 15, 0, 216, 224, 0, 4, 16 },
	{ 16, 0, 208, 216, 0, 4, 16 }, { 17, 0, 208, 216, 0, 4, 16 },
};

const struct plpgsql_layout *plpgsql_layout_for(int major)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major)
			return &layouts[i];
	return NULL;
}

bool plpgsql_bin_is(struct sym_elf *elf)
{
	uint64_t a;

	return !sym_elf_symbol(elf, "plpgsql_call_handler", &a);
}

static const char *const exec_names[PLPGSQL_MAX_EXEC] = {
	"plpgsql_exec_function",
	"plpgsql_exec_trigger",
	"plpgsql_exec_event_trigger",
};

/* The range of the function that starts at vaddr (its FDE); false when
 * no function starts there. */
static bool function_at(struct symbolizer *sym, struct sym_elf *elf, uint64_t vaddr, uint64_t *end)
{
	uint64_t start;

	return !sym_elf_function_range(sym, elf, vaddr, &start, end) && start == vaddr &&
	       *end > vaddr;
}

static int32_t le32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/*
 * The function addresses the code of [start, end) refers to, into out (at
 * most max, no repeats): `call rel32` targets (calls) or `lea
 * disp32(%rip), %reg` sources (loads). Bytes are matched, not decoded:
 * a match inside another instruction names an address that is then
 * rarely a function's first byte, and callers look for what several
 * functions have in common. Returns how many.
 */
static size_t code_refs(struct symbolizer *sym, struct sym_elf *elf, uint64_t start, uint64_t end,
			bool calls, uint64_t *out, size_t max)
{
	size_t len = end - start > SCAN_MAX ? SCAN_MAX : end - start, n = 0;
	unsigned char *code = end > start ? malloc(len) : NULL;

	if (!code || sym_elf_read(elf, start, code, len)) {
		free(code);
		return 0;
	}
	for (size_t i = 0; i + (calls ? 5 : 7) <= len && n < max; i++) {
		uint64_t to, fend;
		bool dup = false;

		if (calls && code[i] == 0xe8)
			to = start + i + 5 + (int64_t)le32(code + i + 1);
		else if (!calls && (code[i] == 0x48 || code[i] == 0x4c) && code[i + 1] == 0x8d &&
			 (code[i + 2] & 0xc7) == 0x05)
			to = start + i + 7 + (int64_t)le32(code + i + 3);
		else
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = out[k] == to;
		if (!dup && to != start && function_at(sym, elf, to, &fend))
			out[n++] = to;
	}
	free(code);
	return n;
}

/* The functions that may push the callback: those symbols name, else
 * those the handlers call. Their number. */
static size_t candidates(struct symbolizer *sym, struct sym_elf *elf, bool names, uint64_t *out,
			 bool *named)
{
	static const char *const handlers[] = { "plpgsql_call_handler", "plpgsql_inline_handler" };
	size_t n = 0;

	*named = false;
	for (size_t i = 0; names && i < PLPGSQL_MAX_EXEC; i++)
		if (!sym_elf_symbol(elf, exec_names[i], &out[n]))
			n++;
	if (n) {
		*named = true;
		return n;
	}
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		uint64_t h, hend, calls[MAX_CANDIDATES];
		size_t nc;

		if (sym_elf_symbol(elf, handlers[i], &h) || !function_at(sym, elf, h, &hend))
			continue;
		nc = code_refs(sym, elf, h, hend, true, calls, MAX_CANDIDATES);
		for (size_t k = 0; k < nc && n < MAX_CANDIDATES; k++) {
			bool dup = false;

			for (size_t j = 0; j < n && !dup; j++)
				dup = out[j] == calls[k];
			if (!dup)
				out[n++] = calls[k];
		}
	}
	return n;
}

int plpgsql_bin_find(struct symbolizer *sym, struct sym_elf *elf, bool names,
		     struct plpgsql_bin *out)
{
	uint64_t cand[MAX_CANDIDATES], loads[MAX_CANDIDATES][MAX_CANDIDATES];
	size_t ncand, nloads[MAX_CANDIDATES], best_count = 0;
	uint64_t best = 0;
	bool named, tie = false;

#if !defined(__x86_64__)
	return -ENOTSUP;
#endif
	memset(out, 0, sizeof(*out));
	ncand = candidates(sym, elf, names, cand, &named);
	for (size_t i = 0; i < ncand; i++) {
		uint64_t end;

		nloads[i] =
			function_at(sym, elf, cand[i], &end)
				? code_refs(sym, elf, cand[i], end, false, loads[i], MAX_CANDIDATES)
				: 0;
	}
	if (names && !sym_elf_symbol(elf, "plpgsql_exec_error_callback", &best)) {
		out->how = "symbols";
	} else {
		/* the function address most of them load, at least two */
		for (size_t i = 0; i < ncand; i++) {
			for (size_t k = 0; k < nloads[i]; k++) {
				size_t count = 0;

				for (size_t j = 0; j < ncand; j++)
					for (size_t m = 0; m < nloads[j]; m++)
						count += loads[j][m] == loads[i][k];
				if (count > best_count) {
					best_count = count;
					best = loads[i][k];
					tie = false;
				} else if (count == best_count && loads[i][k] != best) {
					tie = true;
				}
			}
		}
		if (best_count < 2)
			return -ENOENT;
		if (tie)
			return -EINVAL;
		out->how = named ? "symbols and code" : "code";
	}
	out->callback = best;
	/* the C frames: the named ones, else those that load it */
	for (size_t i = 0; i < ncand && out->nexec < PLPGSQL_MAX_EXEC; i++) {
		bool loads_it = false;
		uint64_t end;

		for (size_t k = 0; k < nloads[i]; k++)
			loads_it |= loads[i][k] == best;
		if ((named || loads_it) && function_at(sym, elf, cand[i], &end)) {
			out->exec_start[out->nexec] = cand[i];
			out->exec_end[out->nexec++] = end;
		}
	}
	return out->nexec ? 0 : -ENOENT;
}

/* DWARF's offset of a member, when it has one below the span. */
static bool dwarf_off(struct sym_elf *elf, const char *type, const char *member, uint16_t *out)
{
	uint64_t off;

	if (sym_elf_member_offset(elf, type, member, &off) || off >= EBPROF_PLPGSQL_SPAN)
		return false;
	*out = (uint16_t)off;
	return true;
}

int plpgsql_bin_layout(struct sym_elf *elf, int major, struct ebprof_plpgsql_proc *out)
{
	const struct plpgsql_layout *l = plpgsql_layout_for(major);
	struct plpgsql_layout d = { 0 };
	uint16_t last;

	memset(out, 0, sizeof(*out));
	if (dwarf_off(elf, "PLpgSQL_execstate", "err_stmt", &d.err_stmt) &&
	    dwarf_off(elf, "PLpgSQL_execstate", "func", &d.func) &&
	    dwarf_off(elf, "PLpgSQL_function", "fn_signature", &d.signature) &&
	    dwarf_off(elf, "PLpgSQL_stmt", "lineno", &d.stmt_lineno)) {
		if (!dwarf_off(elf, "PLpgSQL_execstate", "err_var", &d.err_var) ||
		    !dwarf_off(elf, "PLpgSQL_variable", "lineno", &d.var_lineno))
			d.err_var = 0;
		l = &d;
	}
	if (!l)
		return -ENOENT;
	/* the walk reads 8-byte pointers, at 8-byte aligned offsets of its span */
	if (l->func % 8 || l->err_stmt % 8 || l->err_var % 8 || l->signature % 8 ||
	    l->func > EBPROF_PLPGSQL_SPAN - 8 || l->err_stmt > EBPROF_PLPGSQL_SPAN - 8 ||
	    l->err_var > EBPROF_PLPGSQL_SPAN - 8)
		return -EINVAL;
	last = l->func > l->err_stmt ? l->func : l->err_stmt;
	last = l->err_var > last ? l->err_var : last;
	out->span = last + 8;
	out->func_off = l->func;
	out->err_stmt_off = l->err_stmt;
	out->err_var_off = l->err_var;
	out->signature_off = l->signature;
	out->stmt_lineno_off = l->stmt_lineno;
	out->var_lineno_off = l->var_lineno;
	return 0;
}
