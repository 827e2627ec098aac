/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Debug files with their DWARF decompressed once, on disk, so that libdw
 * reads them through their mapping rather than decompressing them into
 * the heap (debug_plain.c).
 */
#ifndef EBPROF_SYM_DEBUG_PLAIN_H
#define EBPROF_SYM_DEBUG_PLAIN_H

#include <stdbool.h>
#include <stdint.h>

/* Bound of the directory's files. */
#define DEBUG_PLAIN_MAX_BYTES (256ULL << 20)

/*
 * When the debug file open as *fd has compressed DWARF sections and dir
 * is set: its copy with plain sections, dir/BUILD_ID.debug (made on first
 * use, in a child process), takes its place: *fd is closed and replaced,
 * *path (malloc'd, owned by the caller) freed and replaced. Otherwise, or
 * when the copy cannot be made (a warning), both are left as they are.
 * *warned: a warning was given already (one is, at most).
 * Returns 0, or -ENOMEM.
 */
int symplain_swap(const char *dir, const char *build_id, int *fd, char **path, bool *warned);

#endif /* EBPROF_SYM_DEBUG_PLAIN_H */
