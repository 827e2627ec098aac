// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "dwarf_resolve.h"
#include "sym_log.h"

/* Longest inline chain followed; deeper ones keep their outer part. */
#define SYMDW_MAX_CHAIN 128

/* A function symbol of the symbol table, for bisection. */
struct func_sym {
	GElf_Addr addr;	  /* module address */
	GElf_Addr end;	  /* addr + size; sizeless: end of its section */
	const char *name; /* owned by libelf's string table */
	int rank;	  /* GLOBAL 0, WEAK 1, LOCAL 2: the name kept at an alias */
};

struct sym_dwarf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;	  /* module address = ELF vaddr + bias */
	char *debug_path; /* the debug file's name, for libdwfl's messages */
	int debug_fd;	  /* open until libdwfl takes it (-1: none, or taken) */
	bool has_lines;
	bool units_interned; /* symdw_intern_units() done */
	/* Function symbols sorted by address, built on first use:
	 * dwfl_module_addrinfo scans every symbol for each lookup, which
	 * dominates symbolization of binaries without DWARF. */
	struct func_sym *funcs;
	size_t nfuncs;
	bool funcs_built;
	/* symdw_file_ranges(), found at open: later, the files' headers may
	 * lie past their end (sym_guard.h) */
	void *range_start[2];
	size_t range_len[2];
	int nranges;
};

static int find_elf_cb(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)elfp;
	return -1; /* the ELF is always reported with its fd */
}

/* Hand libdwfl the debug file found by elfbin_find_debug(), if any: the
 * file opened then (its path may name another file now, or lead out of a
 * container's root); libdwfl owns the fd it gets. */
static int find_debuginfo_cb(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct sym_dwarf *dw = *userdata;
	int fd;

	(void)mod;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	if (!dw || dw->debug_fd < 0 || !dw->debug_path)
		return -1;
	*debuginfo_file_name = strdup(dw->debug_path);
	if (!*debuginfo_file_name)
		return -1;
	fd = dw->debug_fd;
	dw->debug_fd = -1;
	return fd;
}

static const Dwfl_Callbacks symdw_callbacks = {
	.find_elf = find_elf_cb,
	.find_debuginfo = find_debuginfo_cb,
	.section_address = dwfl_offline_section_address,
};

static bool dwarf_has_line_section(Dwarf *dwarf)
{
	Elf *elf = dwarf_getelf(dwarf);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line")))
			return true;
	}
	return false;
}

static int find_file_ranges(struct sym_dwarf *dw, void **start, size_t *len);

int symdw_open(int fd, const char *name, int debug_fd, const char *debug_path,
	       struct sym_dwarf **out)
{
	struct sym_dwarf *dw;
	Dwarf_Addr dbias;
	void **ud = NULL;
	Dwarf *dwarf;

	*out = NULL;
	dw = calloc(1, sizeof(*dw));
	if (!dw)
		goto nomem;
	dw->debug_fd = debug_fd;
	debug_fd = -1;
	if (dw->debug_fd >= 0) {
		dw->debug_path = strdup(debug_path ? debug_path : "[debug file]");
		if (!dw->debug_path)
			goto nomem;
	}
	dw->dwfl = dwfl_begin(&symdw_callbacks);
	if (!dw->dwfl)
		goto nomem;
	dwfl_report_begin(dw->dwfl);
	/* ET_DYN at base 0: module addresses equal the file's vaddrs. */
	if (!name || !name[0])
		name = "[unknown]";
	dw->mod = dwfl_report_elf(dw->dwfl, name, name, fd, 0, false);
	if (!dw->mod) {
		sym_debug("symbolizer: dwfl_report_elf %s: %s", name ? name : "", dwfl_errmsg(-1));
		close(fd); /* not consumed on failure */
		dwfl_report_end(dw->dwfl, NULL, NULL);
		symdw_close(dw);
		return -ENOEXEC;
	}
	fd = -1; /* consumed */
	if (dwfl_report_end(dw->dwfl, NULL, NULL)) {
		symdw_close(dw);
		return -ENOEXEC;
	}
	dwfl_module_info(dw->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (ud)
		*ud = dw;
	if (!dwfl_module_getelf(dw->mod, &dw->bias)) {
		symdw_close(dw);
		return -ENOEXEC;
	}
	dwarf = dwfl_module_getdwarf(dw->mod, &dbias);
	dw->has_lines = dwarf && dwarf_has_line_section(dwarf);
	dw->nranges = find_file_ranges(dw, dw->range_start, dw->range_len);
	if (dw->debug_fd >= 0) { /* libdwfl asked for no debug file */
		close(dw->debug_fd);
		dw->debug_fd = -1;
	}
	*out = dw;
	return 0;
nomem:
	if (fd >= 0)
		close(fd);
	if (debug_fd >= 0)
		close(debug_fd);
	symdw_close(dw);
	return -ENOMEM;
}

void symdw_close(struct sym_dwarf *dw)
{
	if (!dw)
		return;
	if (dw->dwfl)
		dwfl_end(dw->dwfl);
	if (dw->debug_fd >= 0)
		close(dw->debug_fd);
	free(dw->debug_path);
	free(dw->funcs);
	free(dw);
}

bool symdw_has_lines(const struct sym_dwarf *dw)
{
	return dw && dw->has_lines;
}

Dwfl_Module *symdw_module(struct sym_dwarf *dw, uint64_t *bias)
{
	*bias = dw ? dw->bias : 0;
	return dw ? dw->mod : NULL;
}

int symdw_file_ranges(struct sym_dwarf *dw, void **start, size_t *len)
{
	if (!dw)
		return 0;
	for (int i = 0; i < dw->nranges; i++) {
		start[i] = dw->range_start[i];
		len[i] = dw->range_len[i];
	}
	return dw->nranges;
}

/* The ranges symdw_file_ranges() answers, read from the files' headers. */
static int find_file_ranges(struct sym_dwarf *dw, void **start, size_t *len)
{
	Elf *elfs[2] = { NULL, NULL };
	Dwarf_Addr bias;
	Dwarf *dwarf;
	int n = 0;

	if (!dw || !dw->mod)
		return 0;
	elfs[0] = dwfl_module_getelf(dw->mod, &bias);
	dwarf = dwfl_module_getdwarf(dw->mod, &bias); /* loaded by symdw_open() */
	if (dwarf && dwarf_getelf(dwarf) != elfs[0])
		elfs[1] = dwarf_getelf(dwarf);
	for (int i = 0; i < 2; i++) {
		GElf_Ehdr eh;

		/* libdwfl relocates an ET_REL file in its mapping: written */
		if (!elfs[i] || !gelf_getehdr(elfs[i], &eh) || eh.e_type == ET_REL)
			continue;
		if ((start[n] = elf_rawfile(elfs[i], &len[n])) && len[n])
			n++;
	}
	return n;
}

const char *symdw_file_name(struct sym_dwarf *dw, uintptr_t addr)
{
	const char *name = NULL;
	Dwarf_Addr bias;
	Dwarf *dwarf;
	Elf *elf;
	size_t len;
	char *raw;

	if (!dw || !dw->mod)
		return "[unknown]";
	name = dwfl_module_info(dw->mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	dwarf = dwfl_module_getdwarf(dw->mod, &bias);
	elf = dwarf ? dwarf_getelf(dwarf) : NULL;
	if (dw->debug_path && elf && elf != dwfl_module_getelf(dw->mod, &bias) &&
	    (raw = elf_rawfile(elf, &len)) && addr >= (uintptr_t)raw && addr - (uintptr_t)raw < len)
		return dw->debug_path;
	return name ? name : "[unknown]";
}

void symdw_intern_units(struct sym_dwarf *dw, size_t window, void (*between)(void *arg), void *arg)
{
	Dwarf_Off off = 0, next, mark = 0;
	Dwarf_Addr dbias;
	Dwarf *dwarf;
	size_t hsize;

	if (!dw || dw->units_interned)
		return;
	dw->units_interned = true;
	if (!dw->has_lines || !(dwarf = dwfl_module_getdwarf(dw->mod, &dbias)))
		return;
	while (!dwarf_next_unit(dwarf, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL)) {
		Dwarf_Die die;

		/* a unit libdw cannot read: its own walk stops there too */
		if (!dwarf_offdie(dwarf, off + hsize, &die))
			break;
		if (next - mark >= window) {
			between(arg);
			mark = next;
		}
		off = next;
	}
	if (mark)
		between(arg);
}

/* Name of a subprogram/inlined DIE as in the binary (linkage name first). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name;
}

static int attr_int(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, name, &attr), &v) || v > INT32_MAX)
		return 0;
	return (int)v;
}

/* File/line of the line-table row covering addr. */
static void line_at(struct sym_dwarf *dw, Dwarf_Addr addr, struct symdw_frame *f)
{
	Dwfl_Line *line = dwfl_module_getsrc(dw->mod, addr);
	int lineno = 0, col = 0;
	const char *file;

	if (!line)
		return;
	file = dwfl_lineinfo(line, NULL, &lineno, &col, NULL, NULL);
	if (!file)
		return;
	f->file = file;
	f->line = lineno > 0 ? lineno : 0;
	f->column = col > 0 ? col : 0;
}

/* Append to the chain; past the limit the outermost frames win, so the
 * chain slides (the innermost are dropped). */
static void chain_push(struct symdw_frame *chain, int *n, const struct symdw_frame *f)
{
	if (*n == SYMDW_MAX_CHAIN) {
		memmove(chain, chain + 1, (SYMDW_MAX_CHAIN - 1) * sizeof(*chain));
		(*n)--;
	}
	chain[(*n)++] = *f;
}

/* The DWARF inline chain at addr; returns its length. */
static int dwarf_chain(struct sym_dwarf *dw, Dwarf_Addr addr, struct symdw_frame *chain)
{
	Dwarf_Die *scopes = NULL, *cudie, inner;
	Dwarf_Files *files = NULL;
	Dwarf_Die *prev = NULL;
	Dwarf_Addr cubias;
	int ns, n = 0;

	cudie = dwfl_module_addrdie(dw->mod, addr, &cubias);
	if (!cudie)
		return 0;
	ns = dwarf_getscopes(cudie, addr - cubias, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	/* dwarf_getscopes follows abstract origins past the innermost inlined
	 * instance; the physical nesting of that scope gives the callers. */
	inner = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = dwarf_getscopes_die(&inner, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	if (dwarf_getsrcfiles(cudie, &files, NULL))
		files = NULL;
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		struct symdw_frame f = { 0 };

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		f.name = die_name(&scopes[i]);
		if (!prev) {
			line_at(dw, addr, &f);
		} else {
			Dwarf_Attribute attr;
			Dwarf_Word idx;

			if (files &&
			    !dwarf_formudata(dwarf_attr(prev, DW_AT_call_file, &attr), &idx))
				f.file = dwarf_filesrc(files, idx, NULL, NULL);
			f.line = attr_int(prev, DW_AT_call_line);
			f.column = attr_int(prev, DW_AT_call_column);
		}
		chain_push(chain, &n, &f);
		if (tag == DW_TAG_subprogram)
			break;
		prev = &scopes[i];
	}
	free(scopes);
	return n;
}

static bool is_function(const GElf_Sym *sym, Elf *elf, GElf_Word shndx)
{
	int type = GELF_ST_TYPE(sym->st_info);
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	if (type != STT_NOTYPE || !elf || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

static int cmp_func(const void *a, const void *b)
{
	const struct func_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank - y->rank;
}

/* Sorted function symbols of the module (.symtab, else .dynsym, as libdwfl
 * picks), one per address. On allocation failure the table stays empty and
 * lookups fall back to libdwfl. */
static void build_funcs(struct sym_dwarf *dw)
{
	int n = dwfl_module_getsymtab(dw->mod);
	size_t count = 0;

	dw->funcs_built = true;
	if (n <= 1)
		return;
	dw->funcs = calloc((size_t)n, sizeof(*dw->funcs));
	if (!dw->funcs)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Word shndx = 0;
		GElf_Addr addr = 0;
		Elf *elf = NULL;
		GElf_Sym sym;
		const char *name =
			dwfl_module_getsym_info(dw->mod, i, &sym, &addr, &shndx, &elf, NULL);
		GElf_Addr end = addr + sym.st_size;
		GElf_Shdr sh;
		Elf_Scn *scn;
		int bind;

		if (!name || !name[0] || !is_function(&sym, elf, shndx))
			continue;
		if (!sym.st_size) {
			scn = shndx != SHN_UNDEF && shndx < SHN_LORESERVE ? elf_getscn(elf, shndx)
									  : NULL;
			if (!scn || !gelf_getshdr(scn, &sh))
				continue;
			end = sh.sh_addr + sh.sh_size + (addr - sym.st_value);
		}
		bind = GELF_ST_BIND(sym.st_info);
		dw->funcs[count++] = (struct func_sym){ addr, end, name,
							bind == STB_GLOBAL ? 0
							: bind == STB_WEAK ? 1
									   : 2 };
	}
	if (count > 1) /* qsort() wants an array, and there may be none */
		qsort(dw->funcs, count, sizeof(*dw->funcs), cmp_func);
	/* Keep the best-ranked name at each address (aliases). */
	size_t out = 0;

	for (size_t i = 0; i < count; i++)
		if (!out || dw->funcs[out - 1].addr != dw->funcs[i].addr)
			dw->funcs[out++] = dw->funcs[i];
	dw->nfuncs = out;
	/* sized for every symbol: the functions' size is what stays */
	if (out && out < (size_t)n) {
		struct func_sym *f = realloc(dw->funcs, out * sizeof(*dw->funcs));

		if (f)
			dw->funcs = f;
	}
}

/* Nearest function symbol (.symtab, else .dynsym) covering addr: the last
 * symbol at or below addr, within its size (a sizeless symbol covers up to
 * the end of its section; a later symbol starts a new one anyway). */
static const char *symtab_name(struct sym_dwarf *dw, Dwarf_Addr addr)
{
	size_t lo = 0, hi;
	const struct func_sym *f;

	if (!dw->funcs_built)
		build_funcs(dw);
	hi = dw->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dw->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	f = &dw->funcs[lo - 1];
	return addr < f->end ? f->name : NULL;
}

int symdw_resolve(struct sym_dwarf *dw, uint64_t vaddr, struct symdw_frame *frames, int max)
{
	struct symdw_frame chain[SYMDW_MAX_CHAIN];
	Dwarf_Addr addr = vaddr + dw->bias;
	int n, skip;

	if (max <= 0)
		return 0;
	n = dwarf_chain(dw, addr, chain);
	if (n == 0 || !chain[n - 1].name) {
		const char *name = symtab_name(dw, addr);

		if (n == 0) {
			if (!name)
				return 0;
			memset(&chain[0], 0, sizeof(chain[0]));
			/* an asm CU may still have lines */
			line_at(dw, addr, &chain[0]);
			n = 1;
		}
		chain[n - 1].name = name;
	}
	skip = n > max ? n - max : 0;
	memcpy(frames, chain + skip, (n - skip) * sizeof(*frames));
	return n - skip;
}
