// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebprof sampler: a perf_event program run on every CPU at F Hz (cpu-clock,
 * frequency mode) that counts {tgid, tid, comm, kernel stack, user stack}
 * for targeted processes, plus raw tracepoints (process.bpf.h) that follow
 * targets through fork, exec and exit so a process is targeted from its
 * first instruction.
 *
 * Configuration is in const volatile globals set by userspace before load
 * (libbpf-tools habit); the target set lives in the `targets` map, seeded
 * by userspace from a /proc scan and grown here on fork and exec.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "ebprof/bpf_shared.h"

#define EEXIST 17
#define EFAULT 14
#define E2BIG 7

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool filter_targets = true; /* false: every task (-a) */
const volatile bool want_kernel = true;
const volatile bool want_user = true;
const volatile bool follow_forks = true;
const volatile __u32 ncomms = 0;
const volatile char comms[EBPROF_MAX_COMMS][EBPROF_TASK_COMM_LEN] = {};
const volatile bool want_queries = true; /* read statements of pg_procs */
/* --unwind dwarf: wake userspace for a process sampled without a mapping
 * set (see unready()). */
const volatile bool wake_unready = false;

/* Which counts map the sampler writes to; userspace flips it to drain the
 * other one while sampling goes on. */
__u32 active_counts = 0;

/* Bumped by userspace when it forgot statement texts: every thread sends
 * its statement again at its next sample. */
__u32 query_gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);  /* tgid */
	__type(value, __u8); /* 1 = targeted */
} targets SEC(".maps");

/* cgroup v2 ids (inode numbers) whose processes are targets (--cgroup). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u8);
} target_cgroups SEC(".maps");

/* Stacks by the hash of their frames. Unlike a stack-trace map, whose
 * buckets make two different stacks evict each other (losing a share of
 * stacks that grows with their number), distinct stacks here only ever
 * compete for room; userspace frees what the drained counts no longer
 * reference. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct stack_trace);
} stacks SEC(".maps");

/* Where bpf_get_stack() writes before the stack is hashed and stored. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_trace);
} stack_scratch SEC(".maps");

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sample_key);
	__type(value, __u64);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Process events; userspace polls them every 100 ms (no wakeup per event:
 * under connection churn that was a context switch per fork and exit),
 * but for the announcement of a process without unwind tables (unready()).
 * 1 MiB holds about 21 000 events: seconds of thousands of forks a second,
 * longer than a flush keeps userspace from polling. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} events SEC(".maps");

/* struct ebprof_fresh records, for the thread that reads new processes'
 * maps (sampling/maps_prefetch.c): 64 KiB, 2 700 new processes between
 * two of its reads, which take milliseconds. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} fresh SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

static __always_inline void stat_inc(__u32 idx)
{
	stat_add(idx, 1);
}

/* A record of size bytes (statement.bpf.h, plpgsql.bpf.h) to userspace's
 * next poll, counted under sent, or under lost when the ring is full. */
static __always_inline bool ring_out(void *rec, __u64 size, __u32 lost, __u32 sent)
{
	if (bpf_ringbuf_output(&events, rec, size, BPF_RB_NO_WAKEUP)) {
		stat_inc(lost);
		return false;
	}
	stat_inc(sent);
	return true;
}

/* flags: EVENT_F_*; wake: userspace at once, rather than at its next
 * poll (100 ms); the name is task's (NULL: the current task's). Returns
 * the event's time. */
static __always_inline __u64 emit_as(__u32 type, __u32 pid, __u32 ppid, __u64 exec_pages,
				     __u32 flags, bool wake, struct task_struct *task)
{
	struct ebprof_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u64 t = bpf_ktime_get_ns();

	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return t;
	}
	e->type = type;
	e->pid = pid;
	e->ppid = ppid;
	e->flags = flags;
	e->ktime_ns = t;
	e->exec_pages = exec_pages;
	if (task)
		BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	else
		bpf_get_current_comm(&e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return t;
}

static __always_inline __u64 emit(__u32 type, __u32 pid, __u32 ppid, __u64 exec_pages, __u32 flags,
				  bool wake)
{
	return emit_as(type, pid, ppid, exec_pages, flags, wake, NULL);
}

/*
 * Reads of a process's memory: the current task's (task NULL, a constant
 * the compiler folds away in the programs that run in it), or another
 * task's from a sleepable program (the wait sampler, waits.bpf.h).
 */
static __always_inline long read_user(void *dst, __u32 size, const void *src,
				      struct task_struct *task)
{
	if (task)
		return bpf_copy_from_user_task(dst, size, src, task, 0);
	return bpf_probe_read_user(dst, size, src);
}

struct nul_scan {
	const char *s;
	__u32 n;
};

/* bpf_loop() callback: where the string ends (a loop of its own would
 * have the verifier check what follows once per length). */
static long nul_step(__u64 i, struct nul_scan *c)
{
	if (i >= EBPROF_QUERY_LEN - 1 || !c->s[i & (EBPROF_QUERY_LEN - 1)]) {
		c->n = i;
		return 1;
	}
	return 0;
}

/* A NUL-terminated string into dst (EBPROF_QUERY_LEN bytes): its length
 * with the NUL as bpf_probe_read_user_str() counts it, or a negative
 * errno. Another task's is read whole (no such helper before 6.15), else
 * up to the end of its page should the next one be unmapped; cut at
 * EBPROF_QUERY_LEN - 1 bytes. */
static __always_inline long read_user_str(char *dst, const void *src, struct task_struct *task)
{
	__u64 room = 4096 - ((__u64)src & 4095);
	struct nul_scan c = { .s = dst, .n = 0 };

	if (!task)
		return bpf_probe_read_user_str(dst, EBPROF_QUERY_LEN, src);
	if (bpf_copy_from_user_task(dst, EBPROF_QUERY_LEN, src, task, 0)) {
		/* dst is zeroed: what the first page holds, the rest zeros */
		if (room >= EBPROF_QUERY_LEN ||
		    bpf_copy_from_user_task(dst, room & (EBPROF_QUERY_LEN - 1), src, task, 0))
			return -EFAULT;
	}
	bpf_loop(EBPROF_QUERY_LEN, nul_step, &c, 0);
	return (long)c.n + 1;
}

#include "statement.bpf.h"
#include "plpgsql.bpf.h"

/* What was last announced of each sampled tgid (EVENT_FIRST since its
 * last exec, then EVENT_TITLE and EVENT_MAPS when these change). */
struct seen_state {
	__u64 title_head;	      /* first 8 bytes of its argv area, 0: unread */
	__u32 exec_pages;	      /* mm->exec_vm (pages: 16 TiB fit) */
	__u32 first_t;		      /* its first announcement: ktime >> 20 (about ms; wraps) */
	struct stmt_state stmt;	      /* statement.bpf.h */
	struct plpgsql_state plpgsql; /* plpgsql.bpf.h */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct seen_state);
} seen SEC(".maps");

#define THREAD_SIZE_X86 16384 /* x86-64 kernel stack (without KASAN) */

/* Registers of the UAPI struct pt_regs by slot (its layout is ABI). */
#define REG_RBP 4
#define REG_ORIG_AX 15
#define REG_IP 16
#define REG_SP 19
#define PT_REGS_SLOTS 21

/* Where the kernel saved the current task's user registers on entry, at
 * the top of its kernel stack (task_pt_regs(); bpf_task_pt_regs() is
 * 5.15+ only); NULL when unknown. */
static __always_inline const __u64 *saved_user_regs(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	char *stack = BPF_CORE_READ(task, stack);

	return stack ? (const __u64 *)(stack + THREAD_SIZE_X86) - PT_REGS_SLOTS : NULL;
}

/* Is a user pc saved on entry the interrupted instruction itself (an
 * exception or interrupt leaves orig_ax -1) rather than the one after a
 * system call (orig_ax holds its number)? */
static __always_inline bool entry_pc_exact(__s64 orig_ax)
{
	return orig_ax < 0;
}

/* ... for the current task, in the kernel. */
static __always_inline bool user_pc_exact(void)
{
	const __u64 *regs = saved_user_regs();
	__s64 orig_ax;

	return regs && !bpf_probe_read_kernel(&orig_ax, sizeof(orig_ax), regs + REG_ORIG_AX) &&
	       entry_pc_exact(orig_ax);
}

/* Store the frames in st (len bytes of them, zeros after) under the hash
 * of its frames and return that key; 0 when there are none, with *lost
 * set when they could not be kept. */
static __always_inline __u64 store_frames(struct stack_trace *st, long len, bool *lost)
{
	__u64 h = 14695981039346656037ULL; /* FNV-1a offset basis */
	long ret;

	if (len < (long)sizeof(__u64))
		return 0;
	for (__u32 i = 0; i < EBPROF_MAX_STACK_DEPTH; i++) {
		h ^= st->ips[i];
		h *= 1099511628211ULL; /* FNV prime */
		h ^= h >> 32;
	}
	h = h ? h : 1; /* 0 means "no stack" */
	/* Compare as int: before 6.4 the map ops behind the (JIT-inlined)
	 * helper returned int, so the upper half of r0 is zero and a long
	 * -EEXIST reads as 4294967279. */
	ret = (int)bpf_map_update_elem(&stacks, &h, st, BPF_NOEXIST);
	if (ret && ret != -EEXIST) {
		stat_inc(STAT_STACKS_FULL);
		*lost = true;
		return 0;
	}
	return h;
}

/*
 * Take the current kernel or user stack, store it under the hash of its
 * frames and return that key; 0 when there is no stack, with *lost set
 * when there was one that could not be kept.
 */
static __always_inline __u64 store_stack(void *ctx, bool user, bool *lost)
{
	struct stack_trace *st;
	__u32 zero = 0;
	long len;

	*lost = false;
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!st)
		return 0;
	/* Zero first and hash every slot: no branch on the depth inside the
	 * loop, which keeps the verifier's work (and so load time) small. */
	__builtin_memset(st, 0, sizeof(*st));
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), user ? BPF_F_USER_STACK : 0);
	if (len < 0) {
		stat_inc(len == -EFAULT ? (user ? STAT_USTACK_EFAULT : STAT_KSTACK_EFAULT)
					: STAT_STACK_OTHER);
		*lost = true;
		return 0;
	}
	return store_frames(st, len, lost);
}

static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx)
{
	/* The verifier only allows full 8-byte loads of the context's
	 * registers: keep clang from narrowing the load. */
#if defined(__TARGET_ARCH_x86)
	/* The context's registers are the UAPI struct pt_regs, whose
	 * layout is ABI: read cs (slot 17) at its fixed offset rather than
	 * through vmlinux.h's pt_regs, where 6.9+ (FRED) made cs a 2-byte
	 * union member and the CO-RE relocation of an 8-byte load to it
	 * fails on older kernels ("unexpected mem size: got 8, exp 2"). */
	__u64 cs = *(volatile __u64 *)((char *)ctx + 17 * sizeof(__u64));

	return (cs & 3) != 0;
#elif defined(__TARGET_ARCH_arm64)
	__u64 pstate = *(volatile __u64 *)&ctx->regs.pstate;

	return (pstate & 0xf) == 0;
#else
	return false;
#endif
}

#include "unwind.bpf.h"

/* About a second, in ktime >> 20 units. */
#define YOUNG_T 1024

/*
 * Is a process announced to be announced at once (EVENT_F_UNREADY): under
 * --unwind dwarf, one without a mapping set (exec'd, or forked from a
 * process that had none) is unwound by frame pointers until userspace
 * gives it one, and should it exit before userspace reads its maps, its
 * frames have no names. A forked backend with its parent's set waits for
 * the next poll, as every other event does.
 */
static __always_inline bool unready(__u32 tgid)
{
	const __u32 *set = bpf_map_lookup_elem(&unwind_pids, &tgid);

	return wake_unready && (!set || *set == EBPROF_UNWIND_NO_SET);
}

/* Is a change of its code to be announced at once: it has no set, or it
 * was announced less than a second ago (a new program's libraries, mapped
 * by the dynamic loader after its first sample, are not in its set yet,
 * its frames in them unwound by frame pointers). */
static __always_inline bool young_or_unready(const struct seen_state *last, __u32 tgid)
{
	return wake_unready &&
	       ((__u32)(bpf_ktime_get_ns() >> 20) - last->first_t < YOUNG_T || unready(tgid));
}

/* ... to the thread that reads its maps at once: the time of its event
 * (t), and which image it is. */
static __always_inline void announce_fresh(struct task_struct *task, __u32 tgid, __u64 t)
{
	struct ebprof_fresh f = { .pid = tgid,
				  .ktime_ns = t,
				  .start_code = BPF_CORE_READ(task, mm, start_code) };

	if (bpf_ringbuf_output(&fresh, &f, sizeof(f), BPF_RB_FORCE_WAKEUP))
		stat_inc(STAT_EVENTS_LOST);
}

/*
 * The argv area of a sampled process, where PostgreSQL keeps its process
 * title ("postgres: alice shop [local] idle"), sent as an EVENT_TITLE: at
 * its first sample, when the area's first bytes changed since (a backend
 * sets its title after the fork), and as it exits. A short-lived backend
 * is often gone before userspace could read /proc/PID/cmdline. Only the
 * argv area, never the environment after it.
 */
static __always_inline void send_title(struct task_struct *task, __u32 tgid)
{
	unsigned long start, end;
	struct ebprof_title *e;
	__u32 len;

	start = BPF_CORE_READ(task, mm, arg_start);
	end = BPF_CORE_READ(task, mm, arg_end);
	if (!start || end <= start)
		return;
	len = end - start > EBPROF_TITLE_LEN ? EBPROF_TITLE_LEN : end - start;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	e->h.type = EVENT_TITLE;
	e->h.pid = tgid;
	e->h.ppid = 0;
	e->h.flags = 0;
	e->h.ktime_ns = bpf_ktime_get_ns();
	e->h.exec_pages = 0;
	bpf_get_current_comm(&e->h.comm, sizeof(e->h.comm));
	e->pad = 0;
	if (len > EBPROF_TITLE_LEN) /* for the verifier */
		len = EBPROF_TITLE_LEN;
	e->len = bpf_probe_read_user(e->title, len, (const void *)start) ? 0 : len;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* The first 8 bytes of the current task's argv area, 0 when unreadable
 * (a kernel thread, a page not present). */
static __always_inline __u64 title_head(struct task_struct *task)
{
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	__u64 head = 0;

	if (!start || bpf_probe_read_user(&head, sizeof(head), (const void *)start))
		return 0;
	return head;
}

/* Announce a tgid at its first sample (EVENT_FIRST, then its title), its
 * title again when it changed, and its executable mappings when their
 * size changed (a library loaded: userspace reads its maps again).
 * Returns its entry, NULL when it has none. */
static __always_inline struct seen_state *note_sampled(struct task_struct *task, __u32 tgid)
{
	struct seen_state now = {}, *last = bpf_map_lookup_elem(&seen, &tgid);
	__u64 exec_vm = BPF_CORE_READ(task, mm, exec_vm), t;
	bool title, wake;

	now.title_head = title_head(task);
	now.exec_pages = exec_vm;
	if (!last) {
		long ret;

		now.first_t = bpf_ktime_get_ns() >> 20;
		ret = (int)bpf_map_update_elem(&seen, &tgid, &now,
					       BPF_NOEXIST); /* see store_stack() */
		if (ret == -EEXIST) /* another CPU announced it meanwhile */
			return bpf_map_lookup_elem(&seen, &tgid);
		if (ret) {
			stat_inc(STAT_SEEN_FULL);
			return NULL;
		}
		wake = unready(tgid);
		t = emit(EVENT_FIRST, tgid, 0, exec_vm, wake ? EVENT_F_UNREADY : 0, wake);
		if (wake)
			announce_fresh(task, tgid, t);
		send_title(task, tgid);
		return bpf_map_lookup_elem(&seen, &tgid);
	}
	if (last->exec_pages != now.exec_pages) {
		last->exec_pages = now.exec_pages;
		wake = young_or_unready(last, tgid);
		t = emit(EVENT_MAPS, tgid, 0, exec_vm, 0, wake);
		if (wake)
			announce_fresh(task, tgid, t);
	}
	title = now.title_head && last->title_head != now.title_head;
	if (title) {
		last->title_head = now.title_head;
		send_title(task, tgid);
	}
	return last;
}

/* What every sample and wait of a task does but its stacks: the
 * process's announcement and its statement, into key. Returns its `seen`
 * entry (NULL when it has none); *has_mm false for kernel threads. */
static __always_inline struct seen_state *task_common(struct sample_key *key, bool *has_mm)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct seen_state *seen;

	*has_mm = BPF_CORE_READ(task, mm) != NULL; /* kernel threads have no user stack */
	seen = note_sampled(task, key->tgid);
	if (!(want_queries || want_plpgsql) || !seen || !stmt_is_pg(&seen->stmt, key->tgid))
		return seen;
	if (want_queries) {
#ifdef EBPROF_QUERY_TIMING /* bench/query-capture.sh: the cost, to the ns */
		__u64 t0 = bpf_ktime_get_ns();

		read_query(&seen->stmt, key->tgid, key->tid, key);
		stat_add(STAT_QUERY_NS, bpf_ktime_get_ns() - t0);
		stat_inc(STAT_QUERY_CALLS);
#else
		read_query(&seen->stmt, key->tgid, key->tid, key);
#endif
	}
	if (want_plpgsql)
		read_plpgsql(&seen->plpgsql, &seen->stmt.pg, key->tgid, key->tid, key);
	return seen;
}

#include "sample.bpf.h"
#include "offcpu.bpf.h"
#include "waits.bpf.h"
#include "process.bpf.h"
