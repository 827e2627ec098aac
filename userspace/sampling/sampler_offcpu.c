// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's off-CPU half (bpf/offcpu.bpf.h): the sched_switch program
 * that notes when a target leaves (with prev_state as an argument on 5.18+,
 * else read from prev), and which of the programs where the switch ends
 * (the sched_exit_tp tracepoint or a kprobe on finish_task_switch) decides
 * each wait and takes its stacks (user stacks unwound from CFI under
 * bpf_loop or by tail calls of programs of its own type, as the sampler
 * unwinds, or by frame pointers); their attachment, the drain of the
 * off-CPU counts into raw samples, and the stacks its entries refer to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "bpf_features.h"
#include "sampler_internal.h"
#include "util/log.h"

#define OFFCPU_CHUNK 1024

/* Where the stacks of a wait are taken, from one reading of
 * /proc/kallsyms: the sched_exit_tp tracepoint (6.16+) when this kernel
 * has it (true), else a kprobe on finish_task_switch, under the name it
 * has in this kernel (compilers make it finish_task_switch.isra.0 and the
 * like: the plain name wins) in kp_sym, "" when there is none. */
static bool switch_end(char *kp_sym, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256], sym[128];

	kp_sym[0] = '\0';
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %127s", sym) != 1)
			continue;
		if (!strcmp(sym, "__traceiter_sched_exit_tp")) {
			fclose(f);
			return true;
		}
		if (strncmp(sym, "finish_task_switch", 18) || (sym[18] && sym[18] != '.') ||
		    (kp_sym[0] && !kp_sym[18]))
			continue;
		snprintf(kp_sym, len, "%s", sym);
	}
	fclose(f);
	return false;
}

void offcpu_configure(struct sampler *s, const struct sampler_opts *opts)
{
	struct profile_bpf *sk = s->skel;
	bool on = opts->types & PTYPE_BIT(PTYPE_OFFCPU);
	bool sw = on && s->offcpu_path == SAMPLER_OFFCPU_SWITCH;
	bool tp = sw && switch_end(s->offcpu_kp_sym, sizeof(s->offcpu_kp_sym)), kp = sw && !tp;
	bool fp = s->unwind == SAMPLER_UNWIND_FP, loop = s->unwind == SAMPLER_UNWIND_LOOP;
	bool tail = s->unwind == SAMPLER_UNWIND_TAIL;

	s->types = opts->types ? opts->types : PTYPE_BIT(PTYPE_CPU);
	s->offcpu_tp = tp;
	bpf_program__set_autoload(sk->progs.offcpu_cut,
				  sw && features_have_task_iter()); /* probed only for off-CPU */
	bpf_program__set_autoload(sk->progs.on_switch_state, sw);
	bpf_program__set_autoload(sk->progs.on_switch, sw);
	bpf_program__set_autoload(sk->progs.offcpu_tp, tp && fp);
	bpf_program__set_autoload(sk->progs.offcpu_tp_loop, tp && loop);
	bpf_program__set_autoload(sk->progs.offcpu_tp_tail, tp && tail);
	bpf_program__set_autoload(sk->progs.offcpu_tp_more, tp && tail);
	bpf_program__set_autoload(sk->progs.offcpu_kp, kp && fp);
	bpf_program__set_autoload(sk->progs.offcpu_kp_loop, kp && loop);
	bpf_program__set_autoload(sk->progs.offcpu_kp_tail, kp && tail);
	bpf_program__set_autoload(sk->progs.offcpu_kp_more, kp && tail);
	sk->rodata->offcpu_min_ns = opts->offcpu_min_ns;
	sk->rodata->offcpu_period_ns = opts->offcpu_period_ns;
	sk->rodata->offcpu_pct = opts->offcpu_pct ? opts->offcpu_pct : 100;
	sk->rodata->offcpu_on = sw;
	/* sampled: every visit counts, none is left to a ratio */
	s->offcpu_scale = sw ? 100.0 / sk->rodata->offcpu_pct : 1.0;
	if (!sw) /* no switch is timed */
		bpf_map__set_max_entries(sk->maps.offcpu_starts, 1);
	if (!on) { /* its maps at their least */
		bpf_map__set_max_entries(sk->maps.offcpu_counts0, 1);
		bpf_map__set_max_entries(sk->maps.offcpu_counts1, 1);
	}
	waits_configure(s);
}

/* The program that takes the stacks of a wait, and its tail-call array. */
static struct bpf_program *stacks_prog(struct sampler *s, struct bpf_map **progs,
				       struct bpf_program **more)
{
	struct profile_bpf *sk = s->skel;
	bool tp = s->offcpu_tp;

	*progs = tp ? sk->maps.offcpu_unwind_tp : sk->maps.offcpu_unwind_kp;
	*more = tp ? sk->progs.offcpu_tp_more : sk->progs.offcpu_kp_more;
	if (s->unwind == SAMPLER_UNWIND_LOOP)
		return tp ? sk->progs.offcpu_tp_loop : sk->progs.offcpu_kp_loop;
	if (s->unwind == SAMPLER_UNWIND_TAIL)
		return tp ? sk->progs.offcpu_tp_tail : sk->progs.offcpu_kp_tail;
	return tp ? sk->progs.offcpu_tp : sk->progs.offcpu_kp;
}

static int attach_stacks(struct sampler *s, struct bpf_program *p, char *err, size_t errlen)
{
	int ret;

	if (s->offcpu_tp) {
		s->offcpu_resume_link = bpf_program__attach(p);
		if (s->offcpu_resume_link)
			return 0;
		ret = -errno;
		snprintf(err, errlen, "cannot attach the off-CPU program to sched_exit_tp: %s",
			 strerror(errno));
		return ret;
	}
	if (!s->offcpu_kp_sym[0]) {
		snprintf(err, errlen,
			 "off-CPU stacks need the sched_exit_tp tracepoint (6.16+) or a kprobe "
			 "on finish_task_switch: not found in /proc/kallsyms");
		return -ENOENT;
	}
	s->offcpu_resume_link = bpf_program__attach_kprobe(p, false, s->offcpu_kp_sym);
	if (s->offcpu_resume_link)
		return 0;
	ret = -errno;
	snprintf(err, errlen,
		 "off-CPU stacks need the sched_exit_tp tracepoint (6.16+) or a kprobe on %s "
		 "(CONFIG_KPROBES): %s",
		 s->offcpu_kp_sym, strerror(errno));
	return ret;
}

int offcpu_attach(struct sampler *s, char *err, size_t errlen)
{
	struct bpf_program *more, *p;
	struct bpf_map *progs;
	int ret, key = 0, fd;

	if (!(s->types & PTYPE_BIT(PTYPE_OFFCPU)) || s->offcpu_link)
		return 0;
	if (s->offcpu_path == SAMPLER_OFFCPU_ITER)
		return waits_attach(s, err, errlen);
	p = stacks_prog(s, &progs, &more);
	if (s->unwind == SAMPLER_UNWIND_TAIL) {
		fd = bpf_program__fd(more);
		if (bpf_map_update_elem(bpf_map__fd(progs), &key, &fd, BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen, "cannot set up the off-CPU unwinder's tail call: %s",
				 strerror(errno));
			return ret;
		}
	}
	/* the stacks first: a wait timed before they can be taken is lost */
	ret = attach_stacks(s, p, err, errlen);
	if (ret)
		return ret;
	/* prev's state as an argument (5.18+), else read from prev */
	sampler_libbpf_optional(true);
	s->offcpu_link = bpf_program__attach(s->skel->progs.on_switch_state);
	sampler_libbpf_optional(false);
	if (!s->offcpu_link) {
		log_debug("sched_switch without prev_state (before 5.18): %s", strerror(errno));
		s->offcpu_link = bpf_program__attach(s->skel->progs.on_switch);
	}
	if (!s->offcpu_link) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach the off-CPU program to sched_switch: %s",
			 strerror(errno));
		offcpu_detach(s);
		return ret;
	}
	offcpu_cut_attach(s);
	return 0;
}

void offcpu_detach(struct sampler *s)
{
	waits_detach(s);
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
	bpf_link__destroy(s->offcpu_resume_link);
	s->offcpu_resume_link = NULL;
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

	s.type = PTYPE_OFFCPU;
	s.offcpu_ns = (uint64_t)((double)o->value->ns * o->scale);
	s.offcpu_state = o->key->state;
	s.wait_event = o->key->wait_event;
	s.has_wait = o->key->has_wait;
	s.pg_major = o->key->pg_major;
	return o->fn(&s, o->ctx);
}

int offcpu_deliver(struct sampler *s, const struct offcpu_key *key,
		   const struct offcpu_value *value, raw_sample_fn fn, void *ctx)
{
	struct offcpu_fn o = { fn, ctx, key, value, s->offcpu_scale };

	sampler_mark_stack(s, key->s.kstack);
	sampler_mark_stack(s, key->s.ustack);
	return s->stacks->resolve(s->stacks, &key->s, value->count, with_offcpu, &o);
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
			ret = offcpu_deliver(s, &keys[i], &vals[i], fn, ctx);
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

	if (!(s->types & PTYPE_BIT(PTYPE_OFFCPU)))
		return 0;
	if (!s->okeys) {
		s->okeys = calloc(OFFCPU_CHUNK, sizeof(*s->okeys));
		s->ovalues = calloc(OFFCPU_CHUNK, sizeof(*s->ovalues));
		if (!s->okeys || !s->ovalues)
			return -ENOMEM;
	}
	/* the wait sampler's runs first, as near the flip as can be (not at
	 * a recording's drain every second: sampler_drain_counts()) */
	total = s->waits_keep_runs ? 0 : waits_take_runs(s, fn, ctx);
	if (total < 0)
		return total;
	ret = drain_one(s, maps[old], fn, ctx);
	ret = ret < 0 ? ret : total + ret;
	if (ret >= 0 && both) {
		total = ret;
		ret = drain_one(s, maps[!old], fn, ctx);
		ret = ret < 0 ? ret : total + ret;
	}
	if (ret >= 0) { /* the waits in progress, so far */
		total = ret;
		ret = offcpu_cut(s, fn, ctx);
		ret = ret < 0 ? ret : total + ret;
	}
	return ret;
}

void offcpu_mark_live(struct sampler *s)
{
	int counts = bpf_map__fd(s->active ? s->skel->maps.offcpu_counts1
					   : s->skel->maps.offcpu_counts0);
	struct offcpu_key key, *prev = NULL;

	if (!(s->types & PTYPE_BIT(PTYPE_OFFCPU)))
		return;
	waits_mark_live(s);
	while (!bpf_map_get_next_key(counts, prev, &key)) {
		sampler_mark_stack(s, key.s.kstack);
		sampler_mark_stack(s, key.s.ustack);
		prev = &key;
	}
}
