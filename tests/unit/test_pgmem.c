// SPDX-License-Identifier: BSD-2-Clause
/*
 * The memory-context walker (process/pgmem.c) over images of trees laid
 * out as backends lay them out (tests/lib/pgmem_image.h): what it reads,
 * the used bytes of AllocSets in both chunk layouts, and hostile trees
 * (cycles, garbage, unmapped pointers) ending within their bounds with
 * their drops counted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pgmem_image.h"

static struct img m;
static struct pgmem_snapshot snap;

static void fini(void)
{
	pgmem_snapshot_free(&snap);
	img_free(&m);
}

static int walk(const struct pgmem_limits *lim)
{
	struct memread *r = img_reader(&m, 16 << 20);
	int err;

	cr_assert_not_null(r);
	err = pgmem_walk(r, m.l, m.top_var, lim, &snap);
	memread_free(r);
	return err;
}

static const struct pgmem_context *find(const char *name)
{
	for (size_t i = 0; i < snap.n; i++)
		if (!strcmp(snap.ctx[i].name, name))
			return &snap.ctx[i];
	return NULL;
}

static uint64_t drops(void)
{
	uint64_t n = 0;

	for (int d = 0; d < PGMEM_DROP_MAX; d++)
		n += snap.drops[d];
	return n;
}

Test(pgmem, layouts_of_13_to_17)
{
	for (int v = 13; v <= 17; v++) {
		const struct pgmem_layout *l = pgmem_layout_for(v);

		cr_assert_not_null(l, "PostgreSQL %d", v);
		cr_expect_neq(l->tag[PGMEM_ASET], 0);
		cr_expect_eq(l->aset_chunk_hdr, v < 16 ? 16u : 8u);
		cr_expect_eq(l->tag[PGMEM_BUMP] != 0, v >= 17, "Bump contexts came in 17");
	}
	cr_expect_null(pgmem_layout_for(12));
	cr_expect_null(pgmem_layout_for(0));
	/* 15's tags, as the server Debian ships passes them */
	cr_expect_eq(pgmem_layout_for(15)->tag[PGMEM_ASET], 223);
	cr_expect_eq(pgmem_layout_for(15)->tag[PGMEM_GENERATION], 225);
}

Test(pgmem, tree_names_idents_and_totals, .fini = fini)
{
	uint64_t top, cache, msg;
	const struct pgmem_context *c;

	img_init(&m, pgmem_layout_for(15));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 100);
	cache = img_context(&m, top, PGMEM_ASET, "CacheMemoryContext", NULL, 1048576, 0);
	img_context(&m, cache, PGMEM_ASET, "index info", "pgbench_accounts_pkey", 2048, 0);
	img_context(&m, cache, PGMEM_ASET, "index info", "pg_class_oid_index", 3072, 0);
	msg = img_context(&m, top, PGMEM_ASET, "MessageContext", NULL, 16384, 0);
	img_context(&m, msg, PGMEM_GENERATION, "Caller tuples", NULL, 1 << 20, 0);
	cr_assert_eq(walk(NULL), 0);
	cr_assert_eq(snap.n, 6);
	cr_expect(snap.complete);
	cr_expect_eq(drops(), 0);
	cr_expect_str_eq(snap.ctx[0].name, "TopMemoryContext");
	cr_expect_eq(snap.ctx[0].parent, PGMEM_ROOT);
	/* parents come before their children, depth first */
	cr_expect_str_eq(snap.ctx[1].name, "CacheMemoryContext");
	cr_expect_eq(snap.ctx[1].parent, 0);
	cr_expect_eq(snap.ctx[2].parent, 1);
	cr_expect_eq(snap.ctx[2].depth, 2);
	cr_expect_str_eq(snap.ctx[2].ident, "pgbench_accounts_pkey");
	cr_expect_str_eq(snap.ctx[3].ident, "pg_class_oid_index");
	cr_expect_eq(snap.ctx[3].total, 3072);
	cr_expect_str_eq(snap.ctx[4].name, "MessageContext");
	cr_expect_eq(snap.ctx[4].parent, 0);
	c = find("Caller tuples");
	cr_assert_not_null(c);
	cr_expect_eq(c->kind, PGMEM_GENERATION);
	cr_expect_eq(c->parent, 4);
	cr_expect_not(c->used_known, "used bytes are measured for AllocSets only");
	cr_expect_eq(c->total, (1 << 20) + 152, "a Generation's header, as 15's view counts it");
	cr_expect_eq(snap.total, 8192 + 1048576 + 2048 + 3072 + 16384 + (1 << 20) + 152);
}

/* Totals as each version's view shows them: a Slab's header before 16 is
 * its headerSize field; 17's Bump counts less than its mem_allocated. */
Test(pgmem, slab_and_bump_totals_as_the_view_shows_them, .fini = fini)
{
	uint64_t top, slab;

	img_init(&m, pgmem_layout_for(14));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	slab = img_context(&m, top, PGMEM_SLAB, "TXN", NULL, 0, 0);
	img_put64(&m, slab + 104, 544);
	cr_assert_eq(walk(NULL), 0);
	cr_assert_eq(snap.n, 2);
	cr_expect_eq(snap.ctx[1].total, 544);
	pgmem_snapshot_free(&snap);
	img_put64(&m, slab + 104, 1ULL << 40); /* no header is that large */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_SIZE], 1);
	pgmem_snapshot_free(&snap);
	img_free(&m);

	img_init(&m, pgmem_layout_for(17));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	img_context(&m, top, PGMEM_BUMP, "Caller tuples", NULL, 25165824, 0);
	img_context(&m, top, PGMEM_SLAB, "Change", NULL, 81920, 0);
	cr_assert_eq(walk(NULL), 0);
	cr_assert_eq(snap.n, 3);
	cr_expect_eq(snap.ctx[1].total, 25165712);
	cr_expect_eq(snap.ctx[2].total, 82096);
}

/* Used = total - (the unused tails of blocks + free chunks with their
 * headers), in the chunk layouts before and after 16. */
static void used_bytes(int major)
{
	uint64_t top, ctx;
	const struct pgmem_context *c;
	uint64_t hdr = major < 16 ? 16 : 8;

	img_init(&m, pgmem_layout_for(major));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	ctx = img_context(&m, top, PGMEM_ASET, "ExecutorState", NULL, 8192, 1000);
	img_aset_block(&m, ctx, 16384, 3000);
	img_aset_block(&m, ctx, 32768, 0);
	img_aset_free_chunks(&m, ctx, 0, 5);  /* 8-byte chunks */
	img_aset_free_chunks(&m, ctx, 3, 2);  /* 64-byte chunks */
	img_aset_free_chunks(&m, ctx, 10, 1); /* 8 KiB chunk */
	cr_assert_eq(walk(&(struct pgmem_limits){ .used = true }), 0);
	c = find("ExecutorState");
	cr_assert_not_null(c);
	cr_expect_eq(c->total, 8192 + 16384 + 32768);
	cr_assert(c->used_known);
	cr_expect_eq(c->used,
		     c->total - 1000 - 3000 - 5 * (8 + hdr) - 2 * (64 + hdr) - (8192 + hdr));
	cr_expect(snap.ctx[0].used_known);
	cr_expect_eq(snap.ctx[0].used, 8192);
	cr_expect_eq(snap.used_known, 2);
}

Test(pgmem, used_bytes_before_16, .fini = fini)
{
	used_bytes(15);
}

Test(pgmem, used_bytes_from_16, .fini = fini)
{
	used_bytes(17);
}

/* A free list whose links loop: the used bytes are given up on, within
 * the bound, and the context keeps its total. */
Test(pgmem, looping_freelist_gives_up_used_bytes, .fini = fini)
{
	uint64_t top, ctx, ch;

	img_init(&m, pgmem_layout_for(16));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	ctx = img_context(&m, top, PGMEM_ASET, "ExecutorState", NULL, 8192, 10);
	img_aset_free_chunks(&m, ctx, 2, 3);
	ch = img_get64(&m, ctx + 88 + 16);
	img_put64(&m, img_get64(&m, ch + 8) + 8, ch); /* the second links back to the first */
	cr_assert_eq(walk(&(struct pgmem_limits){ .used = true, .used_max_reads = 50 }), 0);
	cr_assert_eq(snap.n, 2);
	cr_expect_not(snap.ctx[1].used_known);
	cr_expect_eq(snap.ctx[1].total, 8192);
}

Test(pgmem, sibling_cycle_is_dropped_and_counted, .fini = fini)
{
	uint64_t top, a, b;

	img_init(&m, pgmem_layout_for(15));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	a = img_context(&m, top, PGMEM_ASET, "A", NULL, 1024, 0);
	b = img_context(&m, top, PGMEM_ASET, "B", NULL, 1024, 0);
	img_put64(&m, b + 48, a); /* B's next sibling is A again */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 3);
	/* A names no previous sibling: its links do not hold */
	cr_expect_eq(snap.drops[PGMEM_DROP_LINKS], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, b + 48, b); /* B's next sibling is B */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 3);
	cr_expect_eq(snap.drops[PGMEM_DROP_CYCLE], 1);
	cr_expect_not(snap.complete);
}

Test(pgmem, child_pointing_at_an_ancestor_is_dropped, .fini = fini)
{
	uint64_t top, a;

	img_init(&m, pgmem_layout_for(15));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	a = img_context(&m, top, PGMEM_ASET, "A", NULL, 1024, 0);
	img_put64(&m, a + 32, top); /* A's first child is the top */
	img_put64(&m, top + 32, a);
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 2);
	cr_expect_eq(snap.drops[PGMEM_DROP_CYCLE], 1);
}

Test(pgmem, garbage_nodes_drop_their_branch, .fini = fini)
{
	uint64_t top, a, b, c, d, e;

	img_init(&m, pgmem_layout_for(17));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	a = img_context(&m, top, PGMEM_ASET, "tag", NULL, 1024, 0);
	img_context(&m, a, PGMEM_ASET, "under tag", NULL, 1024, 0);
	b = img_context(&m, top, PGMEM_ASET, "parent", NULL, 1024, 0);
	c = img_context(&m, top, PGMEM_ASET, "name", NULL, 1024, 0);
	d = img_context(&m, top, PGMEM_ASET, "size", NULL, 1024, 0);
	e = img_context(&m, top, PGMEM_SLAB, "methods", NULL, 1024, 0);
	img_context(&m, top, PGMEM_SLAB, "fine slab", NULL, 1024, 0);
	/* each list below its first bad node is lost: one sibling list each */
	img_put64(&m, top + 32, a);
	img_put32(&m, a, 12345);
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 1);
	cr_expect_eq(snap.drops[PGMEM_DROP_TAG], 1);
	pgmem_snapshot_free(&snap);

	img_put32(&m, a, pgmem_layout_for(17)->tag[PGMEM_ASET]);
	img_put64(&m, b + 24, a); /* names the wrong parent */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 3, "the top, tag and under tag");
	cr_expect_eq(snap.drops[PGMEM_DROP_LINKS], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, b + 24, top);
	img_put64(&m, img_get64(&m, c + 56), 0x0a0d0a0d0a0d0a0dULL); /* "\r\n..." */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_NAME], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, c + 56, 0xdead0000ULL); /* unmapped name */
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_NAME], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, c + 56, img_str(&m, "name"));
	img_put64(&m, d + 8, 1ULL << 50);
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_SIZE], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, d + 8, 1024);
	img_put64(&m, e + 16, 0x1234); /* a slab with other methods than the next */
	img_put64(&m, e + 48, 0);
	img_context(&m, top, PGMEM_SLAB, "second slab", NULL, 1024, 0);
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_METHODS], 1, "the slab after the first differs");
	cr_expect_eq(snap.n, 7);
}

Test(pgmem, unmapped_child_and_unreadable_top, .fini = fini)
{
	uint64_t top;
	struct memread *r;

	img_init(&m, pgmem_layout_for(15));
	cr_expect_eq(walk(NULL), -ENOENT, "a process still starting: no top yet");
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	img_put64(&m, top + 32, 0x100000000ULL);
	cr_assert_eq(walk(NULL), 0);
	cr_expect_eq(snap.n, 1);
	cr_expect_eq(snap.drops[PGMEM_DROP_UNREADABLE], 1);
	pgmem_snapshot_free(&snap);

	img_put64(&m, m.top_var, 0x100000000ULL);
	cr_expect_eq(walk(NULL), -EFAULT);
	r = img_reader(&m, 16 << 20);
	cr_expect_eq(pgmem_walk(r, m.l, 0x10, NULL, &snap), -EFAULT);
	memread_free(r);
}

Test(pgmem, bounds_end_the_walk, .fini = fini)
{
	uint64_t top, p;
	struct memread *r;

	img_init(&m, pgmem_layout_for(16));
	top = img_context(&m, 0, PGMEM_ASET, "TopMemoryContext", NULL, 8192, 0);
	p = top;
	for (int i = 0; i < 100; i++)
		p = img_context(&m, p, PGMEM_ASET, "deep", NULL, 1024, 0);
	for (int i = 0; i < 300; i++)
		img_context(&m, top, PGMEM_ASET, "wide", NULL, 1024, 0);

	cr_assert_eq(walk(&(struct pgmem_limits){ .max_depth = 10 }), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_DEPTH], 1);
	cr_expect_eq(snap.n, 1 + 10 + 300);
	for (size_t i = 0; i < snap.n; i++)
		cr_expect_leq(snap.ctx[i].depth, 10);
	pgmem_snapshot_free(&snap);

	cr_assert_eq(walk(&(struct pgmem_limits){ .max_contexts = 50 }), 0);
	cr_expect_eq(snap.n, 50);
	cr_expect_eq(snap.drops[PGMEM_DROP_CONTEXTS], 1);
	pgmem_snapshot_free(&snap);

	/* a budget of a few pieces */
	r = img_reader(&m, 4 * MEMREAD_PIECE);
	cr_assert_eq(pgmem_walk(r, m.l, m.top_var, NULL, &snap), 0);
	cr_expect_eq(snap.drops[PGMEM_DROP_BYTES], 1);
	cr_expect_lt(snap.n, 401);
	cr_expect_leq(snap.read.bytes, 4 * MEMREAD_PIECE);
	memread_free(r);
}

/* The reader: pieces fetched once, strings across pieces, faults held. */
Test(pgmem, reader_strings_across_pieces, .fini = fini)
{
	uint64_t a;
	struct memread *r;
	struct memread_stats st;
	char buf[64], big[5000];
	bool cut;

	img_init(&m, pgmem_layout_for(15));
	img_alloc(&m, MEMREAD_PIECE - 8 - (m.len & (MEMREAD_PIECE - 1)) - 3);
	a = img_str(&m, "straddling the piece boundary");
	r = img_reader(&m, 1 << 20);
	cr_assert_eq(memread_string(r, a, buf, sizeof(buf), &cut), 0);
	cr_expect_str_eq(buf, "straddling the piece boundary");
	cr_expect_not(cut);
	cr_assert_eq(memread_string(r, a, buf, 11, &cut), 0);
	cr_expect_str_eq(buf, "straddling");
	cr_expect(cut);
	cr_expect_eq(memread_read(r, 0x1000, big, 8), -EFAULT);
	cr_expect_eq(memread_read(r, 0x1000, big, 8), -EFAULT);
	cr_expect_eq(memread_read(r, UINT64_MAX - 3, big, 8), -EFAULT, "wraps");
	memread_get_stats(r, &st);
	cr_expect_eq(st.faults, 1, "an unreadable piece is asked for once");
	cr_expect_eq(st.fetches, 3);
	memread_free(r);
}
