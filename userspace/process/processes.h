/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registry of the processes a recording has seen: name, executable and a
 * snapshot of the executable mappings, kept after the process exits until
 * it is removed, so its samples still symbolize.
 *
 * A child forked from a known process and not exec'd since shares its
 * parent's address space layout: it has no snapshot of its own as long as
 * its executable pages count (BPF's mm->exec_vm) is the one of its nearest
 * ancestor's snapshot, and procs_maps() answers with that one. Under
 * connection churn (a PostgreSQL backend per connection) that is every
 * backend: no /proc/PID/maps read and no copy per process. A process
 * never sampled is removed as soon as it exits (unless children of its
 * are registered); a sampled one when the session says so.
 *
 * The registry owns every proc_info and snapshot; pointers it returns stay
 * valid until the entry is removed or procs_free(). Not thread-safe.
 */
#ifndef EBPROF_PROCESSES_H
#define EBPROF_PROCESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

struct proc_info {
	uint32_t pid;
	uint32_t ppid;		/* 0 when unknown */
	char comm[16];		/* process (main thread) name */
	char *exe;		/* readlink of /proc/PID/exe, NULL if unknown */
	struct proc_maps *maps; /* own snapshot, NULL if none yet */
	struct jit_cache *jit;	/* procs_jit_name()'s, NULL until asked */
	bool exited;
	bool execd;	     /* exec'd after the fork we saw: don't inherit maps */
	bool sampled;	     /* procs_on_sampled() since its fork or exec */
	bool counted;	     /* it counts in its parent's nchildren */
	bool held;	     /* an earlier process under its pid was sampled: the entry
				its samples are profiled by stays to the flush */
	bool gone;	     /* its /proc found without a root since its fork or exec:
				it exited (its exit event may not be read yet) */
	uint32_t nchildren;  /* registered processes forked from it */
	uint64_t start_ns;   /* CLOCK_MONOTONIC of its fork or exec; 0: before we looked */
	uint64_t image_ns;   /* ... of the fork or exec that made its address space (the later) */
	uint64_t ready_ns;   /* ... when the sampler had its mappings since, 0: not yet (the
				session's) */
	uint64_t exit_ns;    /* CLOCK_MONOTONIC of its exit; 0: not seen */
	uint64_t exec_pages; /* of its own snapshot (VmExe + VmLib), 0: unknown */
	int snapshot_err;    /* last error reading maps, 0 if none */
};

struct proc_registry;

int procs_new(struct proc_registry **out);
void procs_free(struct proc_registry *reg);

/* Existing entry or NULL. */
struct proc_info *procs_get(struct proc_registry *reg, uint32_t pid);
/* Existing or new (empty) entry; NULL on -ENOMEM. */
struct proc_info *procs_add(struct proc_registry *reg, uint32_t pid);

/* Take the maps snapshot, comm and exe of pid if it has none yet (force:
 * take it again). 0, or a negative errno when /proc could not be read
 * (the entry keeps what it had). */
int procs_snapshot(struct proc_registry *reg, uint32_t pid, bool force);

/* Process events, with the time they happened (CLOCK_MONOTONIC ns, as BPF
 * reports it; 0 when unknown). A fork of a pid registered as exited is a
 * new process under a reused pid: the old entry is reset. An exit removes
 * a process never sampled and without registered children at once. */
void procs_on_fork(struct proc_registry *reg, uint32_t child, uint32_t parent, uint64_t time_ns);
void procs_on_exec(struct proc_registry *reg, uint32_t pid, uint64_t time_ns);
void procs_on_exit(struct proc_registry *reg, uint32_t pid, uint64_t time_ns);

/*
 * pid was sampled for the first time since its fork or exec, with
 * exec_pages executable pages mapped: it shares its nearest ancestor's
 * snapshot when that one has as many pages, else its maps are read. 0 or
 * a negative errno from reading /proc. procs_on_maps_changed(): its
 * executable mappings changed since (a library loaded): read them again.
 */
int procs_on_sampled(struct proc_registry *reg, uint32_t pid, uint64_t exec_pages);
/*
 * The parent whose layout pid was forked with, to read before pid's own
 * (0: none): pid was forked and has not exec'd, its parent is registered,
 * alive and has not exec'd since the fork, and no snapshot of that layout
 * is known (the parent's own or an ancestor's). The parent's snapshot
 * serves pid after it exited and every child it forks next, where pid's
 * own would serve pid alone.
 */
uint32_t procs_unread_parent(struct proc_registry *reg, uint32_t pid);
int procs_on_maps_changed(struct proc_registry *reg, uint32_t pid);

/* Own snapshot, else the nearest ancestor's across forks without exec
 * (an ancestor that started after the child is a reused pid: not one);
 * NULL when none is known. */
const struct proc_maps *procs_maps(struct proc_registry *reg, uint32_t pid);

/* The pid to open pid's mapped files through (/proc/PID/map_files, and
 * its root for debug files): its own while it lives, else that of the
 * living owner of the snapshot it shares (same mappings), else, for a
 * snapshot of its own, its living parent's (the same files by path: an
 * exec'd child), else its own. A backend gone by the flush is symbolized
 * through its postmaster. */
uint32_t procs_open_via(struct proc_registry *reg, uint32_t pid);

/* The layout pid had before its last exec when it was a forked child
 * sharing its parent's (the snapshot of that parent's, or of an ancestor
 * it shares), and in *via the pid to open its files through; NULL when
 * not known. Its samples taken between the fork and the exec (counted in
 * the same interval as the rest) are named from it. */
const struct proc_maps *procs_maps_before_exec(struct proc_registry *reg, uint32_t pid,
					       uint32_t *via);

/* Take snapshot maps (and exe, may be NULL; both are the registry's now)
 * read by someone else as pid's own, in place of any it has: a process
 * gone before its /proc was read here. 0 or -ENOMEM (both freed). */
int procs_adopt_snapshot(struct proc_registry *reg, uint32_t pid, struct proc_maps *maps,
			 char *exe);

/*
 * The name of the JIT-compiled function (PostgreSQL's LLVM JIT writing a
 * jitdump, or a /tmp/perf-PID.map) holding addr in pid's memory, or NULL
 * when nothing is known. pid's files are read on its first lookup and
 * read again when they changed (checked at most once a second, while the
 * process lives; an exited one keeps what was read last). The name stays
 * valid until the next procs_jit_name() for pid, its exec, its removal or
 * procs_free().
 */
const char *procs_jit_name(struct proc_registry *reg, uint32_t pid, uint64_t addr);
/* JIT names kept for all processes together, bytes; past it a process's
 * new table is not kept (its frames stay addresses). */
#define PROCS_JIT_BUDGET (128u << 20)

/* Forget a process (e.g. exited and flushed); an exited parent never
 * sampled goes with its last child. Children that inherited its snapshot
 * lose that fallback. */
void procs_remove(struct proc_registry *reg, uint32_t pid);

size_t procs_count(const struct proc_registry *reg);
/* Iterate: for (size_t it = 0; (pi = procs_next(reg, &it));) */
struct proc_info *procs_next(struct proc_registry *reg, size_t *iter);

/* Read /proc/PID/comm into buf (NUL-terminated, newline stripped). */
int proc_read_comm(uint32_t pid, char *buf, size_t size);
/* readlink /proc/PID/exe, malloc'ed, " (deleted)" stripped. */
int proc_read_exe(uint32_t pid, char **out);
/* Parent pid from /proc/PID/stat. */
int proc_read_ppid(uint32_t pid, uint32_t *ppid);
/* Where its executable's code starts (/proc/PID/stat's startcode, the
 * kernel's mm->start_code): which image runs under pid. */
int proc_read_start_code(uint32_t pid, uint64_t *start);
/* Executable pages mapped (VmExe + VmLib of /proc/PID/status, in pages). */
int proc_read_exec_pages(uint32_t pid, uint64_t *pages);

#endif /* EBPROF_PROCESSES_H */
