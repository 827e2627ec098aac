// SPDX-License-Identifier: BSD-2-Clause
/* OOM kills from the mark_victim tracepoint (oom_watch.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "oom.skel.h"
#include "oom_watch.h"

struct oom_watch {
	struct oom_bpf *skel;
	oom_fn fn;
	void *ctx;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct oom_watch *w = ctx;

	if (size >= sizeof(struct ebprof_oom_event))
		w->fn(data, w->ctx);
	return 0;
}

int oom_watch_open(struct sampler *s, const char *btf_path, oom_fn fn, void *ctx,
		   struct oom_watch **out, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct oom_watch *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->ctx = ctx;
	oopts.btf_custom_path = btf_path;
	w->skel = oom_bpf__open_opts(&oopts);
	if (!w->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the OOM watch: %s", strerror(-ret));
		goto fail;
	}
	ret = oom_bpf__load(w->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the OOM watch: %s", strerror(-ret));
		goto fail;
	}
	ret = oom_bpf__attach(w->skel);
	if (ret) {
		if (ret == -ENOENT)
			snprintf(err, errlen, "no mark_victim tracepoint in this kernel");
		else
			snprintf(err, errlen, "cannot attach to mark_victim: %s", strerror(-ret));
		goto fail;
	}
	ret = sampler_add_ringbuf(s, bpf_map__fd(w->skel->maps.oom_events), on_record, w);
	if (ret) {
		snprintf(err, errlen, "cannot read the OOM watch's events: %s", strerror(-ret));
		goto fail;
	}
	*out = w;
	return 0;
fail:
	oom_watch_close(w);
	return ret;
}

void oom_watch_close(struct oom_watch *w)
{
	if (!w)
		return;
	oom_bpf__destroy(w->skel);
	free(w);
}
