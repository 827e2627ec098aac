/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which processes belong to a process tree, told by the kernel rather than
 * by polling /proc: the proc connector (netlink, CN_IDX_PROC; root) reports
 * every fork on the host, so a child that lives a millisecond is still
 * known. pe_start() subscribes, then takes the tree's processes alive now
 * from /proc; pe_tree() adds every process forked since from a member.
 */
#ifndef EBPROF_PROCEVENTS_H
#define EBPROF_PROCEVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pe_listener;

/* Start listening; root's tree as it is now is the start set. 0 or -errno. */
int pe_start(pid_t root, struct pe_listener **out);
/* Stop listening (the events seen stay). */
void pe_stop(struct pe_listener *l);
/* The tree's members (malloc'ed, *n of them): the start set and every
 * process forked from a member since. 0, or -EIO when the kernel dropped
 * events (the set may then be incomplete). */
int pe_tree(struct pe_listener *l, int64_t **pids, size_t *n);
/* Whether pid is in a set pe_tree() gave. */
bool pe_member(const int64_t *pids, size_t n, int64_t pid);
void pe_free(struct pe_listener *l);

#endif /* EBPROF_PROCEVENTS_H */
