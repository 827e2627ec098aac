/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * PL/pgSQL frames, part of profile.bpf.c (included after statement.bpf.h,
 * whose pg_procs entry says where error_context_stack is): at each sample
 * (and wait taken) of a PostgreSQL backend with plpgsql.so loaded, the
 * backend's error_context_stack is walked and every entry whose callback
 * is plpgsql_exec_error_callback is one PL/pgSQL function running, its
 * argument that function's PLpgSQL_execstate: the function
 * (estate->func) and the statement or variable at work (err_stmt,
 * err_var). The chain of them, innermost first, is hashed by those
 * pointers and the process into the sample key; the first time a chain is
 * seen (and again after userspace bumped plpgsql_gen), its functions'
 * signatures and lines are read and sent as an EVENT_PLPGSQL.
 *
 * A backend's memory is hostile input: the walk reads at most
 * EBPROF_PLPGSQL_ENTRIES entries (a cycle ends there), keeps at most
 * EBPROF_PLPGSQL_DEPTH functions, stops at the first entry or state it
 * cannot read, and counts each cut (STAT_PLPGSQL_FAULT, STAT_PLPGSQL_CUT).
 * Nothing of a function's arguments is read: its signature (fn_signature,
 * schema) and line numbers only.
 */
#ifndef EBPROF_PLPGSQL_BPF_H
#define EBPROF_PLPGSQL_BPF_H

const volatile bool want_plpgsql = true;

/* Bumped by userspace at every drain: a chain is sent again at its first
 * sample after it, so a function compiled anew at the address of a
 * dropped one is named by what it is now. */
__u32 plpgsql_gen = 0;

/* Bumped by userspace whenever it gives a process a callback (a backend
 * loaded plpgsql.so): every process looks at its plpgsql_procs entry
 * again at its next sample. */
__u32 plpgsql_epoch = 0;

/* Set by userspace for the PostgreSQL processes it looked at, an entry
 * of zeros where plpgsql.so is not mapped (the program stops asking);
 * copied to forked children. Sized by userspace (map_sizes.h: procs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32); /* tgid */
	__type(value, struct ebprof_plpgsql_proc);
} plpgsql_procs SEC(".maps");

/* Chains sent, with the plpgsql_gen they were sent in (sized by
 * userspace, map_sizes.h: known). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} plpgsql_known SEC(".maps");

/* What the walk keeps of a sampled process in its `seen` entry: its
 * plpgsql_procs entry, once userspace set it. */
struct plpgsql_state {
	struct ebprof_plpgsql_proc cfg;
	__u32 known; /* cfg is plpgsql_procs' answer ... */
	__u32 epoch; /* ... as of this plpgsql_epoch */
};

/* The walk's state and where it reads entries and states, and builds its
 * record: per CPU, so that its steps are functions of their own. */
struct plpgsql_scratch {
	struct ebprof_plpgsql_proc cfg; /* the process's */
	__u64 node;			/* the next entry to read, 0: none */
	__u64 h;			/* the chain's hash so far */
	__u32 n;			/* functions found */
	__u32 flags;			/* EBPROF_PLPGSQL_* */
	__u32 fault;			/* an entry or state was unreadable */
	__u32 pad;
	__u64 entry[3]; /* ErrorContextCallback: previous, callback, arg */
	__u8 estate[EBPROF_PLPGSQL_SPAN];
	__u64 func[EBPROF_PLPGSQL_DEPTH]; /* PLpgSQL_function * */
	__u64 at[EBPROF_PLPGSQL_DEPTH];	  /* err_var where set, else err_stmt */
	__u8 var[EBPROF_PLPGSQL_DEPTH];	  /* at is an err_var */
	struct ebprof_plpgsql rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct plpgsql_scratch);
} plpgsql_scratch SEC(".maps");

#define PLPGSQL_OFF_MASK (EBPROF_PLPGSQL_SPAN - 8) /* 8-aligned, 8 bytes fit */

static __always_inline struct plpgsql_scratch *plpgsql_scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&plpgsql_scratch, &zero);
}

static __always_inline __u64 plpgsql_mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 1099511628211ULL; /* FNV prime */
	return h ^ (h >> 32);
}

/* One entry of error_context_stack, read in task (NULL: the current one,
 * read_user()) into sc. 1: the walk ended (the last entry, a fault, or
 * EBPROF_PLPGSQL_DEPTH functions). */
static __always_inline int plpgsql_step_in(struct plpgsql_scratch *sc, struct task_struct *task)
{
	__u64 func, stmt, var;
	__u32 n, span;

	if (!sc || !sc->node)
		return 1;
	if (read_user(sc->entry, sizeof(sc->entry), (void *)sc->node, task)) {
		sc->fault = 1;
		return 1;
	}
	if (sc->entry[1] == sc->cfg.callback) {
		n = sc->n;
		if (n >= EBPROF_PLPGSQL_DEPTH) {
			sc->flags |= EBPROF_PLPGSQL_CUT;
			return 1;
		}
		span = sc->cfg.span;
		if (span > EBPROF_PLPGSQL_SPAN)
			span = EBPROF_PLPGSQL_SPAN;
		if (read_user(sc->estate, span, (void *)sc->entry[2], task)) {
			sc->fault = 1;
			return 1;
		}
		func = *(__u64 *)(sc->estate + (sc->cfg.func_off & PLPGSQL_OFF_MASK));
		stmt = *(__u64 *)(sc->estate + (sc->cfg.err_stmt_off & PLPGSQL_OFF_MASK));
		var = sc->cfg.err_var_off
			      ? *(__u64 *)(sc->estate + (sc->cfg.err_var_off & PLPGSQL_OFF_MASK))
			      : 0;
		sc->func[n & (EBPROF_PLPGSQL_DEPTH - 1)] = func;
		sc->at[n & (EBPROF_PLPGSQL_DEPTH - 1)] = var ? var : stmt;
		sc->var[n & (EBPROF_PLPGSQL_DEPTH - 1)] = var != 0;
		sc->h = plpgsql_mix(plpgsql_mix(sc->h, func), var ? var ^ 1 : stmt);
		sc->n = n + 1;
	}
	sc->node = sc->entry[0];
	return sc->node == 0;
}

/* plpgsql_step_in() of the current task: a global function, so the
 * verifier checks it once rather than at every turn of the walk. */
__noinline int plpgsql_step(void)
{
	return plpgsql_step_in(plpgsql_scratch_get(), NULL);
}

struct plpgsql_sig_scan {
	const char *s;
	__u32 n;
};

/* bpf_loop() callback: where a signature ends (as nul_step()). */
static long plpgsql_sig_step(__u64 i, struct plpgsql_sig_scan *c)
{
	if (i >= EBPROF_PLPGSQL_SIG_LEN - 1 || !c->s[i & (EBPROF_PLPGSQL_SIG_LEN - 1)]) {
		c->n = i;
		return 1;
	}
	return 0;
}

/* A signature into dst (EBPROF_PLPGSQL_SIG_LEN bytes), read in task (NULL:
 * the current one): its length with the NUL, or a negative errno. Another
 * task's is read whole, else up to the end of its page (read_user_str()). */
static __always_inline long plpgsql_read_sig(char *dst, const void *src, struct task_struct *task)
{
	__u64 room = 4096 - ((__u64)src & 4095);
	struct plpgsql_sig_scan c = { .s = dst, .n = 0 };

	if (!task)
		return bpf_probe_read_user_str(dst, EBPROF_PLPGSQL_SIG_LEN, src);
	if (bpf_copy_from_user_task(dst, EBPROF_PLPGSQL_SIG_LEN, src, task, 0)) {
		if (room >= EBPROF_PLPGSQL_SIG_LEN ||
		    bpf_copy_from_user_task(dst, room & (EBPROF_PLPGSQL_SIG_LEN - 1), src, task, 0))
			return -EFAULT;
	}
	bpf_loop(EBPROF_PLPGSQL_SIG_LEN, plpgsql_sig_step, &c, 0);
	return (long)c.n + 1;
}

/* The signature and line of function j of sc's record, read in task
 * (NULL: the current one). Nothing of its arguments is read. */
static __always_inline int plpgsql_level_in(struct plpgsql_scratch *sc, __u32 j,
					    struct task_struct *task)
{
	struct ebprof_plpgsql_level *l;
	__u64 sig = 0, at, k = j;
	__u16 off;
	long len = 0;

	if (!sc)
		return 0;
	/* masked in the register used: clang bounds a copy of it */
	__asm__ volatile("%0 &= 15" : "+r"(k));
	_Static_assert(EBPROF_PLPGSQL_DEPTH == 16, "the mask above");
	l = &sc->rec.level[k];
	at = sc->at[k];
	off = sc->var[k] ? sc->cfg.var_lineno_off : sc->cfg.stmt_lineno_off;
	if (!at || read_user(&l->line, sizeof(l->line), (void *)(at + off), task))
		l->line = 0;
	if (!read_user(&sig, sizeof(sig), (void *)(sc->func[k] + sc->cfg.signature_off), task) &&
	    sig)
		len = plpgsql_read_sig(l->sig, (void *)sig, task);
	l->len = len > 1 ? len - 1 : 0;
	if (len <= 0)
		l->sig[0] = '\0';
	return 0;
}

/* plpgsql_level_in() of the current task: a global function, as
 * plpgsql_step(). */
__noinline int plpgsql_level(__u32 j)
{
	return plpgsql_level_in(plpgsql_scratch_get(), j, NULL);
}

/* Another task's walk (the wait sampler's): its scratch and the task, for
 * bpf_loop() callbacks (a global function cannot take the task). */
struct plpgsql_walk {
	struct plpgsql_scratch *sc;
	struct task_struct *task;
};

static long plpgsql_walk_step(__u64 i, struct plpgsql_walk *c)
{
	return plpgsql_step_in(c->sc, c->task);
}

static long plpgsql_walk_level(__u64 j, struct plpgsql_walk *c)
{
	if (j >= c->sc->rec.n)
		return 1;
	plpgsql_level_in(c->sc, (__u32)j, c->task);
	return 0;
}

/* Send the record of the chain the walk found in sc, read in task (NULL:
 * the current one); false when the ring buffer is full. */
static __always_inline bool plpgsql_send(struct plpgsql_scratch *sc, __u32 tgid, __u32 tid,
					 struct task_struct *task)
{
	struct ebprof_plpgsql *r = &sc->rec;
	__u64 size;

	r->h.type = EVENT_PLPGSQL;
	r->h.pid = tgid;
	r->h.ppid = tid;
	r->h.flags = 0;
	r->h.ktime_ns = 0;
	r->h.exec_pages = 0;
	r->h.comm[0] = '\0';
	if (task) {
		struct plpgsql_walk c = { .sc = sc, .task = task };

		bpf_loop(EBPROF_PLPGSQL_DEPTH, plpgsql_walk_level, &c, 0);
	} else {
#pragma clang loop unroll(disable)
		for (__u32 j = 0; j < EBPROF_PLPGSQL_DEPTH; j++) {
			if (j >= r->n)
				break;
			plpgsql_level(j);
		}
	}
	/* its n levels only */
	size = offsetof(struct ebprof_plpgsql, level) +
	       (__u64)r->n * sizeof(struct ebprof_plpgsql_level);
	__asm__ volatile("" : "+r"(size)); /* clang would clamp n, not size */
	if (size > sizeof(*r))
		size = sizeof(*r);
	return ring_out(r, size, STAT_PLPGSQL_LOST, STAT_PLPGSQL_SENT);
}

/*
 * The PL/pgSQL functions a thread of a PostgreSQL process runs, into
 * key->plpgsql: the current thread's (task NULL, through the per-CPU
 * plpgsql_scratch), or task's from the wait sampler (sc its own scratch:
 * it sleeps, the perf_event programs run meanwhile). Outside PL/pgSQL
 * this is one read (the head of error_context_stack, NULL there but
 * during a few C callbacks); in it, two reads per function (its entry and
 * its state) and one per other entry between, plus one hash lookup.
 */
static __always_inline void read_plpgsql_as(struct plpgsql_state *ps,
					    const struct ebprof_pg_proc *pg, __u32 tgid, __u32 tid,
					    struct sample_key *key, struct plpgsql_scratch *sc,
					    struct task_struct *task)
{
	__u32 gen = plpgsql_gen, epoch = plpgsql_epoch, *sent;
	__u64 node = 0, h;

	/* until userspace has looked at the process, and again after it gave
	 * one a callback (a global's read: no lookup per sample) */
	if (!ps->known || ps->epoch != epoch) {
		struct ebprof_plpgsql_proc *p = bpf_map_lookup_elem(&plpgsql_procs, &tgid);

		if (!p)
			return;
		ps->cfg = *p;
		ps->known = 1;
		ps->epoch = epoch;
	}
	if (!ps->cfg.callback || !pg->error_context_stack)
		return;
	if (read_user(&node, sizeof(node), (void *)pg->error_context_stack, task)) {
		stat_inc(STAT_PLPGSQL_FAULT);
		return;
	}
	if (!node || !sc)
		return;
	sc->cfg = ps->cfg;
	sc->node = node;
	sc->h = plpgsql_mix(14695981039346656037ULL, tgid);
	sc->n = 0;
	sc->flags = 0;
	sc->fault = 0;
	if (task) {
		struct plpgsql_walk c = { .sc = sc, .task = task };

		bpf_loop(EBPROF_PLPGSQL_ENTRIES, plpgsql_walk_step, &c, 0);
	} else {
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < EBPROF_PLPGSQL_ENTRIES; i++)
			if (plpgsql_step())
				break;
	}
	if (sc->fault) {
		stat_inc(STAT_PLPGSQL_FAULT);
		sc->flags |= EBPROF_PLPGSQL_CUT;
	} else if (sc->node) { /* entries left: too many, a cycle, or too deep */
		stat_inc(STAT_PLPGSQL_CUT);
		sc->flags |= EBPROF_PLPGSQL_CUT;
	}
	if (!sc->n)
		return;
	h = plpgsql_mix(sc->h, sc->flags);
	key->plpgsql = h ? h : 1; /* 0 means "none" */
	sent = bpf_map_lookup_elem(&plpgsql_known, &key->plpgsql);
	if (sent && *sent == gen)
		return;
	sc->rec.hash = key->plpgsql;
	sc->rec.n = sc->n;
	sc->rec.flags = sc->flags;
	if (plpgsql_send(sc, tgid, tid, task))
		bpf_map_update_elem(&plpgsql_known, &key->plpgsql, &gen, BPF_ANY);
}

static __always_inline void read_plpgsql(struct plpgsql_state *ps, const struct ebprof_pg_proc *pg,
					 __u32 tgid, __u32 tid, struct sample_key *key)
{
	read_plpgsql_as(ps, pg, tgid, tid, key, plpgsql_scratch_get(), NULL);
}

#endif /* EBPROF_PLPGSQL_BPF_H */
