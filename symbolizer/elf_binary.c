// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <zlib.h>

#include "elf_binary.h"
#include "sym_log.h"

enum { CAND_MAP_FILES, CAND_ROOT, CAND_PATH, CAND_COUNT };

/* Path of candidate i into buf; false when it does not apply. */
static bool candidate(const struct sym_binary *bin, int i, char *buf, size_t len)
{
	int n;

	switch (i) {
	case CAND_MAP_FILES:
		if (bin->pid <= 0 || bin->map_end <= bin->map_start)
			return false;
		n = snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, bin->pid,
			     bin->map_start, bin->map_end);
		break;
	case CAND_ROOT:
		if (bin->pid <= 0 || !bin->path || bin->path[0] != '/')
			return false;
		n = snprintf(buf, len, "/proc/%d/root%s", bin->pid, bin->path);
		break;
	case CAND_PATH:
		if (!bin->path || !bin->path[0])
			return false;
		n = snprintf(buf, len, "%s", bin->path);
		break;
	default:
		return false;
	}
	return n > 0 && (size_t)n < len;
}

static bool is_missing(int err)
{
	return err == ENOENT || err == ENOTDIR || err == ESRCH;
}

/* Keep the first error that is not "missing"; -ENOENT otherwise. */
static void note_error(int *first, int err)
{
	if (!is_missing(err) && !*first)
		*first = -err;
}

int elfbin_stat(const struct sym_binary *bin, struct stat *st, bool *via_map_files)
{
	char path[PATH_MAX];
	int first = 0, tried = 0;

	for (int i = 0; i < CAND_COUNT; i++) {
		if (!candidate(bin, i, path, sizeof(path)))
			continue;
		tried++;
		if (!stat(path, st)) {
			*via_map_files = i == CAND_MAP_FILES;
			return 0;
		}
		note_error(&first, errno);
	}
	if (!tried)
		return -EINVAL;
	return first ? first : -ENOENT;
}

int elfbin_open(const struct sym_binary *bin, int *fd, struct stat *st)
{
	char path[PATH_MAX];
	int first = 0, tried = 0;

	*fd = -1;
	for (int i = 0; i < CAND_COUNT; i++) {
		int f;

		if (!candidate(bin, i, path, sizeof(path)))
			continue;
		tried++;
		/* O_NONBLOCK: never hang on a FIFO */
		f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (f < 0) {
			note_error(&first, errno);
			continue;
		}
		if (fstat(f, st)) {
			note_error(&first, errno);
			close(f);
			continue;
		}
		if (!S_ISREG(st->st_mode)) {
			close(f);
			return -ENOEXEC;
		}
		sym_debug("symbolizer: opened %s", path);
		*fd = f;
		return 0;
	}
	if (!tried)
		return -EINVAL;
	return first ? first : -ENOENT;
}

static const char *section_name(Elf *elf, size_t shstrndx, GElf_Shdr *sh)
{
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

static void scan_sections(Elf *elf, struct elf_ident *id)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return;
		if (sh.sh_type == SHT_SYMTAB)
			id->has_symtab = true;
		if (sh.sh_type == SHT_NOBITS)
			continue;
		name = section_name(elf, shstrndx, &sh);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			id->has_dwarf = true;
		if (name && !strcmp(name, ".gnu_debugdata"))
			id->has_debugdata = true;
	}
}

/* Do the program headers the ELF header announces lie inside the file? A
 * file cut after its header has none libelf can read: nothing of it could
 * ever be resolved. */
static bool phdrs_in_file(int fd, const GElf_Ehdr *eh, size_t phnum)
{
	size_t want = eh->e_phnum == PN_XNUM ? phnum : eh->e_phnum;
	struct stat st;

	if (!want)
		return true;
	if (want != phnum || fstat(fd, &st) || eh->e_phoff > (uint64_t)st.st_size)
		return false;
	return want <=
	       ((uint64_t)st.st_size - eh->e_phoff) / (eh->e_phentsize ? eh->e_phentsize : 1);
}

int elfbin_ident(int fd, struct elf_ident *id)
{
	const void *bid = NULL;
	const char *link;
	GElf_Word crc = 0;
	GElf_Ehdr eh;
	size_t phnum;
	ssize_t blen;
	Elf *elf;
	int err = 0;

	memset(id, 0, sizeof(*id));
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) ||
	    !phdrs_in_file(fd, &eh, phnum)) {
		err = -ENOEXEC;
		goto out;
	}
	if (phnum) {
		id->loads = calloc(phnum, sizeof(*id->loads));
		if (!id->loads) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = -ENOEXEC;
			goto out;
		}
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		id->loads[id->nloads].offset = ph.p_offset;
		id->loads[id->nloads].filesz = ph.p_filesz;
		id->loads[id->nloads].vaddr = ph.p_vaddr;
		id->nloads++;
	}
	blen = dwelf_elf_gnu_build_id(elf, &bid);
	if (blen > 0 && bid) {
		id->build_id_len =
			(size_t)blen < sizeof(id->build_id) ? (size_t)blen : sizeof(id->build_id);
		memcpy(id->build_id, bid, id->build_id_len);
	}
	scan_sections(elf, id);
	link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (link && link[0] && !strchr(link, '/')) {
		id->debuglink = strdup(link);
		if (!id->debuglink) {
			err = -ENOMEM;
			goto out;
		}
		id->debuglink_crc = crc;
	}
out:
	elf_end(elf);
	if (err)
		elfbin_ident_release(id);
	return err;
}

void elfbin_ident_release(struct elf_ident *id)
{
	free(id->loads);
	free(id->debuglink);
	id->loads = NULL;
	id->debuglink = NULL;
	id->nloads = 0;
}

void elfbin_hex(const unsigned char *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

int elfbin_vaddr(const struct elf_ident *id, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < id->nloads; i++) {
		const struct elf_load *l = &id->loads[i];

		if (offset >= l->offset && offset - l->offset < l->filesz) {
			*vaddr = offset - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* zlib's crc32 is the CRC .gnu_debuglink uses. */
static bool crc_matches(int fd, uint32_t want)
{
	unsigned long crc = crc32(0L, Z_NULL, 0);
	char buf[65536];
	off_t done = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (!n)
			break;
		crc = crc32(crc, (const Bytef *)buf, (uInt)n);
		done += n;
	}
	return (uint32_t)crc == want;
}

static bool debug_candidate_ok(const char *path, const struct elf_ident *id,
			       const struct stat *self)
{
	struct stat st;
	bool ok = false;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out;
	if (self && st.st_dev == self->st_dev && st.st_ino == self->st_ino)
		goto out;
	if (id->build_id_len) {
		const void *bid = NULL;
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		ssize_t blen;

		if (!elf)
			goto out;
		if (elf_kind(elf) == ELF_K_ELF) {
			blen = dwelf_elf_gnu_build_id(elf, &bid);
			ok = blen > 0 && (size_t)blen >= id->build_id_len && bid &&
			     !memcmp(bid, id->build_id, id->build_id_len);
		}
		elf_end(elf);
	} else if (id->debuglink) {
		ok = crc_matches(fd, id->debuglink_crc);
	}
out:
	close(fd);
	if (ok)
		sym_debug("symbolizer: debug file %s", path);
	return ok;
}

/* Try one candidate; 1 and *out when it is the debug file. */
static int try_debug(char *buf, size_t len, int n, const struct elf_ident *id,
		     const struct stat *self, char **out)
{
	if (n <= 0 || (size_t)n >= len)
		return 0;
	if (!debug_candidate_ok(buf, id, self))
		return 0;
	*out = strdup(buf);
	return *out ? 1 : -ENOMEM;
}

/* Next element of a colon-separated list; false at the end. */
static bool next_dir(const char **list, const char **dir, size_t *len)
{
	const char *p = *list;

	while (*p == ':')
		p++;
	if (!*p)
		return false;
	*dir = p;
	while (*p && *p != ':')
		p++;
	*len = p - *dir;
	*list = p;
	return true;
}

int elfbin_find_debug(const char *debug_dirs, const struct sym_binary *bin,
		      const struct elf_ident *id, const struct stat *self, char **path)
{
	char buf[PATH_MAX], root[64] = "", hex[2 * ELFBIN_MAX_BUILD_ID + 1];
	const char *list, *dir;
	size_t dlen;
	int r, nroots;

	*path = NULL;
	if (!debug_dirs)
		debug_dirs = "/usr/lib/debug";
	if (bin->pid > 0)
		snprintf(root, sizeof(root), "/proc/%d/root", bin->pid);
	nroots = root[0] ? 2 : 1;

	if (id->build_id_len >= 2) {
		elfbin_hex(id->build_id, id->build_id_len, hex);
		for (int ri = 0; ri < nroots; ri++) {
			const char *rp = ri ? root : "";

			list = debug_dirs;
			while (next_dir(&list, &dir, &dlen)) {
				if (ri && dir[0] != '/')
					continue;
				r = try_debug(buf, sizeof(buf),
					      snprintf(buf, sizeof(buf),
						       "%s%.*s/.build-id/%.2s/%s.debug", rp,
						       (int)dlen, dir, hex, hex + 2),
					      id, self, path);
				if (r)
					return r < 0 ? r : 0;
			}
		}
	}

	if (id->debuglink && bin->path && bin->path[0]) {
		const char *slash = strrchr(bin->path, '/');
		int bdlen = slash ? (int)(slash - bin->path) : 1;
		const char *bdir = slash ? bin->path : ".";
		bool abs = bin->path[0] == '/';

		for (int ri = 0; ri < nroots; ri++) {
			const char *rp = ri ? root : "";

			if (ri && !abs)
				continue;
			r = try_debug(buf, sizeof(buf),
				      snprintf(buf, sizeof(buf), "%s%.*s/%s", rp, bdlen, bdir,
					       id->debuglink),
				      id, self, path);
			if (r)
				return r < 0 ? r : 0;
			r = try_debug(buf, sizeof(buf),
				      snprintf(buf, sizeof(buf), "%s%.*s/.debug/%s", rp, bdlen,
					       bdir, id->debuglink),
				      id, self, path);
			if (r)
				return r < 0 ? r : 0;
			if (!abs)
				continue;
			list = debug_dirs;
			while (next_dir(&list, &dir, &dlen)) {
				if (ri && dir[0] != '/')
					continue;
				r = try_debug(buf, sizeof(buf),
					      snprintf(buf, sizeof(buf), "%s%.*s%.*s/%s", rp,
						       (int)dlen, dir, bdlen, bdir, id->debuglink),
					      id, self, path);
				if (r)
					return r < 0 ? r : 0;
			}
		}
	}
	return -ENOENT;
}
