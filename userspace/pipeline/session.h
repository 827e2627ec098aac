/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A session: one run of the pipeline, from the BPF sampler to the sinks.
 * It owns a sampler, a process registry and the profiles being built; it
 * seeds the target set, follows process events, and at each interval
 * boundary drains what BPF counted into profiles (one for everything, or
 * one per process with its labels) and hands them to its sinks. `ebprof
 * record`, the agent and the ad hoc HTTP profiles are each a session with
 * other options, so process events, target seeding and intervals exist
 * once. Several sessions can run at once (an ad hoc profile beside the
 * agent's continuous one): they share nothing but, optionally, a
 * symbolizer used from one thread at a time.
 *
 *   session_open()   load BPF, attach, seed the targets, start sampling
 *   session_run()    follow events and flush intervals until told to stop
 *   session_finish() stop sampling, flush the last interval
 *   session_close()  free; the sinks and a borrowed symbolizer stay the
 *                    caller's
 */
#ifndef EBPROF_SESSION_H
#define EBPROF_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ebprof/symbolizer.h"
#include "memsnap.h"
#include "profile/build.h"
#include "query/table.h"
#include "sampling/sampler.h"
#include "sinks/sink.h"

enum session_split {
	SESSION_ONE_PROFILE, /* every process in one profile (record, ad hoc) */
	SESSION_PER_PROCESS, /* a profile per process, labelled (the agent) */
};

struct session_opts {
	/* Sampling */
	unsigned types;		      /* PTYPE_BIT()s (util/profile_types.h); 0: cpu.
				       * A profile of each type per interval */
	uint64_t offcpu_min_ns;	      /* ... waits shorter than this not counted */
	uint32_t offcpu_pct;	      /* ... percent of switches taken; 0: 100 */
	uint64_t offcpu_period_ns;    /* ... shorter waits taken by chance; 0: all */
	uint32_t faults_period;	      /* faults: one sample every N page faults;
				       * 0: SAMPLER_FAULTS_PERIOD */
	int frequency;		      /* Hz, 1..10000 */
	bool kernel, user;	      /* stacks to collect */
	const char *btf_path;	      /* NULL: the kernel's BTF */
	enum sampler_unwind unwind;   /* user stacks: DWARF (default) or frame pointers */
	uint64_t unwind_budget;	      /* bytes of unwind tables; 0 = 64 MiB */
	const char *unwind_cache_dir; /* NULL = /var/cache/ebprof/unwind; "" = none */

	enum sampler_offcpu_path offcpu_path; /* off-CPU sampled, or timed at switches */
	int offcpu_rate;		      /* ... sampled: visits per second; 0: default */
	/* Targets */
	bool all;	      /* every process; the rules below are ignored */
	bool inherit;	      /* follow forks of targets */
	const uint32_t *pids; /* these processes; each must exist */
	size_t npids;
	const char *const *comms; /* by name; none of comms, pids, cgroups:
				   * targets_default_comms */
	size_t ncomms;
	const char *const *cgroups; /* cgroup v2 directories */
	size_t ncgroups;
	bool require_targets; /* none found: -ESRCH (else wait for them) */
	/* Output */
	enum session_split split;
	int interval_s;			/* SESSION_PER_PROCESS: profile length, aligned
					 * to the wall clock; 0: one interval */
	const char *service;		/* the "service" label of per-process profiles */
	bool group_short_lived;		/* SESSION_PER_PROCESS: processes that exited having
					 * lived less than an interval share a profile per
					 * group (pipeline/group.c) */
	int group_min_samples;		/* ... and so do those with fewer samples in the
					 * interval; 0: none */
	enum query_labels query_labels; /* statements of PostgreSQL backends */
	bool no_plpgsql;		/* no PL/pgSQL frames (they are on by default) */
	bool db_load;			/* count each interval's database load
					 * (session_interval.load; the agent's
					 * /metrics) */
	const char *comment;		/* first comment of every profile, NULL = none */
	bool prewarm;			/* open the targets' binaries at the start, so
					 * that the symbolizer's debuginfod servers
					 * send the debug files they lack while
					 * sampling (samples are symbolized as they
					 * come either way) */
	struct sink *const *sinks;	/* borrowed; every profile goes to each */
	size_t nsinks;
	struct symbolizer *sym; /* borrowed (a warm cache); NULL: its own */
	/* Memory profiles (PTYPE_MEMORY) */
	uint64_t memory_min_rss; /* private resident bytes below which a backend
				  * is not snapshotted; 0: every one */
	double memory_jump;	 /* growth since its last snapshot that snapshots
				  * it at once; 0: none */
};

/* What an interval's flush did. */
struct dbload;

struct session_interval {
	int64_t start_ns, end_ns;
	uint64_t processes;		   /* processes profiled (a group's members each) */
	uint64_t samples;		   /* samples BPF counted */
	uint64_t lost[STAT_MAX];	   /* by cause, this interval */
	char lost_text[256];		   /* "3 stacks lost (...), ..." or "" */
	uint64_t written, failed;	   /* profiles every sink took / some sink refused */
	struct builder_stats built;	   /* summed over the profiles */
	double flush_ms;		   /* drain to the last sink */
	struct query_table_stats queries;  /* statement table, since the start */
	const struct symreport *symbols;   /* per binary, this interval; owned by
					    * the session, valid in on_interval */
	struct sampler_unwind_info unwind; /* the unwinder, since the start */
	struct memsnap_stats memory;	   /* memory snapshots, since the start */
	uint64_t memory_oom;		   /* ... PostgreSQL processes OOM-killed */
	struct sampler_offcpu_info offcpu; /* the off-CPU path, since the start */
	/* the database load of the profiles delivered (profile/dbload.h), one
	 * bucket of the interval; owned by the session, valid in on_interval;
	 * NULL when it could not be counted or was not asked for (db_load) */
	struct dbload *load;
};

struct session_progress {
	double elapsed_s;
	uint64_t samples;
	unsigned long processes; /* processes sampled so far */
};

struct session_run_opts {
	double duration_s;   /* 0: until *stop */
	bool stop_when_gone; /* end when every target exited (record -p) */
	atomic_int *stop;    /* set non-zero to end; may be NULL */
	/* About every 250 ms while sampling; may be NULL. */
	void (*on_progress)(const struct session_progress *p, void *ctx);
	/* After each interval's flush (session_finish()'s too); may be NULL. */
	void (*on_interval)(const struct session_interval *iv, void *ctx);
	void *ctx;
};

/* What ended session_run(). */
enum session_end {
	SESSION_DURATION, /* duration_s passed */
	SESSION_STOPPED,  /* *stop was set */
	SESSION_GONE,	  /* every target exited */
};

/* Totals since session_open(). */
struct session_stats {
	double elapsed_s;	 /* sampling time */
	unsigned long processes; /* processes sampled */
	struct sampler_stats bpf;
	struct builder_stats built;
	uint64_t intervals, written, failed;
	char lost_text[256]; /* everything lost, "" if nothing */
	double last_flush_ms;
	const struct symreport *symbols; /* per binary, since the start; owned by
					  * the session, valid until it closes */
	struct sampler_unwind_info unwind;
	struct sampler_offcpu_info offcpu; /* the off-CPU path, since the start */
	struct memsnap_stats memory;	   /* memory snapshots */
	uint64_t memory_oom;		   /* PostgreSQL processes OOM-killed */
};

struct session;

/* The unwinding figures of builder stats, for a profile's comment and
 * summaries ("12 of 400 samples truncated (no unwind table
 * 10, depth limit 2)"); "" when no stack was cut short. */
void session_unwind_text(const struct builder_stats *st, char *buf, size_t len);

/*
 * Load and attach the sampler, seed the targets and start sampling. 0, or a
 * negative errno with a one-line reason in err: -ESRCH when a given pid
 * does not exist or (require_targets) no target runs (bad input), -EPERM
 * and -ENOTSUP for privileges and BTF, others for runtime failures.
 */
int session_open(const struct session_opts *o, struct session **out, char *err, size_t errlen);

/*
 * Sample, following process events and flushing at each interval boundary,
 * until r says to end. Returns 0 with *end set (end may be NULL), or a
 * negative errno with the reason in err. The session keeps sampling
 * afterwards: run it again, or finish it.
 */
int session_run(struct session *s, const struct session_run_opts *r, enum session_end *end,
		char *err, size_t errlen);

/* Stop sampling and flush what was counted since the last flush: the last
 * interval (on_interval of r is called; r may be NULL). 0 or -errno. */
int session_finish(struct session *s, const struct session_run_opts *r);

void session_get_stats(const struct session *s, struct session_stats *out);
/* Processes the registry knows now. */
size_t session_nprocs(const struct session *s);
/* Online CPUs sampled. */
int session_ncpus(const struct session *s);

/* Free everything the session owns (finish it first to keep its
 * samples). NULL is fine. */
void session_close(struct session *s);

/*
 * Ad hoc CPU profiles from a running session's own sampling
 * (pipeline/tap.c): the agent's HTTP API takes seconds of the session's
 * targets (or of some of them and their children) at a rate without
 * loading a program. The session's thread does the work in session_run()
 * (and session_finish()); the other calls are the requester's, from any
 * thread. Below the session's rate the samples are thinned to the rate
 * asked; above it the session's perf events sample faster for the
 * tap's window and the continuous profiles are thinned back to their own
 * rate (each count kept with the ratio's probability), so they keep the
 * samples they would have had. One tap at a time.
 */
struct session_tap_opts {
	int frequency;	      /* Hz asked, 1..10000 */
	double seconds;	      /* its window */
	const uint32_t *pids; /* these processes and their children (copied); */
	size_t npids;	      /* none: every target of the session */
	enum query_labels query_labels;
	const char *comment; /* its profile's first comment (copied), NULL: none */
};

struct session_tap_result {
	struct profile *profile; /* the caller's (profile_free()) */
	uint64_t samples;
	unsigned long processes;
	double seconds;
	int frequency; /* the rate its samples weigh */
};

struct session_tap;

/* Can s answer an ad hoc profile of type t with query labels ql itself?
 * (CPU profiles of a session that takes them; statements only if it
 * reads them.) */
bool session_tap_can(const struct session *s, enum ptype t, enum query_labels ql);
/* Register a tap: 0, -EBUSY (one runs), -ESHUTDOWN (the session is
 * ending), -ENOTSUP (session_tap_can() says no), -EINVAL, -ENOMEM. */
int session_tap_open(struct session *s, const struct session_tap_opts *o, struct session_tap **out);
/* Wait at most timeout_ms for its profile: 0 with *res (its profile is
 * then the caller's), -EAGAIN not yet, or why there is none (-ECANCELED
 * ended before it started, -ESHUTDOWN the session ended first, ...). */
int session_tap_wait(struct session_tap *t, int timeout_ms, struct session_tap_result *res);
/* End its window now: its profile holds what it has. */
void session_tap_end(struct session_tap *t);
/* The requester lets go of it (done or not); NULL is fine. */
void session_tap_close(struct session_tap *t);
/* The session's side, on its own thread: end a running tap now (with a
 * last drain while sampling goes on) and take no more; the agent calls
 * it before it stops its HTTP API, whose requests wait on the tap. */
void session_taps_end(struct session *s, bool drain);

/*
 * A session fed by its caller instead of BPF (pipeline/feed.c), for
 * benchmarks of the flush path (bench/pipeline-scale.c): no sampler, no
 * BPF, no target scan. The caller registers its processes, and at each
 * interval's end hands the raw samples, as a drain of the count maps
 * would, to the same builders, labels and sinks as a sampled session.
 * Of o, the sampling and target fields are ignored. session_close()
 * frees it; session_run(), session_finish() and the sampler figures of
 * session_get_stats() are not for it.
 */
/* Called once per flush: hand each counted stack to add(s, add_ctx). */
typedef int (*session_drain_fn)(raw_sample_fn add, void *add_ctx, void *ctx);

int session_open_fed(const struct session_opts *o, struct session **out);
/* Register pid: a child of ppid that shares its maps snapshot (as a
 * backend forked from the postmaster, ppid registered first), or with a
 * snapshot of its own read now (ppid 0, as a process found at the start).
 * 0 or a negative errno. */
int session_fed_process(struct session *s, uint32_t pid, uint32_t ppid);
/* End the interval at end_ns (wall clock): drain, build, deliver, as
 * session_run() does at a boundary. 0 or -errno; *iv as on_interval's. */
int session_flush_fed(struct session *s, int64_t end_ns, session_drain_fn drain, void *ctx,
		      struct session_interval *iv);

#endif /* EBPROF_SESSION_H */
