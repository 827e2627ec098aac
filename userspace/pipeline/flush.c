// SPDX-License-Identifier: BSD-2-Clause
/*
 * The end of an interval: drain what BPF counted into the profiles (one,
 * or one per process), finish them with their comments and labels, hand
 * each to every sink, and forget the processes that exited (one interval
 * later: samples counted after the buffer flip still arrive, and children
 * may still inherit their maps).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "session_internal.h"
#include "util/array.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/version.h"

const struct pg_title *session_pg_title(void *ctx, uint32_t pid)
{
	struct session *s = ctx;
	struct session_proc *sp = session_proc(s, pid);
	const struct proc_info *pi;

	if (!sp)
		return NULL;
	if (!sp->is_pg && !sp->title_read) {
		sp->title_read = true;
		pi = procs_get(s->procs, pid);
		if (pi && !pi->exited)
			session_read_title(s, sp);
	}
	return sp->is_pg ? &sp->pg : NULL;
}

bool session_takes(const struct session *s, enum ptype t)
{
	return s->o.types & PTYPE_BIT(t);
}

/* What one count of a raw sample of type t weighs (builder_opts.period). */
static int64_t type_period(const struct session *s, enum ptype t)
{
	switch (t) {
	case PTYPE_CPU:
		return s->o.frequency > 0 ? NSEC_PER_SEC / s->o.frequency : 0;
	case PTYPE_FAULTS:
		return (int64_t)s->o.faults_period * s->page_size;
	default: /* off-CPU samples carry their own time */
		return 1;
	}
}

int session_new_builder(struct session *s, enum ptype t, int64_t start_ns, struct builder **out)
{
	struct builder_opts bo = { 0 };

	bo.type = t;
	bo.period = type_period(s, t);
	bo.sym = s->sym;
	bo.procs = s->procs;
	bo.time_nanos = start_ns;
	bo.queries = s->queries;
	bo.query_labels = s->o.query_labels;
	if (s->o.split == SESSION_ONE_PROFILE) { /* per process, they label the profile */
		bo.pg_title = session_pg_title;
		bo.pg_title_ctx = s;
	}
	return builder_new(&bo, out);
}

struct session_proc *session_proc(struct session *s, uint32_t pid)
{
	_Static_assert(offsetof(struct session_proc, pid) == 0, "the key comes first");
	return hm_find_or_new(s->by_pid, &pid, sizeof(pid), sizeof(struct session_proc));
}

/* A child forked from the postmaster shows the postmaster's argv until it
 * sets its title: a backend starting, not a postmaster. */
static void set_title(struct session *s, struct session_proc *sp, const struct pg_title *t)
{
	const struct proc_info *pi = procs_get(s->procs, sp->pid);

	sp->pg = *t;
	sp->is_pg = true;
	if (!strcmp(t->backend_type, "postmaster") && pi && pi->start_ns && !pi->execd)
		snprintf(sp->pg.backend_type, sizeof(sp->pg.backend_type), "starting backend");
}

void session_read_title(struct session *s, struct session_proc *sp)
{
	struct pg_title t;

	if (!pg_read_title(sp->pid, &t))
		set_title(s, sp, &t);
}

void session_parse_title(struct session *s, struct session_proc *sp, const char *buf, size_t len)
{
	struct pg_title t;

	if (!pg_parse_title(buf, len, &t))
		set_title(s, sp, &t);
}

const struct raw_sample *session_with_plpgsql(struct session *s, const struct raw_sample *rs,
					      struct raw_sample *with, struct raw_plpgsql *pl)
{
	const struct plpgsql_chain *c;

	if (!rs->plpgsql_hash || !s->plpgsql ||
	    !(c = plpgsql_chains_get(s->plpgsql, rs->plpgsql_hash)))
		return rs;
	*with = *rs;
	plpgsql_place(c, rs, pl);
	with->plpgsql = pl;
	with->nplpgsql = c->n;
	return with;
}

/* One raw sample to the builder of its process (or group) and type. */
static int add_sample(struct session *s, const struct raw_sample *rs)
{
	enum ptype t = rs->type < PTYPE_N ? (enum ptype)rs->type : PTYPE_CPU;
	struct raw_plpgsql pl[EBPROF_PLPGSQL_DEPTH];
	struct session_proc *sp;
	struct raw_sample with;
	struct builder *b;
	int err;

	rs = session_with_plpgsql(s, rs, &with, pl);
	if (s->o.split == SESSION_ONE_PROFILE)
		return s->one[t] ? builder_add(rs, s->one[t]) : 0;
	sp = session_proc(s, rs->pid);
	if (!sp)
		return -ENOMEM;
	b = session_group_builder(s, sp, t);
	if (b)
		return builder_add(rs, b);
	if (!sp->b[t]) {
		err = session_new_builder(s, t, s->interval_start_ns, &sp->b[t]);
		if (err)
			return err;
	}
	return builder_add(rs, sp->b[t]);
}

int session_add_sample(const struct raw_sample *rs, void *ctx)
{
	struct session *s = ctx;
	int ret = add_sample(s, rs);

	session_symbolized(s);
	return ret;
}

/* GNU build-id of the process's main executable. */
static void main_build_id(struct session *s, struct session_proc *sp, const struct proc_info *pi)
{
	const struct proc_maps *maps = procs_maps(s->procs, sp->pid);
	struct sym_elf *elf;

	if (sp->build_id_done || !pi || !pi->exe || !maps)
		return;
	sp->build_id_done = true;
	for (size_t i = 0; i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct sym_binary bin = map_entry_binary(e, sp->pid);

		if (e->kind != MAPPING_FILE || strcmp(e->path, pi->exe))
			continue;
		if (!sym_elf_get(s->sym, &bin, &elf)) {
			snprintf(sp->build_id, sizeof(sp->build_id), "%s", sym_elf_build_id(elf));
			sym_elf_put(s->sym, elf);
		}
		return;
	}
}

size_t session_process_labels(struct session *s, struct session_proc *sp, char *pidbuf,
			      size_t pidlen, struct sink_profile *rec, struct kv *labels)
{
	struct proc_info *pi = procs_get(s->procs, sp->pid);
	size_t n = 0;

	if (pi && !pi->exited)
		session_read_title(s, sp); /* a backend's title is set after its fork */
	main_build_id(s, sp, pi);
	rec->pid = sp->pid;
	rec->comm = pi && pi->comm[0] ? pi->comm : "unknown";
	rec->service = s->o.service;
	rec->backend_type = sp->is_pg ? sp->pg.backend_type : NULL;
	snprintf(pidbuf, pidlen, "%u", sp->pid);
	if (s->o.service)
		labels[n++] = (struct kv){ "service", s->o.service };
	labels[n++] = (struct kv){ "pid", pidbuf };
	labels[n++] = (struct kv){ "comm", rec->comm };
	if (pi && pi->exe)
		labels[n++] = (struct kv){ "exe", pi->exe };
	if (sp->build_id[0])
		labels[n++] = (struct kv){ "build_id", sp->build_id };
	if (sp->is_pg) {
		labels[n++] = (struct kv){ "backend_type", sp->pg.backend_type };
		if (sp->pg.user[0])
			labels[n++] = (struct kv){ "pg_user", sp->pg.user };
		if (sp->pg.database[0])
			labels[n++] = (struct kv){ "pg_database", sp->pg.database };
	}
	return n;
}

static void add_builder_stats(struct builder_stats *to, const struct builder_stats *st)
{
	to->samples += st->samples;
	to->fault_bytes += st->fault_bytes;
	to->offcpu_ns += st->offcpu_ns;
	to->stacks += st->stacks;
	to->user_frames += st->user_frames;
	to->user_frames_resolved += st->user_frames_resolved;
	to->kernel_frames += st->kernel_frames;
	to->kernel_frames_resolved += st->kernel_frames_resolved;
	to->leaf_resolved += st->leaf_resolved;
	to->no_mapping += st->no_mapping;
	to->query_samples += st->query_samples;
	to->query_gap += st->query_gap;
	to->query_lost += st->query_lost;
	for (int i = 0; i < UNWIND_END_MAX; i++)
		to->truncated[i] += st->truncated[i];
	to->fp_samples += st->fp_samples;
	to->plpgsql_samples += st->plpgsql_samples;
	to->plpgsql_unplaced += st->plpgsql_unplaced;
}

/* "12 of 400 samples truncated (no unwind table 10, depth
 * limit 2), 3 with frame-pointer frames" into buf; "" when none were. */
void session_unwind_text(const struct builder_stats *st, char *buf, size_t len)
{
	uint64_t total = 0;
	size_t off;

	for (int i = 1; i < UNWIND_END_MAX; i++)
		total += st->truncated[i];
	buf[0] = '\0';
	if (!total && !st->fp_samples)
		return;
	off = 0;
	if (total)
		off = (size_t)snprintf(buf, len, "%llu of %llu samples truncated",
				       (unsigned long long)total, (unsigned long long)st->samples);
	for (int i = 1, first = 1; i < UNWIND_END_MAX && off < len; i++) {
		if (!st->truncated[i])
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s %llu", first ? " (" : ", ",
					sampler_unwind_end_name(i),
					(unsigned long long)st->truncated[i]);
		first = 0;
	}
	if (total && off < len)
		off += (size_t)snprintf(buf + off, len - off, ")");
	if (st->fp_samples && off < len)
		snprintf(buf + off, len - off,
			 "%s%llu of %llu samples with frame-pointer frames (no "
			 "unwind table)",
			 off ? ", " : "", (unsigned long long)st->fp_samples,
			 (unsigned long long)st->samples);
}

/* Hand one finished profile to every sink: true when each took it. */
static bool deliver(struct session *s, struct sink_profile *rec)
{
	uint8_t *buf = NULL;
	bool pprof = false, ok = true;
	int err = 0;

	for (size_t i = 0; i < s->o.nsinks; i++)
		pprof |= s->o.sinks[i]->ops->wants_pprof;
	if (pprof) {
		err = pprof_encode(rec->profile, true, &buf, &rec->len);
		rec->data = buf;
	}
	for (size_t i = 0; i < s->o.nsinks; i++) {
		struct sink *k = s->o.sinks[i];
		int ret = err;

		if (!ret) {
			k->err[0] = '\0';
			ret = sink_write(k, rec);
		}
		if (!ret)
			continue;
		ok = false;
		if (rec->pid)
			log_warn("%s: the profile of pid %u is lost: %s", sink_name(k), rec->pid,
				 k->err[0] ? k->err : strerror(-ret));
		else if (k->err[0])
			log_error("%s", k->err);
		else
			log_error("%s: cannot take the profile: %s", sink_name(k), strerror(-ret));
	}
	free(buf);
	return ok;
}

/* Finish builder b (consumed): its figures go to iv; the profile, or NULL
 * when it could not be built (logged and counted). */
struct profile *session_finish_builder(struct session *s, struct builder *b, int64_t duration_ns,
				       struct session_interval *iv)
{
	struct builder_stats st;
	struct profile *p = NULL;
	int err;

	builder_get_stats(b, &st);
	add_builder_stats(&iv->built, &st);
	if (symreport_merge(&s->iv_symbols, builder_report(b)))
		log_debug("symbolization report: out of memory");
	err = builder_finish(b, duration_ns, &p);
	builder_free(b);
	if (err) {
		log_error("cannot build a profile: %s", strerror(-err));
		iv->failed++;
		return NULL;
	}
	{
		char text[256], comment[300];

		session_unwind_text(&st, text, sizeof(text));
		snprintf(comment, sizeof(comment), "user stacks: %s", text);
		if (text[0])
			profile_add_comment(p, comment);
	}
	return p;
}

void session_deliver(struct session *s, struct profile *p, struct sink_profile *rec,
		     struct session_interval *iv)
{
	char comment[512];

	const struct ptype_info *ti = ptype_of_record(rec->type);
	double secs = (rec->end_ns - rec->start_ns) / 1e9;

	if (s->o.comment)
		profile_add_comment(p, s->o.comment);
	if (s->o.split == SESSION_ONE_PROFILE && ti && ti->id == PTYPE_OFFCPU) {
		snprintf(comment, sizeof(comment), "off-CPU, %.3f s, %llu waits, %.3f s away", secs,
			 (unsigned long long)profile_total(p, 0), profile_total(p, 1) / 1e9);
		profile_add_comment(p, comment);
	} else if (s->o.split == SESSION_ONE_PROFILE && ti && ti->id == PTYPE_FAULTS) {
		snprintf(comment, sizeof(comment),
			 "page faults, 1 sample every %u, %.3f s, %llu samples, %.1f MiB faulted",
			 s->o.faults_period, secs, (unsigned long long)iv->lost[STAT_FAULT_SAMPLES],
			 profile_total(p, 1) / 1048576.0);
		profile_add_comment(p, comment);
	} else if (s->o.split == SESSION_ONE_PROFILE && ti && ti->id == PTYPE_MEMORY) {
		snprintf(comment, sizeof(comment),
			 "memory contexts, %.1f MiB in %llu contexts, snapshots at the end",
			 profile_total(p, 0) / 1048576.0, (unsigned long long)profile_total(p, 2));
		profile_add_comment(p, comment);
	} else if (s->o.split == SESSION_ONE_PROFILE) {
		snprintf(comment, sizeof(comment), "%d Hz, %.3f s, %llu samples", s->o.frequency,
			 secs, (unsigned long long)iv->lost[STAT_SAMPLES]);
		profile_add_comment(p, comment);
	}
	for (size_t i = 0; i < rec->nlabels; i++) {
		snprintf(comment, sizeof(comment), "%s=%s", rec->labels[i].key,
			 rec->labels[i].value);
		profile_add_comment(p, comment);
	}
	if (iv->lost_text[0]) {
		snprintf(comment, sizeof(comment), "lost (all processes, this interval): %s",
			 iv->lost_text);
		profile_add_comment(p, comment);
	}
	if (s->iv_load && dbload_add_profile(s->iv_load, p)) {
		log_debug("database load: out of memory; not counted this interval");
		dbload_free(s->iv_load);
		s->iv_load = NULL;
	}
	rec->profile = p;
	if (deliver(s, rec))
		iv->written++;
	else
		iv->failed++;
	profile_free(p);
}

/* Finish builder b (consumed) into a profile and deliver it. */
static void emit(struct session *s, struct builder *b, struct sink_profile *rec,
		 struct session_interval *iv)
{
	struct profile *p = session_finish_builder(s, b, rec->end_ns - rec->start_ns, iv);

	if (p)
		session_deliver(s, p, rec, iv);
}

static void forget_later(struct session *s, uint32_t pid)
{
	if (!ARRAY_RESERVE(s->forget, &s->forget_cap, s->nforget + 1))
		s->forget[s->nforget++] = pid;
}

/* A process's profiles of the interval, one per type, to its group or to
 * the sinks. */
static void flush_process(struct session *s, struct session_proc *sp, int64_t end_ns,
			  struct session_interval *iv)
{
	struct sink_profile rec = { .start_ns = iv->start_ns, .end_ns = end_ns };
	struct kv labels[SESSION_MAX_LABELS];
	bool any = false;
	char pidbuf[16];

	for (int t = 0; t < PTYPE_N; t++)
		any |= sp->b[t] != NULL;
	if (!any)
		return;
	if (session_should_group(s, sp)) {
		session_group_take(s, sp, iv);
		return;
	}
	rec.labels = labels;
	rec.nlabels = session_process_labels(s, sp, pidbuf, sizeof(pidbuf), &rec, labels);
	for (int t = 0; t < PTYPE_N; t++) {
		if (!sp->b[t])
			continue;
		rec.type = ptype_info(t)->name;
		emit(s, sp->b[t], &rec, iv);
		sp->b[t] = NULL;
	}
	iv->processes++;
}

/* Processes seen exited at the previous flush have had one more interval
 * for samples counted after the flip (emitted by now) and for children
 * inheriting their maps: forget them now; mark those exited since. */
static void forget_exited(struct session *s)
{
	struct proc_info *pi;
	const void *k;
	void *v;

	for (size_t i = 0; i < s->nforget; i++) {
		pi = procs_get(s->procs, s->forget[i]);
		if (pi && !pi->exited)
			continue; /* a new process under the pid since */
		if (s->by_pid && !hm_remove(s->by_pid, &s->forget[i], &k, &v)) {
			for (int t = 0; t < PTYPE_N; t++) /* NULL: emitted */
				builder_free(((struct session_proc *)v)->b[t]);
			free(v);
		}
		session_memory_forget(s, s->forget[i]);
		procs_remove(s->procs, s->forget[i]);
	}
	s->nforget = 0;
	for (size_t it = 0; s->by_pid && hm_next(s->by_pid, &it, &k, &v);)
		if (!procs_get(s->procs, ((struct session_proc *)v)->pid))
			forget_later(s, ((struct session_proc *)v)->pid);
	for (size_t it = 0; (pi = procs_next(s->procs, &it));)
		if (pi->exited)
			forget_later(s, pi->pid);
}

/* The sampler's counters of this interval (st: read before its drain). */
static void interval_stats(struct session *s, const struct sampler_stats *st,
			   struct session_interval *iv)
{
	for (int i = 0; i < STAT_MAX; i++)
		iv->lost[i] = st->v[i] - s->last_stats.v[i];
	/* taken at an ad hoc profile's raised rate, not the continuous one's
	 * (what this interval did not count waits for the next) */
	iv->lost[STAT_SAMPLES] -= session_taps_thinned(s, iv->lost[STAT_SAMPLES]);
	iv->samples = session_samples(s, iv->lost);
	sampler_loss_text(iv->lost, iv->lost_text, sizeof(iv->lost_text));
	sampler_unwind_info(s->sampler, &iv->unwind);
	sampler_offcpu_info(s->sampler, &iv->offcpu);
	s->last_stats = *st;
}

/* What BPF counted this interval into the builders, with its figures. */
static void drain_sampler(struct session *s, bool final, struct session_interval *iv)
{
	struct sampler_stats st;
	int ret;

	sampler_poll(s->sampler, 0); /* exits before the drain: into groups */
	/* counters before the drain: read after it, a sample thinned in the
	 * next interval could leave that one more thinned than counted */
	sampler_read_stats(s->sampler, &st);
	ret = sampler_drain(s->sampler, final, session_tap_add, s);
	if (ret < 0)
		log_error("cannot drain the samples: %s", strerror(-ret));
	if (s->plpgsql) /* those in use are sent again after the drain */
		plpgsql_chains_age(s->plpgsql);
	if (!final) {
		int freed = sampler_gc_stacks(s->sampler);

		if (freed > 0)
			log_debug("freed %d stack slots", freed);
	}
	sampler_poll(s->sampler, 0); /* events still queued: snapshots first */
	interval_stats(s, &st, iv);
}

void session_drain_between(struct session *s)
{
	int ret;

	if (!s->sampler)
		return;
	session_drain_early(s); /* the stacks of what is counted now read */
	ret = sampler_gc_stacks(s->sampler);
	if (ret > 0)
		log_debug("freed %d stack slots", ret);
}

int session_flush(struct session *s, bool final, int64_t end_ns, struct session_interval *iv)
{
	return session_flush_from(s, final, end_ns, NULL, NULL, iv);
}

int session_flush_from(struct session *s, bool final, int64_t end_ns, session_drain_fn drain,
		       void *ctx, struct session_interval *iv)
{
	int64_t t0 = mono_ns();
	const void *k;
	void *v;
	int ret;

	memset(iv, 0, sizeof(*iv));
	symreport_clear(&s->iv_symbols);
	iv->symbols = &s->iv_symbols;
	iv->start_ns = s->interval_start_ns;
	iv->end_ns = end_ns;
	dbload_free(s->iv_load);
	s->iv_load = NULL;
	if (s->o.db_load && end_ns > iv->start_ns &&
	    dbload_new(iv->start_ns, end_ns - iv->start_ns, 1, &s->iv_load))
		log_debug("database load: out of memory; not counted this interval");
	s->flush_mono_ns = t0;
	if (s->o.split == SESSION_PER_PROCESS)
		s->groups = session_groups_new(s);
	if (drain) { /* a fed session: its caller's samples */
		ret = drain(session_add_sample, s, ctx);
		if (ret < 0)
			log_error("cannot drain the samples: %s", strerror(-ret));
	} else {
		session_memtrace("flush start");
		drain_sampler(s, final, iv);
	}
	session_drop_file_pages(s);
	session_memtrace("drained");

	if (s->o.split == SESSION_ONE_PROFILE) {
		for (int t = 0; t < PTYPE_N; t++) {
			struct sink_profile rec = { .start_ns = iv->start_ns, .end_ns = end_ns };

			if (!s->one[t])
				continue;
			rec.type = ptype_info(t)->name;
			emit(s, s->one[t], &rec, iv);
			s->one[t] = NULL;
			iv->processes = 1;
			if (!final && session_new_builder(s, t, end_ns, &s->one[t]))
				log_error("cannot start the next profile: out of memory");
		}
	} else {
		for (size_t it = 0; hm_next(s->by_pid, &it, &k, &v);)
			flush_process(s, v, end_ns, iv);
		session_groups_emit(s, iv);
	}
	session_memory_flush(s, end_ns, iv);
	if (s->o.split == SESSION_PER_PROCESS)
		forget_exited(s);
	for (size_t i = 0; i < s->o.nsinks; i++) {
		ret = sink_flush(s->o.sinks[i]);
		if (ret)
			log_warn("%s: cannot flush: %s", sink_name(s->o.sinks[i]), strerror(-ret));
	}
	/* Statements not seen for a few intervals go; the threads that ran
	 * them send them again if they do. */
	if (s->queries && query_table_age(s->queries) && s->sampler)
		sampler_resend_queries(s->sampler);
	if (s->queries)
		query_table_stats(s->queries, &iv->queries);
	session_memtrace("flush end");
	iv->load = s->iv_load;
	iv->flush_ms = (mono_ns() - t0) / 1e6;
	s->interval_start_ns = end_ns;
	s->flushes++;
	s->total.intervals++;
	s->total.written += iv->written;
	s->total.failed += iv->failed;
	s->total.last_flush_ms = iv->flush_ms;
	add_builder_stats(&s->total.built, &iv->built);
	symreport_sort(&s->iv_symbols);
	if (symreport_merge(&s->total_symbols, &s->iv_symbols))
		log_debug("symbolization report: out of memory");
	symreport_sort(&s->total_symbols);
	return 0;
}
