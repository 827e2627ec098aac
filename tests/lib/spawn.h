/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Child processes of the tests (spawn.c): started with pipes (or as a
 * chosen PID), waited for with a timeout, their output read line by line
 * or by a thread of its own into memory (struct tl_log). Everything
 * returned is owned by the caller.
 */
#ifndef EBPROF_TEST_SPAWN_H
#define EBPROF_TEST_SPAWN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct tl_proc {
	pid_t pid;
	FILE *in;  /* child's stdin, NULL unless piped */
	FILE *out; /* child's stdout, NULL unless piped */
	FILE *err; /* child's stderr, NULL unless piped */
};

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

#endif /* EBPROF_TEST_SPAWN_H */
