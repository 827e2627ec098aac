// SPDX-License-Identifier: BSD-2-Clause
/*
 * The processes an ad hoc profile samples: the agent's target set
 * (its comm, pid and cgroup rules and the descendants of matches), narrowed
 * by the request's pid= and comm= selectors. A selector never widens the
 * set: the HTTP API is unauthenticated, so it cannot be used to look into
 * processes the agent was not configured to profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "util/log.h"
#include "process/targets.h"

static bool contains(const uint32_t *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The agent's target processes right now; *out malloc'ed. */
static int agent_set(const struct http_server *s, uint32_t **out, size_t *n)
{
	struct target_rules rules = { .comms = (const char *const *)s->comms,
				      .ncomms = s->ncomms,
				      .pids = s->pids,
				      .npids = s->npids,
				      .cgroups = (const char *const *)s->cgroups,
				      .ncgroups = s->ncgroups,
				      .descendants = true };

	return targets_scan(&rules, out, n);
}

int http_targets_resolve(const struct http_server *s, const struct adhoc_request *r,
			 struct adhoc_targets *t, char *msg, size_t msglen)
{
	uint32_t *all = NULL, *named = NULL;
	size_t nall = 0, nnamed = 0;
	int ret, status = 0;

	memset(t, 0, sizeof(*t));
	if (!r->npids && !r->ncomms)
		return 0;
	t->narrowed = true;
	ret = agent_set(s, &all, &nall);
	if (!ret && r->ncomms) {
		struct target_rules rules = { .comms = (const char *const *)r->comms,
					      .ncomms = r->ncomms };

		ret = targets_scan(&rules, &named, &nnamed);
	}
	if (ret) {
		snprintf(msg, msglen, "cannot find the target processes: %s", strerror(-ret));
		log_error("http: %s", msg);
		status = 500;
		goto out;
	}
	for (size_t i = 0; i < r->npids; i++) {
		if (!contains(all, nall, r->pids[i])) {
			snprintf(msg, msglen, "pid %u is not one of the agent's target processes",
				 r->pids[i]);
			status = 400;
			goto out;
		}
	}
	t->pids = malloc((nall ? nall : 1) * sizeof(*t->pids));
	if (!t->pids) {
		snprintf(msg, msglen, "out of memory");
		status = 500;
		goto out;
	}
	for (size_t i = 0; i < nall; i++) {
		if (r->npids && !contains(r->pids, r->npids, all[i]))
			continue;
		if (r->ncomms && !contains(named, nnamed, all[i]))
			continue;
		if (!contains(t->pids, t->npids, all[i]))
			t->pids[t->npids++] = all[i];
	}
	if (!t->npids) {
		snprintf(msg, msglen, "no target process of the agent matches the given %s",
			 r->npids ? "pid and comm" : "comm");
		status = 404;
	}
out:
	if (status) {
		free(t->pids);
		t->pids = NULL;
		t->npids = 0;
	}
	free(all);
	free(named);
	return status;
}

int http_targets_any(const struct http_server *s)
{
	uint32_t *all = NULL;
	size_t n = 0;
	int ret = agent_set(s, &all, &n);

	free(all);
	return ret ? ret : n > 0;
}
