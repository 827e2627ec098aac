// SPDX-License-Identifier: BSD-2-Clause
/*
 * Debug files with their DWARF decompressed once, on disk (debug_plain.h).
 *
 * Debian's debug packages compress their DWARF sections (SHF_COMPRESSED,
 * zlib). libdw decompresses every one of them into the heap when it opens
 * the file, whatever is looked up: for libc6-dbg's libc, 10 MiB of
 * anonymous memory (and 4 MiB of the compressed file mapped) for the few
 * functions a profile names. From a copy whose sections are stored plain,
 * libdw reads the file through its mapping instead: only the pages of the
 * units looked up become resident, and they are clean file pages the
 * kernel can take back under memory pressure.
 *
 * The copy is made in a child process, so the decompression's memory never
 * counts in the agent's resident memory: copy the file, libelf's
 * elf_compress(scn, 0, 0) on each compressed section, elf_update() lays
 * the file out again; written under a temporary name and renamed. The
 * directory is bounded: past DEBUG_PLAIN_MAX_BYTES the files used least
 * recently (mtime, touched at each use) go first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug_plain.h"
#include "sym_log.h"

static bool has_compressed_dwarf(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL); /* its headers only: read */
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;

	if (!elf)
		return false;
	if (elf_kind(elf) == ELF_K_ELF && !elf_getshdrstrndx(elf, &shstrndx)) {
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_COMPRESSED))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			found = name && !strncmp(name, ".debug_", 7);
		}
	}
	elf_end(elf);
	return found;
}

static int copy_all(int from, int to)
{
	char buf[1 << 16];
	off_t off = 0;
	ssize_t n;

	while ((n = pread(from, buf, sizeof(buf), off)) > 0) {
		for (ssize_t w = 0, k; w < n; w += k) {
			k = write(to, buf + w, (size_t)(n - w));
			if (k < 0)
				return -1;
		}
		off += n;
	}
	return n < 0 ? -1 : 0;
}

/* The child's work: tmp (created) = src with every compressed section
 * stored plain. 0 or -1. */
static int make_plain(int src, const char *tmp)
{
	int out = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	Elf_Scn *scn = NULL;
	Elf *elf;
	int ret = -1;

	if (out < 0 || copy_all(src, out))
		goto done;
	elf = elf_begin(out, ELF_C_RDWR, NULL);
	if (!elf)
		goto done;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0)
			goto end;
	}
	if (elf_update(elf, ELF_C_WRITE) >= 0 && !fsync(out))
		ret = 0;
end:
	elf_end(elf);
done:
	if (out >= 0)
		close(out);
	return ret;
}

/* Fork, make the copy in the child; 0 when it did. */
static int make_plain_apart(int src, const char *tmp)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(make_plain(src, tmp) ? 1 : 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

/* Keep dir within DEBUG_PLAIN_MAX_BYTES: the least recently used first. */
static void trim(const char *dir, const char *keep)
{
	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *de;
		char oldest[256] = "";
		struct timespec when = { 0 };
		uint64_t total = 0;

		if (!d)
			return;
		while ((de = readdir(d))) {
			struct stat st;

			if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) ||
			    !S_ISREG(st.st_mode))
				continue;
			total += (uint64_t)st.st_size;
			if (!strcmp(de->d_name, keep))
				continue;
			if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
			    (st.st_mtim.tv_sec == when.tv_sec &&
			     st.st_mtim.tv_nsec < when.tv_nsec)) {
				snprintf(oldest, sizeof(oldest), "%s", de->d_name);
				when = st.st_mtim;
			}
		}
		if (total <= DEBUG_PLAIN_MAX_BYTES || !oldest[0] || unlinkat(dirfd(d), oldest, 0)) {
			closedir(d);
			return;
		}
		sym_debug("symbolizer: %s/%s removed (plain debug files over %llu MiB)", dir,
			  oldest, (unsigned long long)(DEBUG_PLAIN_MAX_BYTES >> 20));
		closedir(d);
	}
}

/* mkdir -p of dir's last two components (the cache's parent may be new). */
static int make_dir(const char *dir)
{
	char parent[4096], *slash;

	if (!mkdir(dir, 0700) || errno == EEXIST)
		return 0;
	if (errno != ENOENT || snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
		return -1;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -1;
	*slash = '\0';
	if (mkdir(parent, 0755) && errno != EEXIST)
		return -1;
	return mkdir(dir, 0700) && errno != EEXIST ? -1 : 0;
}

int symplain_swap(const char *dir, const char *build_id, int *fd, char **path, bool *warned)
{
	char file[4096], tmp[4200];
	char *p;
	int nfd, err;

	if (!dir || !*dir || !build_id || !*build_id || *fd < 0 || !has_compressed_dwarf(*fd))
		return 0;
	if (snprintf(file, sizeof(file), "%s/%s.debug", dir, build_id) >= (int)sizeof(file))
		return 0;
	nfd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (nfd < 0) {
		if (make_dir(dir)) {
			if (!*warned)
				sym_warn("symbolizer: cannot create %s (%s): debug files are read "
					 "compressed",
					 dir, strerror(errno));
			*warned = true;
			return 0;
		}
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", file, (int)getpid());
		err = make_plain_apart(*fd, tmp);
		if (err || rename(tmp, file)) {
			if (!*warned)
				sym_warn("symbolizer: cannot store %s's DWARF uncompressed in %s "
					 "(%s): reading it compressed",
					 build_id, dir, err ? strerror(-err) : strerror(errno));
			*warned = true;
			unlink(tmp);
			return 0;
		}
		trim(dir, strrchr(file, '/') + 1);
		nfd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (nfd < 0)
			return 0;
	} else {
		futimens(nfd, NULL); /* used: the last to go */
	}
	p = strdup(file);
	if (!p) {
		close(nfd);
		return -ENOMEM;
	}
	close(*fd);
	free(*path);
	*fd = nfd;
	*path = p;
	return 0;
}
