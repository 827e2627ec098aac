/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading .eh_frame's own encodings (the DW_EH_PE_* pointers of FDEs and
 * of .eh_frame_hdr) and finding the CFI sections, shared by the
 * unwind-table compiler (unwind_table.c) and the function index
 * (fde_index.c). Entries themselves are split by
 * libdw's dwarf_next_cfi(); what is read here is bounds-checked against
 * the end of the bytes it is given: the input is a binary from anywhere.
 * x86-64 only (little endian).
 */
#ifndef EBPROF_SYM_EH_FRAME_H
#define EBPROF_SYM_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <gelf.h>

/* No pointer encoding known (an unknown augmentation, say). */
#define EHF_ENC_BAD 0xff

/*
 * A pointer of encoding enc at p, p < end; addr is the address p is
 * loaded at (for pc-relative pointers). Fills *out and its size in
 * bytes *len; false when it does not fit before end or its encoding is
 * none an FDE or .eh_frame_hdr uses (absolute or pc-relative, 2, 4 or 8
 * bytes).
 */
bool ehf_read_encoded(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t addr,
		      uint64_t *out, size_t *len);

/* The pointer encoding of the FDEs of a CIE (its 'R' augmentation;
 * absolute when it has none, EHF_ENC_BAD when it cannot be told). eh:
 * the CIE is of .eh_frame (not .debug_frame). */
uint8_t ehf_fde_encoding(const Dwarf_CIE *cie, bool eh);

/*
 * The address range [*start, *end) of the FDE at offset off of .eh_frame
 * (data, loaded at address sh_addr; ident: the ELF's e_ident). 0;
 * -ENOENT when there is no well-formed FDE there, its CIE is not one, its
 * encoding is unknown or its range is empty or wraps.
 */
int ehf_fde_range(const unsigned char *ident, Elf_Data *data, uint64_t sh_addr, Dwarf_Off off,
		  uint64_t *start, uint64_t *end);

/* The section of that name with data in the file (not SHT_NOBITS), its
 * header in *sh; NULL when there is none. */
Elf_Scn *ehf_section(Elf *elf, const char *name, GElf_Shdr *sh);

#endif /* EBPROF_SYM_EH_FRAME_H */
