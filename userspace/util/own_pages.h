/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Giving back the clean file pages of this process's own read-only file
 * mappings (its binary's and its libraries' code and read-only data).
 *
 * Start-up runs code and reads data nothing runs or reads again: the
 * loader's relocation pass over each library's symbol tables, the BPF
 * object embedded in the binary (read once by libbpf), option parsing,
 * TLS libraries initialized by libmicrohttpd and never called for plain
 * HTTP. Those pages stay mapped, and counted in the resident memory,
 * until the process unmaps them. MADV_DONTNEED unmaps them; a page used
 * again is faulted back from the page cache (a minor fault, or a read if
 * it was evicted meanwhile), so only what the agent really goes on using
 * stays resident.
 *
 * Only mappings that are private, not writable and hold no copied-on-
 * write page (smaps' Anonymous: 0): a relocated page (RELRO, .data) is a
 * private copy the file does not hold, and MADV_DONTNEED would revert it.
 */
#ifndef EBPROF_OWN_PAGES_H
#define EBPROF_OWN_PAGES_H

#include <stddef.h>

struct own_pages_stats {
	size_t mappings; /* mappings given back */
	size_t kib;	 /* their resident KiB before (smaps' Rss) */
	size_t skipped;	 /* read-only file mappings left: copied-on-write pages in them */
};

/* Give back the resident pages of the process's clean read-only private
 * file mappings (read from /proc/self/smaps). 0 or a negative errno; st
 * (may be NULL) gets what was done. */
int own_pages_drop(struct own_pages_stats *st);

#endif /* EBPROF_OWN_PAGES_H */
