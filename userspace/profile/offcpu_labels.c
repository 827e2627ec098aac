// SPDX-License-Identifier: BSD-2-Clause
/*
 * The labels of an off-CPU sample (build_internal.h): why the thread was
 * away (`state`) and, for a PostgreSQL backend, the wait event it had set
 * as it left (`wait_event_type`, `wait_event`, PostgreSQL's own names).
 * A backend that set none is `uninstrumented`; one waiting for its client
 * with no statement running is `idle`, not `sleeping`, so views can leave
 * idle connections out.
 */
#include <stdio.h>

#include "offcpu_labels.h"
#include "process/pgwait.h"

/* PG_WAIT_CLIENT | WAIT_EVENT_CLIENT_READ: the same value in 12..17 */
#define CLIENT_READ 0x06000000u

static const char *const state_names[OFFCPU_STATE_MAX] = {
	[OFFCPU_SLEEPING] = "sleeping",
	[OFFCPU_DISK] = "disk",
	[OFFCPU_RUNNABLE] = "runnable",
};

const char *offcpu_state_name(const struct raw_sample *s)
{
	if (s->has_wait && s->wait_event == CLIENT_READ && !s->query && !s->query_gap &&
	    s->offcpu_state == OFFCPU_SLEEPING)
		return "idle";
	return s->offcpu_state < OFFCPU_STATE_MAX && state_names[s->offcpu_state]
		       ? state_names[s->offcpu_state]
		       : "unknown";
}

size_t offcpu_labels(struct profile *p, const struct raw_sample *s, struct pf_label *labels,
		     size_t n)
{
	char type[32], event[64];

	labels[n++] = profile_label_str(p, "state", offcpu_state_name(s));
	if (!s->has_wait)
		return n;
	if (!s->wait_event) {
		labels[n++] = profile_label_str(p, "wait_event_type", "uninstrumented");
		labels[n++] = profile_label_str(p, "wait_event", "uninstrumented");
		return n;
	}
	pg_wait_event_name(s->wait_event, s->pg_major, type, sizeof(type), event, sizeof(event));
	labels[n++] = profile_label_str(p, "wait_event_type", type);
	labels[n++] = profile_label_str(p, "wait_event", event);
	return n;
}
