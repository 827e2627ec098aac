// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/pprof.h"
#include "store_fixture.h"

int sf_profile(uint32_t pid, const char *comm, const char *leaf, int64_t start_s, int types,
	       uint8_t **buf, size_t *len)
{
	struct profile *p = profile_new();
	struct pf_mapping m = { .start = 0x555555554000, .limit = 0x555555a00000 };
	struct pf_line ln[2] = { { .line = 10 }, { .line = 20 } };
	struct pf_label lab[3];
	int64_t mid, f_main, f_leaf, l_main, l_leaf;
	uint64_t st[2];
	int err = -ENOMEM;

	if (!p)
		return -ENOMEM;
	if (types == 0)
		err = profile_add_sample_type(p, "samples", "count") ||
		      profile_add_sample_type(p, "cpu", "nanoseconds") ||
		      profile_set_period(p, "cpu", "nanoseconds", SF_PERIOD);
	else
		err = profile_add_sample_type(p, "alloc_space", "bytes") ||
		      profile_add_sample_type(p, "alloc_objects", "count");
	if (err) {
		err = -ENOMEM;
		goto out;
	}
	p->time_nanos = start_s * 1000000000LL;
	p->duration_nanos = 60 * 1000000000LL;
	m.filename = profile_str(p, "/usr/lib/postgresql/15/bin/postgres");
	m.build_id = profile_str(p, "0123456789abcdef0123456789abcdef01234567");
	m.has_functions = m.has_filenames = m.has_line_numbers = true;
	mid = profile_add_mapping(p, &m);
	f_main = profile_add_function(p, "PostmasterMain", "PostmasterMain", "postmaster.c", 1);
	f_leaf = profile_add_function(p, leaf, leaf, "backend.c", 1);
	err = -ENOMEM;
	if (mid < 0 || f_main < 0 || f_leaf < 0)
		goto out;
	ln[0].function_id = (uint64_t)f_main;
	ln[1].function_id = (uint64_t)f_leaf;
	l_main = profile_add_location(p, (uint64_t)mid, 0x555555600000, &ln[0], 1);
	l_leaf = profile_add_location(p, (uint64_t)mid, 0x555555700000 + pid, &ln[1], 1);
	if (l_main < 0 || l_leaf < 0)
		goto out;
	st[0] = (uint64_t)l_leaf;
	st[1] = (uint64_t)l_main;
	lab[0] = profile_label_num(p, "pid", pid, NULL);
	lab[1] = profile_label_num(p, "tid", pid, NULL);
	lab[2] = profile_label_str(p, "thread_name", comm);
	{
		int64_t v[2] = { SF_SAMPLES, SF_SAMPLES * SF_PERIOD };

		err = profile_add_sample(p, st, 2, v, lab, 3);
	}
	if (!err)
		err = profile_add_comment(p, "ebprof test fixture");
	if (!err)
		err = pprof_encode(p, true, buf, len);
out:
	profile_free(p);
	return err;
}

int sf_put(struct store *s, const char *service, uint32_t pid, const char *bt, const char *user,
	   int64_t start_s, const uint8_t *data, size_t len, char *path, size_t pathlen)
{
	struct kv labels[8];
	struct sink_profile r = { 0 };
	char pidbuf[16];
	size_t n = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%u", pid);
	labels[n++] = (struct kv){ "service", service };
	labels[n++] = (struct kv){ "pid", pidbuf };
	labels[n++] = (struct kv){ "comm", "postgres" };
	labels[n++] = (struct kv){ "exe", "/usr/lib/postgresql/15/bin/postgres" };
	labels[n++] = (struct kv){ "backend_type", bt };
	labels[n++] = (struct kv){ "pg_user", user };
	r.start_ns = start_s * 1000000000LL;
	r.end_ns = r.start_ns + 60 * 1000000000LL;
	r.pid = pid;
	r.service = service;
	r.comm = "postgres";
	r.backend_type = bt;
	r.labels = labels;
	r.nlabels = n;
	r.data = data;
	r.len = len;
	return store_write(s, &r, path, pathlen);
}

static int put_profile(struct store *s, const char *service, uint32_t pid, const char *bt,
		       const char *user, const char *leaf, int64_t start_s)
{
	uint8_t *buf;
	size_t len;
	int err = sf_profile(pid, "postgres", leaf, start_s, 0, &buf, &len);

	if (err)
		return err;
	err = sf_put(s, service, pid, bt, user, start_s, buf, len, NULL, 0);
	free(buf);
	return err;
}

int sf_build(const char *dir)
{
	struct store_opts o = { .dir = dir };
	struct store *s;
	int err;

	err = store_open(&o, &s);
	if (err)
		return err;
	err = put_profile(s, "db1", 100, "checkpointer", "postgres", "CheckpointerMain", SF_T0);
	if (!err)
		err = put_profile(s, "db1", 100, "checkpointer", "postgres", "CheckpointerMain",
				  SF_T0 + 60);
	if (!err)
		err = put_profile(s, "db1", 200, "client backend", "alice", "exec_simple_query",
				  SF_T0);
	if (!err)
		err = put_profile(s, "db1", 201, "client backend", "bob", "exec_simple_query",
				  SF_T0 + 60);
	if (!err)
		err = put_profile(s, "db1", 300, "autovacuum worker", "postgres", "do_autovacuum",
				  SF_T0 + 120);
	if (!err)
		err = put_profile(s, "db2", 400, "client backend", "alice", "exec_simple_query",
				  SF_T0);
	store_close(s);
	return err;
}
