/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finding and identifying the ELF file behind a mapping: opening it
 * through /proc/PID/map_files, /proc/PID/root or its path, reading its
 * build-id, load segments and .gnu_debuglink, and finding its separate
 * debug file. Paths a process names are opened inside its root as it
 * sees them (ebprof/in_root.h): a symlink planted there never leads to
 * the host's file of that name.
 */
#ifndef EBPROF_SYM_ELF_BINARY_H
#define EBPROF_SYM_ELF_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <ebprof/symbolizer.h>

#define ELFBIN_MAX_BUILD_ID 64
/* Largest debug file taken (libxul's is ~1.5 GiB; PostgreSQL's ~30 MiB). */
#define ELFBIN_MAX_DEBUG_FILE (2ULL << 30)

/* A PT_LOAD segment's file-backed part. */
struct elf_load {
	uint64_t offset;
	uint64_t filesz;
	uint64_t vaddr;
};

/* What the symbolizer needs to know of an ELF file. */
struct elf_ident {
	unsigned char build_id[ELFBIN_MAX_BUILD_ID];
	size_t build_id_len;	/* 0 = none */
	struct elf_load *loads; /* owned; freed by elfbin_ident_release() */
	size_t nloads;
	bool has_dwarf;	    /* .debug_info in the file itself */
	bool has_symtab;    /* .symtab in the file itself */
	bool has_debugdata; /* .gnu_debugdata: MiniDebugInfo (xz'd .symtab) */
	char *debuglink;    /* owned; .gnu_debuglink file name or NULL */
	uint32_t debuglink_crc;
};

/*
 * stat() the binary through the same candidates as elfbin_open(): fills
 * *st from the first that exists and sets *via_map_files when that was
 * /proc/PID/map_files. Returns 0 or a negative errno (-ENOENT when no
 * candidate exists).
 */
int elfbin_stat(const struct sym_binary *bin, struct stat *st, bool *via_map_files);

/*
 * Open the binary: /proc/PID/map_files/START-END, then PATH inside
 * /proc/PID/root (resolved there, ebprof/in_root.h), then PATH on the host
 * only when there is no root to look in (pid 0, the process gone, or a
 * relative PATH). Returns 0, an open read-only fd (*fd, the caller closes it)
 * and its fstat() in *st; or a negative errno: -ENOENT when no candidate
 * exists, -ENOEXEC when it is not a regular file, -EINVAL when bin names
 * nothing to open.
 */
int elfbin_open(const struct sym_binary *bin, int *fd, struct stat *st);

/* Read the identity of an open ELF file. 0, or -ENOEXEC when fd is not a
 * (well-formed enough) ELF file, -ENOMEM. Release with
 * elfbin_ident_release() on success. */
int elfbin_ident(int fd, struct elf_ident *id);
void elfbin_ident_release(struct elf_ident *id);

/* Lower-case hex of a build-id into out (2 * len + 1 bytes). */
void elfbin_hex(const unsigned char *id, size_t len, char *out);

/* File offset -> ELF virtual address through the PT_LOAD headers.
 * 0, or -ENOENT when no segment maps the offset. */
int elfbin_vaddr(const struct elf_ident *id, uint64_t offset, uint64_t *vaddr);

/*
 * Find a separate debug file: DIR/.build-id/xx/yyyy.debug for every DIR of
 * the colon-separated debug_dirs (also inside /proc/PID/root), then the
 * .gnu_debuglink name next to the binary, in its .debug/ subdirectory and
 * under every DIR. Inside the root every candidate resolves as the process
 * sees it (ebprof/in_root.h). A candidate must be a regular file of at most
 * ELFBIN_MAX_DEBUG_FILE bytes, carry the same build-id (or, without one,
 * the debuglink CRC) and not be the binary itself (self). Returns 0, its
 * name in *path (malloc'd, the caller frees; "/proc/PID/root/..." inside a
 * root: a name for logs, not to be opened again) and its open read-only fd
 * in *fd (the caller closes it; fd NULL: closed here); -ENOENT; -ESTALE
 * when none was found but a candidate could not be read whole (cut short
 * by its owner, perhaps for a while: worth looking again later); -ENOMEM.
 */
int elfbin_find_debug(const char *debug_dirs, const struct sym_binary *bin,
		      const struct elf_ident *id, const struct stat *self, char **path, int *fd);

#endif /* EBPROF_SYM_ELF_BINARY_H */
