// SPDX-License-Identifier: BSD-2-Clause
/* Frame-pointer stack source: stack keys -> addresses via the stack map
 * (stacks walked by the kernel with frame pointers, bpf_get_stack()). */
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

uint32_t stack_map_read(int fd, uint64_t key, uint64_t *buf, bool *lost)
{
	uint32_t n = 0;

	if (!key)
		return 0;
	if (bpf_map_lookup_elem(fd, &key, buf)) {
		*lost = true;
		return 0;
	}
	while (n < EBPROF_MAX_STACK_DEPTH && buf[n])
		n++;
	return n;
}

void raw_sample_from_key(struct raw_sample *s, const struct sample_key *key, uint64_t count)
{
	memset(s, 0, sizeof(*s));
	s->pid = key->tgid;
	s->tid = key->tid;
	memcpy(s->comm, key->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	s->count = count;
	s->kernel_lost = key->flags & SAMPLE_KSTACK_LOST;
	s->user_lost = key->flags & SAMPLE_USTACK_LOST;
	s->query = key->query;
	s->query_id = key->query_id;
	s->query_gap = key->flags & SAMPLE_QUERY_GAP;
	s->query_lost = key->flags & SAMPLE_QUERY_LOST;
	s->plpgsql_hash = key->plpgsql;
}

static int fp_resolve(struct stack_source *src, const struct sample_key *key, uint64_t count,
		      raw_sample_fn fn, void *ctx)
{
	struct fp_source *fp = (struct fp_source *)src;
	struct raw_sample s;

	raw_sample_from_key(&s, key, count);
	s.nkernel = stack_map_read(fp->stacks_fd, key->kstack, fp->kbuf, &s.kernel_lost);
	s.nuser = stack_map_read(fp->stacks_fd, key->ustack, fp->ubuf, &s.user_lost);
	/* bpf_get_stack() stops at its depth without saying so */
	if (s.nuser == EBPROF_MAX_STACK_DEPTH)
		s.user_end = UNWIND_END_DEPTH;
	if (s.nuser && (key->flags & SAMPLE_USER_EXACT))
		fp->ubuf[0] |= EBPROF_IP_EXACT; /* not a return address */
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
