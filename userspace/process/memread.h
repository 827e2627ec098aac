/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading another process's memory: read-only and bounded. A reader
 * fetches aligned pieces (MEMREAD_PIECE bytes) of the target with
 * process_vm_readv(2), never stopping, signalling or writing to it, and
 * serves reads of any length from the pieces it holds (a direct-mapped
 * cache of 256 pieces, 1 MiB); an unreadable piece is remembered as
 * such. Every piece fetched counts against the reader's byte budget.
 *
 * The target keeps running while it is read: what comes back may be torn
 * or stale, and the caller validates everything it reads (process/pgmem.c).
 * Tests and the fuzzer read an image of their own through the same code
 * (memread_new_fn()). Not thread-safe; the caller owns the reader.
 */
#ifndef EBPROF_MEMREAD_H
#define EBPROF_MEMREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEMREAD_PIECE 4096u

/* Fetch len bytes at addr (one aligned piece) into buf: 0, or -EFAULT when
 * any of it cannot be read, -ESRCH when the process is gone, -EPERM. */
typedef int (*memread_fetch_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct memread;

struct memread_stats {
	uint64_t fetches; /* pieces fetched (system calls, for a process) */
	uint64_t bytes;	  /* bytes fetched */
	uint64_t faults;  /* pieces that could not be read */
	uint64_t hits;	  /* reads served from pieces already held */
};

/* A reader of process pid with a budget of max_bytes fetched. 0 or
 * -ENOMEM. */
int memread_new_pid(pid_t pid, size_t max_bytes, struct memread **out);
/* The same over fetch(ctx, ...), e.g. a memory image. */
int memread_new_fn(memread_fetch_fn fetch, void *ctx, size_t max_bytes, struct memread **out);
void memread_free(struct memread *r);

/*
 * len bytes at addr into buf. 0; -EFAULT when some byte cannot be read
 * (unmapped, or the address range wraps); -E2BIG when the budget is spent;
 * -ESRCH, -EPERM as the fetch says. buf is undefined on error.
 */
int memread_read(struct memread *r, uint64_t addr, void *buf, size_t len);

/*
 * A NUL-terminated string at addr into buf (size >= 2): at most size - 1
 * bytes, *cut set when it went on beyond them. 0, or as memread_read()
 * for its first byte (a string that becomes unreadable after some bytes
 * ends there, cut).
 */
int memread_string(struct memread *r, uint64_t addr, char *buf, size_t size, bool *cut);

void memread_get_stats(const struct memread *r, struct memread_stats *out);

#endif /* EBPROF_MEMREAD_H */
