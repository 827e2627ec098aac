/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Plain copies of debug files whose sections are compressed
 * (sym_opts.plain_debug_cache): made once per build-id, so that libdw
 * does not inflate them at every process's start.
 */
#ifndef EBPROF_SYM_DEBUG_PLAIN_H
#define EBPROF_SYM_DEBUG_PLAIN_H

#include <stdint.h>

/*
 * *debug_fd, the open debug file of build-id hex: replaced (the old one
 * closed) by a read-only fd of its plain copy in dir, made now when there
 * is none and the file has compressed sections; left as it is when dir is
 * NULL or "", the file has none, or the copy cannot be made or read (said
 * at debug level). bound: the directory's size in bytes (0: 256 MiB),
 * trimmed least recently used first after a copy is made.
 */
void symdp_take(const char *dir, uint64_t bound, const char *hex, int *debug_fd);

#endif /* EBPROF_SYM_DEBUG_PLAIN_H */
