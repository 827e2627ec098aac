/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of a session (session.h), shared by its files:
 *   session.c  life cycle, process events, the run loop
 *   seed.c     the initial target set and warming the symbolizer
 *   flush.c    an interval's end: drain, profiles, labels, sinks
 *   group.c    short-lived processes sharing a profile
 *   feed.c     a session fed by its caller instead of BPF (benchmarks)
 *   footprint.c  the session's own memory while it symbolizes
 */
#ifndef EBPROF_SESSION_INTERNAL_H
#define EBPROF_SESSION_INTERNAL_H

#include "memsnap.h"
#include "process/pgmeta.h"
#include "process/targets.h"
#include "process/processes.h"
#include "query/table.h"
#include "sampling/oom_watch.h"
#include "sampling/pg_attach.h"
#include "sampling/plpgsql_chains.h"
#include "profile/dbload.h"
#include "session.h"
#include "util/hashmap.h"

/* A process of a SESSION_PER_PROCESS session. */
struct session_proc {
	uint32_t pid;
	struct builder *b[PTYPE_N]; /* NULL until it has samples of the
				     * type this interval */
	struct pg_title pg;
	bool is_pg;
	char build_id[128]; /* of the main executable, "" if unknown */
	bool build_id_done;
	bool title_read;	     /* /proc/PID/cmdline read once (SESSION_ONE_PROFILE) */
	uint64_t grouped_at;	     /* flushes + 1 of the flush that grouped it */
	struct session_group *group; /* its group at that flush */
};

struct session {
	struct session_opts o; /* arrays and strings borrowed until close */
	int64_t page_size;     /* bytes a page fault maps (the base page) */
	struct symbolizer *sym;
	bool own_sym;
	struct proc_registry *procs;
	struct sampler *sampler;
	struct query_table *queries;	/* NULL: query-labels off */
	struct pg_attach *pg;		/* NULL: no statements, memory nor PL/pgSQL */
	struct plpgsql_chains *plpgsql; /* NULL: PL/pgSQL frames off */
	bool pg_targets;		/* session_pg_targets(): the readers loaded */
	bool pg_late_said;		/* a PostgreSQL target without them, said */
	struct hashmap *by_pid;		/* pid -> struct session_proc (per process) */
	struct hashmap *groups;		/* key -> struct session_group, one flush */
	struct builder *one[PTYPE_N];	/* SESSION_ONE_PROFILE: the profile
					 * of each type taken, else NULL */
	uint32_t *forget;		/* exited pids to drop at the next flush */
	size_t nforget, forget_cap;
	int64_t interval_start_ns; /* wall clock: names and profile times */
	/* Interval timing runs on CLOCK_MONOTONIC: a wall clock stepped by
	 * hand or by NTP neither stretches nor shortens an interval. */
	int64_t interval_start_mono_ns;
	int64_t boundary_mono_ns; /* next interval end, 0: none */
	int64_t drain_mono_ns;	  /* next drain between flushes, 0: none */
	int64_t start_mono_ns, stop_mono_ns;
	struct sampler_stats last_stats; /* at the last flush */
	unsigned long processes_sampled;
	long live_targets; /* seeded + forked - exited */
	bool stopped;
	uint64_t flushes;
	uint64_t flush_mono_ns; /* CLOCK_MONOTONIC of this flush's start */
	struct session_stats total;
	/* the symbolizer's file pages last given back: its cache_bytes and
	 * first_reads then, samples that read something since */
	uint64_t drop_bytes, drop_reads;
	unsigned drop_samples;
	long drop_file_kib;		/* file pages resident after the last drop; -1: unknown */
	struct symreport iv_symbols;	/* this interval's symbolization */
	struct symreport total_symbols; /* since the start */
	struct dbload *iv_load;		/* this interval's database load, NULL: none */
	/* memory.c: memory profiles, NULL when the session takes none */
	struct memsnap *mem;
	struct oom_watch *oom;
	int64_t mem_tick_mono_ns; /* the next growth check */
	uint64_t mem_oom;	  /* OOM kills of PostgreSQL processes seen */
	bool mem_eperm;		  /* reading a backend was refused (said once) */
	uint32_t *oom_pids;	  /* killed, into the one profile at its end */
	size_t noom, oom_cap;
	/* tap.c: ad hoc profiles from this session's sampling; NULL: none
	 * (a fed session) */
	struct session_taps *taps;
	int64_t early_mono_ns; /* SESSION_ONE_PROFILE: the next early drain */
};

/* seed.c: the target rules of the options. */
struct target_rules session_target_rules(const struct session_opts *o);
/* pg_targets.c: may the session have PostgreSQL targets (its statement and
 * PL/pgSQL readers loaded)? *why: a static phrase saying why or why not. */
bool session_pg_targets(struct session *s, const char **why);
/* seed.c: make the target set. The number of targets, or a negative errno
 * with the reason in err. */
int session_seed(struct session *s, char *err, size_t errlen);
/* seed.c: open the binaries the targets map (debuginfod fetches the
 * debug files they lack meanwhile). */
void session_prewarm(struct session *s);

/* flush.c: end the interval at end_ns (final: the sampler is stopped,
 * drain both buffers). Fills *iv. 0 or -errno (logged). */
int session_flush(struct session *s, bool final, int64_t end_ns, struct session_interval *iv);
/* flush.c: in a session without interval boundaries (one profile, or
 * top --once), every MAP_SIZES_DEFAULT_INTERVAL_S: what BPF counted so
 * far into the builders (session_drain_early()), then the stacks no
 * count refers to freed, so maps sized for that long never fill. */
void session_drain_between(struct session *s);
/* flush.c: the same with the samples from drain instead of the sampler
 * (drain NULL: the sampler's); a fed session (feed.c) has no sampler. */
int session_flush_from(struct session *s, bool final, int64_t end_ns, session_drain_fn drain,
		       void *ctx, struct session_interval *iv);
/* footprint.c: the symbolizer's file pages given back
 * (sym_drop_file_pages()) now: after a drain and the prewarm. */
void session_drop_file_pages(struct session *s);
/* footprint.c: after a sample was symbolized: the file pages given back
 * when it read a binary's tables in full (its first lookup: 6 MiB of
 * libc's debug file), or at the SESSION_DROP_PAGES_EVERYth sample that
 * read something new if the agent's resident file pages grew by more than
 * SESSION_DROP_PAGES_KIB since the last drop: the pages lookups read never
 * pile up over a drain, and the few every lookup reads (under connection
 * churn, given back and faulted in again a sixth of the agent's CPU) stay. */
#define SESSION_DROP_PAGES_EVERY 16
#define SESSION_DROP_PAGES_KIB 512
void session_symbolized(struct session *s);
/* footprint.c: with EBPROF_MEMTRACE set, the resident memory and malloc's
 * figures at this step (a static phrase) in the log (a bench's hook). */
void session_memtrace(const char *step);
/* flush.c: one raw sample to the builder of its process (or group) and
 * type; a raw_sample_fn with the session as ctx. */
int session_add_sample(const struct raw_sample *rs, void *session);
/* rs with its PL/pgSQL functions placed among its frames, in *with and pl
 * (EBPROF_PLPGSQL_DEPTH of them); rs itself when it ran none (or its chain
 * never came). For every builder a sample goes to: the continuous ones
 * and an ad hoc tap's (tap.c). */
const struct raw_sample *session_with_plpgsql(struct session *s, const struct raw_sample *rs,
					      struct raw_sample *with, struct raw_plpgsql *pl);
/* flush.c: finish builder b (consumed), its figures into iv: the profile,
 * or NULL (logged and counted as failed). */
struct profile *session_finish_builder(struct session *s, struct builder *b, int64_t duration_ns,
				       struct session_interval *iv);
/* flush.c: add the session's comments and rec's labels to p, hand it to
 * every sink with rec's metadata and count the outcome in iv. Frees p. */
/* Its mappings and their unwind tables to the BPF program (DWARF). */
void session_unwind_process(struct session *s, uint32_t pid);
void session_deliver(struct session *s, struct profile *p, struct sink_profile *rec,
		     struct session_interval *iv);

/* group.c: short-lived processes sharing a profile. At a flush's start,
 * the map of its groups (NULL: grouping is off, or -ENOMEM); the builder
 * a short-lived process's samples go to at the drain (NULL: its own);
 * should this process's profile join its group; finish its builder into
 * its group; deliver and free every group's profile (and the map). */
struct hashmap *session_groups_new(const struct session *s);
struct builder *session_group_builder(struct session *s, struct session_proc *sp, enum ptype t);
bool session_should_group(struct session *s, struct session_proc *sp);
void session_group_take(struct session *s, struct session_proc *sp, struct session_interval *iv);
void session_groups_emit(struct session *s, struct session_interval *iv);

/* session.c: the options, symbolizer, process registry and table of a
 * new session (sampled or fed); then its clocks started and, for one
 * profile, its builders. 0 or -errno (the caller closes s). */
int session_init(struct session *s, const struct session_opts *o);
int session_start_clock(struct session *s);
/* flush.c: a builder for a profile of type t starting at start_ns. */
int session_new_builder(struct session *s, enum ptype t, int64_t start_ns, struct builder **out);
/* session.c: the samples BPF took of the session's types, from counters
 * indexed by enum ebprof_stat. */
uint64_t session_samples(const struct session *s, const uint64_t *stats);
/* flush.c: the labels of process sp's profile, in the order sink.h
 * gives, into labels (SESSION_MAX_LABELS) and rec; pidbuf holds its pid's
 * text. Their count. */
#define SESSION_MAX_LABELS 8
size_t session_process_labels(struct session *s, struct session_proc *sp, char *pidbuf,
			      size_t pidlen, struct sink_profile *rec, struct kv *labels);
/* flush.c: a process's PostgreSQL title, for the labels of a profile of
 * several processes (ctx: the session): from its EVENT_TITLE, else read
 * once from /proc. NULL when it is not PostgreSQL. */
const struct pg_title *session_pg_title(void *ctx, uint32_t pid);
/* flush.c: does the session take profiles of type t? */
bool session_takes(const struct session *s, enum ptype t);
/* flush.c: the state of pid (created if new); NULL on -ENOMEM. */
struct session_proc *session_proc(struct session *s, uint32_t pid);
/* flush.c: read sp's PostgreSQL title from /proc, or take it from buf
 * (an EVENT_TITLE's argv area); left as it was when not PostgreSQL. */
void session_read_title(struct session *s, struct session_proc *sp);
void session_parse_title(struct session *s, struct session_proc *sp, const char *buf, size_t len);

/* memory.c: the memory type (PTYPE_MEMORY), nothing when the session does
 * not take it. Open after the sampler and pg_attach (0 or -errno with err);
 * tick from the run loop (growth checks, about every second); flush at an
 * interval's end (snapshots into profiles, to the sinks); forget a process
 * gone; close after the sampler. */
int session_memory_open(struct session *s, char *err, size_t errlen);
void session_memory_tick(struct session *s);
void session_memory_flush(struct session *s, int64_t end_ns, struct session_interval *iv);
void session_memory_forget(struct session *s, uint32_t pid);
void session_memory_close(struct session *s);

/* tap.c: the taps of a sampled session (0 or -ENOMEM); free them
 * (a tap still registered ends without a profile). */
int session_taps_new(struct session *s);
void session_taps_free(struct session *s);
/* tap.c: on the session's thread, in the run loop: start or end the
 * registered tap. The ms until it wants to be called again, -1: no hurry. */
int64_t session_taps_tick(struct session *s);
/* tap.c: a raw_sample_fn (ctx: the session) for every drain: the sample
 * to the session's builders, and to the running tap's. */
int session_tap_add(const struct raw_sample *rs, void *session);
/* tap.c: CPU samples the continuous profiles left out since the last
 * call (counted at a tap's raised rate), at most `most`: the rest is
 * kept for the next call. */
uint64_t session_taps_thinned(struct session *s, uint64_t most);
/* tap.c: flip and drain what was counted into the builders now, within
 * the interval (a recording's samples symbolized as they come, a tap's
 * window). */
void session_drain_early(struct session *s);
void session_drain_counts(struct session *s);

#endif /* EBPROF_SESSION_INTERNAL_H */
