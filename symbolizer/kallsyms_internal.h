/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The table of kernel symbols (kallsyms.h) as kallsyms.c builds it and
 * kallsyms_cache.c writes and reads it. Not a header for other files.
 */
#ifndef EBPROF_SYM_KALLSYMS_INTERNAL_H
#define EBPROF_SYM_KALLSYMS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	uint32_t name_off;  /* into names */
	uint32_t size : 24; /* bytes covered (a function of 16 MiB or more: cut) */
	uint32_t pad : 8;   /* bytes of padding before it (__pfx_) */
};

/* Symbols [first, next run's first) are of module mod (0: the kernel). */
struct kmod_run {
	uint32_t first;
	uint32_t mod;
};

struct ksyms {
	struct ksym *syms; /* sorted by addr, unique addresses */
	size_t n;
	struct kmod_run *runs;
	size_t nruns;
	char *names; /* the kept symbols' names, exactly */
	char **mods; /* mods[0] unused (core kernel) */
	size_t nmods;
};

#endif /* EBPROF_SYM_KALLSYMS_INTERNAL_H */
