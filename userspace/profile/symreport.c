// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symreport.h"
#include "util/compare.h"

int symreport_row(struct symreport *r, const char *binary, const char *source, size_t *idx)
{
	struct symreport_row *row;

	for (size_t i = 0; i < r->n; i++) {
		if (!strcmp(r->rows[i].binary, binary) && !strcmp(r->rows[i].source, source)) {
			*idx = i;
			return 0;
		}
	}
	if (r->n >= SYMREPORT_MAX_ROWS - 1 && strcmp(binary, SYMREPORT_OTHER)) {
		/* the rest together: binaries come and go over an agent's life */
		return symreport_row(r, SYMREPORT_OTHER, "various", idx);
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct symreport_row *rows = realloc(r->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		r->rows = rows;
		r->cap = cap;
	}
	row = &r->rows[r->n];
	memset(row, 0, sizeof(*row));
	row->binary = strdup(binary);
	if (!row->binary)
		return -ENOMEM;
	row->source = source;
	*idx = r->n++;
	return 0;
}

int symreport_merge(struct symreport *into, const struct symreport *from)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct symreport_row *f = &from->rows[i];
		struct symreport_row *t;
		size_t idx;
		int err = symreport_row(into, f->binary, f->source, &idx);

		if (err)
			return err;
		t = &into->rows[idx];
		t->samples += f->samples;
		t->resolved += f->resolved;
		t->leaf += f->leaf;
		t->leaf_resolved += f->leaf_resolved;
	}
	return 0;
}

static int by_samples(const void *a, const void *b)
{
	const struct symreport_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->binary, y->binary);
}

void symreport_sort(struct symreport *r)
{
	if (r->n)
		sort_array(r->rows, r->n, sizeof(*r->rows), by_samples);
}

void symreport_clear(struct symreport *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->rows[i].binary);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
