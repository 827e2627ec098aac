// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's unwinder (sampler.h): frame pointers (bpf_get_stack), or
 * DWARF unwinding in BPF (bpf/unwind.bpf.h) as one bpf_loop() program
 * where the kernel has the helper (5.17+) and as a chain of tail calls
 * where it does not. Only the programs of the chosen way are loaded (an
 * old verifier rejects a bpf_loop() call even in a program never run).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>

#include "bpf_features.h"
#include "sampler_internal.h"
#include "util/log.h"

void unwind_configure(struct sampler *s, const struct sampler_opts *opts)
{
	struct profile_bpf *sk = s->skel;
	bool dwarf = opts->user && opts->unwind != SAMPLER_UNWIND_FP;
	/* the CPU sampler's programs only for a session that takes cpu */
	bool cpu = !opts->types || (opts->types & PTYPE_BIT(PTYPE_CPU));

	s->unwind = SAMPLER_UNWIND_FP;
	if (dwarf)
		s->unwind =
			opts->unwind == SAMPLER_UNWIND_DWARF
				? (features_have_loop() ? SAMPLER_UNWIND_LOOP : SAMPLER_UNWIND_TAIL)
				: opts->unwind;
	/* a process without tables is announced at once */
	sk->rodata->wake_unready = s->unwind != SAMPLER_UNWIND_FP;
	bpf_program__set_autoload(sk->progs.do_sample, cpu && s->unwind == SAMPLER_UNWIND_FP);
	bpf_program__set_autoload(sk->progs.do_sample_loop,
				  cpu && s->unwind == SAMPLER_UNWIND_LOOP);
	bpf_program__set_autoload(sk->progs.do_sample_tail,
				  cpu && s->unwind == SAMPLER_UNWIND_TAIL);
	bpf_program__set_autoload(sk->progs.unwind_tail, cpu && s->unwind == SAMPLER_UNWIND_TAIL);
	if (s->unwind == SAMPLER_UNWIND_FP) { /* the unwinder's maps at their least */
		bpf_map__set_max_entries(sk->maps.ustacks, 4096);
		bpf_map__set_max_entries(sk->maps.ustack_known, 1);
		bpf_map__set_max_entries(sk->maps.unwind_pids, 1);
		bpf_map__set_max_entries(sk->maps.unwind_sets, 1);
		bpf_map__set_max_entries(sk->maps.unwind_tables, 1);
		bpf_map__set_max_entries(sk->maps.unwind_hits, 1);
		bpf_map__set_max_entries(sk->maps.fresh, 4096); /* nothing announced */
	} else {
		bpf_map__set_max_entries(sk->maps.ustacks, s->sizes.ustacks_bytes);
	}
}

static int handle_ustack(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	s->poll_bytes += size;
	if (stack_source_dwarf_add(s->stacks, data, size) == -EINVAL)
		log_debug("malformed unwound stack record (%zu bytes) ignored", size);
	return 0;
}

int unwind_setup(struct sampler *s, const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct unwind_tables_opts to = { .budget_bytes = opts->unwind_budget,
					 .cache_dir = opts->unwind_cache_dir };
	struct profile_bpf *sk = s->skel;
	int ret, key = 0, fd;

	if (s->unwind == SAMPLER_UNWIND_TAIL && bpf_program__autoload(sk->progs.unwind_tail)) {
		fd = bpf_program__fd(sk->progs.unwind_tail);
		if (bpf_map_update_elem(bpf_map__fd(sk->maps.unwind_prog), &key, &fd, BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen, "cannot set up the unwinder's tail call: %s",
				 strerror(errno));
			return ret;
		}
	}
	ret = stack_source_dwarf_new(bpf_map__fd(sk->maps.stacks),
				     bpf_map__fd(sk->maps.ustack_known), &s->stacks);
	if (!ret) {
		struct unwind_tables_maps maps = {
			.tables_fd = bpf_map__fd(sk->maps.unwind_tables),
			.pids_fd = bpf_map__fd(sk->maps.unwind_pids),
			.sets_fd = bpf_map__fd(sk->maps.unwind_sets),
			.nsets = bpf_map__max_entries(sk->maps.unwind_sets),
			.sets_hash = bpf_map__type(sk->maps.unwind_sets) == BPF_MAP_TYPE_HASH,
			.hits_fd = bpf_map__fd(sk->maps.unwind_hits),
		};

		ret = unwind_tables_new(&to, &maps, &s->tables);
	}
	if (ret) {
		snprintf(err, errlen, "cannot set up the unwinder: %s", strerror(-ret));
		return ret;
	}
	s->urb = ring_buffer__new(bpf_map__fd(sk->maps.ustacks), handle_ustack, s, NULL);
	if (!s->urb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the stack ring buffer: %s", strerror(errno));
		return ret;
	}
	ret = maps_prefetch_start(bpf_map__fd(sk->maps.fresh), &s->prefetch);
	if (ret) {
		snprintf(err, errlen, "cannot start reading new processes' maps: %s",
			 strerror(-ret));
		return ret;
	}
	log_debug("user stacks: %s",
		  s->unwind == SAMPLER_UNWIND_LOOP ? "dwarf (bpf_loop)" : "dwarf (tail calls)");
	return 0;
}

struct bpf_program *unwind_sample_prog(struct sampler *s)
{
	switch (s->unwind) {
	case SAMPLER_UNWIND_LOOP:
		return s->skel->progs.do_sample_loop;
	case SAMPLER_UNWIND_TAIL:
		return s->skel->progs.do_sample_tail;
	default:
		return s->skel->progs.do_sample;
	}
}

int sampler_unwind_process(struct sampler *s, uint32_t pid, const struct proc_maps *maps,
			   bool execd)
{
	if (!s->tables)
		return 0;
	return unwind_tables_load(s->tables, pid, maps, execd);
}

struct proc_maps *sampler_prefetched(struct sampler *s, uint32_t pid, uint64_t since_ns, char **exe)
{
	return maps_prefetch_take(s->prefetch, pid, since_ns, exe);
}

void sampler_unwind_forget(struct sampler *s, uint32_t pid)
{
	if (s->tables)
		unwind_tables_exited(s->tables, pid);
}

int sampler_unwind_inherit(struct sampler *s, uint32_t child, uint32_t parent, uint64_t fork_ns)
{
	return s->tables ? unwind_tables_inherit(s->tables, child, parent, fork_ns) : -ENOENT;
}

bool sampler_unwind_inherited(struct sampler *s, uint32_t pid, bool gone)
{
	if (!s->tables)
		return false;
	return gone ? unwind_tables_inherited_gone(s->tables, pid)
		    : unwind_tables_inherited(s->tables, pid);
}

void sampler_unwind_info(const struct sampler *s, struct sampler_unwind_info *out)
{
	memset(out, 0, sizeof(*out));
	out->mode = s->unwind == SAMPLER_UNWIND_LOOP   ? "dwarf (bpf_loop)"
		    : s->unwind == SAMPLER_UNWIND_TAIL ? "dwarf (tail calls)"
						       : "frame pointers";
	if (s->tables)
		unwind_tables_stats(s->tables, &out->tables);
	if (s->unwind != SAMPLER_UNWIND_FP && s->stacks)
		stack_source_dwarf_stats(s->stacks, &out->stacks);
}

static const char *const mode_names[] = {
	[SAMPLER_UNWIND_DWARF] = "dwarf",
	[SAMPLER_UNWIND_FP] = "fp",
	[SAMPLER_UNWIND_LOOP] = "dwarf-loop",
	[SAMPLER_UNWIND_TAIL] = "dwarf-tail",
};

int sampler_unwind_parse(const char *s, enum sampler_unwind *out)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (!strcmp(s, mode_names[i])) {
			*out = (enum sampler_unwind)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sampler_unwind_mode_name(enum sampler_unwind u)
{
	return (unsigned)u < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[u] : "?";
}

const char *sampler_unwind_end_name(unsigned end)
{
	static const char *const names[UNWIND_END_MAX] = {
		[UNWIND_END_OK] = "complete",
		[UNWIND_END_NO_TABLE] = "no unwind table",
		[UNWIND_END_READ_FAULT] = "read fault",
		[UNWIND_END_DEPTH] = "depth limit",
		[UNWIND_END_UNSUPPORTED] = "unsupported rule",
		[UNWIND_END_BAD_FRAME] = "bad frame",
	};

	return end < UNWIND_END_MAX ? names[end] : "?";
}
