// SPDX-License-Identifier: BSD-2-Clause
/*
 * DWARF stack source (stack_source.h): user stacks unwound in BPF arrive
 * once each through the `ustacks` ring buffer and are kept here under
 * their hash; kernel stacks come from the stack map. Forgetting a stack
 * takes two steps so a sample counted just before BPF forgot it still
 * finds it: delete its hash from `ustack_known` (BPF sends it again when
 * it sees it again), then, if no drain referred to it meanwhile, free it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "stack_source.h"
#include "util/compare.h"
#include "util/hashmap.h"

struct ustack {
	uint32_t n;
	uint16_t end;
	bool fp;
	bool used;	/* referred to since the last gc */
	bool forgotten; /* deleted from ustack_known */
	uint64_t ips[]; /* n frames, leaf first */
};

struct dwarf_source {
	struct stack_source base;
	int stacks_fd, known_fd;
	struct hashmap *stacks; /* struct ustack, by hash */
	struct dwarf_stack_stats st;
	uint64_t kbuf[EBPROF_MAX_STACK_DEPTH];
};

int stack_source_dwarf_add(struct stack_source *src, const void *data, size_t size)
{
	struct dwarf_source *d = (struct dwarf_source *)src;
	const size_t head = offsetof(struct ebprof_ustack, ips);
	const struct ebprof_ustack *rec = data;
	struct ustack *u, *old = NULL;

	if (size < head || rec->n == 0 || rec->n > EBPROF_MAX_UNWIND_DEPTH ||
	    size < head + rec->n * sizeof(uint64_t) || rec->end >= UNWIND_END_MAX)
		return -EINVAL;
	if (!hm_find_u64(d->stacks, rec->hash, (void **)&old) && old->n == rec->n) {
		old->forgotten = false; /* BPF sent it again */
		return 0;
	}
	u = malloc(sizeof(*u) + rec->n * sizeof(uint64_t));
	if (!u)
		return -ENOMEM;
	u->n = rec->n;
	u->end = rec->end;
	u->fp = rec->fp_frames != 0;
	u->used = true;
	u->forgotten = false;
	memcpy(u->ips, rec->ips, rec->n * sizeof(uint64_t));
	if (hm_set_u64(d->stacks, rec->hash, u)) {
		free(u);
		return -ENOMEM;
	}
	if (old) {
		d->st.bytes -= sizeof(*old) + old->n * sizeof(uint64_t);
		d->st.stacks--;
		free(old);
	}
	d->st.stacks++;
	d->st.bytes += sizeof(*u) + u->n * sizeof(uint64_t);
	return 0;
}

static int dwarf_resolve(struct stack_source *src, const struct sample_key *key, uint64_t count,
			 raw_sample_fn fn, void *ctx)
{
	struct dwarf_source *d = (struct dwarf_source *)src;
	struct ustack *u = NULL;
	struct raw_sample s;

	raw_sample_from_key(&s, key, count);
	s.nkernel = stack_map_read(d->stacks_fd, key->kstack, d->kbuf, &s.kernel_lost);
	s.kernel = d->kbuf;
	if (key->ustack && !(key->flags & SAMPLE_USTACK_DWARF)) {
		s.user_lost = true; /* not ours: cannot happen but for a bug */
	} else if (key->ustack) {
		if (hm_find_u64(d->stacks, key->ustack, (void **)&u)) {
			s.user_lost = true;
			d->st.unknown += count;
		} else {
			u->used = true;
			s.nuser = u->n;
			s.user = u->ips;
			s.user_end = u->end;
			s.user_fp = u->fp;
			d->st.ends[u->end] += count;
			d->st.fp_samples += u->fp ? count : 0;
		}
	}
	return fn(&s, ctx);
}

int stack_source_dwarf_gc(struct stack_source *src, const uint64_t *keep, size_t nkeep)
{
	struct dwarf_source *d = (struct dwarf_source *)src;
	size_t it = 0, ndead = 0, cap = 0;
	uint64_t *dead = NULL;
	const void *k;
	void *v;
	int freed = 0;

	while (hm_next(d->stacks, &it, &k, &v)) {
		struct ustack *u = v;
		uint64_t h = *(const uint64_t *)k;

		if (u->used || search_array(&h, keep, nkeep, sizeof(*keep), cmp_u64)) {
			u->used = false;
			continue;
		}
		if (!u->forgotten) {
			/* BPF sends it again should it come back */
			bpf_map_delete_elem(d->known_fd, &h);
			u->forgotten = true;
			continue;
		}
		if (ndead == cap) {
			uint64_t *n = realloc(dead, (cap = cap ? 2 * cap : 256) * sizeof(*dead));

			if (!n)
				break;
			dead = n;
		}
		dead[ndead++] = h;
	}
	for (size_t i = 0; i < ndead; i++) {
		void *old = NULL;

		if (hm_remove(d->stacks, &dead[i], NULL, &old) || !old)
			continue;
		d->st.stacks--;
		d->st.bytes -= sizeof(struct ustack) + ((struct ustack *)old)->n * sizeof(uint64_t);
		free(old);
		freed++;
	}
	free(dead);
	return freed;
}

void stack_source_dwarf_stats(const struct stack_source *src, struct dwarf_stack_stats *out)
{
	*out = ((const struct dwarf_source *)src)->st;
}

static void dwarf_destroy(struct stack_source *src)
{
	struct dwarf_source *d = (struct dwarf_source *)src;
	size_t it = 0;
	const void *k;
	void *v;

	while (hm_next(d->stacks, &it, &k, &v))
		free(v);
	hm_free(d->stacks);
	free(d);
}

int stack_source_dwarf_new(int stacks_map_fd, int known_fd, struct stack_source **out)
{
	struct dwarf_source *d = calloc(1, sizeof(*d));

	if (!d || !(d->stacks = hm_new_u64())) {
		free(d);
		return -ENOMEM;
	}
	d->base.name = "dwarf";
	d->base.resolve = dwarf_resolve;
	d->base.destroy = dwarf_destroy;
	d->stacks_fd = stacks_map_fd;
	d->known_fd = known_fd;
	*out = &d->base;
	return 0;
}
