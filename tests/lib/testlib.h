/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the integration tests: spawning programs with pipes and
 * reading their logs, the project's own decoder (tl_load_profile, for the
 * few tests that need its model), CPU time of processes; reading profiles
 * back with `go tool pprof`, the independent reader, is gopprof.h.
 * Everything returned is owned by the caller.
 */
#ifndef EBPROF_TESTLIB_H
#define EBPROF_TESTLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gopprof.h"
#include "profile/profile.h"

struct tl_proc {
	pid_t pid;
	FILE *in;  /* child's stdin, NULL unless piped */
	FILE *out; /* child's stdout, NULL unless piped */
	FILE *err; /* child's stderr, NULL unless piped */
};

/* Build directory (env BUILD, default "build") and paths inside it. */
const char *tl_build(void);
/* "<build>/<rel>" in a static buffer rotated over 8 slots. */
const char *tl_path(const char *rel);

/* fork+exec argv; pipe the streams asked for. 0 or -errno. */
int tl_spawn(struct tl_proc *p, char *const argv[], bool pipe_in, bool pipe_out, bool pipe_err);
/* fork+exec argv as PID pid (clone3 with set_tid: a PID taken again),
 * its stdin piped. 0 or -errno. */
int tl_spawn_as(struct tl_proc *p, pid_t pid, char *const argv[]);
/* Wait for exit (timeout_s; SIGKILL after). Returns the exit status
 * (0..255), 128+signal if killed, or -ETIMEDOUT. Closes the pipes. */
int tl_wait(struct tl_proc *p, double timeout_s);
/* Read lines from f until one contains needle (copied into line), or
 * timeout_s passes. 0 when found, -ETIMEDOUT / -EPIPE otherwise. */
int tl_wait_line(FILE *f, const char *needle, char *line, size_t len, double timeout_s);

/* Spawn argv with stderr piped and wait (timeout_s) for a stderr line
 * containing ready (e.g. "sampling at"). 0 or a negative errno. */
int tl_start_until(struct tl_proc *p, char *const argv[], const char *ready, double timeout_s);
/* Send sig (0: none), copy the rest of the child's stderr to ours, wait
 * for it (timeout_s): the exit status as tl_wait() gives it. */
int tl_finish(struct tl_proc *p, int sig, double timeout_s);

/* Run a shell command; *out gets stdout+stderr (malloc'ed). Returns the
 * exit status or a negative errno. */
int tl_sh(const char *cmd, char **out);
/* `ebprof ARGS` (a command line tail, e.g. "record --type x -d 1") must
 * exit 2 (bad input) with needle in what it prints (asserted). */
void tl_expect_usage_error(const char *args, const char *needle);

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

/*
 * A child's log read on a thread of its own (the child never blocks on a
 * full pipe), kept in memory and copied to our stderr as it comes.
 */
struct tl_log {
	FILE *f;
	char *buf; /* NUL-terminated */
	size_t len, cap;
	bool eof;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};
/* Take f over (it is closed by tl_log_join) and start reading. 0 or -errno. */
int tl_log_start(struct tl_log *l, FILE *f);
/* Wait until a line containing needle starts at or after offset from
 * (bytes); 0 and *next (optional) = the offset after that line, or
 * -ETIMEDOUT / -EPIPE (end of the log). */
int tl_log_wait(struct tl_log *l, size_t from, const char *needle, double timeout_s, size_t *next);
/* Bytes read so far. */
size_t tl_log_len(struct tl_log *l);
/* A copy of everything read so far (malloc'ed). */
char *tl_log_text(struct tl_log *l);
/* Wait for the end of the log (the child closed it); what was read stays
 * readable (tl_log_text, tl_log_wait) until tl_log_free. */
void tl_log_join(struct tl_log *l);
/* Join if need be and free everything. */
void tl_log_free(struct tl_log *l);
/* Start argv with its stderr read by l, and wait (timeout_s) for a line
 * containing ready. 0 or a negative errno (the child is killed then). */
int tl_start_logged(struct tl_proc *p, struct tl_log *l, char *const argv[], const char *ready,
		    double timeout_s);
/* Send sig (0: none), wait for the child (timeout_s) and for its log's end
 * (tl_log_join): the exit status as tl_wait() gives it. */
int tl_finish_logged(struct tl_proc *p, struct tl_log *l, int sig, double timeout_s);

/* Building test profiles (assert on failure): a mapping, and a location
 * at addr with one line in function fn. Return the 1-based ids. */
uint64_t tl_mapping(struct profile *p, uint64_t start, uint64_t limit, const char *file);
uint64_t tl_loc(struct profile *p, uint64_t mapping, uint64_t addr, const char *fn);

/* The value of "key=" at the start of a line of out (a script's
 * "key=value" report); "" when absent. In one of 8 static buffers, so a
 * few can be used in one expression. */
const char *tl_kv(const char *out, const char *key);

#endif /* EBPROF_TESTLIB_H */
