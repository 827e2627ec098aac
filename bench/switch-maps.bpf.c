// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where a thread's off-CPU start could live (bench/switch-maps.sh): five
 * programs at sched_switch, attached together, each keeping the leaving
 * thread's switch time the way one kind of storage allows. bpf_stats
 * gives each its run time under the same load, so the differences are
 * what the storage costs:
 *  - maps_empty: nothing (the hook and bpf_stats' own cost);
 *  - maps_clock: the clock read alone, into a per-CPU slot (a global
 *                written from every CPU would bounce between them);
 *  - maps_lru:   an LRU hash keyed by tid (what ebprof uses);
 *  - maps_array: an array slot chosen by the tid's low bits, tagged with
 *                tid and tgid (the verifier inlines an array lookup);
 *  - maps_task:  task-local storage of current (bpf_get_current_task_btf).
 * Every thread of the host is kept, as a targeted one would be.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct entry {
	__u64 ts;
	__u32 tid;
	__u32 tgid;
};

#define SLOTS 16384

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, struct entry);
} by_tid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, struct entry);
} by_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct entry);
} by_task SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last_ts SEC(".maps");

SEC("raw_tp/sched_switch")
int maps_empty(void *ctx)
{
	return 0;
}

SEC("raw_tp/sched_switch")
int maps_clock(void *ctx)
{
	__u32 zero = 0;
	__u64 *ts = bpf_map_lookup_elem(&last_ts, &zero);

	if (ts)
		*ts = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/sched_switch")
int maps_lru(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct entry *e = bpf_map_lookup_elem(&by_tid, &tid), fresh = {};

	if (e) {
		e->ts = bpf_ktime_get_ns();
		return 0;
	}
	fresh.tid = tid;
	fresh.tgid = id >> 32;
	fresh.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&by_tid, &tid, &fresh, BPF_ANY);
	return 0;
}

SEC("raw_tp/sched_switch")
int maps_array(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, slot = tid & (SLOTS - 1);
	struct entry *e = bpf_map_lookup_elem(&by_slot, &slot);

	if (!e)
		return 0;
	if (e->tid != tid || e->tgid != id >> 32) {
		e->tid = tid;
		e->tgid = id >> 32;
	}
	e->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/sched_switch")
int maps_task(void *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct entry *e;

	e = bpf_task_storage_get(&by_task, t, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (e)
		e->ts = bpf_ktime_get_ns();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
