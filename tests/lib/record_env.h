/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The environment of the `ebprof record` tests (test_record*.c): fixtures
 * to sample, a recorder with its log, and the checks several tests make
 * of what go tool pprof reads back (gopprof.h). Everything asserts through
 * Criterion; returned strings are malloc'ed.
 */
#ifndef EBPROF_RECORD_ENV_H
#define EBPROF_RECORD_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gopprof.h"
#include "testlib.h"

#define FREQ 99

void rec_require_root(void);

/* Start a fixture that prints pid=N and waits for a line on stdin. */
pid_t rec_start_fixture(struct tl_proc *fx, char *const argv[]);

/* A work_split (argv[0] may be a copy under another name) burning secs. */
pid_t rec_start_work_split(struct tl_proc *fx, const char *exe, const char *secs);

/* The CPU seconds a work_split reports, once it exited 0. */
double rec_work_split_cpu(struct tl_proc *fx);

/* A running `ebprof record ARGS -v`, its stderr in log. */
struct rec_run {
	struct tl_proc p;
	struct tl_log log;
};

/* Is s a fixture's wait for its "go" line (fixture_start(), inlined:
 * fgets() from main)? The sampled off-CPU path counts it from the start
 * of the recording, the switch path not (it began before). */
bool rec_waits_for_go(const struct gp_sample *s);

/* Start `ebprof record ARGS -v` and wait until it samples. */
void rec_start_record(struct rec_run *r, char **args);

/* Wait for the recorder (sig first, when not 0): its exit status; its
 * log stays in r->log. */
int rec_finish_record(struct rec_run *r, int sig, double timeout);

/* "ebprof: wrote PATH: N samples from ..." of a log, or -1. */
int64_t rec_summary_samples(const char *log);

/* Read path back with go tool pprof (asserts it can). */
struct gp_profile *rec_read_back(const char *path);

/*
 * The samples BPF counted (the profile's comment, written from the
 * sampler's counter) equal the samples go tool pprof finds, and the
 * summary line (the profile builder's count) says the same: no sample
 * was lost between the kernel and the file. log may be NULL.
 */
void rec_expect_counts_agree(const struct gp_profile *p, const char *log);

/* pid, tid (numeric) and thread_name (string) on every sample. */
void rec_expect_sample_labels(const struct gp_profile *p);

double rec_now(void);

/* samples within tol (fraction) of freq x cpu seconds. */
void rec_expect_rate(int64_t samples, int freq, double cpu, double tol, const char *what);

/* The GNU build-id of an ELF file as readelf (binutils) prints it. */
char *rec_elf_build_id(const char *path);

/* Copy the work_split fixture to dir/name: a process named name. */
void rec_work_split_named(const char *dir, const char *name, char *exe, size_t len);

/* Sum of the counts of folded lines; *burn those with a burn_three frame
 * under comm work_split; *bad the malformed ones. */
int64_t rec_folded_sum(char *text, int64_t *burn, int *bad);

/* Whether a mapping is a user one: a file that is not the kernel's (Go
 * shows locations without a mapping under a fake one without a file). */
bool rec_user_mapping(const struct gp_mapping *m);

bool rec_kernel_mapping(const struct gp_mapping *m);

/* The running kernel's GNU build-id, from its ELF notes in
 * /sys/kernel/notes (not through ebprof). */
char *rec_kernel_build_id(void);

/* Samples (weighted by their count) with a frame under a kernel / user
 * mapping. */
void rec_count_frames(const struct gp_profile *p, int64_t *kernel, int64_t *user);

/* Run ebprof with args; expect exit code and a message on stderr, and
 * that the output path was not created. */
void rec_expect_rejected(const char *args, int code, const char *message);

#endif /* EBPROF_RECORD_ENV_H */
