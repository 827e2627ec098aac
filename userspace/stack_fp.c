// SPDX-License-Identifier: BSD-2-Clause
/* Frame-pointer stack source: stack ids -> addresses via the stack map. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "stack_source.h"

struct fp_source {
	struct stack_source base;
	int stacks_fd;
	uint64_t kbuf[EBPROF_MAX_STACK_DEPTH];
	uint64_t ubuf[EBPROF_MAX_STACK_DEPTH];
};

/* Read stack id into buf; returns the depth (0 when lost). */
static uint32_t read_stack(int fd, int32_t id, uint64_t *buf, bool *lost)
{
	uint32_t n = 0;

	*lost = false;
	if (id == EBPROF_STACK_NONE)
		return 0;
	if (id < 0 || bpf_map_lookup_elem(fd, &id, buf)) {
		*lost = true;
		return 0;
	}
	while (n < EBPROF_MAX_STACK_DEPTH && buf[n])
		n++;
	return n;
}

static int fp_resolve(struct stack_source *src, const struct sample_key *key, uint64_t count,
		      raw_sample_fn fn, void *ctx)
{
	struct fp_source *fp = (struct fp_source *)src;
	struct raw_sample s = { 0 };

	s.pid = key->tgid;
	s.tid = key->tid;
	memcpy(s.comm, key->comm, sizeof(s.comm));
	s.comm[sizeof(s.comm) - 1] = '\0';
	s.count = count;
	s.nkernel = read_stack(fp->stacks_fd, key->kstack_id, fp->kbuf, &s.kernel_lost);
	s.nuser = read_stack(fp->stacks_fd, key->ustack_id, fp->ubuf, &s.user_lost);
	s.kernel = fp->kbuf;
	s.user = fp->ubuf;
	return fn(&s, ctx);
}

static void fp_destroy(struct stack_source *src)
{
	free(src);
}

int stack_source_fp_new(int stacks_map_fd, struct stack_source **out)
{
	struct fp_source *fp = calloc(1, sizeof(*fp));

	if (!fp)
		return -ENOMEM;
	fp->base.name = "frame-pointer";
	fp->base.resolve = fp_resolve;
	fp->base.destroy = fp_destroy;
	fp->stacks_fd = stacks_map_fd;
	*out = &fp->base;
	return 0;
}
