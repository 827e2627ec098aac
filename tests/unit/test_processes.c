// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/processes.h"

Test(processes, snapshot_of_self)
{
	struct proc_registry *reg;
	struct proc_info *pi;
	uint32_t me = (uint32_t)getpid();

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	pi = procs_get(reg, me);
	cr_assert_not_null(pi);
	cr_expect_not_null(pi->maps);
	cr_expect_not_null(pi->exe);
	cr_expect(strstr(pi->exe, "test_processes") != NULL);
	cr_expect_eq(pi->ppid, (uint32_t)getppid());
	cr_expect_eq(procs_maps(reg, me), pi->maps);
	procs_free(reg);
}

Test(processes, children_inherit_until_exec)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), child = 0x3ffff0, grandchild = 0x3ffff1;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	procs_on_fork(reg, child, me, 1000);
	procs_on_fork(reg, grandchild, child, 2000);
	/* the (fake) children are gone: their snapshots fail */
	cr_expect_lt(procs_snapshot(reg, child, false), 0);
	cr_expect_eq(procs_maps(reg, child), procs_get(reg, me)->maps);
	cr_expect_eq(procs_maps(reg, grandchild), procs_get(reg, me)->maps);
	cr_expect_str_eq(procs_get(reg, child)->exe, procs_get(reg, me)->exe);
	procs_on_exec(reg, child, 3000);
	cr_expect_null(procs_maps(reg, child));
	cr_expect_null(procs_maps(reg, grandchild)); /* its parent's layout changed */
	procs_on_exit(reg, child, 4000);
	cr_expect(procs_get(reg, child)->exited);
	cr_expect_eq(procs_count(reg), 3);
	/* Its life as the events told it: the fork's time stays its start (an
	 * exec is not a new life), the exit's its end; the process we only
	 * looked at has an unknown start. */
	cr_expect_eq(procs_get(reg, child)->start_ns, 1000);
	cr_expect_eq(procs_get(reg, child)->exit_ns, 4000);
	cr_expect_eq(procs_get(reg, grandchild)->start_ns, 2000);
	cr_expect_eq(procs_get(reg, grandchild)->exit_ns, 0);
	cr_expect_eq(procs_get(reg, me)->start_ns, 0);
	procs_on_exec(reg, 0x3ffff2, 5000); /* exec'd before we saw its fork */
	cr_expect_eq(procs_get(reg, 0x3ffff2)->start_ns, 5000);
	procs_free(reg);
}

Test(processes, unknown_pid)
{
	struct proc_registry *reg;

	cr_assert_eq(procs_new(&reg), 0);
	cr_expect_null(procs_get(reg, 12345));
	cr_expect_null(procs_maps(reg, 12345));
	procs_free(reg);
}

/* Connection churn: thousands of forks the sampler never hit leave the
 * registry as they exit, whatever their order. */
Test(processes, unsampled_processes_leave_at_exit)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), base = 0x300000;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	for (uint32_t i = 0; i < 20000; i++) {
		procs_on_fork(reg, base + i, me, 1000 + i);
		if (i >= 8)
			procs_on_exit(reg, base + i - 8, 2000 + i);
	}
	cr_expect_eq(procs_count(reg), 1 + 8);
	cr_expect_eq(procs_get(reg, me)->nchildren, 8);
	for (uint32_t i = 20000 - 8; i < 20000; i++)
		procs_on_exit(reg, base + i, 30000);
	cr_expect_eq(procs_count(reg), 1);
	cr_expect_eq(procs_get(reg, me)->nchildren, 0);
	procs_free(reg);
}

/* pid_max is 32768 on small hosts: under connection churn a pid comes round
 * within an interval. A sampled backend's samples are profiled by its entry
 * at the flush; a new backend under its pid that exits unsampled must not
 * take that entry along (its samples went to an "unknown" profile of their
 * own, not grouped as young). */
Test(processes, sampled_entry_outlives_a_reused_pid)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), pid = 0x3ffff0;
	struct proc_info *pi;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	procs_on_fork(reg, pid, me, 1000);
	procs_on_sampled(reg, pid, procs_get(reg, me)->exec_pages);
	procs_on_exit(reg, pid, 2000);
	procs_on_fork(reg, pid, me, 3000); /* another backend, the same pid */
	procs_on_exit(reg, pid, 4000);	   /* never sampled */
	pi = procs_get(reg, pid);
	cr_assert_not_null(pi, "the entry its predecessor's samples need went with it");
	cr_expect_eq(pi->start_ns, 3000);
	cr_expect(pi->exited);
	cr_expect_str_eq(pi->comm, procs_get(reg, me)->comm);
	procs_free(reg);
}

/* A process that exited keeps its entry while a child of its is known (the
 * child may inherit its snapshot); the last child takes it along. */
Test(processes, exited_parent_goes_with_its_last_child)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), p = 0x310000, c1 = 0x310001, c2 = 0x310002;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	procs_on_fork(reg, p, me, 1000);
	procs_on_fork(reg, c1, p, 1100);
	procs_on_fork(reg, c2, p, 1200);
	procs_on_exit(reg, p, 1300);
	cr_expect_not_null(procs_get(reg, p), "gone while its children live");
	cr_expect_eq(procs_maps(reg, c1), procs_get(reg, me)->maps);
	procs_on_exit(reg, c1, 1400);
	cr_expect_null(procs_get(reg, c1));
	cr_expect_not_null(procs_get(reg, p));
	cr_expect_eq(procs_on_sampled(reg, c2, 0), -ENOENT, "a fake pid has no maps");
	procs_on_exit(reg, c2, 1500);
	cr_expect_not_null(procs_get(reg, c2), "sampled: the session removes it");
	procs_remove(reg, c2);
	cr_expect_null(procs_get(reg, c2));
	cr_expect_null(procs_get(reg, p), "its last child took it along");
	cr_expect_eq(procs_count(reg), 1);
	cr_expect_eq(procs_get(reg, me)->nchildren, 0);
	procs_free(reg);
}

/* A forked child sampled with as many executable pages as its ancestor's
 * snapshot shares that snapshot: no /proc read (a fake pid would fail
 * one); with a different count it reads its own. */
Test(processes, sampled_children_share_their_parent_snapshot)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), c = 0x320000, d = 0x320001;
	uint64_t pages = 0;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	cr_assert_eq(proc_read_exec_pages(me, &pages), 0);
	cr_assert_gt(pages, 0);
	cr_expect_eq(procs_get(reg, me)->exec_pages, pages);
	procs_on_fork(reg, c, me, 1000);
	procs_on_fork(reg, d, me, 1000);
	cr_expect_eq(procs_on_sampled(reg, c, pages), 0);
	cr_expect_null(procs_get(reg, c)->maps, "a copy of its parent's snapshot");
	cr_expect_eq(procs_maps(reg, c), procs_get(reg, me)->maps);
	cr_expect(procs_get(reg, c)->sampled);
	cr_expect_eq(procs_on_sampled(reg, d, pages + 3), -ENOENT, "its own maps were read");
	cr_expect_eq(procs_on_maps_changed(reg, c), -ENOENT);
	cr_expect_eq(procs_maps(reg, d), procs_get(reg, me)->maps, "the fallback stays");
	procs_free(reg);
}

/* A forked child's first sample looks at its /proc (for a perf map): a
 * process that exited (a reaped one, a zombie) is found gone there, and
 * the session needs no other look to know it; a living one is not. */
Test(processes, a_child_gone_at_its_first_sample_is_known_gone)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), c;
	uint64_t pages = 0;
	pid_t child = fork();
	int status;

	cr_assert_geq(child, 0);
	if (!child)
		_exit(0);
	cr_assert_eq(waitpid(child, &status, 0), child);
	c = (uint32_t)child;
	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	cr_assert_eq(proc_read_exec_pages(me, &pages), 0);
	procs_on_fork(reg, c, me, 1000);
	cr_expect_eq(procs_on_sampled(reg, c, pages), 0);
	cr_expect(procs_get(reg, c)->gone, "reaped before its first sample was read");
	child = fork(); /* alive */
	cr_assert_geq(child, 0);
	if (!child) {
		pause();
		_exit(0);
	}
	c = (uint32_t)child;
	procs_on_fork(reg, c, me, 2000);
	cr_expect_eq(procs_on_sampled(reg, c, pages), 0);
	cr_expect_not(procs_get(reg, c)->gone, "alive");
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, &status, 0), child);
	procs_free(reg);
}

/* A child gone by the flush opens its files through the living owner of
 * the snapshot it shares (its map_files and root are gone); one alive,
 * or with no living owner, through itself. */
Test(processes, a_gone_child_opens_files_through_its_snapshot_owner)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), c = 0x330000, g = 0x330001;
	uint64_t pages = 0;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	cr_assert_eq(proc_read_exec_pages(me, &pages), 0);
	procs_on_fork(reg, c, me, 1000);
	procs_on_fork(reg, g, c, 2000);
	cr_expect_eq(procs_on_sampled(reg, c, pages), 0);
	cr_expect_eq(procs_on_sampled(reg, g, pages), 0);
	cr_expect_eq(procs_open_via(reg, c), c, "alive: its own");
	procs_on_exit(reg, c, 3000);
	cr_expect_eq(procs_open_via(reg, c), me, "gone: its parent's");
	procs_on_exit(reg, g, 3000);
	cr_expect_eq(procs_open_via(reg, g), me, "gone, and its parent too: the owner's");
	cr_expect_eq(procs_open_via(reg, 0x330002), 0x330002u, "unknown: its own");
	procs_free(reg);
}

/* Under churn pids wrap (pid_max 32768 wraps in under two minutes at 300
 * forks a second): a fork under a pid whose process exited is another
 * process, and the first one's snapshot, exe and exit are not its. */
Test(processes, a_reused_pid_is_a_new_process)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), p = 0x330000, q = 0x330001;
	struct proc_info *pi;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	procs_on_fork(reg, p, me, 1000);
	procs_on_fork(reg, q, me, 1000);
	procs_on_sampled(reg, p, 1);
	procs_on_exec(reg, q, 1500);
	procs_on_exit(reg, p, 2000);
	cr_assert_not_null(procs_get(reg, p), "sampled: kept for its samples");
	procs_on_fork(reg, p, q, 3000); /* p again, now a child of q */
	pi = procs_get(reg, p);
	cr_assert_not_null(pi);
	cr_expect_not(pi->exited);
	cr_expect_not(pi->sampled);
	cr_expect_eq(pi->exit_ns, 0);
	cr_expect_eq(pi->start_ns, 3000);
	cr_expect_eq(pi->ppid, q);
	cr_expect_null(procs_maps(reg, p), "q exec'd: nothing known of its layout");
	cr_expect_eq(procs_get(reg, me)->nchildren, 1, "only q is still me's");
	cr_expect_eq(procs_get(reg, q)->nchildren, 1);
	/* A child that would inherit from an ancestor younger than itself
	 * names a reused pid: no inheritance. */
	procs_on_fork(reg, 0x330002, me, 4000);
	procs_get(reg, 0x330002)->ppid = p; /* as if p had been its parent */
	cr_expect_null(procs_maps(reg, 0x330002));
	procs_free(reg);
}

/* A pid taken again by a process whose fork was not seen (its parent is no
 * target, e.g. clone3 with set_tid), then exec'd: a new process, not the
 * exited one, which the next flush would forget with it. */
Test(processes, a_reused_pid_seen_at_exec_is_a_new_process)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), p = 0x340000;
	struct proc_info *pi;

	cr_assert_eq(procs_new(&reg), 0);
	procs_on_fork(reg, p, me, 1000);
	procs_on_sampled(reg, p, 1);
	procs_on_exit(reg, p, 2000);
	procs_on_exec(reg, p, 3000);
	pi = procs_get(reg, p);
	cr_assert_not_null(pi);
	cr_expect_not(pi->exited, "the new process is not the exited one");
	cr_expect_eq(pi->exit_ns, 0);
	cr_expect_eq(pi->start_ns, 3000);
	cr_expect(pi->execd);
	procs_free(reg);
}

/* A child forked from a process whose layout nobody read names that
 * parent to read (its snapshot serves the child gone, and its siblings);
 * not once the layout is known, nor for a child that exec'd, nor a parent
 * gone, nor one that exec'd after the fork. */
Test(processes, a_child_of_an_unread_parent_names_it)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), c = 0x350000, d = 0x350001, e = 0x350002;

	cr_assert_eq(procs_new(&reg), 0);
	procs_on_exec(reg, me, 500); /* a new program: no maps read yet */
	procs_on_fork(reg, c, me, 1000);
	procs_on_fork(reg, d, me, 1100);
	procs_on_exec(reg, d, 1200);
	cr_expect_eq(procs_unread_parent(reg, c), me);
	cr_expect_eq(procs_unread_parent(reg, d), 0, "exec'd: its own layout");
	cr_expect_eq(procs_unread_parent(reg, 0x350009), 0, "unknown");
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	cr_expect_eq(procs_unread_parent(reg, c), 0, "read now");
	cr_expect_eq(procs_maps(reg, c), procs_get(reg, me)->maps);
	procs_on_exec(reg, me, 1500); /* after c's fork: another layout */
	cr_expect_eq(procs_unread_parent(reg, c), 0);
	procs_on_fork(reg, e, me, 1600);
	cr_expect_eq(procs_unread_parent(reg, e), me);
	procs_on_exit(reg, me, 1700);
	cr_expect_eq(procs_unread_parent(reg, e), 0, "gone: nothing to read");
	procs_free(reg);
}

/* A snapshot taken before the process was sampled (at the start, or as a
 * parent) is read again at its first sample when its executable pages
 * changed since; kept when they did not, or are unknown. */
Test(processes, an_early_snapshot_is_read_again_when_its_code_changed)
{
	struct proc_registry *reg;
	uint32_t p = 0x360000;
	struct proc_maps *maps;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procmaps_read(getpid(), true, &maps), 0);
	cr_assert_eq(procs_adopt_snapshot(reg, p, maps, strdup("/bin/x")), 0);
	cr_expect_eq(procs_maps(reg, p), maps);
	cr_expect_str_eq(procs_get(reg, p)->exe, "/bin/x");
	cr_expect_eq(procs_on_sampled(reg, p, 0), 0, "pages unknown: kept");
	procs_get(reg, p)->exec_pages = 7;
	cr_expect_eq(procs_on_sampled(reg, p, 7), 0, "the same pages: kept");
	cr_expect_eq(procs_on_sampled(reg, p, 9), -ENOENT, "read again (a fake pid fails)");
	cr_expect_eq(procs_maps(reg, p), maps, "a failed read keeps what it had");
	procs_free(reg);
}

/* An exec'd child's samples from before its exec (in the interval of the
 * rest) are named from the layout it had then: its parent's. Gone, it
 * opens its own files through its living parent. */
Test(processes, an_execd_child_keeps_its_layout_before_the_exec)
{
	struct proc_registry *reg;
	uint32_t me = (uint32_t)getpid(), c = 0x370000, d = 0x370001, via = 0;
	struct proc_maps *maps;

	cr_assert_eq(procs_new(&reg), 0);
	cr_assert_eq(procs_snapshot(reg, me, false), 0);
	procs_on_fork(reg, c, me, 1000);
	cr_expect_null(procs_maps_before_exec(reg, c, &via), "not exec'd");
	procs_on_exec(reg, c, 2000);
	cr_expect_null(procs_maps(reg, c));
	cr_expect_eq(procs_maps_before_exec(reg, c, &via), procs_get(reg, me)->maps);
	cr_expect_eq(via, me);
	procs_on_exec(reg, d, 2100); /* its fork unseen */
	cr_expect_null(procs_maps_before_exec(reg, d, &via));
	cr_expect_eq(procs_on_sampled(reg, c, 5), -ENOENT, "gone before its maps were read");
	cr_assert_eq(procmaps_read(getpid(), true, &maps), 0);
	cr_assert_eq(procs_adopt_snapshot(reg, c, maps, NULL), 0); /* read ahead */
	procs_on_exit(reg, c, 3000);
	cr_expect_eq(procs_maps(reg, c), maps);
	cr_expect_eq(procs_open_via(reg, c), me, "gone: through its parent");
	procs_on_exit(reg, me, 3100);
	cr_expect_eq(procs_open_via(reg, c), c, "its parent gone too: its own");
	procs_free(reg);
}

/* Which image runs under a pid: where its executable's code starts, at or
 * below this very function and inside a mapping of the test's binary. */
Test(processes, start_code_is_where_the_executable_begins)
{
	uint64_t start = 0, fn = (uint64_t)(uintptr_t)&proc_read_start_code;
	struct proc_maps *maps;
	const struct map_entry *e;

	cr_assert_eq(proc_read_start_code(getpid(), &start), 0);
	cr_expect_gt(start, 0);
	cr_expect_leq(start, fn);
	cr_assert_eq(procmaps_read(getpid(), true, &maps), 0);
	e = procmaps_find(maps, start);
	cr_assert_not_null(e, "no executable mapping at %#" PRIx64, start);
	cr_expect(strstr(e->path, "test_processes") != NULL, "%s", e->path);
	procmaps_free(maps);
	cr_expect_lt(proc_read_start_code(0x3fffff, &start), 0, "no such process");
}
