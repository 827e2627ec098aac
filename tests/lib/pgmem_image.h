/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory images of PostgreSQL memory-context trees for the walker's tests
 * (tests/unit/test_pgmem.c) and its fuzzer's seeds: contexts, names,
 * blocks and free chunks laid out as a backend lays them out, at
 * addresses of the image, read back through a memread.h reader.
 *
 * The file form (a fuzz input) is: u64 base, u64 top_var, then the bytes
 * mapped at base.
 */
#ifndef EBPROF_TEST_PGMEM_IMAGE_H
#define EBPROF_TEST_PGMEM_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "process/memread.h"
#include "process/pgmem.h"

#define IMG_BASE 0x7f0000100000ULL

struct img {
	uint8_t *mem;
	size_t len, cap;
	uint64_t top_var; /* the variable TopMemoryContext */
	const struct pgmem_layout *l;
};

/* A new image of layout l with its TopMemoryContext variable (NULL). */
void img_init(struct img *m, const struct pgmem_layout *l);
void img_free(struct img *m);
/* len zeroed bytes, 8-aligned: their address. */
uint64_t img_alloc(struct img *m, size_t len);
uint64_t img_str(struct img *m, const char *s);
void img_put64(struct img *m, uint64_t addr, uint64_t v);
uint64_t img_get64(const struct img *m, uint64_t addr);
void img_put32(struct img *m, uint64_t addr, uint32_t v);

/* A context of kind k named name (ident may be NULL) of total bytes under
 * parent (0: the top, stored in the variable), appended to its parent's
 * children. An AllocSet gets one keeper block with free bytes unused. */
uint64_t img_context(struct img *m, uint64_t parent, enum pgmem_kind k, const char *name,
		     const char *ident, uint64_t total, uint64_t free_tail);
/* Another block of an AllocSet of size bytes, free_tail of them unused. */
void img_aset_block(struct img *m, uint64_t ctx, uint64_t size, uint64_t free_tail);
/* n free chunks on the AllocSet's freelist fidx (chunks 8 << fidx). */
void img_aset_free_chunks(struct img *m, uint64_t ctx, int fidx, int n);

/* A reader over the image (budget max_bytes). */
struct memread *img_reader(struct img *m, size_t max_bytes);
/* The file form of the image, malloc'ed, into *len. */
uint8_t *img_file(const struct img *m, size_t *len);

#endif /* EBPROF_TEST_PGMEM_IMAGE_H */
