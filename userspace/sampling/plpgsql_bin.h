/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the BPF program needs to find PL/pgSQL frames (bpf/plpgsql.bpf.h),
 * from a plpgsql.so and PostgreSQL's version: where its execution error
 * callback is, which functions push it (plpgsql_exec_function,
 * plpgsql_exec_trigger, plpgsql_exec_event_trigger: the C frames PL/pgSQL
 * frames are placed at), and the offsets of what the walk reads in the
 * structs of that version.
 *
 * The callback is static: named by .symtab or a debug file where the
 * binary has one, else found in the code. The functions that push it
 * store its address (a rip-relative lea), and it is the one function
 * address all of them load: from 13 to 15 they are exported, from 16 on
 * (built with hidden visibility) they are the functions the exported
 * plpgsql_call_handler and plpgsql_inline_handler call. x86-64 only.
 */
#ifndef EBPROF_PLPGSQL_BIN_H
#define EBPROF_PLPGSQL_BIN_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"

#define PLPGSQL_MAX_EXEC 3

struct plpgsql_bin {
	uint64_t callback; /* ELF vaddr of plpgsql_exec_error_callback */
	/* [start, end) ELF vaddrs of the functions that push it */
	uint64_t exec_start[PLPGSQL_MAX_EXEC], exec_end[PLPGSQL_MAX_EXEC];
	unsigned nexec;
	const char *how; /* "symbols" or "code" (static) */
};

/* Where the C functions that push the callback are in a process:
 * [start, end) each. */
struct plpgsql_cframes {
	unsigned n;
	uint64_t start[PLPGSQL_MAX_EXEC], end[PLPGSQL_MAX_EXEC];
};

/* Is elf a plpgsql.so (it exports plpgsql_call_handler)? */
bool plpgsql_bin_is(struct sym_elf *elf);

/*
 * Find the callback and the functions that push it in a pinned plpgsql.so.
 * names: use the names symbols give (false: the code alone, as in a
 * binary stripped of them; for tests). 0; -ENOENT when not found;
 * -EINVAL when the code names more than one candidate; -ENOTSUP on
 * another architecture than x86-64.
 */
int plpgsql_bin_find(struct symbolizer *sym, struct sym_elf *elf, bool names,
		     struct plpgsql_bin *out);

/* The offsets of PostgreSQL's structs the walk reads, x86-64. */
struct plpgsql_layout {
	int major;
	uint16_t func;	      /* offsetof(PLpgSQL_execstate, func) */
	uint16_t err_stmt;    /* ... err_stmt */
	uint16_t err_var;     /* ... err_var, 0: none (before 15) */
	uint16_t signature;   /* offsetof(PLpgSQL_function, fn_signature) */
	uint16_t stmt_lineno; /* offsetof(PLpgSQL_stmt, lineno) */
	uint16_t var_lineno;  /* offsetof(PLpgSQL_variable, lineno) */
};

/* The layout of a major version (13..17), or NULL. */
const struct plpgsql_layout *plpgsql_layout_for(int major);

/* The layout plpgsql.so elf of PostgreSQL major has, into out (callback
 * 0): DWARF's offsets where it has them, the version's otherwise. 0;
 * -ENOENT: neither; -EINVAL: offsets the walk cannot read (not 8-byte
 * aligned, or beyond EBPROF_PLPGSQL_SPAN). */
int plpgsql_bin_layout(struct sym_elf *elf, int major, struct ebprof_plpgsql_proc *out);

#endif /* EBPROF_PLPGSQL_BIN_H */
