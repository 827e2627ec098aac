// SPDX-License-Identifier: BSD-2-Clause
/*
 * The process/ layer (ARCHITECTURE.md): what the profiler knows of the
 * processes it samples, from /proc: this registry (name, executable, the
 * executable mappings of each process, kept after it exits so its samples
 * still symbolize), the initial target set (targets.c), /proc/PID/maps
 * (procmaps.c) and PostgreSQL's process titles (pgmeta.c). It uses util/
 * only: no BPF, no symbolizer, no profiles.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "jitsyms.h"
#include "processes.h"

struct proc_registry {
	struct hashmap *by_pid; /* &proc_info.pid (as uint32) -> proc_info */
	size_t jit_bytes;	/* JIT tables of every process, against PROCS_JIT_BUDGET */
};

/* What procs_jit_name() knows of a process's JIT code. */
struct jit_cache {
	struct jit_syms *js; /* last table read, NULL if none */
	uint64_t stamp;	     /* jitsyms_stamp() of the files js was read from */
	uint64_t checked_ns; /* last look at the files (CLOCK_MONOTONIC), 0: never */
	bool gone;	     /* the process was found gone: nothing more to read */
	size_t bytes;	     /* js's size, counted in *total */
	size_t *total;	     /* the registry's jit_bytes */
};

static void jit_cache_free(struct jit_cache *jc)
{
	if (jc) {
		*jc->total -= jc->bytes;
		jitsyms_free(jc->js);
	}
	free(jc);
}

static struct jit_cache *jit_cache_new(struct proc_registry *reg)
{
	struct jit_cache *jc = calloc(1, sizeof(*jc));

	if (jc)
		jc->total = &reg->jit_bytes;
	return jc;
}

int procs_new(struct proc_registry **out)
{
	struct proc_registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return -ENOMEM;
	reg->by_pid = hm_new(hm_hash_u32, hm_equal_u32);
	if (!reg->by_pid) {
		free(reg);
		return -ENOMEM;
	}
	*out = reg;
	return 0;
}

static void proc_info_free(struct proc_info *pi)
{
	free(pi->exe);
	procmaps_free(pi->maps);
	jit_cache_free(pi->jit);
	free(pi);
}

void procs_free(struct proc_registry *reg)
{
	const void *k;
	void *v;

	if (!reg)
		return;
	for (size_t it = 0; hm_next(reg->by_pid, &it, &k, &v);)
		proc_info_free(v);
	hm_free(reg->by_pid);
	free(reg);
}

struct proc_info *procs_get(struct proc_registry *reg, uint32_t pid)
{
	void *v;

	return hm_find(reg->by_pid, &pid, &v) ? NULL : v;
}

struct proc_info *procs_add(struct proc_registry *reg, uint32_t pid)
{
	_Static_assert(offsetof(struct proc_info, pid) == 0, "the key comes first");
	return hm_find_or_new(reg->by_pid, &pid, sizeof(pid), sizeof(struct proc_info));
}

int proc_read_comm(uint32_t pid, char *buf, size_t size)
{
	char path[64];
	size_t n;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	err = read_small_file(path, buf, size, &n);
	if (err)
		return err;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

int proc_read_exe(uint32_t pid, char **out)
{
	static const char suffix[] = " (deleted)";
	char path[64], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	if ((size_t)n > sizeof(suffix) - 1 && !strcmp(target + n - (sizeof(suffix) - 1), suffix))
		target[n - (sizeof(suffix) - 1)] = '\0';
	*out = strdup(target);
	return *out ? 0 : -ENOMEM;
}

/* Numeric field `field` (1-based, 4 or more: after comm and state) of
 * /proc/PID/stat. */
static int stat_field(uint32_t pid, int field, uint64_t *out)
{
	char path[64], buf[1024], *p;
	size_t n;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	err = read_small_file(path, buf, sizeof(buf), &n);
	if (err)
		return err;
	if (!n)
		return -ESRCH;
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	for (int f = 3; p && f <= field; f++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %" SCNu64, out) != 1)
		return -EINVAL;
	return 0;
}

int proc_read_ppid(uint32_t pid, uint32_t *ppid)
{
	uint64_t v;
	int err = stat_field(pid, 4, &v);

	if (!err)
		*ppid = (uint32_t)v;
	return err;
}

int proc_read_start_code(uint32_t pid, uint64_t *start)
{
	return stat_field(pid, 26, start); /* startcode */
}

int proc_read_exec_pages(uint32_t pid, uint64_t *pages)
{
	char path[64], buf[4096], *p;
	unsigned long long exe = 0, lib = 0;
	long page_kb = sysconf(_SC_PAGESIZE) / 1024;
	size_t n;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	err = read_small_file(path, buf, sizeof(buf), &n);
	if (err)
		return err;
	p = strstr(buf, "\nVmExe:");
	if (!p || sscanf(p, "\nVmExe: %llu", &exe) != 1)
		return -ENODATA; /* a kernel thread, or a zombie */
	p = strstr(buf, "\nVmLib:");
	if (!p || sscanf(p, "\nVmLib: %llu", &lib) != 1)
		return -ENODATA;
	*pages = (exe + lib) / (page_kb > 0 ? (unsigned long long)page_kb : 4);
	return 0;
}

static void jit_cache_refresh(struct jit_cache *jc, uint32_t pid);

/* JIT code (new code was mapped, or a perf map is there): read its names
 * while the process runs; a parallel worker, a short-lived process are gone
 * by the time their profile is built. maps: its fresh snapshot, or NULL. */
static void jit_check(struct proc_registry *reg, struct proc_info *pi, const struct proc_maps *maps)
{
	int look;

	if (!pi->jit && !(maps && jitsyms_mapped(maps))) {
		/* a short-lived process is often gone by its first sample's
		 * event: that look says so (procs_gone()) */
		look = jitsyms_perfmap_look(pi->pid);
		pi->gone = look == -ESRCH;
		if (look <= 0)
			return;
	}
	if (!pi->jit && !(pi->jit = jit_cache_new(reg)))
		return;
	pi->jit->checked_ns = (uint64_t)mono_ns();
	jit_cache_refresh(pi->jit, pi->pid);
}

int procs_snapshot(struct proc_registry *reg, uint32_t pid, bool force)
{
	struct proc_info *pi = procs_add(reg, pid);
	struct proc_maps *maps;
	char *exe = NULL;
	int err;

	if (!pi)
		return -ENOMEM;
	if (pi->maps && !force)
		return 0;
	err = procmaps_read((int)pid, true, &maps);
	if (err) {
		pi->snapshot_err = err;
		return err;
	}
	procmaps_free(pi->maps);
	pi->maps = maps;
	pi->snapshot_err = 0;
	jit_check(reg, pi, maps);
	pi->exec_pages = 0;
	proc_read_exec_pages(pid, &pi->exec_pages);
	proc_read_comm(pid, pi->comm, sizeof(pi->comm));
	if (!proc_read_exe(pid, &exe)) {
		free(pi->exe);
		pi->exe = exe;
	}
	if (!pi->ppid)
		proc_read_ppid(pid, &pi->ppid);
	return 0;
}

/* Drop what an entry knew of an earlier process under the same pid. */
static void proc_info_reset(struct proc_registry *reg, struct proc_info *pi)
{
	struct proc_info *pp = pi->counted ? procs_get(reg, pi->ppid) : NULL;
	uint32_t pid = pi->pid, nchildren = pi->nchildren;
	bool held = pi->sampled || pi->held;

	if (pp && pp->nchildren)
		pp->nchildren--;
	free(pi->exe);
	procmaps_free(pi->maps);
	jit_cache_free(pi->jit);
	memset(pi, 0, sizeof(*pi));
	pi->pid = pid;
	pi->nchildren = nchildren; /* the old one's children still name it */
	/* Its samples are counted under the pid until the flush: the new
	 * process's exit must not drop the entry they are profiled by (pid_max
	 * is 32768 on small hosts; under connection churn pids come round
	 * within an interval, and the old backend's samples went to a
	 * profile of their own, named "unknown" and not grouped as young). */
	pi->held = held;
}

void procs_on_fork(struct proc_registry *reg, uint32_t child, uint32_t parent, uint64_t time_ns)
{
	struct proc_info *pi = procs_add(reg, child);
	struct proc_info *pp = procs_get(reg, parent);

	if (!pi)
		return;
	if (pi->exited) /* a new process under a reused pid */
		proc_info_reset(reg, pi);
	pi->start_ns = time_ns;
	pi->image_ns = time_ns;
	pi->ready_ns = 0;
	pi->gone = false;
	if (pi->ppid == parent && pi->counted)
		return; /* seen already */
	pi->ppid = parent;
	pi->execd = false;
	if (pp) {
		pp->nchildren++;
		pi->counted = true;
		if (!pi->comm[0])
			memcpy(pi->comm, pp->comm, sizeof(pi->comm));
		if (pp->exe && !pi->exe)
			pi->exe = strdup(pp->exe);
	}
}

void procs_on_exec(struct proc_registry *reg, uint32_t pid, uint64_t time_ns)
{
	struct proc_info *pi = procs_add(reg, pid);

	if (!pi)
		return;
	if (pi->exited) /* a new process under a reused pid, its fork unseen */
		proc_info_reset(reg, pi);
	pi->execd = true;
	pi->sampled = false;
	pi->gone = false;
	pi->image_ns = time_ns;
	pi->ready_ns = 0;
	if (!pi->start_ns) /* a new program, for grouping: only when its fork was not seen */
		pi->start_ns = time_ns;
	/* The old layout is gone; the next sample triggers a new snapshot. */
	procmaps_free(pi->maps);
	pi->maps = NULL;
	pi->exec_pages = 0;
	free(pi->exe);
	pi->exe = NULL;
	jit_cache_free(pi->jit);
	pi->jit = NULL;
}

/* Nothing will ask for it: never sampled, exited, no children named. */
static bool unused(const struct proc_info *pi)
{
	return pi->exited && !pi->sampled && !pi->held && !pi->nchildren;
}

void procs_on_exit(struct proc_registry *reg, uint32_t pid, uint64_t time_ns)
{
	struct proc_info *pi = procs_get(reg, pid);

	if (!pi)
		return;
	pi->exited = true;
	pi->exit_ns = time_ns;
	if (unused(pi))
		procs_remove(reg, pid);
}

/* The nearest snapshot across forks without exec, and whose it is, from
 * pi (NULL: none) up: the caller has pi's entry already. */
static struct proc_info *maps_owner(struct proc_registry *reg, struct proc_info *pi)
{
	struct proc_info *pp;

	/* Bounded against cycles from pid reuse. */
	for (int depth = 0; pi && depth < 64; depth++) {
		if (pi->maps)
			return pi;
		if (pi->execd || !pi->ppid || pi->ppid == pi->pid)
			return NULL;
		pp = procs_get(reg, pi->ppid);
		if (pp && pp->start_ns > pi->start_ns)
			return NULL; /* started after its child: a reused pid */
		pi = pp;
	}
	return NULL;
}

/* pid's parent as it was at pid's fork (alive or not), NULL when not
 * known: one that started or exec'd after the fork is another layout. */
static struct proc_info *fork_parent(struct proc_registry *reg, const struct proc_info *pi)
{
	struct proc_info *pp;

	if (!pi->ppid || pi->ppid == pi->pid || !(pp = procs_get(reg, pi->ppid)))
		return NULL;
	if (pp->image_ns > pi->start_ns || pp->start_ns > pi->start_ns)
		return NULL;
	return pp;
}

int procs_on_sampled(struct proc_registry *reg, uint32_t pid, uint64_t exec_pages)
{
	struct proc_info *pi = procs_add(reg, pid), *owner;

	if (!pi)
		return -ENOMEM;
	pi->sampled = true;
	owner = maps_owner(reg, pi);
	if (owner && owner != pi && exec_pages && owner->exec_pages == exec_pages) {
		jit_check(reg, pi, NULL);   /* JIT code is its own */
		if (!pi->exe && owner->exe) /* forked before its ancestor's was read */
			pi->exe = strdup(owner->exe);
		return 0; /* its ancestor's code, as the ancestor's snapshot has it */
	}
	/* taken before it ran (seeded, or as a parent of a sampled child):
	 * read again if it mapped code since, else JIT code came since */
	if (pi->maps && (!exec_pages || pi->exec_pages == exec_pages)) {
		jit_check(reg, pi, NULL);
		return 0;
	}
	return procs_snapshot(reg, pid, pi->maps != NULL);
}

uint32_t procs_unread_parent(struct proc_registry *reg, uint32_t pid)
{
	struct proc_info *pi = procs_get(reg, pid), *pp;

	if (!pi || pi->execd || maps_owner(reg, pi) || !(pp = fork_parent(reg, pi)))
		return 0;
	return pp->exited ? 0 : pp->pid;
}

int procs_on_maps_changed(struct proc_registry *reg, uint32_t pid)
{
	return procs_snapshot(reg, pid, true);
}

const struct proc_maps *procs_maps(struct proc_registry *reg, uint32_t pid)
{
	struct proc_info *owner = maps_owner(reg, procs_get(reg, pid));

	return owner ? owner->maps : NULL;
}

uint32_t procs_open_via(struct proc_registry *reg, uint32_t pid)
{
	struct proc_info *pi = procs_get(reg, pid);
	const struct proc_info *owner, *pp;

	if (!pi || !pi->exited)
		return pid;
	owner = maps_owner(reg, pi);
	if (owner && !owner->exited)
		return owner->pid;
	if (owner == pi && (pp = procs_get(reg, pi->ppid)) && !pp->exited && pp->pid != pid)
		return pp->pid;
	return pid;
}

const struct proc_maps *procs_maps_before_exec(struct proc_registry *reg, uint32_t pid,
					       uint32_t *via)
{
	struct proc_info *pi = procs_get(reg, pid), *pp, *owner;

	if (!pi || !pi->execd || !pi->counted || !(pp = fork_parent(reg, pi)))
		return NULL;
	owner = maps_owner(reg, pp);
	if (!owner)
		return NULL;
	*via = !owner->exited ? owner->pid : pp->pid;
	return owner->maps;
}

int procs_adopt_snapshot(struct proc_registry *reg, uint32_t pid, struct proc_maps *maps, char *exe)
{
	struct proc_info *pi = procs_add(reg, pid);

	if (!pi) {
		procmaps_free(maps);
		free(exe);
		return -ENOMEM;
	}
	procmaps_free(pi->maps);
	pi->maps = maps;
	pi->snapshot_err = 0;
	pi->exec_pages = 0;
	if (exe) {
		free(pi->exe);
		pi->exe = exe;
	}
	return 0;
}

/* Read pid's JIT files again if they changed since; a zombie (no
 * mappings left) keeps what was read while it ran. */
static void jit_cache_refresh(struct jit_cache *jc, uint32_t pid)
{
	struct proc_maps *maps = NULL;
	struct jit_syms *js;
	uint64_t stamp;
	int err;

	err = procmaps_read((int)pid, true, &maps);
	if (!err && maps->n)
		err = jitsyms_stamp(pid, maps, &stamp);
	if (!err && maps->n && (!jc->js || stamp != jc->stamp)) {
		err = jitsyms_load(pid, maps, &js);
		if (!err && *jc->total - jc->bytes + jitsyms_bytes(js) > PROCS_JIT_BUDGET) {
			/* users' files must not make the agent grow without end */
			log_debug("pid %u: JIT names over the budget of %u MiB, not kept", pid,
				  PROCS_JIT_BUDGET >> 20);
			jitsyms_free(js);
			err = -ENOSPC;
		}
		if (!err) {
			*jc->total += jitsyms_bytes(js) - jc->bytes;
			jc->bytes = jitsyms_bytes(js);
			jitsyms_free(jc->js);
			jc->js = js;
		}
		if (!err || err == -ENOSPC)
			jc->stamp = stamp; /* not read again until it changes */
	}
	if (err == -ESRCH || err == -ENOENT)
		jc->gone = true;
	procmaps_free(maps);
}

const char *procs_jit_name(struct proc_registry *reg, uint32_t pid, uint64_t addr)
{
	struct proc_info *pi = procs_get(reg, pid);
	uint64_t now = (uint64_t)mono_ns();
	struct jit_cache *jc;

	if (!pi || (!pi->jit && pi->exited))
		return NULL;
	if (!pi->jit && !(pi->jit = jit_cache_new(reg)))
		return NULL;
	jc = pi->jit;
	if (!pi->exited && !jc->gone && (!jc->checked_ns || now - jc->checked_ns >= NSEC_PER_SEC)) {
		jc->checked_ns = now;
		/* its maps read again (a stripped binary's every unnamed frame
		 * asks, each second) only where JIT code can be: a table read
		 * before, a perf map, a jitdump in its last snapshot (mapping
		 * one is exec memory: a new snapshot follows) */
		if (jc->js || jitsyms_perfmap_exists(pid) || jitsyms_mapped(pi->maps))
			jit_cache_refresh(jc, pid);
	}
	return jitsyms_find(jc->js, addr);
}

void procs_remove(struct proc_registry *reg, uint32_t pid)
{
	/* Up the chain of exited parents never sampled: bounded as above. */
	for (int depth = 0; depth < 64; depth++) {
		struct proc_info *pi = procs_get(reg, pid), *pp;
		const void *k;
		void *v;

		if (!pi)
			return;
		pp = pi->counted && pi->ppid != pid ? procs_get(reg, pi->ppid) : NULL;
		if (!hm_remove(reg->by_pid, &pid, &k, &v))
			proc_info_free(v);
		if (!pp || !pp->nchildren)
			return;
		pp->nchildren--;
		if (!unused(pp))
			return;
		pid = pp->pid;
	}
}

size_t procs_count(const struct proc_registry *reg)
{
	return hm_size(reg->by_pid);
}

struct proc_info *procs_next(struct proc_registry *reg, size_t *iter)
{
	const void *k;
	void *v;

	return hm_next(reg->by_pid, iter, &k, &v) ? v : NULL;
}
