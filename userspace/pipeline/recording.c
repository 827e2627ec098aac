// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ebprof/symbolizer.h"
#include "util/log.h"
#include "process/processes.h"
#include "recording.h"
#include "process/targets.h"
#include "util/timeutil.h"

static const char *const default_comms[] = { "postgres", "postmaster" };

struct state {
	const struct recording_opts *o;
	struct proc_registry *procs;
	unsigned long processes_sampled;
	long live_targets; /* seeded + forked - exited */
};

static void handle_event(const struct ebprof_event *e, void *ctx)
{
	struct state *st = ctx;
	int err;

	switch (e->type) {
	case EVENT_FIRST:
		st->processes_sampled++;
		err = procs_snapshot(st->procs, e->pid, false);
		if (err)
			log_debug("no maps snapshot of pid %u: %s", e->pid, strerror(-err));
		break;
	case EVENT_FORK:
		procs_on_fork(st->procs, e->pid, e->ppid);
		st->live_targets++;
		break;
	case EVENT_EXEC:
		procs_on_exec(st->procs, e->pid);
		break;
	case EVENT_EXIT:
		procs_on_exit(st->procs, e->pid);
		st->live_targets--;
		break;
	}
}

/* Seed the BPF target map; returns the number of targets or -errno. */
static int seed_targets(struct sampler *s, struct state *st, char *err, size_t errlen)
{
	const struct recording_opts *o = st->o;
	struct target_rules rules = { 0 };
	uint32_t *tgids = NULL;
	size_t n = 0;
	int ret;

	for (size_t i = 0; i < o->npids; i++) {
		char path[64];
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (stat(path, &sb)) {
			snprintf(err, errlen, "no such process: %u", o->pids[i]);
			return -ESRCH;
		}
	}
	rules.pids = o->pids;
	rules.npids = o->npids;
	if (o->ncomms) {
		rules.comms = o->comms;
		rules.ncomms = o->ncomms;
	} else if (!o->npids && !o->ncgroups) {
		rules.comms = default_comms;
		rules.ncomms = 2;
	}
	rules.descendants = o->inherit;
	ret = targets_scan(&rules, &tgids, &n);
	for (size_t i = 0; !ret && i < o->ncgroups; i++) {
		uint64_t id;

		ret = targets_cgroup_id(o->cgroups[i], &id);
		if (!ret)
			ret = sampler_add_cgroup(s, id);
		if (!ret)
			ret = targets_cgroup_pids(o->cgroups[i], &tgids, &n);
	}
	if (ret) {
		snprintf(err, errlen, "cannot find the target processes: %s", strerror(-ret));
		free(tgids);
		return ret;
	}
	if (!n) {
		if (o->npids)
			snprintf(err, errlen, "none of the given processes exists any more");
		else
			snprintf(err, errlen,
				 "no target process found: no process named %s; use -p, --comm or "
				 "-a",
				 o->ncomms ? "as given by --comm" : "postgres or postmaster");
		free(tgids);
		return -ESRCH;
	}
	for (size_t i = 0; i < n; i++) {
		ret = sampler_add_target(s, tgids[i]);
		if (ret) {
			snprintf(err, errlen, "cannot add target %u: %s", tgids[i], strerror(-ret));
			free(tgids);
			return ret;
		}
		/* Snapshot now: cheap for a handful of targets, and their
		 * children inherit it even if they exit before we look. */
		procs_snapshot(st->procs, tgids[i], false);
	}
	free(tgids);
	return (int)n;
}

/*
 * Warm the symbolizer while sampling runs: kallsyms and the binaries the
 * targets map (their symbol tables are built on the first lookup), so what
 * is left after sampling is resolving addresses.
 */
static void prewarm_symbols(struct symbolizer *sym, struct proc_registry *procs, bool kernel)
{
	struct proc_info *pi;
	struct sym_frame f[8];

	if (kernel)
		sym_kernel_resolve(sym, 0, f); /* loads kallsyms; the answer does not matter */
	for (size_t it = 0; (pi = procs_next(procs, &it));) {
		for (size_t i = 0; pi->maps && i < pi->maps->n; i++) {
			const struct map_entry *e = &pi->maps->entries[i];
			struct sym_binary bin = { e->path, (int)pi->pid, e->start,
						  e->end,  e->dev,	 e->inode };
			struct sym_elf *elf;

			if (e->kind != MAPPING_FILE || sym_elf_get(sym, &bin, &elf))
				continue;
			sym_elf_resolve(sym, elf, e->offset, f, 8);
			sym_elf_put(sym, elf);
		}
	}
}

/* "3 stacks lost (stack map full), ..." or "" when nothing was lost. */
static void loss_summary(const struct sampler_stats *ss, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = STAT_SAMPLES + 1; i < STAT_MAX; i++) {
		if (!ss->v[i])
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%llu %s", off ? ", " : "",
				(unsigned long long)ss->v[i], sampler_stat_name(i));
	}
}

static bool stop_requested(const struct recording_opts *o)
{
	return o->stop && atomic_load(o->stop);
}

int recording_run(const struct recording_opts *o, struct recording_result *res, char *err,
		  size_t errlen)
{
	struct state st = { .o = o };
	struct sampler_opts sopts = { 0 };
	struct builder_opts bopts = { 0 };
	struct recording_progress pr = { 0 };
	struct symbolizer *sym = NULL;
	struct sampler *s = NULL;
	struct builder *b = NULL;
	double start, last_progress = 0, t_end;
	char line[512];
	int ret;

	memset(res, 0, sizeof(*res));
	ret = procs_new(&st.procs);
	if (!ret)
		ret = sym_new(&(struct sym_opts){ 0 }, &sym);
	if (ret) {
		snprintf(err, errlen, "cannot initialize: %s", strerror(-ret));
		goto out;
	}
	sopts.frequency = o->frequency;
	sopts.all = o->all;
	sopts.kernel = o->kernel;
	sopts.user = o->user;
	sopts.follow_forks = o->inherit;
	if (!o->all && o->ncomms) {
		sopts.comms = o->comms;
		sopts.ncomms = o->ncomms;
	} else if (!o->all && !o->npids && !o->ncgroups) {
		sopts.comms = default_comms;
		sopts.ncomms = 2;
	}
	sopts.btf_path = o->btf_path;
	ret = sampler_open(&sopts, handle_event, &st, &s, err, errlen);
	if (!ret)
		ret = sampler_attach_tracepoints(s, err, errlen);
	if (ret)
		goto out;
	if (!o->all) {
		ret = seed_targets(s, &st, err, errlen);
		if (ret < 0)
			goto out;
		log_info("following %d processes", ret);
		st.live_targets = ret;
	}

	bopts.time_nanos = wall_ns();
	start = mono_ns() / 1e9;
	ret = sampler_start(s, err, errlen);
	if (ret)
		goto out;
	log_info("sampling at %d Hz on %d CPUs%s", o->frequency, sampler_ncpus(s),
		 o->duration_s > 0 ? "" : " until stopped");
	if (o->prewarm)
		prewarm_symbols(sym, st.procs, o->kernel);

	while (!stop_requested(o)) {
		double now = mono_ns() / 1e9;
		double left = o->duration_s > 0 ? o->duration_s - (now - start) : 1.0;
		int timeout = left > 0.1 ? 100 : (int)(left * 1000);

		if (o->duration_s > 0 && left <= 0)
			break;
		if (o->stop_when_gone && st.live_targets <= 0) {
			log_info("all target processes exited");
			break;
		}
		ret = sampler_poll(s, timeout > 0 ? timeout : 0);
		if (ret < 0 && ret != -EINTR) {
			snprintf(err, errlen, "cannot read process events: %s", strerror(-ret));
			goto out;
		}
		if (o->on_progress && now - last_progress >= 0.25) {
			struct sampler_stats ss;

			last_progress = now;
			sampler_read_stats(s, &ss);
			pr.elapsed_s = now - start;
			pr.samples = ss.v[STAT_SAMPLES];
			pr.processes = st.processes_sampled;
			o->on_progress(&pr, o->ctx);
		}
	}
	res->stopped = stop_requested(o);
	sampler_stop(s);
	t_end = mono_ns() / 1e9;
	res->elapsed_s = t_end - start;
	sampler_poll(s, 0); /* events still queued: snapshots before building */
	sampler_read_stats(s, &res->stats);
	res->processes = st.processes_sampled;
	if (o->on_progress) {
		pr.elapsed_s = res->elapsed_s;
		pr.samples = res->stats.v[STAT_SAMPLES];
		pr.processes = st.processes_sampled;
		o->on_progress(&pr, o->ctx);
	}

	bopts.frequency = o->frequency;
	bopts.sym = sym;
	bopts.procs = st.procs;
	ret = builder_new(&bopts, &b);
	if (!ret) {
		ret = sampler_drain(s, true, builder_add, b);
		ret = ret < 0 ? ret : 0;
	}
	if (ret) {
		snprintf(err, errlen, "cannot build the profile: %s", strerror(-ret));
		goto out;
	}
	if (o->comment)
		builder_comment(b, o->comment);
	snprintf(line, sizeof(line), "%d Hz, %.3f s, %llu samples", o->frequency, res->elapsed_s,
		 (unsigned long long)res->stats.v[STAT_SAMPLES]);
	builder_comment(b, line);
	loss_summary(&res->stats, res->lost, sizeof(res->lost));
	if (res->lost[0]) {
		snprintf(line, sizeof(line), "lost: %s", res->lost);
		builder_comment(b, line);
	}
	builder_get_stats(b, &res->built);
	ret = builder_finish(b, (int64_t)llround(res->elapsed_s * 1e9), &res->profile);
	if (ret)
		snprintf(err, errlen, "cannot build the profile: %s", strerror(-ret));
	res->build_ms = (mono_ns() / 1e9 - t_end) * 1000;
out:
	builder_free(b);
	sampler_close(s);
	sym_free(sym);
	procs_free(st.procs);
	return ret;
}
