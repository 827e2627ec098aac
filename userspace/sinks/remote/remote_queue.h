/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The on-disk queue of one remote: one file per profile in its own
 * directory, named p-<20-digit sequence>.ebpq so that lexical order is
 * enqueue order; the sequence continues from the highest present at open.
 * File format:
 *
 *   "EBPQ1\n" <one-line JSON header> "\n" <pprof bytes, as enqueued>
 *
 * header: {"start_ns":..,"end_ns":..,"pid":..,"service":"..","comm":..,
 * "backend_type":..|null,"labels":[["k","v"],...],"len":N,"crc32":C}
 * (crc32 of the pprof bytes; invalid UTF-8 in strings is stored with '?').
 * Files are written atomically (temp + fsync + rename + directory fsync).
 * At open, every file is checked; a corrupt one is renamed to
 * <name>.corrupt (kept for inspection, never sent) with a warning, and
 * temp files left by a crash are removed.
 *
 * The queue is bounded by max_bytes (sum of file sizes): a push first
 * drops the oldest files until the new one fits. The item being sent (the
 * one rq_peek() returned) is never dropped, so the bound may be exceeded
 * by that one profile. Dropped profiles are counted and logged (at most
 * once a minute).
 *
 * Not thread-safe: the owner serializes every call. The queue owns its
 * memory; items returned by rq_peek() belong to the caller.
 */
#ifndef EBPROF_REMOTE_QUEUE_H
#define EBPROF_REMOTE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

#define RQ_MAGIC "EBPQ1\n"
#define RQ_MAGIC_LEN 6

struct rqueue;

/* One queued profile, loaded from its file. rec's pointers point into the
 * item, valid until rq_item_free(). */
struct rq_item {
	uint64_t seq;
	struct sink_profile rec;
	/* private */
	void *hdr;	/* json_t * */
	uint8_t *file;	/* whole file; rec.data points into it */
	struct kv *kvs; /* rec.labels */
};

/* Create dir if needed (0750), lock it (flock; -EBUSY when another queue
 * has it open), load what a previous run left. what prefixes log messages
 * (e.g. "remote profefe URL"), copied. 0 or -errno. */
int rq_open(const char *dir, int64_t max_bytes, const char *what, struct rqueue **out);
/* Persist one profile (the record is copied). -EFBIG when the profile
 * alone is larger than the bound (then counted as dropped). 0 or -errno. */
int rq_push(struct rqueue *q, const struct sink_profile *rec);
/* Load the oldest profile and mark it in flight. Corrupt or vanished files
 * met on the way are dropped with a warning. -ENOENT when the queue is
 * empty, other -errno on I/O errors (the file stays queued). */
int rq_peek(struct rqueue *q, struct rq_item **out);
/* The in-flight profile is finished: remove it from the queue and the disk
 * when remove is true, otherwise keep it (it is peeked again next time). */
void rq_done(struct rqueue *q, uint64_t seq, bool remove);
void rq_item_free(struct rq_item *it);

size_t rq_count(const struct rqueue *q);
int64_t rq_bytes(const struct rqueue *q);
/* Profiles dropped because the queue was full, since open. */
uint64_t rq_dropped(const struct rqueue *q);
/* Frees memory only; the files stay. NULL is fine. */
void rq_close(struct rqueue *q);

/* The file of one record (remote_queue_file.c): *buf malloc'ed. 0 or
 * -errno. */
int rq_serialize(const struct sink_profile *rec, uint8_t **buf, size_t *len);
/* Parse a whole file (buf, taken over: freed on error too) of sequence seq
 * into *out. 0, -EBADMSG for a corrupt file, -ENOMEM. */
int rq_parse_item(uint8_t *buf, size_t len, uint64_t seq, struct rq_item **out);

/* Name of the file holding seq ("p-%020llu.ebpq"); buf of >= 32 bytes. */
void rq_file_name(uint64_t seq, char *buf, size_t len);

#endif /* EBPROF_REMOTE_QUEUE_H */
