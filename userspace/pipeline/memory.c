// SPDX-License-Identifier: BSD-2-Clause
/*
 * A session's memory profiles (PTYPE_MEMORY): memory-context snapshots of
 * its PostgreSQL processes (memsnap.h) into memory profiles (memctx.h).
 *
 *  - at every interval's end, a snapshot of each backend above the floor:
 *    a profile per process (the agent, labelled trigger=interval), or
 *    one profile of them all with per-sample labels (record, ad hoc);
 *  - about every second, a backend that grew by the jump factor since
 *    its last snapshot is snapshotted at once (trigger=growth);
 *  - when the kernel kills one for lack of memory (oom_watch.h), its last
 *    snapshot is written at once, labelled oom_killed=true, with a log
 *    line naming its largest context.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/memctx.h"
#include "session_internal.h"
#include "util/array.h"
#include "util/log.h"
#include "util/timeutil.h"

#define TICK_NS 1000000000LL /* growth checks */
#define MAX_SAMPLE_LABELS 10

/* The per-sample labels of a snapshot of pid: pid, thread_name, the
 * PostgreSQL identity (a profile of several processes), the statement. */
static size_t sample_labels(struct session *s, struct profile *p, uint32_t pid,
			    const struct memsnap_shot *shot, bool several, bool oom,
			    struct pf_label *l)
{
	const struct proc_info *pi = procs_get(s->procs, pid);
	const struct pg_title *t = several ? session_pg_title(s, pid) : NULL;
	size_t n = 0;

	l[n++] = profile_label_num(p, "pid", pid, NULL);
	if (pi && pi->comm[0])
		l[n++] = profile_label_str(p, "thread_name", pi->comm);
	if (t) {
		l[n++] = profile_label_str(p, "backend_type", t->backend_type);
		if (t->database[0])
			l[n++] = profile_label_str(p, "database", t->database);
		if (t->user[0])
			l[n++] = profile_label_str(p, "user", t->user);
	}
	if (shot->query && s->o.query_labels == QUERY_LABELS_NORMALIZED)
		l[n++] = profile_label_str(p, "query", shot->query);
	if (shot->query)
		l[n++] = profile_label_str(p, "query_fingerprint", shot->fingerprint);
	if (shot->query_id) {
		char id[24];

		snprintf(id, sizeof(id), "%" PRId64, shot->query_id);
		l[n++] = profile_label_str(p, "query_id", id);
	}
	if (oom)
		l[n++] = profile_label_str(p, "oom_killed", "true");
	return n;
}

/* The largest context of a snapshot, for log lines. */
static const struct pgmem_context *largest(const struct pgmem_snapshot *snap)
{
	const struct pgmem_context *best = NULL;

	for (size_t i = 0; i < snap->n; i++)
		if (!best || snap->ctx[i].total > best->total)
			best = &snap->ctx[i];
	return best;
}

/* A profile of one snapshot of process pid, delivered on its own with
 * its process's labels and trigger. */
static void deliver_one(struct session *s, uint32_t pid, const struct memsnap_shot *shot,
			const char *trigger, struct session_interval *iv)
{
	struct session_proc *sp = session_proc(s, pid);
	struct kv labels[SESSION_MAX_LABELS + 3];
	struct pf_label sl[MAX_SAMPLE_LABELS];
	struct sink_profile rec = { .start_ns = shot->time_ns, .end_ns = shot->time_ns };
	struct memctx_stats st = { 0 };
	bool oom = !strcmp(trigger, "oom");
	struct profile *p;
	char pidbuf[16], rss[24];
	size_t n;

	if (!sp || !(p = memctx_profile_new(shot->time_ns))) {
		iv->failed++;
		return;
	}
	rec.labels = labels;
	rec.nlabels = session_process_labels(s, sp, pidbuf, sizeof(pidbuf), &rec, labels);
	labels[rec.nlabels++] = (struct kv){ "trigger", trigger };
	snprintf(rss, sizeof(rss), "%" PRIu64, shot->rss);
	labels[rec.nlabels++] = (struct kv){ "private_rss", rss };
	if (oom)
		labels[rec.nlabels++] = (struct kv){ "oom_killed", "true" };
	rec.type = ptype_info(PTYPE_MEMORY)->name;
	n = sample_labels(s, p, pid, shot, false, false, sl);
	if (memctx_add(p, &shot->snap, sl, n, s->queries, &st) || memctx_comment(p, &st)) {
		log_error("cannot build the memory profile of pid %u: out of memory", pid);
		profile_free(p);
		iv->failed++;
		return;
	}
	session_deliver(s, p, &rec, iv);
}

/* Snapshot pid now, force: whatever its memory. The snapshot, or NULL
 * (below the floor, gone, or not readable: logged at debug level). */
static const struct memsnap_shot *snapshot(struct session *s, uint32_t pid, bool force)
{
	const struct memsnap_shot *shot = NULL;
	struct pg_proc_addrs a;
	int err;

	if (pg_attach_addrs(s->pg, pid, &a))
		return NULL;
	err = memsnap_take(s->mem, pid, &a, force, &shot);
	if (err == -EPERM && !s->mem_eperm) {
		s->mem_eperm = true; /* once: it is so for every backend */
		log_warn("cannot read the memory of pid %u: %s (reading another user's process "
			 "needs CAP_SYS_PTRACE): no memory profiles",
			 pid, strerror(-err));
	} else if (err < 0) {
		log_debug("no memory snapshot of pid %u: %s", pid, strerror(-err));
	}
	return err ? NULL : shot;
}

static void on_oom(const struct ebprof_oom_event *e, void *ctx)
{
	struct session *s = ctx;
	const struct memsnap_shot *shot = memsnap_last(s->mem, e->pid);
	const struct pgmem_context *big;
	struct session_interval iv = { 0 };
	struct pg_proc_addrs a;

	if (pg_attach_addrs(s->pg, e->pid, &a))
		return; /* not one of ours */
	if (!shot) {
		log_warn("PostgreSQL pid %u was killed for lack of memory; no snapshot of its "
			 "memory contexts was taken before",
			 e->pid);
		return;
	}
	big = largest(&shot->snap);
	/* a dynahash is named after its table, as pg_backend_memory_contexts
	 * does; no other ident is logged (it may hold a statement) */
	log_warn("PostgreSQL pid %u was killed for lack of memory (OOM): %.1f MiB private at "
		 "its last snapshot %.1f s before; largest context %s, %.1f MiB of the %.1f MiB "
		 "in its memory contexts",
		 e->pid, shot->rss / 1048576.0, (wall_ns() - shot->time_ns) / 1e9,
		 !big						? "?"
		 : big->ident && !strcmp(big->name, "dynahash") ? big->ident
								: big->name,
		 big ? big->total / 1048576.0 : 0.0, shot->snap.total / 1048576.0);
	s->mem_oom++;
	if (s->o.split == SESSION_PER_PROCESS) {
		deliver_one(s, e->pid, shot, "oom", &iv);
		s->total.written += iv.written;
		s->total.failed += iv.failed;
	} else if (!ARRAY_RESERVE(s->oom_pids, &s->oom_cap, s->noom + 1)) {
		s->oom_pids[s->noom++] = e->pid; /* into the profile at its end */
	}
}

int session_memory_open(struct session *s, char *err, size_t errlen)
{
	struct memsnap_opts mo = { 0 };
	int ret;

	if (!session_takes(s, PTYPE_MEMORY))
		return 0;
	mo.min_rss = s->o.memory_min_rss;
	mo.jump = s->o.memory_jump;
	mo.queries = s->queries;
	mo.limits.used = true;
	ret = memsnap_new(&mo, &s->mem);
	if (ret) {
		snprintf(err, errlen, "cannot initialize memory snapshots: %s", strerror(-ret));
		return ret;
	}
	ret = oom_watch_open(s->sampler, s->o.btf_path, on_oom, s, &s->oom, err, errlen);
	if (ret) /* snapshots go on; OOM kills are not explained */
		log_warn("%s: OOM kills of backends will not be reported", err);
	s->mem_tick_mono_ns = mono_ns() + TICK_NS;
	return 0;
}

void session_memory_tick(struct session *s)
{
	struct session_interval iv = { 0 };
	uint32_t *pids = NULL;
	size_t n = 0;

	if (!s->mem || s->o.memory_jump <= 0 || mono_ns() < s->mem_tick_mono_ns)
		return;
	s->mem_tick_mono_ns = mono_ns() + TICK_NS;
	if (pg_attach_pids(s->pg, &pids, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		const struct memsnap_shot *shot;

		if (!memsnap_jumped(s->mem, pids[i]) || !(shot = snapshot(s, pids[i], false)))
			continue;
		log_debug("pid %u grew to %.1f MiB private: snapshot of its memory contexts",
			  pids[i], shot->rss / 1048576.0);
		if (s->o.split == SESSION_PER_PROCESS)
			deliver_one(s, pids[i], shot, "growth", &iv);
	}
	s->total.written += iv.written;
	s->total.failed += iv.failed;
	free(pids);
}

/* The snapshots of one profile of several processes: each backend now,
 * then the kept ones of those killed for lack of memory. */
static void flush_one_profile(struct session *s, const uint32_t *pids, size_t n, int64_t end_ns,
			      struct session_interval *iv)
{
	struct sink_profile rec = { .start_ns = iv->start_ns, .end_ns = end_ns };
	struct profile *p = memctx_profile_new(end_ns);
	struct memctx_stats st = { 0 };
	struct pf_label l[MAX_SAMPLE_LABELS];
	int err = p ? 0 : -ENOMEM;

	for (size_t i = 0; i < n + s->noom && !err; i++) {
		bool oom = i >= n;
		uint32_t pid = oom ? s->oom_pids[i - n] : pids[i];
		const struct memsnap_shot *shot =
			oom ? memsnap_last(s->mem, pid) : snapshot(s, pid, false);

		if (shot)
			err = memctx_add(p, &shot->snap, l,
					 sample_labels(s, p, pid, shot, true, oom, l), s->queries,
					 &st);
	}
	s->noom = 0;
	if (!err)
		err = memctx_comment(p, &st);
	if (err) {
		log_error("cannot build the memory profile: %s", strerror(-err));
		profile_free(p);
		iv->failed++;
		return;
	}
	rec.type = ptype_info(PTYPE_MEMORY)->name;
	session_deliver(s, p, &rec, iv);
}

void session_memory_flush(struct session *s, int64_t end_ns, struct session_interval *iv)
{
	uint32_t *pids = NULL;
	size_t n = 0;

	if (!s->mem)
		return;
	if (pg_attach_pids(s->pg, &pids, &n)) {
		log_error("cannot list the PostgreSQL processes: out of memory");
		return;
	}
	if (s->o.split == SESSION_ONE_PROFILE) {
		flush_one_profile(s, pids, n, end_ns, iv);
	} else {
		for (size_t i = 0; i < n; i++) {
			const struct memsnap_shot *shot = snapshot(s, pids[i], false);

			if (shot)
				deliver_one(s, pids[i], shot, "interval", iv);
		}
	}
	memsnap_get_stats(s->mem, &iv->memory);
	iv->memory_oom = s->mem_oom;
	free(pids);
}

void session_memory_forget(struct session *s, uint32_t pid)
{
	if (s->mem)
		memsnap_forget(s->mem, pid);
}

void session_memory_close(struct session *s)
{
	oom_watch_close(s->oom); /* after the sampler, whose poll calls it */
	memsnap_free(s->mem);
	free(s->oom_pids);
}
