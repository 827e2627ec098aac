/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wait sampler's visit of the targets' threads on kernels without the
 * kfuncs of waits_visit_targets (6.1-6.6, or a build without it): a task
 * iterator link per target process (union bpf_iter_link_info's task.pid,
 * Linux 6.1+), each read at every visit, so that a visit runs the program
 * over the targets' threads alone and not over every thread of the host.
 *
 * The set follows the BPF `targets` map (read in one batch at each sync):
 * a link made when a target process appears there, closed when it leaves
 * (exit, or no longer a target). At most `max` links (file descriptors);
 * past that the caller visits the host instead, and the links are closed.
 * Not thread-safe: one thread (the wait sampler's) owns a set.
 */
#ifndef EBPROF_WAITS_LINKS_H
#define EBPROF_WAITS_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct waits_links;

/* A set for the iterator program prog_fd and the map targets_fd (keys
 * u32 tgids), of at most max links. 0 or -ENOMEM; *out freed by
 * waits_links_free(). */
int waits_links_new(int prog_fd, int targets_fd, size_t max, struct waits_links **out);
void waits_links_free(struct waits_links *l);

/* The links made for the targets now in the map, those of processes that
 * left it closed. 0; -E2BIG when the targets are more than max or than
 * limit (every link then closed: the caller visits the host); another
 * negative errno when the map cannot be read (the links kept as they
 * were). *ntargets: the targets read. */
int waits_links_sync(struct waits_links *l, size_t limit, size_t *ntargets);

/* One visit: each link's iterator created, read to its end, closed. The
 * links read. */
size_t waits_links_visit(struct waits_links *l);

/* Links held now; links made and closed since the set was made. */
size_t waits_links_count(const struct waits_links *l);
void waits_links_totals(const struct waits_links *l, uint64_t *made, uint64_t *closed);

/* The most links a session holds: half the file descriptors it may open
 * (RLIMIT_NOFILE), or EBPROF_WAITS_LINKS_MAX when set (tests, bench;
 * *forced then true: no waits_links_worth() limit). */
size_t waits_links_max(bool *forced);

/*
 * The most target processes for which links cost less than walking the
 * host, from the host's threads now (/proc/loadavg): a link costs ~4 us a
 * process a read (its iterator made, read and closed), the host walk
 * ~0.6 us a thread of another process (bench/results/waits-61-*.md), so
 * links while the targets are under a seventh of the host's threads.
 * SIZE_MAX when the host's threads cannot be read.
 */
size_t waits_links_worth(void);

/* Can a link be made for a process this sampler names? No when it runs
 * in a child PID namespace (a link's pid is read in the caller's; the
 * targets map holds the host's). */
bool waits_links_usable(void);

#endif /* EBPROF_WAITS_LINKS_H */
