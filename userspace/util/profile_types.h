/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The profile types ebprof writes, one table entry each: what every layer
 * needs to know of a type. Its name (`record --type`, the agent's
 * `profile-types`, `/profile/NAME`, the store's `type` label, a sink
 * record's type), its pprof sample and period types, the suffix of its
 * store files, the type profefe files it under, the name of its Pyroscope
 * series and whether it goes through Pyroscope's push API, and how a
 * flamegraph titles and draws it. Code looks types up here rather than
 * testing their names, so a new type is one entry plus its producer:
 *
 *  - PTYPE_FROM_BPF: a BPF program counts it, the sampler (sampling/)
 *    attaches that program when a session takes the type and drains its
 *    counts into raw samples (struct raw_sample's type says which);
 *  - PTYPE_FROM_PIPELINE: the pipeline makes its profiles itself, nothing
 *    of it in BPF (memory: PostgreSQL's memory contexts, snapshotted at
 *    an interval's end, when a backend grows, and kept for an OOM kill).
 *
 * A set of types is a mask of PTYPE_BIT(t). The table is static: nothing
 * returned here is to be freed.
 */
#ifndef EBPROF_PROFILE_TYPES_H
#define EBPROF_PROFILE_TYPES_H

#include <stdbool.h>
#include <stddef.h>

enum ptype {
	PTYPE_CPU,    /* stacks sampled on the CPU at a frequency */
	PTYPE_OFFCPU, /* time away from the CPU, by wait */
	PTYPE_FAULTS, /* page faults, one sample every faults-period */
	PTYPE_MEMORY, /* PostgreSQL's memory contexts, snapshotted */
	PTYPE_N,
};

/* The names of every type, comma-separated in the table's order: for
 * lists of choices made at compile time (cli/option_table.c). The unit
 * test checks it against the table. */
#define PTYPE_NAMES "cpu,offcpu,faults,memory"

#define PTYPE_BIT(t) (1u << (t))
#define PTYPE_ALL ((1u << PTYPE_N) - 1)
#define PTYPE_MAX_VALUES 4

/* Who makes a type's profiles. */
enum ptype_source {
	PTYPE_FROM_BPF,	     /* counted in BPF, drained by the sampler */
	PTYPE_FROM_PIPELINE, /* made by the pipeline at interval ends */
};

/* How a flamegraph draws a type. */
enum ptype_flame {
	PTYPE_FLAME_STACKS, /* frames coloured by kind (kernel, user, inlined) */
	PTYPE_FLAME_WAITS,  /* a wait-event frame on the root, coloured by wait class */
};

struct ptype_value_type {
	const char *type, *unit;
};

struct ptype_info {
	enum ptype id;
	const char *name;  /* "cpu", "offcpu", "faults" */
	const char *label; /* in titles and messages: "CPU", "page faults" */
	const char *title; /* a flamegraph's default title: "CPU flame graph" */
	enum ptype_source source;
	/* pprof: its sample types in order; values[main] is what it weighs
	 * (flamegraphs draw it, totals sum it; its type names the profile's
	 * type when one is read back); the period type. */
	struct ptype_value_type values[PTYPE_MAX_VALUES];
	size_t nvalues, main;
	struct ptype_value_type period;
	/* The store: HHMMSS-COMM-PID[-BACKEND][SUFFIX].pb.gz ("" for cpu). */
	const char *store_suffix;
	/* profefe's type (its types are Go's runtime profiles, and "other"). */
	const char *profefe;
	/* Pyroscope: the series' __name__, and whether it goes through the
	 * push API (which takes the name) rather than /ingest (which names a
	 * pprof's series from its sample types: CPU only). */
	const char *pyroscope;
	bool pyroscope_push;
	enum ptype_flame flame;
};

/* The entry of t (t < PTYPE_N). */
const struct ptype_info *ptype_info(enum ptype t);

/* The entry named name, NULL when none is (or name is NULL). */
const struct ptype_info *ptype_by_name(const char *name);

/* The entry of a record's type: named name, cpu's for NULL (records and
 * files written before profiles had types were CPU profiles). NULL for a
 * name no entry has. */
const struct ptype_info *ptype_of_record(const char *name);

/* The entry whose main value type is sample_type ("offcpu"), NULL when
 * none: what a pprof read back is, from its sample types. */
const struct ptype_info *ptype_by_value(const char *sample_type);

/* "cpu", "cpu,offcpu", ... (comma-separated, no spaces) into
 * a mask of PTYPE_BIT()s. 0 or -EINVAL (empty, unknown, a trailing comma). */
int ptype_parse_list(const char *s, unsigned *mask);

/* The names of the types in mask for messages: "cpu, offcpu or faults"
 * (conj "or") into buf; returns buf. */
const char *ptype_names(unsigned mask, const char *conj, char *buf, size_t len);

#endif /* EBPROF_PROFILE_TYPES_H */
