/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ebprof symbolizer: (binary, file offset) -> inline chain of
 * {function, file, line}, and kernel addresses -> symbol.
 *
 * Backed by elfutils (libdwfl/libdw/libelf): DWARF when present, else
 * .symtab, else .dynsym. Separate debug files are found through
 * .gnu_debuglink and /usr/lib/debug/.build-id/xx/yyyy.debug (and the
 * configured debug directories), else from debuginfod servers when
 * configured (fetched in the background: a binary first symbolizes without
 * its debug file, and with it once it has arrived). Binaries are opened through
 * /proc/PID/map_files/START-END first, then PATH inside /proc/PID/root, so
 * deleted/upgraded binaries and other mount namespaces resolve; PATH on the
 * host only when the process has no root to look in (gone, or pid 0). In a
 * process's root, binaries and debug files resolve as the process sees them
 * (ebprof/in_root.h): a container's absolute symlink stays in the container.
 *
 * One cache entry per binary, keyed by GNU build-id (fallback:
 * device+inode+size+mtime), shared by every process that maps the file.
 * The cache is bounded by an estimate of its memory use; entries that are
 * not pinned (see sym_elf_get/sym_elf_put) are evicted least recently used
 * first.
 *
 * Binaries and debug files belong to other users and containers, and
 * libdw reads them through a mapping: one cut short while mapped would
 * raise SIGBUS at the next read past its new end. sym_new() installs a
 * SIGBUS handler (once per process, keeping the one installed before for
 * every other SIGBUS) that makes such reads find zeros inside the
 * symbolizer's calls; the binary's answers are then dropped with one
 * warning ("PATH: truncated while being read; its symbols are dropped"),
 * counted in sym_stats.truncated, and it is opened again once whole. Names
 * returned are copies, never pointers into a file. A program that installs
 * its own SIGBUS handler after sym_new() loses that protection.
 *
 * Not thread-safe: one symbolizer per thread.
 */
#ifndef EBPROF_SYMBOLIZER_H
#define EBPROF_SYMBOLIZER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;
struct sym_elf;

struct sym_opts {
	/* Upper bound of the binary cache, bytes (estimate); 0 = 64 MiB. */
	size_t max_cache_bytes;
	/* Colon-separated debug directories; NULL = "/usr/lib/debug". */
	const char *debug_dirs;
	/* kallsyms file; NULL = "/proc/kallsyms". For tests. */
	const char *kallsyms_path;
	/* Do not demangle C++/Rust names when true. */
	bool no_demangle;
	/* Space-separated debuginfod server URLs; NULL or "" = none (the
	 * symbolizer then never touches the network). */
	const char *debuginfod_urls;
	/* Its cache directory (NULL = /var/cache/ebprof/debuginfod), bound
	 * (bytes, 0 = 1 GiB) and timeout per request (ms, 0 = 10 s). */
	const char *debuginfod_cache;
	uint64_t debuginfod_cache_bytes;
	int debuginfod_timeout_ms;
	/* Wait for debuginfod answers in sym_elf_get() (ebprof symbolize)
	 * instead of fetching in the background (the agent). */
	bool debuginfod_wait;
	/* Where debug files with compressed DWARF are kept decompressed
	 * (libdw then maps them rather than inflating them into the heap);
	 * NULL = read them compressed. */
	const char *plain_debug_dir;
};

/*
 * One frame of an inline chain. All strings are owned by the symbolizer
 * and stay valid until the next call into the symbolizer that takes the
 * same struct symbolizer (copy them to keep them).
 */
struct sym_frame {
	const char *function;	 /* demangled name; NULL when unknown */
	const char *system_name; /* name as in the binary (mangled); NULL = same */
	const char *file;	 /* source file, NULL when unknown */
	int line;		 /* 0 when unknown */
	int column;		 /* 0 when unknown */
	bool inlined;		 /* true for every frame but the last (outermost) */
};

/* Which binary a mapping refers to; what /proc/PID/maps says. */
struct sym_binary {
	const char *path;	     /* path from maps, without " (deleted)" */
	int pid;		     /* process to open it through; 0 = open path as is */
	uint64_t map_start, map_end; /* for /proc/PID/map_files/START-END */
	uint64_t dev;		     /* makedev(major, minor) from maps; 0 if unknown */
	uint64_t inode;		     /* from maps; 0 if unknown */
};

/* Counters for tests, benchmarks and the self-report. */
struct sym_stats {
	uint64_t binaries_opened; /* cache misses that opened an ELF */
	uint64_t binaries_cached; /* entries in the cache now */
	uint64_t cache_hits;	  /* sym_elf_get answered from the cache */
	uint64_t evictions;
	uint64_t released;	  /* dropped by sym_release_unpinned()/sym_release_cold() */
	uint64_t released_cold;	  /* of those, with no hot offset: nothing kept */
	uint64_t resolved;	  /* offsets resolved from the binary (not memoised) */
	uint64_t results_kept;	  /* memoised resolutions the last release kept */
	uint64_t results_dropped; /* cold ones it dropped, over the symbolizer's life */
	uint64_t results_adopted; /* kept ones given back to a binary opened again */
	uint64_t cache_bytes;	  /* current estimate */
	uint64_t resolve_calls;
	uint64_t resolve_failures; /* addresses with no symbol at all */
	/* binaries whose tables were read in full (their first lookup since
	 * opened, their .eh_frame index): where file pages pile up */
	uint64_t first_reads;
	/* binaries and debug files found cut short while being read (their
	 * binary's names dropped until it is whole again) */
	uint64_t truncated;
	/* function ranges kept for sym_elf_function_start() (in cache_bytes) */
	uint64_t fde_index_bytes;
	/* debuginfod, when configured */
	uint64_t debuginfod_requests; /* HTTP requests made */
	uint64_t debuginfod_found;    /* debug files downloaded */
	uint64_t debuginfod_missing;  /* build-ids no server has */
	uint64_t debuginfod_errors;   /* failed lookups (network, 5xx, bad file) */
	uint64_t debuginfod_queued;   /* lookups waiting or in flight now */
	uint64_t debuginfod_cache_bytes;
};

/* Returns 0 or a negative errno; *out is freed with sym_free(). */
int sym_new(const struct sym_opts *opts, struct symbolizer **out);
void sym_free(struct symbolizer *sym);

/*
 * Find (or open and cache) the binary behind a mapping and pin it.
 * Returns 0 and a pinned handle, or a negative errno (-ENOENT: no such
 * file anywhere; -ENOEXEC: not an ELF file). Each successful get is
 * matched by one sym_elf_put().
 */
int sym_elf_get(struct symbolizer *sym, const struct sym_binary *bin, struct sym_elf **out);
void sym_elf_put(struct symbolizer *sym, struct sym_elf *elf);

/* Lower-case hex GNU build-id, or "" when the binary has none. Owned by
 * the handle, valid while it is pinned. */
const char *sym_elf_build_id(const struct sym_elf *elf);

/* Has this binary DWARF line info (itself or through a debug file)? */
bool sym_elf_has_lines(const struct sym_elf *elf);

/*
 * Where the binary's names come from, best first: "dwarf" (in the binary),
 * "debug-file" (a separate one found locally), "debuginfod",
 * "minidebuginfo" (.gnu_debugdata), "symtab", "dynsym", or "none".
 * A static string.
 */
const char *sym_elf_debug_source(const struct sym_elf *elf);

/*
 * Find a binary by its build-id (lower-case hex), for symbolizing a stored
 * profile: path (may be NULL) when it exists and carries that build-id,
 * else DIR/.build-id/xx/yyyy.debug under the debug directories, else
 * debuginfod. Returns 0 and a pinned handle (sym_elf_put()), -ENOENT, or
 * a negative errno.
 */
int sym_elf_get_by_build_id(struct symbolizer *sym, const char *build_id, const char *path,
			    struct sym_elf **out);

/*
 * Resolve a file offset (address - map_start + map_offset) inside the
 * binary. Fills frames[0..n) innermost first (frames[n-1] is the real,
 * non-inlined function) and returns n; 0 when nothing is known of the
 * address (also when the binary or its debug file was found cut short:
 * see the top of this file); a negative errno on error. n <= max.
 */
int sym_elf_resolve(struct symbolizer *sym, struct sym_elf *elf, uint64_t file_offset,
		    struct sym_frame *frames, int max);

/*
 * Where the function that holds a file offset starts, from the binary's
 * CFI: every FDE of .eh_frame covers one function. For naming code that no
 * symbol names (the static functions of a stripped binary) after its
 * function, so that every address of one function names one frame.
 * Returns 0 and the file offset of the function's first byte in *start
 * (<= file_offset); -ENOENT when no FDE covers the offset (a gap, code
 * without CFI: the address stays its own name); -ENODATA without
 * .eh_frame; -ENOMEM. The ranges are read on the first call for a binary
 * (.eh_frame_hdr's search table, else every FDE of .eh_frame) and kept
 * with it in the cache: 8 bytes per FDE.
 */
int sym_elf_function_start(struct symbolizer *sym, struct sym_elf *elf, uint64_t file_offset,
			   uint64_t *start);

/* The same by ELF virtual address: 0 and the FDE's [*start, *end) that
 * holds vaddr; -ENOENT, -ENODATA, -ENOMEM as above. */
int sym_elf_function_range(struct symbolizer *sym, struct sym_elf *elf, uint64_t vaddr,
			   uint64_t *start, uint64_t *end);

/*
 * Data of a binary (for reading a process's memory from BPF); each of
 * these, the function starts above and sym_elf_unwind_table() answer -EIO
 * once a file of the binary was found cut short. The ELF
 * virtual address of a defined object or function symbol (.symtab, else
 * .dynsym); 0 or -ENOENT.
 */
int sym_elf_symbol(struct sym_elf *elf, const char *name, uint64_t *vaddr);
/* The virtual address at a file offset of a loaded segment (a mapping's
 * offset gives the process's load bias); 0 or -ENOENT. */
int sym_elf_offset_vaddr(const struct sym_elf *elf, uint64_t file_offset, uint64_t *vaddr);
/* offsetof(type, member) from DWARF (type: a structure or a typedef of
 * one); -ENODATA without DWARF, -ENOENT when not found. */
int sym_elf_member_offset(struct sym_elf *elf, const char *type, const char *member, uint64_t *off);
/* len bytes of the binary's code or data at ELF virtual address vaddr,
 * from the allocated section that holds them all, into buf; 0, -ENOENT
 * (no such section: a stripped section, or bytes only in memory). */
int sym_elf_read(struct sym_elf *elf, uint64_t vaddr, void *buf, size_t len);
/* The first NUL-terminated string of .rodata that starts with prefix,
 * copied into out (cut to len - 1 bytes); 0 or -ENOENT. */
int sym_elf_find_string(struct sym_elf *elf, const char *prefix, char *out, size_t len);

/*
 * Resolve a kernel address through kallsyms (loaded on first use, module
 * symbols included). Returns 1 and fills *frame (function; file = module
 * name such as "ext4", or NULL for the core kernel), 0 when the address
 * is not covered, or a negative errno (e.g. -EPERM when kallsyms shows
 * only zero addresses).
 */
int sym_kernel_resolve(struct symbolizer *sym, uint64_t addr, struct sym_frame *frame);

/* GNU build-id of the running kernel (from /sys/kernel/notes), lower-case
 * hex into buf (at least 41 bytes): what the [kernel.kallsyms] mapping of a
 * profile carries. 0 or a negative errno. */
int sym_kernel_build_id(char *buf, size_t size);

void sym_get_stats(const struct symbolizer *sym, struct sym_stats *out);

/*
 * Drop every cached binary no one pins: its DWARF (with the debug file
 * libdw maps and the sections it decompresses), symbol tables and
 * memoised resolutions. A binary dropped is opened again when next asked
 * for, and resolves as before. Strings returned earlier become invalid.
 * Returns how many binaries were dropped.
 */
size_t sym_release_unpinned(struct symbolizer *sym);

/*
 * Give back the resident pages of the binaries and debug files the cached
 * entries map (clean file pages: read again from the page cache when next
 * touched) of the binaries read from since the last call, and of the core
 * kernel's symbol table if looked up since. What is parsed
 * from them stays; lookups resolve as before. Cheap (a madvise() per file
 * read from; /proc/self/maps read when a binary was opened since): for
 * the points where a caller has just resolved addresses. Returns how many
 * file mappings were advised.
 */
size_t sym_drop_file_pages(struct symbolizer *sym);

/*
 * The end of a round of use (the agent's interval), for the memory
 * budget: an offset not asked for in the last SYM_KEEP_ROUNDS rounds is
 * cold. sym_release_cold() drops what no one pins and keeps the hot
 * results:
 *  - a binary no one pins: dropped (its DWARF, debug file, symbol
 *    tables), but the resolutions of its hot offsets kept (their strings
 *    copied) and given back when the binary is opened again: those
 *    offsets do not resolve anew, however many rounds end over budget;
 *    a binary with no hot offset is dropped whole;
 *  - a pinned binary: kept, but the resolutions of its cold offsets.
 * Strings returned earlier become invalid. Returns how many binaries
 * were dropped. sym_next_round() only ends the round (no release).
 */
#define SYM_KEEP_ROUNDS 4
size_t sym_release_cold(struct symbolizer *sym);
void sym_next_round(struct symbolizer *sym);

/*
 * Logging. The library writes nothing itself: it hands each message (one
 * line, no trailing newline) to the function installed here, as libbpf
 * does with libbpf_set_print(). NULL (the default) keeps it silent. Set
 * it once, before symbolizing; returns the previous function.
 */
enum sym_log_level { SYM_LOG_WARN, SYM_LOG_INFO, SYM_LOG_DEBUG };
typedef void (*sym_print_fn)(enum sym_log_level level, const char *fmt, va_list ap);
sym_print_fn sym_set_print(sym_print_fn fn);

/*
 * Unwind tables (symbolizer/unwind_table.c): a binary's CFI compiled into
 * the rows the BPF unwinder walks (struct unwind_row, ebprof/bpf_shared.h),
 * read through libdw's CFI interpreter. The table owns its rows
 * (sym_unwind_table_free()).
 */
struct unwind_row; /* ebprof/bpf_shared.h */

struct sym_unwind_table {
	struct unwind_row *rows; /* sorted by pc; the last row (a gap) ends the last range */
	size_t n;
	const char *source;   /* "eh_frame", "debug_frame", "eh_frame+debug_frame" (static) */
	uint64_t fdes;	      /* FDEs read */
	uint64_t unsupported; /* rows marked UNWIND_CFA_UNSUPPORTED */
	uint64_t rejected;    /* FDEs whose program failed the check (cfi_check.h), left
				 to gaps; not kept by the disk cache */
};
/* The table of a pinned binary: its .eh_frame, and .debug_frame (its own or
 * its debug file's) for the code .eh_frame does not cover. 0; -ENODATA: no
 * CFI; -ENOTSUP: not x86-64; -E2BIG: addresses beyond 4 GiB or more than
 * EBPROF_MAX_TABLE_ROWS rows; -ENOEXEC; -ENOMEM. */
int sym_elf_unwind_table(struct symbolizer *sym, struct sym_elf *elf, struct sym_unwind_table *out);
/* The same for an ELF image in memory (the vDSO). */
int sym_unwind_table_from_image(const void *image, size_t size, struct sym_unwind_table *out);
void sym_unwind_table_free(struct sym_unwind_table *t);
/* The identity of a binary, cheaply (its ELF headers and notes only):
 * lower-case hex build-id ("" when none) into build_id (len >= 129) and
 * the virtual address of file_offset. 0, -ENOENT (no such file or no
 * segment at the offset), -ENOEXEC, or a negative errno. */
int sym_binary_ident(const struct sym_binary *bin, uint64_t file_offset, char *build_id, size_t len,
		     uint64_t *vaddr);
/* The disk cache of tables, DIR/BUILD_ID.unwind (dir made 0700 when
 * missing). Save writes a temporary file and renames it; load returns 0,
 * -ENOENT, or -EINVAL for a file that is truncated, corrupt or of another
 * version (which it removes), or for a build-id that is not plain hex. */
int sym_unwind_cache_load(const char *dir, const char *build_id, struct sym_unwind_table *out);
int sym_unwind_cache_save(const char *dir, const char *build_id, const struct sym_unwind_table *t);

#endif /* EBPROF_SYMBOLIZER_H */
