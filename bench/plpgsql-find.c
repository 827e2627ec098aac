// SPDX-License-Identifier: BSD-2-Clause
/*
 * What ebprof finds of PL/pgSQL in a plpgsql.so (sampling/plpgsql_bin.h),
 * for checking a release by hand (bench/results/plpgsql-versions-*.md):
 *   plpgsql-find PLPGSQL_SO MAJOR
 * prints the callback and its pushers by symbols and by the code alone,
 * and the layout of MAJOR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/plpgsql_bin.h"

static void show(struct symbolizer *sym, struct sym_elf *e, bool names)
{
	struct plpgsql_bin b;
	int err = plpgsql_bin_find(sym, e, names, &b);

	if (err) {
		printf("%s: %s\n", names ? "symbols" : "code alone", strerror(-err));
		return;
	}
	printf("%s: callback 0x%lx (by %s), pushers", names ? "symbols" : "code alone",
	       (unsigned long)b.callback, b.how);
	for (unsigned k = 0; k < b.nexec; k++)
		printf(" [0x%lx, 0x%lx)", (unsigned long)b.exec_start[k],
		       (unsigned long)b.exec_end[k]);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct sym_binary bin = { 0 };
	struct ebprof_plpgsql_proc l;
	struct symbolizer *sym;
	struct sym_elf *e;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PLPGSQL_SO MAJOR\n", argv[0]);
		return 2;
	}
	bin.path = argv[1];
	if (sym_new(&(struct sym_opts){ 0 }, &sym) || sym_elf_get(sym, &bin, &e)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	printf("%s: plpgsql.so: %s, names from %s\n", argv[1], plpgsql_bin_is(e) ? "yes" : "no",
	       sym_elf_debug_source(e));
	show(sym, e, true);
	show(sym, e, false);
	if (!plpgsql_bin_layout(e, atoi(argv[2]), &l))
		printf("layout of %s: span %u, func %u, err_stmt %u, err_var %u, fn_signature %u, "
		       "stmt lineno %u, variable lineno %u\n",
		       argv[2], l.span, l.func_off, l.err_stmt_off, l.err_var_off, l.signature_off,
		       l.stmt_lineno_off, l.var_lineno_off);
	else
		printf("no layout of %s\n", argv[2]);
	sym_elf_put(sym, e);
	sym_free(sym);
	return 0;
}
