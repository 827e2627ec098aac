// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a profiler reads of a binary besides its symbols and lines
 * (symbolizer.h, "Data"): the address of a global variable from the
 * symbol table, the offset of a structure member from DWARF, a version
 * string from read-only data, the bytes of its code. Every answer comes from the binary the
 * symbolizer has opened (pinned), so it is one lookup per binary, shared by every process that maps
 * it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "dwarf_resolve.h"
#include "elf_binary.h"
#include "sym_cache.h"

#define MAX_CUS 100000 /* a bound on hostile DWARF */

static int elf_symbol_in(struct sym_elf *elf, const char *name, uint64_t *vaddr)
{
	uint64_t bias;
	Dwfl_Module *mod = elf ? symdw_module(elf->dw, &bias) : NULL;
	int n = mod ? dwfl_module_getsymtab(mod) : -1;

	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		const char *sname = dwfl_module_getsym_info(mod, i, &s, &addr, NULL, NULL, NULL);

		if (!sname || strcmp(sname, name) || s.st_shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(s.st_info) != STT_OBJECT && GELF_ST_TYPE(s.st_info) != STT_TLS &&
		     GELF_ST_TYPE(s.st_info) != STT_FUNC))
			continue;
		*vaddr = addr - bias;
		return 0;
	}
	return -ENOENT;
}

int sym_elf_offset_vaddr(const struct sym_elf *elf, uint64_t file_offset, uint64_t *vaddr)
{
	return elf ? elfbin_vaddr(&elf->id, file_offset, vaddr) : -EINVAL;
}

/* The structure a DIE names, through typedefs; NULL when it is none. */
static bool structure_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute at;

	*out = *die;
	for (int hops = 0; hops < 8; hops++) {
		if (dwarf_tag(out) == DW_TAG_structure_type)
			return !dwarf_hasattr(out, DW_AT_declaration);
		if (dwarf_tag(out) != DW_TAG_typedef ||
		    !dwarf_formref_die(dwarf_attr(out, DW_AT_type, &at), out))
			return false;
	}
	return false;
}

static int member_in(Dwarf_Die *st, const char *member, uint64_t *off)
{
	Dwarf_Die child;
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (dwarf_child(st, &child))
		return -ENOENT;
	do {
		const char *n = dwarf_diename(&child);

		if (dwarf_tag(&child) != DW_TAG_member || !n || strcmp(n, member))
			continue;
		if (!dwarf_attr(&child, DW_AT_data_member_location, &at) ||
		    dwarf_formudata(&at, &w))
			return -ENOENT; /* a location expression: not for us */
		*off = w;
		return 0;
	} while (!dwarf_siblingof(&child, &child));
	return -ENOENT;
}

static int elf_member_offset_in(struct sym_elf *elf, const char *type, const char *member,
				uint64_t *off)
{
	uint64_t bias;
	Dwfl_Module *mod = elf ? symdw_module(elf->dw, &bias) : NULL;
	Dwarf_Addr dbias;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &dbias) : NULL;
	Dwarf_Off cu = 0, next;
	size_t hsize;
	int ncu = 0;

	if (!dw)
		return -ENODATA;
	while (ncu++ < MAX_CUS && !dwarf_nextcu(dw, cu, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cudie, die, st;

		if (dwarf_offdie(dw, cu + hsize, &cudie) && !dwarf_child(&cudie, &die)) {
			do {
				const char *n = dwarf_diename(&die);

				if (n && !strcmp(n, type) && structure_of(&die, &st))
					return member_in(&st, member, off);
			} while (!dwarf_siblingof(&die, &die));
		}
		cu = next;
	}
	return -ENOENT;
}

static int elf_read_in(struct sym_elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t bias;
	Dwfl_Module *mod = elf ? symdw_module(elf->dw, &bias) : NULL;
	GElf_Addr b;
	Elf *e = mod ? dwfl_module_getelf(mod, &b) : NULL;
	Elf_Scn *scn = NULL;

	if (!e)
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr > sh.sh_size || len > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return -ENOENT;
		memcpy(buf, (const char *)d->d_buf + (vaddr - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}

static int elf_find_string_in(struct sym_elf *elf, const char *prefix, char *out, size_t len)
{
	uint64_t bias;
	Dwfl_Module *mod = elf ? symdw_module(elf->dw, &bias) : NULL;
	GElf_Addr b;
	Elf *e = mod ? dwfl_module_getelf(mod, &b) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx, plen = strlen(prefix);

	if (!e || elf_getshdrstrndx(e, &shstrndx) || !len)
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const char *p, *end;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(name, ".rodata") ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		p = d->d_buf;
		end = p + d->d_size;
		while ((p = memmem(p, (size_t)(end - p), prefix, plen))) {
			size_t n = 0;

			/* the whole string: from a NUL (or the start) to a NUL */
			if (p == (const char *)d->d_buf || p[-1] == '\0') {
				while (p + n < end && p[n] && n + 1 < len)
					n++;
				memcpy(out, p, n);
				out[n] = '\0';
				return 0;
			}
			p++;
		}
	}
	return -ENOENT;
}

/* --- the public calls: guarded reads of the binary's mapping ------------ */

/* Leave the region of a call on elf: its answer, or -EIO when a file of
 * elf was found cut short (the entry is retired). */
static int leave(struct sym_elf *elf, struct symg *g, int ret)
{
	int err = symc_leave(elf, g);

	return err ? err : ret;
}

int sym_elf_symbol(struct sym_elf *elf, const char *name, uint64_t *vaddr)
{
	struct symg g;

	if (elf && elf->truncated)
		return -EIO;
	symg_enter(&g);
	return leave(elf, &g, elf_symbol_in(elf, name, vaddr));
}

int sym_elf_member_offset(struct sym_elf *elf, const char *type, const char *member, uint64_t *off)
{
	struct symg g;

	if (elf && elf->truncated)
		return -EIO;
	symg_enter(&g);
	return leave(elf, &g, elf_member_offset_in(elf, type, member, off));
}

int sym_elf_read(struct sym_elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	struct symg g;

	if (elf && elf->truncated)
		return -EIO;
	symg_enter(&g);
	return leave(elf, &g, elf_read_in(elf, vaddr, buf, len));
}

int sym_elf_find_string(struct sym_elf *elf, const char *prefix, char *out, size_t len)
{
	struct symg g;

	if (elf && elf->truncated)
		return -EIO;
	symg_enter(&g);
	return leave(elf, &g, elf_find_string_in(elf, prefix, out, len));
}
