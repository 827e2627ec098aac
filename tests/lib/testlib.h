/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the integration tests: spawning programs with pipes,
 * loading profiles, asking `go tool pprof` (the independent reader) and
 * querying stacks. Everything returned is owned by the caller.
 */
#ifndef EBPROF_TESTLIB_H
#define EBPROF_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

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

/* A fresh temporary directory (mkdtemp under /tmp), malloc'ed path. */
char *tl_tmpdir(const char *tag);

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

/* Building test profiles (assert on failure): a mapping, and a location
 * at addr with one line in function fn. Return the 1-based ids. */
uint64_t tl_mapping(struct profile *p, uint64_t start, uint64_t limit, const char *file);
uint64_t tl_loc(struct profile *p, uint64_t mapping, uint64_t addr, const char *fn);

#endif /* EBPROF_TESTLIB_H */
