// SPDX-License-Identifier: BSD-2-Clause
/*
 * A session's life (session.h): open the sampler and seed the targets,
 * follow process events, run until told to end with a flush at each
 * interval boundary (aligned to the wall clock), finish with the last one.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/targets.h"
#include "sampling/map_sizes.h"
#include "session_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

#define PROGRESS_NS (NSEC_PER_SEC / 4)
/* A recording's samples are drained and symbolized as they come, every
 * second, so that little is left to do when it ends. */
#define EARLY_DRAIN_NS NSEC_PER_SEC
/* Drains between the flushes of a session of one interval: the maps are
 * sized for this long (open_sampler(), map_sizes.h). */
#define DRAIN_NS (MAP_SIZES_DEFAULT_INTERVAL_S * NSEC_PER_SEC)

/* Its mappings and their unwind tables to the BPF program (DWARF); the
 * first time since its fork or exec, how long that took. */
void session_unwind_process(struct session *s, uint32_t pid)
{
	const struct proc_maps *maps = procs_maps(s->procs, pid);
	struct proc_info *pi = procs_get(s->procs, pid);
	int err;

	if (!maps)
		return;
	err = sampler_unwind_process(s->sampler, pid, maps, pi && pi->execd);
	if (err) {
		log_debug("no unwind tables for pid %u: %s", pid, strerror(-err));
		return;
	}
	if (pi && pi->image_ns && !pi->ready_ns) {
		pi->ready_ns = (uint64_t)mono_ns();
		log_debug("pid %u: mappings and unwind tables ready %.1f ms after its %s", pid,
			  (pi->ready_ns - pi->image_ns) / 1e6, pi->execd ? "exec" : "fork");
	}
}

/*
 * A forked process sampled first that runs its parent's code as the fork
 * left it: no snapshot of its own (it mapped no code since: its maps are
 * an ancestor's, procs_on_sampled()), not exec'd, and the unwind set the
 * BPF program copied at its fork still its entry (held since the fork:
 * sampler_unwind_inherit()). Loading its maps again would give the same
 * set, and its PostgreSQL addresses are its parent's (pg_attach_on_fork()):
 * under connection churn that was a sixth of the agent's CPU.
 */
static bool as_forked(struct session *s, uint32_t pid)
{
	struct proc_info *pi = procs_get(s->procs, pid);

	if (!pi || pi->maps || pi->execd || !procs_maps(s->procs, pid) ||
	    !sampler_unwind_inherited(s->sampler, pid, pi->gone))
		return false;
	if (pi->image_ns && !pi->ready_ns)
		pi->ready_ns = (uint64_t)mono_ns();
	log_debug("pid %u: its parent's code, on the unwind set its fork copied", pid);
	return true;
}

/* A forked process whose layout nobody has read: its parent's maps now,
 * and the parent's set to the BPF program (its next children inherit it
 * at their fork). */
static void read_parent(struct session *s, uint32_t pid)
{
	uint32_t ppid = procs_unread_parent(s->procs, pid);

	if (ppid && !procs_snapshot(s->procs, ppid, false))
		session_unwind_process(s, ppid);
}

/* What the read-ahead thread took of e's process's maps for e: its
 * snapshot when its own read (err) failed, the process gone; else dropped. */
static void take_read_ahead(struct session *s, const struct ebprof_event *e, int err)
{
	struct proc_maps *maps;
	char *exe;

	maps = sampler_prefetched(s->sampler, e->pid, e->ktime_ns, &exe);
	if (!maps)
		return;
	if (!err) {
		procmaps_free(maps);
		free(exe);
	} else if (!procs_adopt_snapshot(s->procs, e->pid, maps, exe)) {
		log_debug("pid %u gone before its maps were read here: its maps read ahead",
			  e->pid);
	}
}

static void handle_event(const struct ebprof_event *e, void *ctx)
{
	struct session *s = ctx;
	struct session_proc *sp;
	struct proc_info *pi;
	bool forked;
	int err;

	switch (e->type) {
	case EVENT_FIRST: /* its first sample */
		s->processes_sampled++;
		read_parent(s, e->pid);
		err = procs_on_sampled(s->procs, e->pid, e->exec_pages);
		take_read_ahead(s, e, err);
		if (err && !procs_maps(s->procs, e->pid))
			log_debug("no maps snapshot of pid %u: %s", e->pid, strerror(-err));
		/* unwound by frame pointers until then: before anything else
		 * (a fork running its parent's code has its parent's set) */
		forked = as_forked(s, e->pid);
		if (!forked)
			session_unwind_process(s, e->pid);
		/* not forked from a known process: is it PostgreSQL? */
		pi = procs_get(s->procs, e->pid);
		if (s->pg && !pg_attach_known(s->pg, e->pid))
			pg_attach_process(s->pg, e->pid, procs_maps(s->procs, e->pid),
					  pi ? pi->exe : NULL);
		else if (s->pg &&
			 !forked) /* plpgsql.so loaded since it was looked at, or forked? */
			pg_attach_maps_changed(s->pg, e->pid, procs_maps(s->procs, e->pid));
		if (pi && !pi->comm[0]) /* its parent unknown, /proc not read */
			snprintf(pi->comm, sizeof(pi->comm), "%.*s", (int)sizeof(e->comm), e->comm);
		break;
	case EVENT_MAPS: /* a library loaded since */
		err = procs_on_maps_changed(s->procs, e->pid);
		take_read_ahead(s, e, err);
		if (err) {
			log_debug("no new maps snapshot of pid %u: %s", e->pid, strerror(-err));
			break;
		}
		session_unwind_process(s, e->pid);
		if (s->pg) /* plpgsql.so, maybe */
			pg_attach_maps_changed(s->pg, e->pid, procs_maps(s->procs, e->pid));
		break;
	case EVENT_TITLE: { /* at its first sample, changed, or at its exit */
		const struct ebprof_title *t = (const struct ebprof_title *)e;

		if ((sp = session_proc(s, e->pid)))
			session_parse_title(s, sp, t->title,
					    t->len < sizeof(t->title) ? t->len : sizeof(t->title));
		break;
	}
	case EVENT_QUERY: {
		const struct ebprof_query *q = (const struct ebprof_query *)e;

		if (s->queries)
			query_table_add(s->queries, q->hash, q->text,
					q->len < sizeof(q->text) ? q->len : sizeof(q->text) - 1,
					q->truncated);
		break;
	}
	case EVENT_PLPGSQL: { /* its n levels are there (the sampler checked) */
		const struct ebprof_plpgsql *pl = (const struct ebprof_plpgsql *)e;
		size_t size = offsetof(struct ebprof_plpgsql, level) + pl->n * sizeof(pl->level[0]);
		struct plpgsql_cframes fr; /* now: it may be gone at the drain */
		bool known = s->pg && !pg_attach_plpgsql(s->pg, e->pid, &fr);

		if (s->plpgsql &&
		    (err = plpgsql_chains_add(s->plpgsql, pl, size, known ? &fr : NULL)))
			log_debug("a PL/pgSQL chain of pid %u refused: %s", e->pid, strerror(-err));
		break;
	}
	case EVENT_FORK:
		if (s->pg)
			pg_attach_on_fork(s->pg, e->pid, e->ppid);
		procs_on_fork(s->procs, e->pid, e->ppid, e->ktime_ns);
		s->live_targets++;
		/* the set the BPF program copied: held from now on */
		if (!(e->flags & EVENT_F_UNREADY))
			sampler_unwind_inherit(s->sampler, e->pid, e->ppid, e->ktime_ns);
		/* its parent has no tables: its maps and set now, so that its
		 * next children inherit them, and this child's (refused when
		 * it exec'd since: unwind_tables_load()) */
		if (e->flags & EVENT_F_UNREADY) {
			read_parent(s, e->pid);
			session_unwind_process(s, e->pid);
		}
		break;
	case EVENT_EXEC:
		if (s->pg)
			pg_attach_forget(s->pg, e->pid);
		if (!s->pg_targets && !s->pg_late_said &&
		    targets_name_matches(e->comm, NULL, targets_default_comms,
					 TARGETS_NDEFAULT_COMMS)) {
			log_info("pid %u runs %.*s now: this session started without PostgreSQL "
				 "targets, its statements and PL/pgSQL frames are not read",
				 e->pid, (int)sizeof(e->comm), e->comm);
			s->pg_late_said = true;
		}
		procs_on_exec(s->procs, e->pid, e->ktime_ns);
		if ((sp = session_proc(s, e->pid))) {
			sp->build_id_done = false;
			sp->is_pg = false;
		}
		break;
	case EVENT_EXIT:
		if (s->pg)
			pg_attach_forget(s->pg, e->pid);
		procs_on_exit(s->procs, e->pid, e->ktime_ns);
		sampler_unwind_forget(s->sampler, e->pid);
		s->live_targets--;
		break;
	}
}

static int64_t next_boundary(int64_t now_ns, int interval_s)
{
	int64_t step = (int64_t)interval_s * NSEC_PER_SEC;

	return (now_ns / step + 1) * step;
}

static int open_sampler(struct session *s, char *err, size_t errlen)
{
	const struct session_opts *o = &s->o;
	struct sampler_opts so = { 0 };

	so.frequency = o->frequency;
	so.interval_s = o->interval_s;
	so.types = o->types;
	so.offcpu_min_ns = o->offcpu_min_ns;
	so.offcpu_pct = o->offcpu_pct;
	so.offcpu_period_ns = o->offcpu_period_ns;
	so.offcpu_path = o->offcpu_path;
	so.offcpu_rate = o->offcpu_rate;
	so.faults_period = o->faults_period;
	so.all = o->all;
	so.kernel = o->kernel;
	so.user = o->user;
	so.follow_forks = o->inherit;
	so.queries = s->pg_targets && o->query_labels != QUERY_LABELS_OFF;
	so.plpgsql = s->pg_targets && !o->no_plpgsql;
	so.btf_path = o->btf_path;
	so.unwind = o->unwind;
	so.unwind_budget = o->unwind_budget;
	so.unwind_cache_dir = o->unwind_cache_dir;
	/* exec of a process with one of these names makes it a target */
	if (!o->all) {
		struct target_rules rules = session_target_rules(o);

		targets_names(&rules, &so.comms, &so.ncomms);
	}
	return sampler_open(&so, handle_event, s, &s->sampler, err, errlen);
}

int session_init(struct session *s, const struct session_opts *o)
{
	int ret;

	s->o = *o;
	if (!s->o.types) /* the default, said once */
		s->o.types = PTYPE_BIT(PTYPE_CPU);
	if (!s->o.faults_period)
		s->o.faults_period = SAMPLER_FAULTS_PERIOD;
	s->page_size = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	s->sym = o->sym;
	ret = procs_new(&s->procs);
	if (!ret && !s->sym) {
		ret = sym_new(&(struct sym_opts){ 0 }, &s->sym);
		s->own_sym = !ret;
	}
	if (!ret) /* titles in any case; a profile per process too */
		ret = (s->by_pid = hm_new(hm_hash_u32, hm_equal_u32)) ? 0 : -ENOMEM;
	return ret;
}

int session_start_clock(struct session *s)
{
	int ret = 0;

	s->interval_start_ns = wall_ns();
	s->start_mono_ns = mono_ns();
	s->interval_start_mono_ns = s->start_mono_ns;
	/* the profiles of raw samples (those the pipeline makes at an
	 * interval's end, PTYPE_FROM_PIPELINE, need no builder) */
	for (int t = 0; !ret && s->o.split == SESSION_ONE_PROFILE && t < PTYPE_N; t++)
		if (session_takes(s, t) && ptype_info(t)->source == PTYPE_FROM_BPF)
			ret = session_new_builder(s, t, s->interval_start_ns, &s->one[t]);
	return ret;
}

int session_open(const struct session_opts *o, struct session **out, char *err, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	const char *why;
	int ret;

	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "cannot initialize: out of memory");
		return -ENOMEM;
	}
	ret = session_init(s, o);
	if (ret) {
		snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
		goto fail;
	}
	s->pg_targets = session_pg_targets(s, &why);
	log_info("statements and PL/pgSQL frames: %s (%s)",
		 s->pg_targets ? "read" : "not read, their readers not loaded", why);
	ret = open_sampler(s, err, errlen); /* says why in err */
	if (ret)
		goto fail;
	ret = session_taps_new(s);
	if (ret) {
		snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
		goto fail;
	}
	if (s->pg_targets && o->query_labels != QUERY_LABELS_OFF)
		ret = query_table_new(&s->queries);
	if (!ret && s->pg_targets && !o->no_plpgsql)
		ret = plpgsql_chains_new(&s->plpgsql);
	/* which processes are PostgreSQL: statements, memory contexts and
	 * PL/pgSQL frames */
	if (!ret && (s->queries || s->plpgsql || session_takes(s, PTYPE_MEMORY)))
		ret = pg_attach_new(s->sampler, s->sym, s->plpgsql != NULL, &s->pg);
	if (ret)
		snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
	if (!ret)
		ret = session_memory_open(s, err, errlen);
	if (!ret)
		ret = sampler_attach_tracepoints(s->sampler, err, errlen);
	if (ret)
		goto fail;
	if (!o->all) {
		ret = session_seed(s, err, errlen);
		if (ret < 0)
			goto fail;
		s->live_targets = ret;
	}
	ret = session_start_clock(s);
	if (ret) {
		snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
		goto fail;
	}
	if (o->split == SESSION_PER_PROCESS && o->interval_s > 0)
		s->boundary_mono_ns = s->start_mono_ns +
				      next_boundary(s->interval_start_ns, o->interval_s) -
				      s->interval_start_ns;
	else /* one interval: drained as often as its maps are sized for */
		s->drain_mono_ns = s->start_mono_ns + DRAIN_NS;
	ret = sampler_start(s->sampler, err, errlen);
	if (ret)
		goto fail;
	s->early_mono_ns = mono_ns() + EARLY_DRAIN_NS;
	if (o->prewarm) {
		session_prewarm(s);
		session_drop_file_pages(s);
	}
	*out = s;
	return 0;
fail:
	session_close(s);
	return ret;
}

uint64_t session_samples(const struct session *s, const uint64_t *stats)
{
	uint64_t n = 0;

	for (int t = 0; t < PTYPE_N; t++)
		if (session_takes(s, t) && sampler_type_stat(t) >= 0)
			n += stats[sampler_type_stat(t)];
	return n;
}

static bool stop_set(const struct session_run_opts *r)
{
	return r->stop && atomic_load(r->stop);
}

static void progress(struct session *s, const struct session_run_opts *r)
{
	struct session_progress p = { 0 };
	struct sampler_stats st;

	sampler_read_stats(s->sampler, &st);
	p.elapsed_s = ((s->stopped ? s->stop_mono_ns : mono_ns()) - s->start_mono_ns) / 1e9;
	p.samples = session_samples(s, st.v);
	p.processes = s->processes_sampled;
	r->on_progress(&p, r->ctx);
}

/*
 * The wall-clock end of the running interval: its start plus the time
 * that really passed (CLOCK_MONOTONIC), so a profile's duration is the
 * time it covers even when the wall clock was stepped meanwhile.
 */
static int64_t interval_end(const struct session *s, int64_t mono)
{
	return s->interval_start_ns + (mono - s->interval_start_mono_ns);
}

/*
 * Flush at the interval boundary, if it has come. Boundaries are aligned
 * to the wall clock (profiles of several hosts line up) but waited for on
 * CLOCK_MONOTONIC; after a flush the next interval takes the wall clock's
 * time again, so after a step names follow the new time at once. A step
 * is the wall clock against the monotonic one read at the same moment:
 * the time the flush itself took (a cold symbol cache, a slow disk, a
 * sanitized build) is no step, and the next interval starts where this
 * one ended.
 */
static void maybe_flush(struct session *s, const struct session_run_opts *r)
{
	struct session_interval iv;
	int64_t mono = mono_ns(), end, step;

	if (!s->boundary_mono_ns || mono < s->boundary_mono_ns)
		return;
	end = interval_end(s, mono);
	session_flush(s, false, end, &iv);
	if (r->on_interval)
		r->on_interval(&iv, r->ctx);
	/* the wall clock now, against end plus the time passed since */
	step = wall_ns() - end;
	step -= mono_ns() - mono;
	if (llabs(step) > NSEC_PER_SEC) {
		log_info("the wall clock was stepped by %+.1f s; intervals go on, named after "
			 "the new time",
			 step / 1e9);
		s->interval_start_ns = end + step;
	}
	s->interval_start_mono_ns = mono;
	s->boundary_mono_ns =
		mono + next_boundary(s->interval_start_ns, s->o.interval_s) - s->interval_start_ns;
}

/* Not in a recording's last second: a drain that ran past the end
 * (symbolizing on a loaded host) made a 2-s profile 2.9 s long; the end's
 * flush takes those samples on time. */
static bool drain_in_time(const struct session *s, const struct session_run_opts *r)
{
	return r->duration_s <= 0 ||
	       s->start_mono_ns + (int64_t)(r->duration_s * NSEC_PER_SEC) - mono_ns() >
		       EARLY_DRAIN_NS;
}

int session_run(struct session *s, const struct session_run_opts *r, enum session_end *end,
		char *err, size_t errlen)
{
	int64_t last_progress = 0, tap_ms;
	enum session_end why;
	int ret;

	for (;;) {
		int64_t now = mono_ns(), poll_ns = sampler_poll_ms(s->sampler) * 1000000LL;
		int64_t left =
			r->duration_s > 0
				? s->start_mono_ns + (int64_t)(r->duration_s * NSEC_PER_SEC) - now
				: poll_ns;

		if (stop_set(r)) {
			why = SESSION_STOPPED;
			break;
		}
		if (r->duration_s > 0 && left <= 0) {
			why = SESSION_DURATION;
			break;
		}
		if (r->stop_when_gone && s->live_targets <= 0) {
			log_info("all target processes exited");
			why = SESSION_GONE;
			break;
		}
		tap_ms = session_taps_tick(s);
		if (tap_ms >= 0 && tap_ms * 1000000LL < left)
			left = tap_ms * 1000000LL;
		/* a quiet host is polled seldom (sampler_poll_ms()), but the
		 * interval still ends on its boundary */
		if (s->boundary_mono_ns && s->boundary_mono_ns - now < left)
			left = s->boundary_mono_ns - now > 1000000 ? s->boundary_mono_ns - now
								   : 1000000;
		ret = sampler_poll(s->sampler, left > poll_ns ? (int)(poll_ns / 1000000)
							      : (int)(left / 1000000));
		if (ret < 0 && ret != -EINTR) {
			snprintf(err, errlen, "cannot read process events: %s", strerror(-ret));
			return ret;
		}
		if (r->on_progress && now - last_progress >= PROGRESS_NS) {
			last_progress = now;
			progress(s, r);
		}
		session_memory_tick(s);
		maybe_flush(s, r);
		if (s->o.split == SESSION_ONE_PROFILE && mono_ns() >= s->early_mono_ns) {
			if (drain_in_time(s, r))
				session_drain_counts(s);
			s->early_mono_ns = mono_ns() + EARLY_DRAIN_NS;
		}
		if (s->drain_mono_ns && mono_ns() >= s->drain_mono_ns) {
			if (drain_in_time(s, r))
				session_drain_between(s);
			s->drain_mono_ns = mono_ns() + DRAIN_NS;
		}
	}
	if (end)
		*end = why;
	return 0;
}

int session_finish(struct session *s, const struct session_run_opts *r)
{
	struct session_interval iv;
	int64_t end_ns;
	int ret;

	if (s->stopped)
		return 0;
	sampler_stop(s->sampler);
	s->stopped = true;
	s->stop_mono_ns = mono_ns();
	end_ns = interval_end(s, s->stop_mono_ns);
	if (r && r->on_progress)
		progress(s, r);
	ret = session_flush(s, true, end_ns, &iv);
	session_taps_end(s, false); /* with the samples that flush took */
	if (r && r->on_interval)
		r->on_interval(&iv, r->ctx);
	return ret;
}

void session_get_stats(const struct session *s, struct session_stats *out)
{
	*out = s->total;
	out->elapsed_s = ((s->stopped ? s->stop_mono_ns : mono_ns()) - s->start_mono_ns) / 1e9;
	out->processes = s->processes_sampled;
	sampler_read_stats(s->sampler, &out->bpf);
	sampler_loss_text(out->bpf.v, out->lost_text, sizeof(out->lost_text));
	out->symbols = &s->total_symbols;
	sampler_unwind_info(s->sampler, &out->unwind);
	sampler_offcpu_info(s->sampler, &out->offcpu);
	if (s->mem)
		memsnap_get_stats(s->mem, &out->memory);
	out->memory_oom = s->mem_oom;
}

size_t session_nprocs(const struct session *s)
{
	return procs_count(s->procs);
}

int session_ncpus(const struct session *s)
{
	return sampler_ncpus(s->sampler);
}

void session_close(struct session *s)
{
	const void *k;
	void *v;

	if (!s)
		return;
	session_taps_free(s);		  /* first: a running tap uses all the rest */
	for (int t = 0; t < PTYPE_N; t++) /* before the symbolizer they pin binaries in */
		builder_free(s->one[t]);
	for (size_t it = 0; s->by_pid && hm_next(s->by_pid, &it, &k, &v);) {
		for (int t = 0; t < PTYPE_N; t++)
			builder_free(((struct session_proc *)v)->b[t]);
		free(v);
	}
	hm_free(s->by_pid);
	pg_attach_free(s->pg); /* before the symbolizer it pins binaries in */
	query_table_free(s->queries);
	plpgsql_chains_free(s->plpgsql);
	sampler_close(s->sampler);
	session_memory_close(s); /* after the sampler, whose poll calls its watch */
	free(s->forget);
	procs_free(s->procs);
	if (s->own_sym)
		sym_free(s->sym);
	symreport_clear(&s->iv_symbols);
	symreport_clear(&s->total_symbols);
	dbload_free(s->iv_load);
	free(s);
}
