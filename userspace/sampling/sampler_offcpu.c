// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's off-CPU half (bpf/offcpu.bpf.h): which sched_switch
 * program loads (user stacks unwound from CFI under bpf_loop or by tail
 * calls of raw_tp programs of its own, as the sampler unwinds, or by
 * frame pointers), its attachment, the drain of the off-CPU counts into
 * raw samples, and the stacks its entries still refer to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "sampler_internal.h"
#include "util/log.h"

#define OFFCPU_CHUNK 1024

int sampler_types_parse(const char *s, unsigned *out)
{
	unsigned types = 0;

	while (s && *s) {
		size_t n = strcspn(s, ",");

		if (n == 3 && !strncmp(s, "cpu", 3))
			types |= SAMPLER_TYPE_CPU;
		else if (n == 6 && !strncmp(s, "offcpu", 6))
			types |= SAMPLER_TYPE_OFFCPU;
		else
			return -EINVAL;
		s += n;
		if (*s == ',' && !*++s)
			return -EINVAL; /* a trailing comma */
	}
	if (!types)
		return -EINVAL;
	*out = types;
	return 0;
}

void offcpu_configure(struct sampler *s, const struct sampler_opts *opts)
{
	struct profile_bpf *sk = s->skel;
	bool on = opts->types & SAMPLER_TYPE_OFFCPU;

	s->types = opts->types ? opts->types : SAMPLER_TYPE_CPU;
	bpf_program__set_autoload(sk->progs.on_switch_loop, on && s->unwind == SAMPLER_UNWIND_LOOP);
	bpf_program__set_autoload(sk->progs.on_switch_tail, on && s->unwind == SAMPLER_UNWIND_TAIL);
	bpf_program__set_autoload(sk->progs.offcpu_unwind_tail,
				  on && s->unwind == SAMPLER_UNWIND_TAIL);
	bpf_program__set_autoload(sk->progs.on_switch, on && s->unwind == SAMPLER_UNWIND_FP);
	sk->rodata->offcpu_min_ns = opts->offcpu_min_ns;
	sk->rodata->offcpu_pct = opts->offcpu_pct ? opts->offcpu_pct : 100;
	s->offcpu_scale = 100.0 / sk->rodata->offcpu_pct;
	if (!on) { /* its maps at their least */
		bpf_map__set_max_entries(sk->maps.offcpu_starts, 1);
		bpf_map__set_max_entries(sk->maps.offcpu_counts0, 1);
		bpf_map__set_max_entries(sk->maps.offcpu_counts1, 1);
	}
}

int offcpu_attach(struct sampler *s, char *err, size_t errlen)
{
	struct bpf_program *p = s->unwind == SAMPLER_UNWIND_LOOP   ? s->skel->progs.on_switch_loop
				: s->unwind == SAMPLER_UNWIND_TAIL ? s->skel->progs.on_switch_tail
								   : s->skel->progs.on_switch;
	int ret, key = 0, fd;

	if (!(s->types & SAMPLER_TYPE_OFFCPU) || s->offcpu_link)
		return 0;
	if (s->unwind == SAMPLER_UNWIND_TAIL) {
		fd = bpf_program__fd(s->skel->progs.offcpu_unwind_tail);
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.offcpu_unwind_prog), &key, &fd,
					BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen, "cannot set up the off-CPU unwinder's tail call: %s",
				 strerror(errno));
			return ret;
		}
	}
	s->offcpu_link = bpf_program__attach(p);
	if (!s->offcpu_link) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach the off-CPU program to sched_switch: %s",
			 strerror(errno));
		return ret;
	}
	return 0;
}

void offcpu_detach(struct sampler *s)
{
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
}

struct offcpu_fn {
	raw_sample_fn fn;
	void *ctx;
	const struct offcpu_key *key;
	const struct offcpu_value *value;
	double scale;
};

/* A resolved off-CPU entry: its time, state and wait event added. */
static int with_offcpu(const struct raw_sample *rs, void *ctx)
{
	const struct offcpu_fn *o = ctx;
	struct raw_sample s = *rs;

	s.offcpu_ns = (uint64_t)((double)o->value->ns * o->scale);
	s.offcpu_state = o->key->state;
	s.wait_event = o->key->wait_event;
	s.has_wait = o->key->has_wait;
	s.pg_major = o->key->pg_major;
	return o->fn(&s, o->ctx);
}

/* Read and delete every entry of one off-CPU counts map. */
static int drain_one(struct sampler *s, struct bpf_map *map, raw_sample_fn fn, void *ctx)
{
	struct offcpu_key *keys = s->okeys;
	struct offcpu_value *vals = s->ovalues;
	int fd = bpf_map__fd(map), total = 0, ret;

	for (;;) {
		struct offcpu_key *prev = NULL;
		uint32_t n = 0, count = 0;

		/* keys first: deleting while iterating restarts the walk */
		while (n < OFFCPU_CHUNK && !bpf_map_get_next_key(fd, prev, &keys[n])) {
			prev = &keys[n];
			n++;
		}
		if (n == 0)
			break;
		for (uint32_t i = 0; i < n; i++) {
			if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &vals[count]) &&
			    (bpf_map_lookup_elem(fd, &keys[i], &vals[count]) ||
			     bpf_map_delete_elem(fd, &keys[i])))
				continue;
			keys[count++] = keys[i];
		}
		for (uint32_t i = 0; i < count; i++) {
			struct offcpu_fn o = { fn, ctx, &keys[i], &vals[i], s->offcpu_scale };

			sampler_mark_stack(s, keys[i].s.kstack);
			sampler_mark_stack(s, keys[i].s.ustack);
			ret = s->stacks->resolve(s->stacks, &keys[i].s, vals[i].count, with_offcpu,
						 &o);
			if (ret < 0)
				return ret;
		}
		total += (int)count;
	}
	return total;
}

int offcpu_drain(struct sampler *s, uint32_t old, bool both, raw_sample_fn fn, void *ctx)
{
	struct bpf_map *maps[2] = { s->skel->maps.offcpu_counts0, s->skel->maps.offcpu_counts1 };
	int ret, total;

	if (!(s->types & SAMPLER_TYPE_OFFCPU))
		return 0;
	if (!s->okeys) {
		s->okeys = calloc(OFFCPU_CHUNK, sizeof(*s->okeys));
		s->ovalues = calloc(OFFCPU_CHUNK, sizeof(*s->ovalues));
		if (!s->okeys || !s->ovalues)
			return -ENOMEM;
	}
	ret = drain_one(s, maps[old], fn, ctx);
	if (ret < 0 || !both)
		return ret;
	total = ret;
	ret = drain_one(s, maps[!old], fn, ctx);
	return ret < 0 ? ret : total + ret;
}

void offcpu_mark_live(struct sampler *s)
{
	int counts = bpf_map__fd(s->active ? s->skel->maps.offcpu_counts1
					   : s->skel->maps.offcpu_counts0);
	int starts = bpf_map__fd(s->skel->maps.offcpu_starts);
	struct offcpu_key key, *prev = NULL;
	struct offcpu_start start;
	uint32_t tid, *tprev = NULL;

	if (!(s->types & SAMPLER_TYPE_OFFCPU))
		return;
	while (!bpf_map_get_next_key(counts, prev, &key)) {
		sampler_mark_stack(s, key.s.kstack);
		sampler_mark_stack(s, key.s.ustack);
		prev = &key;
	}
	/* threads away now: their stacks are counted when they come back */
	while (!bpf_map_get_next_key(starts, tprev, &tid)) {
		if (!bpf_map_lookup_elem(starts, &tid, &start)) {
			sampler_mark_stack(s, start.key.s.kstack);
			sampler_mark_stack(s, start.key.s.ustack);
		}
		tprev = &tid;
	}
}
