/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names of JIT-compiled code of one process: PostgreSQL's LLVM JIT writes
 * a jitdump file per backend (jit-PID.dump, which the backend maps, so it
 * shows in /proc/PID/maps), other JITs a perf map (/tmp/perf-NSPID.map).
 * A struct jit_syms is a sorted table of non-overlapping [start, end) →
 * name; where two records cover the same address (code freed and its
 * memory reused) the later one wins.
 *
 * Every file read is hostile input to a root process: bounded names (at
 * most JITSYMS_NAME_MAX bytes, bytes outside printable ASCII replaced by
 * '?'), malformed lines and records skipped and counted, at most
 * JITSYMS_MAX_ENTRIES entries per table, files opened inside the process's
 * root without following a final symlink (ebprof/in_root.h), regular files
 * owned by the process's user only, read up to a size cap.
 *
 * The caller owns a table (jitsyms_new(), jitsyms_load()) and frees it
 * with jitsyms_free(); names returned by jitsyms_find() belong to the
 * table. The registry keeps one per process (procs_jit_name() in
 * processes.h). Not thread-safe.
 */
#ifndef EBPROF_JITSYMS_H
#define EBPROF_JITSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

#define JITSYMS_NAME_MAX 512		 /* bytes of a name kept */
#define JITSYMS_MAX_ENTRIES (1u << 20)	 /* records accepted per table */
#define JITSYMS_PERFMAP_MAX (64u << 20)	 /* bytes of a perf map read */
#define JITSYMS_JITDUMP_MAX (256u << 20) /* bytes of jitdumps read per process */

struct jit_syms;

/* An empty table; NULL on allocation failure. */
struct jit_syms *jitsyms_new(void);
void jitsyms_free(struct jit_syms *js);

/*
 * Add the symbols of a perf map text ("START SIZE name" lines, hex with
 * or without 0x) or of a jitdump image (JIT_CODE_LOAD and JIT_CODE_MOVE
 * records; a record running past the end stops the parse, keeping what
 * came before) to js; what they add wins over what js held. Returns the
 * number of symbols added (>= 0), -EINVAL for a jitdump whose header is
 * not one of version 1 in this host's byte order, -ENOMEM (js unchanged).
 * Zero-size ranges are ignored, malformed ones counted
 * (jitsyms_skipped()).
 */
int jitsyms_parse_perfmap(const char *text, size_t len, struct jit_syms *js);
int jitsyms_parse_jitdump(const void *data, size_t len, struct jit_syms *js);

/*
 * The symbols of a live process: every jitdump maps holds (a mapping
 * whose file is named jit-<digits>.dump; maps is a fresh snapshot, NULL to
 * read /proc/PID/maps) and /tmp/perf-NSPID.map in its root (NSPID: its pid
 * in its own namespace). Files that are not regular, not owned by the
 * owner of /proc/PID, or unreadable are skipped (logged at debug). 0 and
 * *out (never NULL, possibly empty), -ESRCH when the process is gone,
 * -ENOMEM.
 */
int jitsyms_load(uint32_t pid, const struct proc_maps *maps, struct jit_syms **out);

/* A signature of those files (identity, size, mtime), cheap to take
 * (stat only): equal stamps, same files. 0, or -ESRCH. */
int jitsyms_stamp(uint32_t pid, const struct proc_maps *maps, uint64_t *stamp);
/* Does the process map a jitdump file (jit-PID.dump)? */
bool jitsyms_mapped(const struct proc_maps *maps);
/* Has the process a perf map (/tmp/perf-NSPID.map inside its root)? */
bool jitsyms_perfmap_exists(uint32_t pid);
/* The same look: 1 (a perf map), 0 (none), -ESRCH when its root is gone
 * (the process exited: its exit hooks ran, it is a zombie or reaped). */
int jitsyms_perfmap_look(uint32_t pid);

/* The name of the range holding addr, or NULL. O(log n). */
const char *jitsyms_find(const struct jit_syms *js, uint64_t addr);
size_t jitsyms_count(const struct jit_syms *js);
/* Malformed lines and records met by the parses into js. */
size_t jitsyms_skipped(const struct jit_syms *js);
/* Memory the table holds, bytes. */
size_t jitsyms_bytes(const struct jit_syms *js);

#endif /* EBPROF_JITSYMS_H */
