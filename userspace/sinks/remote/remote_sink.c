// SPDX-License-Identifier: BSD-2-Clause
/* A remote (profefe or Pyroscope) as a sink (remote.h): each profile is
 * queued on disk and pushed by the remote's worker. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "remote.h"

static int write_profile(struct sink *s, const struct sink_profile *rec)
{
	return remote_enqueue((struct remote *)s, rec);
}

static void describe(struct sink *s, char *buf, size_t len)
{
	struct remote_stats st;

	remote_get_stats((struct remote *)s, &st);
	snprintf(buf, len, "%s: %llu pushed, %llu queued", remote_name((struct remote *)s),
		 (unsigned long long)st.pushed, (unsigned long long)st.queued);
}

static size_t metrics(struct sink *s, struct sink_metric *out)
{
	static const char *const states[] = { "pushed", "queued", "retried", "rejected",
					      "dropped" };
	struct remote_stats st;
	uint64_t v[5];

	remote_get_stats((struct remote *)s, &st);
	v[0] = st.pushed;
	v[1] = st.queued;
	v[2] = st.retries;
	v[3] = st.rejected;
	v[4] = st.dropped;
	for (size_t i = 0; i < 5; i++) {
		out[i] = (struct sink_metric){ "ebprof_remote_profiles", "gauge",
					       "Remote push, by remote and state." };
		snprintf(out[i].labels, sizeof(out[i].labels), "remote=\"%s\",state=\"%s\"",
			 remote_name((struct remote *)s), states[i]);
		out[i].value = v[i];
	}
	return 5;
}

static void close_sink(struct sink *s, double drain_s)
{
	remote_close((struct remote *)s, drain_s);
}

const struct sink_ops remote_sink_ops = {
	.kind = "remote",
	.wants_pprof = true,
	.write = write_profile,
	.describe = describe,
	.metrics = metrics,
	.close = close_sink,
};

int remote_sink_open(const struct remote_opts *opts, struct sink **out)
{
	struct remote *r;
	int err = remote_open(opts, &r);

	if (!err)
		*out = remote_as_sink(r);
	return err;
}
