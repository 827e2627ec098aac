// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * OOM kills (memory profiles): at oom/mark_victim, the process the kernel
 * is about to kill for lack of memory, sent to userspace, which writes the
 * last memory-context snapshot of a targeted backend at once. A classic
 * tracepoint: its `pid` field is there on every kernel (5.10's has only
 * it; 6.x adds the victim's memory, read where the field exists). Loaded
 * apart from the sampler, and only by sessions that take memory profiles.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ebprof/bpf_shared.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* a page: OOM kills are rare */
} oom_events SEC(".maps");

SEC("tracepoint/oom/mark_victim")
int on_mark_victim(struct trace_event_raw_mark_victim *ctx)
{
	struct ebprof_oom_event *e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);

	if (!e)
		return 0;
	e->pid = (__u32)BPF_CORE_READ(ctx, pid);
	e->pad = 0;
	e->ktime_ns = bpf_ktime_get_ns();
	e->anon_rss_kb = 0;
	if (bpf_core_field_exists(ctx->anon_rss))
		e->anon_rss_kb = BPF_CORE_READ(ctx, anon_rss);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
