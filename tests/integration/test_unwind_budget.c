// SPDX-License-Identifier: BSD-2-Clause
/*
 * The unwind tables' memory budget (userspace/sampling/unwind_budget.c)
 * on real kernel maps shaped as the BPF program's, for a real process
 * (the plt_main stack fixture, waiting): a binary over the budget is in
 * its process's set without rows, its use counted; at a rebalance the
 * most-used one takes the place of the least-used loaded ones; tables of
 * processes gone are freed. The test writes `unwind_hits` itself, as the
 * BPF program does for each binary an unwind enters. And forks: a child
 * holds the set the BPF fork hook copied it from its fork event to its
 * exit, whose delete is the BPF exit hook's alone (the test does what
 * those hooks do to `unwind_pids`).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ebprof/bpf_shared.h"
#include "process/procmaps.h"
#include "record_env.h"
#include "sampling/unwind_tables.h"
#include "testlib.h"
#include "util/timeutil.h"

struct env {
	int fds[5]; /* inner template, tables, pids, sets, hits */
	uint64_t *hits;
	struct unwind_tables *u;
};

static char *cache_dir;

static void env_new(struct env *e, uint64_t budget)
{
	LIBBPF_OPTS(bpf_map_create_opts, inner, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_map_create_opts, outer);
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	struct unwind_tables_opts o = { .budget_bytes = budget, .cache_dir = cache_dir };
	struct unwind_tables_maps m;

	e->fds[0] =
		bpf_map_create(BPF_MAP_TYPE_ARRAY, "tmpl", 4, sizeof(struct unwind_row), 1, &inner);
	cr_assert_geq(e->fds[0], 0, "inner map: %s", strerror(errno));
	outer.inner_map_fd = e->fds[0];
	e->fds[1] = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "tables", 4, 4,
				   EBPROF_MAX_UNWIND_TABLES, &outer);
	e->fds[2] = bpf_map_create(BPF_MAP_TYPE_HASH, "pids", 4, 4, 64, NULL);
	e->fds[3] =
		bpf_map_create(BPF_MAP_TYPE_ARRAY, "sets", 4, sizeof(struct unwind_proc), 8, NULL);
	e->fds[4] = bpf_map_create(BPF_MAP_TYPE_ARRAY, "hits", 4, 8, EBPROF_MAX_UNWIND_TABLES, &mm);
	for (int i = 1; i < 5; i++)
		cr_assert_geq(e->fds[i], 0, "map %d: %s", i, strerror(errno));
	e->hits = mmap(NULL, EBPROF_MAX_UNWIND_TABLES * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
		       e->fds[4], 0);
	cr_assert_neq(e->hits, MAP_FAILED);
	m = (struct unwind_tables_maps){ e->fds[1], e->fds[2], e->fds[3], 8, e->fds[4] };
	cr_assert_eq(unwind_tables_new(&o, &m, &e->u), 0);
}

static void env_free(struct env *e)
{
	unwind_tables_free(e->u);
	munmap(e->hits, EBPROF_MAX_UNWIND_TABLES * 8);
	for (int i = 0; i < 5; i++)
		close(e->fds[i]);
}

/* pid's set as the BPF program reads it. */
static void set_of(const struct env *e, uint32_t pid, struct unwind_proc *out)
{
	uint32_t set;

	cr_assert_eq(bpf_map_lookup_elem(e->fds[2], &pid, &set), 0, "pid %u has no set", pid);
	cr_assert_eq(bpf_map_lookup_elem(e->fds[3], &set, out), 0);
}

static const struct unwind_mapping *mapping_at(const struct unwind_proc *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (addr >= p->m[i].start && addr < p->m[i].end)
			return &p->m[i];
	return NULL;
}

static uint64_t table_bytes(const struct unwind_mapping *m)
{
	return ((uint64_t)m->nrows * sizeof(struct unwind_row) + 4095) & ~4095ull;
}

/* Is slot id filled in `unwind_tables`? */
static bool slot_filled(const struct env *e, uint32_t id)
{
	uint32_t map_id;

	return !bpf_map_lookup_elem(e->fds[1], &id, &map_id);
}

static struct tl_proc fx;
static pid_t pid;
static struct proc_maps *maps;

static void setup(void)
{
	char exe[512];

	rec_require_root();
	cache_dir = tl_tmpdir("unwind-budget");
	snprintf(exe, sizeof(exe), "%s/plt_main", tl_path("fixtures/stacks"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "1", NULL });
	cr_assert_eq(procmaps_read(pid, true, &maps), 0);
}

static void teardown(void)
{
	procmaps_free(maps);
	if (pid > 0) {
		kill(pid, SIGKILL);
		tl_wait(&fx, 10);
	}
}

TestSuite(unwind_budget, .init = setup, .fini = teardown, .timeout = 120);

Test(unwind_budget, the_budget_goes_to_the_binaries_sampled_most)
{
	struct unwind_tables_stats st;
	struct unwind_proc all, p;
	const struct unwind_mapping *r = NULL, *c = NULL;
	uint64_t lib_bytes = 0, total;
	struct env e;
	uint32_t r_id, c_id;

	/* every table loaded: their sizes */
	env_new(&e, 1ull << 30);
	cr_assert_eq(unwind_tables_load(e.u, pid, maps, false), 0);
	set_of(&e, pid, &all);
	unwind_tables_stats(e.u, &st);
	total = st.bytes;
	cr_assert_geq(all.n, 4, "plt_main, its library, libc, ld.so: %u mappings", all.n);
	for (size_t i = 0; i < maps->n; i++)
		if (maps->entries[i].path && strstr(maps->entries[i].path, "libstacks_nofp") &&
		    strchr(maps->entries[i].perms, 'x'))
			lib_bytes = table_bytes(mapping_at(&all, maps->entries[i].start));
	cr_assert_gt(lib_bytes, 0);
	env_free(&e);

	/* one library's worth short: a table is left out, in the set without rows */
	env_new(&e, total - lib_bytes);
	cr_assert_eq(unwind_tables_load(e.u, pid, maps, false), 0);
	set_of(&e, pid, &p);
	cr_assert_eq(p.n, all.n, "a table out of the budget keeps its mapping in the set");
	for (uint32_t i = 0; i < p.n; i++)
		if (!p.m[i].nrows)
			r = &p.m[i];
	cr_assert_not_null(r, "no table left out of a budget short of %llu bytes",
			   (unsigned long long)lib_bytes);
	r_id = r->table;
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.over_budget, 1);
	cr_expect_eq(st.out_of_budget, 1);
	cr_expect(!slot_filled(&e, r_id));
	/* the smallest loaded table big enough to make room (not the vDSO,
	 * mapped last): sampled least; the others sampled half as much as
	 * the table left out (not less than half: they stay) */
	for (uint32_t i = 0; i + 1 < p.n; i++)
		if (p.m[i].nrows && table_bytes(&p.m[i]) >= lib_bytes &&
		    (!c || table_bytes(&p.m[i]) < table_bytes(c)))
			c = &p.m[i];
	cr_assert_not_null(c);
	c_id = c->table;
	for (uint32_t i = 0; i < p.n; i++)
		e.hits[p.m[i].table] = p.m[i].table == r_id ? 1000 : p.m[i].table == c_id ? 0 : 500;

	cr_assert_eq(unwind_tables_rebalance(e.u), 0);
	set_of(&e, pid, &p);
	cr_expect_gt(mapping_at(&p, r->start)->nrows, 0, "the table sampled most is loaded");
	cr_expect_eq(mapping_at(&p, c->start)->nrows, 0, "the table sampled least is out");
	cr_expect(slot_filled(&e, r_id));
	cr_expect(!slot_filled(&e, c_id));
	for (uint32_t i = 0; i < p.n; i++)
		if (p.m[i].table != c_id)
			cr_expect_gt(p.m[i].nrows, 0, "mapping %u lost its table", i);
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.evicted, 1);
	cr_expect_eq(st.promoted, 1);
	cr_expect_eq(st.out_of_budget, 1);
	cr_expect_leq(st.bytes, total - lib_bytes);

	/* nothing sampled since: nothing moves */
	cr_assert_eq(unwind_tables_rebalance(e.u), 0);
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.evicted, 1);
	cr_expect_eq(st.promoted, 1);

	/* the process goes: its tables go (the vDSO's stays) */
	unwind_tables_forget(e.u, pid);
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.tables, 1, "%llu tables left", (unsigned long long)st.tables);
	cr_expect_eq(st.out_of_budget, 0);
	cr_expect(!slot_filled(&e, r_id));
	/* and come back, from the disk cache, when it is loaded again */
	cr_assert_eq(unwind_tables_load(e.u, pid, maps, false), 0);
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.tables, all.n - 1, "%llu tables", (unsigned long long)st.tables);
	cr_expect_eq(st.built, (uint64_t)0, "compiled again rather than read from the cache");
	env_free(&e);
}

/* maps without the executable mapping of libstacks_nofp (its entries
 * shared with maps: not to be freed). */
static struct proc_maps without_lib(struct map_entry *buf)
{
	struct proc_maps m = { .entries = buf };

	for (size_t i = 0; i < maps->n; i++)
		if (!(maps->entries[i].path && strstr(maps->entries[i].path, "libstacks_nofp") &&
		      strchr(maps->entries[i].perms, 'x')))
			buf[m.n++] = maps->entries[i];
	cr_assert_eq(m.n + 1, maps->n, "libstacks_nofp's code is mapped once");
	return m;
}

/* What the BPF program's fork hook does: the parent's entry to the child. */
static uint32_t bpf_fork(const struct env *e, uint32_t parent, uint32_t child)
{
	uint32_t set;

	cr_assert_eq(bpf_map_lookup_elem(e->fds[2], &parent, &set), 0);
	cr_assert_eq(bpf_map_update_elem(e->fds[2], &child, &set, BPF_ANY), 0);
	return set;
}

#define CHILD 4000001u /* above any pid_max: no process of this host */

/*
 * A forked child whose first sample loads nothing (pipeline/session.c,
 * as_forked()) runs on the set the fork hook copied: userspace holds that
 * set for it from its fork event, so that its parent's next layout (a
 * library loaded) does not free it under the child; the child's exit
 * leaves the entry to the BPF exit hook (no system call), a process whose
 * entry userspace wrote has it deleted at its exit; no set is left.
 */
Test(unwind_budget, a_fork_holds_the_set_its_fork_copied_until_it_exits)
{
	struct map_entry buf[maps->n];
	struct proc_maps fewer = without_lib(buf);
	struct unwind_proc before, after;
	struct unwind_tables_stats st;
	uint32_t set, cur;
	struct env e;

	env_new(&e, 1ull << 30);
	cr_assert_eq(unwind_tables_load(e.u, pid, maps, false), 0);
	set_of(&e, pid, &before);
	set = bpf_fork(&e, pid, CHILD);
	cr_assert_eq(unwind_tables_inherit(e.u, CHILD, pid, mono_ns() + 1000000000ull), 0);
	cr_assert(unwind_tables_inherited(e.u, CHILD));

	/* the parent maps other code: its own set, the child keeps the old */
	cr_assert_eq(unwind_tables_load(e.u, pid, &fewer, false), 0);
	cr_assert_eq(bpf_map_lookup_elem(e.fds[2], &pid, &cur), 0);
	cr_assert_neq(cur, set, "the parent's new layout is a set of its own");
	set_of(&e, CHILD, &after);
	cr_expect_eq(after.n, before.n, "the child's set was freed under it: %u mappings", after.n);
	cr_expect_eq(memcmp(&after, &before, sizeof(before)), 0, "the child's set changed");
	cr_expect(unwind_tables_inherited(e.u, CHILD));
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.sets, 2);
	cr_expect_eq(st.procs_inherited, 1);

	/* its exit: the BPF hook deleted its entry; a new fork under the same
	 * pid since has its own copy, which stays */
	cr_assert_eq(bpf_map_delete_elem(e.fds[2], &(uint32_t){ CHILD }), 0);
	bpf_fork(&e, pid, CHILD);
	unwind_tables_exited(e.u, CHILD);
	cr_expect_eq(bpf_map_lookup_elem(e.fds[2], &(uint32_t){ CHILD }, &cur), 0,
		     "the exit of a process deleted the entry of the next one under its pid");
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.sets, 1, "the exited child's set is still held");
	bpf_map_delete_elem(e.fds[2], &(uint32_t){ CHILD });

	/* an entry userspace wrote (maybe after the exit hook ran) goes */
	unwind_tables_exited(e.u, pid);
	cr_expect_neq(bpf_map_lookup_elem(e.fds[2], &pid, &cur), 0,
		      "an exited process's entry is left behind");
	unwind_tables_stats(e.u, &st);
	cr_expect_eq(st.sets, 0);
	env_free(&e);
}

/* A child is given nothing (it loads its own at its first sample) when
 * the copy may not be the parent's entry userspace knows: written too
 * close to the fork, or never; and it no longer counts as holding it once
 * its entry changed (an exec's mark) or is missing while it lives (a copy
 * that failed); missing for a process gone, there is nothing to load. */
Test(unwind_budget, a_fork_inherits_only_the_entry_its_parent_had_before)
{
	uint64_t later = mono_ns() + 1000000000ull;
	uint32_t no_set = EBPROF_UNWIND_NO_SET;
	struct env e;

	env_new(&e, 1ull << 30);
	cr_expect_eq(unwind_tables_inherit(e.u, CHILD, pid, later), -ENOENT, "parent unknown");
	cr_assert_eq(unwind_tables_load(e.u, pid, maps, false), 0);
	bpf_fork(&e, pid, CHILD);
	cr_expect_eq(unwind_tables_inherit(e.u, CHILD, pid, mono_ns()), -ENOENT,
		     "the parent's entry was written as it forked");
	cr_expect(!unwind_tables_inherited(e.u, CHILD));
	cr_expect_eq(unwind_tables_inherit(e.u, CHILD + 1, CHILD, later), -ENOENT,
		     "a parent userspace never wrote the entry of");

	cr_assert_eq(unwind_tables_inherit(e.u, CHILD, pid, later), 0);
	cr_assert(unwind_tables_inherited(e.u, CHILD));
	cr_assert_eq(bpf_map_update_elem(e.fds[2], &(uint32_t){ CHILD }, &no_set, BPF_ANY), 0);
	cr_expect(!unwind_tables_inherited(e.u, CHILD), "exec'd since its fork");
	/* no entry: the exit hook deleted it (CHILD names no process) */
	cr_assert_eq(bpf_map_delete_elem(e.fds[2], &(uint32_t){ CHILD }), 0);
	cr_expect(unwind_tables_inherited(e.u, CHILD), "exited: nothing to load either");
	cr_expect(unwind_tables_inherited_gone(e.u, CHILD), "known exited: its mark alone");
	cr_expect(!unwind_tables_inherited_gone(e.u, CHILD + 1), "never inherited");
	/* no entry for a process that lives: the fork's copy failed */
	bpf_fork(&e, pid, (uint32_t)getpid());
	cr_assert_eq(unwind_tables_inherit(e.u, (uint32_t)getpid(), pid, later), 0);
	cr_assert(unwind_tables_inherited(e.u, (uint32_t)getpid()));
	cr_assert_eq(bpf_map_delete_elem(e.fds[2], &(uint32_t){ (uint32_t)getpid() }), 0);
	cr_expect(!unwind_tables_inherited(e.u, (uint32_t)getpid()),
		  "alive without an entry: its fork's copy failed, it loads its own");
	unwind_tables_forget(e.u, (uint32_t)getpid());
	unwind_tables_forget(e.u, CHILD);
	cr_expect(!unwind_tables_inherited_gone(e.u, CHILD), "forgotten");
	unwind_tables_forget(e.u, pid);
	env_free(&e);
}
