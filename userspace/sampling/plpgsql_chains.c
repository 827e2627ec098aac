// SPDX-License-Identifier: BSD-2-Clause
/*
 * PL/pgSQL chains by hash, and their place in a stack (plpgsql_chains.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plpgsql_chains.h"
#include "util/hashmap.h"

struct entry {
	bool used; /* taken or asked for since the last age */
	size_t bytes;
	struct plpgsql_chain c; /* its signatures follow its functions */
};

struct plpgsql_chains {
	struct hashmap *by_hash; /* u64 hash -> struct entry */
	struct plpgsql_chains_stats st;
};

int plpgsql_chains_new(struct plpgsql_chains **out)
{
	struct plpgsql_chains *t = calloc(1, sizeof(*t));

	if (!t || !(t->by_hash = hm_new_u64())) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void plpgsql_chains_free(struct plpgsql_chains *t)
{
	const void *k;
	void *v;

	if (!t)
		return;
	for (size_t it = 0; hm_next(t->by_hash, &it, &k, &v);)
		free(v);
	hm_free(t->by_hash);
	free(t);
}

/* Length of the valid UTF-8 sequence at s (left bytes), 0 when none. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

	if (!n || n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A signature as it may be shown: control bytes and bytes of no valid
 * UTF-8 sequence become '?', a cut one ends in "...". Into out, its
 * length. */
static size_t clean(const char *sig, size_t len, bool cut, char *out)
{
	const unsigned char *s = (const unsigned char *)sig;
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t n = s[i] >= 0x80 ? utf8_len(s + i, len - i) : 1;

		if (n > 1) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		out[o++] = s[i] < 0x20 || s[i] >= 0x7f ? '?' : (char)s[i];
		i++;
	}
	if (cut) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return o;
}

int plpgsql_chains_add(struct plpgsql_chains *t, const void *data, size_t size,
		       const struct plpgsql_cframes *fr)
{
	const size_t head = offsetof(struct ebprof_plpgsql, level);
	const struct ebprof_plpgsql *r = data;
	size_t bytes, strs = 0;
	struct entry *e;
	char *p;
	void *old = NULL;

	if (size < head || r->n == 0 || r->n > EBPROF_PLPGSQL_DEPTH ||
	    size < head + r->n * sizeof(r->level[0])) {
		t->st.malformed++;
		return -EINVAL;
	}
	for (uint32_t k = 0; k < r->n; k++) {
		if (r->level[k].len >= EBPROF_PLPGSQL_SIG_LEN) {
			t->st.malformed++;
			return -EINVAL;
		}
		/* cleaned, "..." and the NUL: at most 4 bytes for 1, or
		 * PLPGSQL_UNREADABLE */
		strs += r->level[k].len + 4 + sizeof(PLPGSQL_UNREADABLE);
	}
	bytes = sizeof(*e) + r->n * sizeof(e->c.f[0]) + strs;
	e = malloc(bytes);
	if (!e)
		return -ENOMEM;
	e->used = true;
	e->bytes = bytes;
	if (fr && fr->n <= PLPGSQL_MAX_EXEC)
		e->c.fr = *fr;
	else
		memset(&e->c.fr, 0, sizeof(e->c.fr));
	e->c.n = r->n;
	e->c.cut = r->flags & EBPROF_PLPGSQL_CUT;
	p = (char *)&e->c.f[r->n];
	for (uint32_t k = 0; k < r->n; k++) {
		const struct ebprof_plpgsql_level *l = &r->level[k];
		/* read to the end of the buffer: the text went on */
		bool cut = l->len == EBPROF_PLPGSQL_SIG_LEN - 1;
		size_t len = strnlen(l->sig, l->len);

		e->c.f[k].signature = p;
		e->c.f[k].line = l->line > 0 ? l->line : 0;
		if (!len) {
			memcpy(p, PLPGSQL_UNREADABLE, sizeof(PLPGSQL_UNREADABLE));
			p += sizeof(PLPGSQL_UNREADABLE);
		} else {
			p += clean(l->sig, len, cut, p) + 1;
		}
	}
	if (!hm_find_u64(t->by_hash, r->hash, &old)) { /* sent again: what it is now */
		uint64_t key = r->hash;

		hm_remove(t->by_hash, &key, NULL, NULL);
		t->st.chains--;
		t->st.bytes -= ((struct entry *)old)->bytes;
		free(old);
	}
	if (hm_set_u64(t->by_hash, r->hash, e)) {
		free(e);
		return -ENOMEM;
	}
	t->st.records++;
	t->st.chains++;
	t->st.bytes += bytes;
	return 0;
}

const struct plpgsql_chain *plpgsql_chains_get(struct plpgsql_chains *t, uint64_t hash)
{
	void *v;

	if (!hash || hm_find_u64(t->by_hash, hash, &v))
		return NULL;
	((struct entry *)v)->used = true;
	return &((struct entry *)v)->c;
}

void plpgsql_chains_age(struct plpgsql_chains *t)
{
	const void *k;
	void *v;

	for (size_t it = 0; hm_next(t->by_hash, &it, &k, &v);) {
		struct entry *e = v;

		if (e->used) {
			e->used = false;
			continue;
		}
		hm_remove(t->by_hash, k, NULL, NULL);
		t->st.chains--;
		t->st.bytes -= e->bytes;
		free(e);
	}
}

void plpgsql_chains_get_stats(const struct plpgsql_chains *t, struct plpgsql_chains_stats *out)
{
	*out = t->st;
}

/* Is user frame i of s in one of the C frames? A return address is
 * looked up as the byte before it (the call), an interrupted instruction
 * as itself. */
static bool in_cframe(const struct raw_sample *s, uint32_t i, const struct plpgsql_cframes *fr)
{
	bool exact = (i == 0 && s->nkernel == 0) || (s->user[i] & EBPROF_IP_EXACT);
	uint64_t pc = (s->user[i] & ~EBPROF_IP_EXACT) - (exact ? 0 : 1);

	for (unsigned k = 0; k < fr->n && k < PLPGSQL_MAX_EXEC; k++)
		if (pc >= fr->start[k] && pc < fr->end[k])
			return true;
	return false;
}

void plpgsql_place(const struct plpgsql_chain *c, const struct raw_sample *s,
		   struct raw_plpgsql *out)
{
	const struct plpgsql_cframes *fr = c->fr.n ? &c->fr : NULL;
	bool whole = s->nuser && s->user_end == UNWIND_END_OK && !s->user_lost && !c->cut;
	uint32_t m = 0, skip, k = 0;

	for (uint32_t i = 0; fr && i < s->nuser; i++)
		m += in_cframe(s, i, fr);
	/* matched from the outermost: the innermost C frames beyond the
	 * functions have none */
	skip = whole && m > c->n ? m - c->n : 0;
	for (uint32_t i = 0; fr && i < s->nuser && k < c->n; i++) {
		if (!in_cframe(s, i, fr))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		out[k] = (struct raw_plpgsql){ c->f[k].signature, c->f[k].line, i };
		k++;
	}
	for (; k < c->n; k++)
		out[k] = (struct raw_plpgsql){ c->f[k].signature, c->f[k].line, s->nuser };
}
