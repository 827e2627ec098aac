// SPDX-License-Identifier: BSD-2-Clause
/* CFA programs checked before libdw runs them (cfi_check.h). */
#include <stddef.h>

#include <dwarf.h>

#include "cfi_check.h"

/* An unsigned LEB128 at *p, advancing it; false past end or beyond 64
 * bits. */
static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift >= 64)
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

static bool skip(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	if ((uint64_t)(end - *p) < n)
		return false;
	*p += n;
	return true;
}

static bool reg(const uint8_t **p, const uint8_t *end)
{
	uint64_t r;

	return uleb(p, end, &r) && r < CFI_MAX_REG;
}

/* A ULEB128 length and that many bytes (a DWARF expression). */
static bool block(const uint8_t **p, const uint8_t *end)
{
	uint64_t n;

	return uleb(p, end, &n) && skip(p, end, n);
}

/* One instruction's operands, after its opcode op. */
static bool operands(uint8_t op, const uint8_t **p, const uint8_t *end)
{
	uint64_t v;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
	case DW_CFA_restore: /* register in the low 6 bits: below 64 */
		return true;
	case DW_CFA_offset:
		return uleb(p, end, &v);
	}
	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
	case DW_CFA_GNU_window_save:
		return true;
	case DW_CFA_advance_loc1:
		return skip(p, end, 1);
	case DW_CFA_advance_loc2:
		return skip(p, end, 2);
	case DW_CFA_advance_loc4:
		return skip(p, end, 4);
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
	case DW_CFA_GNU_args_size:
		return uleb(p, end, &v); /* an SLEB128 has the same length */
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_def_cfa_register:
		return reg(p, end);
	case DW_CFA_offset_extended:
	case DW_CFA_def_cfa:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
	case DW_CFA_GNU_negative_offset_extended:
		return reg(p, end) && uleb(p, end, &v);
	case DW_CFA_register:
		return reg(p, end) && reg(p, end);
	case DW_CFA_def_cfa_expression:
		return block(p, end);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		return reg(p, end) && block(p, end);
	default: /* DW_CFA_set_loc, and what DWARF does not define */
		return false;
	}
}

bool cfi_program_ok(const uint8_t *p, const uint8_t *end)
{
	if (!p || end < p)
		return false;
	while (p < end) {
		uint8_t op = *p++;

		if (!operands(op, &p, end))
			return false;
	}
	return true;
}

bool cfi_fde_program_ok(const uint8_t *p, const uint8_t *end, bool z)
{
	if (!p || end < p)
		return false;
	if (z && !block(&p, end)) /* the augmentation data, skipped */
		return false;
	return cfi_program_ok(p, end);
}
