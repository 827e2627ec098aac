// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unwind tables in the kernel (unwind_tables.h): binaries by identity
 * (device + inode as /proc/PID/maps names them) and by build-id, one
 * array map per table, one mapping set per process.
 */
#include <errno.h>
#include <elf.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"
#include "unwind_tables.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/timeutil.h"

#define DEFAULT_BUDGET (64ull << 20)
#define DEFAULT_CACHE "/var/cache/ebprof/unwind"
#define MAX_SEGS 8
#define NO_TABLE UINT32_MAX
#define MAX_PENDING 64

/* A table loaded into the kernel (or known not to be loadable). */
struct ut_table {
	uint32_t id;	/* index in unwind_tables, NO_TABLE: none */
	uint32_t nrows; /* entries: page index and rows */
	uint32_t page_base, npages;
};

/* A binary as processes map it: its table and file offset -> vaddr of
 * the segments seen (a mapping's load bias without opening it again). */
struct ut_bin {
	uint64_t dev, inode; /* the key */
	struct ut_table *table;
	size_t nsegs;
	uint64_t seg_off[MAX_SEGS], seg_vaddr[MAX_SEGS];
};

/* A table made, its map not yet in unwind_tables. */
struct ut_pending {
	struct ut_table *table;
	int fd;
	size_t bytes, rows;
};

/* A mapping set in `unwind_sets`: the hash of its content, its users. */
struct ut_set {
	uint64_t hash;
	uint32_t refs; /* 0: free */
};

struct unwind_tables {
	struct symbolizer *sym;
	int outer_fd, pids_fd, sets_fd;
	uint32_t nsets;
	struct ut_set *sets;
	/* Free sets, oldest freed first: a forked child the BPF program gave
	 * a set userspace freed since reads it cleared (frame pointers)
	 * rather than another layout, for as long as possible. */
	uint32_t *fifo, fifo_head, fifo_len;
	struct hashmap *pid_set; /* pid -> set index + 1 (as a pointer) */
	char *cache_dir;	 /* NULL: no disk cache */
	uint64_t budget;
	struct hashmap *bins;	  /* struct ut_bin, by (dev, inode) */
	struct hashmap *by_build; /* struct ut_table, by build-id string (owned key) */
	struct ut_table vdso;	  /* id NO_TABLE when it has none */
	uint64_t vdso_base;	  /* vaddr - file offset of its segments */
	bool vdso_tried;
	uint32_t next_id;
	struct unwind_tables_stats st;
	struct ut_pending pending[MAX_PENDING];
	size_t npending;
	uint32_t failed[MAX_PENDING]; /* ids the last flush could not put in place */
	size_t nfailed;
	struct unwind_proc proc; /* scratch: 4 KiB, not on the stack */
};

static uint64_t bin_hash(const void *k)
{
	const struct ut_bin *b = k;

	return hm_mix64(b->dev * 0x9e3779b97f4a7c15ull ^ b->inode);
}

static bool bin_equal(const void *a, const void *b)
{
	const struct ut_bin *x = a, *y = b;

	return x->dev == y->dev && x->inode == y->inode;
}

int unwind_tables_new(const struct unwind_tables_opts *o, int outer_fd, int pids_fd, int sets_fd,
		      uint32_t nsets, struct unwind_tables **out)
{
	struct sym_opts so = { .max_cache_bytes = 16u << 20 };
	struct unwind_tables *u = calloc(1, sizeof(*u));
	const char *dir = o->cache_dir ? o->cache_dir : DEFAULT_CACHE;
	int ret;

	if (!u)
		return -ENOMEM;
	u->outer_fd = outer_fd;
	u->pids_fd = pids_fd;
	u->sets_fd = sets_fd;
	u->nsets = nsets;
	u->sets = calloc(nsets ? nsets : 1, sizeof(*u->sets));
	u->fifo = calloc(nsets ? nsets : 1, sizeof(*u->fifo));
	u->pid_set = hm_new_u64();
	if (!u->sets || !u->fifo || !u->pid_set)
		goto nomem;
	for (uint32_t i = 0; i < nsets; i++)
		u->fifo[u->fifo_len++] = i;
	u->budget = o->budget_bytes ? o->budget_bytes : DEFAULT_BUDGET;
	u->vdso.id = NO_TABLE;
	u->bins = hm_new(bin_hash, bin_equal);
	u->by_build = hm_new(hm_hash_str, hm_equal_str);
	if (*dir && !(u->cache_dir = strdup(dir)))
		goto nomem;
	if (!u->bins || !u->by_build)
		goto nomem;
	ret = sym_new(&so, &u->sym);
	if (ret) {
		unwind_tables_free(u);
		return ret;
	}
	*out = u;
	return 0;
nomem:
	unwind_tables_free(u);
	return -ENOMEM;
}

void unwind_tables_free(struct unwind_tables *u)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (!u)
		return;
	for (size_t i = 0; i < u->npending; i++)
		close(u->pending[i].fd);
	while (u->bins && hm_next(u->bins, &it, &k, &v))
		free(v);
	it = 0;
	while (u->by_build && hm_next(u->by_build, &it, &k, &v)) {
		free((void *)k);
		free(v);
	}
	hm_free(u->bins);
	hm_free(u->by_build);
	hm_free(u->pid_set);
	free(u->sets);
	free(u->fifo);
	sym_free(u->sym);
	free(u->cache_dir);
	free(u);
}

/*
 * Put the tables made since into unwind_tables. Every update of an array
 * of maps waits for an RCU grace period (the kernel makes sure no program
 * still sees the old value), ~10 ms here: one batch for all the tables of
 * a process rather than one wait per library. Kernels without batch
 * updates of arrays of maps get them one by one. A table that could not
 * be put there is none (frame pointers).
 */
static int flush_pending(struct unwind_tables *u)
{
	uint32_t keys[MAX_PENDING], count = u->npending;
	int fds[MAX_PENDING], ret = 0;
	size_t i;

	u->nfailed = 0;
	if (!u->npending)
		return 0;
	for (i = 0; i < u->npending; i++) {
		keys[i] = u->pending[i].table->id;
		fds[i] = u->pending[i].fd;
	}
	if (bpf_map_update_batch(u->outer_fd, keys, fds, &count, NULL))
		count = 0;
	for (i = count; i < u->npending; i++) {
		if (bpf_map_update_elem(u->outer_fd, &keys[i], &fds[i], BPF_ANY)) {
			ret = -errno;
			log_warn("unwind tables: cannot load a table: %s", strerror(errno));
			u->pending[i].table->id = NO_TABLE;
			u->failed[u->nfailed++] = keys[i];
			u->st.failed++;
		}
	}
	for (i = 0; i < u->npending; i++) {
		struct ut_pending *p = &u->pending[i];

		if (p->table->id != NO_TABLE) {
			u->st.tables++;
			u->st.rows += p->rows;
			u->st.bytes += p->bytes;
		}
		close(p->fd); /* unwind_tables holds the map now */
	}
	u->npending = 0;
	return ret;
}

/* Did table id make it into unwind_tables (at the last flush)? */
static bool tables_ok(const struct unwind_tables *u, uint32_t id)
{
	for (size_t i = 0; i < u->nfailed; i++)
		if (u->failed[i] == id)
			return false;
	return true;
}

/* The page index in front of the rows (bpf_shared.h): entry k holds the
 * index of the row covering the start of page base + k. */
static void fill_index(struct unwind_row *idx, uint32_t base, uint32_t npages,
		       const struct unwind_row *rows, size_t n)
{
	uint32_t first = npages + 1;
	size_t r = 0;

	for (uint32_t k = 0; k <= npages; k++) {
		uint64_t start = (uint64_t)(base + k) << 12;

		while (r + 1 < n && rows[r + 1].pc <= start)
			r++;
		memset(&idx[k], 0, sizeof(idx[k]));
		idx[k].pc = first + (uint32_t)r;
	}
}

/* Put rows (behind their page index) into a new array map of their size
 * at a free index of unwind_tables. 0 or a negative errno. */
static int install(struct unwind_tables *u, const struct sym_unwind_table *t, struct ut_table *out)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	uint32_t base = t->n ? t->rows[0].pc >> 12 : 0;
	uint32_t npages = t->n ? (t->rows[t->n - 1].pc >> 12) - base + 1 : 0;
	size_t entries, bytes, pending = 0;
	int fd, ret = 0;
	void *mem;

	if (t->n == 0 || t->n > EBPROF_MAX_TABLE_ROWS)
		return -E2BIG;
	if (npages > t->n + 4096) /* sparse: not worth its memory, search it all */
		npages = 0;
	entries = t->n + (npages ? npages + 1 : 0);
	bytes = (entries * sizeof(struct unwind_row) + 4095) & ~(size_t)4095;
	for (size_t i = 0; i < u->npending; i++)
		pending += u->pending[i].bytes;
	if (u->next_id >= EBPROF_MAX_UNWIND_TABLES || u->st.bytes + pending + bytes > u->budget)
		return -ENOSPC;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ebprof_unwind", sizeof(__u32),
			    sizeof(struct unwind_row), (__u32)entries, &mo);
	if (fd < 0)
		return -errno;
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	if (npages)
		fill_index(mem, base, npages, t->rows, t->n);
	memcpy((struct unwind_row *)mem + (npages ? npages + 1 : 0), t->rows,
	       t->n * sizeof(struct unwind_row));
	munmap(mem, bytes);
	if (u->npending == MAX_PENDING && (ret = flush_pending(u)))
		goto out;
	/* into unwind_tables with the others of this process, at once */
	out->id = u->next_id++;
	out->nrows = (uint32_t)entries;
	out->page_base = base;
	out->npages = npages;
	u->pending[u->npending] = (struct ut_pending){ out, fd, bytes, t->n };
	u->npending++;
	return 0;
out:
	close(fd);
	return ret;
}

/* The table of a binary by its build-id (bid, "" when it has none: then
 * compiled each time its identity is new, never cached on disk): from
 * memory, the disk cache, or compiled (the binary opened only then). */
static struct ut_table *table_for(struct unwind_tables *u, const struct sym_binary *sb,
				  const char *bid, const char *what)
{
	struct sym_unwind_table t = { 0 };
	struct sym_elf *elf = NULL;
	struct ut_table *tab;
	char *key = NULL;
	int64_t t0;
	int ret;

	if (*bid && !hm_find(u->by_build, bid, (void **)&tab))
		return tab;
	tab = calloc(1, sizeof(*tab));
	if (!tab || (*bid && !(key = strdup(bid)))) {
		free(tab);
		return NULL;
	}
	tab->id = NO_TABLE;
	ret = -ENOENT;
	if (*bid && u->cache_dir && !(ret = sym_unwind_cache_load(u->cache_dir, bid, &t)))
		u->st.cache_hits++;
	if (ret && !(ret = sym_elf_get(u->sym, sb, &elf))) {
		t0 = mono_ns();
		ret = sym_elf_unwind_table(u->sym, elf, &t);
		sym_elf_put(u->sym, elf);
		if (!ret) {
			u->st.built++;
			u->st.build_ns += (uint64_t)(mono_ns() - t0);
			log_debug("unwind table of %s: %zu rows (%zu KiB, from %s, %llu FDEs, %llu "
				  "rows unsupported) compiled in %.1f ms",
				  what, t.n, t.n * sizeof(struct unwind_row) / 1024, t.source,
				  (unsigned long long)t.fdes, (unsigned long long)t.unsupported,
				  (mono_ns() - t0) / 1e6);
			if (*bid && u->cache_dir && sym_unwind_cache_save(u->cache_dir, bid, &t))
				log_debug("unwind table of %s not cached on disk", what);
		}
	}
	if (ret) {
		u->st.no_cfi++;
		log_debug("no unwind table for %s: %s (frame pointers)", what, strerror(-ret));
	} else if ((ret = install(u, &t, tab))) {
		if (ret == -ENOSPC) {
			u->st.over_budget++;
			log_warn("unwind tables: %s (%zu rows) is over the memory budget: its "
				 "frames are unwound by frame pointers",
				 what, t.n);
		} else {
			u->st.failed++;
			log_warn("unwind tables: cannot load the table of %s: %s", what,
				 strerror(-ret));
		}
	}
	sym_unwind_table_free(&t);
	if (key && hm_set(u->by_build, key, tab, NULL))
		free(key); /* not remembered: looked up again next time */
	return tab;
}

/* The vDSO's table, from the agent's own (the kernel's image is the
 * same in every process). */
static const struct ut_table *vdso_table(struct unwind_tables *u)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	struct sym_unwind_table t = { 0 };
	size_t size;

	if (u->vdso_tried)
		return &u->vdso;
	u->vdso_tried = true;
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return &u->vdso;
	/* the image ends with its section headers */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1u << 20) || sym_unwind_table_from_image(eh, size, &t))
		return &u->vdso;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const void *)((const char *)eh + eh->e_phoff +
						      (size_t)i * eh->e_phentsize);

		if (ph->p_type == PT_LOAD) {
			u->vdso_base = ph->p_vaddr - ph->p_offset;
			break;
		}
	}
	if (install(u, &t, &u->vdso))
		u->vdso.id = NO_TABLE;
	sym_unwind_table_free(&t);
	return &u->vdso;
}

/* The binary behind a file mapping, its table and the mapping's bias
 * (ELF virtual address = address - bias). False when it has no table. */
static bool mapping_table(struct unwind_tables *u, uint32_t pid, const struct map_entry *e,
			  struct unwind_mapping *out)
{
	struct ut_bin key = { .dev = e->dev, .inode = e->inode }, *b;
	struct sym_binary sb = { .path = e->path,
				 .pid = (int)pid,
				 .map_start = e->start,
				 .map_end = e->end,
				 .dev = e->dev,
				 .inode = e->inode };
	char bid[2 * 64 + 1];
	uint64_t vaddr = 0;
	size_t i;

	if (hm_find(u->bins, &key, (void **)&b)) {
		if (!(b = calloc(1, sizeof(*b))))
			return false;
		*b = key;
		if (hm_set(u->bins, b, b, NULL)) {
			free(b);
			return false;
		}
	}
	for (i = 0; i < b->nsegs && b->seg_off[i] != e->offset; i++)
		;
	if (!b->table || i == b->nsegs) {
		/* its build-id and the segment's address, from its headers */
		if (sym_binary_ident(&sb, e->offset, bid, sizeof(bid), &vaddr)) {
			u->st.failed += !b->table;
			return false;
		}
		if (i == b->nsegs && b->nsegs < MAX_SEGS) {
			b->seg_off[b->nsegs] = e->offset;
			b->seg_vaddr[b->nsegs++] = vaddr;
		}
		if (!b->table)
			b->table = table_for(u, &sb, bid, e->path);
	}
	if (!b->table || b->table->id == NO_TABLE || i >= b->nsegs)
		return false;
	out->start = e->start;
	out->end = e->end;
	out->bias = e->start - b->seg_vaddr[i];
	out->table = b->table->id;
	out->nrows = b->table->nrows;
	out->page_base = b->table->page_base;
	out->npages = b->table->npages;
	return true;
}

/* Drop a user of set i; a set nobody uses is cleared and freed. */
static void release_set(struct unwind_tables *u, uint32_t i)
{
	if (i >= u->nsets || !u->sets[i].refs || --u->sets[i].refs)
		return;
	memset(&u->proc, 0, sizeof(u->proc));
	bpf_map_update_elem(u->sets_fd, &i, &u->proc, BPF_ANY);
	u->fifo[(u->fifo_head + u->fifo_len++) % u->nsets] = i;
	u->st.sets--;
}

/* The set holding u->proc (content hash h): an existing one, or a new one
 * written now. -ENOSPC when every set is taken. */
static int find_set(struct unwind_tables *u, uint64_t h, uint32_t *out)
{
	uint32_t i;

	for (i = 0; i < u->nsets; i++) {
		if (u->sets[i].refs && u->sets[i].hash == h) {
			*out = i;
			return 0;
		}
	}
	if (!u->fifo_len)
		return -ENOSPC;
	i = u->fifo[u->fifo_head];
	if (bpf_map_update_elem(u->sets_fd, &i, &u->proc, BPF_ANY))
		return -errno;
	u->fifo_head = (u->fifo_head + 1) % u->nsets;
	u->fifo_len--;
	u->sets[i].hash = h;
	u->st.sets++;
	*out = i;
	return 0;
}

void unwind_tables_forget(struct unwind_tables *u, uint32_t pid)
{
	uint64_t key = pid;
	void *old = NULL;

	bpf_map_delete_elem(u->pids_fd, &pid);
	if (!hm_remove(u->pid_set, &key, NULL, &old) && old)
		release_set(u, (uint32_t)((uintptr_t)old - 1));
}

static int load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps);

int unwind_tables_load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps)
{
	int64_t t0 = mono_ns();
	int ret = load(u, pid, maps);

	u->st.load_ns += (uint64_t)(mono_ns() - t0);
	return ret;
}

static int load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps)
{
	struct unwind_proc *p = &u->proc;
	const struct ut_table *vt;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct unwind_mapping *m;

		if (!strchr(e->perms, 'x'))
			continue;
		if (p->n == EBPROF_MAX_UNWIND_MAPPINGS) {
			u->st.mappings_dropped++;
			continue;
		}
		m = &p->m[p->n];
		if (e->kind == MAPPING_FILE && e->path) {
			if (!mapping_table(u, pid, e, m))
				continue;
		} else if (e->kind == MAPPING_SPECIAL && e->path && !strcmp(e->path, "[vdso]")) {
			vt = vdso_table(u);
			if (vt->id == NO_TABLE)
				continue;
			m->start = e->start;
			m->end = e->end;
			m->bias = e->start - u->vdso_base;
			m->table = vt->id;
			m->nrows = vt->nrows;
			m->page_base = vt->page_base;
			m->npages = vt->npages;
		} else {
			continue; /* anonymous: JIT code, frame pointers */
		}
		p->n++;
	}
	/* the tables first, then the set that names them */
	if (flush_pending(u)) { /* those that failed are none: drop them */
		uint32_t k = 0;

		for (uint32_t j = 0; j < p->n; j++)
			if (tables_ok(u, p->m[j].table))
				p->m[k++] = p->m[j];
		memset(&p->m[k], 0, (p->n - k) * sizeof(p->m[0]));
		p->n = k;
	}
	{
		uint64_t h = hm_hash_bytes(p, offsetof(struct unwind_proc, m) +
						      p->n * sizeof(struct unwind_mapping));
		void *old = NULL;
		uint32_t set;
		int ret = find_set(u, h, &set);

		if (ret) {
			u->st.sets_full += ret == -ENOSPC;
			unwind_tables_forget(u, pid);
			return ret;
		}
		if (hm_find_u64(u->pid_set, pid, &old) || (uintptr_t)old != set + 1u) {
			u->sets[set].refs++;
			if (hm_set_u64(u->pid_set, pid, (void *)(uintptr_t)(set + 1u))) {
				release_set(u, set);
				return -ENOMEM;
			}
			if (old)
				release_set(u, (uint32_t)((uintptr_t)old - 1));
		}
		if (bpf_map_update_elem(u->pids_fd, &pid, &set, BPF_ANY))
			return -errno;
	}
	u->st.procs_loaded++;
	return 0;
}

void unwind_tables_stats(const struct unwind_tables *u, struct unwind_tables_stats *out)
{
	*out = u->st;
}
