// SPDX-License-Identifier: BSD-2-Clause
/*
 * Short-lived processes share a profile. PostgreSQL forks a backend per
 * connection: without a pooler, hundreds a second live for milliseconds,
 * and a profile (a file, a push) for each would flood the store and the
 * remotes with one- and two-sample profiles. At an interval's end, a
 * process younger than the interval (forked or exec'ed during it, alive or
 * not: a process's first interval is partial anyway), one that exited
 * having lived less than an interval, and, when asked, one with fewer than
 * group_min_samples samples, go into the profile of its group: backend
 * type, database and user for PostgreSQL, its name otherwise, within the
 * session's service. Every sample keeps its own pid, tid and thread name
 * labels: nothing is lost by the grouping. A process that lives on has a
 * profile of its own from its second interval.
 *
 * The samples of a young process go straight into its group's builder at
 * the drain, so mappings and locations are interned once for the whole
 * group; a process found to belong to a group after its samples were
 * drained (few samples) is merged into it (profile/merge.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/merge.h"
#include "session_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

#define GROUP_LABELS 8

struct session_group {
	char key[256]; /* first: the map's key */
	char comm[16];
	struct pg_title pg;
	bool is_pg;
	/* Per type: samples of members drained into it, or NULL; members
	 * merged after their drain, or NULL. */
	struct builder *b[PTYPE_N];
	struct profile *p[PTYPE_N];
	uint32_t nprocs;
};

struct hashmap *session_groups_new(const struct session *s)
{
	return s->o.group_short_lived ? hm_new(hm_hash_str, hm_equal_str) : NULL;
}

/* Younger than an interval at this flush, or died so. A start before the
 * session's is unknown (0): such a process is old. */
static bool young(const struct session *s, uint32_t pid)
{
	const struct proc_info *pi = procs_get(s->procs, pid);
	uint64_t interval_ns = (uint64_t)s->o.interval_s * NSEC_PER_SEC;
	uint64_t end_ns = pi && pi->exited ? pi->exit_ns : s->flush_mono_ns;

	return pi && pi->start_ns && end_ns >= pi->start_ns &&
	       (!interval_ns || end_ns - pi->start_ns < interval_ns);
}

/* "pg TYPE USER DB" or "comm NAME", separated by 0x1f. */
static void group_key(const struct session_proc *sp, const char *comm, char *key, size_t len)
{
	if (sp->is_pg)
		snprintf(key, len, "pg\x1f%s\x1f%s\x1f%s", sp->pg.backend_type, sp->pg.user,
			 sp->pg.database);
	else
		snprintf(key, len, "comm\x1f%s", comm);
}

/* The group of sp, created if new; sp counted once per flush. Its title
 * comes from BPF (EVENT_TITLE); /proc is asked while it lives if none. */
static struct session_group *group_of(struct session *s, struct session_proc *sp)
{
	const struct proc_info *pi;
	struct session_group *g;
	const char *comm;
	char key[256];

	if (sp->grouped_at == s->flushes + 1)
		return sp->group;
	pi = procs_get(s->procs, sp->pid);
	comm = pi && pi->comm[0] ? pi->comm : "unknown";
	if (pi && !pi->exited && !sp->is_pg)
		session_read_title(s, sp);
	group_key(sp, comm, key, sizeof(key));
	g = hm_find_or_new(s->groups, key, sizeof(key), sizeof(*g));
	if (!g)
		return NULL;
	if (!g->nprocs) {
		snprintf(g->comm, sizeof(g->comm), "%s", comm);
		g->pg = sp->pg;
		g->is_pg = sp->is_pg;
	}
	g->nprocs++;
	sp->grouped_at = s->flushes + 1;
	sp->group = g;
	return g;
}

struct builder *session_group_builder(struct session *s, struct session_proc *sp, enum ptype t)
{
	struct session_group *g;

	if (!s->groups || (sp->grouped_at != s->flushes + 1 && !young(s, sp->pid)))
		return NULL;
	g = group_of(s, sp);
	if (!g)
		return NULL; /* out of memory: a profile of its own then */
	if (!g->b[t] && session_new_builder(s, t, s->interval_start_ns, &g->b[t]))
		return NULL;
	return g->b[t];
}

bool session_should_group(struct session *s, struct session_proc *sp)
{
	struct builder_stats st;

	if (!s->groups)
		return false;
	if (young(s, sp->pid))
		return true;
	if (s->o.group_min_samples <= 0)
		return false;
	/* by its CPU samples (an off-CPU profile counts waits) */
	if (!sp->b[PTYPE_CPU])
		return true;
	builder_get_stats(sp->b[PTYPE_CPU], &st);
	return st.samples < (uint64_t)s->o.group_min_samples;
}

void session_group_take(struct session *s, struct session_proc *sp, struct session_interval *iv)
{
	struct session_group *g = group_of(s, sp);

	for (int t = 0; t < PTYPE_N; t++) {
		struct profile *p;
		int err = -ENOMEM;

		if (!sp->b[t])
			continue;
		p = session_finish_builder(s, sp->b[t], iv->end_ns - iv->start_ns, iv);
		sp->b[t] = NULL;
		if (!p)
			continue;
		if (g && !g->p[t]) {
			g->p[t] = p;
			continue;
		}
		if (g)
			err = profile_merge(g->p[t], p, NULL, 0);
		profile_free(p);
		if (err) {
			log_error("cannot merge the profile of pid %u into its group: %s", sp->pid,
				  strerror(-err));
			iv->failed++;
		}
	}
}

/* The labels of a group's profile, in the order sink.h gives. */
static size_t group_labels(struct session *s, const struct session_group *g, char *nbuf,
			   size_t nlen, struct sink_profile *rec, struct kv *labels)
{
	size_t n = 0;

	rec->pid = 0;
	rec->comm = g->comm;
	rec->service = s->o.service;
	rec->backend_type = g->is_pg ? g->pg.backend_type : NULL;
	snprintf(nbuf, nlen, "%u", g->nprocs);
	if (s->o.service)
		labels[n++] = (struct kv){ "service", s->o.service };
	labels[n++] = (struct kv){ "comm", g->comm };
	if (g->is_pg) {
		labels[n++] = (struct kv){ "backend_type", g->pg.backend_type };
		if (g->pg.user[0])
			labels[n++] = (struct kv){ "pg_user", g->pg.user };
		if (g->pg.database[0])
			labels[n++] = (struct kv){ "pg_database", g->pg.database };
	}
	labels[n++] = (struct kv){ "group", "short-lived" };
	labels[n++] = (struct kv){ "processes", nbuf };
	return n;
}

/* One group's profile of type t: its drained members, then its merged
 * ones. */
static struct profile *group_profile(struct session *s, struct session_group *g, enum ptype t,
				     struct session_interval *iv)
{
	struct profile *p = NULL;
	int err;

	if (g->b[t])
		p = session_finish_builder(s, g->b[t], iv->end_ns - iv->start_ns, iv);
	g->b[t] = NULL;
	if (!p) { /* nothing drained (or out of memory): the merged ones */
		p = g->p[t];
		g->p[t] = NULL;
		return p;
	}
	if (!g->p[t])
		return p;
	err = profile_merge(p, g->p[t], NULL, 0);
	profile_free(g->p[t]);
	g->p[t] = NULL;
	if (err) {
		log_error("cannot merge the profiles of group %s: %s", g->comm, strerror(-err));
		iv->failed++;
	}
	return p;
}

void session_groups_emit(struct session *s, struct session_interval *iv)
{
	const void *k;
	void *v;

	if (!s->groups)
		return;
	for (size_t it = 0; hm_next(s->groups, &it, &k, &v);) {
		struct session_group *g = v;
		struct sink_profile rec = { .start_ns = iv->start_ns, .end_ns = iv->end_ns };
		struct kv labels[GROUP_LABELS];
		bool any = false;
		char nbuf[16];

		rec.labels = labels;
		rec.nlabels = group_labels(s, g, nbuf, sizeof(nbuf), &rec, labels);
		for (int t = 0; t < PTYPE_N; t++) {
			struct profile *p = group_profile(s, g, t, iv);

			if (!p)
				continue;
			rec.type = ptype_info(t)->name;
			session_deliver(s, p, &rec, iv); /* takes p */
			any = true;
		}
		if (any)
			iv->processes += g->nprocs;
		free(g);
	}
	hm_free(s->groups);
	s->groups = NULL;
}
