// SPDX-License-Identifier: BSD-2-Clause
/*
 * ELF and DWARF a tenant plants for the symbolizer: the input becomes a
 * binary in a tmpfs directory, opened and resolved through the public API
 * as the agent does (sym_elf_get, sym_elf_resolve with inline chains,
 * sym_elf_function_start over .eh_frame_hdr and .eh_frame, sym_elf_symbol,
 * the DWARF walks of elf_data.c). With an odd first byte
 * of e_ident padding the same bytes are also its separate debug file
 * (".gnu_debuglink"-named and build-id-named), so the debug-file path runs.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ebprof/symbolizer.h>

#include "fuzz.h"

#define NFRAMES 16

static char dir[64];

/*
 * elfutils 0.188's dwarf_getscopes() leaks its partial scope array when
 * the origin walk fails on corrupt DWARF (it returns <= 0 without handing
 * the array over or freeing it): found by this target, input in
 * fuzz/regressions/symbolize/libdw-getscopes-leak. Nothing on our side can
 * free it; only that leak is suppressed, every other one still fails. The
 * suppression matches a function name, so allocation stacks are unwound
 * fully (libdw has no frame pointers).
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:dwarf_getscopes\n";
}

static void quiet(enum sym_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

static int put(const char *name, const uint8_t *data, size_t size)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* An offset as the profile builder looks it up: its inline chain, and
 * where its function starts by .eh_frame (.eh_frame_hdr's table, else
 * every FDE) for when no symbol names it. */
static void resolve(struct symbolizer *sym, struct sym_elf *elf, uint64_t off)
{
	struct sym_frame frames[NFRAMES];
	uint64_t start;

	sym_elf_resolve(sym, elf, off, frames, NFRAMES);
	if (!sym_elf_function_start(sym, elf, off, &start) && start > off)
		abort(); /* a function starts at or before its addresses */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256], debugdir[256], str[64];
	struct sym_opts o = { 0 };
	struct symbolizer *sym;
	struct sym_elf *elf;
	struct sym_binary bin = { .path = path };
	bool debug = size > 9 && (data[9] & 1);
	uint64_t v;

	if (!dir[0]) {
		strcpy(dir, "/dev/shm/ebprof-fuzz-sym.XXXXXX");
		if (!mkdtemp(dir)) {
			strcpy(dir, "/tmp/ebprof-fuzz-sym.XXXXXX");
			if (!mkdtemp(dir))
				abort(); /* the harness cannot run */
		}
		snprintf(debugdir, sizeof(debugdir), "%s/debug", dir);
		mkdir(debugdir, 0755);
		sym_set_print(quiet);
	}
	snprintf(path, sizeof(path), "%s/bin", dir);
	snprintf(debugdir, sizeof(debugdir), "%s/debug", dir);
	if (put("bin", data, size))
		return 0;
	/* Debug file candidates: next to the binary under the debuglink names
	 * the seeds use, and under DIR/debug/.build-id/ is too costly to lay
	 * out per input; the debuglink ones cover elfbin_find_debug(). */
	if (debug) {
		put("bin.debug", data, size);
		put("debug/bin.debug", data, size);
	} else {
		char p[256];

		snprintf(p, sizeof(p), "%s/bin.debug", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/debug/bin.debug", dir);
		unlink(p);
	}
	o.debug_dirs = debugdir;
	o.kallsyms_path = "/dev/null";
	o.no_demangle = size > 10 && (data[10] & 1);
	if (sym_new(&o, &sym))
		return 0;
	if (!sym_elf_get(sym, &bin, &elf)) {
		sym_elf_build_id(elf);
		sym_elf_has_lines(elf);
		sym_elf_debug_source(elf);
		/* e_entry (a vaddr; in PIE text offset == vaddr), the input's
		 * last words as file offsets, and what symbols name. */
		if (size >= 0x20)
			resolve(sym, elf, get64(data + 0x18));
		for (size_t i = 0; i < 4 && size >= 8 * (i + 1); i++)
			resolve(sym, elf, get64(data + size - 8 * (i + 1)) % (size + 1));
		for (uint64_t off = 0; off < size && off < (1 << 16); off += 0x1000 - 0x40)
			resolve(sym, elf, off);
		if (!sym_elf_symbol(elf, "main", &v))
			resolve(sym, elf, v);
		sym_elf_offset_vaddr(elf, size / 2, &v);
		sym_elf_member_offset(elf, "PGPROC", "pid", &v);
		sym_elf_member_offset(elf, "s", "b", &v);
		sym_elf_find_string(elf, "GCC: ", str, sizeof(str));
		sym_elf_put(sym, elf);
	}
	sym_free(sym);
	return 0;
}
