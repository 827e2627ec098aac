// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's life: configuration -> sampler + sinks -> a loop that
 * delivers process events and, at each interval boundary (aligned to the
 * wall clock), drains the counts into one builder per process, writes the
 * profiles to the sinks and forgets processes that exited. SIGHUP flushes
 * the running interval and restarts with the re-read configuration;
 * SIGTERM/SIGINT flush, let the remotes drain briefly, and exit 0.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "profile/build.h"
#include "util/args.h"
#include "config.h"
#include "ebprof/symbolizer.h"
#include "util/hashmap.h"
#include "http/http.h"
#include "util/log.h"
#include "process/pgmeta.h"
#include "formats/pprof.h"
#include "process/processes.h"
#include "sinks/remote/remote.h"
#include "sampling/sampler.h"
#include "sinks/sink.h"
#include "sinks/store/store.h"
#include "process/targets.h"
#include "util/timeutil.h"
#include "util/version.h"

#define MAX_REMOTES 2
#define REMOTE_DRAIN_S 5.0
#define MAX_LABELS 8

/* Per-process state of the running interval. */
struct agent_proc {
	uint32_t pid;
	struct builder *b; /* NULL until the process has samples */
	struct pg_title pg;
	bool is_pg;
	char build_id[128]; /* of the main executable, "" if unknown */
	bool build_id_done;
};

struct agent_counters {
	uint64_t intervals, profiles_written, profile_errors, samples;
	uint64_t lost[STAT_MAX];
};

/* What /metrics shows: copied under the lock at each flush, so the HTTP
 * threads never touch the agent's own structures. */
struct agent_metrics {
	pthread_mutex_t lock;
	struct agent_counters total;
	uint64_t processes_tracked;
	struct store_stats store;
	bool has_store;
	struct remote_stats remotes[MAX_REMOTES];
	const char *remote_names[MAX_REMOTES];
	size_t nremotes;
	struct sym_stats sym;
	int64_t last_flush_ns;
};

struct agent {
	struct agent_config cfg;
	int argc;
	char **argv;
	struct symbolizer *sym; /* kept across reloads: a warm cache */
	struct proc_registry *procs;
	struct sampler *s;
	struct store *store;
	struct remote *remotes[MAX_REMOTES];
	const char *remote_kinds[MAX_REMOTES];
	size_t nremotes;
	struct hashmap *by_pid; /* pid -> agent_proc */
	uint32_t *forget;	/* exited pids to drop at the next flush */
	size_t nforget;
	int64_t interval_start_ns;
	struct sampler_stats last_stats;
	struct agent_counters total;
	struct http_server *http;
	struct agent_metrics metrics;
};

/* Set by signal handlers, read by the loop. */
static volatile sig_atomic_t stop_requested, reload_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_reload(int sig)
{
	(void)sig;
	reload_requested = 1;
}

static uint64_t hash_pid(const void *k)
{
	return hm_hash_bytes(k, sizeof(uint32_t));
}

static bool equal_pid(const void *a, const void *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b;
}

static struct agent_proc *agent_proc(struct agent *a, uint32_t pid)
{
	struct agent_proc *ap;
	void *v;

	if (!hm_find(a->by_pid, &pid, &v))
		return v;
	ap = calloc(1, sizeof(*ap));
	if (!ap)
		return NULL;
	ap->pid = pid;
	if (hm_set(a->by_pid, &ap->pid, ap, NULL)) {
		free(ap);
		return NULL;
	}
	return ap;
}

static void read_pg_title(struct agent_proc *ap)
{
	struct pg_title t;

	if (!pg_read_title(ap->pid, &t)) {
		ap->pg = t;
		ap->is_pg = true;
	}
}

static void handle_event(const struct ebprof_event *e, void *ctx)
{
	struct agent *a = ctx;
	struct agent_proc *ap;

	switch (e->type) {
	case EVENT_FIRST:
		procs_snapshot(a->procs, e->pid, false);
		ap = agent_proc(a, e->pid);
		if (ap)
			read_pg_title(ap);
		break;
	case EVENT_FORK:
		procs_on_fork(a->procs, e->pid, e->ppid);
		break;
	case EVENT_EXEC:
		procs_on_exec(a->procs, e->pid);
		ap = agent_proc(a, e->pid);
		if (ap) {
			ap->build_id_done = false;
			ap->is_pg = false;
		}
		break;
	case EVENT_EXIT:
		procs_on_exit(a->procs, e->pid);
		break;
	}
}

static int add_sample(const struct raw_sample *s, void *ctx)
{
	struct agent *a = ctx;
	struct agent_proc *ap = agent_proc(a, s->pid);
	struct builder_opts bo = { 0 };
	int err;

	if (!ap)
		return -ENOMEM;
	if (!ap->b) {
		bo.frequency = a->cfg.frequency;
		bo.sym = a->sym;
		bo.procs = a->procs;
		bo.time_nanos = a->interval_start_ns;
		err = builder_new(&bo, &ap->b);
		if (err)
			return err;
	}
	return builder_add(s, ap->b);
}

/* GNU build-id of the process's main executable. */
static void main_build_id(struct agent *a, struct agent_proc *ap, const struct proc_info *pi)
{
	const struct proc_maps *maps = procs_maps(a->procs, ap->pid);
	struct sym_elf *elf;

	if (ap->build_id_done || !pi || !pi->exe || !maps)
		return;
	ap->build_id_done = true;
	for (size_t i = 0; i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct sym_binary bin = {
			e->path, (int)ap->pid, e->start, e->end, e->dev, e->inode
		};

		if (e->kind != MAPPING_FILE || strcmp(e->path, pi->exe))
			continue;
		if (!sym_elf_get(a->sym, &bin, &elf)) {
			snprintf(ap->build_id, sizeof(ap->build_id), "%s", sym_elf_build_id(elf));
			sym_elf_put(a->sym, elf);
		}
		return;
	}
}

/* Finish one process's profile and hand it to every sink. */
static int emit_profile(struct agent *a, struct agent_proc *ap, int64_t end_ns, const char *loss)
{
	struct proc_info *pi = procs_get(a->procs, ap->pid);
	struct profile_record rec = { 0 };
	struct kv labels[MAX_LABELS];
	char pidbuf[16], comment[512];
	struct profile *p = NULL;
	const char *comm;
	uint8_t *buf = NULL;
	size_t len = 0, n = 0;
	int err;

	if (pi && !pi->exited)
		read_pg_title(ap); /* a backend's title is set after its fork */
	main_build_id(a, ap, pi);
	comm = pi && pi->comm[0] ? pi->comm : "unknown";
	snprintf(pidbuf, sizeof(pidbuf), "%u", ap->pid);
	labels[n++] = (struct kv){ "service", a->cfg.service };
	labels[n++] = (struct kv){ "pid", pidbuf };
	labels[n++] = (struct kv){ "comm", comm };
	if (pi && pi->exe)
		labels[n++] = (struct kv){ "exe", pi->exe };
	if (ap->build_id[0])
		labels[n++] = (struct kv){ "build_id", ap->build_id };
	if (ap->is_pg) {
		labels[n++] = (struct kv){ "backend_type", ap->pg.backend_type };
		if (ap->pg.user[0])
			labels[n++] = (struct kv){ "pg_user", ap->pg.user };
		if (ap->pg.database[0])
			labels[n++] = (struct kv){ "pg_database", ap->pg.database };
	}

	snprintf(comment, sizeof(comment), "ebprof %s agent: %d Hz, interval %d s", ebprof_version,
		 a->cfg.frequency, a->cfg.interval);
	builder_comment(ap->b, comment);
	for (size_t i = 0; i < n; i++) {
		snprintf(comment, sizeof(comment), "%s=%s", labels[i].key, labels[i].value);
		builder_comment(ap->b, comment);
	}
	if (loss[0]) {
		snprintf(comment, sizeof(comment), "lost (all processes, this interval): %s", loss);
		builder_comment(ap->b, comment);
	}
	err = builder_finish(ap->b, end_ns - a->interval_start_ns, &p);
	if (!err)
		err = pprof_encode(p, true, &buf, &len);
	profile_free(p);
	if (err)
		return err;

	rec.start_ns = a->interval_start_ns;
	rec.end_ns = end_ns;
	rec.pid = ap->pid;
	rec.service = a->cfg.service;
	rec.comm = comm;
	rec.backend_type = ap->is_pg ? ap->pg.backend_type : NULL;
	rec.labels = labels;
	rec.nlabels = n;
	rec.data = buf;
	rec.len = len;
	if (a->store) {
		err = store_write(a->store, &rec, NULL, 0);
		if (err)
			log_warn("cannot store the profile of pid %u: %s", ap->pid, strerror(-err));
	}
	for (size_t i = 0; i < a->nremotes; i++) {
		int rerr = remote_enqueue(a->remotes[i], &rec);

		if (rerr)
			log_warn("cannot queue the profile of pid %u: %s", ap->pid,
				 strerror(-rerr));
		err = err ? err : rerr;
	}
	free(buf);
	return err;
}

static void update_metrics(struct agent *a, int64_t now_ns)
{
	struct agent_metrics *m = &a->metrics;

	pthread_mutex_lock(&m->lock);
	m->total = a->total;
	m->processes_tracked = procs_count(a->procs);
	m->has_store = a->store != NULL;
	if (a->store)
		store_get_stats(a->store, &m->store);
	m->nremotes = a->nremotes;
	for (size_t i = 0; i < a->nremotes; i++) {
		remote_get_stats(a->remotes[i], &m->remotes[i]);
		m->remote_names[i] = a->remote_kinds[i];
	}
	sym_get_stats(a->sym, &m->sym);
	m->last_flush_ns = now_ns;
	pthread_mutex_unlock(&m->lock);
}

/* The HELP and TYPE lines of one metric (Prometheus text format). */
static void metric_head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One metric without labels. */
static void metric(FILE *out, const char *name, const char *type, const char *help, uint64_t value)
{
	metric_head(out, name, type, help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)value);
}

static int write_metrics(FILE *out, void *ctx)
{
	static const char *const states[] = { "pushed", "queued", "retried", "rejected",
					      "dropped" };
	struct agent_metrics *m = ctx;

	pthread_mutex_lock(&m->lock);
	metric(out, "ebprof_intervals_total", "counter", "Intervals flushed.", m->total.intervals);
	metric(out, "ebprof_samples_total", "counter", "Samples of target processes.",
	       m->total.samples);
	metric(out, "ebprof_profiles_written_total", "counter",
	       "Per-process profiles handed to the sinks.", m->total.profiles_written);
	metric(out, "ebprof_profile_errors_total", "counter",
	       "Profiles that could not be built or stored.", m->total.profile_errors);
	metric(out, "ebprof_processes_tracked", "gauge", "Processes the agent knows now.",
	       m->processes_tracked);
	metric_head(out, "ebprof_last_flush_timestamp_seconds", "gauge",
		    "End of the last interval.");
	fprintf(out, "ebprof_last_flush_timestamp_seconds %.3f\n", m->last_flush_ns / 1e9);
	metric_head(out, "ebprof_lost_total", "counter",
		    "Samples, stacks or events lost, by cause.");
	for (int i = STAT_SAMPLES + 1; i < STAT_MAX; i++)
		fprintf(out, "ebprof_lost_total{cause=\"%s\"} %llu\n", sampler_stat_name(i),
			(unsigned long long)m->total.lost[i]);
	if (m->has_store) {
		metric(out, "ebprof_store_bytes", "gauge", "Bytes of profiles on disk.",
		       m->store.bytes);
		metric(out, "ebprof_store_files", "gauge", "Profiles on disk.", m->store.files);
		metric(out, "ebprof_store_removed_total", "counter",
		       "Profiles removed by retention.", m->store.removed);
		metric(out, "ebprof_store_write_errors_total", "counter", "Failed profile writes.",
		       m->store.write_errors);
	}
	if (m->nremotes)
		metric_head(out, "ebprof_remote_profiles", "gauge",
			    "Remote push, by remote and state.");
	for (size_t i = 0; i < m->nremotes; i++) {
		const struct remote_stats *r = &m->remotes[i];
		const uint64_t v[] = { r->pushed, r->queued, r->retries, r->rejected, r->dropped };

		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
			fprintf(out, "ebprof_remote_profiles{remote=\"%s\",state=\"%s\"} %llu\n",
				m->remote_names[i], states[k], (unsigned long long)v[k]);
	}
	metric(out, "ebprof_symbolizer_cache_bytes", "gauge", "Estimated size of the binary cache.",
	       m->sym.cache_bytes);
	metric(out, "ebprof_symbolizer_binaries", "gauge", "Binaries in the symbolizer cache.",
	       m->sym.binaries_cached);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static void forget_later(struct agent *a, uint32_t pid)
{
	uint32_t *nf = realloc(a->forget, (a->nforget + 1) * sizeof(*nf));

	if (nf) {
		a->forget = nf;
		a->forget[a->nforget++] = pid;
	}
}

static void loss_text(const struct sampler_stats *now, const struct sampler_stats *before,
		      char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = STAT_SAMPLES + 1; i < STAT_MAX; i++) {
		uint64_t d = now->v[i] - before->v[i];

		if (d)
			off += snprintf(buf + off, off < len ? len - off : 0, "%s%llu %s",
					off ? ", " : "", (unsigned long long)d,
					sampler_stat_name(i));
	}
}

/*
 * End the running interval: drain, emit one profile per sampled process,
 * forget processes that exited. final: the sampler is stopped, drain both
 * buffers.
 */
static void flush_interval(struct agent *a, bool final)
{
	struct sampler_stats st;
	uint64_t samples, nprocs = 0, written = 0, errors = 0;
	struct remote_stats rs = { 0 };
	int64_t end_ns = wall_ns();
	char loss[512], when[32];
	const void *k;
	void *v;
	int ret;
	time_t t;

	ret = sampler_drain(a->s, final, add_sample, a);
	if (ret < 0)
		log_error("cannot drain the samples: %s", strerror(-ret));
	if (!final) {
		ret = sampler_gc_stacks(a->s);
		if (ret > 0)
			log_debug("freed %d stack slots", ret);
	}
	sampler_poll(a->s, 0);
	sampler_read_stats(a->s, &st);
	samples = st.v[STAT_SAMPLES] - a->last_stats.v[STAT_SAMPLES];
	loss_text(&st, &a->last_stats, loss, sizeof(loss));
	for (int i = 0; i < STAT_MAX; i++)
		a->total.lost[i] += st.v[i] - a->last_stats.v[i];
	a->last_stats = st;

	for (size_t it = 0; hm_next(a->by_pid, &it, &k, &v);) {
		struct agent_proc *ap = v;

		if (ap->b) {
			nprocs++;
			if (emit_profile(a, ap, end_ns, loss))
				errors++;
			else
				written++;
			builder_free(ap->b);
			ap->b = NULL;
		}
	}
	/* Processes seen exited at the previous flush have had one more
	 * interval for samples counted after the flip (emitted just above)
	 * and for children inheriting their maps: forget them now. */
	for (size_t i = 0; i < a->nforget; i++) {
		if (!hm_remove(a->by_pid, &a->forget[i], &k, &v)) {
			builder_free(((struct agent_proc *)v)->b); /* NULL: emitted */
			free(v);
		}
		procs_remove(a->procs, a->forget[i]);
	}
	a->nforget = 0;
	for (size_t it = 0; hm_next(a->by_pid, &it, &k, &v);)
		if (!procs_get(a->procs, ((struct agent_proc *)v)->pid))
			forget_later(a, ((struct agent_proc *)v)->pid);
	/* Every exited process the registry knows, sampled or not. */
	for (size_t it = 0;;) {
		struct proc_info *pi = procs_next(a->procs, &it);

		if (!pi)
			break;
		if (pi->exited)
			forget_later(a, pi->pid);
	}
	a->total.intervals++;
	a->total.samples += samples;
	a->total.profiles_written += written;
	a->total.profile_errors += errors;
	for (size_t i = 0; i < a->nremotes; i++) {
		struct remote_stats one;

		remote_get_stats(a->remotes[i], &one);
		rs.pushed += one.pushed;
		rs.queued += one.queued;
	}
	update_metrics(a, end_ns);
	t = (time_t)(a->interval_start_ns / 1000000000LL);
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	log_info("interval from %s (%.0f s): %llu processes, %llu samples, %s%s; %llu profiles "
		 "written, %llu failed; remote: %llu pushed, %llu queued",
		 when, (end_ns - a->interval_start_ns) / 1e9, (unsigned long long)nprocs,
		 (unsigned long long)samples, loss[0] ? "lost " : "nothing lost", loss,
		 (unsigned long long)written, (unsigned long long)errors,
		 (unsigned long long)rs.pushed, (unsigned long long)rs.queued);
	a->interval_start_ns = end_ns;
}

/* Seed the target map from /proc, the pid list and the cgroups. */
static int seed_targets(struct agent *a)
{
	struct target_rules rules = { 0 };
	uint32_t *tgids = NULL;
	size_t n = 0;
	int err;

	rules.comms = (const char *const *)a->cfg.comms;
	rules.ncomms = a->cfg.ncomms;
	rules.pids = a->cfg.pids;
	rules.npids = a->cfg.npids;
	rules.descendants = true;
	err = targets_scan(&rules, &tgids, &n);
	if (err) {
		log_error("cannot scan /proc: %s", strerror(-err));
		return err;
	}
	for (size_t i = 0; i < a->cfg.ncgroups; i++) {
		uint64_t id;

		err = targets_cgroup_id(a->cfg.cgroups[i], &id);
		if (!err)
			err = sampler_add_cgroup(a->s, id);
		if (!err)
			err = targets_cgroup_pids(a->cfg.cgroups[i], &tgids, &n);
		if (err) {
			log_error("cannot follow cgroup %s: %s", a->cfg.cgroups[i], strerror(-err));
			free(tgids);
			return err;
		}
	}
	for (size_t i = 0; i < n; i++) {
		err = sampler_add_target(a->s, tgids[i]);
		if (err) {
			log_error("cannot add target %u: %s", tgids[i], strerror(-err));
			break;
		}
		procs_snapshot(a->procs, tgids[i], false);
	}
	log_info("following %zu processes now (names %s%s, %zu pids, %zu cgroups); new ones are "
		 "followed as they fork or exec",
		 n, a->cfg.ncomms ? a->cfg.comms[0] : "-", a->cfg.ncomms > 1 ? ",..." : "",
		 a->cfg.npids, a->cfg.ncgroups);
	free(tgids);
	return err;
}

static int open_sinks(struct agent *a)
{
	const char *urls[MAX_REMOTES] = { a->cfg.push_profefe, a->cfg.push_pyroscope };
	const enum remote_kind kinds[MAX_REMOTES] = { REMOTE_PROFEFE, REMOTE_PYROSCOPE };
	int err;

	if (a->cfg.output_dir && a->cfg.output_dir[0]) {
		struct store_opts so = { a->cfg.output_dir, a->cfg.retention_age,
					 a->cfg.retention_size };

		err = store_open(&so, &a->store);
		if (err) {
			log_error("cannot open the profile directory %s: %s", a->cfg.output_dir,
				  strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; i < MAX_REMOTES; i++) {
		struct remote_opts ro = { 0 };
		char qdir[4096];

		if (!urls[i] || !urls[i][0])
			continue;
		snprintf(qdir, sizeof(qdir), "%s/%s", a->cfg.queue_dir, remote_kind_name(kinds[i]));
		ro.kind = kinds[i];
		ro.url = urls[i];
		ro.queue_dir = qdir;
		ro.queue_max_bytes = a->cfg.queue_size;
		if (kinds[i] == REMOTE_PYROSCOPE) {
			ro.user = a->cfg.pyroscope_user;
			ro.password = a->cfg.pyroscope_password;
			ro.tenant = a->cfg.pyroscope_tenant;
		}
		err = remote_open(&ro, &a->remotes[a->nremotes]);
		if (err) {
			/* No URL here: it may hold credentials (remote.c logs a
			 * redacted one for bad URLs). */
			log_error("cannot start pushing to %s: %s", remote_kind_name(kinds[i]),
				  strerror(-err));
			return err;
		}
		a->remote_kinds[a->nremotes] = remote_kind_name(kinds[i]);
		a->nremotes++;
	}
	return 0;
}

struct close_job {
	struct remote *r;
	double drain_s;
};

static void *close_remote(void *arg)
{
	struct close_job *job = arg;

	remote_close(job->r, job->drain_s);
	return NULL;
}

/* Remotes drain in parallel: shutdown waits drain_s at most, not once
 * per remote (while a remote is down, each would wait the full time). */
static void close_sinks(struct agent *a, double drain_s)
{
	struct close_job jobs[MAX_REMOTES];
	pthread_t threads[MAX_REMOTES];
	bool started[MAX_REMOTES] = { false };

	for (size_t i = 0; i < a->nremotes; i++) {
		jobs[i] = (struct close_job){ a->remotes[i], drain_s };
		started[i] = !pthread_create(&threads[i], NULL, close_remote, &jobs[i]);
		if (!started[i])
			remote_close(a->remotes[i], drain_s);
	}
	for (size_t i = 0; i < a->nremotes; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
	a->nremotes = 0;
	store_close(a->store);
	a->store = NULL;
}

/* Sampler + sinks from a->cfg. Returns 0, or an exit code. */
static int start(struct agent *a)
{
	struct sampler_opts so = { 0 };
	char err[512];
	int ret;

	log_set_level(a->cfg.log_level);
	ret = open_sinks(a);
	if (ret)
		return EXIT_RUNTIME;
	so.frequency = a->cfg.frequency;
	so.kernel = !a->cfg.no_kernel;
	so.user = !a->cfg.no_user;
	so.follow_forks = true;
	so.btf_path = a->cfg.btf;
	so.comms = (const char *const *)a->cfg.comms;
	so.ncomms = a->cfg.ncomms;
	ret = sampler_open(&so, handle_event, a, &a->s, err, sizeof(err));
	if (!ret)
		ret = sampler_attach_tracepoints(a->s, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		return EXIT_RUNTIME;
	}
	if (seed_targets(a))
		return EXIT_RUNTIME;
	memset(&a->last_stats, 0, sizeof(a->last_stats));
	a->interval_start_ns = wall_ns();
	ret = sampler_start(a->s, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		return EXIT_RUNTIME;
	}
	update_metrics(a, 0);
	if (a->cfg.http_listen && a->cfg.http_listen[0]) {
		struct http_opts ho = { 0 };

		ho.listen = a->cfg.http_listen;
		ho.comms = (const char *const *)a->cfg.comms;
		ho.ncomms = a->cfg.ncomms;
		ho.pids = a->cfg.pids;
		ho.npids = a->cfg.npids;
		ho.cgroups = (const char *const *)a->cfg.cgroups;
		ho.ncgroups = a->cfg.ncgroups;
		ho.kernel = !a->cfg.no_kernel;
		ho.user = !a->cfg.no_user;
		ho.btf = a->cfg.btf;
		ho.metrics = write_metrics;
		ho.metrics_ctx = &a->metrics;
		ret = http_start(&ho, &a->http, err, sizeof(err));
		if (ret) {
			log_error("%s", err);
			return EXIT_RUNTIME;
		}
	}
	log_info("sampling at %d Hz on %d CPUs, a profile per process every %d s%s%s%s%s",
		 a->cfg.frequency, sampler_ncpus(a->s), a->cfg.interval, a->store ? " into " : "",
		 a->store ? a->cfg.output_dir : "", a->cfg.push_profefe ? ", profefe" : "",
		 a->cfg.push_pyroscope ? ", pyroscope" : "");
	return 0;
}

/* Stop sampling, flush what was counted, close the sinks. */
static void stop(struct agent *a, double drain_s)
{
	if (a->http) /* a running ad hoc profile answers with what it has */
		http_stop(a->http);
	a->http = NULL;
	if (a->s) {
		sampler_stop(a->s);
		flush_interval(a, true);
		sampler_close(a->s);
		a->s = NULL;
	}
	close_sinks(a, drain_s);
}

static int64_t next_boundary(int64_t now_ns, int interval)
{
	int64_t step = (int64_t)interval * 1000000000LL;

	return (now_ns / step + 1) * step;
}

/* SIGHUP: re-read; on error keep running as before. */
static int reload(struct agent *a)
{
	struct agent_config fresh;
	char err[512];
	int ret;

	ret = config_defaults(&fresh);
	if (!ret)
		ret = config_parse_args(&fresh, a->argc, a->argv, err, sizeof(err));
	if (ret) {
		log_error("configuration not reloaded: %s", ret == -ENOMEM ? "out of memory" : err);
		config_free(&fresh);
		return 0;
	}
	log_info("reloading the configuration");
	stop(a, 1.0); /* flushes the running interval: nothing is lost */
	config_free(&a->cfg);
	a->cfg = fresh;
	return start(a);
}

int agent_main(int argc, char **argv)
{
	struct agent a = { .argc = argc,
			   .argv = argv,
			   .metrics = { .lock = PTHREAD_MUTEX_INITIALIZER } };
	struct sigaction sa = { 0 };
	char err[512];
	int64_t boundary;
	int rc, ret;

	ret = config_defaults(&a.cfg);
	if (ret) {
		log_error("out of memory");
		return EXIT_RUNTIME;
	}
	ret = config_parse_args(&a.cfg, argc, argv, err, sizeof(err));
	if (ret) {
		if (ret != 1)
			log_error("%s", err);
		config_free(&a.cfg);
		return ret == 1 ? EXIT_OK : EXIT_USAGE;
	}
	a.by_pid = hm_new(hash_pid, equal_pid);
	ret = a.by_pid ? procs_new(&a.procs) : -ENOMEM;
	if (!ret)
		ret = sym_new(&(struct sym_opts){ 0 }, &a.sym);
	if (ret) {
		log_error("cannot initialize: %s", strerror(-ret));
		rc = EXIT_RUNTIME;
		goto out;
	}
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_reload;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = start(&a);
	if (rc)
		goto out;
	boundary = next_boundary(wall_ns(), a.cfg.interval);
	while (!stop_requested) {
		int64_t now;

		ret = sampler_poll(a.s, 200);
		if (ret < 0 && ret != -EINTR) {
			log_error("cannot read process events: %s", strerror(-ret));
			rc = EXIT_RUNTIME;
			break;
		}
		if (reload_requested) {
			reload_requested = 0;
			rc = reload(&a);
			if (rc)
				break;
			boundary = next_boundary(wall_ns(), a.cfg.interval);
		}
		now = wall_ns();
		if (now >= boundary) {
			flush_interval(&a, false);
			boundary = next_boundary(now, a.cfg.interval);
		} else if (boundary - now > 2LL * a.cfg.interval * 1000000000LL) {
			boundary = next_boundary(now, a.cfg.interval); /* clock stepped back */
		}
	}
	if (stop_requested)
		log_info("stopping: flushing the last interval");
	stop(&a, REMOTE_DRAIN_S);
	if (stop_requested && !rc)
		rc = EXIT_OK;
out:
	if (a.s) {
		sampler_close(a.s);
		a.s = NULL;
	}
	close_sinks(&a, 0);
	if (a.by_pid) {
		const void *k;
		void *v;

		for (size_t it = 0; hm_next(a.by_pid, &it, &k, &v);) {
			builder_free(((struct agent_proc *)v)->b);
			free(v);
		}
		hm_free(a.by_pid);
	}
	free(a.forget);
	procs_free(a.procs);
	sym_free(a.sym);
	config_free(&a.cfg);
	return rc;
}
