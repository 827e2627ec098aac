/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the integration tests: paths in the build, shell commands,
 * scratch directories, the project's own decoder (tl_load_profile, for
 * the few tests that need its model), CPU time of processes; spawning
 * programs and reading their logs is spawn.h, reading profiles back with
 * `go tool pprof`, the independent reader, gopprof.h. Everything
 * returned is owned by the caller.
 */
#ifndef EBPROF_TESTLIB_H
#define EBPROF_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gopprof.h"
#include "spawn.h"
#include "profile/profile.h"

/* Build directory (env BUILD, default "build") and paths inside it. */
const char *tl_build(void);
/* "<build>/<rel>" in a static buffer rotated over 8 slots. */
const char *tl_path(const char *rel);

/* How far a count of samples expected at `want` may stray, relative: at
 * least tol, and three standard deviations of a count taken at random
 * moments (sqrt(want)) where that is more. A target that shares its CPUs
 * with others is on a CPU at a sampling tick by chance, so ~25 samples at
 * 19 Hz vary by +-20% on a busy host. */
double tl_sample_tol(double want, double tol);
/* The same for a share p expected of n samples (absolute): at least tol,
 * and three standard deviations of a binomial share, sqrt(p(1-p)/n). */
double tl_share_tol(double n, double p, double tol);

/* Run a shell command; *out gets stdout+stderr (malloc'ed). Returns the
 * exit status or a negative errno. */
int tl_sh(const char *cmd, char **out);
/* `ebprof ARGS` (a command line tail, e.g. "record --type x -d 1") must
 * exit 2 (bad input) with needle in what it prints (asserted). */
void tl_expect_usage_error(const char *args, const char *needle);

/* Run fn(argc, argv) (a command's entry point; argv NULL-terminated) in
 * a forked child, its stdout and stderr in files under dir; *out (of
 * *outlen bytes) and *err get them (malloc'ed, NUL-terminated). Returns
 * fn's value as the child's exit status (asserted: it exited). */
int tl_run_captured(int (*fn)(int, char **), int argc, char **argv, const char *dir, char **out,
		    size_t *outlen, char **err);

/* Run the shell command made from fmt (printf-style); asserts it exits 0. */
void tl_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fresh temporary directory (mkdtemp under /tmp), malloc'ed path (the
 * caller may free it, or keep it to the end). */
char *tl_tmpdir(const char *tag);
/* Remove path and everything under it (symlinks not followed). */
void tl_rm_tree(const char *path);

/* A suite's scratch directory: tl_scratch_make(tag) from the suite's
 * .init (asserts it is made), tl_scratch_remove as its .fini; tl_at(rel)
 * is the path of rel in it (four rotating static buffers). */
void tl_scratch_make(const char *tag);
void tl_scratch_remove(void);
const char *tl_scratch_dir(void);
const char *tl_at(const char *rel);

/* Decode a profile file; NULL on any error (message on stderr). */
struct profile *tl_load_profile(const char *path);

/* Run `go tool pprof -raw` on path; 0 when it exits 0 and prints no
 * warning; otherwise the output is printed and a non-zero is returned.
 * *out (optional) receives its output. */
int tl_go_pprof_check(const char *path, char **out);

/* Sum of value[vi] over samples whose stack has a frame (inlined frames
 * included) named fn; pid < 0: any pid. */
int64_t tl_samples_with(const struct profile *p, const char *fn, int64_t pid, size_t vi);
/* Sum of value[vi] over samples of pid (< 0: all). */
int64_t tl_samples_total(const struct profile *p, int64_t pid, size_t vi);
/* Numeric label of a sample, or -1. */
int64_t tl_label_num(const struct profile *p, const struct pf_sample *s, const char *key);
/* Position (0 = leaf) of the first frame named fn in the sample's stack,
 * counting inline frames, or -1. */
int tl_frame_pos(const struct profile *p, const struct pf_sample *s, const char *fn);

/* CPU time (user + system) a process has used so far, in ns, summed over
 * its threads (/proc/PID/task/TID/schedstat, the scheduler's nanosecond
 * clock); -1 when it is gone. */
int64_t tl_proc_cpu_ns(pid_t pid);

/* A process's resident set (VmRSS) in KiB, and how many descriptors it
 * has open; -1 when it is gone (procstat.c). */
int64_t tl_proc_rss_kib(pid_t pid);
int tl_proc_nfds(pid_t pid);
/* The least of five looks at them, a few hundred ms apart (a flush holds
 * buffers and a file for a moment). */
int64_t tl_proc_settled_rss_kib(pid_t pid);
int tl_proc_settled_nfds(pid_t pid);

/* Building test profiles (assert on failure): a mapping, and a location
 * at addr with one line in function fn. Return the 1-based ids. */
uint64_t tl_mapping(struct profile *p, uint64_t start, uint64_t limit, const char *file);
uint64_t tl_loc(struct profile *p, uint64_t mapping, uint64_t addr, const char *fn);

/* The value of "key=" at the start of a line of out (a script's
 * "key=value" report); "" when absent. In one of 8 static buffers, so a
 * few can be used in one expression. */
const char *tl_kv(const char *out, const char *key);

/* Is the running kernel (uname -r) this version or later? */
bool tl_kernel_at_least(int major, int minor);

#endif /* EBPROF_TESTLIB_H */
