/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The target set: which processes a profiler samples, by names, pids and
 * cgroups, and their descendants. Found by a /proc scan when a session
 * starts (and for narrowing an ad hoc profile); later changes (fork, exec,
 * exit) are followed by the BPF tracepoints.
 */
#ifndef EBPROF_TARGETS_H
#define EBPROF_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The processes ebprof profiles when told nothing else: PostgreSQL's. */
#define TARGETS_NDEFAULT_COMMS 2
extern const char *const targets_default_comms[TARGETS_NDEFAULT_COMMS];

struct target_rules {
	const char *const *comms; /* comm or exe basename in this list */
	size_t ncomms;
	const uint32_t *pids; /* explicit processes */
	size_t npids;
	const char *const *cgroups; /* every process of these cgroup v2 directories */
	size_t ncgroups;
	bool descendants; /* add every descendant of a match */
};

/* The names the rules match: their comms, else, when they give no comm,
 * pid nor cgroup, targets_default_comms; else none. */
void targets_names(const struct target_rules *rules, const char *const **names, size_t *n);

/*
 * Scan /proc once for the processes the rules match now (names as
 * targets_names() says, pids, descendants when asked; cgroup members are
 * added as they are, without descendants of their own). *out (malloc'ed,
 * caller frees) receives the tgids, sorted and unique. 0 or a negative
 * errno.
 */
int targets_scan(const struct target_rules *rules, uint32_t **out, size_t *n);

/* Processes of a cgroup v2 directory and its descendants (cgroup.procs),
 * appended to the array *pids of *n entries (realloc'ed). 0 or a negative errno. */
int targets_cgroup_pids(const char *path, uint32_t **pids, size_t *n);
/* The cgroup id of a cgroup v2 directory (its inode number), as
 * bpf_get_current_cgroup_id() reports it. 0 or a negative errno. */
int targets_cgroup_id(const char *path, uint64_t *id);

/* A cgroup path as an operator writes it (the first len bytes of p:
 * /sys/fs/cgroup/..., or relative to the cgroup v2 root, which is
 * /sys/fs/cgroup or /sys/fs/cgroup/unified on hybrid hosts) -> the canonical
 * cgroup v2 directory, malloc'ed into *out. 0, or -EINVAL / -ENOMEM with a
 * one-line reason in msg ("cgroup '/x' does not exist (...)"). */
int targets_cgroup_resolve(const char *p, size_t len, char **out, char *msg, size_t msglen);

/* Does the process comm or the basename of exe match one of names? */
bool targets_name_matches(const char *comm, const char *exe, const char *const *names,
			  size_t nnames);

#endif /* EBPROF_TARGETS_H */
