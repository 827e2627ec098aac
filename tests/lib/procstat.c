// SPDX-License-Identifier: BSD-2-Clause
/* What a process holds, from /proc (testlib.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

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
