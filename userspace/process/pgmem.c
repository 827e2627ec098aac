// SPDX-License-Identifier: BSD-2-Clause
/*
 * PostgreSQL memory contexts read from outside the backend (pgmem.h): a
 * depth-first walk of firstchild/nextchild links from TopMemoryContext,
 * each node checked before anything it points to is followed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pgmem.h"
#include "util/array.h"
#include "util/timeutil.h"

/*
 * NodeTags of the context kinds in each major version, as its released
 * binaries pass them to MemoryContextCreate() (the argument of the calls
 * in AllocSetContextCreateInternal, GenerationContextCreate,
 * SlabContextCreate and BumpContextCreate of 13.23, 14.23, 15.18, 16.14 and
 * 17.10), in the order of each version's nodes.h (nodetags.h from 16).
 * A released branch never renumbers its tags (an ABI break).
 *
 * The headers: what each version's pg_backend_memory_contexts (and
 * pg_log_backend_memory_contexts) shows as total_bytes beyond
 * mem_allocated, measured on 13.23, 14.23, 15.18, 16.14 and 17.10 (the
 * Generation and Slab contexts of a walsender decoding, a Bump context of
 * a sort in 17): a Generation's and a Slab's header is allocated apart
 * from its blocks and counted by its stats only; before 16 a Slab's
 * header holds its freelists and its size is its headerSize field; a
 * Bump's stats leave out the header its mem_allocated counts.
 */
static const struct pgmem_layout layouts[] = {
	/* major, tags (AllocSet, Generation, Slab, Bump), AllocSet chunk
	 * header, headers by kind, Slab's headerSize field */
	{ 13, { 217, 219, 218, 0 }, 16, { 0, 112, 0, 0 }, 104 },
	{ 14, { 222, 224, 223, 0 }, 16, { 0, 112, 0, 0 }, 104 },
	{ 15, { 223, 225, 224, 0 }, 16, { 0, 152, 0, 0 }, 104 },
	{ 16, { 450, 451, 452, 0 }, 8, { 0, 152, 192, 0 }, 0 },
	{ 17, { 469, 470, 471, 472 }, 8, { 0, 128, 176, -112 }, 0 },
};

/* MemoryContextData (utils/memnodes.h), x86-64, 13..17. */
enum {
	OFF_TYPE = 0,
	OFF_MEM_ALLOCATED = 8,
	OFF_METHODS = 16,
	OFF_PARENT = 24,
	OFF_FIRSTCHILD = 32,
	OFF_PREVCHILD = 40,
	OFF_NEXTCHILD = 48,
	OFF_NAME = 56,
	OFF_IDENT = 64,
	HDR_SIZE = 80,
	/* AllocSetContext (utils/mmgr/aset.c): the header, then its blocks
	 * list and ALLOCSET_NUM_FREELISTS freelists of chunks 8 << index */
	OFF_ASET_BLOCKS = 80,
	OFF_ASET_FREELIST = 88,
	ASET_FREELISTS = 11,
	ASET_HDR_SIZE = 88 + 8 * 11,
	/* AllocBlockData: aset, prev, next, freeptr, endptr */
	BLK_ASET = 0,
	BLK_PREV = 8,
	BLK_NEXT = 16,
	BLK_FREEPTR = 24,
	BLK_ENDPTR = 32,
	BLK_SIZE = 40,
	/* a free chunk's link: AllocChunkData.aset before 16, the
	 * AllocFreeListLink after the 8-byte MemoryChunk from 16 */
	CHUNK_LINK = 8,
};

/* No context is a terabyte: past that, a size is garbage. */
#define MAX_CONTEXT_BYTES (1ULL << 40)

static const char *const drop_names[PGMEM_DROP_MAX] = {
	[PGMEM_DROP_UNREADABLE] = "unreadable",
	[PGMEM_DROP_TAG] = "tag",
	[PGMEM_DROP_METHODS] = "methods",
	[PGMEM_DROP_LINKS] = "links",
	[PGMEM_DROP_NAME] = "name",
	[PGMEM_DROP_SIZE] = "size",
	[PGMEM_DROP_CYCLE] = "cycle",
	[PGMEM_DROP_DEPTH] = "depth",
	[PGMEM_DROP_CONTEXTS] = "contexts",
	[PGMEM_DROP_BYTES] = "bytes",
	[PGMEM_DROP_TIME] = "time",
};

const char *pgmem_drop_name(enum pgmem_drop d)
{
	return d < PGMEM_DROP_MAX ? drop_names[d] : "?";
}

const struct pgmem_layout *pgmem_layout_for(int major)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major)
			return &layouts[i];
	return NULL;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* One pending list of siblings: the next to read, and who it must name. */
struct frame {
	uint64_t next, parent, prev;
	uint32_t parent_idx, depth;
};

struct walk {
	struct memread *r;
	const struct pgmem_layout *l;
	struct pgmem_limits lim;
	struct pgmem_snapshot *out;
	const struct frame *stack; /* the lists being walked, outermost first */
	uint32_t sp;
	uint64_t methods[PGMEM_NKINDS];
	uint32_t used_budget; /* reads left for used bytes in this walk */
	int64_t deadline;
	int stop; /* a bound that ends the walk: its drop reason + 1 */
	int err;  /* -ESRCH, -EPERM, -ENOMEM: the walk cannot go on */
};

static void drop(struct walk *w, enum pgmem_drop d)
{
	w->out->drops[d]++;
}

/* A read's error: 0 when the node is just unreadable (dropped), else the
 * walk ends (budget: counted once). */
static bool read_failed(struct walk *w, int err)
{
	if (err == -EFAULT) {
		drop(w, PGMEM_DROP_UNREADABLE);
		return true;
	}
	if (err == -E2BIG) {
		if (!w->stop)
			drop(w, PGMEM_DROP_BYTES);
		w->stop = PGMEM_DROP_BYTES + 1;
	} else {
		w->err = err;
	}
	return true;
}

static bool printable(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

static int kind_of(const struct pgmem_layout *l, uint32_t tag, enum pgmem_kind *k)
{
	for (int i = 0; i < PGMEM_NKINDS; i++)
		if (l->tag[i] && l->tag[i] == tag) {
			*k = (enum pgmem_kind)i;
			return 0;
		}
	return -EINVAL;
}

/*
 * Free space of an AllocSet (hdr: its first ASET_HDR_SIZE bytes), as
 * AllocSetStats counts it: the unused tail of every block and every chunk
 * on a freelist with its header. False when it cannot be measured within
 * the bounds (the context keeps its total only).
 */
static bool aset_free(struct walk *w, uint64_t addr, const uint8_t *hdr, uint64_t total,
		      uint64_t *free_bytes)
{
	uint32_t reads = 0, max = w->lim.used_max_reads;
	uint64_t fr = 0, prev = 0, b = u64_at(hdr, OFF_ASET_BLOCKS);
	uint8_t blk[BLK_SIZE];

	for (; b; b = u64_at(blk, BLK_NEXT)) {
		uint64_t freeptr, endptr;

		if (++reads > max || reads > w->used_budget ||
		    memread_read(w->r, b, blk, sizeof(blk)))
			return false;
		freeptr = u64_at(blk, BLK_FREEPTR);
		endptr = u64_at(blk, BLK_ENDPTR);
		if (u64_at(blk, BLK_ASET) != addr || u64_at(blk, BLK_PREV) != prev ||
		    freeptr < b + BLK_SIZE || endptr < freeptr || endptr - b > total)
			return false;
		fr += endptr - freeptr;
		prev = b;
	}
	for (int i = 0; i < ASET_FREELISTS; i++) {
		uint64_t chunk = u64_at(hdr, OFF_ASET_FREELIST + 8 * (size_t)i);
		uint64_t size = 8ULL << i;

		for (; chunk; reads++) {
			uint8_t c[CHUNK_LINK + 8];

			if (reads >= max || reads >= w->used_budget ||
			    memread_read(w->r, chunk, c, sizeof(c)))
				return false;
			/* before 16 the header holds the chunk's size */
			if (w->l->aset_chunk_hdr == 16 && u64_at(c, 0) != size)
				return false;
			fr += size + w->l->aset_chunk_hdr;
			chunk = u64_at(c, CHUNK_LINK);
		}
	}
	w->used_budget -= reads < w->used_budget ? reads : w->used_budget;
	if (fr > total)
		return false;
	*free_bytes = fr;
	return true;
}

/* Check the node at f->next and add it; false when it was dropped (its
 * branch and the rest of its sibling list with it). */
static bool visit(struct walk *w, struct frame *f, uint64_t *firstchild)
{
	uint64_t addr = f->next, total;
	uint8_t hdr[ASET_HDR_SIZE];
	struct pgmem_context *c;
	enum pgmem_kind kind;
	bool cut;
	int err;

	if (addr & 7) {
		drop(w, PGMEM_DROP_UNREADABLE);
		return false;
	}
	err = memread_read(w->r, addr, hdr, HDR_SIZE);
	if (err)
		return !read_failed(w, err);
	if (kind_of(w->l, (uint32_t)u64_at(hdr, OFF_TYPE) & 0xffffffffu, &kind)) {
		drop(w, PGMEM_DROP_TAG);
		return false;
	}
	if (w->methods[kind] && w->methods[kind] != u64_at(hdr, OFF_METHODS)) {
		drop(w, PGMEM_DROP_METHODS);
		return false;
	}
	/* Every node names the parent and the previous sibling it was
	 * reached from, so none is reached twice: a walk cannot loop (a node
	 * that names them is at one place in the tree). A node that is an
	 * ancestor or the sibling just read is a cycle; else, links. */
	if (u64_at(hdr, OFF_PARENT) != f->parent || u64_at(hdr, OFF_PREVCHILD) != f->prev) {
		bool cycle = addr == f->prev;

		for (uint32_t i = 0; i < w->sp && !cycle; i++)
			cycle = addr == w->stack[i].parent || addr == w->stack[i].prev;
		drop(w, cycle ? PGMEM_DROP_CYCLE : PGMEM_DROP_LINKS);
		return false;
	}
	total = u64_at(hdr, OFF_MEM_ALLOCATED);
	if (total > MAX_CONTEXT_BYTES) {
		drop(w, PGMEM_DROP_SIZE);
		return false;
	}
	if (kind == PGMEM_SLAB && w->l->slab_header_off) {
		uint64_t hs;

		err = memread_read(w->r, addr + w->l->slab_header_off, &hs, sizeof(hs));
		if (err)
			return !read_failed(w, err);
		if (hs > 1 << 20) { /* a Slab's header is its freelists: a page or two */
			drop(w, PGMEM_DROP_SIZE);
			return false;
		}
		total += hs;
	}
	/* the kind's own header, as the view counts it */
	total = w->l->header[kind] < 0 && total < (uint64_t)-w->l->header[kind]
			? 0
			: total + (uint64_t)(int64_t)w->l->header[kind];
	if (w->out->n >= w->lim.max_contexts) {
		drop(w, PGMEM_DROP_CONTEXTS);
		w->stop = PGMEM_DROP_CONTEXTS + 1;
		return false;
	}
	if (ARRAY_RESERVE(w->out->ctx, &w->out->cap, w->out->n + 1)) {
		w->err = -ENOMEM;
		return false;
	}
	c = &w->out->ctx[w->out->n];
	memset(c, 0, sizeof(*c));
	err = memread_string(w->r, u64_at(hdr, OFF_NAME), c->name, sizeof(c->name), &cut);
	if (err == -EFAULT || (!err && !printable(c->name))) {
		drop(w, PGMEM_DROP_NAME);
		return false;
	}
	if (err)
		return !read_failed(w, err);
	w->methods[kind] = u64_at(hdr, OFF_METHODS);
	c->parent = f->parent_idx;
	c->depth = f->depth;
	c->kind = kind;
	c->total = total;
	if (u64_at(hdr, OFF_IDENT)) {
		char buf[PGMEM_IDENT_MAX];

		/* an unreadable ident is left out; the context stays */
		if (!memread_string(w->r, u64_at(hdr, OFF_IDENT), buf, sizeof(buf),
				    &c->ident_cut) &&
		    *buf && !(c->ident = strdup(buf))) {
			w->err = -ENOMEM;
			return false;
		}
	}
	if (w->lim.used && kind == PGMEM_ASET && !memread_read(w->r, addr, hdr, sizeof(hdr))) {
		uint64_t fr;

		if (aset_free(w, addr, hdr, total, &fr)) {
			c->used = total - fr;
			c->used_known = true;
		}
	}
	w->out->n++;
	*firstchild = u64_at(hdr, OFF_FIRSTCHILD);
	f->prev = addr;
	f->next = u64_at(hdr, OFF_NEXTCHILD);
	return true;
}

static void walk(struct walk *w, uint64_t top)
{
	struct frame *stack = calloc(w->lim.max_depth + 1, sizeof(*stack));
	uint32_t sp = 0, visits = 0;

	if (!stack) {
		w->err = -ENOMEM;
		return;
	}
	w->stack = stack;
	stack[sp++] = (struct frame){ top, 0, 0, PGMEM_ROOT, 0 };
	while (sp && !w->stop && !w->err) {
		struct frame *f = &stack[sp - 1];
		uint32_t idx = (uint32_t)w->out->n, depth = f->depth;
		uint64_t child = 0, self = f->next;

		if (!f->next) {
			sp--;
			continue;
		}
		if (!(++visits & 31) && mono_ns() > w->deadline) {
			drop(w, PGMEM_DROP_TIME);
			w->stop = PGMEM_DROP_TIME + 1;
			break;
		}
		w->sp = sp;
		if (!visit(w, f, &child)) {
			f->next = 0; /* its siblings are reached through it: gone too */
			continue;
		}
		if (!child)
			continue;
		if (depth + 1 > w->lim.max_depth) {
			drop(w, PGMEM_DROP_DEPTH);
			continue;
		}
		stack[sp++] = (struct frame){ child, self, 0, idx, depth + 1 };
	}
	free(stack);
}

int pgmem_walk(struct memread *r, const struct pgmem_layout *l, uint64_t top_var,
	       const struct pgmem_limits *lim, struct pgmem_snapshot *out)
{
	struct walk w = { .r = r, .l = l, .out = out };
	int64_t t0 = mono_ns();
	uint64_t top;
	int err;

	memset(out, 0, sizeof(*out));
	if (lim)
		w.lim = *lim;
	w.lim.max_contexts = w.lim.max_contexts ?: 20000;
	w.lim.max_depth = w.lim.max_depth && w.lim.max_depth < 64 ? w.lim.max_depth : 64;
	w.lim.max_ns = w.lim.max_ns ?: 200000000ULL;
	/* a list longer than this is scattered over pages the walk did not
	 * read (TopMemoryContext's free 128-byte chunks): each costs about a
	 * page read, more than the context's node itself (bench/memory.sh) */
	w.lim.used_max_reads = w.lim.used_max_reads ?: 256;
	/* used bytes may take up to twice the reads of the nodes themselves */
	w.used_budget = w.lim.max_contexts * 2;
	w.deadline = t0 + (int64_t)w.lim.max_ns;
	err = memread_read(r, top_var, &top, sizeof(top));
	if (err)
		return err == -E2BIG ? -EFAULT : err;
	if (!top)
		return -ENOENT;
	walk(&w, top);
	memread_get_stats(r, &out->read);
	out->walk_ns = (uint64_t)(mono_ns() - t0);
	if (w.err || !out->n) {
		pgmem_snapshot_free(out);
		return w.err ? w.err : -EFAULT;
	}
	out->complete = true;
	for (int d = 0; d < PGMEM_DROP_MAX; d++)
		out->complete &= !out->drops[d];
	for (size_t i = 0; i < out->n; i++) {
		out->total += out->ctx[i].total;
		if (out->ctx[i].used_known) {
			out->used += out->ctx[i].used;
			out->used_known++;
		}
	}
	return 0;
}

void pgmem_snapshot_free(struct pgmem_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->ctx[i].ident);
	free(s->ctx);
	memset(s, 0, sizeof(*s));
}
