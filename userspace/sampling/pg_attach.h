/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Statement capture's userspace half: finds out whether a process runs
 * PostgreSQL (a mapped binary exporting debug_query_string) and tells the
 * BPF program where it keeps its statement, its PgBackendStatus and the
 * layout of that (sampler_set_pg_proc()), its error_context_stack, and
 * where the plpgsql.so it loads keeps PL/pgSQL's error callback
 * (sampler_set_plpgsql_proc(); plpgsql_bin.h). One lookup per binary, through
 * the symbolizer's ELF reader: the symbols' addresses, the major version
 * from the version string in .rodata, the member offsets from DWARF when
 * there is debug information, else from a table per major version.
 *
 * The BPF program copies a PostgreSQL process's entry to the children it
 * forks, so backends are labelled from their first sample; this module
 * mirrors which processes have an entry so that only those it cannot
 * have inherited one (processes already running, new executables) are
 * looked at. Borrows the sampler and the symbolizer.
 */
#ifndef EBPROF_PG_ATTACH_H
#define EBPROF_PG_ATTACH_H

#include <stdbool.h>
#include <stdint.h>

#include "ebprof/symbolizer.h"
#include "plpgsql_bin.h"
#include "process/procmaps.h"
#include "sampler.h"

struct pg_attach;

struct pg_attach_stats {
	uint64_t processes; /* PostgreSQL processes given an entry */
	uint64_t others;    /* processes looked at that are not PostgreSQL */
	uint64_t no_layout; /* PostgreSQL binaries without a known PgBackendStatus
			     * layout: statements, no query id */
};

/* plpgsql: find PL/pgSQL's frames too (the BPF program's plpgsql_procs). */
int pg_attach_new(struct sampler *s, struct symbolizer *sym, bool plpgsql, struct pg_attach **out);
void pg_attach_free(struct pg_attach *pa);

/* Look at a process that cannot have inherited an entry, with the maps
 * it has and its executable's path (NULL: unknown): 1 when it is
 * PostgreSQL (its entry is set), 0 when not, negative errno. Only the
 * executable's mappings are opened when it is known (PostgreSQL's
 * symbols are in its executable): a library's symbols cost a new
 * process's first announcement nothing (libc's debug file, hundreds of
 * milliseconds, is left to the first profile that needs its names). */
int pg_attach_process(struct pg_attach *pa, uint32_t pid, const struct proc_maps *maps,
		      const char *exe);

/* A known PostgreSQL process was sampled for the first time, or its code
 * changed (maps: what it maps now): has it loaded plpgsql.so since it was
 * looked at, or since its fork? Its plpgsql_procs entry set when it
 * changed. */
void pg_attach_maps_changed(struct pg_attach *pa, uint32_t pid, const struct proc_maps *maps);

/* Where the C functions that run PL/pgSQL functions are in PostgreSQL
 * process pid (plpgsql_exec_function, _trigger, _event_trigger): 0, or
 * -ENOENT when it has none (not PostgreSQL, no plpgsql.so, or its
 * callback not found). */
int pg_attach_plpgsql(const struct pg_attach *pa, uint32_t pid, struct plpgsql_cframes *out);

/* Whether pid is known (had an entry set or inherited, or was found not
 * to be PostgreSQL): the session looks at unknown ones. */
bool pg_attach_known(struct pg_attach *pa, uint32_t pid);

/* Process events, mirroring the BPF program: a child inherits its
 * parent's state; an exec or exit forgets. */
void pg_attach_on_fork(struct pg_attach *pa, uint32_t child, uint32_t parent);
void pg_attach_forget(struct pg_attach *pa, uint32_t pid);

/* Where a PostgreSQL process keeps what the agent reads from outside it
 * (its memory contexts, its statement), as addresses in the process; 0:
 * absent. */
struct pg_proc_addrs {
	uint32_t major;		     /* 0: unknown */
	uint64_t top_memory_context; /* &TopMemoryContext (MemoryContext) */
	uint64_t query_string;	     /* &debug_query_string (const char *) */
	uint64_t be_entry;	     /* &MyBEEntry (PgBackendStatus *), 14+ */
	uint16_t state_off, query_id_off;
	int32_t state_running;
};

/* The addresses of PostgreSQL process pid: 0, or -ENOENT when it is not
 * known as one. */
int pg_attach_addrs(const struct pg_attach *pa, uint32_t pid, struct pg_proc_addrs *out);

/* Every process known as PostgreSQL now, in *pids (malloc'ed; the caller
 * frees it) and *n. 0 or -ENOMEM. */
int pg_attach_pids(const struct pg_attach *pa, uint32_t **pids, size_t *n);

void pg_attach_get_stats(const struct pg_attach *pa, struct pg_attach_stats *out);

#endif /* EBPROF_PG_ATTACH_H */
