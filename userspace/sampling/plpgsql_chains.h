/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PL/pgSQL chains: the functions a backend ran at a sample, innermost
 * first, as the BPF program sends them (EVENT_PLPGSQL, bpf/plpgsql.bpf.h)
 * once per chain and drain, kept here by the hash the sample keys carry;
 * and where a sample's functions go among its C frames (plpgsql_place()).
 * Signatures are a backend's memory: kept printable and valid UTF-8, at
 * most EBPROF_PLPGSQL_SIG_LEN - 1 bytes (a longer one ends in "...").
 */
#ifndef EBPROF_PLPGSQL_CHAINS_H
#define EBPROF_PLPGSQL_CHAINS_H

#include <stdbool.h>
#include <stdint.h>

#include "plpgsql_bin.h"
#include "stack_source.h"

/* The name of a function whose signature could not be read. */
#define PLPGSQL_UNREADABLE "[PL/pgSQL function, signature unreadable]"

struct plpgsql_fn {
	const char *signature;
	int32_t line;
};

struct plpgsql_chain {
	struct plpgsql_cframes fr; /* its process's C frames when it came (n 0: none) */
	uint32_t n;
	bool cut; /* more functions outside these, left out */
	struct plpgsql_fn f[];
};

struct plpgsql_chains_stats {
	uint64_t chains, bytes; /* held now */
	uint64_t records;	/* records taken */
	uint64_t malformed;	/* records refused */
};

struct plpgsql_chains;

int plpgsql_chains_new(struct plpgsql_chains **out);
void plpgsql_chains_free(struct plpgsql_chains *t);

/* Take an EVENT_PLPGSQL record of size bytes (it replaces a chain of its
 * hash), with the C frames of its process (a copy; NULL: none known):
 * the chain's samples are drained after the process may be gone. 0,
 * -EINVAL for a malformed one, -ENOMEM. */
int plpgsql_chains_add(struct plpgsql_chains *t, const void *rec, size_t size,
		       const struct plpgsql_cframes *fr);

/* The chain of hash, NULL when it never came; owned by the table, valid
 * until the next plpgsql_chains_age(). */
const struct plpgsql_chain *plpgsql_chains_get(struct plpgsql_chains *t, uint64_t hash);

/* After a drain: forget the chains neither taken nor asked for since the
 * last call (the BPF program sends those in use again after each drain). */
void plpgsql_chains_age(struct plpgsql_chains *t);

void plpgsql_chains_get_stats(const struct plpgsql_chains *t, struct plpgsql_chains_stats *out);

/*
 * Place the functions of chain c among sample s's user frames (leaf
 * first): function k at the C frame (c->fr) of the k-th PL/pgSQL
 * executor frame from the leaf, into out[k] (c->n of them, innermost
 * first, `at` non-decreasing). When the stack and the chain are whole,
 * they are matched from the outermost (an innermost executor frame
 * without its function is one setting up or tearing down: its entry not
 * pushed yet, or popped); otherwise from the innermost. A function
 * without a C frame goes after the user frames (at = s->nuser).
 */
void plpgsql_place(const struct plpgsql_chain *c, const struct raw_sample *s,
		   struct raw_plpgsql *out);

#endif /* EBPROF_PLPGSQL_CHAINS_H */
