// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * OOM kills (memory profiles): at the mark_victim tracepoint, the process
 * the kernel is about to kill for lack of memory, sent to userspace, which
 * writes the last memory-context snapshot of a targeted backend at once.
 * A raw tracepoint (no tracefs needed): its first argument is the victim's
 * pid up to 6.7 and its task_struct from 6.8, when the event grew a uid
 * field (told apart by that field, CO-RE). Loaded apart from the sampler,
 * and only by sessions that take memory profiles.
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

SEC("raw_tp/mark_victim")
int on_mark_victim(struct bpf_raw_tracepoint_args *ctx)
{
	struct ebprof_oom_event *e;
	__u32 pid;

	if (bpf_core_field_exists(struct trace_event_raw_mark_victim, uid))
		pid = (__u32)BPF_CORE_READ((struct task_struct *)ctx->args[0], tgid);
	else
		pid = (__u32)ctx->args[0];
	e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->pid = pid;
	e->pad = 0;
	e->ktime_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
	return 0;
}
