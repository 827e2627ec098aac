/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Database load: average active sessions (AAS) over time, by wait-event
 * class and by statement, from CPU and off-CPU profiles (Performance
 * Insights' main chart, pg_wait_sampling's profile). The one place that
 * says what load is; the agent's /metrics and the collector's UI both use
 * it.
 *
 * What counts, sample by sample (dbload_classify()):
 *  - only PostgreSQL processes: samples with a backend_type label (one
 *    profile of many processes), or every sample of a profile whose
 *    comments name its backend_type (a per-process profile: the agent's);
 *  - CPU profiles: cpu/nanoseconds, class CPU;
 *  - off-CPU profiles: offcpu/nanoseconds, class = PostgreSQL's
 *    wait_event_type (Lock, LWLock, IO, IPC, Client, Timeout, BufferPin,
 *    Extension), except
 *      - state=idle (ClientRead with no statement running: an idle
 *        session, idle in transaction included): not load; nor
 *        Client/ClientRead without a query label in another state (woken
 *        by the client's next message, not yet run: still idle);
 *      - wait_event_type=Activity (PostgreSQL's "idle in its main loop":
 *        WalWriterMain, CheckpointerMain, AutoVacuumMain, ...): not load;
 *      - no wait event set (uninstrumented, or none read): asleep while
 *        a statement runs (a query label) is Other; runnable (preempted)
 *        is not counted, since the wait sampler's own visit preempts the
 *        backend it visits on its CPU (CPU is the CPU sampler's time);
 *        otherwise not load (a process asleep outside any statement,
 *        e.g. the postmaster's loop).
 * AAS of a time bucket = the time counted in it / its length; a profile's
 * time is spread over the buckets its [time_nanos, + duration_nanos)
 * overlaps, in proportion.
 *
 * Statements are keyed by query_fingerprint (16 hex), else by the query
 * label itself ("(statement text lost)", "(between statements)"), else ""
 * (no statement: background work, a backend between statements). Only
 * normalized texts and fingerprints ever come in: labels carry no
 * literals.
 *
 * Not thread-safe; everything returned is owned by the struct dbload and
 * lives until dbload_free().
 */
#ifndef EBPROF_PROFILE_DBLOAD_H
#define EBPROF_PROFILE_DBLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

enum dbload_class {
	DBLOAD_CPU,
	DBLOAD_LOCK,
	DBLOAD_LWLOCK,
	DBLOAD_IO,
	DBLOAD_IPC,
	DBLOAD_CLIENT,
	DBLOAD_TIMEOUT,
	DBLOAD_BUFFERPIN,
	DBLOAD_EXTENSION,
	DBLOAD_OTHER, /* a wait with no wait event, or of a class not listed */
	DBLOAD_NCLASSES
};

/* "CPU", "Lock", ... (PostgreSQL's wait_event_type names); "" out of range. */
const char *dbload_class_name(enum dbload_class c);
/* The class named name (as dbload_class_name() spells it), or -EINVAL. */
int dbload_class_parse(const char *name);

/* How a profile's samples count: the index of its time sample type and
 * whether it is a CPU profile. false: not a CPU or off-CPU profile. */
struct dbload_kind {
	size_t ti;
	bool cpu;
	bool pg; /* a profile of one PostgreSQL process (its comments say) */
};
bool dbload_profile_kind(const struct profile *p, struct dbload_kind *k);

/* The class of sample s of p (of kind k), or -1 when it is not load. */
int dbload_classify(const struct profile *p, const struct dbload_kind *k,
		    const struct pf_sample *s);

/* A statement's load, summed over the buckets. */
struct dbload_stmt {
	char *key;   /* fingerprint, or the query label, or "" */
	char *query; /* the normalized text when known, else NULL */
	int64_t ns[DBLOAD_NCLASSES];
	int64_t total_ns;
};

struct dbload;

/* nbuckets buckets of step_ns from from_ns (step_ns > 0, nbuckets > 0).
 * 0, -EINVAL or -ENOMEM. */
int dbload_new(int64_t from_ns, int64_t step_ns, size_t nbuckets, struct dbload **out);
void dbload_free(struct dbload *l);
/* Forget what was added (same buckets, the start moved to from_ns). */
void dbload_reset(struct dbload *l, int64_t from_ns);

/* Count p's load (nothing when p is not a CPU or off-CPU profile) over
 * its [time_nanos, + duration_nanos). 0 or -ENOMEM (then part of p may be
 * counted). */
int dbload_add_profile(struct dbload *l, const struct profile *p);
/* The same over [start_ns, + duration_ns) (a catalog's time for it). */
int dbload_add_profile_at(struct dbload *l, const struct profile *p, int64_t start_ns,
			  int64_t duration_ns);

/* Time counted in bucket b of class c (0 out of range). */
int64_t dbload_bucket_ns(const struct dbload *l, size_t b, enum dbload_class c);
/* ... as average active sessions (ns / step). */
double dbload_bucket_aas(const struct dbload *l, size_t b, enum dbload_class c);
/* Time counted of class c over every bucket. */
int64_t dbload_class_ns(const struct dbload *l, enum dbload_class c);
size_t dbload_nbuckets(const struct dbload *l);
int64_t dbload_step_ns(const struct dbload *l);
int64_t dbload_from_ns(const struct dbload *l);
/* The profiles that counted (CPU or off-CPU ones). */
size_t dbload_profiles(const struct dbload *l);

/* The statements by load, most first (ties by key): *out points to an
 * array of *n owned by l, valid until the next add, reset or free. 0 or
 * -ENOMEM. */
int dbload_statements(struct dbload *l, struct dbload_stmt *const **out, size_t *n);

#endif /* EBPROF_PROFILE_DBLOAD_H */
