// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "sinks/remote/remote_queue.h"
#include "remote_fixture.h"
#include "testlib.h"

TestSuite(remote_queue, .timeout = 30);

/* A record with a body of len pseudo-random bytes derived from i. */
struct rec_buf {
	struct sink_profile rec;
	struct kv kv[4];
	char pid[16], svc[32];
	uint8_t *data;
};

static void make_rec(struct rec_buf *b, int i, size_t len)
{
	uint32_t x = 0x9e3779b9u * (uint32_t)(i + 1);

	memset(b, 0, sizeof(*b));
	snprintf(b->pid, sizeof(b->pid), "%d", 1000 + i);
	snprintf(b->svc, sizeof(b->svc), "svc%d", i % 3);
	b->data = malloc(len ? len : 1);
	cr_assert(b->data);
	for (size_t j = 0; j < len; j++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b->data[j] = (uint8_t)x;
	}
	b->kv[0] = (struct kv){ "service", b->svc };
	b->kv[1] = (struct kv){ "pid", b->pid };
	b->kv[2] = (struct kv){ "comm", "postgres" };
	b->kv[3] = (struct kv){ "backend_type", "client backend" };
	b->rec = (struct sink_profile){
		.start_ns = 1700000000000000000LL + i * 60000000000LL,
		.end_ns = 1700000060000000000LL + i * 60000000000LL,
		.pid = (uint32_t)(1000 + i),
		.service = b->svc,
		.comm = "postgres",
		.backend_type = i % 2 ? "client backend" : NULL,
		.labels = b->kv,
		.nlabels = 4,
		.data = b->data,
		.len = len,
	};
}

static void check_same(const struct sink_profile *a, const struct sink_profile *b)
{
	cr_assert_eq(a->start_ns, b->start_ns);
	cr_assert_eq(a->end_ns, b->end_ns);
	cr_assert_eq(a->pid, b->pid);
	cr_assert_str_eq(a->service, b->service);
	cr_assert_str_eq(a->comm, b->comm);
	if (a->backend_type)
		cr_assert_str_eq(a->backend_type, b->backend_type);
	else
		cr_assert_null(b->backend_type);
	cr_assert_eq(a->nlabels, b->nlabels);
	for (size_t i = 0; i < a->nlabels; i++) {
		cr_assert_str_eq(a->labels[i].key, b->labels[i].key);
		cr_assert_str_eq(a->labels[i].value, b->labels[i].value);
	}
	cr_assert_eq(a->len, b->len);
	cr_assert(!memcmp(a->data, b->data, a->len), "body differs");
}

static char *file_of(const char *dir, uint64_t seq)
{
	char name[32], *p;

	rq_file_name(seq, name, sizeof(name));
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

/* Pop n items, checking they match recs[first..first+n). */
static void pop_check(struct rqueue *q, struct rec_buf *recs, int first, int n)
{
	struct rq_item *it;

	for (int i = first; i < first + n; i++) {
		cr_assert_eq(rq_peek(q, &it), 0, "item %d", i);
		check_same(&recs[i].rec, &it->rec);
		rq_done(q, it->seq, true);
		rq_item_free(it);
	}
}

static void check_empty(struct rqueue *q)
{
	struct rq_item *it;

	cr_assert_eq(rq_peek(q, &it), -ENOENT);
	cr_assert_eq(rq_count(q), 0);
	cr_assert_eq(rq_bytes(q), 0);
}

static void free_recs(struct rec_buf *recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i].data);
}

Test(remote_queue, push_peek_in_order_and_persisted)
{
	char *dir = tl_tmpdir("rq");
	struct rec_buf recs[8];
	struct rqueue *q;
	struct rq_item *it;
	char *sub, *p;

	cr_assert(asprintf(&sub, "%s/a/b", dir) > 0); /* created with parents */
	cr_assert_eq(rq_open(sub, 1 << 20, "test", &q), 0);
	for (int i = 0; i < 8; i++) {
		make_rec(&recs[i], i, 100 + (size_t)i * 37);
		cr_assert_eq(rq_push(q, &recs[i].rec), 0);
	}
	cr_assert_eq(rq_count(q), 8);
	cr_assert_eq(count_files(sub, ".ebpq"), 8);

	/* peek without removing gives the same item again */
	cr_assert_eq(rq_peek(q, &it), 0);
	cr_assert_eq(it->seq, 1);
	rq_done(q, it->seq, false);
	rq_item_free(it);
	cr_assert_eq(rq_count(q), 8);
	pop_check(q, recs, 0, 1);
	cr_assert_eq(count_files(sub, ".ebpq"), 7);
	rq_close(q);

	/* reopen: the 7 left, in order, and the sequence continues at 9 */
	cr_assert_eq(rq_open(sub, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_count(q), 7);
	cr_assert_eq(rq_push(q, &recs[0].rec), 0);
	p = file_of(sub, 9);
	cr_assert_eq(access(p, F_OK), 0, "sequence must continue at 9");
	free(p);
	pop_check(q, recs, 1, 7);
	pop_check(q, recs, 0, 1);
	check_empty(q);
	cr_assert_eq(count_files(sub, ".ebpq"), 0);
	rq_close(q);
	free_recs(recs, 8);
	free(sub);
	rm_rf(dir);
}

Test(remote_queue, empty_body_and_odd_strings)
{
	char *dir = tl_tmpdir("rq");
	struct kv kv[3] = { { "service", "s" },
			    { "weird", "a\"b\\c\nd\te" },
			    { "bad", "x\xff\xfey" } };
	struct sink_profile rec = { .start_ns = 1,
				    .end_ns = 2,
				    .pid = 7,
				    .service = "s",
				    .comm = NULL,
				    .labels = kv,
				    .nlabels = 3 };
	struct rqueue *q;
	struct rq_item *it;

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_push(q, &rec), 0);
	rq_close(q);
	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_peek(q, &it), 0);
	cr_assert_eq(it->rec.len, 0);
	cr_assert_null(it->rec.comm);
	cr_assert_str_eq(it->rec.labels[1].value, "a\"b\\c\nd\te");
	cr_assert_str_eq(it->rec.labels[2].value, "x??y", "invalid UTF-8 is stored as '?'");
	rq_done(q, it->seq, true);
	rq_item_free(it);
	rq_close(q);
	rm_rf(dir);
}

Test(remote_queue, bound_drops_oldest)
{
	char *dir = tl_tmpdir("rq");
	struct rec_buf recs[6], big;
	struct rqueue *q;
	int64_t one;

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	make_rec(&recs[0], 0, 10000);
	cr_assert_eq(rq_push(q, &recs[0].rec), 0);
	one = rq_bytes(q);
	cr_assert_gt(one, 10000);
	cr_assert_lt(one, 11000);
	pop_check(q, recs, 0, 1);
	rq_close(q);
	free_recs(recs, 1);

	/* room for exactly three */
	cr_assert_eq(rq_open(dir, one * 3 + one / 2, "test", &q), 0);
	for (int i = 0; i < 6; i++) {
		make_rec(&recs[i], i, 10000);
		cr_assert_eq(rq_push(q, &recs[i].rec), 0);
		cr_assert_leq(rq_bytes(q), one * 3 + one / 2);
	}
	cr_assert_eq(rq_count(q), 3);
	cr_assert_eq(rq_dropped(q), 3);
	cr_assert_eq(count_files(dir, ".ebpq"), 3);
	/* one profile larger than the whole bound */
	make_rec(&big, 9, (size_t)one * 4);
	cr_assert_eq(rq_push(q, &big.rec), -EFBIG);
	cr_assert_eq(rq_dropped(q), 4);
	cr_assert_eq(rq_count(q), 3);
	pop_check(q, recs, 3, 3);
	check_empty(q);
	rq_close(q);
	free_recs(recs, 6);
	free(big.data);
	rm_rf(dir);
}

Test(remote_queue, in_flight_item_is_not_dropped)
{
	char *dir = tl_tmpdir("rq");
	struct rec_buf recs[4];
	struct rqueue *q;
	struct rq_item *it, *it2;
	int64_t one;

	for (int i = 0; i < 4; i++)
		make_rec(&recs[i], i, 5000);
	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_push(q, &recs[0].rec), 0);
	one = rq_bytes(q);
	rq_close(q);
	/* a fresh directory per bound: reuse by draining first */
	cr_assert_eq(rq_open(dir, one * 2 + one / 2, "test", &q), 0);
	cr_assert_eq(rq_push(q, &recs[1].rec), 0);
	cr_assert_eq(rq_peek(q, &it), 0); /* recs[0] in flight */
	check_same(&recs[0].rec, &it->rec);
	cr_assert_eq(rq_push(q, &recs[2].rec), 0); /* drops recs[1], not recs[0] */
	cr_assert_eq(rq_dropped(q), 1);
	rq_done(q, it->seq, true);
	rq_item_free(it);
	cr_assert_eq(rq_peek(q, &it2), 0);
	check_same(&recs[2].rec, &it2->rec);
	rq_done(q, it2->seq, true);
	rq_item_free(it2);
	check_empty(q);
	rq_close(q);
	free_recs(recs, 4);
	rm_rf(dir);
}

static void write_bytes(const char *path, const void *buf, size_t len)
{
	cr_assert_eq(write_file_atomic(path, buf, len), 0);
}

static void corrupt(const char *dir, uint64_t seq, int how)
{
	char *p = file_of(dir, seq);
	uint8_t *buf;
	size_t len;

	cr_assert_eq(read_file(p, &buf, &len), 0);
	switch (how) {
	case 0: /* flip a body byte: checksum */
		buf[len - 1] ^= 0x55;
		break;
	case 1: /* truncated */
		len -= 10;
		break;
	case 2: /* bad magic */
		buf[0] = 'X';
		break;
	case 3: /* broken JSON header */
		buf[8] = '#';
		break;
	}
	write_bytes(p, buf, len);
	free(buf);
	free(p);
}

Test(remote_queue, corrupt_files_moved_aside_at_open_and_at_peek)
{
	char *dir = tl_tmpdir("rq");
	struct rec_buf recs[7];
	struct rqueue *q;
	struct rq_item *it;
	char *p;

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	for (int i = 0; i < 7; i++) {
		make_rec(&recs[i], i, 300);
		cr_assert_eq(rq_push(q, &recs[i].rec), 0);
	}
	rq_close(q);
	corrupt(dir, 2, 0);
	corrupt(dir, 3, 1);
	corrupt(dir, 4, 2);
	corrupt(dir, 6, 3);
	/* an empty file with a queue name, a crash's temp file, a stranger */
	p = file_of(dir, 100);
	write_bytes(p, "", 0);
	free(p);
	cr_assert(asprintf(&p, "%s/p-00000000000000000101.ebpq.tmp.1.abc", dir) > 0);
	write_bytes(p, "junk", 4);
	free(p);
	cr_assert(asprintf(&p, "%s/README", dir) > 0);
	write_bytes(p, "hello", 5);
	free(p);

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_count(q), 3);
	cr_assert_eq(count_files(dir, ".corrupt"), 5);
	cr_assert_eq(count_files(dir, ".abc"), 0, "temp file removed");
	cr_assert_eq(count_files(dir, "README"), 1, "other files left alone");
	/* corrupted after open: skipped at peek */
	corrupt(dir, 5, 0);
	pop_check(q, recs, 0, 1);
	cr_assert_eq(rq_peek(q, &it), 0);
	check_same(&recs[6].rec, &it->rec);
	rq_done(q, it->seq, true);
	rq_item_free(it);
	check_empty(q);
	cr_assert_eq(count_files(dir, ".corrupt"), 6);
	/* the sequence continues after the highest name seen */
	cr_assert_eq(rq_push(q, &recs[0].rec), 0);
	p = file_of(dir, 101);
	cr_assert_eq(access(p, F_OK), 0);
	free(p);
	rq_close(q);
	free_recs(recs, 7);
	rm_rf(dir);
}

Test(remote_queue, shrunk_bound_at_open_drops_oldest)
{
	char *dir = tl_tmpdir("rq");
	struct rec_buf recs[5];
	struct rqueue *q;
	int64_t one;

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	for (int i = 0; i < 5; i++) {
		make_rec(&recs[i], i, 2000);
		cr_assert_eq(rq_push(q, &recs[i].rec), 0);
	}
	one = rq_bytes(q) / 5;
	rq_close(q);
	cr_assert_eq(rq_open(dir, one * 2 + 10, "test", &q), 0);
	cr_assert_eq(rq_count(q), 2);
	cr_assert_eq(rq_dropped(q), 3);
	pop_check(q, recs, 3, 2);
	check_empty(q);
	rq_close(q);
	free_recs(recs, 5);
	rm_rf(dir);
}

Test(remote_queue, directory_used_by_one_queue_at_a_time)
{
	char *dir = tl_tmpdir("rq");
	struct rqueue *q, *q2;

	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q), 0);
	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q2), -EBUSY);
	cr_assert_null(q2);
	rq_close(q);
	cr_assert_eq(rq_open(dir, 1 << 20, "test", &q2), 0);
	rq_close(q2);
	rm_rf(dir);
}

Test(remote_queue, bad_arguments)
{
	struct rqueue *q;

	cr_assert_eq(rq_open(NULL, 1, "t", &q), -EINVAL);
	cr_assert_eq(rq_open("", 1, "t", &q), -EINVAL);
	cr_assert_eq(rq_open("/tmp", 0, "t", &q), -EINVAL);
	cr_assert_neq(rq_open("/proc/self/nope/q", 1 << 20, "t", &q), 0);
	rq_close(NULL);
	rq_item_free(NULL);
}
