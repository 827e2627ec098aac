/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * DWARF unwinding of user stacks (--unwind dwarf), included by
 * profile.bpf.c. From the sample's user registers: find the mapping of
 * the pc (`unwind_pids` -> `unwind_sets`: the process's executable
 * mappings, each with
 * its table in `unwind_tables` and load bias), binary-search the table's row,
 * compute the CFA, read the return address and saved rbp, repeat. A pc
 * with no table is unwound by its frame pointer (counted in fp_frames).
 *
 * The unwind runs either as a bpf_loop() callback (5.17+) or as a chain
 * of tail calls of unwind_tail (UNWIND_PER_CALL frames each), chosen by
 * userspace from a feature probe. Either way the state lives in the
 * per-CPU `unwind_scratch`, and unwind_finish() hashes the frames, hands
 * a stack never sent before to userspace through `ustacks` and counts the
 * sample under its hash.
 */
#ifndef EBPROF_UNWIND_BPF_H
#define EBPROF_UNWIND_BPF_H

#define UNWIND_PER_CALL 64 /* frames per tail call: 32 calls reach 2048 */

/* One table per binary, an array of exactly its rows that userspace
 * creates and fills (through mmap) before it puts it here. */
/* Sizes, not BTF types: userspace makes the tables without BTF, and 6.1
 * checks an inner map against this template field by field, its BTF-found
 * timer offset included (none: -ENOENT with BTF, -EINVAL without). */
struct unwind_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct unwind_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, EBPROF_MAX_UNWIND_TABLES);
	__type(key, __u32);
	__array(values, struct unwind_table_map);
} unwind_tables SEC(".maps");

/* How often an unwind entered the binary of each table slot (whether its
 * rows are loaded or not): userspace gives the table budget to the
 * binaries sampled most. Mapped by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, EBPROF_MAX_UNWIND_TABLES);
	__type(key, __u32);
	__type(value, __u64);
} unwind_hits SEC(".maps");

/* Preallocated, both: before 6.1 a perf_event program may use no other
 * hash map. A set is 5 KiB; processes share them by layout. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* index in unwind_sets; EBPROF_UNWIND_NO_SET: exec'd */
} unwind_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_sets SEC(".maps");

/* Hashes of the stacks sent through `ustacks`; userspace deletes the
 * ones it forgets so they are sent again when seen again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} ustack_known SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024); /* sized by userspace */
} ustacks SEC(".maps");

struct uw_state {
	struct sample_key key; /* the sample being taken */
	__u64 pc, sp, bp;
	__u64 hash;
	__u32 tgid;
	__u32 calls; /* tail calls so far */
	bool exact;  /* pc is the interrupted instruction, not a return address */
	bool done;
	__u32 lo, hi; /* a binary search's bounds (see UW_LOAD) */
	/* The mapping of the last frame: consecutive frames are mostly in
	 * one binary, so most frames need no lookup of the process's
	 * mappings. Empty (start = end) when that frame had none. */
	struct unwind_mapping last;
	struct ebprof_ustack rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_state);
} unwind_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unwind_prog SEC(".maps");

static __always_inline struct uw_state *uw_state_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&unwind_scratch, &zero);
}

/*
 * The user registers of the sample: the context's when it interrupted
 * user mode, else those the kernel saved on entry (saved_user_regs()).
 * False when there are none to read. The pc is the interrupted instruction
 * itself (exact) unless the kernel was entered by a system call, after
 * which it follows the call, as a return address does.
 */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, bool user_mode,
				      struct uw_state *st)
{
	__u64 regs[PT_REGS_SLOTS];
	const __u64 *saved;

	if (user_mode) {
		st->pc = *(volatile __u64 *)((char *)ctx + REG_IP * 8);
		st->sp = *(volatile __u64 *)((char *)ctx + REG_SP * 8);
		st->bp = *(volatile __u64 *)((char *)ctx + REG_RBP * 8);
		st->exact = true;
		return true;
	}
	saved = saved_user_regs();
	if (!saved || bpf_probe_read_kernel(regs, sizeof(regs), saved))
		return false;
	st->pc = regs[REG_IP];
	st->sp = regs[REG_SP];
	st->bp = regs[REG_RBP];
	st->exact = entry_pc_exact((__s64)regs[REG_ORIG_AX]);
	return st->pc != 0;
}

/*
 * The binary searches below keep their bounds in the scratch state and
 * read them back each step (volatile: from memory, not a register the
 * compiler kept): to the verifier a value loaded from a map is unknown,
 * so the two halves of a step reach the next one in the same state and
 * one is pruned, and a search costs its steps, not 2^steps paths (bounds
 * kept in registers become precise as they index the mappings, and every
 * path through the search was verified apart: 100 000 instructions).
 */
#define UW_LOAD(x) (*(volatile __typeof__(x) *)&(x))

/* The mapping of pc, NULL when none (binary search by start). */
static __always_inline const struct unwind_mapping *
find_mapping(struct uw_state *st, const struct unwind_proc *proc, __u64 pc)
{
	__u32 i;

	st->lo = 0;
	st->hi = proc->n;
	/* invariant: mappings before lo start at or below pc, from hi above */
	for (int k = 0; k < 8; k++) {
		__u32 lo = UW_LOAD(st->lo), hi = UW_LOAD(st->hi), mid;

		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (mid >= EBPROF_MAX_UNWIND_MAPPINGS)
			return NULL;
		if (proc->m[mid].start <= pc)
			st->lo = mid + 1;
		else
			st->hi = mid;
	}
	i = UW_LOAD(st->lo) - 1;
	if (i >= EBPROF_MAX_UNWIND_MAPPINGS || pc >= proc->m[i].end)
		return NULL;
	return &proc->m[i];
}

/* The row covering addr in the table of mapping m, NULL when addr is
 * before its first row or the table is gone. */
static __always_inline struct unwind_row *find_row(struct uw_state *st,
						   const struct unwind_mapping *m, __u32 addr)
{
	__u32 first = m->npages ? m->npages + 1 : 0, idx, page = addr >> 12;
	struct unwind_row *r;
	void *rows = bpf_map_lookup_elem(&unwind_tables, &m->table);

	if (!rows)
		return NULL;
	st->lo = first;
	st->hi = m->nrows;
	if (m->npages && page >= m->page_base && page - m->page_base < m->npages) {
		struct unwind_row *a, *b;

		idx = page - m->page_base;
		a = bpf_map_lookup_elem(rows, &idx);
		idx++;
		b = bpf_map_lookup_elem(rows, &idx);
		if (!a || !b)
			return NULL;
		if (a->pc > first)
			st->lo = a->pc;
		if (b->pc + 1 < m->nrows)
			st->hi = b->pc + 1;
	}
	/* the last row at or below addr: lo - 1 once lo passes it */
	for (int k = 0; k < 23; k++) {
		__u32 lo = UW_LOAD(st->lo), hi = UW_LOAD(st->hi);

		if (lo >= hi)
			break;
		idx = (lo + hi) / 2;
		r = bpf_map_lookup_elem(rows, &idx);
		if (!r)
			return NULL;
		if (r->pc <= addr)
			st->lo = idx + 1;
		else
			st->hi = idx;
	}
	idx = UW_LOAD(st->lo);
	if (idx == 0 || idx - 1 < first)
		return NULL;
	idx--;
	return bpf_map_lookup_elem(rows, &idx);
}

/* task: the one unwound from a sleepable program (the wait sampler),
 * NULL for the current one; as read_user(). */
static __always_inline int read_u64(__u64 *dst, __u64 addr, struct task_struct *task)
{
	return read_user(dst, sizeof(*dst), (const void *)addr, task);
}

/* rt_sigframe of x86-64 at the handler's return: the ucontext is at rsp,
 * its mcontext 40 bytes in; rbp, rsp and rip are greg 10, 15 and 16. */
#define SIGFRAME_RBP (40 + 10 * 8)
#define SIGFRAME_RSP (40 + 15 * 8)
#define SIGFRAME_RIP (40 + 16 * 8)

/* Follow the frame pointer: the caller's rbp at [rbp], the return
 * address above it. */
static __always_inline int step_fp(struct uw_state *st, __u16 no_fp_end, struct task_struct *task)
{
	__u64 ra, bp;

	if (!st->bp || st->bp < st->sp) {
		st->rec.end = no_fp_end;
		return 1;
	}
	if (read_u64(&ra, st->bp + 8, task) || read_u64(&bp, st->bp, task)) {
		st->rec.end = UNWIND_END_READ_FAULT;
		return 1;
	}
	st->rec.fp_frames++;
	st->sp = st->bp + 16;
	st->bp = bp;
	st->pc = ra;
	st->exact = false;
	if (!ra)
		return 1; /* UNWIND_END_OK */
	return 0;
}

/* Record the current frame and unwind one step: 0 to go on, 1 when the
 * stack ended (rec.end says why). */
static __always_inline int unwind_step(struct uw_state *st, struct task_struct *task)
{
	const struct unwind_mapping *m = &st->last;
	struct unwind_row *r;
	__u64 cfa, ra, addr, ip, sp = st->sp;
	__u32 n = st->rec.n;

	if (n >= EBPROF_MAX_UNWIND_DEPTH) {
		st->rec.end = UNWIND_END_DEPTH;
		return 1;
	}
	/* an interrupted instruction (not a return address) is marked, for
	 * userspace to look it up as itself */
	ip = st->pc | (st->exact ? EBPROF_IP_EXACT : 0);
	st->rec.ips[n & (EBPROF_MAX_UNWIND_DEPTH - 1)] = ip;
	st->rec.n = n + 1;
	st->hash ^= ip;
	st->hash *= 1099511628211ULL; /* FNV prime */
	st->hash ^= st->hash >> 32;

	if (st->pc < m->start || st->pc >= m->end) {
		const __u32 *set = bpf_map_lookup_elem(&unwind_pids, &st->tgid);
		const struct unwind_proc *proc =
			set ? bpf_map_lookup_elem(&unwind_sets, set) : NULL;
		const struct unwind_mapping *found = proc ? find_mapping(st, proc, st->pc) : NULL;

		if (found) {
			__u32 slot = found->table;
			__u64 *hits = bpf_map_lookup_elem(&unwind_hits, &slot);

			st->last = *found;
			if (hits)
				__sync_fetch_and_add(hits, 1);
		} else
			st->last.start = st->last.end = 0;
	}
	if (st->pc < m->start || st->pc >= m->end || !m->nrows)
		return step_fp(st, UNWIND_END_NO_TABLE, task);
	/* a return address is the instruction after the call */
	addr = st->pc - m->bias - (st->exact ? 0 : 1);
	if (addr > 0xffffffffULL)
		return step_fp(st, UNWIND_END_NO_TABLE, task);
	r = find_row(st, m, (__u32)addr);
	if (!r)
		return step_fp(st, UNWIND_END_NO_TABLE, task);
	switch (r->cfa) {
	case UNWIND_CFA_RSP:
		cfa = st->sp + (__s64)r->cfa_off;
		break;
	case UNWIND_CFA_RBP:
		cfa = st->bp + (__s64)r->cfa_off;
		break;
	case UNWIND_CFA_PLT:
		cfa = st->sp + (__s64)r->cfa_off + ((st->pc & 15) >= r->flags ? 8 : 0);
		break;
	case UNWIND_CFA_DEREF_RBP:
		if (read_u64(&cfa, st->bp + (__s64)r->cfa_off, task)) {
			st->rec.end = UNWIND_END_READ_FAULT;
			return 1;
		}
		break;
	case UNWIND_CFA_SIGNAL: {
		__u64 rbp, rsp, rip;

		if (read_u64(&rbp, st->sp + SIGFRAME_RBP, task) ||
		    read_u64(&rsp, st->sp + SIGFRAME_RSP, task) ||
		    read_u64(&rip, st->sp + SIGFRAME_RIP, task)) {
			st->rec.end = UNWIND_END_READ_FAULT;
			return 1;
		}
		st->bp = rbp;
		st->sp = rsp;
		st->pc = rip;
		st->exact = true; /* the interrupted instruction itself */
		return rip ? 0 : 1;
	}
	case UNWIND_CFA_END:
		return 1; /* UNWIND_END_OK */
	case UNWIND_CFA_GAP:
		return step_fp(st, UNWIND_END_NO_TABLE, task);
	default:
		st->rec.end = UNWIND_END_UNSUPPORTED;
		return 1;
	}
	if (read_u64(&ra, cfa - 8, task)) {
		st->rec.end = UNWIND_END_READ_FAULT;
		return 1;
	}
	if (r->rbp_off && read_u64(&st->bp, cfa + (__s64)r->rbp_off, task)) {
		st->rec.end = UNWIND_END_READ_FAULT;
		return 1;
	}
	if (cfa <= sp) {
		st->rec.end = UNWIND_END_BAD_FRAME;
		return 1;
	}
	st->sp = cfa;
	st->pc = ra;
	st->exact = false;
	return ra ? 0 : 1;
}

/* A new stack of process tgid in the state, its registers to be set. */
static __always_inline void unwind_reset(struct uw_state *st, __u32 tgid)
{
	st->hash = 14695981039346656037ULL; /* FNV-1a offset basis */
	st->tgid = tgid;
	st->calls = 0;
	st->done = false;
	st->rec.n = 0;
	st->rec.end = UNWIND_END_OK;
	st->rec.fp_frames = 0;
	st->last.start = st->last.end = 0;
}

/* Start unwinding the current sample into the scratch state. False when
 * there is no user stack to take. */
static __always_inline bool unwind_begin(struct bpf_perf_event_data *ctx, bool user_mode,
					 struct uw_state *st, __u32 tgid)
{
	unwind_reset(st, tgid);
	return user_regs(ctx, user_mode, st);
}

/* Hand a stack never sent to userspace; set the sample's ustack. */
static __always_inline void unwind_publish(struct uw_state *st)
{
	__u64 h = st->hash ? st->hash : 1;
	__u32 n = st->rec.n;
	__u8 one = 1;

	/* the end reason is part of the stack's identity */
	h ^= (__u64)st->rec.end << 56 ^ (__u64)(st->rec.fp_frames != 0) << 48;
	h = h ? h : 1;
	if (n > EBPROF_MAX_UNWIND_DEPTH)
		n = EBPROF_MAX_UNWIND_DEPTH;
	if (!n)
		return;
	st->rec.hash = h;
	if (!bpf_map_lookup_elem(&ustack_known, &h)) {
		if (bpf_ringbuf_output(&ustacks, &st->rec,
				       offsetof(struct ebprof_ustack, ips) + (__u64)n * 8,
				       BPF_RB_NO_WAKEUP)) {
			stat_inc(STAT_USTACKS_LOST);
			st->key.flags |= SAMPLE_USTACK_LOST;
			return;
		}
		bpf_map_update_elem(&ustack_known, &h, &one, BPF_ANY);
		stat_inc(STAT_USTACKS_SENT);
	}
	st->key.ustack = h;
	st->key.flags |= SAMPLE_USTACK_DWARF;
}

#endif /* EBPROF_UNWIND_BPF_H */
