/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the symbolizer (ebprof/symbolizer.h), shared by its two
 * main files: sym_cache.c keeps the binary cache (entries by build-id,
 * (device, inode) aliases, LRU eviction, per-binary memo and string
 * tables, all in libiberty's hashtab); symbolizer.c is the public API that
 * resolves through it.
 */
#ifndef EBPROF_SYM_CACHE_H
#define EBPROF_SYM_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <libiberty/hashtab.h>

#include "debuginfod.h"
#include "dwarf_resolve.h"
#include "ebprof/symbolizer.h"
#include "elf_binary.h"
#include "fde_index.h"
#include "kallsyms.h"
#include "sym_guard.h"

#define SYM_DEFAULT_CACHE_BYTES (64ULL << 20)
/* Longest inline chain kept per address. */
#define SYM_MAX_FRAMES 64
/* Memoised offsets per binary before the memo starts over. */
#define SYM_MEMO_MAX 65536
/* Seconds between asking debuginfod again for binaries without debug files. */
#define SYM_RECHECK_S 60
/* Remembered non-ELF files before that list starts over. */
#define SYM_NEG_MAX 1024

#define KEY_BUILD_ID 'B'
#define KEY_STAT 'S'
#define KEY_MAX (1 + ELFBIN_MAX_BUILD_ID)

/*
 * The tables below are libiberty's hashtab (the project's one hash table):
 * each holds pointers to the structs, which keep their own hash.
 */

/* A memoised resolution of one file offset. */
struct memo_rec {
	uint64_t hash;
	uint64_t offset;
	uint32_t used; /* the round it was last asked for in */
	int n;
	struct sym_frame frames[];
};

/* An interned (demangled) string. */
struct istr {
	uint64_t hash;
	char s[];
};

/* A (device, inode) a binary was seen under; elf == NULL: not an ELF. */
struct sym_alias {
	uint64_t hash;
	uint64_t dev, ino;
	int64_t size;
	struct timespec mtime;
	struct sym_elf *elf;
	int err;
	struct sym_alias *next; /* the entry's aliases, or the negative list */
};

/* Where an entry's names come from (sym_elf_debug_source()). */
enum sym_source {
	SRC_DWARF,
	SRC_DEBUG_FILE,
	SRC_DEBUGINFOD,
	SRC_MINIDEBUGINFO,
	SRC_SYMTAB,
	SRC_DYNSYM,
};

struct sym_elf {
	uint64_t hash; /* in symbolizer.by_key */
	unsigned char key[KEY_MAX];
	size_t key_len;
	struct sym_elf *lru_prev, *lru_next;
	unsigned int pins;
	char build_id[2 * ELFBIN_MAX_BUILD_ID + 1];
	struct elf_ident id;
	struct sym_dwarf *dw;
	struct sym_alias *aliases;
	htab_t memo; /* struct memo_rec, by offset */
	size_t memo_bytes;
	htab_t strs; /* struct istr, by text */
	size_t str_bytes;
	size_t file_bytes;
	size_t bytes; /* this entry's share of cache_bytes */
	enum sym_source source;
	bool stale; /* on the stale list (its debug file arrived) */
	/* Function ranges from .eh_frame (fde_index.h), built the first time
	 * the binary has code no symbol names; fdes_err: why there are none */
	struct fde_index *fdes;
	int fdes_err;
	/* file_pages.c: read from since its file pages were last given back
	 * (symc_account() sets it); its mappings seen to be files (1), not
	 * (-1), or not looked at yet (0) */
	bool touched;
	signed char file_mapped;
	/* A file of it was found truncated while read (sym_guard.h): out of
	 * the tables, nothing read from it any more; freed once unpinned. */
	bool truncated;
	/* opened without a debug file because one could not be read whole
	 * (elfbin_find_debug(): -ESTALE): opened again every recheck_s */
	bool debug_cut;
	struct symbolizer *sym; /* the owner, for symc_entry_truncated() */
};

/*
 * The resolutions of a binary the memory budget dropped (sym_park.c):
 * the memo of its hot offsets, with its strings copied, handed back to
 * the entry when the binary is opened again; trimmed of the offsets that
 * turn cold meanwhile, and dropped once none is left.
 */
struct sym_parked {
	uint64_t hash; /* in symbolizer.parked, by key */
	unsigned char key[KEY_MAX];
	size_t key_len;
	htab_t memo, strs;
	size_t memo_bytes, str_bytes;
};

struct symbolizer {
	size_t max_bytes;
	bool no_demangle;
	char *debug_dirs; /* owned; NULL = default */
	char *plain_dir;  /* owned; NULL = none (debug_plain.h) */
	bool plain_warned;
	char *kallsyms_path; /* owned */
	htab_t by_key;	     /* struct sym_elf, by key */
	htab_t aliases;	     /* struct sym_alias, by (dev, ino) */
	struct sym_alias *negatives;
	size_t nnegatives;
	struct sym_elf *lru_head, *lru_tail; /* head = most recently used */
	struct sym_stats stats;
	struct ksyms *ksyms; /* all of /proc/kallsyms, read when first needed */
	int ksyms_err;
	bool ksyms_tried;
	struct ksyms_core *kcore; /* the core kernel's, from the boot's file */
	bool kcore_tried;
	bool kcore_touched; /* looked up since sym_drop_file_pages() */
	char *kname;	    /* last demangled kernel name */
	char *kcopy;	    /* last core kernel name, copied out of its mapping */
	size_t kcopy_len;
	struct symdi *di; /* debuginfod client; NULL = none */
	bool di_wait;	  /* ask debuginfod synchronously */
	/* Entries whose debug file arrived while pinned: out of the tables,
	 * freed by symc_refresh() once unpinned (linked by lru_next). */
	struct sym_elf *stale;
	size_t nstale;
	time_t di_recheck_s; /* next recheck (CLOCK_MONOTONIC seconds) */
	/* entries with debug_cut, when they are next opened again, and how
	 * often (SYM_RECHECK_S; tests make it 0) */
	size_t ndebug_cut;
	time_t cut_recheck_s;
	time_t recheck_s;
	uint32_t round; /* rounds of use ended so far (sym_release_cold()) */
	htab_t parked;	/* struct sym_parked, by key; NULL until the first */
};

/* Keys of the tables: the bytes of an entry key. */
struct bytes_key {
	const void *p;
	size_t len;
};

/* Tables: libiberty hashtabs of structs that start with their 64-bit hash,
 * compared by the *_eq functions against a key (offset, text, {dev, ino},
 * struct bytes_key). */
htab_t symc_table_new(htab_eq eq);
int symc_table_insert(htab_t t, void *elem, const void *key, uint64_t hash);
int symc_memo_eq(const void *elem, const void *key);
int symc_istr_eq(const void *elem, const void *key);
int symc_alias_eq(const void *elem, const void *key);
int symc_entry_eq(const void *elem, const void *key);
uint64_t symc_hash_bytes(const void *data, size_t len);
uint64_t symc_hash_u64(uint64_t v);

/*
 * A guarded read of e (sym_guard.h) found a page past the end of one of
 * its files (addr): one warning naming the file, stats.truncated, and e
 * retired: new lookups open the binary afresh (elfbin_ident() refuses it
 * while it stays cut short), e itself goes once unpinned and reads nothing
 * meanwhile. Returns -EIO, what the caller answers.
 */
int symc_entry_truncated(struct sym_elf *e, uintptr_t addr);
/* Leave a guarded region of e: 0, or symc_entry_truncated()'s -EIO. */
static inline int symc_leave(struct sym_elf *e, struct symg *g)
{
	return symg_leave(g) ? symc_entry_truncated(e, g->addr) : 0;
}

/* Retire the entries whose debug file arrived from debuginfod since the
 * last call (new lookups reopen the binary; a pinned entry is freed once
 * unpinned); every SYM_RECHECK_S, ask again for those still without one. */
void symc_refresh(struct symbolizer *sym);

/* The memory estimate of e, after its memo or files changed. */
void symc_account(struct symbolizer *sym, struct sym_elf *e);
/* Forget e's memoised offsets and strings. */
void symc_memo_clear(struct sym_elf *e);
/* Intern s (its text) in strs, *bytes grown by what it took; NULL on
 * allocation failure. */
const char *symc_intern(htab_t strs, size_t *bytes, const char *s);
/* Free every element of a memo or string table and empty it. */
void symc_table_free_all(htab_t t);

/* file_pages.c: give back the file pages of entry (a struct sym_elf; void
 * for symdw_intern_units()'s callback) at once, after it read a binary's
 * tables whole; sym_drop_file_pages() still counts it as read from. */
void symc_drop_entry_pages(void *entry);

/* sym_park.c: give e the resolutions parked under its key, if any. */
void symc_park_adopt(struct symbolizer *sym, struct sym_elf *e);
/* Free every parked resolution (sym_free()). */
void symc_park_free(struct symbolizer *sym);

/* Aliases: (device, inode) -> entry, or a remembered failure (elf NULL). */
struct sym_alias *symc_alias_find(struct symbolizer *sym, uint64_t dev, uint64_t ino);
/* Is the file st still the one the alias was made for (size, mtime)? */
bool symc_alias_fresh(const struct sym_alias *a, const struct stat *st);
void symc_alias_drop(struct symbolizer *sym, struct sym_alias *a);
/* Remember the file's own (dev, ino) and the one from maps for e (or for
 * err when e is NULL). Best effort. */
void symc_aliases_add(struct symbolizer *sym, const struct sym_binary *bin, const struct stat *st,
		      struct sym_elf *e, int err);
void symc_negatives_clear(struct symbolizer *sym);

/* Entries: the key of a binary (build-id, else stat), find, create from an
 * open fd (consumed), destroy, and pin (most recently used; may evict). */
size_t symc_make_key(const struct elf_ident *id, const struct stat *st, unsigned char *key);
struct sym_elf *symc_entry_find(struct symbolizer *sym, const unsigned char *key, size_t len);
int symc_entry_create(struct symbolizer *sym, const struct sym_binary *bin, int fd,
		      const struct stat *st, struct elf_ident *id, const unsigned char *key,
		      size_t key_len, struct sym_elf **out);
void symc_entry_destroy(struct symbolizer *sym, struct sym_elf *e);
int symc_pin(struct symbolizer *sym, struct sym_elf *e, struct sym_elf **out);

#endif /* EBPROF_SYM_CACHE_H */
