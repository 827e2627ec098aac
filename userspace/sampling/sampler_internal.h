/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sampler's state, shared by sampler.c (load, attach, events, drain)
 * and sampler_unwind.c (the choice of unwinder and its tables). Not a
 * header for other folders.
 */
#ifndef EBPROF_SAMPLER_INTERNAL_H
#define EBPROF_SAMPLER_INTERNAL_H

#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "sampler.h"
#include "profile.skel.h"
#include "map_sizes.h"
#include "maps_prefetch.h"
#include "unwind_tables.h"

struct sampler {
	struct profile_bpf *skel;
	int ncpus;		/* possible CPUs: size of the arrays below */
	uint64_t map_bytes;	/* estimate of the load-sized maps (map_sizes.h) */
	struct map_sizes sizes; /* ... their sizes */
	bool prealloc;		/* hash maps preallocated (no BPF_F_NO_PREALLOC) */
	bool btf_cached;	/* relocated with btf_cache.h's part of the BTF */
	int nattached;		/* online CPUs with an event */
	int *pfds;
	struct bpf_link **links;
	struct ring_buffer *rb;	 /* process events */
	struct ring_buffer *urb; /* unwound user stacks; NULL with frame pointers */
	/* The wait sampler_poll_ms() suggests (ms), and the bytes the rings
	 * handed over since the last poll: a quiet host is polled seldom. */
	int poll_ms;
	uint64_t poll_bytes, poll_records; /* records: of the event ring */
	struct stack_source *stacks;
	struct unwind_tables *tables;	/* NULL with frame pointers */
	struct maps_prefetch *prefetch; /* NULL with frame pointers */
	enum sampler_unwind unwind;	/* what runs (the loop or tail calls) */
	sampler_event_fn on_event;
	void *event_ctx;
	int frequency;
	uint32_t active; /* mirror of skel->bss->active_counts */
	struct sample_key *keys;
	uint64_t *values;
	/* Stack keys referenced by the last drain (unsorted until GC). */
	uint64_t *seen;
	size_t nseen, seen_cap;
	/* Off-CPU (sampler_offcpu.c) */
	unsigned types;			     /* PTYPE_BIT()s */
	struct bpf_link *offcpu_link;	     /* sched_switch: the waits timed */
	struct bpf_link *offcpu_resume_link; /* where the switch ends: their stacks */
	bool offcpu_tp;			     /* ... at sched_exit_tp, not a kprobe */
	char offcpu_kp_sym[128];	     /* ... else on this (finish_task_switch*), "": none */
	double offcpu_scale;		     /* 100 / the share of switches taken */
	struct offcpu_key *okeys;
	struct offcpu_value *ovalues;
	/* ... sampled (sampler_waits.c) */
	enum sampler_offcpu_path offcpu_path;	     /* ITER or SWITCH, once chosen */
	int offcpu_rate;			     /* the iterator's visits per second */
	enum waits_visit_mode {			     /* ... which threads a visit looks at: */
				WAITS_VISIT_HOST,    /* every thread of the host (waits_visit) */
				WAITS_VISIT_PROCS,   /* the targets', a link per process (6.1+) */
				WAITS_VISIT_TARGETS, /* the targets', one run
							(waits_visit_targets, 6.7+) */
	} waits_visit;
	struct bpf_link *waits_link; /* the task iterator (NULL: a link per process) */
	struct waits *waits;	     /* the thread that reads it */
	uint64_t waits_ticks, waits_late, waits_cpu_ns;		  /* once it stopped */
	uint64_t waits_over, waits_made, waits_closed, waits_max; /* ... and of its links */
	bool waits_host_end;	   /* ... walking the host at the end (links not worth it) */
	bool waits_keep_runs;	   /* a drain that leaves the runs (sampler_drain_counts()) */
	struct bpf_link *cut_link; /* switch path: waits in progress cut at drains */
	/* Page faults (sampler_faults.c) */
	uint32_t faults_period; /* one sample every N faults */
	int *fault_fds;		/* the page-fault event of each CPU, -1: none */
	struct bpf_link **fault_links;
	int fault_cpus; /* CPUs with one attached */
};

/* Counts read from a counts map at once (sampler_drain.c). */
#define DRAIN_CHUNK 4096

/* Remember a stack key as referenced by what was drained or is pending;
 * those of every entry of a counts map (keys struct sample_key). */
void sampler_mark_stack(struct sampler *s, uint64_t key);
void sampler_mark_counts(struct sampler *s, struct bpf_map *map);
/* Read and delete every entry of a counts map (keys struct sample_key,
 * values counts), resolved into raw samples of type for fn. The entries
 * drained, or a negative errno (fn's first). */
int sampler_drain_map(struct sampler *s, struct bpf_map *map, enum ptype type, raw_sample_fn fn,
		      void *ctx);
/* Open attr's event on every online CPU and attach prog to it, into fds
 * and links (ncpus each; a CPU offline keeps -1 and NULL). The CPUs
 * attached, or a negative errno with the reason in err (what names the
 * program); the caller detaches what was attached. */
int sampler_attach_cpus(struct sampler *s, struct perf_event_attr *attr, struct bpf_program *prog,
			int *fds, struct bpf_link **links, const char *what, char *err,
			size_t errlen);
void sampler_detach_cpus(struct sampler *s, int *fds, struct bpf_link **links);

/* Before load: which programs load and how big the unwinder's maps are. */
void unwind_configure(struct sampler *s, const struct sampler_opts *opts);

/* Before load: the counts, stack and off-CPU maps sized from CPUs,
 * frequency and interval, or EBPROF_MAP_ENTRIES (sampler_maps.c). */
void sampler_size_maps(struct sampler *s, const struct sampler_opts *opts);
/* After load: the tail-call table, the stack ring buffer, the stack
 * source and the table registry. 0 or a negative errno + reason. */
int unwind_setup(struct sampler *s, const struct sampler_opts *opts, char *err, size_t errlen);
/* The program to attach to the perf events. */
struct bpf_program *unwind_sample_prog(struct sampler *s);

/* Off-CPU: before load (after unwind_configure), which switch program
 * loads; attach and detach it; drain counts map `old` (and the other one
 * with both) into raw samples; mark the stacks of the active map and of
 * threads away now. */
/* libbpf's warnings as debug lines while an optional program is tried */
void sampler_libbpf_optional(bool on);
void offcpu_configure(struct sampler *s, const struct sampler_opts *opts);
int offcpu_attach(struct sampler *s, char *err, size_t errlen);
void offcpu_detach(struct sampler *s);
int offcpu_drain(struct sampler *s, uint32_t old, bool both, raw_sample_fn fn, void *ctx);
void offcpu_mark_live(struct sampler *s);

/* Off-CPU sampled (sampler_waits.c): before load, which way the session
 * takes (0, or a negative errno with the reason: a rate out of range, the
 * iterator asked of a kernel without it), then its program and maps;
 * start and stop the thread that reads the iterator; mark the stacks it
 * keeps for threads that have not run since. */
struct waits;
/* Switch path (offcpu_cut.c): the iterator that cuts the waits in
 * progress at a drain (none before 5.9: they are counted where they
 * end); offcpu_cut() hands their parts so far to fn: their number, or
 * fn's negative errno. */
void offcpu_cut_attach(struct sampler *s);
void offcpu_cut_detach(struct sampler *s);
int offcpu_cut(struct sampler *s, raw_sample_fn fn, void *ctx);
int offcpu_choose(struct sampler *s, const struct sampler_opts *opts, char *err, size_t errlen);
void waits_configure(struct sampler *s);
void waits_load(struct sampler *s);
int waits_attach(struct sampler *s, char *err, size_t errlen);
void waits_detach(struct sampler *s);
void waits_mark_live(struct sampler *s);
/* The runs of visits the program has not added to the counts (struct
 * waits_thread), taken at a drain with the visits paused and handed to fn
 * as off-CPU samples: their number, or a negative errno. */
int waits_take_runs(struct sampler *s, raw_sample_fn fn, void *ctx);
/* One off-CPU count (key, its value) resolved and handed to fn
 * (sampler_offcpu.c); its stacks marked in use. */
int offcpu_deliver(struct sampler *s, const struct offcpu_key *key,
		   const struct offcpu_value *value, raw_sample_fn fn, void *ctx);

/* Page faults (sampler_faults.c): before load, which programs load and
 * the size of their counts; attach the page-fault event of every CPU,
 * detach them; drain counts map `old` (and the other one with both);
 * mark the stacks of the active one. Nothing when the session does not
 * take faults. */
void faults_configure(struct sampler *s, const struct sampler_opts *opts);
int faults_attach(struct sampler *s, char *err, size_t errlen);
void faults_detach(struct sampler *s);
int faults_drain(struct sampler *s, uint32_t old, bool both, raw_sample_fn fn, void *ctx);
void faults_mark_live(struct sampler *s);

#endif /* EBPROF_SAMPLER_INTERNAL_H */
