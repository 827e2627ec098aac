/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `ebprof top`'s memory lines: the backends with the most private
 * resident memory, each with its largest memory context and the
 * statement it ran, from the memory profiles of an interval (a profile
 * per backend, its label private_rss). Everything is copied out of the
 * profiles; the caller owns the struct.
 */
#ifndef EBPROF_TOP_MEMORY_H
#define EBPROF_TOP_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

struct top_mem_row {
	uint32_t pid;
	char backend_type[32];
	char database[64];
	uint64_t rss;	  /* private resident bytes */
	char largest[64]; /* its largest context (the leaf frame) */
	int64_t largest_bytes;
	int64_t total;	 /* every context's bytes */
	char query[128]; /* the statement it ran, "" for none */
};

struct top_memory {
	struct top_mem_row *rows;
	size_t n, cap;
};

/* A backend's memory profile (type memory), replacing one of the same
 * pid. 0 or -ENOMEM. */
int top_memory_add(struct top_memory *m, const struct sink_profile *r);
/* Sort the rows, most private memory first. */
void top_memory_sort(struct top_memory *m);
void top_memory_reset(struct top_memory *m);
void top_memory_free(struct top_memory *m);

#endif /* EBPROF_TOP_MEMORY_H */
