// SPDX-License-Identifier: BSD-2-Clause
/* Child processes of the tests: spawn, wait, read their logs (spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

int tl_spawn(struct tl_proc *p, char *const argv[], bool pipe_in, bool pipe_out, bool pipe_err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };

	memset(p, 0, sizeof(*p));
	if ((pipe_in && pipe2(in, O_CLOEXEC)) || (pipe_out && pipe2(out, O_CLOEXEC)) ||
	    (pipe_err && pipe2(err, O_CLOEXEC)))
		return -errno;
	/* not fflush(NULL): a tl_log thread blocked reading another child's
	 * output holds that stream's lock, and flushing every stream would
	 * wait for it (a test starting a child after a logged one hung) */
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		if (pipe_in)
			dup2(in[0], 0);
		if (pipe_out)
			dup2(out[1], 1);
		if (pipe_err)
			dup2(err[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pipe_in) {
		close(in[0]);
		p->in = fdopen(in[1], "w");
		setvbuf(p->in, NULL, _IONBF, 0);
	}
	if (pipe_out) {
		close(out[1]);
		p->out = fdopen(out[0], "r");
		setvbuf(p->out, NULL, _IONBF, 0);
	}
	if (pipe_err) {
		close(err[1]);
		p->err = fdopen(err[0], "r");
		setvbuf(p->err, NULL, _IONBF, 0);
	}
	return 0;
}

int tl_spawn_as(struct tl_proc *p, pid_t pid, char *const argv[])
{
	pid_t tid[1] = { pid };
	struct clone_args ca = { 0 };
	int in[2];
	long r;

	memset(p, 0, sizeof(*p));
	if (pipe2(in, O_CLOEXEC))
		return -errno;
	fflush(stdout);
	fflush(stderr);
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uint64_t)(uintptr_t)tid;
	ca.set_tid_size = 1;
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0) {
		dup2(in[0], 0);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	if (r < 0) {
		r = -errno;
		close(in[1]);
		return (int)r;
	}
	p->pid = (pid_t)r;
	p->in = fdopen(in[1], "w");
	setvbuf(p->in, NULL, _IONBF, 0);
	return 0;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int tl_wait(struct tl_proc *p, double timeout_s)
{
	double end = mono() + timeout_s;
	int status, ret = -ETIMEDOUT;

	if (p->in)
		fclose(p->in);
	p->in = NULL;
	while (mono() < end) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid) {
			ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		usleep(10000);
	}
	if (ret == -ETIMEDOUT) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	}
	if (p->out)
		fclose(p->out);
	if (p->err)
		fclose(p->err);
	p->out = p->err = NULL;
	return ret;
}

int tl_wait_line(FILE *f, const char *needle, char *line, size_t len, double timeout_s)
{
	double end = mono() + timeout_s;
	struct pollfd pfd = { fileno(f), POLLIN, 0 };

	for (;;) {
		double left = end - mono();

		if (left <= 0)
			return -ETIMEDOUT;
		/* The pipes are unbuffered (tl_spawn), so poll tells the truth. */
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		if (!fgets(line, (int)len, f))
			return -EPIPE;
		fputs(line, stderr); /* keep the child's words in the test log */
		if (strstr(line, needle))
			return 0;
	}
}

int tl_start_until(struct tl_proc *p, char *const argv[], const char *ready, double timeout_s)
{
	char line[1024];
	int err = tl_spawn(p, argv, false, false, true);

	if (err)
		return err;
	err = tl_wait_line(p->err, ready, line, sizeof(line), timeout_s);
	if (err) {
		kill(p->pid, SIGKILL);
		tl_wait(p, 5);
	}
	return err;
}

int tl_finish(struct tl_proc *p, int sig, double timeout_s)
{
	char line[1024];

	if (sig)
		kill(p->pid, sig);
	while (p->err && fgets(line, sizeof(line), p->err))
		fputs(line, stderr);
	return tl_wait(p, timeout_s);
}

static void *log_reader(void *arg)
{
	struct tl_log *l = arg;
	char line[4096];

	while (fgets(line, sizeof(line), l->f)) {
		size_t n = strlen(line);

		fputs(line, stderr); /* keep the child's words in the test log */
		pthread_mutex_lock(&l->lock);
		if (l->len + n + 1 > l->cap) {
			size_t cap = (l->len + n + 1) * 2;
			char *nb = realloc(l->buf, cap);

			if (nb) {
				l->buf = nb;
				l->cap = cap;
			}
		}
		if (l->len + n + 1 <= l->cap) {
			memcpy(l->buf + l->len, line, n + 1);
			l->len += n;
		}
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
	}
	pthread_mutex_lock(&l->lock);
	l->eof = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int tl_log_start(struct tl_log *l, FILE *f)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->f = f;
	l->cap = 4096;
	l->buf = calloc(1, l->cap);
	if (!l->buf)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	err = pthread_create(&l->thread, NULL, log_reader, l);
	return -err;
}

int tl_log_wait(struct tl_log *l, size_t from, const char *needle, double timeout_s, size_t *next)
{
	double end = mono() + timeout_s;
	int ret = -ETIMEDOUT;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		/* lines that start at or after from */
		size_t off = from;

		while (off > 0 && off <= l->len && l->buf[off - 1] != '\n')
			off++;
		while (off < l->len) {
			char *nl = memchr(l->buf + off, '\n', l->len - off);
			size_t stop = nl ? (size_t)(nl - l->buf) + 1 : l->len;

			if (!nl && !l->eof)
				break; /* a line still being written */
			if (memmem(l->buf + off, stop - off, needle, strlen(needle))) {
				if (next)
					*next = stop;
				ret = 0;
				goto out;
			}
			off = stop;
		}
		if (l->eof) {
			ret = -EPIPE;
			break;
		}
		{
			double left = end - mono();
			struct timespec ts;

			if (left <= 0)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)left;
			ts.tv_nsec += (long)((left - (time_t)left) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&l->cond, &l->lock, &ts);
		}
	}
out:
	pthread_mutex_unlock(&l->lock);
	return ret;
}

size_t tl_log_len(struct tl_log *l)
{
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->len;
	pthread_mutex_unlock(&l->lock);
	return n;
}

char *tl_log_text(struct tl_log *l)
{
	char *s;

	pthread_mutex_lock(&l->lock);
	s = strndup(l->buf, l->len);
	pthread_mutex_unlock(&l->lock);
	return s;
}

void tl_log_join(struct tl_log *l)
{
	if (!l->f)
		return;
	pthread_join(l->thread, NULL);
	fclose(l->f);
	l->f = NULL;
}

void tl_log_free(struct tl_log *l)
{
	tl_log_join(l);
	if (!l->buf)
		return;
	free(l->buf);
	l->buf = NULL;
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
}

int tl_start_logged(struct tl_proc *p, struct tl_log *l, char *const argv[], const char *ready,
		    double timeout_s)
{
	int err = tl_spawn(p, argv, false, false, true);

	if (err)
		return err;
	err = tl_log_start(l, p->err);
	p->err = NULL; /* the log's now */
	if (err) {
		kill(p->pid, SIGKILL);
		tl_wait(p, 5);
		return err;
	}
	err = tl_log_wait(l, 0, ready, timeout_s, NULL);
	if (err) {
		kill(p->pid, SIGKILL);
		tl_wait(p, 5);
	}
	return err;
}

int tl_finish_logged(struct tl_proc *p, struct tl_log *l, int sig, double timeout_s)
{
	int rc;

	if (sig)
		kill(p->pid, sig);
	rc = tl_wait(p, timeout_s);
	tl_log_join(l);
	return rc;
}
