// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/targets.h"

Test(targets, name_matching)
{
	const char *names[] = { "postgres", "postmaster" };

	cr_expect(targets_name_matches("postgres", NULL, names, 2));
	cr_expect(targets_name_matches("x", "/usr/lib/postgresql/15/bin/postgres", names, 2));
	cr_expect(targets_name_matches("postmaster", "/bin/other", names, 2));
	cr_expect_not(targets_name_matches("postgres_exporter", "/bin/pe", names, 2));
	cr_expect_not(targets_name_matches("bash", "/bin/bash", names, 2));
	cr_expect_not(targets_name_matches(NULL, NULL, names, 2));
	/* comm is cut at 15 characters by the kernel */
	const char *longname[] = { "averyveryverylongname" };
	cr_expect(targets_name_matches("averyveryverylo", NULL, longname, 1));
}

Test(targets, scan_finds_pids_and_descendants)
{
	uint32_t me = (uint32_t)getpid(), *out;
	size_t n;
	bool found_child = false, found_me = false;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	struct target_rules rules = { .pids = &me, .npids = 1, .descendants = true };

	cr_assert_eq(targets_scan(&rules, &out, &n), 0);
	for (size_t i = 0; i < n; i++) {
		found_me |= out[i] == me;
		found_child |= out[i] == (uint32_t)child;
		if (i)
			cr_expect_lt(out[i - 1], out[i]);
	}
	cr_expect(found_me);
	cr_expect(found_child);
	free(out);

	rules.descendants = false;
	cr_assert_eq(targets_scan(&rules, &out, &n), 0);
	cr_expect_eq(n, 1);
	free(out);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

Test(targets, scan_by_name)
{
	const char *names[] = { "test_targets" };
	struct target_rules rules = { .comms = names, .ncomms = 1 };
	uint32_t *out;
	size_t n;
	bool found = false;

	cr_assert_eq(targets_scan(&rules, &out, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= out[i] == (uint32_t)getpid();
	cr_expect(found);
	free(out);
}
