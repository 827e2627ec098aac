// SPDX-License-Identifier: BSD-2-Clause
/*
 * The memory budget's release by rounds (sym_release_cold() in
 * ebprof/symbolizer.h): a round is the agent's interval; an offset not
 * asked for in the last SYM_KEEP_ROUNDS rounds is cold and goes, the
 * others stay. A binary no one pins still loses its DWARF (the bulk:
 * libdw's parsed units and line tables, the debug file it maps), but the
 * resolutions of its hot offsets are parked, their strings copied out of
 * libdw's data, and handed back when the binary is opened again: the
 * next interval resolves only offsets it had not seen lately, however
 * long the agent stays over its budget.
 */
#include <stdlib.h>
#include <string.h>

#include "sym_cache.h"

struct trim_ctx {
	struct symbolizer *sym;
	htab_t memo;
	size_t kept, dropped, bytes;
	/* where the kept records' strings go (parking); NULL: they stay */
	htab_t strs;
	size_t *str_bytes;
};

/* Asked for in one of the last SYM_KEEP_ROUNDS rounds (this one too)? */
static bool hot(const struct symbolizer *sym, uint32_t used)
{
	return sym->round - used < SYM_KEEP_ROUNDS;
}

/* Copy a record's strings into ctx->strs; false on allocation failure. */
static bool own_strings(struct trim_ctx *c, struct memo_rec *r)
{
	for (int i = 0; i < r->n; i++) {
		struct sym_frame *f = &r->frames[i];
		const char **p[] = { &f->function, &f->system_name, &f->file };

		for (size_t k = 0; k < sizeof(p) / sizeof(p[0]); k++) {
			if (!*p[k])
				continue;
			*p[k] = symc_intern(c->strs, c->str_bytes, *p[k]);
			if (!*p[k])
				return false;
		}
	}
	return true;
}

/* Keep the records of hot offsets, drop the others. */
static int trim_one(void **slot, void *arg)
{
	struct trim_ctx *c = arg;
	struct memo_rec *r = *slot;
	size_t size = sizeof(*r) + (size_t)r->n * sizeof(r->frames[0]);

	if (hot(c->sym, r->used) && (!c->strs || own_strings(c, r))) {
		c->kept++;
		c->bytes += size;
		return 1;
	}
	c->dropped++;
	free(r);
	htab_clear_slot(c->memo, slot);
	return 1;
}

static void trim(struct trim_ctx *c)
{
	htab_traverse_noresize(c->memo, trim_one, c);
	c->sym->stats.results_kept += c->kept;
	c->sym->stats.results_dropped += c->dropped;
}

static uint64_t park_hash(const unsigned char *key, size_t len)
{
	return symc_hash_bytes(key, len);
}

static int parked_eq(const void *elem, const void *key)
{
	const struct sym_parked *p = elem;
	const struct bytes_key *k = key;

	return p->key_len == k->len && !memcmp(p->key, k->p, k->len);
}

static void parked_free(struct sym_parked *p)
{
	symc_table_free_all(p->memo);
	symc_table_free_all(p->strs);
	if (p->memo)
		htab_delete(p->memo);
	if (p->strs)
		htab_delete(p->strs);
	free(p);
}

/* Park e's hot resolutions (e is destroyed next); false when none is
 * kept. A new table of strings takes only what the kept records name. */
static bool park(struct symbolizer *sym, struct sym_elf *e)
{
	struct trim_ctx c = { .sym = sym, .memo = e->memo };
	struct bytes_key k = { e->key, e->key_len };
	struct sym_parked *p;
	void **slot;

	if (!sym->parked && !(sym->parked = symc_table_new(parked_eq)))
		return false;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->strs = symc_table_new(symc_istr_eq))) {
		free(p);
		return false;
	}
	c.strs = p->strs;
	c.str_bytes = &p->str_bytes;
	trim(&c);
	if (!c.kept) {
		parked_free(p);
		return false;
	}
	memcpy(p->key, e->key, e->key_len);
	p->key_len = e->key_len;
	p->hash = park_hash(e->key, e->key_len);
	p->memo = e->memo;
	p->memo_bytes = c.bytes;
	e->memo = NULL; /* the parked one's now */
	e->memo_bytes = 0;
	slot = htab_find_slot_with_hash(sym->parked, &k, (hashval_t)p->hash, INSERT);
	if (!slot) {
		sym->stats.results_kept -= c.kept;
		parked_free(p);
		return false;
	}
	if (*slot) /* the same build-id under two entries: keep one */
		parked_free(*slot);
	*slot = p;
	return true;
}

void symc_park_adopt(struct symbolizer *sym, struct sym_elf *e)
{
	struct bytes_key k = { e->key, e->key_len };
	uint64_t h = park_hash(e->key, e->key_len);
	struct sym_parked *p;

	if (!sym->parked || !(p = htab_find_with_hash(sym->parked, &k, (hashval_t)h)))
		return;
	htab_remove_elt_with_hash(sym->parked, &k, (hashval_t)h);
	sym->stats.results_adopted += htab_elements(p->memo);
	htab_delete(e->memo); /* new, empty */
	htab_delete(e->strs);
	e->memo = p->memo;
	e->strs = p->strs;
	e->memo_bytes = p->memo_bytes;
	e->str_bytes = p->str_bytes;
	p->memo = p->strs = NULL;
	parked_free(p);
}

/* Parked at an earlier round's end and not claimed since: its cold
 * offsets go, and it goes once none is left. */
static int trim_parked(void **slot, void *arg)
{
	struct symbolizer *sym = arg;
	struct sym_parked *p = *slot;
	struct trim_ctx c = { .sym = sym, .memo = p->memo };

	trim(&c);
	p->memo_bytes = c.bytes;
	if (!c.kept) {
		parked_free(p);
		htab_clear_slot(sym->parked, slot);
	}
	return 1;
}

static int drop_all(void **slot, void *arg)
{
	(void)arg;
	parked_free(*slot);
	return 1;
}

void symc_park_free(struct symbolizer *sym)
{
	if (!sym->parked)
		return;
	htab_traverse_noresize(sym->parked, drop_all, NULL);
	htab_delete(sym->parked);
	sym->parked = NULL;
}

size_t sym_release_cold(struct symbolizer *sym)
{
	struct sym_elf *e;
	size_t n = 0;

	if (!sym)
		return 0;
	sym->stats.results_kept = 0;
	if (sym->parked)
		htab_traverse_noresize(sym->parked, trim_parked, sym);
	for (e = sym->lru_tail; e;) {
		struct sym_elf *prev = e->lru_prev;

		if (e->pins) {
			/* kept whole but its cold offsets */
			struct trim_ctx c = { .sym = sym, .memo = e->memo };

			trim(&c);
			e->memo_bytes = c.bytes;
			symc_account(sym, e);
		} else {
			if (!park(sym, e))
				sym->stats.released_cold++;
			symc_entry_destroy(sym, e);
			sym->stats.released++;
			n++;
		}
		e = prev;
	}
	sym->round++;
	return n;
}

void sym_next_round(struct symbolizer *sym)
{
	if (sym)
		sym->round++;
}
