// SPDX-License-Identifier: BSD-2-Clause
/* Memory images of memory-context trees (pgmem_image.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pgmem_image.h"

#define ASET_SIZE 224 /* MAXALIGN(sizeof(AllocSetContext)) */
#define METHODS(k) (0x555555600000ULL + 0x100ULL * (uint64_t)(k))

static uint8_t *at(const struct img *m, uint64_t addr)
{
	return m->mem + (addr - IMG_BASE);
}

void img_init(struct img *m, const struct pgmem_layout *l)
{
	memset(m, 0, sizeof(*m));
	m->l = l;
	m->top_var = img_alloc(m, 8);
}

void img_free(struct img *m)
{
	free(m->mem);
	memset(m, 0, sizeof(*m));
}

uint64_t img_alloc(struct img *m, size_t len)
{
	size_t off = (m->len + 7) & ~(size_t)7;

	if (off + len > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;

		while (cap < off + len)
			cap *= 2;
		m->mem = realloc(m->mem, cap);
		if (!m->mem)
			abort(); /* a test helper */
		memset(m->mem + m->cap, 0, cap - m->cap);
		m->cap = cap;
	}
	m->len = off + len;
	return IMG_BASE + off;
}

uint64_t img_str(struct img *m, const char *s)
{
	uint64_t a = img_alloc(m, strlen(s) + 1);

	memcpy(at(m, a), s, strlen(s) + 1);
	return a;
}

void img_put64(struct img *m, uint64_t addr, uint64_t v)
{
	memcpy(at(m, addr), &v, 8);
}

uint64_t img_get64(const struct img *m, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, at(m, addr), 8);
	return v;
}

void img_put32(struct img *m, uint64_t addr, uint32_t v)
{
	memcpy(at(m, addr), &v, 4);
}

uint64_t img_context(struct img *m, uint64_t parent, enum pgmem_kind k, const char *name,
		     const char *ident, uint64_t total, uint64_t free_tail)
{
	uint64_t c = img_alloc(m, ASET_SIZE + 40), name_a = img_str(m, name);

	img_put32(m, c, m->l->tag[k]);
	img_put64(m, c + 8, total);
	img_put64(m, c + 16, METHODS(k));
	img_put64(m, c + 24, parent);
	img_put64(m, c + 56, name_a);
	if (ident)
		img_put64(m, c + 64, img_str(m, ident));
	if (k == PGMEM_ASET) { /* the keeper block, after the context */
		uint64_t b = c + ASET_SIZE;

		img_put64(m, c + 80, b);
		img_put64(m, b, c);
		img_put64(m, b + 24, c + total - free_tail);
		img_put64(m, b + 32, c + total);
	}
	if (!parent) {
		img_put64(m, m->top_var, c);
	} else if (!img_get64(m, parent + 32)) {
		img_put64(m, parent + 32, c);
	} else {
		uint64_t last = img_get64(m, parent + 32);

		while (img_get64(m, last + 48))
			last = img_get64(m, last + 48);
		img_put64(m, last + 48, c);
		img_put64(m, c + 40, last);
	}
	return c;
}

void img_aset_block(struct img *m, uint64_t ctx, uint64_t size, uint64_t free_tail)
{
	uint64_t b = img_alloc(m, 40), head = img_get64(m, ctx + 80);

	img_put64(m, b, ctx);
	img_put64(m, b + 16, head);
	img_put64(m, b + 24, b + size - free_tail);
	img_put64(m, b + 32, b + size);
	if (head)
		img_put64(m, head + 8, b);
	img_put64(m, ctx + 80, b);
	img_put64(m, ctx + 8, img_get64(m, ctx + 8) + size);
}

void img_aset_free_chunks(struct img *m, uint64_t ctx, int fidx, int n)
{
	uint64_t slot = ctx + 88 + 8 * (uint64_t)fidx;

	for (int i = 0; i < n; i++) {
		uint64_t ch = img_alloc(m, 16);

		if (m->l->aset_chunk_hdr == 16)
			img_put64(m, ch, 8ULL << fidx);
		img_put64(m, ch + 8, img_get64(m, slot));
		img_put64(m, slot, ch);
	}
}

static int fetch(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct img *m = ctx;

	if (addr < IMG_BASE || addr - IMG_BASE >= m->cap)
		return -EFAULT;
	/* the image's last piece may be short: what lies past it is zero */
	memset(buf, 0, len);
	memcpy(buf, at(m, addr),
	       m->cap - (addr - IMG_BASE) < len ? m->cap - (addr - IMG_BASE) : len);
	return 0;
}

struct memread *img_reader(struct img *m, size_t max_bytes)
{
	struct memread *r = NULL;

	memread_new_fn(fetch, m, max_bytes, &r);
	return r;
}

uint8_t *img_file(const struct img *m, size_t *len)
{
	uint8_t *f = malloc(16 + m->len);
	uint64_t base = IMG_BASE;

	if (!f)
		return NULL;
	memcpy(f, &base, 8);
	memcpy(f + 8, &m->top_var, 8);
	memcpy(f + 16, m->mem, m->len);
	*len = 16 + m->len;
	return f;
}
