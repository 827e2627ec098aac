// SPDX-License-Identifier: BSD-2-Clause
/*
 * Function ranges from .eh_frame (fde_index.h), and the public
 * sym_elf_function_start() that names code no symbol names by them. The
 * index is built the first time a binary has such code, kept with the
 * binary's cache entry and counted in its memory: 8 bytes per FDE (17 108
 * FDEs, 134 KiB, for Debian's PostgreSQL 15).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include <dwarf.h>
#include <elfutils/libdwfl.h>

#include "ebprof/bpf_shared.h"
#include "eh_frame.h"
#include "fde_index.h"
#include "sym_cache.h"
#include "sym_log.h"

/* .eh_frame_hdr's table as every linker writes it: 4-byte offsets from
 * the start of .eh_frame_hdr. Other encodings: walk .eh_frame instead. */
#define HDR_TABLE_ENC (DW_EH_PE_datarel | DW_EH_PE_sdata4)

/* One FDE: where its function starts (from the lowest start) and where
 * the FDE is (offset in .eh_frame). */
struct fdex_ent {
	uint32_t start;
	uint32_t fde;
};

struct fde_index {
	unsigned char ident[EI_NIDENT];
	Elf_Data *eh;	  /* .eh_frame's data, libelf's */
	uint64_t eh_addr; /* its address */
	uint64_t base;	  /* the lowest start */
	struct fdex_ent *ents;
	size_t n;
	bool from_hdr;
};

/* A start as an entry's offset from base; false beyond 4 GiB. */
static bool rel_start(uint64_t base, uint64_t start, uint32_t *out)
{
	if (start < base || start - base > UINT32_MAX)
		return false;
	*out = (uint32_t)(start - base);
	return true;
}

/*
 * The search table of .eh_frame_hdr: 0; -ENOENT when there is none or it
 * cannot be trusted (version, encoding, bounds, order, an FDE pointer out
 * of .eh_frame): the caller walks .eh_frame then; -E2BIG, -ENOMEM.
 */
static int from_hdr(struct fde_index *x, Elf *elf)
{
	const uint8_t *d, *end, *p;
	uint64_t eh_ptr, count, prev = 0;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr sh;
	size_t len;

	if (!(scn = ehf_section(elf, ".eh_frame_hdr", &sh)) || !(data = elf_getdata(scn, NULL)) ||
	    !data->d_buf || data->d_size < 4)
		return -ENOENT;
	d = data->d_buf;
	end = d + data->d_size;
	if (d[0] != 1 || d[2] == DW_EH_PE_omit || d[3] != HDR_TABLE_ENC)
		return -ENOENT;
	p = d + 4;
	if (!ehf_read_encoded(p, end, d[1], sh.sh_addr + 4, &eh_ptr, &len))
		return -ENOENT;
	p += len;
	if (!ehf_read_encoded(p, end, d[2], sh.sh_addr + (uint64_t)(p - d), &count, &len))
		return -ENOENT;
	p += len;
	if (!count || count > (uint64_t)(end - p) / 8)
		return -ENOENT;
	if (count > EBPROF_MAX_TABLE_ROWS)
		return -E2BIG;
	x->ents = malloc(count * sizeof(*x->ents));
	if (!x->ents)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++, p += 8) {
		int32_t v[2];
		uint64_t start, fde;

		memcpy(v, p, sizeof(v));
		start = sh.sh_addr + (uint64_t)(int64_t)v[0];
		fde = sh.sh_addr + (uint64_t)(int64_t)v[1];
		if (!i)
			x->base = start;
		if ((i && start < prev) || fde < x->eh_addr || fde - x->eh_addr >= x->eh->d_size ||
		    fde - x->eh_addr > UINT32_MAX)
			goto untrusted; /* unsorted, or an FDE outside .eh_frame */
		if (!rel_start(x->base, start, &x->ents[i].start))
			goto too_big;
		x->ents[i].fde = (uint32_t)(fde - x->eh_addr);
		prev = start;
	}
	x->n = count;
	x->from_hdr = true;
	return 0;
untrusted:
	free(x->ents);
	x->ents = NULL;
	return -ENOENT;
too_big:
	free(x->ents);
	x->ents = NULL;
	return -E2BIG;
}

/* An FDE found by the walk, before base is known. */
struct walked {
	uint64_t start, fde;
};

static int cmp_walked(const void *a, const void *b)
{
	const struct walked *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->fde < y->fde ? -1 : x->fde > y->fde;
}

/* Every FDE of .eh_frame, in the order of their starts. */
static int from_walk(struct fde_index *x)
{
	struct walked *w = NULL, *grown;
	size_t n = 0, cap = 0;
	Dwarf_Off off = 0, next;
	int ret = 0;

	while (off < x->eh->d_size) {
		Dwarf_CFI_Entry e;
		uint64_t start, end;

		if (dwarf_next_cfi(x->ident, x->eh, true, off, &next, &e) || next <= off)
			break; /* the end, or corrupt from here on */
		if (!dwarf_cfi_cie_p(&e) &&
		    !ehf_fde_range(x->ident, x->eh, x->eh_addr, off, &start, &end)) {
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				if (cap > EBPROF_MAX_TABLE_ROWS) {
					ret = -E2BIG;
					break;
				}
				if (!(grown = realloc(w, cap * sizeof(*w)))) {
					ret = -ENOMEM;
					break;
				}
				w = grown;
			}
			w[n++] = (struct walked){ start, off };
		}
		off = next;
	}
	if (!ret && !n)
		ret = -ENODATA;
	if (!ret && off > UINT32_MAX)
		ret = -E2BIG; /* FDE offsets are kept in 32 bits */
	if (!ret && n > 1)    /* qsort() wants an array, and there may be none */
		qsort(w, n, sizeof(*w), cmp_walked);
	if (!ret && !(x->ents = malloc(n * sizeof(*x->ents))))
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++) {
		x->ents[i].fde = (uint32_t)w[i].fde;
		if (!rel_start(w[0].start, w[i].start, &x->ents[i].start))
			ret = -E2BIG;
	}
	if (!ret) {
		x->base = w[0].start;
		x->n = n;
	} else {
		free(x->ents);
		x->ents = NULL;
	}
	free(w);
	return ret;
}

int fdex_build(Elf *elf, struct fde_index **out)
{
	const char *ident = elf_getident(elf, NULL);
	struct fde_index *x;
	Elf_Scn *scn;
	GElf_Shdr sh;
	int ret;

	*out = NULL;
	if (!ident || ident[EI_DATA] != ELFDATA2LSB)
		return -ENOTSUP;
	if (!(scn = ehf_section(elf, ".eh_frame", &sh)))
		return -ENODATA;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	memcpy(x->ident, ident, EI_NIDENT);
	x->eh_addr = sh.sh_addr;
	x->eh = elf_getdata(scn, NULL);
	if (!x->eh || !x->eh->d_buf || !x->eh->d_size) {
		free(x);
		return -ENODATA;
	}
	ret = from_hdr(x, elf);
	if (ret == -ENOENT)
		ret = from_walk(x);
	if (ret) {
		free(x);
		return ret;
	}
	*out = x;
	return 0;
}

void fdex_free(struct fde_index *x)
{
	if (!x)
		return;
	free(x->ents);
	free(x);
}

int fdex_find(const struct fde_index *x, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	size_t lo = 0, hi = x->n;
	uint32_t rel;

	if (!rel_start(x->base, vaddr, &rel))
		return -ENOENT;
	while (lo < hi) { /* the first entry that starts after vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (x->ents[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	/* The FDE itself says where it starts and ends: a table entry that
	 * disagrees, or an FDE that ends before vaddr, names nothing. */
	if (ehf_fde_range(x->ident, x->eh, x->eh_addr, x->ents[lo - 1].fde, start, end) ||
	    *start != x->base + x->ents[lo - 1].start || vaddr >= *end)
		return -ENOENT;
	return 0;
}

size_t fdex_bytes(const struct fde_index *x)
{
	return x ? sizeof(*x) + x->n * sizeof(*x->ents) : 0;
}

size_t fdex_count(const struct fde_index *x)
{
	return x ? x->n : 0;
}

const char *fdex_source(const struct fde_index *x)
{
	return x && x->from_hdr ? "eh_frame_hdr" : "eh_frame";
}

/* The index of a cache entry, built on first use; 0 or a negative errno
 * (remembered, but for -ENOMEM). */
static int entry_index(struct symbolizer *sym, struct sym_elf *e)
{
	Dwfl_Module *mod;
	struct symg g;
	uint64_t bias;
	Elf *img;
	int err;

	if (e->truncated)
		return -EIO;
	if (e->fdes || e->fdes_err)
		return e->fdes_err;
	symg_enter(&g);
	mod = symdw_module(e->dw, &bias);
	img = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	err = img ? fdex_build(img, &e->fdes) : -ENOEXEC;
	if (symg_leave(&g)) {
		sym->stats.fde_index_bytes += fdex_bytes(e->fdes); /* entry_free() counts it out */
		return symc_entry_truncated(e, g.addr);
	}
	if (err) {
		sym_debug("symbolizer: %s: no function ranges from .eh_frame: %s",
			  e->build_id[0] ? e->build_id : "(no build-id)", strerror(-err));
		if (err != -ENOMEM)
			e->fdes_err = err;
		return err;
	}
	sym_debug("symbolizer: %s: %zu function ranges from .%s, %zu bytes",
		  e->build_id[0] ? e->build_id : "(no build-id)", fdex_count(e->fdes),
		  fdex_source(e->fdes), fdex_bytes(e->fdes));
	sym->stats.fde_index_bytes += fdex_bytes(e->fdes);
	sym->stats.first_reads++;
	symc_account(sym, e);
	symc_drop_entry_pages(e); /* .eh_frame read whole: its pages go now */
	return 0;
}

/* fdex_find() reads the FDE in .eh_frame, the file's mapping: guarded
 * (sym_guard.h); -EIO when the file was found cut short. */
static int find_guarded(struct sym_elf *e, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	struct symg g;
	int err, cut;

	symg_enter(&g);
	err = fdex_find(e->fdes, vaddr, start, end);
	cut = symc_leave(e, &g);
	if (cut)
		return cut;
	/* the pages it read go back with the others' (sym_drop_file_pages()):
	 * unmarked, they stayed until the entry was evicted */
	e->touched = true;
	return err;
}

int sym_elf_function_start(struct symbolizer *sym, struct sym_elf *elf, uint64_t file_offset,
			   uint64_t *start)
{
	uint64_t vaddr, fstart, fend, off, check;
	int err;

	if (!sym || !elf || !start)
		return -EINVAL;
	if ((err = entry_index(sym, elf)))
		return err;
	if (elfbin_vaddr(&elf->id, file_offset, &vaddr))
		return -ENOENT;
	if ((err = find_guarded(elf, vaddr, &fstart, &fend)))
		return err;
	/* the function's first byte, through the segment that maps the
	 * offset: it must be in the same one */
	off = file_offset - (vaddr - fstart);
	if (vaddr - fstart > file_offset || elfbin_vaddr(&elf->id, off, &check) || check != fstart)
		return -ENOENT;
	*start = off;
	return 0;
}

int sym_elf_function_range(struct symbolizer *sym, struct sym_elf *elf, uint64_t vaddr,
			   uint64_t *start, uint64_t *end)
{
	int err;

	if (!sym || !elf || !start || !end)
		return -EINVAL;
	if ((err = entry_index(sym, elf)))
		return err;
	return find_guarded(elf, vaddr, start, end);
}
