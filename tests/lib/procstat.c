// SPDX-License-Identifier: BSD-2-Clause
/* What a process holds, from /proc (testlib.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

int64_t tl_proc_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int tl_proc_nfds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The least of five looks at what look reads, gap_us apart: an interval's
 * flush holds buffers and a file for a moment. */
static int64_t least_of(pid_t pid, int64_t (*look)(pid_t), useconds_t gap_us)
{
	int64_t least = -1;

	for (int i = 0; i < 5; i++, usleep(gap_us)) {
		int64_t v = look(pid);

		if (least < 0 || (v >= 0 && v < least))
			least = v;
	}
	return least;
}

static int64_t nfds64(pid_t pid)
{
	return tl_proc_nfds(pid);
}

int64_t tl_proc_settled_rss_kib(pid_t pid)
{
	return least_of(pid, tl_proc_rss_kib, 300000);
}

int tl_proc_settled_nfds(pid_t pid)
{
	return (int)least_of(pid, nfds64, 200000);
}
