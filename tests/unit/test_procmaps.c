// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "process/procmaps.h"

Test(procmaps, file_mapping)
{
	struct map_entry e;

	cr_assert_eq(procmaps_parse_line("55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234567   "
					 "              /usr/bin/cat\n",
					 &e),
		     0);
	cr_expect_eq(e.start, 0x55d0c0a00000ULL);
	cr_expect_eq(e.end, 0x55d0c0a21000ULL);
	cr_expect_eq(e.offset, 0x2000);
	cr_expect_eq(e.dev, makedev(0xfd, 1));
	cr_expect_eq(e.inode, 1234567);
	cr_expect_str_eq(e.perms, "r-xp");
	cr_expect_eq(e.kind, MAPPING_FILE);
	cr_expect_not(e.deleted);
	cr_expect_str_eq(e.path, "/usr/bin/cat");
	free(e.path);
}

Test(procmaps, deleted_file_and_spaces_in_path)
{
	struct map_entry e;

	cr_assert_eq(procmaps_parse_line("7f0000000000-7f0000001000 r-xp 00000000 08:02 42 "
					 "/opt/my app/lib x.so (deleted)",
					 &e),
		     0);
	cr_expect(e.deleted);
	cr_expect_eq(e.kind, MAPPING_FILE);
	cr_expect_str_eq(e.path, "/opt/my app/lib x.so");
	free(e.path);

	cr_assert_eq(procmaps_parse_line("7f0000000000-7f0000001000 r-xp 00000000 08:02 43 "
					 "/tmp/a  b (deleted)\n",
					 &e),
		     0);
	cr_expect_str_eq(e.path, "/tmp/a  b");
	free(e.path);
}

Test(procmaps, anonymous_and_special)
{
	struct map_entry e;

	cr_assert_eq(procmaps_parse_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0 ", &e), 0);
	cr_expect_eq(e.kind, MAPPING_ANON);
	cr_expect_null(e.path);

	cr_assert_eq(procmaps_parse_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0      [vdso]", &e),
		     0);
	cr_expect_eq(e.kind, MAPPING_SPECIAL);
	cr_expect_str_eq(e.path, "[vdso]");
	free(e.path);

	cr_assert_eq(procmaps_parse_line("01000000-02000000 rw-p 00000000 00:00 0   [heap]\n", &e),
		     0);
	cr_expect_eq(e.kind, MAPPING_SPECIAL);
	cr_expect_str_eq(e.path, "[heap]");
	free(e.path);
}

Test(procmaps, malformed_lines)
{
	struct map_entry e;

	cr_expect_eq(procmaps_parse_line("", &e), -EINVAL);
	cr_expect_eq(procmaps_parse_line("garbage", &e), -EINVAL);
	cr_expect_eq(procmaps_parse_line("1000-2000 r-xp", &e), -EINVAL);
	cr_expect_eq(procmaps_parse_line("2000-1000 r-xp 00000000 00:00 0", &e), -EINVAL);
	cr_expect_eq(procmaps_parse_line("1000-2000 r-xpq 00000000 00:00 0", &e), -EINVAL);
}

Test(procmaps, parse_sorts_filters_and_finds)
{
	const char text[] = "3000-4000 r-xp 00001000 08:01 7 /lib/b.so\n"
			    "1000-2000 r-xp 00000000 08:01 5 /bin/a\n"
			    "2000-3000 rw-p 00000000 00:00 0 [heap]\n"
			    "5000-6000 r-xp 00000000 00:00 0 [vdso]\n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct proc_maps *m;

	cr_assert_eq(procmaps_parse(f, true, &m), 0);
	fclose(f);
	cr_assert_eq(m->n, 3);
	cr_expect_eq(m->entries[0].start, 0x1000);
	cr_expect_str_eq(procmaps_find(m, 0x1fff)->path, "/bin/a");
	cr_expect_null(procmaps_find(m, 0x2000)); /* heap is not executable */
	cr_expect_str_eq(procmaps_find(m, 0x3000)->path, "/lib/b.so");
	cr_expect_str_eq(procmaps_find(m, 0x5800)->path, "[vdso]");
	cr_expect_null(procmaps_find(m, 0x6000));
	cr_expect_null(procmaps_find(m, 0x10));
	procmaps_free(m);
}

Test(procmaps, reads_own_process)
{
	struct proc_maps *m;
	const struct map_entry *e;

	cr_assert_eq(procmaps_read(getpid(), true, &m), 0);
	e = procmaps_find(m, (uint64_t)(uintptr_t)&procmaps_find);
	cr_assert_not_null(e);
	cr_expect_eq(e->kind, MAPPING_FILE);
	cr_expect(strstr(e->path, "test_procmaps") != NULL, "%s", e->path);
	procmaps_free(m);
	cr_expect_lt(procmaps_read(0x3fffff, true, &m), 0);
}
