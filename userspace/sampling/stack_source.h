/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stack sources turn what the BPF sampler counted into raw samples: plain
 * addresses, leaf first. The profile builder and the symbolizer only ever
 * see struct raw_sample, so a DWARF/.eh_frame unwinder for binaries built
 * without frame pointers can replace the frame-pointer source (stack_fp.c)
 * without touching them.
 */
#ifndef EBPROF_STACK_SOURCE_H
#define EBPROF_STACK_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "ebprof/bpf_shared.h"

/* One counted stack. Arrays are owned by the caller of the callback and
 * valid only during the call. */
struct raw_sample {
	uint32_t pid, tid;
	char comm[EBPROF_TASK_COMM_LEN]; /* thread name at sampling time */
	uint64_t count;
	uint32_t nkernel, nuser;
	const uint64_t *kernel; /* leaf first */
	const uint64_t *user;	/* leaf first */
	bool kernel_lost;	/* a kernel stack was taken but is lost */
	bool user_lost;		/* a user stack was taken but is lost */
	/* PostgreSQL backends: the statement's hash (query/table.h), 0:
	 * none; its query id, 0: none; running between statements; running
	 * a statement whose text was lost. */
	uint64_t query;
	int64_t query_id;
	bool query_gap, query_lost;
};

typedef int (*raw_sample_fn)(const struct raw_sample *s, void *ctx);

struct stack_source {
	const char *name;
	/* Resolve one counts entry into a raw sample and hand it to fn.
	 * Returns fn's result, or a negative errno. */
	int (*resolve)(struct stack_source *src, const struct sample_key *key, uint64_t count,
		       raw_sample_fn fn, void *ctx);
	void (*destroy)(struct stack_source *src);
};

/* Frame-pointer stacks collected by bpf_get_stack() into the stack map
 * whose fd is given (the fd stays owned by the caller). */
int stack_source_fp_new(int stacks_map_fd, struct stack_source **out);

#endif /* EBPROF_STACK_SOURCE_H */
