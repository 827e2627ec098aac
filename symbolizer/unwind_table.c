// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unwind tables (symbolizer.h): a binary's CFI compiled into the rows the
 * BPF unwinder walks (struct unwind_row, ebprof/bpf_shared.h). The rules
 * come from libdw's CFI interpreter (dwarf_cfi_addrframe and friends);
 * only the FDEs' address ranges are read here, to know where to ask.
 *
 * CFI is hostile input (a binary planted in a container): every FDE header
 * is bounds-checked, every CFA program checked before libdw runs it
 * (cfi_check.h: a register number alone can make libdw allocate 2 GiB), an
 * FDE libdw cannot interpret is skipped and counted, and the table is
 * capped at EBPROF_MAX_TABLE_ROWS rows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"
#include "cfi_check.h"
#include "dwarf_resolve.h"
#include "eh_frame.h"
#include "sym_cache.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define MAX_FDE_ROWS 2048   /* rows of one FDE (the rest: unsupported) */
#define MAX_WORK (1u << 21) /* rows asked of libdw for one binary */

/* FDE address ranges, sorted, with the CFI that describes them. */
struct fde_range {
	uint64_t start, end;
	Dwarf_CFI *cfi;
};

struct builder {
	struct unwind_row *rows;
	size_t n, cap;
	struct fde_range *fdes;
	size_t nfdes, fcap;
	uint64_t unsupported;
	uint64_t rejected; /* FDEs whose program failed cfi_program_ok() */
	uint64_t work;	   /* dwarf_cfi_addrframe() calls */
};

static int push_row(struct builder *b, const struct unwind_row *r)
{
	if (b->n && b->rows[b->n - 1].pc == r->pc) { /* a later rule for the same pc */
		b->rows[b->n - 1] = *r;
		goto merge;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct unwind_row *n;

		if (cap > EBPROF_MAX_TABLE_ROWS)
			return -E2BIG;
		n = realloc(b->rows, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->rows = n;
		b->cap = cap;
	}
	b->rows[b->n++] = *r;
merge:
	/* same rule as the row before: that row goes on */
	if (b->n >= 2) {
		struct unwind_row *p = &b->rows[b->n - 2], *q = &b->rows[b->n - 1];

		if (p->cfa == q->cfa && p->cfa_off == q->cfa_off && p->rbp_off == q->rbp_off &&
		    p->flags == q->flags)
			b->n--;
	}
	return 0;
}

/* A location expression "CFA + off" (offset(N) rule), as libdw gives it. */
static bool cfa_offset_rule(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* binutils' PLT expression: rsp + N, + 8 when (rip & 15) >= K. */
static bool plt_expr(const Dwarf_Op *o, size_t n, struct unwind_row *r)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit31 || o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	r->cfa = UNWIND_CFA_PLT;
	r->cfa_off = (__s32)(int64_t)o[0].number;
	r->flags = (__u8)(o[4].atom - DW_OP_lit0);
	return true;
}

/* The rule of one frame state; false when it is one we do not know. */
static bool translate(Dwarf_Frame *f, bool signal, struct unwind_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;

	if (signal) { /* the kernel's rt_sigframe: the BPF side knows its layout */
		r->cfa = UNWIND_CFA_SIGNAL;
		return true;
	}
	if (dwarf_frame_register(f, REG_RA, mem, &ops, &nops))
		return false;
	if (nops == 0 && ops == mem) { /* undefined: the outermost frame */
		r->cfa = UNWIND_CFA_END;
		return true;
	}
	if (!cfa_offset_rule(ops, nops, &off) || off != -8)
		return false;
	if (dwarf_frame_cfa(f, &ops, &nops) || nops == 0)
		return false;
	if (nops == 1 && (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg7 ||
			  ops[0].atom == DW_OP_breg6)) {
		uint64_t reg = ops[0].atom == DW_OP_bregx ? ops[0].number
							  : (uint64_t)(ops[0].atom - DW_OP_breg0);
		off = (int64_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number);
		if ((reg != REG_RSP && reg != REG_RBP) || off < INT32_MIN || off > INT32_MAX)
			return false;
		r->cfa = reg == REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		r->cfa_off = (__s32)off;
	} else if (nops == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref) {
		off = (int64_t)ops[0].number;
		if (off < INT32_MIN || off > INT32_MAX)
			return false;
		r->cfa = UNWIND_CFA_DEREF_RBP; /* stack realignment */
		r->cfa_off = (__s32)off;
	} else if (!plt_expr(ops, nops, r)) {
		return false;
	}
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &nops))
		return false;
	if (nops == 0)
		return true; /* same value, or undefined: rbp as it is */
	if (!cfa_offset_rule(ops, nops, &off) || off == 0 || off < INT16_MIN || off > INT16_MAX)
		return false;
	r->rbp_off = (__s16)off;
	return true;
}

static int push_fde(struct builder *b, uint64_t start, uint64_t end, Dwarf_CFI *cfi)
{
	if (end <= start)
		return 0;
	if (b->nfdes == b->fcap) {
		size_t cap = b->fcap ? 2 * b->fcap : 256;
		struct fde_range *n;

		if (cap > EBPROF_MAX_TABLE_ROWS)
			return -E2BIG;
		if (!(n = realloc(b->fdes, cap * sizeof(*n))))
			return -ENOMEM;
		b->fdes = n;
		b->fcap = cap;
	}
	b->fdes[b->nfdes++] = (struct fde_range){ start, end, cfi };
	return 0;
}

/* Every FDE's [start, end) in section data of address sh_addr. */
static int collect_fdes(struct builder *b, Elf *elf, Elf_Data *data, uint64_t sh_addr, bool eh,
			Dwarf_CFI *cfi)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	struct {
		Dwarf_Off off;
		uint8_t enc;
		bool ok, z; /* its program checked; 'z': FDEs have augmentation data */
	} last_cie = { (Dwarf_Off)-1, 0, false, false };
	int ret;

	for (size_t guard = 0; guard < 4 * EBPROF_MAX_TABLE_ROWS; guard++) {
		Dwarf_CFI_Entry e;
		int r = dwarf_next_cfi(ident, data, eh, off, &next, &e);
		const uint8_t *p, *end;
		uint64_t start, range;
		size_t len;
		uint8_t enc;

		if (r != 0 || next <= off)
			break; /* 1: the end; -1: corrupt from here on */
		if (dwarf_cfi_cie_p(&e)) {
			off = next;
			continue;
		}
		/* the FDE's CIE, for the pointer encoding */
		if (last_cie.off != e.fde.CIE_pointer) {
			Dwarf_CFI_Entry c;
			Dwarf_Off cnext;

			if (dwarf_next_cfi(ident, data, eh, e.fde.CIE_pointer, &cnext, &c) ||
			    !dwarf_cfi_cie_p(&c)) {
				off = next;
				continue;
			}
			last_cie.off = e.fde.CIE_pointer;
			last_cie.enc = ehf_fde_encoding(&c.cie, eh);
			last_cie.ok = c.cie.return_address_register < CFI_MAX_REG &&
				      cfi_program_ok(c.cie.initial_instructions,
						     c.cie.initial_instructions_end);
			last_cie.z = c.cie.augmentation && c.cie.augmentation[0] == 'z';
		}
		enc = last_cie.enc;
		p = e.fde.start;
		end = e.fde.end;
		if (enc == EHF_ENC_BAD || p < (const uint8_t *)data->d_buf ||
		    !ehf_read_encoded(p, end, enc,
				      sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf),
				      &start, &len) ||
		    !ehf_read_encoded(p + len, end, enc & 0x0f, 0, &range, &len)) {
			off = next;
			continue;
		}
		if (!last_cie.ok || !cfi_fde_program_ok(p + 2 * len, end, last_cie.z)) {
			b->rejected++; /* left to frame pointers: a gap */
			off = next;
			continue;
		}
		if ((ret = push_fde(b, start, start + range, cfi)))
			return ret;
		off = next;
	}
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y; /* the same start: .eh_frame's (collected first) */
}

/* Walk the FDEs' ranges asking libdw for the rule at each row. */
static int compile(struct builder *b)
{
	struct unwind_row gap = { .cfa = UNWIND_CFA_GAP };
	uint64_t covered = 0; /* addresses below are done */
	int ret;

	if (b->nfdes > 1) /* qsort() wants an array, and there may be none */
		qsort(b->fdes, b->nfdes, sizeof(*b->fdes), cmp_fde);
	for (size_t i = 0; i < b->nfdes; i++) {
		uint64_t addr = b->fdes[i].start > covered ? b->fdes[i].start : covered;

		if (b->fdes[i].end > UINT32_MAX)
			return -E2BIG;
		if (addr >= b->fdes[i].end)
			continue; /* overlapping FDEs: the first one wins */
		for (size_t nrows = 0; addr < b->fdes[i].end; nrows++) {
			struct unwind_row r = { .pc = (__u32)addr };
			Dwarf_Frame *f = NULL;
			Dwarf_Addr s, e;
			bool signal;

			/* libdw runs the FDE's program from its start for every
			 * row: a planted FDE of a million rows would take hours.
			 * Real functions have hundreds at most. */
			if (nrows == MAX_FDE_ROWS || ++b->work > MAX_WORK) {
				r.cfa = UNWIND_CFA_UNSUPPORTED;
				b->unsupported++;
				if ((ret = push_row(b, &r)))
					return ret;
				if (b->work > MAX_WORK)
					return -E2BIG;
				break;
			}

			if (dwarf_cfi_addrframe(b->fdes[i].cfi, addr, &f) ||
			    dwarf_frame_info(f, &s, &e, &signal) < 0 || e <= addr) {
				free(f);
				/* libdw cannot read this FDE: a gap from here */
				gap.pc = (__u32)addr;
				if ((ret = push_row(b, &gap)))
					return ret;
				break;
			}
			if (!translate(f, signal, &r)) {
				r.cfa = UNWIND_CFA_UNSUPPORTED;
				r.cfa_off = r.rbp_off = 0;
				r.flags = 0;
				b->unsupported++;
			}
			free(f);
			if ((ret = push_row(b, &r)))
				return ret;
			addr = e < b->fdes[i].end ? e : b->fdes[i].end;
		}
		covered = b->fdes[i].end;
		/* nothing until the next FDE (or after the last): a gap */
		if (i + 1 == b->nfdes || b->fdes[i + 1].start > covered) {
			gap.pc = (__u32)covered;
			if ((ret = push_row(b, &gap)))
				return ret;
		}
	}
	return b->n ? 0 : -ENODATA;
}

/* Compile from .eh_frame of elf and .debug_frame of dbg_elf (cfi_dbg: its
 * CFI, owned by its Dwarf), which covers what .eh_frame does not (code
 * built without unwind tables next to crt files that have them). */
static int compile_elf(Elf *elf, Elf *dbg_elf, Dwarf_CFI *cfi_dbg, struct sym_unwind_table *out)
{
	struct builder b = { 0 };
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *data;
	Dwarf_CFI *cfi = NULL;
	size_t neh = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOTSUP;
	if ((scn = ehf_section(elf, ".eh_frame", &sh)) && (data = elf_getdata(scn, NULL)) &&
	    data->d_size && (cfi = dwarf_getcfi_elf(elf)))
		ret = collect_fdes(&b, elf, data, sh.sh_addr, true, cfi);
	neh = b.nfdes;
	if (!ret && dbg_elf && cfi_dbg && (scn = ehf_section(dbg_elf, ".debug_frame", &sh)) &&
	    (data = elf_getdata(scn, NULL)))
		ret = collect_fdes(&b, dbg_elf, data, sh.sh_addr, false, cfi_dbg);
	if (!ret && !b.nfdes)
		ret = -ENODATA;
	if (!ret)
		ret = compile(&b);
	out->source = b.nfdes > neh ? (neh ? "eh_frame+debug_frame" : "debug_frame") : "eh_frame";
	if (cfi)
		dwarf_cfi_end(cfi);
	free(b.fdes);
	if (ret) {
		free(b.rows);
		out->source = NULL;
		return ret;
	}
	out->rows = b.rows;
	out->n = b.n;
	out->fdes = b.nfdes;
	out->unsupported = b.unsupported;
	out->rejected = b.rejected;
	return 0;
}

int sym_elf_unwind_table(struct symbolizer *sym, struct sym_elf *elf, struct sym_unwind_table *out)
{
	Dwarf_Addr bias;
	Dwfl_Module *mod;
	struct symg g;
	Elf *e;
	Dwarf *dw;
	int err;

	(void)sym;
	memset(out, 0, sizeof(*out));
	if (elf->truncated)
		return -EIO;
	symg_enter(&g);
	if (!elf->dw || !(mod = symdw_module(elf->dw, &bias)) ||
	    !(e = dwfl_module_getelf(mod, &bias))) {
		symg_leave(&g);
		return -ENOEXEC;
	}
	dw = dwfl_module_getdwarf(mod, &bias); /* .debug_frame: the binary's, or its debug file's */
	err = compile_elf(e, dw ? dwarf_getelf(dw) : NULL, dw ? dwarf_getcfi(dw) : NULL, out);
	if (symg_leave(&g)) { /* rows read from a file cut short: none kept */
		sym_unwind_table_free(out);
		memset(out, 0, sizeof(*out));
		return symc_entry_truncated(elf, g.addr);
	}
	return err;
}

int sym_unwind_table_from_image(const void *image, size_t size, struct sym_unwind_table *out)
{
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	if (!elf)
		return -ENOEXEC;
	ret = elf_kind(elf) == ELF_K_ELF ? compile_elf(elf, NULL, NULL, out) : -ENOEXEC;
	elf_end(elf);
	return ret;
}

void sym_unwind_table_free(struct sym_unwind_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
}
