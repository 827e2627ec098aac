// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "remote_fixture.h"
#include "testlib.h"

/* Profile i: labels service, pid, comm, exe, backend_type; a body of
 * pseudo-random bytes (unique per i). */
static void make_prof(struct prof *p, int i, size_t len, const char *service)
{
	uint32_t x = 0x9e3779b9u * (uint32_t)(i + 7);

	memset(p, 0, sizeof(*p));
	snprintf(p->pid, sizeof(p->pid), "%d", 1000 + i);
	p->data = malloc(len);
	cr_assert(p->data);
	for (size_t j = 0; j < len; j++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p->data[j] = (uint8_t)x;
	}
	p->data[0] = 0x1f; /* looks like gzip, as the agent's */
	p->data[1] = 0x8b;
	p->kv[0] = (struct kv){ "service", service };
	p->kv[1] = (struct kv){ "pid", p->pid };
	p->kv[2] = (struct kv){ "comm", "postgres" };
	p->kv[3] = (struct kv){ "exe", "/usr/lib/postgresql/15/bin/postgres" };
	p->kv[4] = (struct kv){ "backend_type", "client backend" };
	p->rec = (struct sink_profile){
		.start_ns = 1700000000123456789LL + i * 60000000000LL,
		.end_ns = 1700000060987654321LL + i * 60000000000LL,
		.pid = (uint32_t)(1000 + i),
		.service = service,
		.comm = "postgres",
		.backend_type = "client backend",
		.labels = p->kv,
		.nlabels = 5,
		.data = p->data,
		.len = len,
	};
}

struct prof *make_profs(int n, size_t len, const char *service)
{
	struct prof *p = calloc((size_t)n, sizeof(*p));

	cr_assert(p);
	for (int i = 0; i < n; i++)
		make_prof(&p[i], i, len + (size_t)i * 131, service);
	return p;
}

void free_profs(struct prof *p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i].data);
	free(p);
}

struct remote_opts opts_for(enum remote_kind kind, const char *url, const char *dir)
{
	return (struct remote_opts){
		.kind = kind,
		.url = url,
		.queue_dir = dir,
		.backoff_initial_s = 0.05,
		.backoff_max_s = 0.2,
		.timeout_s = 5,
	};
}

struct remote *open_remote(enum remote_kind kind, const char *url, const char *dir)
{
	struct remote_opts o = opts_for(kind, url, dir);
	struct remote *r;

	cr_assert_eq(remote_open(&o, &r), 0);
	return r;
}

void rm_rf(char *dir)
{
	tl_rm_tree(dir);
	free(dir);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void wait_stats(struct remote *r, uint64_t pushed, uint64_t rejected, double timeout_s)
{
	struct remote_stats st;
	double end = now_s() + timeout_s;

	for (;;) {
		remote_get_stats(r, &st);
		if (st.pushed >= pushed && st.rejected >= rejected)
			return;
		cr_assert_lt(now_s(), end, "stats: pushed %llu/%llu rejected %llu/%llu",
			     (unsigned long long)st.pushed, (unsigned long long)pushed,
			     (unsigned long long)st.rejected, (unsigned long long)rejected);
		usleep(10000);
	}
}

/* Index of the profile whose body is that of request q, or -1. */
int which(const struct prof *p, int n, const struct coll_request *q)
{
	for (int i = 0; i < n; i++)
		if (q->len == p[i].rec.len && !memcmp(q->body, p[i].data, q->len))
			return i;
	return -1;
}

/* The accepted requests are exactly profiles want[0..nwant), in order,
 * with byte-identical bodies. */
void check_delivered(struct collector *c, const struct prof *p, int n, const int *want, int nwant)
{
	cr_assert_eq(collector_count_ok(c), (size_t)nwant, "accepted %zu, want %d",
		     collector_count_ok(c), nwant);
	for (int j = 0; j < nwant; j++) {
		struct coll_request *q = collector_get_ok(c, (size_t)j);

		cr_assert(q);
		cr_assert_eq(which(p, n, q), want[j], "request %d carries profile %d, want %d", j,
			     which(p, n, q), want[j]);
		cr_assert_str_eq(q->method, "POST");
		cr_assert_str_eq(q->content_type, "application/octet-stream");
		coll_request_free(q);
	}
}

void check_all_in_order(struct collector *c, const struct prof *p, int n)
{
	int *want = malloc(sizeof(int) * (size_t)n);

	for (int i = 0; i < n; i++)
		want[i] = i;
	check_delivered(c, p, n, want, n);
	free(want);
}

void capture_start(struct capture *cap)
{
	int fd;

	snprintf(cap->path, sizeof(cap->path), "/tmp/ebprof-test-log-XXXXXX");
	fd = mkstemp(cap->path);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	cap->saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

char *capture_end(struct capture *cap)
{
	uint8_t *buf;
	size_t len;
	char *s;

	fflush(stderr);
	dup2(cap->saved, 2);
	close(cap->saved);
	cr_assert_eq(read_file(cap->path, &buf, &len), 0);
	unlink(cap->path);
	s = malloc(len + 1);
	memcpy(s, buf, len);
	s[len] = '\0';
	free(buf);
	fputs(s, stderr); /* still visible */
	return s;
}

int count_substr(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

int count_files(const char *dir, const char *suffix)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	cr_assert(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		if (de->d_name[0] != '.' && l >= s && !strcmp(de->d_name + l - s, suffix))
			n++;
	}
	closedir(d);
	return n;
}
