/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registry of the processes a recording has seen: name, executable and a
 * snapshot of the executable mappings taken the first time the process is
 * sampled (or on fork/exec events), kept until the registry is freed so a
 * process that exits mid-recording still symbolizes.
 *
 * A child forked from a known process and not exec'd since shares its
 * parent's address space layout; when the child's own snapshot could not
 * be taken (it exited first), procs_maps() answers with the parent's.
 *
 * The registry owns every proc_info and snapshot; pointers it returns stay
 * valid until procs_free(). Not thread-safe.
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
	bool exited;
	bool execd;	  /* exec'd after the fork we saw: don't inherit maps */
	int snapshot_err; /* last error reading maps, 0 if none */
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

void procs_on_fork(struct proc_registry *reg, uint32_t child, uint32_t parent);
void procs_on_exec(struct proc_registry *reg, uint32_t pid);
void procs_on_exit(struct proc_registry *reg, uint32_t pid);

/* Own snapshot, else the nearest ancestor's across forks without exec;
 * NULL when none is known. */
const struct proc_maps *procs_maps(struct proc_registry *reg, uint32_t pid);

/* Forget a process (e.g. exited and flushed). Children that inherited its
 * snapshot lose that fallback. */
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

#endif /* EBPROF_PROCESSES_H */
