// SPDX-License-Identifier: BSD-2-Clause
/* The table of profile types (profile_types.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "profile_types.h"

static const struct ptype_info types[PTYPE_N] = {
	[PTYPE_CPU] = {
		.id = PTYPE_CPU,
		.name = "cpu",
		.label = "CPU",
		.title = "CPU flame graph",
		.source = PTYPE_FROM_BPF,
		.values = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.nvalues = 2,
		.main = 1,
		.period = { "cpu", "nanoseconds" },
		.store_suffix = "",
		.profefe = "cpu",
		.pyroscope = "process_cpu",
		.pyroscope_push = false,
		.flame = PTYPE_FLAME_STACKS,
	},
	[PTYPE_OFFCPU] = {
		.id = PTYPE_OFFCPU,
		.name = "offcpu",
		.label = "off-CPU time",
		.title = "Off-CPU time",
		.source = PTYPE_FROM_BPF,
		.values = { { "samples", "count" }, { "offcpu", "nanoseconds" } },
		.nvalues = 2,
		.main = 1,
		.period = { "offcpu", "nanoseconds" },
		.store_suffix = ".offcpu",
		/* Go's blocking profile is the nearest of profefe's types */
		.profefe = "block",
		/* as Grafana's own eBPF profiler names them */
		.pyroscope = "offcpu",
		.pyroscope_push = true,
		.flame = PTYPE_FLAME_WAITS,
	},
	[PTYPE_FAULTS] = {
		.id = PTYPE_FAULTS,
		.name = "faults",
		.label = "page faults",
		.title = "Page faults",
		.source = PTYPE_FROM_BPF,
		.values = { { "samples", "count" }, { "faults", "bytes" } },
		.nvalues = 2,
		.main = 1,
		.period = { "faults", "bytes" },
		.store_suffix = ".faults",
		/* None of Go's profiles counts page faults; "heap" is where
		 * allocations go (and PostgreSQL's memory contexts): a merge
		 * of heap profiles would meet other sample types. */
		.profefe = "other",
		.pyroscope = "faults",
		.pyroscope_push = true,
		.flame = PTYPE_FLAME_STACKS,
	},
	[PTYPE_MEMORY] = {
		.id = PTYPE_MEMORY,
		.name = "memory",
		.label = "memory contexts",
		.title = "Memory contexts",
		.source = PTYPE_FROM_PIPELINE,
		.values = { { "space", "bytes" }, { "used", "bytes" }, { "contexts", "count" } },
		.nvalues = 3,
		.main = 0,
		.period = { "space", "bytes" },
		.store_suffix = ".memory",
		/* what Go's heap profiles are filed under */
		.profefe = "heap",
		/* Pyroscope's name for memory profiles; /ingest would name the
		 * series from the sample types */
		.pyroscope = "memory",
		.pyroscope_push = true,
		.flame = PTYPE_FLAME_STACKS,
	},
};

const struct ptype_info *ptype_info(enum ptype t)
{
	return (unsigned)t < PTYPE_N ? &types[t] : NULL;
}

const struct ptype_info *ptype_by_name(const char *name)
{
	for (int t = 0; name && t < PTYPE_N; t++)
		if (!strcmp(types[t].name, name))
			return &types[t];
	return NULL;
}

const struct ptype_info *ptype_of_record(const char *name)
{
	return name ? ptype_by_name(name) : &types[PTYPE_CPU];
}

const struct ptype_info *ptype_by_value(const char *sample_type)
{
	for (int t = 0; sample_type && t < PTYPE_N; t++)
		if (!strcmp(types[t].values[types[t].main].type, sample_type))
			return &types[t];
	return NULL;
}

int ptype_parse_list(const char *s, unsigned *mask)
{
	unsigned m = 0;

	while (s && *s) {
		size_t n = strcspn(s, ",");
		int t;

		for (t = 0; t < PTYPE_N; t++)
			if (strlen(types[t].name) == n && !strncmp(s, types[t].name, n))
				break;
		if (t == PTYPE_N)
			return -EINVAL;
		m |= PTYPE_BIT(t);
		s += n;
		if (*s == ',' && !*++s)
			return -EINVAL; /* a trailing comma */
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

const char *ptype_names(unsigned mask, const char *conj, char *buf, size_t len)
{
	size_t off = 0;
	int n = 0, left = 0;

	for (int t = 0; t < PTYPE_N; t++)
		left += !!(mask & PTYPE_BIT(t));
	if (len)
		buf[0] = '\0';
	for (int t = 0; t < PTYPE_N && off < len; t++) {
		if (!(mask & PTYPE_BIT(t)))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					!n		? ""
					: n == left - 1 ? conj
							: ", ",
					types[t].name);
		n++;
	}
	return buf;
}
