// SPDX-License-Identifier: BSD-2-Clause
/*
 * Waits in progress at a drain, on the switch path (bpf/offcpu.bpf.h's
 * `offcpu_cut`, a task iterator: 5.9+). The switch path counts a wait
 * where it ends, in the thread, so one still going on at the end of an
 * interval or a recording would be counted in no interval until it ends,
 * however long. At each drain the iterator cuts the part of every wait in
 * progress so far (its start moves to now, the rest is counted later) and
 * hands it over with its kernel stack: what can be had of another thread
 * without sleeping. Its PostgreSQL wait event and statement are read here
 * from the backend's memory (process_vm_readv, as pg_attach.c says where:
 * the `pg_procs` entry), the statement sent to the session as the BPF
 * program sends it; it has no user stack (the thread's own unwind is
 * where the wait ends).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf_features.h"
#include "process/memread.h"
#include "sampler_internal.h"
#include "util/log.h"

#define CUT_READ_BUDGET (64 * 1024) /* bytes read of a backend per cut */
#define STATUS_SPAN 256		    /* as bpf/statement.bpf.h reads PgBackendStatus */

void offcpu_cut_attach(struct sampler *s)
{
	if (s->offcpu_path != SAMPLER_OFFCPU_SWITCH || s->cut_link ||
	    !bpf_program__autoload(s->skel->progs.offcpu_cut))
		return;
	s->cut_link = bpf_program__attach_iter(s->skel->progs.offcpu_cut, NULL);
	if (!s->cut_link) {
		log_debug("off-CPU: no task iterator to cut waits in progress (%s): a wait is "
			  "counted where it ends",
			  strerror(errno));
		return;
	}
	/* the waits going on now count from now */
	offcpu_cut(s, NULL, NULL);
}

void offcpu_cut_detach(struct sampler *s)
{
	bpf_link__destroy(s->cut_link);
	s->cut_link = NULL;
}

/* bpf/statement.bpf.h's hash_text(): FNV-1a a word at a time over len
 * bytes (its NUL counted), the bytes past them masked. */
static uint64_t text_hash(const char *text, size_t len)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i * 8 < len && i < EBPROF_QUERY_LEN / 8; i++) {
		size_t left = len - i * 8;
		uint64_t w = 0;

		memcpy(&w, text + i * 8, left < 8 ? left : 8);
		h ^= w;
		h *= 1099511628211ULL;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* The statement backend r runs, as read_query() labels it: its hash in
 * rs (its text sent to the session first), its query id, or the gap
 * between two statements. */
static void read_statement(struct sampler *s, struct memread *m, const struct ebprof_pg_proc *pg,
			   const struct offcpu_cut_rec *r, struct raw_sample *rs)
{
	struct ebprof_query *q = calloc(1, sizeof(*q));
	uint64_t be = 0, str = 0;
	int32_t state = -1;
	bool cut = false;
	size_t len;

	if (!q)
		return;
	if (pg->be_entry && !memread_read(m, pg->be_entry, &be, sizeof(be)) && be &&
	    !memread_read(m, be + pg->state_off, &state, sizeof(state)) &&
	    state == pg->state_running && pg->query_id_off)
		memread_read(m, be + pg->query_id_off, &rs->query_id, sizeof(rs->query_id));
	if (memread_read(m, pg->query_string, &str, sizeof(str)) || !str ||
	    memread_string(m, str, q->text, sizeof(q->text), &cut) || !q->text[0]) {
		rs->query_gap = state == pg->state_running;
		free(q);
		return;
	}
	len = strlen(q->text);
	q->h.type = EVENT_QUERY;
	q->h.pid = r->tgid;
	q->h.ppid = r->tid;
	q->hash = text_hash(q->text, len + 1);
	q->len = (uint32_t)len;
	q->truncated = cut;
	rs->query = q->hash;
	if (s->on_event)
		s->on_event(&q->h, s->event_ctx);
	free(q);
}

/* The wait event and statement of a PostgreSQL backend's thread. */
static void pg_labels(struct sampler *s, const struct offcpu_cut_rec *r, struct raw_sample *rs)
{
	struct ebprof_pg_proc pg;
	struct memread *m;
	uint64_t where = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.pg_procs), &r->tgid, &pg) ||
	    !pg.query_string || memread_new_pid((pid_t)r->tgid, CUT_READ_BUDGET, &m))
		return;
	if (pg.wait_event) {
		rs->has_wait = true;
		rs->pg_major = (uint16_t)pg.major;
		if (!memread_read(m, pg.wait_event, &where, sizeof(where)) && where)
			memread_read(m, where + pg.wait_event_off, &rs->wait_event,
				     sizeof(rs->wait_event));
	}
	if (s->skel->rodata->want_queries)
		read_statement(s, m, &pg, r, rs);
	memread_free(m);
}

#define CUT_CHUNK 16 /* records read at once */

/* A record cut, as a raw sample for fn. */
static int deliver(struct sampler *s, const struct offcpu_cut_rec *r, raw_sample_fn fn, void *ctx)
{
	struct raw_sample rs = { 0 };

	rs.type = PTYPE_OFFCPU;
	rs.pid = r->tgid;
	rs.tid = r->tid;
	memcpy(rs.comm, r->comm, sizeof(rs.comm));
	rs.comm[sizeof(rs.comm) - 1] = '\0';
	rs.count = 1;
	rs.nkernel = r->nkernel < EBPROF_MAX_STACK_DEPTH ? r->nkernel : EBPROF_MAX_STACK_DEPTH;
	rs.kernel = (const uint64_t *)r->ips;
	rs.offcpu_state = r->state;
	rs.offcpu_ns = (uint64_t)((double)r->ns * s->offcpu_scale);
	pg_labels(s, r, &rs);
	return fn(&rs, ctx);
}

/* fn NULL: the threads away now are away from now on (nothing was
 * seen of them yet: there is nothing to cut). */
int offcpu_cut(struct sampler *s, raw_sample_fn fn, void *ctx)
{
	const size_t rec = sizeof(struct offcpu_cut_rec);
	char *buf;
	size_t have = 0;
	int fd, n = 0, ret = 0;
	ssize_t got;

	if (!s->cut_link)
		return 0;
	buf = malloc(CUT_CHUNK * rec);
	fd = buf ? bpf_iter_create(bpf_link__fd(s->cut_link)) : -1;
	if (fd < 0) {
		log_debug("off-CPU: cannot cut the waits in progress: %s",
			  strerror(buf ? errno : ENOMEM));
		free(buf);
		return 0; /* they are counted where they end */
	}
	/* whole records (bpf_seq_write), which a read may split */
	while (ret >= 0 && (got = read(fd, buf + have, CUT_CHUNK * rec - have)) > 0) {
		size_t done = 0;

		have += (size_t)got;
		for (; ret >= 0 && have - done >= rec; done += rec, n++) {
			struct offcpu_cut_rec r;

			memcpy(&r, buf + done, rec);
			ret = fn ? deliver(s, &r, fn, ctx) : 0;
		}
		memmove(buf, buf + done, have - done);
		have -= done;
	}
	close(fd);
	free(buf);
	return ret < 0 ? ret : n;
}
