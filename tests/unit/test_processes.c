// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
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
	procs_on_fork(reg, child, me);
	procs_on_fork(reg, grandchild, child);
	/* the (fake) children are gone: their snapshots fail */
	cr_expect_lt(procs_snapshot(reg, child, false), 0);
	cr_expect_eq(procs_maps(reg, child), procs_get(reg, me)->maps);
	cr_expect_eq(procs_maps(reg, grandchild), procs_get(reg, me)->maps);
	cr_expect_str_eq(procs_get(reg, child)->exe, procs_get(reg, me)->exe);
	procs_on_exec(reg, child);
	cr_expect_null(procs_maps(reg, child));
	cr_expect_null(procs_maps(reg, grandchild)); /* its parent's layout changed */
	procs_on_exit(reg, child);
	cr_expect(procs_get(reg, child)->exited);
	cr_expect_eq(procs_count(reg), 3);
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
