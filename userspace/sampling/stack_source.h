/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stack sources turn what the BPF sampler counted into raw samples:
 * addresses, leaf first (a user address may carry EBPROF_IP_EXACT, which
 * the profile builder strips). The profile builder and the symbolizer only ever
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
#include "util/profile_types.h"

/* A PL/pgSQL function a sample ran, placed at the C frame that executes
 * it: before user frame at (leaf first; nuser: none found, after them). */
struct raw_plpgsql {
	const char *signature; /* "schema.fn(argtypes)" */
	int32_t line;	       /* 0: none */
	uint32_t at;
};

/* One counted stack. Arrays are owned by the caller of the callback and
 * valid only during the call. */
struct raw_sample {
	uint8_t type; /* enum ptype (util/profile_types.h): the profile it goes
		       * to, PTYPE_CPU (0) unless the drain of another says */
	uint32_t pid, tid;
	char comm[EBPROF_TASK_COMM_LEN]; /* thread name at sampling time */
	uint64_t count;
	uint32_t nkernel, nuser;
	const uint64_t *kernel; /* leaf first */
	const uint64_t *user;	/* leaf first; EBPROF_IP_EXACT marks an
				 * interrupted instruction (bpf_shared.h) */
	bool kernel_lost;	/* a kernel stack was taken but is lost */
	bool user_lost;		/* a user stack was taken but is lost */
	uint16_t user_end;	/* enum unwind_end: why the user stack ends */
	bool user_fp;		/* a user frame was found by its frame pointer */
	/* PostgreSQL backends: the statement's hash (query/table.h), 0:
	 * none; its query id, 0: none; running between statements; running
	 * a statement whose text was lost. */
	uint64_t query;
	int64_t query_id;
	bool query_gap, query_lost;
	/* PostgreSQL backends in PL/pgSQL: the hash of the chain of
	 * functions (sampling/plpgsql_chains.h), 0: none; and the functions
	 * placed (plpgsql_place()), innermost first, nplpgsql of them. */
	uint64_t plpgsql_hash;
	const struct raw_plpgsql *plpgsql;
	uint32_t nplpgsql;
	/* Off-CPU entries (PTYPE_OFFCPU): count is the times away,
	 * offcpu_ns the time (scaled by the share of switches taken); the
	 * PostgreSQL wait event as it left (has_wait: the process's wait
	 * events are read; wait_event 0: none set). */
	uint8_t offcpu_state; /* enum offcpu_state */
	bool has_wait;
	uint16_t pg_major; /* 0: unknown */
	uint32_t wait_event;
	uint64_t offcpu_ns;
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

/* For stack sources: the fields of s that come from the key itself. */
void raw_sample_from_key(struct raw_sample *s, const struct sample_key *key, uint64_t count);
/* Read the bpf_get_stack() stack stored under key in the stack map fd
 * into buf (EBPROF_MAX_STACK_DEPTH entries); its depth, 0 when there is
 * none or it is gone (*lost set). */
uint32_t stack_map_read(int fd, uint64_t key, uint64_t *buf, bool *lost);

/*
 * DWARF-unwound user stacks (--unwind dwarf): the BPF program sends each
 * new stack once through the `ustacks` ring buffer (struct
 * ebprof_ustack); stack_source_dwarf_add() keeps it under its hash.
 * Kernel stacks come from the stack map as with frame pointers. known_fd
 * is the `ustack_known` map: a stack forgotten here is deleted there so
 * the program sends it again. The fds stay owned by the caller.
 */
int stack_source_dwarf_new(int stacks_map_fd, int known_fd, struct stack_source **out);
/* A ring buffer record; -EINVAL for a malformed one. */
int stack_source_dwarf_add(struct stack_source *src, const void *data, size_t size);
/* Forget stacks no sample referred to since the last call and that are
 * not in keep (sorted): first in BPF, then, one call later, here.
 * Returns the number forgotten here. */
int stack_source_dwarf_gc(struct stack_source *src, const uint64_t *keep, size_t nkeep);

struct dwarf_stack_stats {
	uint64_t stacks, bytes;	       /* held now */
	uint64_t unknown;	       /* samples whose stack never arrived */
	uint64_t ends[UNWIND_END_MAX]; /* samples by how their stack ended */
	uint64_t fp_samples;	       /* samples with a frame-pointer frame */
};
void stack_source_dwarf_stats(const struct stack_source *src, struct dwarf_stack_stats *out);

#endif /* EBPROF_STACK_SOURCE_H */
