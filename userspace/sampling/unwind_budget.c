// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kernel side of unwind tables (unwind_tables_internal.h): slots of
 * `unwind_tables`, the memory budget, the users of each table, and the
 * rebalance that gives the budget to the binaries the BPF program
 * consults most (`unwind_hits`, counted per slot each time an unwind
 * enters a binary).
 *
 * A table over the budget still has a slot, and its mappings are in the
 * sets with no rows (nrows 0: frame pointers), so its hits are counted
 * too. At each rebalance a table out of the budget that was consulted
 * more than twice as often as loaded ones takes their place; they go
 * back to frame pointers with a warning. Rows come back from the disk
 * cache, so only cached tables (with a build-id) come back that way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "unwind_tables_internal.h"
#include "util/log.h"
#include "util/compare.h"

#define HITS_BYTES (EBPROF_MAX_UNWIND_TABLES * sizeof(uint64_t))

int ut_slots_init(struct unwind_tables *u, int hits_fd)
{
	void *mem;

	for (uint32_t i = 0; i < EBPROF_MAX_UNWIND_TABLES; i++)
		u->free_slots[u->nfree++] = EBPROF_MAX_UNWIND_TABLES - 1 - i;
	if (hits_fd < 0)
		return 0;
	mem = mmap(NULL, HITS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, hits_fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	u->hits = mem;
	return 0;
}

void ut_slots_fini(struct unwind_tables *u)
{
	for (size_t i = 0; i < u->npending; i++)
		close(u->pending[i].fd);
	u->npending = 0;
	if (u->hits)
		munmap((void *)u->hits, HITS_BYTES);
	u->hits = NULL;
}

uint64_t ut_set_hash(const struct unwind_proc *p)
{
	uint32_t n = p->n <= EBPROF_MAX_UNWIND_MAPPINGS ? p->n : EBPROF_MAX_UNWIND_MAPPINGS;

	return hm_hash_bytes(p,
			     offsetof(struct unwind_proc, m) + n * sizeof(struct unwind_mapping));
}

static uint64_t hits_of(const struct unwind_tables *u, uint32_t id)
{
	return u->hits && id < EBPROF_MAX_UNWIND_TABLES ? u->hits[id] : 0;
}

static uint32_t take_slot(struct unwind_tables *u, struct ut_table *tab)
{
	uint32_t id;

	if (!u->nfree)
		return NO_TABLE;
	id = u->free_slots[--u->nfree];
	u->slot[id] = tab;
	tab->seen = hits_of(u, id);
	tab->score = 0;
	return id;
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

/* The shape of tab in the kernel: entries, page index and bytes. */
static void shape(struct ut_table *tab, const struct sym_unwind_table *t)
{
	uint32_t base = t->rows[0].pc >> 12;
	uint32_t npages = (t->rows[t->n - 1].pc >> 12) - base + 1;

	if (npages > t->n + 4096) /* sparse: not worth its memory, search it all */
		npages = 0;
	tab->page_base = base;
	tab->npages = npages;
	tab->entries = (uint32_t)(t->n + (npages ? npages + 1 : 0));
	tab->bytes = ((uint64_t)tab->entries * sizeof(struct unwind_row) + 4095) & ~4095ull;
}

/* Rows (behind their page index) into a new array map of their size,
 * pending for unwind_tables. 0 or a negative errno. */
static int make_map(struct unwind_tables *u, struct ut_table *tab, const struct sym_unwind_table *t)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	uint32_t skip = tab->npages ? tab->npages + 1 : 0;
	void *mem;
	int fd;

	if (u->npending == MAX_PENDING)
		ut_flush(u);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ebprof_unwind", sizeof(__u32),
			    sizeof(struct unwind_row), tab->entries, &mo);
	if (fd < 0)
		return -errno;
	mem = mmap(NULL, tab->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (tab->npages)
		fill_index(mem, tab->page_base, tab->npages, t->rows, t->n);
	memcpy((struct unwind_row *)mem + skip, t->rows, t->n * sizeof(struct unwind_row));
	munmap(mem, tab->bytes);
	u->pending[u->npending++] = (struct ut_pending){ tab, fd, t->n };
	u->st.tables++;
	u->st.rows += t->n;
	u->st.bytes += tab->bytes;
	if (u->st.tables > u->st.peak_tables)
		u->st.peak_tables = u->st.tables;
	if (u->st.bytes > u->st.peak_bytes)
		u->st.peak_bytes = u->st.bytes;
	tab->state = UT_LOADED;
	return 0;
}

static void unload(struct unwind_tables *u, struct ut_table *tab)
{
	if (tab->state != UT_LOADED)
		return;
	for (size_t i = 0; i < u->npending; i++) {
		if (u->pending[i].table == tab) { /* not in the kernel yet */
			close(u->pending[i].fd);
			u->pending[i] = u->pending[--u->npending];
			break;
		}
	}
	bpf_map_delete_elem(u->outer_fd, &tab->id);
	u->st.tables--;
	u->st.bytes -= tab->bytes;
	u->st.rows -= tab->entries - (tab->npages ? tab->npages + 1 : 0);
	tab->state = UT_OUT;
}

void ut_table_place(struct unwind_tables *u, struct ut_table *tab, const struct sym_unwind_table *t)
{
	int ret;

	if (!t->n || t->n > EBPROF_MAX_TABLE_ROWS) {
		tab->state = UT_NONE;
		return;
	}
	shape(tab, t);
	if (tab->id == NO_TABLE && (tab->id = take_slot(u, tab)) == NO_TABLE) {
		u->st.no_slot++;
		log_warn("unwind tables: %u tables in use: %s is unwound by frame pointers",
			 EBPROF_MAX_UNWIND_TABLES, tab->name);
		tab->state = UT_EMPTY;
		return;
	}
	tab->state = UT_OUT;
	if (u->st.bytes + tab->bytes > u->budget && !tab->pinned) {
		u->st.over_budget++;
		log_warn("unwind tables: %s (%zu rows) is over the memory budget for now: its "
			 "frames are unwound by frame pointers until it is sampled more than "
			 "tables loaded",
			 tab->name, t->n);
		return;
	}
	ret = make_map(u, tab, t);
	if (ret) {
		u->st.failed++;
		log_warn("unwind tables: cannot load the table of %s: %s", tab->name,
			 strerror(-ret));
	}
}

/*
 * Put the tables made since into unwind_tables. Every update of an array
 * of maps waits for an RCU grace period (the kernel makes sure no program
 * still sees the old value), ~10 ms here: one batch for all the tables of
 * a process rather than one wait per library. Kernels without batch
 * updates of arrays of maps get them one by one. A table that could not
 * be put there is out (frame pointers).
 */
void ut_flush(struct unwind_tables *u)
{
	uint32_t keys[MAX_PENDING], count = (uint32_t)u->npending;
	int fds[MAX_PENDING];
	size_t i;

	if (!u->npending)
		return;
	for (i = 0; i < u->npending; i++) {
		keys[i] = u->pending[i].table->id;
		fds[i] = u->pending[i].fd;
	}
	if (bpf_map_update_batch(u->outer_fd, keys, fds, &count, NULL))
		count = 0;
	for (i = count; i < u->npending; i++) {
		if (bpf_map_update_elem(u->outer_fd, &keys[i], &fds[i], BPF_ANY)) {
			log_warn("unwind tables: cannot load the table of %s: %s",
				 u->pending[i].table->name, strerror(errno));
			u->st.failed++;
			fds[i] = -1;
		}
	}
	for (i = 0; i < u->npending; i++) {
		close(u->pending[i].fd); /* unwind_tables holds the map now */
		if (fds[i] < 0) {
			struct ut_table *tab = u->pending[i].table;

			u->st.tables--;
			u->st.bytes -= tab->bytes;
			u->st.rows -= u->pending[i].rows;
			tab->state = UT_OUT;
		}
	}
	u->npending = 0;
}

/* A table nobody uses: its slot and kernel memory go. */
static void free_table(struct unwind_tables *u, struct ut_table *tab)
{
	if (tab->pinned || tab->id == NO_TABLE)
		return;
	unload(u, tab);
	u->slot[tab->id] = NULL;
	u->free_slots[u->nfree++] = tab->id;
	tab->id = NO_TABLE;
	tab->state = UT_EMPTY;
	u->st.freed++;
}

void ut_set_users(struct unwind_tables *u, const struct unwind_proc *p, int delta)
{
	for (uint32_t j = 0; j < p->n && j < EBPROF_MAX_UNWIND_MAPPINGS; j++) {
		uint32_t id = p->m[j].table;
		struct ut_table *tab = id < EBPROF_MAX_UNWIND_TABLES ? u->slot[id] : NULL;

		if (!tab)
			continue;
		if (delta > 0)
			tab->refs++;
		else if (tab->refs && !--tab->refs)
			free_table(u, tab);
	}
}

/* Every set in use that names tab gets its present state. */
static void patch_sets(struct unwind_tables *u, const struct ut_table *tab)
{
	struct unwind_proc *p = &u->scratch;

	for (uint32_t i = 0; i < u->nsets; i++) {
		bool changed = false;

		if (!u->sets[i].refs || bpf_map_lookup_elem(u->sets_fd, &i, p))
			continue;
		for (uint32_t j = 0; j < p->n && j < EBPROF_MAX_UNWIND_MAPPINGS; j++) {
			struct unwind_mapping *m = &p->m[j];

			if (m->table != tab->id)
				continue;
			m->nrows = tab->state == UT_LOADED ? tab->entries : 0;
			m->page_base = tab->page_base;
			m->npages = tab->npages;
			changed = true;
		}
		if (changed && !bpf_map_update_elem(u->sets_fd, &i, p, BPF_ANY))
			u->sets[i].hash = ut_set_hash(p);
	}
}

/* Load tab's rows again, from the disk cache. */
static int promote(struct unwind_tables *u, struct ut_table *tab)
{
	struct sym_unwind_table t = { 0 };
	int ret;

	if (!tab->bid || !u->cache_dir)
		return -ENOENT;
	ret = sym_unwind_cache_load(u->cache_dir, tab->bid, &t);
	if (!ret && (!t.n || t.n > EBPROF_MAX_TABLE_ROWS))
		ret = -EINVAL;
	if (!ret) {
		shape(tab, &t);
		ret = make_map(u, tab, &t);
	}
	sym_unwind_table_free(&t);
	if (ret)
		return ret;
	ut_flush(u);
	if (tab->state != UT_LOADED)
		return -EIO;
	patch_sets(u, tab);
	return 0;
}

static void demote(struct unwind_tables *u, struct ut_table *tab, const struct ut_table *by)
{
	tab->state = UT_OUT; /* the sets first: no sample looks for it then */
	patch_sets(u, tab);
	tab->state = UT_LOADED;
	unload(u, tab);
	u->st.evicted++;
	log_warn("unwind tables: over the memory budget, %s goes back to frame pointers "
		 "(sampled least) for %s",
		 tab->name, by->name);
}

static int by_score_desc(const void *a, const void *b)
{
	const struct ut_table *x = *(struct ut_table *const *)a, *y = *(struct ut_table *const *)b;

	return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* Loaded tables sampled less than half as often as c, least first,
 * enough to make room for c: they are evicted and c is loaded. */
static void make_room(struct unwind_tables *u, struct ut_table *c, struct ut_table **loaded,
		      size_t nloaded)
{
	uint64_t room = u->budget > u->st.bytes ? u->budget - u->st.bytes : 0;
	size_t k = 0;

	for (size_t i = nloaded; room < c->bytes && i-- > 0;) {
		if (!loaded[i] || loaded[i]->pinned || loaded[i]->score * 2 >= c->score)
			continue;
		room += loaded[i]->bytes;
		k++;
	}
	if (room < c->bytes)
		return;
	for (size_t i = nloaded; k && i-- > 0;) {
		if (!loaded[i] || loaded[i]->pinned || loaded[i]->score * 2 >= c->score)
			continue;
		demote(u, loaded[i], c);
		loaded[i] = NULL;
		k--;
	}
	if (promote(u, c))
		log_warn("unwind tables: the table of %s could not be loaded again", c->name);
	else
		u->st.promoted++;
}

int unwind_tables_rebalance(struct unwind_tables *u)
{
	struct ut_table **out, **loaded;
	size_t nout = 0, nloaded = 0;

	out = calloc(EBPROF_MAX_UNWIND_TABLES, sizeof(*out));
	loaded = calloc(EBPROF_MAX_UNWIND_TABLES, sizeof(*loaded));
	if (!out || !loaded) {
		free(out);
		free(loaded);
		return -ENOMEM;
	}
	for (uint32_t id = 0; id < EBPROF_MAX_UNWIND_TABLES; id++) {
		struct ut_table *tab = u->slot[id];
		uint64_t h = hits_of(u, id);

		if (!tab)
			continue;
		tab->score = tab->score / 2 + (h - tab->seen);
		tab->seen = h;
		if (!tab->refs && !tab->pinned) /* its process could not get a set */
			free_table(u, tab);
		else if (tab->state == UT_OUT && tab->score)
			out[nout++] = tab;
		else if (tab->state == UT_LOADED)
			loaded[nloaded++] = tab;
	}
	sort_array(out, nout, sizeof(*out), by_score_desc);
	sort_array(loaded, nloaded, sizeof(*loaded), by_score_desc);
	for (size_t i = 0; i < nout; i++)
		make_room(u, out[i], loaded, nloaded);
	free(out);
	free(loaded);
	return 0;
}
