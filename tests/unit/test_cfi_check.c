// SPDX-License-Identifier: BSD-2-Clause
/*
 * cfi_program_ok(): the CFA programs compilers emit pass; what would make
 * libdw allocate by a planted register number, or read past the program,
 * does not. The fuzzer's finding (fuzz/regressions/unwind_table) is
 * replayed by tests/fuzz/test_fuzz.sh.
 */
#include <criterion/criterion.h>
#include <dwarf.h>

#include "cfi_check.h"

#define OK(...)                                                                                    \
	do {                                                                                       \
		const uint8_t prog[] = { __VA_ARGS__ };                                            \
		cr_expect(cfi_program_ok(prog, prog + sizeof(prog)), "%s", #__VA_ARGS__);          \
	} while (0)
#define BAD(...)                                                                                   \
	do {                                                                                       \
		const uint8_t prog[] = { __VA_ARGS__ };                                            \
		cr_expect_not(cfi_program_ok(prog, prog + sizeof(prog)), "%s", #__VA_ARGS__);      \
	} while (0)

Test(cfi_check, what_compilers_emit)
{
	/* gcc's CIE for x86-64: def_cfa rsp+8, offset ra at cfa-8 */
	OK(DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1);
	/* a prologue: push rbp; mov rsp,rbp ... leave */
	OK(DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
	   DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6, DW_CFA_advance_loc1, 200,
	   DW_CFA_def_cfa, 7, 8, DW_CFA_nop, DW_CFA_nop);
	/* remember/restore around a tail, args size, advance_loc2/4 */
	OK(DW_CFA_remember_state, DW_CFA_advance_loc2, 0x10, 0x01, DW_CFA_restore_state,
	   DW_CFA_GNU_args_size, 16, DW_CFA_advance_loc4, 1, 0, 0, 0);
	/* glibc's PLT: a CFA expression */
	OK(DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc | 6, DW_CFA_def_cfa_expression, 11, 0x77,
	   8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22);
	/* signal frames and register rules of every form */
	OK(DW_CFA_expression, 16, 2, 0x77, 0x08, DW_CFA_val_offset, 3, 4, DW_CFA_register, 3, 4,
	   DW_CFA_undefined, 16, DW_CFA_same_value, 6, DW_CFA_restore_extended, 6,
	   DW_CFA_offset_extended_sf, 3, 0x7f, DW_CFA_def_cfa_sf, 7, 0x7e, DW_CFA_val_expression, 5,
	   1, 0x30);
	OK(); /* an empty program (a CIE's may be) */
}

Test(cfi_check, register_numbers_bounded)
{
	/* register 100 000 000 (ULEB128 80 c2 d7 2f): libdw would size its
	 * frame by it, 2 GiB cleared */
	BAD(DW_CFA_offset_extended, 0x80, 0xc2, 0xd7, 0x2f, 1);
	BAD(DW_CFA_def_cfa, 0x80, 0x02, 8); /* 256 */
	OK(DW_CFA_def_cfa, 0xff, 0x01, 8);  /* 255 */
	BAD(DW_CFA_register, 3, 0x80, 0x80, 0x04);
	BAD(DW_CFA_expression, 0x90, 0x4e, 0);
	BAD(DW_CFA_val_expression, 0x90, 0x4e, 0);
	BAD(DW_CFA_restore_extended, 0xe8, 0x07);
	BAD(DW_CFA_undefined, 0xe8, 0x07);
	BAD(DW_CFA_same_value, 0xe8, 0x07);
	BAD(DW_CFA_def_cfa_register, 0xe8, 0x07);
	BAD(DW_CFA_val_offset_sf, 0xe8, 0x07, 1);
	BAD(DW_CFA_GNU_negative_offset_extended, 0xe8, 0x07, 1);
}

Test(cfi_check, truncated_and_unknown)
{
	BAD(DW_CFA_def_cfa, 7);			 /* an operand missing */
	BAD(DW_CFA_def_cfa_offset, 0x80);	 /* a ULEB128 cut */
	BAD(DW_CFA_advance_loc2, 1);		 /* 1 byte of 2 */
	BAD(DW_CFA_advance_loc4, 1, 2, 3);	 /* 3 of 4 */
	BAD(DW_CFA_def_cfa_expression, 5, 1, 2); /* a block longer than the rest */
	BAD(DW_CFA_expression, 16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	BAD(DW_CFA_def_cfa_offset, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x01); /* beyond 64 bits */
	BAD(DW_CFA_set_loc, 0, 0, 0, 0, 0, 0, 0, 0);
	BAD(0x1c); /* DW_CFA_lo_user */
	BAD(0x3f); /* DW_CFA_hi_user */
	cr_expect_not(cfi_program_ok(NULL, NULL));
}
