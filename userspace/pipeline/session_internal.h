/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of a session (session.h), shared by its files:
 *   session.c  life cycle, process events, the run loop
 *   seed.c     the initial target set and warming the symbolizer
 *   flush.c    an interval's end: drain, profiles, labels, sinks
 */
#ifndef EBPROF_SESSION_INTERNAL_H
#define EBPROF_SESSION_INTERNAL_H

#include "process/pgmeta.h"
#include "process/targets.h"
#include "process/processes.h"
#include "session.h"
#include "util/hashmap.h"

/* A process of a SESSION_PER_PROCESS session. */
struct session_proc {
	uint32_t pid;
	struct builder *b; /* NULL until it has samples this interval */
	struct pg_title pg;
	bool is_pg;
	char build_id[128]; /* of the main executable, "" if unknown */
	bool build_id_done;
};

struct session {
	struct session_opts o; /* arrays and strings borrowed until close */
	struct symbolizer *sym;
	bool own_sym;
	struct proc_registry *procs;
	struct sampler *sampler;
	struct hashmap *by_pid; /* pid -> struct session_proc (per process) */
	struct builder *one;	/* SESSION_ONE_PROFILE: the profile */
	uint32_t *forget;	/* exited pids to drop at the next flush */
	size_t nforget;
	int64_t interval_start_ns; /* wall clock */
	int64_t boundary_ns;	   /* next interval end (wall), 0: none */
	int64_t start_mono_ns, stop_mono_ns;
	struct sampler_stats last_stats; /* at the last flush */
	unsigned long processes_sampled;
	long live_targets; /* seeded + forked - exited */
	bool stopped;
	struct session_stats total;
};

/* seed.c: the target rules of the options. */
struct target_rules session_target_rules(const struct session_opts *o);
/* seed.c: make the target set. The number of targets, or a negative errno
 * with the reason in err. */
int session_seed(struct session *s, char *err, size_t errlen);
/* seed.c: open the binaries the targets map, load kallsyms. */
void session_prewarm(struct session *s);

/* flush.c: end the interval at end_ns (final: the sampler is stopped,
 * drain both buffers). Fills *iv. 0 or -errno (logged). */
int session_flush(struct session *s, bool final, int64_t end_ns, struct session_interval *iv);
/* flush.c: a builder for a profile starting at start_ns. */
int session_new_builder(struct session *s, int64_t start_ns, struct builder **out);
/* flush.c: the state of pid (created if new); NULL on -ENOMEM. */
struct session_proc *session_proc(struct session *s, uint32_t pid);
/* flush.c: read pid's PostgreSQL title into p. */
void session_read_title(struct session_proc *p);

#endif /* EBPROF_SESSION_INTERNAL_H */
