// SPDX-License-Identifier: BSD-2-Clause
/* Memory-context snapshots into memory profiles (memctx.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memctx.h"
#include "util/hashmap.h"

#define MAX_LABELS 16

/* Contexts whose ident names a schema object (a relation, an index, a
 * function's signature, a portal, a text-search dictionary): shown as it
 * is, as pg_backend_memory_contexts shows it. */
static const char *const object_idents[] = {
	"index info",	     "relation rules",	    "partition key", "partition descriptor",
	"PL/pgSQL function", "SQL function",	    "PortalContext", "TS dictionary",
	"RelCache",	     "extended statistics",
};

struct profile *memctx_profile_new(int64_t time_ns)
{
	struct profile *p = profile_new();

	if (!p || profile_add_sample_type(p, "space", "bytes") ||
	    profile_add_sample_type(p, "used", "bytes") ||
	    profile_add_sample_type(p, "contexts", "count") ||
	    profile_set_period(p, "space", "bytes", 1) || profile_set_default_type(p, "space")) {
		profile_free(p);
		return NULL;
	}
	p->time_nanos = time_ns;
	return p;
}

static bool object_ident(const char *name)
{
	for (size_t i = 0; i < sizeof(object_idents) / sizeof(object_idents[0]); i++)
		if (!strcmp(name, object_idents[i]))
			return true;
	return false;
}

/* A frame named name: its location id, or a negative errno. No file name:
 * readers print "name file:line", and a context's name may hold spaces. */
static int64_t frame(struct profile *p, const char *name)
{
	int64_t fn = profile_add_function(p, name, name, "", 0);
	struct pf_line line = { 0 };

	if (fn < 0)
		return fn;
	line.function_id = (uint64_t)fn;
	return profile_add_location(p, 0, 0, &line, 1);
}

/* The ident frame of context c (0: none shown), counted in st. */
static int64_t ident_frame(struct profile *p, const struct pgmem_context *c,
			   struct query_table *queries, struct memctx_stats *st)
{
	const struct query_info *q;
	uint64_t hash;

	if (!c->ident || !strcmp(c->name, "dynahash"))
		return 0;
	if (object_ident(c->name)) {
		st->idents_kept++;
		return frame(p, c->ident);
	}
	/* maybe a statement, literals and all */
	hash = hm_hash_str(c->ident) ^ 0x6964656e74ULL; /* "ident" */
	if (queries && !query_table_add(queries, hash, c->ident, strlen(c->ident), c->ident_cut) &&
	    (q = query_table_get(queries, hash))) {
		st->idents_normalized++;
		return frame(p, q->label);
	}
	st->idents_dropped++;
	return 0;
}

int memctx_add(struct profile *p, const struct pgmem_snapshot *s, const struct pf_label *labels,
	       size_t nlabels, struct query_table *queries, struct memctx_stats *st)
{
	/* per context: its name's frame and its ident's (0: none) */
	int64_t *name_loc = calloc(s->n + 1, sizeof(*name_loc));
	int64_t *ident_loc = calloc(s->n + 1, sizeof(*ident_loc));
	uint64_t stack[2 * 65];
	struct pf_label lab[MAX_LABELS + 1];
	int err = 0;

	if (!name_loc || !ident_loc || nlabels > MAX_LABELS) {
		err = nlabels > MAX_LABELS ? -EINVAL : -ENOMEM;
		goto out;
	}
	if (nlabels)
		memcpy(lab, labels, nlabels * sizeof(*labels));
	lab[nlabels] = profile_label_str(p, "used", "unmeasured");
	for (size_t i = 0; i < s->n && !err; i++) {
		const struct pgmem_context *c = &s->ctx[i];
		/* a dynahash context is named after its table, as the view does */
		const char *name = c->ident && !strcmp(c->name, "dynahash") ? c->ident : c->name;
		int64_t values[3] = { (int64_t)c->total, c->used_known ? (int64_t)c->used : 0, 1 };
		size_t n = 0;

		name_loc[i] = frame(p, name);
		ident_loc[i] = ident_frame(p, c, queries, st);
		if (name_loc[i] < 0 || ident_loc[i] < 0) {
			err = (int)(name_loc[i] < 0 ? name_loc[i] : ident_loc[i]);
			break;
		}
		/* leaf first: the context, then its ancestors */
		for (uint32_t j = (uint32_t)i; j != PGMEM_ROOT && n + 2 <= sizeof(stack) / 8;
		     j = s->ctx[j].parent) {
			if (ident_loc[j])
				stack[n++] = (uint64_t)ident_loc[j];
			stack[n++] = (uint64_t)name_loc[j];
		}
		err = profile_add_sample(p, stack, n, values, lab,
					 nlabels + (c->used_known ? 0 : 1));
		st->contexts++;
		st->unmeasured += !c->used_known;
	}
	st->snapshots++;
	for (int d = 0; d < PGMEM_DROP_MAX; d++)
		st->drops[d] += s->drops[d];
out:
	free(name_loc);
	free(ident_loc);
	return err;
}

int memctx_comment(struct profile *p, const struct memctx_stats *st)
{
	char buf[512];
	size_t len;

	len = (size_t)snprintf(buf, sizeof(buf),
			       "memory contexts: %llu of %llu snapshot(s); used bytes measured "
			       "for %llu of them (AllocSets)",
			       (unsigned long long)st->contexts, (unsigned long long)st->snapshots,
			       (unsigned long long)(st->contexts - st->unmeasured));
	for (int d = 0; d < PGMEM_DROP_MAX && len < sizeof(buf); d++)
		if (st->drops[d])
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%llu dropped (%s)",
						len && strstr(buf, "dropped") ? ", " : "; ",
						(unsigned long long)st->drops[d],
						pgmem_drop_name((enum pgmem_drop)d));
	if (st->idents_dropped && len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len,
			 "; %llu ident(s) left out (not shown as read)",
			 (unsigned long long)st->idents_dropped);
	return profile_add_comment(p, buf);
}
