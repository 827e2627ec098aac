/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Statement capture, part of profile.bpf.c (included after its stats,
 * events and stat_inc()): at each sample of a PostgreSQL process, the hash of the
 * statement it runs and its query id go into the sample key, and the
 * text goes to userspace (EVENT_QUERY) when it is new. Userspace tells
 * where to read through pg_procs (userspace/sampling/pg_attach.c).
 */
#ifndef EBPROF_STATEMENT_BPF_H
#define EBPROF_STATEMENT_BPF_H

/* What statement capture keeps of a sampled process, in its `seen`
 * entry: its pg_procs entry, copied once userspace set it (query_string
 * 0: not PostgreSQL), and what it ran at its last sample, so that the
 * text is read only when it may have changed and sent only when it did.
 * Per process, not per thread: a PostgreSQL backend has one. */
struct stmt_state {
	struct ebprof_pg_proc pg;
	__u32 pg_known; /* pg is pg_procs' answer */
	__u32 gen;	/* query_gen when the text was sent */
	__u64 be;	/* MyBEEntry (set once per backend), 0: not read */
	__u64 hash;	/* of the text last read, 0: none */
	__u64 str;	/* debug_query_string then */
	__s64 query_id; /* the query id then */
};

/* Targets looked at by userspace: where a PostgreSQL process keeps what
 * it runs, an entry of zeros for any other process. Copied to forked
 * children (a backend is labelled from its first tick) and into the
 * process's `seen` entry at its first sample after it is set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32); /* tgid */
	__type(value, struct ebprof_pg_proc);
} pg_procs SEC(".maps");

/* Is the sampled process PostgreSQL (its pg_procs entry copied into
 * last once userspace set it)? */
static __always_inline bool stmt_is_pg(struct stmt_state *last, __u32 tgid)
{
	if (!last->pg_known) { /* until userspace has looked at the process */
		struct ebprof_pg_proc *p = bpf_map_lookup_elem(&pg_procs, &tgid);

		if (!p)
			return false;
		last->pg = *p;
		last->pg_known = 1;
	}
	return last->pg.query_string != 0;
}

/* Bytes of PgBackendStatus read at once from st_state on. */
#define STATUS_SPAN 256

/* Where a statement's text is read and hashed before it is known to be
 * new (a ring buffer record is reserved only then). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ebprof_query);
} query_scratch SEC(".maps");

/* One word of FNV-1a into h: w, its bytes from left on masked. */
static __always_inline __u64 hash_word(__u64 h, __u64 w, long left)
{
	if (left < 8)
		w &= (1ULL << (left * 8)) - 1;
	h ^= w;
	h *= 1099511628211ULL;
	return h ^ (h >> 32);
}

struct hash_scan {
	const char *text;
	long len;
	__u64 h;
};

/* bpf_loop() callback: word i of the text (a loop of its own had the
 * verifier walk its 128 steps in every state that reaches it: most of
 * the sampling program's instructions). */
static long hash_step(__u64 i, struct hash_scan *c)
{
	long left = c->len - (long)i * 8;

	if (left <= 0 || i >= EBPROF_QUERY_LEN / 8)
		return 1;
	c->h = hash_word(c->h, *(const __u64 *)(c->text + (i & (EBPROF_QUERY_LEN / 8 - 1)) * 8),
			 left);
	return 0;
}

#define FNV_BASIS 14695981039346656037ULL

/*
 * FNV-1a over the text of the per-CPU query_scratch record, a word at a
 * time, bytes after its NUL masked (the record is not cleared); len
 * counts the NUL. A global function: the verifier checks it once, not its
 * 128 steps in every state of every sample program that reaches it (as a
 * loop inlined there, most of the sampling program's instructions); and
 * no bpf_loop() callback, which a kernel before 5.17 refuses in the
 * programs it loads (do_sample_tail, on_switch).
 */
__noinline __u64 stmt_hash_scratch(long len)
{
	__u32 zero = 0;
	struct ebprof_query *q = bpf_map_lookup_elem(&query_scratch, &zero);
	__u64 h = FNV_BASIS;

	if (!q)
		return 0;
	for (__u32 i = 0; i < EBPROF_QUERY_LEN / 8; i++) {
		long left = len - (long)i * 8;

		if (left <= 0)
			break;
		h = hash_word(h, *(const __u64 *)(q->text + i * 8), left);
	}
	return h;
}

/* The same hash of text (the wait sampler's own scratch) in a bpf_loop()
 * callback: only the task iterator's program (5.18+) reaches it. */
static __always_inline __u64 hash_text_loop(const char *text, long len)
{
	struct hash_scan c = { .text = text, .len = len, .h = FNV_BASIS };

	bpf_loop(EBPROF_QUERY_LEN / 8, hash_step, &c, 0);
	return c.h;
}

/* Send the text in the scratch record (len bytes with its NUL); false
 * when the ring buffer is full. */
static __always_inline bool send_text(struct ebprof_query *q, __u32 tgid, __u32 tid, __u64 hash,
				      long len)
{
	__u64 size;

	q->h.type = EVENT_QUERY;
	q->h.pid = tgid;
	q->h.ppid = tid;
	q->h.flags = 0;
	q->h.ktime_ns = 0; /* neither time nor name: userspace needs the text only */
	q->h.exec_pages = 0;
	q->h.comm[0] = '\0';
	q->hash = hash;
	q->len = len - 1;
	q->truncated = len == sizeof(q->text);
	/* the header and the text: a short statement is a short record */
	size = offsetof(struct ebprof_query, text) + (__u64)len;
	if (size > sizeof(*q))
		size = sizeof(*q);
	return ring_out(q, size, STAT_QUERY_LOST, STAT_QUERY_SENT);
}

/*
 * Label the sample of a PostgreSQL backend (stmt_is_pg()) with what it
 * runs: the text at debug_query_string (NULL when idle, and between the
 * messages of the extended protocol), and, from 14 on, the query id in its
 * PgBackendStatus, trusted only while its state is "running".
 *
 * Reading user memory is the cost (a few hundred ns a read), so a sample
 * reads as little as it can: MyBEEntry once per thread; the text not at
 * all while the pointer and a non-zero query id are those of the last
 * sample (PostgreSQL's query id ignores constants: the same statement);
 * otherwise the text is read into a per-CPU scratch record and hashed,
 * and sent only when its hash differs from the thread's last one.
 *
 * Of task, through q (a scratch record no other program uses while this
 * one sleeps); read_query() below: of the current task.
 */
static __always_inline void read_query_as(struct stmt_state *last, __u32 tgid, __u32 tid,
					  struct sample_key *key, struct task_struct *task,
					  struct ebprof_query *q)
{
	struct ebprof_pg_proc *pg = &last->pg;
	__u32 gen = query_gen;
	__u64 str = 0, hash;
	__s32 state = -1;
	long len;

	if (pg->be_entry && !last->be)
		read_user(&last->be, sizeof(last->be), (void *)pg->be_entry, task);
	if (last->be) {
		/* st_state and st_query_id in one read, when they are close */
		__u32 d = pg->query_id_off - pg->state_off;

		if (pg->query_id_off > pg->state_off && d <= STATUS_SPAN - 8) {
			if (!read_user(q->text, STATUS_SPAN, (void *)(last->be + pg->state_off),
				       task)) {
				state = *(__s32 *)q->text;
				if (state == pg->state_running)
					key->query_id =
						*(__s64 *)(q->text + (d & (STATUS_SPAN - 1)));
			}
		} else {
			read_user(&state, sizeof(state), (void *)(last->be + pg->state_off), task);
			if (state == pg->state_running && pg->query_id_off)
				read_user(&key->query_id, sizeof(key->query_id),
					  (void *)(last->be + pg->query_id_off), task);
		}
	}
	if (read_user(&str, sizeof(str), (void *)pg->query_string, task) || !str) {
		if (state == pg->state_running)
			key->flags |= SAMPLE_QUERY_GAP;
		return;
	}
	if (last->hash && str == last->str && key->query_id && key->query_id == last->query_id &&
	    last->gen == gen) {
		key->query = last->hash; /* the same statement */
		return;
	}
	stat_inc(STAT_QUERY_READS);
	len = read_user_str(q->text, (void *)str, task);
	if (len <= 1) { /* unreadable or empty */
		if (state == pg->state_running)
			key->flags |= SAMPLE_QUERY_GAP;
		return;
	}
	/* task: the wait sampler's (its scratch, 5.18+); NULL: the current
	 * task's, into query_scratch (folded at compile time) */
	hash = task ? hash_text_loop(q->text, len) : stmt_hash_scratch(len);
	hash = hash ? hash : 1; /* 0 means "no statement" */
	key->query = hash;
	if ((hash != last->hash || last->gen != gen) && !send_text(q, tgid, tid, hash, len)) {
		key->flags |= SAMPLE_QUERY_LOST;
		hash = 0; /* sent again at the next sample */
	}
	last->hash = hash;
	last->str = str;
	last->query_id = key->query_id;
	last->gen = gen;
}

static __always_inline void read_query(struct stmt_state *last, __u32 tgid, __u32 tid,
				       struct sample_key *key)
{
	__u32 zero = 0;
	struct ebprof_query *q = bpf_map_lookup_elem(&query_scratch, &zero);

	if (q)
		read_query_as(last, tgid, tid, key, NULL, q);
}

#endif /* EBPROF_STATEMENT_BPF_H */
