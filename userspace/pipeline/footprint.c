// SPDX-License-Identifier: BSD-2-Clause
/*
 * The session's own resident memory while it symbolizes (session_internal.h).
 *
 * At an interval's end every sample is symbolized, and the symbolizer
 * reads the binaries and debug files it needs through libdwfl's mappings
 * of them: each page read stays resident until the binary is dropped. The
 * first lookup in libc6-dbg's libc alone reads some 6 MiB of its
 * .debug_info (dwarf_getaranges() visits the header of each of its 2 000
 * compile units); over a drain under `pgbench -C`, 11-13 MiB of such pages
 * were resident at once, on top of the 13 MiB the agent holds while it
 * samples. They are clean file pages: given back after the sample that
 * read them (sym_drop_file_pages()), they are read again from the page
 * cache if a later lookup needs them, and what was parsed from them stays.
 *
 * EBPROF_MEMTRACE=1 in the environment logs the resident memory and
 * malloc's figures at the flush's steps (bench/footprint-smaps.sh).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "session_internal.h"
#include "util/log.h"

/* The process's resident file (and shared) pages in KiB, -1 if unknown. */
static long file_kib(const struct session *s)
{
	char buf[128];
	long size, rss, shared;
	FILE *f = fopen("/proc/self/statm", "re");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%ld %ld %ld", &size, &rss, &shared) == 3;
	fclose(f);
	return ok ? shared * (long)(s->page_size / 1024) : -1;
}

void session_drop_file_pages(struct session *s)
{
	struct sym_stats st;

	if (!s->sym)
		return;
	sym_drop_file_pages(s->sym);
	sym_get_stats(s->sym, &st);
	s->drop_bytes = st.cache_bytes;
	s->drop_reads = st.first_reads;
	s->drop_samples = 0;
	s->drop_file_kib = file_kib(s);
}

void session_symbolized(struct session *s)
{
	struct sym_stats st;
	long kib;

	if (!s->sym)
		return;
	sym_get_stats(s->sym, &st);
	if (st.first_reads != s->drop_reads) {
		session_drop_file_pages(s);
	} else if (st.cache_bytes != s->drop_bytes &&
		   ++s->drop_samples >= SESSION_DROP_PAGES_EVERY) {
		/* looked at again after as many samples that read more */
		s->drop_bytes = st.cache_bytes;
		s->drop_samples = 0;
		kib = file_kib(s);
		if (kib < 0 || s->drop_file_kib < 0 ||
		    kib > s->drop_file_kib + SESSION_DROP_PAGES_KIB)
			session_drop_file_pages(s);
	}
}

void session_memtrace(const char *step)
{
	static int on = -1;
	long rss = 0, hwm = 0, anon = 0, file = 0;
	struct mallinfo2 mi;
	char line[256];
	FILE *f;

	if (on < 0)
		on = getenv("EBPROF_MEMTRACE") != NULL;
	if (!on || !(f = fopen("/proc/self/status", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", &rss);
		sscanf(line, "VmHWM: %ld", &hwm);
		sscanf(line, "RssAnon: %ld", &anon);
		sscanf(line, "RssFile: %ld", &file);
	}
	fclose(f);
	mi = mallinfo2();
	log_info("memtrace %-12s VmRSS %ld VmHWM %ld RssAnon %ld RssFile %ld KiB; malloc: heap %zu "
		 "in use %zu, mmap'd %zu in %zu blocks KiB",
		 step, rss, hwm, anon, file, mi.arena >> 10, mi.uordblks >> 10, mi.hblkhd >> 10,
		 mi.hblks);
}
