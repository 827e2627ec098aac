/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The wait sampler (--type offcpu on kernels with a sleepable task
 * iterator, 5.18+), included by profile.bpf.c after offcpu.bpf.h. Nothing
 * runs at a switch: userspace reads the iterator `waits_visit` at a fixed
 * rate (sampling/sampler_waits.c), and each read visits the targets'
 * threads once (waits_visit_targets, 6.7+: its own object, below;
 * waits_visit over a link per target process, 6.1+), or every thread of the host
 * (waits_visit: older kernels, -a). A thread of a
 * target found off the CPU counts as a wait of one period (waits_ns)
 * under the same key as a wait the switch
 * path takes (struct offcpu_key: its state, kernel and user stacks,
 * statement and PostgreSQL wait event), into the same counts; a thread on
 * a CPU is the CPU sampler's.
 *
 * Another thread's memory is read with bpf_copy_from_user_task() and its
 * user registers found with bpf_task_pt_regs(), so the statement, the wait
 * event, the PL/pgSQL functions (plpgsql.bpf.h) and the CFI unwind
 * (unwind.bpf.h) are those of the perf_event programs with another
 * reader. What costs is reading the thread's memory (the labels) and the
 * unwind, so a visit reads no more than it must (`waits_threads`):
 *  - a thread whose switch count has not moved since its last visit has
 *    not run: its last key again (statement, wait event, PL/pgSQL
 *    functions and stacks), its state read anew;
 *  - a backend idle for its client (no statement, Client/ClientRead)
 *    where it was idle last (those registers: the password exchange of a
 *    new connection carries the same labels elsewhere), asleep or woken
 *    and not yet back, reads nothing: its idle labels and stacks again
 *    (its kernel stack anew when woken).
 * The targets' walk does the first and last checks under RCU as it finds
 * a thread (waits_quick()), so that such a thread costs one hash lookup.
 * A thread's visits under one key add up in its entry (its run) and go to
 * the counts when the key changes (waits_add()) or at the drain, where
 * userspace takes the runs of the epoch ending (waits_epoch), so that an
 * unchanged thread updates no count at a visit.
 * The program sleeps (a page of the target faulting in), so it keeps its
 * scratch to itself: the perf_event and switch programs run meanwhile on
 * its CPU and use theirs.
 */
#ifndef EBPROF_WAITS_BPF_H
#define EBPROF_WAITS_BPF_H

const volatile bool waits_user_fp = false; /* --unwind fp: user stacks into `stacks` */
/* What a visit counts: the time since the last one (1 s / rate, more when
 * the reader was held up), set by userspace before each. */
__u64 waits_ns = 0;
/* The runs of visits counted since the last drain (struct waits_thread's
 * run_epoch): userspace takes the runs of this epoch at a drain, visits
 * paused, and moves it on; a run of another epoch is already taken. */
__u32 waits_epoch = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct waits_thread);
} waits_threads SEC(".maps");

struct waits_scratch {
	struct offcpu_taken o;
	struct waits_thread t;
	struct stack_trace frames;
	struct ebprof_query q;
	__u64 pc, sp, bp; /* the visited thread's user registers (not on the stack: full) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct waits_scratch);
} waits_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_state);
} waits_uw SEC(".maps");

/* The PL/pgSQL walk's, its own as the rest of the scratch */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct plpgsql_scratch);
} waits_plpgsql SEC(".maps");

/* PG_WAIT_CLIENT | WAIT_EVENT_CLIENT_READ: the same value in 12..17 */
#define WAITS_CLIENT_READ 0x06000000u
#define WAITS_USTACK_FLAGS (SAMPLE_USTACK_LOST | SAMPLE_USTACK_DWARF | SAMPLE_USER_EXACT)

/* A process of a thread visited: announced as a sample announces it
 * (note_sampled()), its title left to the CPU sampler (it reads the
 * current task's memory). Its `seen` entry, NULL when it has none. */
static __always_inline struct seen_state *waits_seen(struct task_struct *task, __u32 tgid)
{
	struct seen_state now = {}, *last = bpf_map_lookup_elem(&seen, &tgid);
	__u64 exec_vm = BPF_CORE_READ(task, mm, exec_vm), t;
	bool wake;
	long ret;

	if (last) {
		if (last->exec_pages != exec_vm) {
			last->exec_pages = exec_vm;
			wake = young_or_unready(last, tgid);
			t = emit_as(EVENT_MAPS, tgid, 0, exec_vm, 0, wake, task);
			if (wake)
				announce_fresh(task, tgid, t);
		}
		return last;
	}
	now.exec_pages = exec_vm;
	now.first_t = bpf_ktime_get_ns() >> 20;
	ret = (int)bpf_map_update_elem(&seen, &tgid, &now, BPF_NOEXIST); /* see store_stack() */
	if (ret && ret != -EEXIST) {
		stat_inc(STAT_SEEN_FULL);
		return NULL;
	}
	if (!ret) {
		wake = unready(tgid);
		t = emit_as(EVENT_FIRST, tgid, 0, exec_vm, wake ? EVENT_F_UNREADY : 0, wake, task);
		if (wake)
			announce_fresh(task, tgid, t);
	}
	return bpf_map_lookup_elem(&seen, &tgid);
}

/* The kernel stack of a thread off the CPU, stored (store_frames()). */
static __always_inline __u64 waits_kstack(struct task_struct *task, struct stack_trace *st,
					  bool *lost)
{
	long len;

	*lost = false;
	__builtin_memset(st, 0, sizeof(*st));
	len = bpf_get_task_stack(task, st->ips, sizeof(st->ips), 0);
	if (len < 0) {
		stat_inc(len == -EFAULT ? STAT_KSTACK_EFAULT : STAT_STACK_OTHER);
		*lost = true;
		return 0;
	}
	return store_frames(st, len, lost);
}

/* The user registers the thread entered the kernel with (it is in it:
 * off the CPU); false when it has none. */
static __always_inline bool waits_user_regs(struct task_struct *task, struct uw_state *st)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs)
		return false;
	st->pc = BPF_CORE_READ(regs, ip);
	st->sp = BPF_CORE_READ(regs, sp);
	st->bp = BPF_CORE_READ(regs, bp);
	st->exact = entry_pc_exact((__s64)BPF_CORE_READ(regs, orig_ax));
	return st->pc != 0;
#else
	return false;
#endif
}

/* The user pc, sp and bp the thread entered the kernel with (0: none, or
 * not x86), where a user stack taken is taken again only if they moved. */
static __always_inline void waits_user_pcspbp(struct task_struct *task, __u64 *pc, __u64 *sp,
					      __u64 *bp)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	*pc = regs ? regs->ip : 0;
	*sp = regs ? regs->sp : 0;
	*bp = regs ? regs->bp : 0;
#else
	*pc = 0;
	*sp = 0;
	*bp = 0;
#endif
}

struct waits_loop {
	struct task_struct *task;
	struct uw_state *st;
};

struct waits_labels {
	struct task_struct *task;
	struct seen_state *seen;
	struct waits_scratch *sc;
};

/* The statement, wait event and PL/pgSQL functions of the visited thread
 * into the scratch key: a bpf_loop() callback of one turn, so that the
 * verifier checks the stacks' code once after it, not once per way
 * through it. */
static long waits_read_labels(__u64 i, struct waits_labels *c)
{
	struct offcpu_key *k = &c->sc->o.key;
	__u32 zero = 0;

	if (!stmt_is_pg(&c->seen->stmt, k->s.tgid))
		return 1;
	if (want_queries)
		read_query_as(&c->seen->stmt, k->s.tgid, k->s.tid, &k->s, c->task, &c->sc->q);
	read_wait_event(c->seen, k, c->task);
	if (want_plpgsql)
		read_plpgsql_as(&c->seen->plpgsql, &c->seen->stmt.pg, k->s.tgid, k->s.tid, &k->s,
				bpf_map_lookup_elem(&waits_plpgsql, &zero), c->task);
	return 1;
}

/* One frame of another thread's stack (a bpf_loop() callback). */
static long waits_step(__u64 i, struct waits_loop *c)
{
	return unwind_step(c->st, c->task);
}

/* The user stack of the visited thread into key: unwound from its CFI
 * (frame pointers where a binary has none) and sent once through
 * `ustacks`; under --unwind fp, its first EBPROF_MAX_STACK_DEPTH frames
 * into `stacks`, as the kernel's frame-pointer walk would have them. */
static __always_inline void waits_ustack(struct task_struct *task, struct sample_key *key,
					 struct stack_trace *frames)
{
	struct waits_loop c = { .task = task };
	__u32 zero = 0;
	bool lost;

	c.st = bpf_map_lookup_elem(&waits_uw, &zero);
	if (!c.st)
		return;
	unwind_reset(c.st, key->tgid);
	if (!waits_user_regs(task, c.st))
		return;
	if (!waits_user_fp) {
		c.st->key = *key;
		bpf_loop(EBPROF_MAX_UNWIND_DEPTH + 1, waits_step, &c, 0);
		unwind_publish(c.st);
		*key = c.st->key;
		return;
	}
	bpf_loop(EBPROF_MAX_STACK_DEPTH, waits_step, &c, 0);
	__builtin_memset(frames, 0, sizeof(*frames));
	for (__u32 i = 0; i < EBPROF_MAX_STACK_DEPTH; i++) {
		if (i >= c.st->rec.n)
			break;
		frames->ips[i] = c.st->rec.ips[i] & ~EBPROF_IP_EXACT;
	}
	key->ustack = store_frames(frames, (long)c.st->rec.n * 8, &lost);
	key->flags |= lost ? SAMPLE_USTACK_LOST : 0;
	if (key->ustack && (c.st->rec.ips[0] & EBPROF_IP_EXACT))
		key->flags |= SAMPLE_USER_EXACT;
}

/*
 * A runnable thread queued on the CPU this visit runs on (the program
 * runs with migration disabled): the visit's own thread preempted it, or
 * would have run it; it counts as on the CPU (the CPU sampler's), not as
 * waiting for one. Counted as runnable, a busy backend sharing the
 * sampler's CPU had a period of "runnable" at every other visit.
 * task->cpu: 5.16+, older kernels have no sleepable task iterator.
 */
struct task_struct___cpu { /* 5.16+: the CPU moved from thread_info */
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline bool waits_preempted_here(struct task_struct *task)
{
	struct task_struct___cpu *t = (void *)task;

	if (!bpf_core_field_exists(t->cpu))
		return false;
	return t->cpu == bpf_get_smp_processor_id();
}

/* The thread's state, as offcpu_task_state() but a plain load: the task
 * is the iterator's or a reference taken (no bpf_probe_read_kernel()
 * call per field, which a visit of an unchanged thread paid). */
static __always_inline long waits_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return ((struct task_struct___pre514 *)t)->state;
}

/* Are two keys the same (their 80 bytes, word by word)? */
static __always_inline bool waits_same_key(const struct offcpu_key *a, const struct offcpu_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

#pragma unroll
	for (int i = 0; i < (int)(sizeof(*a) / 8); i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/* The thread's run, if of this epoch, added to the counts under its key
 * (offcpu_count(): count and time); a run of another epoch was taken by
 * userspace at a drain. */
static __always_inline void waits_fold(struct waits_thread *th)
{
	void *counts = active_counts ? (void *)&offcpu_counts1 : (void *)&offcpu_counts0;
	struct offcpu_value one, *v;
	long ret;

	if (!th->run_count || th->run_epoch != waits_epoch)
		return;
	stat_inc(STAT_WAITS_FOLDED);
	one.count = th->run_count;
	one.ns = th->run_ns;
	th->run_count = 0;
	v = bpf_map_lookup_elem(counts, &th->key);
	if (!v) {
		ret = bpf_map_update_elem(counts, &th->key, &one, BPF_NOEXIST);
		if (!ret)
			return;
		if (ret != -EEXIST || !(v = bpf_map_lookup_elem(counts, &th->key))) {
			stat_inc(STAT_OFFCPU_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, one.count);
	__sync_fetch_and_add(&v->ns, one.ns);
}

/* A visit of ns counted under key k: one more of the thread's run when
 * its key is the run's, else the run ended (into the counts) and another
 * begun. Most visits so touch the thread's entry alone. */
static __always_inline void waits_add(struct waits_thread *th, const struct offcpu_key *k, __u64 ns)
{
	__u32 e = waits_epoch;

	if (th->run_count && th->run_epoch == e && waits_same_key(&th->key, k)) {
		th->run_count++;
		th->run_ns += ns;
		return;
	}
	waits_fold(th);
	th->key = *k;
	th->state = k->state;
	th->run_count = 1;
	th->run_ns = ns;
	th->run_epoch = e;
}

/* Is the thread where its last user stack was taken (the user pc, sp and
 * bp it entered the kernel with)? */
static __always_inline bool waits_ustack_here(const struct waits_thread *th, __u64 pc, __u64 sp,
					      __u64 bp)
{
	return pc && th->ustack_pc == pc && th->ustack_sp == sp && th->ustack_bp == bp &&
	       (th->ustack || th->ustack_flags);
}

/* ... and was idle for its client there (waits_visit_task()). */
static __always_inline bool waits_idle_here(struct task_struct *task, const struct waits_thread *th)
{
	__u64 pc, sp, bp;

	if (!th->idle)
		return false;
	waits_user_pcspbp(task, &pc, &sp, &bp);
	return waits_ustack_here(th, pc, sp, bp);
}

/* The key of a visit idle where the thread was idle last: its labels
 * (Client/ClientRead, no statement) and stacks, no read of its memory;
 * state as given (runnable: woken, not yet back from the wait). */
static __always_inline void waits_idle_key(struct offcpu_key *k, struct task_struct *task,
					   const struct waits_thread *th, __u8 state)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->s.tgid = task->tgid;
	k->s.tid = task->pid;
	BPF_CORE_READ_STR_INTO(&k->s.comm, task, comm);
	k->s.kstack = th->idle_kstack;
	k->s.ustack = th->ustack;
	k->s.flags = th->idle_kflags | th->ustack_flags;
	k->wait_event = WAITS_CLIENT_READ;
	k->state = state;
	k->has_wait = 1;
	k->pg_major = th->idle_major;
}

/*
 * What a visit of a thread needs no more than its entry in waits_threads
 * for: a thread on a CPU or exiting (nothing to count); one that has not
 * run since its last visit (its switch count unchanged), counted again
 * under its last key (statement, wait event, PL/pgSQL functions and
 * stacks), its state read anew; one that ran but sleeps where its last
 * idle visit found it (the same user pc and sp: waiting for its client's
 * next statement, as between two transactions of a busy client), counted
 * under its idle key with no read of its memory. True when that was all;
 * false: the thread takes a whole visit. It does not sleep: the targets'
 * walk runs it under RCU, so that most threads cost no reference taken
 * and no turn of the visit's loop.
 */
static __always_inline bool waits_quick(struct task_struct *task, __u32 tid)
{
	struct waits_thread *th;
	struct waits_scratch *sc;
	struct offcpu_key *k;
	__u32 zero = 0;
	__u64 nsw;
	long state;
	__u8 st;

	if (task->exit_state)
		return true;
	if (task->on_cpu) {
		stat_inc(STAT_WAITS_ONCPU);
		return true;
	}
	state = waits_task_state(task);
	if (state & TASK_DEAD_BIT)
		return true;
	if (state == 0 && waits_preempted_here(task)) {
		stat_inc(STAT_WAITS_ONCPU);
		return true;
	}
	th = bpf_map_lookup_elem(&waits_threads, &tid);
	if (!th || th->start != task->start_time)
		return false;
	nsw = task->nvcsw + task->nivcsw;
	st = offcpu_state_of(state, false);
	if (th->nsw == nsw && th->gen == query_gen && th->pl_epoch == plpgsql_epoch) {
		/* not run since: where it was, as it was, only woken perhaps */
		stat_inc(STAT_WAITS_VISITS);
		stat_inc(STAT_WAITS_SAME);
		if (st == th->state && th->run_count && th->run_epoch == waits_epoch) {
			th->run_count++;
			th->run_ns += waits_ns;
			return true;
		}
		sc = bpf_map_lookup_elem(&waits_scratch, &zero);
		if (!sc)
			return true;
		sc->o.key = th->key;
		sc->o.key.state = st;
		waits_add(th, &sc->o.key, waits_ns);
		return true;
	}
	if (st != OFFCPU_SLEEPING || !waits_idle_here(task, th))
		return false;
	/* ran, and waits for its client where it waited idle last */
	sc = bpf_map_lookup_elem(&waits_scratch, &zero);
	if (!sc)
		return false;
	stat_inc(STAT_WAITS_VISITS);
	stat_inc(STAT_WAITS_IDLE_SAME);
	k = &sc->o.key;
	waits_idle_key(k, task, th, OFFCPU_SLEEPING);
	waits_add(th, k, waits_ns);
	th->nsw = nsw;
	return true;
}

/*
 * One thread looked at: a thread of a target off the CPU is counted as a
 * wait of one period. Both ways of visiting (waits_visit,
 * waits_visit_targets) run it; listed: a thread of a process found in
 * `targets` by the walk that listed it, counted there as looked at (no
 * second lookup).
 */
static __always_inline void waits_visit_task(struct task_struct *task, bool listed)
{
	struct waits_thread *th;
	struct waits_scratch *sc;
	struct offcpu_taken *o;
	struct seen_state *seen;
	__u32 tgid, tid, zero = 0, gen = query_gen, pl_epoch = plpgsql_epoch;
	__u64 nsw, start;
	bool idle, lost, same_u, reuse;
	long state;

	tgid = task->tgid;
	tid = task->pid;
	if (!listed) {
		stat_inc(STAT_WAITS_SEEN);
		if (task->exit_state)
			return; /* a zombie: of no process now, targeted or not */
		if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid)) {
			stat_inc(STAT_WAITS_OTHERS);
			return;
		}
		if (waits_quick(task, tid))
			return;
	}
	/* it ran since its last visit, or is new (listed: so it was when
	 * listed, moments ago): all read anew, unless it is on a CPU now */
	if (task->exit_state)
		return;
	state = waits_task_state(task);
	if (state & TASK_DEAD_BIT)
		return;
	if (task->on_cpu || (state == 0 && waits_preempted_here(task))) {
		stat_inc(STAT_WAITS_ONCPU);
		return;
	}
	sc = bpf_map_lookup_elem(&waits_scratch, &zero);
	if (!sc)
		return;
	stat_inc(STAT_WAITS_VISITS);
	o = &sc->o;
	o->ns = waits_ns;
	nsw = task->nvcsw + task->nivcsw;
	start = task->start_time;
	th = bpf_map_lookup_elem(&waits_threads, &tid);
	if (th && th->start != start) { /* another thread of this tid: its run ends */
		waits_fold(th);
		th = NULL;
	}

	waits_user_pcspbp(task, &sc->pc, &sc->sp, &sc->bp);
	same_u = th && waits_ustack_here(th, sc->pc, sc->sp, sc->bp);
	if (state == 0 && same_u && th->idle) {
		/* woken where it waited idle, not yet back: the idle labels
		 * and user stack, its kernel stack anew (preempted maybe) */
		stat_inc(STAT_WAITS_IDLE_SAME);
		waits_idle_key(&o->key, task, th, OFFCPU_RUNNABLE);
		if (want_kernel) {
			o->key.s.kstack = waits_kstack(task, &sc->frames, &lost);
			o->key.s.flags &= ~SAMPLE_KSTACK_LOST;
			o->key.s.flags |= lost ? SAMPLE_KSTACK_LOST : 0;
		}
		waits_add(th, &o->key, o->ns);
		th->nsw = nsw;
		return;
	}

	__builtin_memset(&o->key, 0, sizeof(o->key));
	o->key.state = offcpu_state_of(state, false);
	o->key.s.tgid = tgid;
	o->key.s.tid = tid;
	BPF_CORE_READ_STR_INTO(&o->key.s.comm, task, comm);
	seen = waits_seen(task, tgid);
	if (seen) {
		struct waits_labels c = { .task = task, .seen = seen, .sc = sc };

		bpf_loop(1, waits_read_labels, &c, 0);
	}
	/* idle: its whole key is that of waits_idle_key() */
	idle = o->key.has_wait && o->key.wait_event == WAITS_CLIENT_READ && !o->key.s.query &&
	       !o->key.s.query_id && !o->key.s.plpgsql &&
	       !(o->key.s.flags & (SAMPLE_QUERY_GAP | SAMPLE_QUERY_LOST)) &&
	       o->key.state == OFFCPU_SLEEPING;
	/* its last idle stacks where it waits as it waited then: the same
	 * user registers (another way to wait for the client, such as the
	 * password exchange before the first statement, is not the same).
	 * Only then: the same registers under other labels can be another
	 * caller of the same wait at the same depth (a test fixture's two
	 * functions calling nanosleep() from main), whose stack differs. */
	reuse = idle && same_u && th->idle;
	if (reuse) {
		o->key.s.kstack = th->idle_kstack;
		o->key.s.ustack = th->ustack;
		o->key.s.flags |= th->idle_kflags | th->ustack_flags;
		stat_inc(STAT_WAITS_IDLE);
	} else {
		if (want_kernel) {
			o->key.s.kstack = waits_kstack(task, &sc->frames, &lost);
			o->key.s.flags |= lost ? SAMPLE_KSTACK_LOST : 0;
		}
		if (want_user && task->mm)
			waits_ustack(task, &o->key.s, &sc->frames);
	}

	if (th) {
		waits_add(th, &o->key, o->ns);
	} else { /* a new entry */
		th = &sc->t;
		__builtin_memset(th, 0, sizeof(*th));
		th->start = start;
		th->key = o->key;
		th->state = o->key.state;
		th->run_count = 1;
		th->run_ns = o->ns;
		th->run_epoch = waits_epoch;
	}
	th->nsw = nsw;
	th->gen = gen;
	th->pl_epoch = pl_epoch;
	if (!reuse) { /* the user stack taken now, and where */
		th->ustack = o->key.s.ustack;
		th->ustack_flags = o->key.s.flags & WAITS_USTACK_FLAGS;
		th->ustack_pc = sc->pc;
		th->ustack_sp = sc->sp;
		th->ustack_bp = sc->bp;
	}
	/* idle now: its stacks are those of its next idle visits there */
	th->idle = idle;
	if (idle) {
		th->idle_kstack = o->key.s.kstack;
		th->idle_kflags = o->key.s.flags & SAMPLE_KSTACK_LOST;
		th->idle_major = o->key.pg_major;
	}
	if (th == &sc->t && bpf_map_update_elem(&waits_threads, &tid, th, BPF_ANY))
		stat_inc(STAT_OFFCPU_FULL);
}

/*
 * The threads of the task iterator's link, once per read: of one target
 * process (a link per process, 6.1+: userspace keeps one for each), or
 * every thread of the host (5.18-6.0, -a, past the links' limit).
 */
#ifndef EBPROF_WAITS_ONLY /* the session's object's alone */
SEC("iter.s/task")
int waits_visit(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task; /* read once: checked for NULL */

	if (task)
		waits_visit_task(task, false);
	return 0;
}
#endif

#ifdef EBPROF_WAITS_TARGETS /* waits_targets.bpf.c: the object of its own */
#include "waits_targets.bpf.h"
#endif

#endif /* EBPROF_WAITS_BPF_H */
