// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk cache of unwind tables (symbolizer.h): DIR/BUILD_ID.unwind,
 * and the identity of a binary to look a table up by, read without opening
 * it for symbolization (sym_binary_ident()).
 *
 * a header and the rows as the BPF program takes them. Written to a
 * temporary file and renamed (never half a file); read back only after
 * every field is checked, since a file of another version, truncated or
 * corrupt, must not become rules the unwinder follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"
#include "elf_binary.h"

#define CACHE_MAGIC "EBPFUNW1"
#define CACHE_VERSION 2u

struct cache_head {
	char magic[8];
	__u32 version;
	__u32 row_size;
	__u64 n, fdes, unsupported;
	char source[24];
};

/* DIR/BUILD_ID.unwind; -EINVAL for a build-id that is not plain hex. */
static int cache_path(const char *dir, const char *build_id, char *path, size_t len)
{
	size_t n = strlen(build_id);

	if (!n || n > 128 || strspn(build_id, "0123456789abcdef") != n)
		return -EINVAL;
	if ((size_t)snprintf(path, len, "%s/%s.unwind", dir, build_id) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static bool rows_valid(const struct unwind_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (r[i].cfa > UNWIND_CFA_UNSUPPORTED || (i && r[i].pc <= r[i - 1].pc))
			return false;
	}
	return true;
}

int sym_unwind_cache_load(const char *dir, const char *build_id, struct sym_unwind_table *out)
{
	struct cache_head h;
	struct stat st;
	char path[4096];
	int fd, ret;

	memset(out, 0, sizeof(*out));
	if ((ret = cache_path(dir, build_id, path, sizeof(path))))
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	ret = -EINVAL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || read(fd, &h, sizeof(h)) != sizeof(h) ||
	    memcmp(h.magic, CACHE_MAGIC, 8) || h.version != CACHE_VERSION ||
	    h.row_size != sizeof(struct unwind_row) || !h.n || h.n > EBPROF_MAX_TABLE_ROWS ||
	    (uint64_t)st.st_size != sizeof(h) + h.n * sizeof(struct unwind_row))
		goto bad;
	out->rows = malloc(h.n * sizeof(struct unwind_row));
	if (!out->rows) {
		ret = -ENOMEM;
		goto out;
	}
	if (read(fd, out->rows, h.n * sizeof(struct unwind_row)) !=
		    (ssize_t)(h.n * sizeof(struct unwind_row)) ||
	    !rows_valid(out->rows, h.n))
		goto bad;
	out->n = h.n;
	out->fdes = h.fdes;
	out->unsupported = h.unsupported;
	out->source =
		!strncmp(h.source, "debug_frame", sizeof(h.source)) ? "debug_frame" : "eh_frame";
	close(fd);
	return 0;
bad:
	unlink(path); /* built again, and saved right, next time */
out:
	close(fd);
	sym_unwind_table_free(out);
	return ret;
}

/* mkdir -p, each new directory 0700 (root's cache). */
static int make_dirs(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) && errno != EEXIST)
			return -errno;
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
}

int sym_unwind_cache_save(const char *dir, const char *build_id, const struct sym_unwind_table *t)
{
	struct cache_head h = { .version = CACHE_VERSION, .row_size = sizeof(struct unwind_row) };
	char path[4096], tmp[4200];
	size_t bytes = t->n * sizeof(struct unwind_row);
	int fd, ret = 0;

	if ((ret = cache_path(dir, build_id, path, sizeof(path))))
		return ret;
	if ((ret = make_dirs(dir)))
		return ret;
	memcpy(h.magic, CACHE_MAGIC, 8);
	h.n = t->n;
	h.fdes = t->fdes;
	h.unsupported = t->unsupported;
	snprintf(h.source, sizeof(h.source), "%s", t->source ? t->source : "");
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, &h, sizeof(h)) != sizeof(h) || write(fd, t->rows, bytes) != (ssize_t)bytes)
		ret = errno ? -errno : -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int sym_binary_ident(const struct sym_binary *bin, uint64_t file_offset, char *build_id, size_t len,
		     uint64_t *vaddr)
{
	struct elf_ident id;
	struct stat st;
	int fd, ret;

	if (len < 2 * ELFBIN_MAX_BUILD_ID + 1)
		return -EINVAL;
	if ((ret = elfbin_open(bin, &fd, &st)))
		return ret;
	ret = elfbin_ident(fd, &id);
	close(fd);
	if (ret)
		return ret;
	elfbin_hex(id.build_id, id.build_id_len, build_id);
	ret = elfbin_vaddr(&id, file_offset, vaddr);
	elfbin_ident_release(&id);
	return ret;
}
