// SPDX-License-Identifier: BSD-2-Clause
/*
 * The memory budget's decisions (agent/membudget.c): no budget never
 * degrades; at or under it nothing happens; over it the symbol caches go,
 * counted; still over after that is said, not hidden; back under it the
 * degradation ends; and VmRSS/VmHWM read from a status file, a file
 * without them refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/membudget.h"

#define MiB (1ULL << 20)

Test(membudget, no_budget_never_degrades)
{
	struct membudget b = { .budget = 0 };

	cr_assert_eq(membudget_decide(&b, 4096 * MiB), 0);
	cr_assert_not(b.symbols_degraded);
	membudget_after(&b, 4096 * MiB);
	cr_assert_not(b.over_budget);
	cr_assert_eq(b.symbol_releases, 0);
	cr_assert_eq(b.rss, 4096 * MiB);
}

Test(membudget, within_the_budget_keeps_everything)
{
	struct membudget b = { .budget = 20 * MiB };

	cr_assert_eq(membudget_decide(&b, 19 * MiB), 0);
	cr_assert_eq(membudget_decide(&b, 20 * MiB), 0, "at the budget is within it");
	cr_assert_not(b.symbols_degraded);
	cr_assert_not(b.over_budget);
	cr_assert_eq(b.symbol_releases, 0);
}

Test(membudget, over_the_budget_drops_symbol_caches)
{
	struct membudget b = { .budget = 20 * MiB };

	cr_assert_eq(membudget_decide(&b, 20 * MiB + 1), MB_RELEASE_SYMBOLS);
	cr_assert(b.symbols_degraded);
	cr_assert_eq(b.symbol_releases, 1);
	membudget_after(&b, 15 * MiB);
	cr_assert_not(b.over_budget, "the release brought it under");
	cr_assert_eq(b.rss, 15 * MiB);
	/* the next interval reads them again and is over again */
	cr_assert_eq(membudget_decide(&b, 30 * MiB), MB_RELEASE_SYMBOLS);
	cr_assert_eq(b.symbol_releases, 2);
}

Test(membudget, still_over_after_degrading_is_reported)
{
	struct membudget b = { .budget = 20 * MiB };

	cr_assert_eq(membudget_decide(&b, 40 * MiB), MB_RELEASE_SYMBOLS);
	membudget_after(&b, 25 * MiB);
	cr_assert(b.over_budget);
	cr_assert(b.symbols_degraded);
	/* a new decision starts from what it measures */
	cr_assert_eq(membudget_decide(&b, 10 * MiB), 0);
	cr_assert_not(b.over_budget);
	cr_assert_not(b.symbols_degraded, "back under the budget: no longer degraded");
	cr_assert_eq(b.symbol_releases, 1);
}

Test(membudget, a_budget_raised_on_reload_ends_the_degradation)
{
	struct membudget b = { .budget = 20 * MiB };

	cr_assert_eq(membudget_decide(&b, 30 * MiB), MB_RELEASE_SYMBOLS);
	b.budget = 64 * MiB;
	cr_assert_eq(membudget_decide(&b, 30 * MiB), 0);
	cr_assert_not(b.symbols_degraded);
}

static char *status_file(const char *text)
{
	static char path[] = "/tmp/ebprof-membudget-XXXXXX";
	int fd;

	snprintf(path, sizeof(path), "/tmp/ebprof-membudget-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(membudget, reads_rss_and_peak)
{
	char *p = status_file("Name:\tebprof\nVmPeak:\t  999 kB\nVmHWM:\t   42012 kB\n"
			      "VmRSS:\t   41516 kB\nRssAnon:\t 22012 kB\n");
	uint64_t rss = 0, peak = 0;

	cr_assert_eq(membudget_read_status(p, &rss, &peak), 0);
	cr_assert_eq(rss, 41516ULL * 1024);
	cr_assert_eq(peak, 42012ULL * 1024);
	unlink(p);
}

Test(membudget, a_status_without_the_figures_is_refused)
{
	char *p = status_file("Name:\tkthreadd\nState:\tS (sleeping)\n");
	uint64_t rss = 0, peak = 0;

	cr_assert_eq(membudget_read_status(p, &rss, &peak), -EINVAL);
	unlink(p);
	cr_assert_eq(membudget_read_status(p, &rss, &peak), -ENOENT);
}

Test(membudget, reads_its_own_status)
{
	uint64_t rss = 0, peak = 0;

	cr_assert_eq(membudget_read_status("/proc/self/status", &rss, &peak), 0);
	cr_assert_gt(rss, 0);
	cr_assert_geq(peak, rss);
}
