// SPDX-License-Identifier: BSD-2-Clause
/*
 * A backend's memory as the agent reads it from outside (process/pgmem.c),
 * hostile: the input's first byte picks the PostgreSQL version and whether
 * used bytes are walked; the rest is memory mapped at BASE, whose first 8
 * bytes are the variable TopMemoryContext. The snapshot then becomes a
 * memory profile (profile/memctx.c), idents through the normalizer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "process/memread.h"
#include "process/pgmem.h"
#include "profile/memctx.h"

#define BASE 0x7f0000100000ULL

struct image {
	const uint8_t *mem;
	size_t len;
};

static int fetch(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;
	size_t off;

	if (addr < BASE || addr - BASE >= im->len)
		return -EFAULT;
	off = (size_t)(addr - BASE);
	memset(buf, 0, len);
	memcpy(buf, im->mem + off, im->len - off < len ? im->len - off : len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data + 1, size ? size - 1 : 0 };
	struct pgmem_limits lim = { .max_contexts = 2000, .max_ns = 1000000000ULL };
	struct pgmem_snapshot s;
	struct memread *r;
	struct query_table *q = NULL;
	struct memctx_stats st = { 0 };
	struct profile *p;

	if (!size)
		return 0;
	lim.used = data[0] & 0x80;
	if (memread_new_fn(fetch, &im, 1 << 20, &r))
		return 0;
	if (!pgmem_walk(r, pgmem_layout_for(13 + (data[0] & 0x7f) % 5), BASE, &lim, &s)) {
		p = memctx_profile_new(0);
		query_table_new(&q);
		if (p)
			memctx_add(p, &s, NULL, 0, q, &st);
		query_table_free(q);
		profile_free(p);
		pgmem_snapshot_free(&s);
	}
	memread_free(r);
	return 0;
}
