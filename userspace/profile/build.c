// SPDX-License-Identifier: BSD-2-Clause
/*
 * Samples to a symbolized profile (build.h): each raw sample's addresses go
 * through the process's maps snapshot to a mapping and the symbolizer to an
 * inline chain, interned once per (mapping, address).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "offcpu_labels.h"
#include "plpgsql_frames.h"
#include "sample_labels.h"
#include "sampling/sampler.h"
#include "unnamed.h"
#include "util/hashmap.h"
#include "util/log.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"
#define KERNEL_START 0xffff800000000000ULL
#define MAX_INLINE 32
/* kernel frames, user frames (DWARF-unwound: deeper), PL/pgSQL, 3 markers */
#define MAX_FRAMES (EBPROF_MAX_STACK_DEPTH + EBPROF_MAX_UNWIND_DEPTH + EBPROF_PLPGSQL_DEPTH + 3)

/* Identity of a mapped file region as seen in one snapshot. */
struct bmap_key {
	uint64_t start, end, offset, dev, inode;
	uint64_t pid;	  /* anonymous memory: whose (JIT code differs); else 0 */
	const char *path; /* owned by struct bmap */
};

struct bmap {
	struct bmap_key key;
	uint64_t mapping_id;
	struct sym_elf *elf; /* pinned, NULL if it could not be opened */
	size_t row;	     /* in the builder's report */
};

/* (mapping id, address) -> location id */
/* An address is looked up as itself when it is the interrupted PC (a leaf)
 * and as address - 1 when it is a return address: one address can be both
 * (a call whose return address starts a loop), so the two are kept apart. */
struct loc_key {
	uint64_t mapping_id;
	uint64_t address;
	uint64_t leaf;
};

struct loc_entry {
	struct loc_key key;
	uint64_t location_id;
	bool resolved;
};

struct builder {
	struct builder_opts opts;
	struct profile *p;
	struct hashmap *bmaps; /* bmap_key -> bmap */
	struct hashmap *locs;  /* loc_key -> loc_entry */
	uint64_t kernel_mapping_id;
	const struct ptype_info *info; /* of opts.type */
	bool kallsyms_failed;
	struct builder_stats stats;
	struct symreport report;
};

static uint64_t hash_bmap(const void *k)
{
	const struct bmap_key *b = k;
	uint64_t h = hm_hash_bytes(b, offsetof(struct bmap_key, path));

	return h ^ (b->path ? hm_hash_str(b->path) : 0);
}

static bool equal_bmap(const void *a, const void *b)
{
	const struct bmap_key *x = a, *y = b;

	if (memcmp(x, y, offsetof(struct bmap_key, path)))
		return false;
	if (!x->path || !y->path)
		return x->path == y->path;
	return !strcmp(x->path, y->path);
}

static uint64_t hash_loc(const void *k)
{
	return hm_hash_bytes(k, sizeof(struct loc_key));
}

static bool equal_loc(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct loc_key));
}

int builder_new(const struct builder_opts *opts, struct builder **out)
{
	struct builder *b = calloc(1, sizeof(*b));
	int err = -ENOMEM;

	if (!b)
		return -ENOMEM;
	b->opts = *opts;
	b->info = ptype_info(opts->type);
	/* raw samples make profiles of a count and its weight */
	if (!b->info || b->info->source != PTYPE_FROM_BPF || b->info->nvalues != 2) {
		err = -EINVAL;
		goto fail;
	}
	b->p = profile_new();
	b->bmaps = hm_new(hash_bmap, equal_bmap);
	b->locs = hm_new(hash_loc, equal_loc);
	if (!b->p || !b->bmaps || !b->locs)
		goto fail;
	for (size_t i = 0; i < b->info->nvalues; i++)
		if ((err = profile_add_sample_type(b->p, b->info->values[i].type,
						   b->info->values[i].unit)))
			goto fail;
	err = profile_set_period(b->p, b->info->period.type, b->info->period.unit, opts->period);
	if (err)
		goto fail;
	b->p->time_nanos = opts->time_nanos;
	*out = b;
	return 0;
fail:
	builder_free(b);
	return err;
}

static int64_t kernel_mapping(struct builder *b)
{
	struct pf_mapping m = { 0 };
	char build_id[128] = "";
	int64_t id;

	if (b->kernel_mapping_id)
		return (int64_t)b->kernel_mapping_id;
	sym_kernel_build_id(build_id, sizeof(build_id));
	m.start = KERNEL_START;
	m.limit = UINT64_MAX;
	m.filename = profile_str(b->p, KERNEL_MAPPING_NAME);
	m.build_id = profile_str(b->p, build_id);
	m.has_functions = true;
	if (m.filename < 0 || m.build_id < 0)
		return -ENOMEM;
	id = profile_add_mapping(b->p, &m);
	if (id > 0)
		b->kernel_mapping_id = (uint64_t)id;
	return id;
}

/* Profile mapping (and pinned binary) for one maps entry, seen by process
 * pid and opened through process via. */
static struct bmap *user_mapping(struct builder *b, uint32_t pid, uint32_t via,
				 const struct map_entry *e)
{
	struct bmap_key key = { e->start, e->end,   e->offset,
				e->dev,	  e->inode, e->kind == MAPPING_ANON ? pid : 0,
				e->path };
	struct pf_mapping m = { 0 };
	struct bmap *bm;
	const char *name;
	void *v;
	int64_t id;

	if (!hm_find(b->bmaps, &key, &v))
		return v;
	bm = calloc(1, sizeof(*bm));
	if (!bm)
		return NULL;
	bm->key = key;
	bm->key.path = e->path ? strdup(e->path) : NULL;
	if (e->path && !bm->key.path)
		goto fail;

	if (e->kind == MAPPING_FILE && b->opts.sym) {
		struct sym_binary bin = map_entry_binary(e, via);
		int err = sym_elf_get(b->opts.sym, &bin, &bm->elf);

		if (err) {
			log_debug("cannot open %s of pid %u: %s", e->path, pid, strerror(-err));
			bm->elf = NULL;
		}
	}
	name = e->path ? e->path : "[anon]";
	if (symreport_row(&b->report, name,
			  bm->elf		    ? sym_elf_debug_source(bm->elf)
			  : e->kind == MAPPING_ANON ? "jit"
						    : "none",
			  &bm->row))
		goto fail;
	m.start = e->start;
	m.limit = e->end;
	m.offset = e->offset;
	m.filename = profile_str(b->p, name);
	m.build_id = profile_str(b->p, bm->elf ? sym_elf_build_id(bm->elf) : "");
	if (m.filename < 0 || m.build_id < 0)
		goto fail;
	/* We symbolized (or tried to): tell pprof readers not to try again
	 * from local files, which may not exist on their machine. */
	m.has_functions = true;
	if (bm->elf) {
		bool lines = sym_elf_has_lines(bm->elf);

		m.has_filenames = m.has_line_numbers = m.has_inline_frames = lines;
	}
	id = profile_add_mapping(b->p, &m);
	if (id < 0)
		goto fail;
	bm->mapping_id = (uint64_t)id;
	if (hm_set(b->bmaps, &bm->key, bm, NULL))
		goto fail;
	return bm;
fail:
	if (bm->elf)
		sym_elf_put(b->opts.sym, bm->elf);
	free((char *)bm->key.path);
	free(bm);
	return NULL;
}

/* Intern a location, symbolizing it the first time it is seen.
 * frames/nframes describe the inline chain (innermost first). */
static int64_t add_location(struct builder *b, uint64_t mapping_id, uint64_t address,
			    const struct sym_frame *frames, int nframes)
{
	struct pf_line lines[MAX_INLINE];

	for (int i = 0; i < nframes; i++) {
		int64_t fid = profile_add_function(b->p, frames[i].function,
						   frames[i].system_name ? frames[i].system_name
									 : frames[i].function,
						   frames[i].file, 0);

		if (fid < 0)
			return fid;
		lines[i].function_id = (uint64_t)fid;
		lines[i].line = frames[i].line;
		lines[i].column = frames[i].column;
	}
	return profile_add_location(b->p, mapping_id, address, lines, (size_t)nframes);
}

/* Remember location id (or an error) as the one of (mapping, address,
 * leaf); *resolved: named by a symbol. */
static int64_t remember_location(struct builder *b, uint64_t mapping_id, uint64_t address,
				 bool leaf, int64_t id, bool named, bool *resolved)
{
	struct loc_entry *le;

	if (id < 0)
		return id;
	le = calloc(1, sizeof(*le));
	if (!le)
		return -ENOMEM;
	le->key.mapping_id = mapping_id;
	le->key.address = address;
	le->key.leaf = leaf;
	le->location_id = (uint64_t)id;
	le->resolved = named;
	if (hm_set(b->locs, &le->key, le, NULL)) {
		free(le);
		return -ENOMEM;
	}
	*resolved = le->resolved;
	return id;
}

static int64_t intern_location(struct builder *b, uint64_t mapping_id, uint64_t address, bool leaf,
			       const struct sym_frame *frames, int nframes, bool *resolved)
{
	return remember_location(b, mapping_id, address, leaf,
				 add_location(b, mapping_id, address, frames, nframes), nframes > 0,
				 resolved);
}

static int64_t cached_location(struct builder *b, uint64_t mapping_id, uint64_t address, bool leaf,
			       bool *resolved)
{
	struct loc_key key = { mapping_id, address, leaf };
	void *v;

	if (hm_find(b->locs, &key, &v))
		return 0;
	*resolved = ((struct loc_entry *)v)->resolved;
	return (int64_t)((struct loc_entry *)v)->location_id;
}

/* The frames of the tracing that took an off-CPU stack (the program,
 * bpf_trace_run*, __bpf_trace_*, __traceiter_*, and finish_task_switch
 * where the kprobe sits: which ones depends on the kernel): not where the
 * thread waited. */
static uint32_t tracing_frames(struct builder *b, const struct raw_sample *s)
{
	uint32_t i;

	if (s->type != PTYPE_OFFCPU || !b->opts.sym)
		return 0;
	for (i = 0; i < s->nkernel; i++) {
		struct sym_frame f = { 0 };
		const char *fn;

		if (sym_kernel_resolve(b->opts.sym, i ? s->kernel[i] - 1 : s->kernel[i], &f) <= 0 ||
		    !(fn = f.function))
			break;
		if (strncmp(fn, "bpf_prog_", 9) && strncmp(fn, "bpf_trace_run", 13) &&
		    strncmp(fn, "__bpf_trace_", 12) && strncmp(fn, "__traceiter_", 12) &&
		    strncmp(fn, "finish_task_switch", 18))
			break;
	}
	return i < s->nkernel ? i : 0;
}

static int64_t kernel_location(struct builder *b, uint64_t addr, bool leaf, bool *resolved)
{
	struct sym_frame f = { 0 };
	int64_t mid = kernel_mapping(b), id;
	int n = 0;

	if (mid < 0)
		return mid;
	id = cached_location(b, (uint64_t)mid, addr, leaf, resolved);
	if (id)
		return id;
	if (b->opts.sym && !b->kallsyms_failed) {
		/* Return addresses point after the call: look up addr - 1. */
		n = sym_kernel_resolve(b->opts.sym, leaf ? addr : addr - 1, &f);
		if (n < 0) {
			log_warn("kernel symbols unavailable: %s", strerror(-n));
			b->kallsyms_failed = true;
			n = 0;
		}
		if (n > 0) {
			f.inlined = false;
			f.line = 0;
		}
	}
	return intern_location(b, (uint64_t)mid, addr, leaf, &f, n > 0 ? 1 : 0, resolved);
}

/* JIT code: a name from the process's perf map or jitdump. */
static int jit_frame(struct builder *b, uint32_t pid, uint64_t addr, struct sym_frame *f)
{
	const char *name = procs_jit_name(b->opts.procs, pid, addr);

	if (!name)
		return 0;
	memset(f, 0, sizeof(*f));
	f->function = name;
	return 1;
}

/* The location of a user address; *row: the report row it counts in. */
static int64_t user_location(struct builder *b, uint32_t pid, uint64_t addr, bool leaf,
			     bool *resolved, size_t *row)
{
	const struct proc_maps *maps = procs_maps(b->opts.procs, pid);
	const struct map_entry *e = procmaps_find(maps, addr);
	uint32_t via = 0;
	struct sym_frame frames[MAX_INLINE];
	struct bmap *bm;
	int64_t id;
	int n = 0;

	*row = SIZE_MAX;
	/* not in its layout: taken before its exec, in its parent's? */
	if (!e)
		e = procmaps_find(procs_maps_before_exec(b->opts.procs, pid, &via), addr);
	if (!e) {
		b->stats.no_mapping++;
		/* JIT code mapped after the process's maps snapshot: named
		 * for this process only, so not from the shared cache */
		n = jit_frame(b, pid, leaf ? addr : addr - 1, frames);
		if (n) {
			if (symreport_row(&b->report, "[anon]", "jit", row))
				*row = SIZE_MAX;
			*resolved = true;
			return add_location(b, 0, addr, frames, n);
		}
		/* nothing to look up: one location either way */
		id = cached_location(b, 0, addr, false, resolved);
		return id ? id : intern_location(b, 0, addr, false, NULL, 0, resolved);
	}
	bm = user_mapping(b, pid, via ? via : procs_open_via(b->opts.procs, pid), e);
	if (!bm)
		return -ENOMEM;
	*row = bm->row;
	id = cached_location(b, bm->mapping_id, addr, leaf, resolved);
	if (id)
		return id;
	if (bm->elf) {
		uint64_t off = (leaf ? addr : addr - 1) - e->start + e->offset;

		n = sym_elf_resolve(b->opts.sym, bm->elf, off, frames, MAX_INLINE);
		/* a signal trampoline (__restore_rt) is "returned to" at its
		 * first byte: the byte before belongs to no function */
		if (n <= 0 && !leaf)
			n = sym_elf_resolve(b->opts.sym, bm->elf, off + 1, frames, MAX_INLINE);
		if (n <= 0) /* named after its function's start, or by its address */
			return remember_location(b, bm->mapping_id, addr, leaf,
						 unnamed_add_location(b->p, b->opts.sym, bm->elf,
								      e->path, bm->mapping_id, addr,
								      off),
						 false, resolved);
	} else if (e->kind == MAPPING_ANON) {
		n = jit_frame(b, pid, leaf ? addr : addr - 1, frames);
	}
	return intern_location(b, bm->mapping_id, addr, leaf, frames, n, resolved);
}

/* One sample's frame in the report. */
static void report_frame(struct builder *b, size_t row, bool leaf, bool resolved, uint64_t count)
{
	struct symreport_row *r;

	if (row >= b->report.n)
		return;
	r = &b->report.rows[row];
	r->samples += count;
	r->resolved += resolved ? count : 0;
	if (leaf) {
		r->leaf += count;
		r->leaf_resolved += resolved ? count : 0;
	}
}

static int64_t synthetic_location(struct builder *b, const char *name)
{
	int64_t fid = profile_add_function(b->p, name, name, NULL, 0);
	struct pf_line line = { 0 };

	if (fid < 0)
		return fid;
	line.function_id = (uint64_t)fid;
	return profile_add_location(b->p, 0, 0, &line, 1);
}

int builder_add(const struct raw_sample *s, void *ctx)
{
	struct builder *b = ctx;
	uint64_t locs[MAX_FRAMES];
	struct pf_label labels[16];
	size_t nlabels;
	int64_t values[2], id;
	size_t n = 0;
	uint32_t k = 0; /* PL/pgSQL functions placed */
	bool resolved;
	int err;

	if (s->type != b->opts.type)
		return 0; /* each type goes into profiles of its own */
	if (s->kernel_lost) {
		if ((id = synthetic_location(b, "[lost kernel stack]")) < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
	}
	for (uint32_t i = tracing_frames(b, s); i < s->nkernel && n < MAX_FRAMES; i++) {
		id = kernel_location(b, s->kernel[i], i == 0, &resolved);
		if (id < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
		b->stats.kernel_frames++;
		b->stats.kernel_frames_resolved += resolved;
		if (i == 0)
			b->stats.leaf_resolved += resolved ? s->count : 0;
	}
	if (s->user_lost && n < MAX_FRAMES) {
		if ((id = synthetic_location(b, "[lost user stack]")) < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
	}
	for (uint32_t i = 0; i < s->nuser && n < MAX_FRAMES; i++) {
		/* The interrupted PC, looked up as itself: the first user
		 * frame when the sample hit user mode (no kernel frames), one
		 * the unwinder marked (an exception's, under a signal frame). */
		bool leaf = (i == 0 && s->nkernel == 0) || (s->user[i] & EBPROF_IP_EXACT);
		size_t row;

		if ((err = plpgsql_frames_add(b->p, s, i, &k, locs, &n, MAX_FRAMES)))
			return err;
		id = user_location(b, s->pid, s->user[i] & ~EBPROF_IP_EXACT, leaf, &resolved, &row);
		if (id < 0)
			return (int)id;
		report_frame(b, row, i == 0, resolved, s->count);
		locs[n++] = (uint64_t)id;
		b->stats.user_frames++;
		b->stats.user_frames_resolved += resolved;
		if (i == 0 && s->nkernel == 0)
			b->stats.leaf_resolved += resolved ? s->count : 0;
	}
	b->stats.plpgsql_unplaced += s->nplpgsql - k; /* no C frame found */
	if ((err = plpgsql_frames_add(b->p, s, s->nuser, &k, locs, &n, MAX_FRAMES)))
		return err;
	b->stats.plpgsql_samples += s->nplpgsql ? s->count : 0;
	/* A stack cut short says so, and why, as its outermost frame. */
	if (s->nuser && s->user_end != UNWIND_END_OK && s->user_end < UNWIND_END_MAX &&
	    n < MAX_FRAMES) {
		char why[64];

		snprintf(why, sizeof(why), "[truncated: %s]", sampler_unwind_end_name(s->user_end));
		if ((id = synthetic_location(b, why)) < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
		b->stats.truncated[s->user_end] += s->count;
	}
	b->stats.fp_samples += s->user_fp ? s->count : 0;
	if (n == 0) {
		if ((id = synthetic_location(b, "[no stack]")) < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
	}

	labels[0] = profile_label_num(b->p, "pid", s->pid, NULL);
	labels[1] = profile_label_num(b->p, "tid", s->tid, NULL);
	labels[2] = profile_label_str(b->p, "thread_name", s->comm);
	nlabels = 3;
	if (s->user_fp) /* a frame found by frame pointer (no unwind table) */
		labels[nlabels++] = profile_label_str(b->p, "unwind", "fp");
	nlabels = sample_query_labels(b->p, &b->opts, s, &b->stats, labels, nlabels);
	nlabels = sample_pg_labels(b->p, &b->opts, s, labels, nlabels);
	values[0] = (int64_t)s->count;
	values[1] = (int64_t)s->count * b->opts.period;
	if (s->type == PTYPE_OFFCPU) {
		nlabels = offcpu_labels(b->p, s, labels, nlabels);
		values[1] = (int64_t)s->offcpu_ns;
	}
	b->stats.samples += s->count;
	if (s->type == PTYPE_FAULTS)
		b->stats.fault_bytes += (uint64_t)values[1];
	b->stats.offcpu_ns += s->offcpu_ns;
	b->stats.stacks++;
	return profile_add_sample(b->p, locs, n, values, labels, nlabels);
}

int builder_comment(struct builder *b, const char *comment)
{
	return profile_add_comment(b->p, comment);
}

int builder_finish(struct builder *b, int64_t duration_nanos, struct profile **out)
{
	if (!b->p)
		return -EINVAL;
	b->p->duration_nanos = duration_nanos;
	*out = b->p;
	b->p = NULL;
	return 0;
}

void builder_get_stats(const struct builder *b, struct builder_stats *out)
{
	*out = b->stats;
}

const struct symreport *builder_report(const struct builder *b)
{
	return &b->report;
}

void builder_free(struct builder *b)
{
	const void *k;
	void *v;

	if (!b)
		return;
	if (b->bmaps) {
		for (size_t it = 0; hm_next(b->bmaps, &it, &k, &v);) {
			struct bmap *bm = v;

			if (bm->elf)
				sym_elf_put(b->opts.sym, bm->elf);
			free((char *)bm->key.path);
			free(bm);
		}
		hm_free(b->bmaps);
	}
	if (b->locs) {
		for (size_t it = 0; hm_next(b->locs, &it, &k, &v);)
			free(v);
		hm_free(b->locs);
	}
	profile_free(b->p);
	symreport_clear(&b->report);
	free(b);
}
