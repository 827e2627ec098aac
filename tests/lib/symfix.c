// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "symfix.h"

/* "<BUILD>/fixtures/<name>" in one of 8 rotating buffers. */
const char *fx(const char *name)
{
	static char bufs[8][512];
	static int next;
	const char *build = getenv("BUILD");
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/fixtures/%s", build && *build ? build : "build", name);
	return b;
}

/* st_value of a symbol from .symtab or .dynsym; exact name, or (prefix)
 * the first name starting with it (copied to found). */
bool elf_sym(const char *path, const char *name, bool prefix, uint64_t *vaddr, char *found,
	     size_t flen)
{
	Elf_Scn *scn = NULL;
	bool ok = false;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !ok && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(data, (int)i, &s) || !s.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!n || (prefix ? strncmp(n, name, strlen(name)) : strcmp(n, name)))
				continue;
			*vaddr = s.st_value;
			if (found)
				snprintf(found, flen, "%s", n);
			ok = true;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return ok;
}

/* vaddr -> file offset through the PT_LOAD headers of path */
bool elf_off(const char *path, uint64_t vaddr, uint64_t *off)
{
	bool ok = false;
	size_t n = 0;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
				*off = vaddr - ph.p_vaddr + ph.p_offset;
				ok = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return ok;
}

/* File offset of symbol name: its address from symfile, its offset
 * through the program headers of binfile. */
uint64_t sym_offset(const char *binfile, const char *symfile, const char *name)
{
	uint64_t vaddr = 0, off = 0;

	cr_assert(elf_sym(symfile, name, false, &vaddr, NULL, 0), "%s not in %s", name, symfile);
	cr_assert(elf_off(binfile, vaddr, &off), "0x%" PRIx64 " not loaded from %s", vaddr,
		  binfile);
	return off;
}

/* Line number of the first line of a fixture source containing marker. */
int source_line(const char *src, const char *marker)
{
	char path[256], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "tests/fixtures/%s", src);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s (run the tests from the repository root)", path);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	cr_assert_fail("marker %s not in %s", marker, path);
	return 0;
}

bool ends_with(const char *s, const char *suffix)
{
	size_t a, b;

	if (!s)
		return false;
	a = strlen(s);
	b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}
