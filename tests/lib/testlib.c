// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "util/fileio.h"
#include "testlib.h"

const char *tl_build(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

const char *tl_path(const char *rel)
{
	static char bufs[8][512];
	static int slot;
	char *b = bufs[slot++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tl_build(), rel);
	return b;
}

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

int tl_sh(const char *cmd, char **out)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	FILE *f;
	int status;

	if (!buf)
		return -ENOMEM;
	f = popen(cmd, "r");
	if (!f) {
		free(buf);
		return -errno;
	}
	for (;;) {
		size_t r;

		if (n + 1024 > cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	status = pclose(f);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tl_rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tl_tmpdir(const char *tag)
{
	/* Most tests keep their directory to the end: remembered here, the
	 * paths stay reachable, so the leak checker (make test SANITIZE=1)
	 * speaks of the program's leaks, not of these. */
	static char *made[256];
	static size_t nmade;
	char tmpl[256], *dir;

	snprintf(tmpl, sizeof(tmpl), "/tmp/ebprof-test-%s-XXXXXX", tag);
	dir = mkdtemp(tmpl) ? strdup(tmpl) : NULL;
	if (dir && nmade < sizeof(made) / sizeof(made[0]))
		made[nmade++] = dir;
	return dir;
}

static char scratch[256];

void tl_scratch_make(const char *tag)
{
	snprintf(scratch, sizeof(scratch), "/tmp/ebprof-test-%s-XXXXXX", tag);
	cr_assert_not_null(mkdtemp(scratch), "cannot make %s", scratch);
}

void tl_scratch_remove(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	cr_expect_eq(system(cmd), 0);
}

const char *tl_scratch_dir(void)
{
	return scratch;
}

const char *tl_at(const char *rel)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", scratch, rel);
	return b;
}

struct profile *tl_load_profile(const char *path)
{
	struct profile *p = NULL;
	uint8_t *buf;
	size_t len;
	int err = read_file(path, &buf, &len);

	if (err) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(-err));
		return NULL;
	}
	err = pprof_decode(buf, len, &p);
	free(buf);
	if (err)
		fprintf(stderr, "cannot decode %s: %s\n", path, strerror(-err));
	return p;
}

int tl_go_pprof_check(const char *path, char **out)
{
	char cmd[1024], *text = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} GOFLAGS=-mod=mod "
		 "go tool pprof -raw '%s' 2>&1",
		 path);
	rc = tl_sh(cmd, &text);
	if (rc == 0 && text && strcasestr(text, "warning"))
		rc = 1;
	if (rc)
		fprintf(stderr, "go tool pprof -raw %s failed (%d):\n%.4000s\n", path, rc,
			text ? text : "");
	if (out)
		*out = text;
	else
		free(text);
	return rc;
}

int64_t tl_label_num(const struct profile *p, const struct pf_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(profile_string(p, s->labels[i].key), key) && !s->labels[i].str)
			return s->labels[i].num;
	return -1;
}

int tl_frame_pos(const struct profile *p, const struct pf_sample *s, const char *fn)
{
	int pos = 0;

	for (size_t i = 0; i < s->nlocations; i++) {
		const struct pf_location *loc = &p->locations[s->location_ids[i] - 1];

		for (size_t j = 0; j < loc->nlines; j++, pos++) {
			const struct pf_function *f = &p->functions[loc->lines[j].function_id - 1];

			if (!strcmp(profile_string(p, f->name), fn))
				return pos;
		}
		if (!loc->nlines)
			pos++;
	}
	return -1;
}

int64_t tl_samples_with(const struct profile *p, const char *fn, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		if (pid >= 0 && tl_label_num(p, s, "pid") != pid)
			continue;
		if (tl_frame_pos(p, s, fn) >= 0)
			sum += s->values[vi];
	}
	return sum;
}

int64_t tl_samples_total(const struct profile *p, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		if (pid < 0 || tl_label_num(p, &p->samples[i], "pid") == pid)
			sum += p->samples[i].values[vi];
	return sum;
}

uint64_t tl_mapping(struct profile *p, uint64_t start, uint64_t limit, const char *file)
{
	struct pf_mapping m = { .start = start, .limit = limit };
	int64_t id;

	m.filename = profile_str(p, file);
	id = profile_add_mapping(p, &m);
	cr_assert_gt(id, 0);
	return (uint64_t)id;
}

uint64_t tl_loc(struct profile *p, uint64_t mapping, uint64_t addr, const char *fn)
{
	int64_t f = profile_add_function(p, fn, NULL, NULL, 0), l;
	struct pf_line ln = { .function_id = (uint64_t)f };

	cr_assert_gt(f, 0);
	l = profile_add_location(p, mapping, addr, &ln, 1);
	cr_assert_gt(l, 0);
	return (uint64_t)l;
}

int64_t tl_proc_cpu_ns(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char sp[384];
		long long ns;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		f = fopen(sp, "r");
		if (f && fscanf(f, "%lld", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
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

const char *tl_kv(const char *out, const char *key)
{
	static char buf[8][512];
	static int slot;
	char *b = buf[slot++ % 8], k[128];
	const char *s = out;
	size_t n;

	snprintf(k, sizeof(k), "%s=", key);
	b[0] = '\0';
	while (s && (s = strstr(s, k))) {
		if (s == out || s[-1] == '\n') {
			s += strlen(k);
			n = strcspn(s, "\n");
			snprintf(b, sizeof(buf[0]), "%.*s", (int)n, s);
			return b;
		}
		s++;
	}
	return b;
}

void tl_expect_usage_error(const char *args, const char *needle)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tl_path("ebprof"), args);
	cr_expect_eq(tl_sh(cmd, &out), 2, "%s: exit status", args);
	cr_expect(out && strstr(out, needle), "%s: no '%s' in: %s", args, needle, out ? out : "");
	free(out);
}

void tl_system(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}
