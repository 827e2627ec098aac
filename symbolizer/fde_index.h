/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A binary's function ranges from its .eh_frame, for naming code no symbol
 * names (sym_elf_function_start(), symbolizer.h): every FDE covers one
 * function, so the FDE that holds an address says where its function
 * starts. One sorted array of FDE starts per binary, searched by
 * bisection: .eh_frame_hdr's search table when it is well formed (the
 * linker sorted it), else every FDE of .eh_frame, read and sorted. The FDE
 * a search finds is read again for its end, so an address in no FDE (a
 * gap between functions, code without CFI) is named by nothing. Both
 * sections are hostile input: bounds, counts and order are checked.
 */
#ifndef EBPROF_SYM_FDE_INDEX_H
#define EBPROF_SYM_FDE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

struct fde_index;

/*
 * The index of elf, which must outlive it (lookups read its .eh_frame).
 * 0 and *out (fdex_free()); -ENODATA: no .eh_frame or not one FDE in it;
 * -ENOTSUP: not a little-endian ELF; -E2BIG: more than
 * EBPROF_MAX_TABLE_ROWS FDEs, or functions spread over more than 4 GiB;
 * -ENOMEM.
 */
int fdex_build(Elf *elf, struct fde_index **out);
void fdex_free(struct fde_index *x);

/* The FDE that covers vaddr (an ELF virtual address): 0 and its
 * [*start, *end); -ENOENT when none does. */
int fdex_find(const struct fde_index *x, uint64_t vaddr, uint64_t *start, uint64_t *end);

/* Its heap bytes (0 for NULL), its number of FDEs, and where they came
 * from: "eh_frame_hdr" or "eh_frame" (a static string). */
size_t fdex_bytes(const struct fde_index *x);
size_t fdex_count(const struct fde_index *x);
const char *fdex_source(const struct fde_index *x);

#endif /* EBPROF_SYM_FDE_INDEX_H */
