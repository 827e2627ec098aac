// SPDX-License-Identifier: BSD-2-Clause
/*
 * BPF maps that fill up are counted and reported, never silent: with
 * counts and stack maps of 2 entries (EBPROF_MAP_ENTRIES), a 3-second
 * burn has more distinct stacks than that; `record`'s summary says how
 * many samples and stacks were lost and why.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record_env.h"

/* The count before "what" in the summary line's "; lost: " part, or -1. */
static long long lost_count(const char *log, const char *what)
{
	const char *lost = strstr(log, "; lost: "), *p, *start;

	if (!lost || !(p = strstr(lost, what)))
		return -1;
	start = p;
	while (start > lost && start[-1] == ' ')
		start--;
	while (start > lost && start[-1] >= '0' && start[-1] <= '9')
		start--;
	return strtoll(start, NULL, 10);
}

Test(map_full, full_maps_are_counted_in_the_summary, .timeout = 180)
{
	char *dir = tl_tmpdir("mapfull"), out[512], pidarg[16], *log;
	struct tl_proc fx;
	struct rec_run rec;
	long long counts, stacks;
	pid_t pid;

	rec_require_root();
	cr_assert_eq(setenv("EBPROF_MAP_ENTRIES", "2", 1), 0);
	snprintf(out, sizeof(out), "%s/full.pb.gz", dir);
	pid = rec_start_work_split(&fx, tl_path("fixtures/work_split"), "3");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "-F", "99", "-p", pidarg, "-d", "60", "--unwind", "fp",
					   "-o", out, NULL });
	unsetenv("EBPROF_MAP_ENTRIES");
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);

	cr_expect(strstr(log, "EBPROF_MAP_ENTRIES: counts and stack maps of 2 entries"),
		  "the tiny maps are not said:\n%s", log);
	counts = lost_count(log, "samples lost (counts map full)");
	stacks = lost_count(log, "stacks lost (stack map full)");
	cr_expect_gt(counts, 0, "no sample counted lost to a full counts map:\n%s", log);
	cr_expect_gt(stacks, 0, "no stack counted lost to a full stack map:\n%s", log);
	free(log);
	tl_log_free(&rec.log);
}

/* A value that is not a count of entries is said and ignored: the maps
 * keep their computed sizes and the recording works. */
Test(map_full, bad_map_entries_is_said_and_ignored, .timeout = 60)
{
	char cmd[1024], *text = NULL;
	int rc;

	rec_require_root();
	snprintf(cmd, sizeof(cmd),
		 "EBPROF_MAP_ENTRIES=lots %s/ebprof record -d 1 -F 99 -p %d -o /dev/null 2>&1",
		 tl_build(), (int)getpid());
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 0, "record exited %d: %s", rc, text);
	cr_expect(text && strstr(text, "EBPROF_MAP_ENTRIES='lots' ignored"),
		  "the bad value was not said: %s", text ? text : "");
	free(text);
}
