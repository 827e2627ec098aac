/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A check of CFA programs (DWARF call frame instructions, .eh_frame and
 * .debug_frame) before libdw interprets them: libdw sizes a frame's
 * register array by the highest register an instruction names, so a
 * planted FDE naming register 100 000 000 makes one dwarf_cfi_addrframe()
 * allocate and clear 2 GiB (found by fuzz_unwind_table). Used by
 * unwind_table.c; stateless.
 */
#ifndef EBPROF_CFI_CHECK_H
#define EBPROF_CFI_CHECK_H

#include <stdbool.h>
#include <stdint.h>

/* Registers a program may name: x86-64's DWARF numbers end below 150. */
#define CFI_MAX_REG 256

/*
 * Whether the instructions in [p, end) decode to the end, use only the
 * opcodes of DWARF 5 and GNU's (DW_CFA_set_loc excepted: its operand's
 * size is the FDE's pointer encoding; compilers do not emit it), and name
 * registers below CFI_MAX_REG only.
 */
bool cfi_program_ok(const uint8_t *p, const uint8_t *end);

/* The same for an FDE's instructions, from p (past its address and range)
 * to end; z: its CIE's augmentation starts with 'z', so a ULEB128 length
 * and that many bytes of augmentation data come first. */
bool cfi_fde_program_ok(const uint8_t *p, const uint8_t *end, bool z);

#endif /* EBPROF_CFI_CHECK_H */
