// SPDX-License-Identifier: BSD-2-Clause
/*
 * .eh_frame's pointer encodings (eh_frame.h): what an FDE's address and
 * range, a CIE's augmentation and .eh_frame_hdr's fields are written in.
 */
#include <errno.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "eh_frame.h"

bool ehf_read_encoded(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t addr,
		      uint64_t *out, size_t *len)
{
	uint64_t v;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		*len = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		*len = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		*len = 2;
		break;
	default:
		return false;
	}
	if (p > end || end - p < (ptrdiff_t)*len)
		return false;
	v = 0;
	memcpy(&v, p, *len); /* little endian: x86-64 only */
	if ((enc & 0x0f) == DW_EH_PE_sdata4)
		v = (uint64_t)(int64_t)(int32_t)v;
	else if ((enc & 0x0f) == DW_EH_PE_sdata2)
		v = (uint64_t)(int64_t)(int16_t)v;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += addr;
		break;
	default:
		return false;
	}
	*out = v;
	return true;
}

uint8_t ehf_fde_encoding(const Dwarf_CIE *cie, bool eh)
{
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d + cie->augmentation_data_size;
	size_t len;
	uint64_t v;

	if (!eh || !cie->augmentation || cie->augmentation[0] != 'z')
		return DW_EH_PE_absptr;
	for (const char *a = cie->augmentation + 1; *a && d < end; a++) {
		switch (*a) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P':
			if (!ehf_read_encoded(d + 1, end, *d & 0x7f, 0, &v, &len))
				return EHF_ENC_BAD;
			d += 1 + len;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return EHF_ENC_BAD;
		}
	}
	return DW_EH_PE_absptr;
}

int ehf_fde_range(const unsigned char *ident, Elf_Data *data, uint64_t sh_addr, Dwarf_Off off,
		  uint64_t *start, uint64_t *end)
{
	const uint8_t *base = data->d_buf, *p;
	Dwarf_CFI_Entry e, c;
	Dwarf_Off next;
	uint64_t range;
	size_t len;
	uint8_t enc;

	if (off >= data->d_size || dwarf_next_cfi(ident, data, true, off, &next, &e) ||
	    dwarf_cfi_cie_p(&e))
		return -ENOENT;
	if (dwarf_next_cfi(ident, data, true, e.fde.CIE_pointer, &next, &c) || !dwarf_cfi_cie_p(&c))
		return -ENOENT;
	enc = ehf_fde_encoding(&c.cie, true);
	p = e.fde.start;
	if (enc == EHF_ENC_BAD || p < base || p > base + data->d_size ||
	    !ehf_read_encoded(p, e.fde.end, enc, sh_addr + (uint64_t)(p - base), start, &len) ||
	    !ehf_read_encoded(p + len, e.fde.end, enc & 0x0f, 0, &range, &len))
		return -ENOENT;
	if (!range || *start + range < *start)
		return -ENOENT;
	*end = *start + range;
	return 0;
}

Elf_Scn *ehf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}
