// SPDX-License-Identifier: BSD-2-Clause
/*
 * Plain copies of debug files whose sections are compressed (debug_plain.h).
 *
 * libdw inflates every compressed .debug_* section of a debug file as it
 * opens it: Debian's libc6-dbg (4 MiB, zlib) cost a short recording a
 * third of its CPU, at every start. The first time such a file is opened,
 * a copy with its sections decompressed is written to DIR/BUILD_ID.debug
 * (a temporary file renamed: never half a file; libelf lays the sections
 * out anew, the program headers and every section's contents stay); later
 * opens take the copy, mapped from the page cache, once its build-id is
 * checked against the one asked for. The directory is trimmed least
 * recently used first to its bound. Any failure leaves the original in
 * use, said at debug level.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug_plain.h"
#include "debuginfod.h"
#include "elf_binary.h"
#include "sym_log.h"

#define DEFAULT_BOUND (256ULL << 20)

/* Does the ELF file on fd have a compressed section? */
static bool has_compressed(int fd)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	bool yes = false;

	while (e && !yes && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		yes = gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		      sh.sh_type != SHT_NOBITS;
	}
	elf_end(e);
	return yes;
}

/* fd's file open read-only when it is an ELF file of build-id hex, else
 * -1 (closed). */
static int check_id(int fd, const char *hex)
{
	char got[2 * ELFBIN_MAX_BUILD_ID + 1] = "";
	struct elf_ident id;

	if (fd < 0)
		return -1;
	if (!elfbin_ident(fd, &id)) {
		elfbin_hex(id.build_id, id.build_id_len, got);
		elfbin_ident_release(&id);
	}
	if (strcmp(got, hex)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Copy src (open) to the new file dst with its compressed sections
 * decompressed. 0 or a negative errno (dst removed). */
static int write_plain(int src, const char *dst)
{
	int out = open(dst, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	struct stat st;
	off_t off = 0;
	Elf_Scn *scn = NULL;
	Elf *e = NULL;
	int err = 0;

	if (out < 0)
		return -errno;
	if (fstat(src, &st)) {
		err = -errno;
		goto out;
	}
	while (off < st.st_size) {
		ssize_t n = copy_file_range(src, &off, out, NULL, (size_t)(st.st_size - off), 0);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto out;
		}
	}
	e = elf_begin(out, ELF_C_RDWR, NULL);
	if (!e) {
		err = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    sh.sh_type != SHT_NOBITS && elf_compress(scn, 0, 0) < 0) {
			err = -ENOEXEC;
			goto out;
		}
	}
	if (elf_update(e, ELF_C_WRITE) < 0 || fsync(out))
		err = -EIO;
out:
	if (e)
		elf_end(e);
	close(out);
	if (err)
		unlink(dst);
	return err;
}

void symdp_take(const char *dir, uint64_t bound, const char *hex, int *debug_fd)
{
	char *path, *tmp = NULL;
	int fd, err;

	if (!dir || !dir[0] || !hex || !hex[0] || *debug_fd < 0)
		return;
	path = symdi_cache_path(dir, hex, "debug");
	if (!path)
		return;
	fd = check_id(open(path, O_RDONLY | O_CLOEXEC), hex);
	if (fd >= 0) {
		utimensat(AT_FDCWD, path, NULL, 0); /* recently used: trimmed last */
		goto take;
	}
	if (!has_compressed(*debug_fd))
		goto out;
	err = symdi_mkdirs(dir);
	if (!err && asprintf(&tmp, "%s/.%s.%d.tmp", dir, hex, (int)getpid()) < 0) {
		tmp = NULL;
		err = -ENOMEM;
	}
	if (!err)
		err = write_plain(*debug_fd, tmp);
	if (!err && rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
	}
	if (err) {
		sym_debug("symbolizer: no plain copy of the debug file of %s in %s: %s", hex, dir,
			  strerror(-err));
		goto out;
	}
	symdi_cache_trim(dir, bound ? bound : DEFAULT_BOUND, strrchr(path, '/') + 1);
	fd = check_id(open(path, O_RDONLY | O_CLOEXEC), hex);
	if (fd < 0)
		goto out;
take:
	close(*debug_fd);
	*debug_fd = fd;
out:
	free(tmp);
	free(path);
}
