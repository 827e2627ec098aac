// SPDX-License-Identifier: BSD-2-Clause
/* The memory budget's decisions (membudget.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/membudget.h"

unsigned membudget_decide(struct membudget *b, uint64_t rss)
{
	b->rss = rss;
	b->over_budget = false;
	b->symbols_degraded = b->budget && rss > b->budget;
	if (!b->symbols_degraded)
		return 0;
	b->symbol_releases++;
	return MB_RELEASE_SYMBOLS;
}

void membudget_after(struct membudget *b, uint64_t rss)
{
	b->rss = rss;
	b->over_budget = b->budget && rss > b->budget;
}

int membudget_read_status(const char *path, uint64_t *rss, uint64_t *peak)
{
	FILE *f = fopen(path, "re");
	char line[256];
	unsigned long long v;
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu kB", &v) == 1) {
			*rss = (uint64_t)v << 10;
			found |= 1;
		} else if (sscanf(line, "VmHWM: %llu kB", &v) == 1) {
			*peak = (uint64_t)v << 10;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -EINVAL;
}
