// SPDX-License-Identifier: BSD-2-Clause
/*
 * The core kernel's symbols kept in a file for the boot (kallsyms.h):
 * reading /proc/kallsyms makes the kernel format some 130 000 lines, 5
 * MiB, about 50 ms of CPU a recording paid each time, while the core
 * kernel's text and its symbols never change until the next boot (its
 * address is randomized at boot, not later). Modules, BPF programs and
 * ftrace trampolines come and go: they are not in the file, and an
 * address outside the core kernel's range still reads /proc/kallsyms.
 *
 * The file: a header (magic, the boot's id, counts, the range covered),
 * then the symbols and their names as struct ksyms holds them. One of
 * another boot, or that does not read back whole, is not used (and is
 * replaced by the next full read).
 *
 * The table is used where it lies: the file is mapped (read only, private)
 * rather than copied to the heap, some 2.4 MiB the agent kept resident
 * for as long as it ran. A lookup touches the few pages its bisection
 * reads; ksyms_core_drop_pages() gives them back (clean file pages,
 * refaulted from the page cache when needed). The file is only ever
 * replaced by rename(), never rewritten in place, so the mapping's inode
 * keeps its content; should it be cut short all the same (another writer,
 * a repair tool), its reads are guarded (sym_guard.h): the table is then
 * given up (-EIO), never a SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kallsyms.h"
#include "kallsyms_internal.h"
#include "sym_guard.h"

#define KCACHE_MAGIC "EBPKSYM1"
#define KCACHE_MAX_SYMS (1u << 22)
#define KCACHE_MAX_NAMES (256u << 20)

_Static_assert(sizeof(struct ksym) == 16, "the file's layout: bump KCACHE_MAGIC");

struct kcache_hdr {
	char magic[8];
	char boot_id[40];
	uint64_t n, names_len;
	uint64_t lo, hi; /* [lo, hi): the core kernel's text */
};

struct ksyms_core {
	struct ksyms *ks; /* its syms and names point into map */
	uint64_t lo, hi;
	void *map; /* the file, mapped whole */
	size_t map_len;
};

/* This boot's id, "" when unknown. */
static void boot_id(char *buf, size_t size)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n > 0 ? n : 0] = '\0';
}

static int write_all_fd(int fd, const void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* Is the table of h, mapped at base (len bytes), what was written? The
 * pages read are given back every KCACHE_CHECK_WINDOW symbols (256 KiB):
 * the check does not hold the whole table resident. */
#define KCACHE_CHECK_WINDOW 16384
static bool core_valid(const struct kcache_hdr *h, const char *id, const char *base, size_t len)
{
	const struct ksym *syms = (const struct ksym *)(base + sizeof(*h));
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (memcmp(h->magic, KCACHE_MAGIC, 8) || strncmp(h->boot_id, id, sizeof(h->boot_id)) ||
	    !h->n || h->n > KCACHE_MAX_SYMS || h->names_len > KCACHE_MAX_NAMES || h->lo >= h->hi ||
	    len != sizeof(*h) + h->n * sizeof(*syms) + h->names_len)
		return false;
	for (size_t i = 0; i < h->n; i++) {
		if (syms[i].name_off >= h->names_len || (i && syms[i].addr <= syms[i - 1].addr))
			return false;
		if (i && i % KCACHE_CHECK_WINDOW == 0) /* whole pages before syms[i - 1] */
			madvise((void *)base,
				((uintptr_t)&syms[i - 1] - (uintptr_t)base) & ~(page - 1),
				MADV_DONTNEED);
	}
	return !h->names_len || !base[len - 1]; /* the names end in a '\0' */
}

int ksyms_core_read(const char *path, struct ksyms_core **out)
{
	struct kcache_hdr h;
	struct ksyms_core *c = NULL;
	struct stat st;
	void *map = MAP_FAILED;
	struct symg g;
	char id[64];
	int fd, ret = 0;

	*out = NULL;
	boot_id(id, sizeof(id));
	if (!id[0])
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (st.st_size < (off_t)sizeof(h))
		ret = -ESTALE;
	else if ((map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) ==
		 MAP_FAILED)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	symg_enter(&g);
	memcpy(&h, map, sizeof(h));
	if (!core_valid(&h, id, map, (size_t)st.st_size))
		ret = -ESTALE;
	if (symg_leave(&g))
		ret = -EIO;
	/* the check read every page: none is needed until a lookup */
	madvise(map, (size_t)st.st_size, MADV_DONTNEED);
	if (!ret && (!(c = calloc(1, sizeof(*c))) || !(c->ks = calloc(1, sizeof(*c->ks))) ||
		     !(c->ks->runs = calloc(1, sizeof(*c->ks->runs))))) /* one run: the core */
		ret = -ENOMEM;
	if (ret) {
		if (c)
			free(c->ks);
		free(c);
		munmap(map, (size_t)st.st_size);
		return ret;
	}
	c->ks->n = h.n;
	c->ks->nruns = 1;
	c->ks->syms = (struct ksym *)((char *)map + sizeof(h));
	c->ks->names = (char *)(c->ks->syms + h.n);
	c->lo = h.lo;
	c->hi = h.hi;
	c->map = map;
	c->map_len = (size_t)st.st_size;
	*out = c;
	return 0;
}

/* The core kernel's symbols of ks, the names they use, and their range. */
static int core_of(const struct ksyms *ks, struct ksym **syms, size_t *n, char **names,
		   size_t *names_len, uint64_t *lo, uint64_t *hi)
{
	size_t cap = 0;

	*syms = malloc((ks->n ? ks->n : 1) * sizeof(**syms));
	*n = *names_len = 0;
	*names = NULL;
	if (!*syms)
		return -ENOMEM;
	for (size_t r = 0; r < ks->nruns; r++) {
		size_t end = r + 1 < ks->nruns ? ks->runs[r + 1].first : ks->n;

		for (size_t i = ks->runs[r].first; ks->runs[r].mod == 0 && i < end; i++) {
			const char *name = ks->names + ks->syms[i].name_off;
			size_t len = strlen(name) + 1;

			if (*names_len + len > cap) {
				size_t c = cap ? cap * 2 : 1 << 20;
				char *p;

				while (c < *names_len + len)
					c *= 2;
				if (!(p = realloc(*names, c)))
					return -ENOMEM;
				*names = p;
				cap = c;
			}
			memcpy(*names + *names_len, name, len);
			(*syms)[*n] = ks->syms[i];
			(*syms)[*n].name_off = (uint32_t)*names_len;
			*names_len += len;
			(*n)++;
		}
	}
	if (!*n)
		return -ENODATA;
	*lo = (*syms)[0].addr - (*syms)[0].pad;
	*hi = (*syms)[*n - 1].addr + ((*syms)[*n - 1].size ? (*syms)[*n - 1].size : 1);
	return 0;
}

int ksyms_core_write(const char *path, const struct ksyms *ks)
{
	struct kcache_hdr h = { .magic = KCACHE_MAGIC };
	char id[64], tmp[4096], *names = NULL, *slash;
	struct ksym *syms = NULL;
	size_t n, names_len;
	int fd = -1, ret;

	boot_id(id, sizeof(id));
	if (!id[0] || snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENOENT;
	ret = core_of(ks, &syms, &n, &names, &names_len, &h.lo, &h.hi);
	if (ret)
		goto out;
	memcpy(h.boot_id, id, strlen(id) < sizeof(h.boot_id) ? strlen(id) : sizeof(h.boot_id) - 1);
	h.n = n;
	h.names_len = names_len;
	slash = strrchr(tmp, '/');
	if (slash && slash != tmp) { /* its directory, one level */
		*slash = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST) {
			ret = -errno;
			goto out;
		}
		*slash = '/';
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all_fd(fd, &h, sizeof(h));
	if (!ret)
		ret = write_all_fd(fd, syms, n * sizeof(*syms));
	if (!ret)
		ret = write_all_fd(fd, names, names_len);
	if (!ret && (fchmod(fd, 0644) || rename(tmp, path)))
		ret = -errno;
	close(fd);
	if (ret)
		unlink(tmp);
out:
	free(syms);
	free(names);
	return ret;
}

bool ksyms_core_covers(const struct ksyms_core *c, uint64_t addr)
{
	return c && addr >= c->lo && addr < c->hi;
}

void ksyms_core_range(const struct ksyms_core *c, uint64_t *lo, uint64_t *hi)
{
	*lo = c ? c->lo : 0;
	*hi = c ? c->hi : 0;
}

const struct ksyms *ksyms_core_table(const struct ksyms_core *c)
{
	return c ? c->ks : NULL;
}

int ksyms_core_lookup(const struct ksyms_core *c, uint64_t addr, char **buf, size_t *cap)
{
	const char *name = NULL;
	struct symg g;
	size_t len = 0;
	int found;

	symg_enter(&g);
	found = ksyms_lookup(c->ks, addr, &name, NULL, NULL);
	if (found) {
		len = strlen(name) + 1;
		if (len > *cap) {
			char *p = realloc(*buf, len);

			if (p) {
				*buf = p;
				*cap = len;
			} else {
				found = -ENOMEM;
			}
		}
		if (found > 0)
			memcpy(*buf, name, len);
	}
	if (symg_leave(&g))
		return -EIO;
	return found;
}

void ksyms_core_drop_pages(struct ksyms_core *c)
{
	if (c)
		madvise(c->map, c->map_len, MADV_DONTNEED);
}

void ksyms_core_free(struct ksyms_core *c)
{
	if (!c)
		return;
	/* syms and names are the mapping's, not the heap's */
	free(c->ks->runs);
	free(c->ks);
	munmap(c->map, c->map_len);
	free(c);
}
