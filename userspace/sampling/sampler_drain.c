// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's counts, read out: each interval the counts map being
 * filled is flipped and the other drained (batched where the kernel has
 * it), every count resolved to its stacks; then the stacks no count
 * refers to any more are freed (sampler_gc_stacks).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler_internal.h"
#include "util/array.h"
#include "util/compare.h"

/* Remember a stack key as still referenced. Best effort: on allocation
 * failure GC is skipped (seen_cap = SIZE_MAX) rather than freeing stacks
 * still in use. */
void sampler_mark_stack(struct sampler *s, uint64_t key)
{
	if (!key || s->seen_cap == SIZE_MAX)
		return;
	if (ARRAY_RESERVE(s->seen, &s->seen_cap, s->nseen + 1)) {
		s->seen_cap = SIZE_MAX;
		return;
	}
	s->seen[s->nseen++] = key;
}

struct drain_ctx {
	struct sampler *s;
	enum ptype type;
	raw_sample_fn fn;
	void *ctx;
};

/* A resolved entry of a type other than cpu, said so. */
static int typed(const struct raw_sample *rs, void *ctx)
{
	const struct drain_ctx *d = ctx;
	struct raw_sample s = *rs;

	s.type = d->type;
	return d->fn(&s, d->ctx);
}

static int deliver(struct drain_ctx *d, uint32_t n)
{
	bool cpu = d->type == PTYPE_CPU;

	for (uint32_t i = 0; i < n; i++) {
		int ret;

		sampler_mark_stack(d->s, d->s->keys[i].kstack);
		sampler_mark_stack(d->s, d->s->keys[i].ustack);
		ret = d->s->stacks->resolve(d->s->stacks, &d->s->keys[i], d->s->values[i],
					    cpu ? d->fn : typed, cpu ? d->ctx : d);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int sampler_drain_map(struct sampler *s, struct bpf_map *map, enum ptype type, raw_sample_fn fn,
		      void *ctx)
{
	struct drain_ctx d = { s, type, fn, ctx };
	int fd = bpf_map__fd(map), total = 0, ret;
	uint32_t batch_out = 0, count;
	void *in = NULL;
	bool done = false;

	/* Fast path: batched lookup-and-delete (5.6+). */
	while (!done) {
		count = DRAIN_CHUNK;
		ret = bpf_map_lookup_and_delete_batch(fd, in, &batch_out, s->keys, s->values,
						      &count, NULL);
		if (ret && errno != ENOENT) {
			if (total == 0 && in == NULL &&
			    (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP))
				goto slow; /* kernel without batch ops */
			return -errno;
		}
		done = ret != 0; /* ENOENT: that was the last chunk */
		in = &batch_out;
		ret = deliver(&d, count);
		if (ret)
			return ret;
		total += count;
	}
	return total;
slow:
	/* Collect keys first: deleting while iterating restarts the walk. */
	for (;;) {
		struct sample_key *prev = NULL;
		uint32_t n = 0;

		while (n < DRAIN_CHUNK && !bpf_map_get_next_key(fd, prev, &s->keys[n])) {
			prev = &s->keys[n];
			n++;
		}
		if (n == 0)
			break;
		count = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (bpf_map_lookup_elem(fd, &s->keys[i], &s->values[count]))
				continue;
			bpf_map_delete_elem(fd, &s->keys[i]);
			s->keys[count++] = s->keys[i];
		}
		ret = deliver(&d, count);
		if (ret)
			return ret;
		total += count;
	}
	return total;
}

/* both: the new buffer too (the sampler stopped); interval: an
 * interval's drain, which rebalances the unwind tables. */
static int drain(struct sampler *s, bool both, bool interval, raw_sample_fn fn, void *ctx)
{
	struct bpf_map *maps[2] = { s->skel->maps.counts0, s->skel->maps.counts1 };
	uint32_t old = s->active;
	int ret, total;

	s->nseen = 0;
	if (s->seen_cap == SIZE_MAX) { /* an earlier allocation failure: retry */
		free(s->seen);
		s->seen = NULL;
		s->seen_cap = 0;
	}
	/* The stacks the counts refer to came before them. */
	if (s->urb)
		ring_buffer__consume(s->urb);
	/* Flip first so sampling goes on into the other map while we read;
	 * PL/pgSQL chains are sent again from now on (plpgsql.bpf.h). */
	s->active = !old;
	s->skel->bss->active_counts = s->active;
	__atomic_add_fetch(&s->skel->bss->plpgsql_gen, 1, __ATOMIC_RELAXED);
	__sync_synchronize();
	/* A sample that read the old index just before the flip finishes its
	 * update within microseconds (BPF programs do not sleep). */
	if (!both)
		usleep(1000);
	ret = sampler_drain_map(s, maps[old], PTYPE_CPU, fn, ctx);
	if (ret >= 0) {
		total = ret;
		ret = offcpu_drain(s, old, both, fn, ctx);
		ret = ret < 0 ? ret : total + ret;
	}
	if (ret >= 0) {
		total = ret;
		ret = faults_drain(s, old, both, fn, ctx);
		ret = ret < 0 ? ret : total + ret;
	}
	if (!both && interval && s->tables)
		unwind_tables_rebalance(s->tables); /* once per interval */
	if (ret < 0 || !both)
		return ret;
	total = ret;
	if (s->urb)
		ring_buffer__consume(s->urb);
	ret = sampler_drain_map(s, maps[s->active], PTYPE_CPU, fn, ctx);
	return ret < 0 ? ret : total + ret;
}

int sampler_drain(struct sampler *s, bool both, raw_sample_fn fn, void *ctx)
{
	return drain(s, both, true, fn, ctx);
}

int sampler_drain_early(struct sampler *s, raw_sample_fn fn, void *ctx)
{
	return drain(s, false, false, fn, ctx);
}

int sampler_drain_counts(struct sampler *s, raw_sample_fn fn, void *ctx)
{
	int ret;

	s->waits_keep_runs = true;
	ret = drain(s, false, false, fn, ctx);
	s->waits_keep_runs = false;
	return ret;
}

void sampler_mark_counts(struct sampler *s, struct bpf_map *map)
{
	int fd = bpf_map__fd(map);
	struct sample_key key, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		sampler_mark_stack(s, key.kstack);
		sampler_mark_stack(s, key.ustack);
		prev = &key;
	}
}

int sampler_gc_stacks(struct sampler *s)
{
	int stacks_fd = bpf_map__fd(s->skel->maps.stacks);
	uint64_t id, next;
	int freed = 0;
	bool more;

	/* Keep what the buffers being filled refer to. */
	sampler_mark_counts(s, s->active ? s->skel->maps.counts1 : s->skel->maps.counts0);
	offcpu_mark_live(s);
	faults_mark_live(s);
	if (s->seen_cap == SIZE_MAX)
		return -ENOMEM; /* cannot tell what is in use: free nothing */
	sort_array(s->seen, s->nseen, sizeof(*s->seen), cmp_u64);
	/* Walk the stack map; fetch the next key before deleting the
	 * current one so the walk goes on. */
	more = !bpf_map_get_next_key(stacks_fd, NULL, &id);
	while (more) {
		more = !bpf_map_get_next_key(stacks_fd, &id, &next);
		if (!search_array(&id, s->seen, s->nseen, sizeof(*s->seen), cmp_u64) &&
		    !bpf_map_delete_elem(stacks_fd, &id))
			freed++;
		id = next;
	}
	if (s->unwind != SAMPLER_UNWIND_FP)
		freed += stack_source_dwarf_gc(s->stacks, s->seen, s->nseen);
	return freed;
}
