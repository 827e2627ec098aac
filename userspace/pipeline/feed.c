// SPDX-License-Identifier: BSD-2-Clause
/*
 * A session fed by its caller instead of BPF (session.h): the process
 * registry, the builders, the labels and the sinks of a sampled session,
 * with the raw samples handed by the caller at each flush. It exists so
 * the flush path can be measured at a scale this host cannot sample
 * (bench/pipeline-scale.c: 64 CPUs, a thousand backends) with the code
 * the agent runs, not a copy of it.
 */
#include <errno.h>
#include <stdlib.h>

#include "session_internal.h"
#include "util/timeutil.h"

int session_open_fed(const struct session_opts *o, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	ret = session_init(s, o);
	if (!ret)
		ret = session_start_clock(s);
	if (ret) {
		session_close(s);
		return ret;
	}
	*out = s;
	return 0;
}

int session_fed_process(struct session *s, uint32_t pid, uint32_t ppid)
{
	const struct proc_info *parent;

	if (!ppid)
		return procs_snapshot(s->procs, pid, false);
	parent = procs_get(s->procs, ppid);
	if (!parent)
		return -ESRCH;
	/* a fork as BPF reports it (time unknown: not a young process), then
	 * its first sample with its parent's executable pages */
	procs_on_fork(s->procs, pid, ppid, 0);
	return procs_on_sampled(s->procs, pid, parent->exec_pages);
}

int session_flush_fed(struct session *s, int64_t end_ns, session_drain_fn drain, void *ctx,
		      struct session_interval *iv)
{
	int ret = session_flush_from(s, false, end_ns, drain, ctx, iv);

	s->interval_start_mono_ns = mono_ns();
	return ret;
}
