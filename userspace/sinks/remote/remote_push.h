/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pyroscope's push API (push.v1.PusherService/Push, the Connect protocol
 * over HTTP POST, protobuf body: proto/push.proto), which the agent uses
 * for the profiles Pyroscope's /ingest cannot name (/ingest names a
 * pprof's series from its sample types, and "offcpu" would land in
 * process_cpu): each type's table entry (util/profile_types.h) says
 * whether it goes this way and under which __name__ (offcpu as Grafana's
 * own eBPF profiler names them, faults).
 *
 * A profile is one series: __name__, service_name (the app name /ingest
 * would use) and every label /ingest would send, keys sanitized the same
 * way (remote_url.h), values as they are (sink.h: UTF-8); one sample, the
 * gzip-compressed pprof, with a random UUID as its ID.
 *
 * Strings and buffers returned are malloc'ed, the caller frees them.
 */
#ifndef EBPROF_REMOTE_PUSH_H
#define EBPROF_REMOTE_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

#define RHTTP_PUSH_PATH "/push.v1.PusherService/Push"
#define RHTTP_PUSH_CONTENT_TYPE "application/proto"

/* Is rec pushed with the push API (else /ingest)? Its series name. */
bool rhttp_push_wanted(const struct sink_profile *rec);
const char *rhttp_push_metric(const struct sink_profile *rec);

/* {base}/push.v1.PusherService/Push, or NULL on ENOMEM. */
char *rhttp_push_url(const char *base);

/* The PushRequest of rec (rec->data must hold its pprof): 0, -EINVAL
 * without data, -ENOMEM. */
int rhttp_push_body(const struct sink_profile *rec, uint8_t **out, size_t *len);

#endif /* EBPROF_REMOTE_PUSH_H */
