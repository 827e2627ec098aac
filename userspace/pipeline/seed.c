// SPDX-License-Identifier: BSD-2-Clause
/*
 * The initial target set of a session: a /proc scan by the name, pid and
 * descendant rules, plus the processes of the cgroups, added to the BPF
 * target map (later forks and execs are followed in BPF). Each target's
 * memory map is taken now: cheap for a handful of processes, and their
 * children inherit it even when they exit before anyone looks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "process/targets.h"
#include "session_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

/* The target rules of the session's options. */
struct target_rules session_target_rules(const struct session_opts *o)
{
	return (struct target_rules){ .comms = o->comms,
				      .ncomms = o->ncomms,
				      .pids = o->pids,
				      .npids = o->npids,
				      .cgroups = o->cgroups,
				      .ncgroups = o->ncgroups,
				      .descendants = o->inherit };
}

static int no_targets(const struct session_opts *o, char *err, size_t errlen)
{
	if (o->npids)
		snprintf(err, errlen, "none of the given processes exists any more");
	else
		snprintf(err, errlen,
			 "no target process found: no process named %s; use -p, --comm or -a",
			 o->ncomms ? "as given by --comm" : "postgres or postmaster");
	return -ESRCH;
}

int session_seed(struct session *s, char *err, size_t errlen)
{
	struct sampler_unwind_info ui;
	struct proc_info *pi;
	int64_t t0;
	const struct session_opts *o = &s->o;
	struct target_rules rules = session_target_rules(o);
	const char *const *names = NULL;
	size_t nnames = 0;
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
	for (size_t i = 0; i < o->ncgroups; i++) {
		uint64_t id;

		ret = targets_cgroup_id(o->cgroups[i], &id);
		if (!ret)
			ret = sampler_add_cgroup(s->sampler, id);
		if (ret) {
			snprintf(err, errlen, "cannot follow cgroup %s: %s", o->cgroups[i],
				 strerror(-ret));
			return ret;
		}
	}
	ret = targets_scan(&rules, &tgids, &n);
	if (ret) {
		snprintf(err, errlen, "cannot find the target processes: %s", strerror(-ret));
		return ret;
	}
	if (!n && o->require_targets) {
		free(tgids);
		return no_targets(o, err, errlen);
	}
	t0 = mono_ns();
	for (size_t i = 0; i < n; i++) {
		ret = sampler_add_target(s->sampler, tgids[i]);
		if (ret) {
			snprintf(err, errlen, "cannot add target %u: %s", tgids[i], strerror(-ret));
			free(tgids);
			return ret;
		}
		procs_snapshot(s->procs, tgids[i], false);
		pi = procs_get(s->procs, tgids[i]);
		if (s->pg) /* before its first sample: backends it forks inherit */
			pg_attach_process(s->pg, tgids[i], procs_maps(s->procs, tgids[i]),
					  pi ? pi->exe : NULL);
		session_unwind_process(s, tgids[i]); /* and its unwind tables */
	}
	free(tgids);
	sampler_unwind_info(s->sampler, &ui);
	if (ui.tables.tables)
		log_info("user stacks: %s; unwind tables of the %zu processes ready in %.0f ms "
			 "(%llu tables, %.1f MiB: %llu compiled, %llu from the cache; the start "
			 "took %.0f ms)",
			 ui.mode, n, ui.tables.load_ns / 1e6, (unsigned long long)ui.tables.tables,
			 ui.tables.bytes / 1048576.0, (unsigned long long)ui.tables.built,
			 (unsigned long long)ui.tables.cache_hits, (mono_ns() - t0) / 1e6);
	log_info("following %zu processes now (names %s%s, %zu pids, %zu cgroups)%s", n,
		 nnames ? names[0] : "-", nnames > 1 ? ",..." : "", o->npids, o->ncgroups,
		 o->inherit ? "; new ones are followed as they fork or exec" : "");
	return (int)n;
}

void session_prewarm(struct session *s)
{
	struct proc_info *pi;

	/* Opening a binary asks debuginfod for its debug file when it has
	 * none (in the background); nothing is read or resolved now: the
	 * samples are symbolized as they are drained, and only the binaries
	 * and kernel symbols they need. */
	for (size_t it = 0; (pi = procs_next(s->procs, &it));) {
		for (size_t i = 0; pi->maps && i < pi->maps->n; i++) {
			const struct map_entry *e = &pi->maps->entries[i];
			struct sym_binary bin = map_entry_binary(e, pi->pid);
			struct sym_elf *elf;

			if (e->kind == MAPPING_FILE && !sym_elf_get(s->sym, &bin, &elf))
				sym_elf_put(s->sym, elf);
		}
	}
}
