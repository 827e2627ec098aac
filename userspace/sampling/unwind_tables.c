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
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "unwind_tables_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

#define DEFAULT_BUDGET (64ull << 20)
#define DEFAULT_CACHE "/var/cache/ebprof/unwind"

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

int unwind_tables_new(const struct unwind_tables_opts *o, const struct unwind_tables_maps *maps,
		      struct unwind_tables **out)
{
	/* the binary is opened to compile its table, then closed: at most
	 * the last one stays open (the symbolizer evicts on its next get) */
	struct sym_opts so = { .max_cache_bytes = 1 };
	struct unwind_tables *u = calloc(1, sizeof(*u));
	const char *dir = o->cache_dir ? o->cache_dir : DEFAULT_CACHE;
	uint32_t nsets = maps->nsets;
	int ret = -ENOMEM;

	if (!u)
		return -ENOMEM;
	u->outer_fd = maps->tables_fd;
	u->pids_fd = maps->pids_fd;
	u->sets_fd = maps->sets_fd;
	u->nsets = nsets;
	u->sets_hash = maps->sets_hash;
	u->sets = calloc(nsets ? nsets : 1, sizeof(*u->sets));
	u->fifo = calloc(nsets ? nsets : 1, sizeof(*u->fifo));
	u->pid_set = hm_new_u64();
	u->since = hm_new_u64();
	u->bins = hm_new(bin_hash, bin_equal);
	u->by_build = hm_new(hm_hash_str, hm_equal_str);
	if (!u->sets || !u->fifo || !u->pid_set || !u->since || !u->bins || !u->by_build)
		goto fail;
	if (*dir && !(u->cache_dir = strdup(dir)))
		goto fail;
	for (uint32_t i = 0; i < nsets; i++)
		u->fifo[u->fifo_len++] = i;
	u->budget = o->budget_bytes ? o->budget_bytes : DEFAULT_BUDGET;
	if ((ret = ut_slots_init(u, maps->hits_fd)) || (ret = sym_new(&so, &u->sym)))
		goto fail;
	*out = u;
	return 0;
fail:
	unwind_tables_free(u);
	return ret;
}

static void table_free(struct ut_table *tab)
{
	if (tab) {
		free(tab->name);
		free(tab);
	}
}

void unwind_tables_free(struct unwind_tables *u)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (!u)
		return;
	ut_slots_fini(u);
	while (u->bins && hm_next(u->bins, &it, &k, &v))
		free(v);
	it = 0;
	while (u->by_build && hm_next(u->by_build, &it, &k, &v)) {
		free((void *)k);
		table_free(v);
	}
	for (size_t i = 0; i < u->nnobuild; i++)
		table_free(u->nobuild[i]);
	free(u->nobuild);
	table_free(u->vdso);
	hm_free(u->bins);
	hm_free(u->by_build);
	hm_free(u->pid_set);
	hm_free(u->since);
	free(u->sets);
	free(u->fifo);
	sym_free(u->sym);
	free(u->cache_dir);
	free(u);
}

/* A new table record for a binary by build-id (bid "" when it has none:
 * then one per binary identity, never cached on disk). */
static struct ut_table *table_new(struct unwind_tables *u, const char *bid, const char *name)
{
	struct ut_table *tab = calloc(1, sizeof(*tab));
	char *key = NULL;

	if (!tab || !(tab->name = strdup(name)) || (*bid && !(key = strdup(bid))))
		goto fail;
	tab->id = NO_TABLE;
	if (key) {
		if (hm_set(u->by_build, key, tab, NULL))
			goto fail;
		tab->bid = key;
		return tab;
	}
	if (u->nnobuild == u->nobuild_cap) {
		size_t cap = u->nobuild_cap ? 2 * u->nobuild_cap : 16;
		struct ut_table **n = realloc(u->nobuild, cap * sizeof(*n));

		if (!n)
			goto fail;
		u->nobuild = n;
		u->nobuild_cap = cap;
	}
	u->nobuild[u->nnobuild++] = tab;
	return tab;
fail:
	free(key);
	table_free(tab);
	return NULL;
}

/* Rows for a table not in the kernel (UT_EMPTY): from the disk cache or
 * compiled from the binary (opened only then), then placed. */
static void table_fill(struct unwind_tables *u, struct ut_table *tab, const struct sym_binary *sb)
{
	struct sym_unwind_table t = { 0 };
	struct sym_elf *elf = NULL;
	int64_t t0;
	int ret = -ENOENT;

	if (tab->bid && u->cache_dir && !(ret = sym_unwind_cache_load(u->cache_dir, tab->bid, &t)))
		u->st.cache_hits++;
	if (ret && !(ret = sym_elf_get(u->sym, sb, &elf))) {
		t0 = mono_ns();
		ret = sym_elf_unwind_table(u->sym, elf, &t);
		sym_elf_put(u->sym, elf);
		if (!ret) {
			u->st.built++;
			u->st.build_ns += (uint64_t)(mono_ns() - t0);
			log_debug("unwind table of %s: %zu rows (%zu KiB, from %s, %llu FDEs, %llu "
				  "rows unsupported, %llu FDEs rejected) compiled in %.1f ms",
				  tab->name, t.n, t.n * sizeof(struct unwind_row) / 1024, t.source,
				  (unsigned long long)t.fdes, (unsigned long long)t.unsupported,
				  (unsigned long long)t.rejected, (mono_ns() - t0) / 1e6);
			if (tab->bid && u->cache_dir &&
			    sym_unwind_cache_save(u->cache_dir, tab->bid, &t))
				log_debug("unwind table of %s not cached on disk", tab->name);
		}
	}
	if (ret) {
		u->st.no_cfi++;
		tab->state = UT_NONE;
		log_debug("no unwind table for %s: %s (frame pointers)", tab->name, strerror(-ret));
	} else {
		ut_table_place(u, tab, &t);
	}
	sym_unwind_table_free(&t);
}

/* The vDSO's table, from the agent's own (the kernel's image is the
 * same in every process); kept for the session. */
static struct ut_table *vdso_table(struct unwind_tables *u)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	struct sym_unwind_table t = { 0 };
	size_t size;

	if (u->vdso_tried)
		return u->vdso;
	u->vdso_tried = true;
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	/* the image ends with its section headers */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1u << 20) || sym_unwind_table_from_image(eh, size, &t))
		return NULL;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const void *)((const char *)eh + eh->e_phoff +
						      (size_t)i * eh->e_phentsize);

		if (ph->p_type == PT_LOAD) {
			u->vdso_base = ph->p_vaddr - ph->p_offset;
			break;
		}
	}
	if ((u->vdso = calloc(1, sizeof(*u->vdso))) && (u->vdso->name = strdup("[vdso]"))) {
		u->vdso->id = NO_TABLE;
		u->vdso->pinned = true;
		ut_table_place(u, u->vdso, &t);
	}
	sym_unwind_table_free(&t);
	return u->vdso;
}

/* The binary behind a file mapping and its table (NULL when none), and
 * the mapping's bias (ELF virtual address = address - bias). */
static struct ut_table *mapping_table(struct unwind_tables *u, uint32_t pid,
				      const struct map_entry *e, uint64_t *bias)
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
			return NULL;
		*b = key;
		if (hm_set(u->bins, b, b, NULL)) {
			free(b);
			return NULL;
		}
	}
	for (i = 0; i < b->nsegs && b->seg_off[i] != e->offset; i++)
		;
	if (!b->table || i == b->nsegs) {
		/* its build-id and the segment's address, from its headers */
		if (sym_binary_ident(&sb, e->offset, bid, sizeof(bid), &vaddr)) {
			u->st.failed += !b->table;
			return NULL;
		}
		if (i == b->nsegs && b->nsegs < MAX_SEGS) {
			b->seg_off[b->nsegs] = e->offset;
			b->seg_vaddr[b->nsegs++] = vaddr;
		}
		if (!b->table && (!*bid || hm_find(u->by_build, bid, (void **)&b->table)))
			b->table = table_new(u, bid, e->path);
	}
	if (!b->table || i >= b->nsegs)
		return NULL;
	if (b->table->state == UT_EMPTY && b->table->id == NO_TABLE)
		table_fill(u, b->table, &sb);
	*bias = e->start - b->seg_vaddr[i];
	return b->table;
}

/* Drop a user of set i; a set nobody uses is cleared and freed, and its
 * tables lose a user. */
static void release_set(struct unwind_tables *u, uint32_t i)
{
	if (i >= u->nsets || !u->sets[i].refs || --u->sets[i].refs)
		return;
	if (!bpf_map_lookup_elem(u->sets_fd, &i, &u->scratch))
		ut_set_users(u, &u->scratch, -1);
	memset(&u->scratch, 0, sizeof(u->scratch));
	if (u->sets_hash)
		bpf_map_delete_elem(u->sets_fd, &i);
	else
		bpf_map_update_elem(u->sets_fd, &i, &u->scratch, BPF_ANY);
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
	ut_set_users(u, &u->proc, +1);
	u->st.sets++;
	*out = i;
	return 0;
}

/* The set index + 1 of a pid_set value (0: none), and its mark. */
static uint32_t set_plus1(const void *v)
{
	_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "the mark is above 32 bits");
	return (uint32_t)(uintptr_t)v;
}

static bool inherited_mark(const void *v)
{
	return (uintptr_t)v & PID_INHERITED;
}

/* What userspace knows of pid's entry goes; the entry too unless only
 * the BPF program wrote it and it is gone with the process (exited). */
static void forget(struct unwind_tables *u, uint32_t pid, bool exited)
{
	uint64_t key = pid;
	void *old = NULL;
	bool known = !hm_remove(u->pid_set, &key, NULL, &old);

	hm_remove(u->since, &key, NULL, NULL);
	if (!(exited && known && inherited_mark(old)))
		bpf_map_delete_elem(u->pids_fd, &pid);
	if (known && set_plus1(old))
		release_set(u, set_plus1(old) - 1);
}

void unwind_tables_forget(struct unwind_tables *u, uint32_t pid)
{
	forget(u, pid, false);
}

void unwind_tables_exited(struct unwind_tables *u, uint32_t pid)
{
	forget(u, pid, true);
}

int unwind_tables_inherit(struct unwind_tables *u, uint32_t child, uint32_t parent,
			  uint64_t fork_ns)
{
	void *set = NULL, *since = NULL, *old = NULL;
	uint32_t i;

	if (hm_find_u64(u->pid_set, parent, &set) || !set_plus1(set) ||
	    hm_find_u64(u->since, parent, &since) ||
	    (uint64_t)(uintptr_t)since + UNWIND_INHERIT_MARGIN_NS >= fork_ns)
		return -ENOENT;
	i = set_plus1(set) - 1;
	if (i >= u->nsets || !u->sets[i].refs)
		return -ENOENT;
	/* marked and looked at in one probe (the child is new, as a rule) */
	if (hm_put_u64(u->pid_set, child, (void *)(uintptr_t)((i + 1u) | PID_INHERITED), &old))
		return -ENOMEM;
	if (old && set_plus1(old) == i + 1u) {
		hm_set_u64(u->pid_set, child, old); /* as it was */
		return -EEXIST;			    /* written since (its parent's set) */
	}
	u->sets[i].refs++;
	if (old && set_plus1(old))
		release_set(u, set_plus1(old) - 1);
	hm_remove(u->since, &(uint64_t){ child }, NULL, NULL);
	u->st.procs_inherited++;
	return 0;
}

/* Has pid's process been reaped? A pidfd's look (a pid lookup, where
 * /proc/PID is a path walk and a proc inode); /proc where pidfds are not
 * (before 5.3, or refused). A zombie is there, as in /proc. */
static bool gone(uint32_t pid)
{
	char path[32];

#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	if (errno == ESRCH)
		return true;
	if (errno == EINVAL) /* a thread's id: a process under a reused pid */
		return false;
#endif
	snprintf(path, sizeof(path), "/proc/%u", pid);
	return access(path, F_OK) && errno == ENOENT;
}

bool unwind_tables_inherited_gone(struct unwind_tables *u, uint32_t pid)
{
	void *set = NULL;

	return !hm_find_u64(u->pid_set, pid, &set) && inherited_mark(set) && set_plus1(set);
}

bool unwind_tables_inherited(struct unwind_tables *u, uint32_t pid)
{
	void *set = NULL;
	uint32_t cur;

	if (hm_find_u64(u->pid_set, pid, &set) || !inherited_mark(set) || !set_plus1(set))
		return false;
	/* its entry as the fork left it: not replaced since (an exec's mark,
	 * a reused pid) */
	if (!bpf_map_lookup_elem(u->pids_fd, &pid, &cur))
		return cur == set_plus1(set) - 1;
	if (errno != ENOENT)
		return false;
	/* none: the exit hook deleted it (a short-lived process, its first
	 * sample read late), or the copy failed (a full map: it may have
	 * room now for a process that lives) */
	return gone(pid);
}

static int load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps, bool execd);

/* Has pid exec'd since the maps the caller has (execd: they are of an
 * image it exec'd)? The BPF program marks an exec EBPROF_UNWIND_NO_SET. */
static bool stale(struct unwind_tables *u, uint32_t pid, bool execd)
{
	uint32_t cur;

	return !execd && !bpf_map_lookup_elem(u->pids_fd, &pid, &cur) &&
	       cur == EBPROF_UNWIND_NO_SET;
}

int unwind_tables_load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps,
		       bool execd)
{
	int64_t t0 = mono_ns();
	int ret = stale(u, pid, execd) ? -ESTALE : load(u, pid, maps, execd);

	u->st.load_ns += (uint64_t)(mono_ns() - t0);
	return ret;
}

/* pid's entry is userspace's from now on: no longer as its fork left it. */
static void unmark(struct unwind_tables *u, uint32_t pid)
{
	void *v;

	if (!hm_find_u64(u->pid_set, pid, &v) && inherited_mark(v))
		hm_set_u64(u->pid_set, pid, (void *)((uintptr_t)v & ~PID_INHERITED));
}

/* pid's entry in unwind_pids: set, unless an exec the caller does not
 * know of marked it since (-ESTALE). An absent entry is only created (an
 * exec's mark made meanwhile wins) and a present one only replaced (an
 * exit's removal wins); what is left between the look and the update is
 * two system calls wide. */
static int set_pid(struct unwind_tables *u, uint32_t pid, uint32_t set, bool execd)
{
	uint32_t cur;
	int how = BPF_NOEXIST;

	if (!bpf_map_lookup_elem(u->pids_fd, &pid, &cur)) {
		if (cur == EBPROF_UNWIND_NO_SET && !execd)
			return -ESTALE;
		/* written already: it has held set since (its forks copy it) */
		if (cur == set && !hm_find_u64(u->since, pid, NULL))
			return 0;
		how = BPF_EXIST;
	}
	unmark(u, pid); /* written from here on */
	if (bpf_map_update_elem(u->pids_fd, &pid, &set, how)) {
		hm_remove(u->since, &(uint64_t){ pid }, NULL, NULL);
		return errno == EEXIST || errno == ENOENT ? -ESTALE : -errno;
	}
	if (hm_set_u64(u->since, pid, (void *)(uintptr_t)mono_ns()))
		hm_remove(u->since, &(uint64_t){ pid }, NULL, NULL); /* its children load theirs */
	return 0;
}

/* pid uses set `set` now (it may have used another). */
static int use_set(struct unwind_tables *u, uint32_t pid, uint32_t set, bool execd)
{
	void *old = NULL;

	if (hm_find_u64(u->pid_set, pid, &old) || set_plus1(old) != set + 1u) {
		u->sets[set].refs++;
		/* the mark stays until set_pid() writes the entry */
		if (hm_set_u64(u->pid_set, pid,
			       (void *)(((uintptr_t)old & PID_INHERITED) | (set + 1u)))) {
			release_set(u, set);
			return -ENOMEM;
		}
		if (set_plus1(old))
			release_set(u, set_plus1(old) - 1);
	}
	return set_pid(u, pid, set, execd);
}

static int load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps, bool execd)
{
	struct ut_table *tabs[EBPROF_MAX_UNWIND_MAPPINGS];
	struct unwind_proc *p = &u->proc;
	uint32_t set = 0, k = 0;
	int ret;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct unwind_mapping *m = &p->m[p->n];
		uint64_t bias = 0;
		struct ut_table *tab = NULL;

		if (!strchr(e->perms, 'x'))
			continue;
		if (p->n == EBPROF_MAX_UNWIND_MAPPINGS) {
			u->st.mappings_dropped++;
			continue;
		}
		if (e->kind == MAPPING_FILE && e->path) {
			tab = mapping_table(u, pid, e, &bias);
		} else if (e->kind == MAPPING_SPECIAL && e->path && !strcmp(e->path, "[vdso]")) {
			tab = vdso_table(u);
			bias = e->start - u->vdso_base;
		} /* else anonymous: JIT code, frame pointers */
		if (!tab)
			continue;
		m->start = e->start;
		m->end = e->end;
		m->bias = bias;
		tabs[p->n++] = tab;
	}
	/* the tables first, then the set that names them (those without a
	 * slot are left out; those out of the budget are in, without rows,
	 * so their use is counted) */
	ut_flush(u);
	for (uint32_t j = 0; j < p->n; j++) {
		const struct ut_table *tab = tabs[j];

		if (tab->id == NO_TABLE || (tab->state != UT_LOADED && tab->state != UT_OUT))
			continue;
		p->m[k] = p->m[j];
		p->m[k].table = tab->id;
		p->m[k].nrows = tab->state == UT_LOADED ? tab->entries : 0;
		p->m[k].page_base = tab->page_base;
		p->m[k].npages = tab->npages;
		k++;
	}
	memset(&p->m[k], 0, (p->n - k) * sizeof(p->m[0]));
	p->n = k;
	ret = find_set(u, ut_set_hash(p), &set);
	if (ret) {
		u->st.sets_full += ret == -ENOSPC;
		forget(u, pid, false);
		return ret;
	}
	if ((ret = use_set(u, pid, set, execd)))
		return ret;
	u->st.procs_loaded++;
	return 0;
}

void unwind_tables_stats(const struct unwind_tables *u, struct unwind_tables_stats *out)
{
	*out = u->st;
	out->out_of_budget = 0;
	out->entered = 0;
	for (uint32_t id = 0; id < EBPROF_MAX_UNWIND_TABLES; id++) {
		out->out_of_budget += u->slot[id] && u->slot[id]->state == UT_OUT;
		out->entered += u->hits ? u->hits[id] : 0;
	}
}
