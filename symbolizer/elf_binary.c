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

#include <ebprof/in_root.h>

#include "elf_binary.h"
#include "sym_log.h"

enum { CAND_MAP_FILES, CAND_ROOT, CAND_PATH, CAND_COUNT };

/* /proc/PID/root as a directory fd, or -1 (no pid, or the process is
 * gone). */
static int open_root(int pid)
{
	char path[32];

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Open candidate i (flags: O_RDONLY or O_PATH) and name it in buf; -ENODEV
 * when it does not apply. The path is the process's: inside its root
 * (rootfd) it resolves as the process sees it (ebprof/in_root.h); the
 * host's file of that name is tried only when there is no root to look in
 * (no pid, or the process is gone).
 */
static int open_candidate(const struct sym_binary *bin, int i, int rootfd, int flags, char *buf,
			  size_t len)
{
	int fd;

	switch (i) {
	case CAND_MAP_FILES: /* the kernel's own link to the mapped file */
		if (bin->pid <= 0 || bin->map_end <= bin->map_start)
			return -ENODEV;
		snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, bin->pid,
			 bin->map_start, bin->map_end);
		/* O_NONBLOCK: never hang on a FIFO */
		fd = open(buf, flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NONBLOCK));
		return fd < 0 ? -errno : fd;
	case CAND_ROOT:
		if (rootfd < 0 || !bin->path || bin->path[0] != '/')
			return -ENODEV;
		snprintf(buf, len, "/proc/%d/root%s", bin->pid, bin->path);
		return ebprof_open_in_root(rootfd, bin->path, flags, 0);
	case CAND_PATH:
		if (!bin->path || !bin->path[0] || (rootfd >= 0 && bin->path[0] == '/'))
			return -ENODEV;
		snprintf(buf, len, "%s", bin->path);
		fd = open(bin->path, flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NONBLOCK));
		return fd < 0 ? -errno : fd;
	default:
		return -ENODEV;
	}
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

/* The first candidate that opens (flags: O_RDONLY or O_PATH): its fd, its
 * fstat in *st, and in *which the candidate; or a negative errno. */
static int open_first(const struct sym_binary *bin, int flags, struct stat *st, int *which)
{
	int rootfd = open_root(bin->pid), first = 0, tried = 0, fd = -ENOENT;
	char path[PATH_MAX];

	for (int i = 0; i < CAND_COUNT; i++) {
		fd = open_candidate(bin, i, rootfd, flags, path, sizeof(path));
		if (fd == -ENODEV)
			continue;
		tried++;
		if (fd >= 0 && fstat(fd, st)) {
			close(fd);
			fd = -errno;
		}
		if (fd >= 0) {
			*which = i;
			if (!(flags & O_PATH))
				sym_debug("symbolizer: opened %s", path);
			break;
		}
		note_error(&first, -fd);
	}
	if (rootfd >= 0)
		close(rootfd);
	if (fd >= 0)
		return fd;
	if (!tried)
		return -EINVAL;
	return first ? first : -ENOENT;
}

int elfbin_stat(const struct sym_binary *bin, struct stat *st, bool *via_map_files)
{
	int which, fd = open_first(bin, O_PATH, st, &which);

	if (fd < 0)
		return fd;
	close(fd);
	*via_map_files = which == CAND_MAP_FILES;
	return 0;
}

int elfbin_open(const struct sym_binary *bin, int *fd, struct stat *st)
{
	int which, f = open_first(bin, O_RDONLY, st, &which);

	*fd = -1;
	if (f < 0)
		return f;
	if (!S_ISREG(st->st_mode)) {
		close(f);
		return -ENOEXEC;
	}
	*fd = f;
	return 0;
}

static const char *section_name(Elf *elf, size_t shstrndx, GElf_Shdr *sh)
{
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

/* Does every section with bytes in the file lie inside its size? A file
 * cut short (by its owner, or a copy that failed) has sections past its
 * end: libelf and libdw would read them through the mapping, past the end
 * of the file (sym_guard.h). */
static bool sections_in_file(Elf *elf, int fd)
{
	Elf_Scn *scn = NULL;
	struct stat st;

	if (fstat(fd, &st))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return false;
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > (uint64_t)st.st_size ||
						 sh.sh_size > (uint64_t)st.st_size - sh.sh_offset))
			return false;
	}
	return true;
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
	/* read, not mapped: the headers and notes only, and a file cut short
	 * meanwhile is a short read, not a SIGBUS */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) ||
	    !phdrs_in_file(fd, &eh, phnum) || !sections_in_file(elf, fd)) {
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

/* zlib's crc32 is the CRC .gnu_debuglink uses; over size bytes at most. */
static bool crc_matches(int fd, uint64_t size, uint32_t want)
{
	unsigned long crc = crc32(0L, Z_NULL, 0);
	char buf[65536];
	uint64_t done = 0;

	while (done < size) {
		size_t want_now = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		ssize_t n = pread(fd, buf, want_now, (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (!n)
			break;
		crc = crc32(crc, (const Bytef *)buf, (uInt)n);
		done += (uint64_t)n;
	}
	return (uint32_t)crc == want;
}

/* Is the open fd the debug file of id (and not self)? *cut: a candidate
 * was not for want of a matching id but because it could not be read
 * whole (cut short, most likely: it may be whole again later). */
static bool debug_candidate_ok(int fd, const struct elf_ident *id, const struct stat *self,
			       bool *cut)
{
	struct stat st;
	bool ok = false;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELFBIN_MAX_DEBUG_FILE)
		return false;
	if (self && st.st_dev == self->st_dev && st.st_ino == self->st_ino)
		return false;
	if (id->build_id_len) {
		const void *bid = NULL;
		Elf *elf = elf_begin(fd, ELF_C_READ, NULL); /* its notes only */
		ssize_t blen;

		if (!elf) {
			*cut = true;
			return false;
		}
		/* one cut short would be read past its end (sym_guard.h) */
		if (elf_kind(elf) == ELF_K_ELF && sections_in_file(elf, fd) &&
		    (blen = dwelf_elf_gnu_build_id(elf, &bid)) > 0 && bid)
			ok = (size_t)blen >= id->build_id_len &&
			     !memcmp(bid, id->build_id, id->build_id_len);
		else
			*cut = true;
		elf_end(elf);
	} else if (id->debuglink) {
		ok = crc_matches(fd, (uint64_t)st.st_size, id->debuglink_crc);
	}
	return ok;
}

/* Where the debug file is looked for: the host (rootfd < 0), or inside
 * the process's root (rootfd, named root). */
struct debug_where {
	int rootfd;
	const char *root;
	const struct elf_ident *id;
	const struct stat *self;
	bool *cut; /* debug_candidate_ok() */
};

/*
 * Try one candidate, the path rel (n: what snprintf returned for it);
 * 1 with its name (*out, malloc'd) and fd (*fd) when it is the debug
 * file, 0 when not, -ENOMEM.
 */
static int try_debug(const struct debug_where *w, const char *rel, int n, char **out, int *fd)
{
	int f;

	if (n <= 0 || (size_t)n >= PATH_MAX)
		return 0;
	if (w->rootfd >= 0)
		f = ebprof_open_in_root(w->rootfd, rel, O_RDONLY, 0);
	else /* O_NONBLOCK: a FIFO does not block the open */
		f = open(rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f < 0)
		return 0;
	if (!debug_candidate_ok(f, w->id, w->self, w->cut)) {
		close(f);
		return 0;
	}
	if (asprintf(out, "%s%s", w->rootfd >= 0 ? w->root : "", rel) < 0) {
		*out = NULL;
		close(f);
		return -ENOMEM;
	}
	sym_debug("symbolizer: debug file %s", *out);
	*fd = f;
	return 1;
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

/* DIR/.build-id/xx/yyyy.debug for every DIR (only absolute ones inside a
 * root). */
static int by_build_id(const struct debug_where *w, const char *dirs, char **out, int *fd)
{
	char buf[PATH_MAX], hex[2 * ELFBIN_MAX_BUILD_ID + 1];
	const char *dir;
	size_t dlen;
	int r;

	if (w->id->build_id_len < 2)
		return 0;
	elfbin_hex(w->id->build_id, w->id->build_id_len, hex);
	while (next_dir(&dirs, &dir, &dlen)) {
		if (w->rootfd >= 0 && dir[0] != '/')
			continue;
		r = try_debug(w, buf,
			      snprintf(buf, sizeof(buf), "%.*s/.build-id/%.2s/%s.debug", (int)dlen,
				       dir, hex, hex + 2),
			      out, fd);
		if (r)
			return r;
	}
	return 0;
}

/* The .gnu_debuglink name next to the binary, in .debug/ beside it, and
 * under every DIR by the binary's directory. */
static int by_debuglink(const struct debug_where *w, const char *dirs, const char *bin_path,
			char **out, int *fd)
{
	const char *slash = strrchr(bin_path, '/'), *link = w->id->debuglink, *dir;
	int bdlen = slash ? (int)(slash - bin_path) : 1, r;
	const char *bdir = slash ? bin_path : ".";
	bool abs = bin_path[0] == '/';
	char buf[PATH_MAX];
	size_t dlen;

	if (w->rootfd >= 0 && !abs)
		return 0;
	r = try_debug(w, buf, snprintf(buf, sizeof(buf), "%.*s/%s", bdlen, bdir, link), out, fd);
	if (r)
		return r;
	r = try_debug(w, buf, snprintf(buf, sizeof(buf), "%.*s/.debug/%s", bdlen, bdir, link), out,
		      fd);
	if (r || !abs)
		return r;
	while (next_dir(&dirs, &dir, &dlen)) {
		if (w->rootfd >= 0 && dir[0] != '/')
			continue;
		r = try_debug(w, buf,
			      snprintf(buf, sizeof(buf), "%.*s%.*s/%s", (int)dlen, dir, bdlen, bdir,
				       link),
			      out, fd);
		if (r)
			return r;
	}
	return 0;
}

int elfbin_find_debug(const char *debug_dirs, const struct sym_binary *bin,
		      const struct elf_ident *id, const struct stat *self, char **path, int *fd)
{
	bool cut = false;
	struct debug_where w[2] = { { .rootfd = -1, .id = id, .self = self, .cut = &cut } };
	char root[32];
	int r = 0, nw = 1, f = -1;

	*path = NULL;
	if (fd)
		*fd = -1;
	if (!debug_dirs)
		debug_dirs = "/usr/lib/debug";
	if (bin->pid > 0) {
		snprintf(root, sizeof(root), "/proc/%d/root", bin->pid);
		w[1] = (struct debug_where){
			.rootfd = open_root(bin->pid),
			.root = root,
			.id = id,
			.self = self,
			.cut = &cut,
		};
		nw += w[1].rootfd >= 0;
	}
	/* The host's directories first, then the process's root. */
	for (int i = 0; i < nw && !r; i++)
		r = by_build_id(&w[i], debug_dirs, path, &f);
	if (id->debuglink && bin->path && bin->path[0])
		for (int i = 0; i < nw && !r; i++)
			r = by_debuglink(&w[i], debug_dirs, bin->path, path, &f);
	if (nw > 1)
		close(w[1].rootfd);
	if (r < 0)
		return r;
	if (!r)
		return cut ? -ESTALE : -ENOENT;
	if (fd)
		*fd = f;
	else
		close(f);
	return 0;
}
