// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "procmaps.h"
#include "util/array.h"
#include "util/compare.h"

static const char deleted_suffix[] = " (deleted)";

int procmaps_parse_line(const char *line, struct map_entry *out)
{
	unsigned long long start, end, offset, inode;
	unsigned int major, minor;
	char perms[8];
	int pos = 0;
	const char *path;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu%n", &start, &end, perms, &offset, &major,
		   &minor, &inode, &pos) != 7 ||
	    pos == 0)
		return -EINVAL;
	if (end < start || strlen(perms) != 4)
		return -EINVAL;
	out->start = start;
	out->end = end;
	out->offset = offset;
	out->dev = makedev(major, minor);
	out->inode = inode;
	memcpy(out->perms, perms, 5);

	path = line + pos;
	while (*path == ' ' || *path == '\t')
		path++;
	len = strcspn(path, "\n");
	if (len == 0) {
		out->kind = MAPPING_ANON;
		return 0;
	}
	out->kind = path[0] == '[' ? MAPPING_SPECIAL : MAPPING_FILE;
	if (out->kind == MAPPING_FILE && len > sizeof(deleted_suffix) - 1 &&
	    !memcmp(path + len - (sizeof(deleted_suffix) - 1), deleted_suffix,
		    sizeof(deleted_suffix) - 1)) {
		out->deleted = true;
		len -= sizeof(deleted_suffix) - 1;
	}
	out->path = strndup(path, len);
	return out->path ? 0 : -ENOMEM;
}

static int cmp_start(const void *a, const void *b)
{
	const struct map_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int procmaps_parse(FILE *f, bool exec_only, struct proc_maps **out)
{
	struct proc_maps *maps = calloc(1, sizeof(*maps));
	size_t cap = 0, linecap = 0;
	char *line = NULL;
	int err = 0;

	if (!maps)
		return -ENOMEM;
	while (getline(&line, &linecap, f) > 0) {
		struct map_entry e;

		err = procmaps_parse_line(line, &e);
		if (err)
			break;
		if (exec_only && e.perms[2] != 'x') {
			free(e.path);
			continue;
		}
		if (ARRAY_RESERVE(maps->entries, &cap, maps->n + 1)) {
			free(e.path);
			err = -ENOMEM;
			break;
		}
		maps->entries[maps->n++] = e;
	}
	free(line);
	if (!err && ferror(f))
		err = -EIO;
	if (err) {
		procmaps_free(maps);
		return err;
	}
	sort_array(maps->entries, maps->n, sizeof(*maps->entries), cmp_start);
	*out = maps;
	return 0;
}

int procmaps_read(int pid, bool exec_only, struct proc_maps **out)
{
	char path[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = procmaps_parse(f, exec_only, out);
	fclose(f);
	/* A process that exited between open and read gives an empty file. */
	if (!err && (*out)->n == 0 && exec_only) {
		procmaps_free(*out);
		*out = NULL;
		return -ESRCH;
	}
	return err;
}

const struct map_entry *procmaps_find(const struct proc_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!maps)
		return NULL;
	hi = maps->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct map_entry *e = &maps->entries[mid];

		if (addr < e->start)
			hi = mid;
		else if (addr >= e->end)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

void procmaps_free(struct proc_maps *maps)
{
	if (!maps)
		return;
	for (size_t i = 0; i < maps->n; i++)
		free(maps->entries[i].path);
	free(maps->entries);
	free(maps);
}
