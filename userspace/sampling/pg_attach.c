// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which processes are PostgreSQL and where they keep their statement
 * (pg_attach.h): binaries by (device, inode, path), processes by pid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_attach.h"
#include "plpgsql_bin.h"
#include "util/hashmap.h"
#include "util/log.h"

/*
 * PgBackendStatus on LP64 builds, from PostgreSQL's
 * utils/backend_status.h: st_state and st_query_id have sat at the same
 * offsets since the query id came (14); 18 added STATE_STARTING before
 * STATE_IDLE, so "running" is 3 there, 2 before.
 */
static const struct pg_layout {
	int major_min, major_max;
	uint16_t state_off, query_id_off;
	int32_t running;
} layouts[] = {
	{ 14, 17, 232, 424, 2 },
	{ 18, 18, 232, 424, 3 },
};

/*
 * Before 14 a backend keeps its wait event in its PGPROC (MyProc), in
 * storage/proc.h's wait_event_info, set only while track_activities is
 * on. x86-64 offsets: offsetof with 12.5's and 13.1's headers, the same in
 * the stores of 12.22's and 13.23's code. DWARF's offset wins.
 */
static const struct pgproc_layout {
	int major;
	uint32_t wait_event_off;
} pgproc_layouts[] = {
	{ 12, 676 },
	{ 13, 684 },
};

struct bin_key {
	uint64_t dev, inode;
	const char *path; /* owned by struct pg_binary */
};

struct pg_binary {
	struct bin_key key;
	bool pg;
	struct ebprof_pg_proc proc; /* addresses as ELF vaddrs */
	uint64_t top_mcxt;	    /* vaddr of TopMemoryContext, 0: none */
	struct sym_elf *elf;	    /* pinned while pg or plpgsql */
	/* a plpgsql.so: where its callback and C frames are (ELF vaddrs),
	 * pl.callback 0: not one, or not found */
	struct plpgsql_bin pl;
	int layout_major; /* of layout, 0: not made yet */
	int layout_err;
	struct ebprof_plpgsql_proc layout; /* callback 0 */
};

/* What is known of a process: PostgreSQL with its addresses, or not. */
struct pg_pid {
	bool pg;
	struct pg_proc_addrs a;
	struct plpgsql_cframes pl; /* its PL/pgSQL executors ... */
	uint64_t pl_callback;	   /* ... and callback in plpgsql_procs, 0: none */
};

struct pg_attach {
	struct sampler *s;
	struct symbolizer *sym;
	bool plpgsql;	       /* PL/pgSQL frames wanted */
	struct hashmap *bins;  /* bin_key -> pg_binary */
	struct hashmap *procs; /* u64 pid -> struct pg_pid (malloc'ed) */
	struct pg_attach_stats st;
};

static uint64_t hash_bin(const void *k)
{
	const struct bin_key *b = k;

	return hm_hash_bytes(b, offsetof(struct bin_key, path)) ^ hm_hash_str(b->path);
}

static bool equal_bin(const void *a, const void *b)
{
	const struct bin_key *x = a, *y = b;

	return x->dev == y->dev && x->inode == y->inode && !strcmp(x->path, y->path);
}

int pg_attach_new(struct sampler *s, struct symbolizer *sym, bool plpgsql, struct pg_attach **out)
{
	struct pg_attach *pa = calloc(1, sizeof(*pa));

	if (!pa)
		return -ENOMEM;
	pa->s = s;
	pa->sym = sym;
	pa->plpgsql = plpgsql;
	pa->bins = hm_new(hash_bin, equal_bin);
	pa->procs = hm_new_u64();
	if (!pa->bins || !pa->procs) {
		pg_attach_free(pa);
		return -ENOMEM;
	}
	*out = pa;
	return 0;
}

void pg_attach_free(struct pg_attach *pa)
{
	const void *k;
	void *v;

	if (!pa)
		return;
	for (size_t it = 0; pa->bins && hm_next(pa->bins, &it, &k, &v);) {
		struct pg_binary *b = v;

		if (b->elf)
			sym_elf_put(pa->sym, b->elf);
		free((char *)b->key.path);
		free(b);
	}
	hm_free(pa->bins);
	for (size_t it = 0; pa->procs && hm_next(pa->procs, &it, &k, &v);)
		free(v);
	hm_free(pa->procs);
	free(pa);
}

/* Where a PostgreSQL 12 or 13 backend keeps its wait event: in its
 * PGPROC, at DWARF's offset where it has one, the version's otherwise. */
static void pgproc_wait_event(struct pg_binary *b, int major, const char *path)
{
	uint64_t myproc, off = 0; /* 0: unknown (PGPROC starts with other members) */

	if (sym_elf_symbol(b->elf, "MyProc", &myproc))
		return;
	if (sym_elf_member_offset(b->elf, "PGPROC", "wait_event_info", &off) || off >= 4096)
		off = 0;
	for (size_t i = 0; !off && i < sizeof(pgproc_layouts) / sizeof(pgproc_layouts[0]); i++)
		if (pgproc_layouts[i].major == major)
			off = pgproc_layouts[i].wait_event_off;
	if (!off) {
		log_info("%s: PostgreSQL %d: no known PGPROC layout, no wait events", path, major);
		return;
	}
	b->proc.wait_event = myproc;
	b->proc.wait_event_off = (uint32_t)off;
	log_debug("%s: PostgreSQL %d, wait events in PGPROC at %u", path, major,
		  b->proc.wait_event_off);
}

/* The PgBackendStatus layout of a PostgreSQL binary: DWARF's offsets
 * where it has them, the version's otherwise. */
static void layout_of(struct pg_binary *b, const char *path)
{
	char version[128];
	const char *v;
	uint64_t be, state, qid, wait;
	int major = 0;

	if (!sym_elf_find_string(b->elf, "postgres (PostgreSQL) ", version, sizeof(version))) {
		version[strcspn(version, "\r\n")] = '\0'; /* "postgres --version" ends in one */
		v = version + strlen("postgres (PostgreSQL) ");
		major = atoi(v);
	}
	b->proc.major = major > 0 && major < 1000 ? (uint32_t)major : 0;
	/* where a backend keeps its wait event (14+; before, in PGPROC) */
	if (!sym_elf_symbol(b->elf, "my_wait_event_info", &wait))
		b->proc.wait_event = wait;
	else if (major > 0 && major < 14)
		pgproc_wait_event(b, major, path);
	/* before 14 (where MyBEEntry is static, seen in .symtab): statements only */
	if (sym_elf_symbol(b->elf, "MyBEEntry", &be) || (major > 0 && major < 14))
		return;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct pg_layout *l = &layouts[i];

		if (major < l->major_min || major > l->major_max)
			continue;
		b->proc.be_entry = be;
		b->proc.state_off = l->state_off;
		b->proc.query_id_off = l->query_id_off;
		b->proc.state_running = l->running;
		if (!sym_elf_member_offset(b->elf, "PgBackendStatus", "st_state", &state) &&
		    !sym_elf_member_offset(b->elf, "PgBackendStatus", "st_query_id", &qid) &&
		    state < UINT16_MAX && qid < UINT16_MAX) {
			b->proc.state_off = (uint16_t)state;
			b->proc.query_id_off = (uint16_t)qid;
		}
		log_debug("%s: PostgreSQL %d, st_state at %u, st_query_id at %u", path, major,
			  b->proc.state_off, b->proc.query_id_off);
		return;
	}
	log_info("%s: PostgreSQL %s: no known PgBackendStatus layout, no query ids", path,
		 major ? version + strlen("postgres (PostgreSQL) ") : "of unknown version");
}

/* Whether a file may be plpgsql.so, by its name (plpgsql*.so*):
 * opening every library a backend maps would cost its first announcement
 * (libc's debug file). */
static bool plpgsql_name(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	return base && !strncmp(base, "plpgsql", strlen("plpgsql")) && strstr(base, ".so");
}

/* A plpgsql.so: where its callback and C frames are. */
static void find_plpgsql(struct pg_attach *pa, struct pg_binary *b, const char *path)
{
	int err = plpgsql_bin_find(pa->sym, b->elf, true, &b->pl);

	if (err) {
		log_info("%s: PL/pgSQL's error callback not found (%s): no PL/pgSQL frames", path,
			 strerror(-err));
		memset(&b->pl, 0, sizeof(b->pl));
		return;
	}
	log_debug("%s: PL/pgSQL's error callback at 0x%" PRIx64 " (by %s), pushed by %u functions",
		  path, b->pl.callback, b->pl.how, b->pl.nexec);
}

/* What a binary is, looked up once. */
static struct pg_binary *binary(struct pg_attach *pa, uint32_t pid, const struct map_entry *e)
{
	struct bin_key key = { e->dev, e->inode, e->path };
	struct sym_binary bin = { e->path, (int)pid, e->start, e->end, e->dev, e->inode };
	struct pg_binary *b;
	uint64_t dqs, ecs;
	void *v;

	if (!hm_find(pa->bins, &key, &v))
		return v;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->key.path = strdup(e->path))) {
		free(b);
		return NULL;
	}
	b->key.dev = e->dev;
	b->key.inode = e->inode;
	if (!sym_elf_get(pa->sym, &bin, &b->elf)) {
		b->pg = !sym_elf_symbol(b->elf, "debug_query_string", &dqs);
		if (b->pg) {
			b->proc.query_string = dqs;
			if (sym_elf_symbol(b->elf, "TopMemoryContext", &b->top_mcxt))
				b->top_mcxt = 0;
			if (!sym_elf_symbol(b->elf, "error_context_stack", &ecs))
				b->proc.error_context_stack = ecs;
			layout_of(b, e->path);
			if (!b->proc.be_entry)
				pa->st.no_layout++;
		} else if (pa->plpgsql && plpgsql_name(e->path) && plpgsql_bin_is(b->elf)) {
			find_plpgsql(pa, b, e->path);
		} else {
			sym_elf_put(pa->sym, b->elf);
			b->elf = NULL;
		}
	}
	if (hm_set(pa->bins, &b->key, b, NULL)) {
		if (b->elf)
			sym_elf_put(pa->sym, b->elf);
		free((char *)b->key.path);
		free(b);
		return NULL;
	}
	return b;
}

/* Set what is known of pid: a copy of *p. 0 or -ENOMEM. */
static int mark(struct pg_attach *pa, uint32_t pid, const struct pg_pid *p)
{
	struct pg_pid *copy = malloc(sizeof(*copy));
	void *old = NULL;
	uint64_t key = pid;

	if (!copy)
		return -ENOMEM;
	*copy = *p;
	/* one probe: a fork's child is new under churn */
	if (hm_put_u64(pa->procs, pid, copy, &old)) {
		free(copy);
		if (!hm_remove(pa->procs, &key, NULL, &old)) /* nothing stale stays */
			free(old);
		return -ENOMEM;
	}
	free(old);
	return 0;
}

/* Does maps map exe? */
static bool maps_exe(const struct proc_maps *maps, const char *exe)
{
	for (size_t i = 0; exe && maps && i < maps->n; i++)
		if (maps->entries[i].kind == MAPPING_FILE && !strcmp(maps->entries[i].path, exe))
			return true;
	return false;
}

/* The layout of plpgsql.so b in a server of major version major, made
 * once. 0 or a negative errno (said once). */
static int plpgsql_layout(struct pg_binary *b, int major, const char *path)
{
	if (b->layout_major == major)
		return b->layout_err;
	b->layout_major = major;
	b->layout_err = plpgsql_bin_layout(b->elf, major, &b->layout);
	if (b->layout_err)
		log_info("%s: no known PL/pgSQL layout of PostgreSQL %d: no PL/pgSQL frames", path,
			 major);
	return b->layout_err;
}

/*
 * The PL/pgSQL frames of PostgreSQL process pid (p, of major version
 * p->a.major) with maps: the ranges of their C frames into p, and where
 * its plpgsql.so's callback is to the BPF program (an entry of zeros when
 * it maps none, so that the program stops asking) when first (the
 * process is new) or when it changed (it has inherited its parent's).
 */
static void attach_plpgsql(struct pg_attach *pa, uint32_t pid, const struct proc_maps *maps,
			   struct pg_pid *p, bool first)
{
	struct ebprof_plpgsql_proc proc = { 0 };
	struct plpgsql_cframes *out = &p->pl;
	int major = (int)p->a.major, err;

	memset(out, 0, sizeof(*out));
	if (!pa->plpgsql)
		return;
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct pg_binary *b;
		uint64_t vaddr, bias;

		if (e->kind != MAPPING_FILE || !plpgsql_name(e->path))
			continue;
		b = binary(pa, pid, e);
		if (!b || !b->pl.callback || sym_elf_offset_vaddr(b->elf, e->offset, &vaddr) ||
		    plpgsql_layout(b, major, e->path))
			continue;
		bias = e->start - vaddr;
		proc = b->layout;
		proc.callback = b->pl.callback + bias;
		for (unsigned k = 0; k < b->pl.nexec; k++) {
			out->start[k] = b->pl.exec_start[k] + bias;
			out->end[k] = b->pl.exec_end[k] + bias;
		}
		out->n = b->pl.nexec;
		break;
	}
	if (!first && proc.callback == p->pl_callback)
		return;
	p->pl_callback = proc.callback;
	if (pa->s && (err = sampler_set_plpgsql_proc(pa->s, pid, &proc)))
		log_debug("cannot find the PL/pgSQL frames of pid %u: %s", pid, strerror(-err));
}

int pg_attach_process(struct pg_attach *pa, uint32_t pid, const struct proc_maps *maps,
		      const char *exe)
{
	struct pg_pid p = { .pg = true };

	bool exe_only = maps_exe(maps, exe);

	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct map_entry *e = &maps->entries[i];
		struct ebprof_pg_proc proc;
		struct pg_binary *b;
		uint64_t vaddr;
		int err;

		if (e->kind != MAPPING_FILE || (exe_only && strcmp(e->path, exe)) ||
		    (i && maps->entries[i - 1].path && !strcmp(maps->entries[i - 1].path, e->path)))
			continue;
		b = binary(pa, pid, e);
		if (!b)
			return -ENOMEM;
		if (!b->pg)
			continue;
		/* the process's address = ELF vaddr + (where a mapping of the
		 * file starts - the vaddr of its file offset) */
		if (sym_elf_offset_vaddr(b->elf, e->offset, &vaddr))
			continue;
		proc = b->proc;
		proc.query_string += e->start - vaddr;
		if (proc.be_entry)
			proc.be_entry += e->start - vaddr;
		if (proc.wait_event)
			proc.wait_event += e->start - vaddr;
		if (proc.error_context_stack)
			proc.error_context_stack += e->start - vaddr;
		if (pa->s && (err = sampler_set_pg_proc(pa->s, pid, &proc))) {
			log_debug("cannot label the statements of pid %u: %s", pid, strerror(-err));
			return err;
		}
		pa->st.processes++;
		p.a = (struct pg_proc_addrs){
			proc.major,	   b->top_mcxt ? b->top_mcxt + e->start - vaddr : 0,
			proc.query_string, proc.be_entry,
			proc.state_off,	   proc.query_id_off,
			proc.state_running
		};
		attach_plpgsql(pa, pid, maps, &p, true);
		return mark(pa, pid, &p) ?: 1;
	}
	pa->st.others++;
	/* an entry without addresses: the BPF program stops asking */
	if (pa->s)
		sampler_set_pg_proc(pa->s, pid, &(struct ebprof_pg_proc){ 0 });
	return mark(pa, pid, &(struct pg_pid){ .pg = false });
}

void pg_attach_maps_changed(struct pg_attach *pa, uint32_t pid, const struct proc_maps *maps)
{
	void *v;
	struct pg_pid *p;

	if (hm_find_u64(pa->procs, pid, &v) || !(p = v)->pg)
		return;
	attach_plpgsql(pa, pid, maps, p, false);
}

int pg_attach_plpgsql(const struct pg_attach *pa, uint32_t pid, struct plpgsql_cframes *out)
{
	void *v;

	if (hm_find_u64(pa->procs, pid, &v) || !((const struct pg_pid *)v)->pg ||
	    !((const struct pg_pid *)v)->pl.n)
		return -ENOENT;
	*out = ((const struct pg_pid *)v)->pl;
	return 0;
}

bool pg_attach_known(struct pg_attach *pa, uint32_t pid)
{
	return !hm_find_u64(pa->procs, pid, NULL);
}

void pg_attach_on_fork(struct pg_attach *pa, uint32_t child, uint32_t parent)
{
	void *p;

	/* a fork keeps the address space: the parent's addresses are the
	 * child's */
	if (!hm_find_u64(pa->procs, parent, &p))
		mark(pa, child, p);
}

void pg_attach_forget(struct pg_attach *pa, uint32_t pid)
{
	uint64_t key = pid;
	void *old;

	if (!hm_remove(pa->procs, &key, NULL, &old))
		free(old);
}

int pg_attach_addrs(const struct pg_attach *pa, uint32_t pid, struct pg_proc_addrs *out)
{
	void *v;
	const struct pg_pid *p;

	if (hm_find_u64(pa->procs, pid, &v))
		return -ENOENT;
	p = v;
	if (!p->pg)
		return -ENOENT;
	*out = p->a;
	return 0;
}

int pg_attach_pids(const struct pg_attach *pa, uint32_t **pids, size_t *n)
{
	const void *k;
	void *v;

	*n = 0;
	*pids = malloc((hm_size(pa->procs) + 1) * sizeof(**pids));
	if (!*pids)
		return -ENOMEM;
	for (size_t it = 0; hm_next(pa->procs, &it, &k, &v);)
		if (((const struct pg_pid *)v)->pg)
			(*pids)[(*n)++] = (uint32_t) * (const uint64_t *)k;
	return 0;
}

void pg_attach_get_stats(const struct pg_attach *pa, struct pg_attach_stats *out)
{
	*out = pa->st;
}
