// SPDX-License-Identifier: BSD-2-Clause
/*
 * The symbolizer's cache of binaries (sym_cache.h): one entry per binary,
 * keyed by GNU build-id (else device, inode, size and mtime), found again
 * through the (device, inode) aliases it was seen under, bounded by an
 * estimate of its memory and evicted least recently used first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug_plain.h"
#include "sym_cache.h"
#include "sym_log.h"

/* --- small helpers ------------------------------------------------------ */

void symc_account(struct symbolizer *sym, struct sym_elf *e)
{
	size_t b = sizeof(*e) + e->file_bytes + e->memo_bytes + e->str_bytes +
		   e->id.nloads * sizeof(*e->id.loads) + fdex_bytes(e->fdes);

	sym->stats.cache_bytes = sym->stats.cache_bytes - e->bytes + b;
	e->bytes = b;
	e->touched = true;
}

static void lru_unlink(struct symbolizer *sym, struct sym_elf *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		sym->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		sym->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(struct symbolizer *sym, struct sym_elf *e)
{
	e->lru_prev = NULL;
	e->lru_next = sym->lru_head;
	if (sym->lru_head)
		sym->lru_head->lru_prev = e;
	else
		sym->lru_tail = e;
	sym->lru_head = e;
}

/* --- tables ------------------------------------------------------------- */

/* Every element starts with its 64-bit hash. */
static hashval_t elem_hash(const void *elem)
{
	return (hashval_t) * (const uint64_t *)elem;
}

int symc_memo_eq(const void *elem, const void *key)
{
	return ((const struct memo_rec *)elem)->offset == *(const uint64_t *)key;
}

int symc_istr_eq(const void *elem, const void *key)
{
	return !strcmp(((const struct istr *)elem)->s, key);
}

int symc_alias_eq(const void *elem, const void *key)
{
	const struct sym_alias *a = elem;
	const uint64_t *k = key; /* dev, ino */

	return a->dev == k[0] && a->ino == k[1];
}

int symc_entry_eq(const void *elem, const void *key)
{
	const struct sym_elf *e = elem;
	const struct bytes_key *k = key;

	return e->key_len == k->len && !memcmp(e->key, k->p, k->len);
}

htab_t symc_table_new(htab_eq eq)
{
	return htab_create_alloc(16, elem_hash, eq, NULL, calloc, free);
}

/* Insert elem (hash set) unless an equal one is there: 0 or -ENOMEM. */
int symc_table_insert(htab_t t, void *elem, const void *key, uint64_t hash)
{
	void **slot = htab_find_slot_with_hash(t, key, (hashval_t)hash, INSERT);

	if (!slot)
		return -ENOMEM;
	*slot = elem;
	return 0;
}

static int free_elem(void **slot, void *arg)
{
	(void)arg;
	free(*slot);
	return 1;
}

/* libiberty's own hash (Bob Jenkins' lookup2) */
uint64_t symc_hash_bytes(const void *data, size_t len)
{
	return iterative_hash(data, len, 0);
}

uint64_t symc_hash_u64(uint64_t v)
{
	/* splitmix64's finalizer: the memo's key is hashed on every warm
	 * lookup, where lookup2 over 8 bytes cost more than the lookup. */
	v ^= v >> 30;
	v *= 0xbf58476d1ce4e5b9ULL;
	v ^= v >> 27;
	v *= 0x94d049bb133111ebULL;
	return v ^ (v >> 31);
}

void symc_table_free_all(htab_t t)
{
	if (!t)
		return;
	htab_traverse_noresize(t, free_elem, NULL);
	htab_empty(t);
}

void symc_memo_clear(struct sym_elf *e)
{
	symc_table_free_all(e->memo);
	symc_table_free_all(e->strs);
	e->memo_bytes = 0;
	e->str_bytes = 0;
}

const char *symc_intern(htab_t strs, size_t *bytes, const char *s)
{
	size_t len = strlen(s) + 1;
	uint64_t h = symc_hash_bytes(s, len - 1);
	struct istr *is = htab_find_with_hash(strs, s, (hashval_t)h);

	if (is)
		return is->s;
	is = malloc(sizeof(*is) + len);
	if (!is)
		return NULL;
	is->hash = h;
	memcpy(is->s, s, len);
	if (symc_table_insert(strs, is, is->s, h)) {
		free(is);
		return NULL;
	}
	*bytes += sizeof(*is) + len;
	return is->s;
}

/* --- aliases ------------------------------------------------------------ */

static uint64_t alias_hash(uint64_t dev, uint64_t ino)
{
	return symc_hash_u64(dev * 0x9e3779b97f4a7c15ULL ^ ino);
}

struct sym_alias *symc_alias_find(struct symbolizer *sym, uint64_t dev, uint64_t ino)
{
	const uint64_t key[2] = { dev, ino };

	return htab_find_with_hash(sym->aliases, key, (hashval_t)alias_hash(dev, ino));
}

bool symc_alias_fresh(const struct sym_alias *a, const struct stat *st)
{
	return a->size == (int64_t)st->st_size && a->mtime.tv_sec == st->st_mtim.tv_sec &&
	       a->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Unlink from its owner's list and the table, and free. */
void symc_alias_drop(struct symbolizer *sym, struct sym_alias *a)
{
	struct sym_alias **pp = a->elf ? &a->elf->aliases : &sym->negatives;

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	if (!a->elf)
		sym->nnegatives--;
	htab_remove_elt_with_hash(sym->aliases, (const uint64_t[2]){ a->dev, a->ino },
				  (hashval_t)a->hash);
	free(a);
}

void symc_negatives_clear(struct symbolizer *sym)
{
	while (sym->negatives)
		symc_alias_drop(sym, sym->negatives);
}

/* Remember (dev, ino) -> e (or, e == NULL, -> err). Best effort. */
static void alias_add(struct symbolizer *sym, uint64_t dev, uint64_t ino, const struct stat *st,
		      struct sym_elf *e, int err)
{
	struct sym_alias *a = symc_alias_find(sym, dev, ino);

	if (a)
		symc_alias_drop(sym, a);
	if (!e && sym->nnegatives >= SYM_NEG_MAX)
		symc_negatives_clear(sym);
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	a->dev = dev;
	a->ino = ino;
	a->size = (int64_t)st->st_size;
	a->mtime = st->st_mtim;
	a->elf = e;
	a->err = err;
	a->hash = alias_hash(dev, ino);
	if (symc_table_insert(sym->aliases, a, (const uint64_t[2]){ dev, ino }, a->hash)) {
		free(a);
		return;
	}
	if (e) {
		a->next = e->aliases;
		e->aliases = a;
	} else {
		a->next = sym->negatives;
		sym->negatives = a;
		sym->nnegatives++;
	}
}

/* The file's own (dev, ino) and, when it differs, the one from maps. */
void symc_aliases_add(struct symbolizer *sym, const struct sym_binary *bin, const struct stat *st,
		      struct sym_elf *e, int err)
{
	alias_add(sym, st->st_dev, st->st_ino, st, e, err);
	if (bin->inode && (bin->dev != st->st_dev || bin->inode != st->st_ino))
		alias_add(sym, bin->dev, bin->inode, st, e, err);
}

/* --- entries ------------------------------------------------------------ */

struct sym_elf *symc_entry_find(struct symbolizer *sym, const unsigned char *key, size_t len)
{
	struct bytes_key k = { key, len };

	return htab_find_with_hash(sym->by_key, &k, (hashval_t)symc_hash_bytes(key, len));
}

static void entry_free(struct symbolizer *sym, struct sym_elf *e);

/* Out of the tables and the LRU list: no lookup finds it any more. */
static void entry_unlink(struct symbolizer *sym, struct sym_elf *e)
{
	while (e->aliases)
		symc_alias_drop(sym, e->aliases);
	htab_remove_elt_with_hash(sym->by_key, &(struct bytes_key){ e->key, e->key_len },
				  (hashval_t)e->hash);
	lru_unlink(sym, e);
}

void symc_entry_destroy(struct symbolizer *sym, struct sym_elf *e)
{
	if (e->stale) {
		/* on the stale list, unlinked already */
		struct sym_elf **pp = &sym->stale;

		while (*pp && *pp != e)
			pp = &(*pp)->lru_next;
		if (*pp)
			*pp = e->lru_next;
		sym->nstale--;
	} else {
		entry_unlink(sym, e);
	}
	entry_free(sym, e);
}

/* Free an entry out of every table and list. */
static void entry_free(struct symbolizer *sym, struct sym_elf *e)
{
	symc_memo_clear(e);
	if (e->memo) /* NULL: parked (sym_park.c) */
		htab_delete(e->memo);
	if (e->strs)
		htab_delete(e->strs);
	sym->stats.fde_index_bytes -= fdex_bytes(e->fdes);
	fdex_free(e->fdes); /* before the ELF it reads */
	symdw_close(e->dw);
	elfbin_ident_release(&e->id);
	sym->stats.cache_bytes -= e->bytes;
	sym->stats.binaries_cached--;
	sym->ndebug_cut -= e->debug_cut;
	free(e);
}

static void evict(struct symbolizer *sym)
{
	struct sym_elf *e = sym->lru_tail;

	while (e && sym->stats.cache_bytes > sym->max_bytes) {
		struct sym_elf *prev = e->lru_prev;

		if (!e->pins) {
			sym_debug("symbolizer: evicting %s",
				  e->build_id[0] ? e->build_id : "(no id)");
			symc_entry_destroy(sym, e);
			sym->stats.evictions++;
		}
		e = prev;
	}
}

size_t sym_release_unpinned(struct symbolizer *sym)
{
	struct sym_elf *e = sym->lru_tail;
	size_t n = 0;

	while (e) {
		struct sym_elf *prev = e->lru_prev;

		if (!e->pins) {
			symc_entry_destroy(sym, e);
			sym->stats.released++;
			n++;
		}
		e = prev;
	}
	return n;
}

int symc_pin(struct symbolizer *sym, struct sym_elf *e, struct sym_elf **out)
{
	e->pins++;
	lru_unlink(sym, e);
	lru_push_front(sym, e);
	*out = e;
	evict(sym);
	return 0;
}

size_t symc_make_key(const struct elf_ident *id, const struct stat *st, unsigned char *key)
{
	uint64_t v[5];

	if (id->build_id_len) {
		key[0] = KEY_BUILD_ID;
		memcpy(key + 1, id->build_id, id->build_id_len);
		return 1 + id->build_id_len;
	}
	v[0] = st->st_dev;
	v[1] = st->st_ino;
	v[2] = (uint64_t)st->st_size;
	v[3] = (uint64_t)st->st_mtim.tv_sec;
	v[4] = (uint64_t)st->st_mtim.tv_nsec;
	key[0] = KEY_STAT;
	memcpy(key + 1, v, sizeof(v));
	return 1 + sizeof(v);
}

/* A new entry for the ELF open on fd (consumed). */
int symc_entry_create(struct symbolizer *sym, const struct sym_binary *bin, int fd,
		      const struct stat *st, struct elf_ident *id, const unsigned char *key,
		      size_t key_len, struct sym_elf **out)
{
	struct sym_elf *e;
	int err, debug_fd = -1;
	size_t debug_bytes = 0;
	char *debug = NULL;
	bool from_di = false;
	struct stat dst;
	struct symg g;

	e = calloc(1, sizeof(*e));
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	e->memo = symc_table_new(symc_memo_eq);
	e->strs = symc_table_new(symc_istr_eq);
	if (!e->memo || !e->strs) {
		close(fd);
		err = -ENOMEM;
		goto fail;
	}
	memcpy(e->key, key, key_len);
	e->key_len = key_len;
	e->sym = sym;
	elfbin_hex(id->build_id, id->build_id_len, e->build_id);
	if (!id->has_dwarf) {
		err = elfbin_find_debug(sym->debug_dirs, bin, id, st, &debug, &debug_fd);
		e->debug_cut = err == -ESTALE;
		if (!debug && err != -ENOMEM && sym->di && id->build_id_len) {
			err = symdi_lookup(sym->di, e->build_id, sym->di_wait, &debug);
			from_di = debug != NULL;
			/* the agent's own cache: a host path */
			if (debug && (debug_fd = open(debug, O_RDONLY | O_CLOEXEC)) < 0) {
				sym_debug("symbolizer: %s: %s", debug, strerror(errno));
				free(debug);
				debug = NULL;
				from_di = false;
			}
		}
		if (err == -ENOMEM) {
			close(fd);
			goto fail;
		}
	}
	e->source = id->has_dwarf	? SRC_DWARF
		    : from_di		? SRC_DEBUGINFOD
		    : debug		? SRC_DEBUG_FILE
		    : id->has_symtab	? SRC_SYMTAB
		    : id->has_debugdata ? SRC_MINIDEBUGINFO
					: SRC_DYNSYM;
	if (debug && debug_fd >= 0 &&
	    symplain_swap(sym->plain_dir, e->build_id, &debug_fd, &debug, &sym->plain_warned) ==
		    -ENOMEM) {
		close(debug_fd);
		free(debug);
		close(fd);
		err = -ENOMEM;
		goto fail;
	}
	if (debug_fd >= 0 && !fstat(debug_fd, &dst))
		debug_bytes = (size_t)dst.st_size;
	symg_enter(&g);
	err = symdw_open(fd, bin->path, debug_fd, debug, &e->dw);
	if (symg_leave(&g)) { /* cut short since elfbin_ident() read it */
		sym_warn("%s: truncated while being read; its symbols are dropped",
			 e->dw ? symdw_file_name(e->dw, g.addr) : bin->path);
		sym->stats.truncated++;
		symdw_close(e->dw);
		e->dw = NULL;
		err = err ? err : -EIO;
	}
	if (err) {
		free(debug);
		goto fail;
	}
	e->debug_cut = e->debug_cut && !debug;
	sym->ndebug_cut += e->debug_cut;
	e->id = *id; /* take over the arrays */
	memset(id, 0, sizeof(*id));
	/* What the entry holds is what libdw and libelf parse into the heap:
	 * the DWARF (decompressed when its sections are), in proportion to
	 * the file it comes from. The binary's own mapping is not counted
	 * when its DWARF lies in a debug file: its pages are clean file
	 * pages, given back (sym_drop_file_pages()), and counting them let
	 * a large one few frames hit (libicudata's 31 MiB of data, mapped by
	 * every backend) push the cache over its bound at every drain, so
	 * the binaries of the next frames (libc with its debug file among
	 * them) were evicted and parsed again each interval. */
	e->file_bytes = debug_bytes ? debug_bytes : e->id.has_dwarf ? (size_t)st->st_size : 0;
	free(debug);
	e->hash = symc_hash_bytes(key, key_len);
	if (symc_table_insert(sym->by_key, e, &(struct bytes_key){ key, key_len }, e->hash)) {
		sym->ndebug_cut -= e->debug_cut;
		symdw_close(e->dw);
		elfbin_ident_release(&e->id);
		err = -ENOMEM;
		goto fail;
	}
	lru_push_front(sym, e);
	sym->stats.binaries_cached++;
	sym->stats.binaries_opened++;
	symc_park_adopt(sym, e);
	symc_account(sym, e);
	*out = e;
	return 0;
fail:
	if (e->memo)
		htab_delete(e->memo);
	if (e->strs)
		htab_delete(e->strs);
	free(e);
	return err;
}

/* --- debug files arriving from debuginfod -------------------------------- */

static int unhex(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* Its debug file arrived (or it was found truncated): new lookups open the
 * binary afresh; the entry itself goes once nobody holds it (pg_attach
 * pins a binary for a session). */
static void retire(struct symbolizer *sym, struct sym_elf *e)
{
	if (!e->pins) {
		symc_entry_destroy(sym, e);
		return;
	}
	entry_unlink(sym, e);
	e->stale = true;
	e->lru_prev = NULL;
	e->lru_next = sym->stale;
	sym->stale = e;
	sym->nstale++;
}

static struct sym_elf *entry_by_hex(struct symbolizer *sym, const char *hex)
{
	unsigned char key[KEY_MAX];
	size_t n = strlen(hex) / 2;

	if (n > ELFBIN_MAX_BUILD_ID)
		return NULL;
	key[0] = KEY_BUILD_ID;
	for (size_t i = 0; i < n; i++)
		key[1 + i] = (unsigned char)(unhex(hex[2 * i]) << 4 | unhex(hex[2 * i + 1]));
	return symc_entry_find(sym, key, 1 + n);
}

/* Names from the binary alone: a debug file would do better. */
static bool could_improve(const struct sym_elf *e)
{
	return e->build_id[0] && e->source >= SRC_MINIDEBUGINFO;
}

static void on_arrival(void *ctx, const char *hex)
{
	struct symbolizer *sym = ctx;
	struct sym_elf *e = entry_by_hex(sym, hex);

	if (e && could_improve(e)) {
		sym_debug("symbolizer: debug file of %s arrived", hex);
		retire(sym, e);
	}
}

/* Ask again for the entries still without a debug file: a lookup that
 * failed (server down at boot), was dropped (queue full) or whose arrival
 * was not seen. The client answers from its caches (a day for a
 * build-id no server has, a minute for a failure) without the network. */
static void recheck(struct symbolizer *sym)
{
	struct timespec now;
	struct sym_elf *e, *next;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec < sym->di_recheck_s)
		return;
	sym->di_recheck_s = now.tv_sec + SYM_RECHECK_S;
	for (e = sym->lru_head; e; e = next) {
		char *path = NULL;

		next = e->lru_next;
		if (could_improve(e) && !symdi_lookup(sym->di, e->build_id, false, &path))
			retire(sym, e); /* it is there now */
		free(path);
	}
}

/* Open again, every recheck_s, the binaries opened without a debug file
 * that could not be read whole: whole again, it is taken. */
static void recheck_cut(struct symbolizer *sym)
{
	struct sym_elf *e, *next;
	struct timespec now;

	if (!sym->ndebug_cut)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec < sym->cut_recheck_s)
		return;
	sym->cut_recheck_s = now.tv_sec + sym->recheck_s;
	for (e = sym->lru_head; e; e = next) {
		next = e->lru_next;
		if (e->debug_cut) {
			sym_debug("symbolizer: %s: looking for its debug file again",
				  e->build_id[0] ? e->build_id : "(no build-id)");
			retire(sym, e);
		}
	}
}

int symc_entry_truncated(struct sym_elf *e, uintptr_t addr)
{
	struct symbolizer *sym = e->sym;

	if (e->truncated)
		return -EIO;
	sym_warn("%s: truncated while being read; its symbols are dropped",
		 symdw_file_name(e->dw, addr));
	sym->stats.truncated++;
	e->truncated = true;
	retire(sym, e);
	return -EIO;
}

void symc_refresh(struct symbolizer *sym)
{
	struct sym_elf **pp;

	if (sym->di) {
		symdi_arrivals(sym->di, on_arrival, sym);
		recheck(sym);
	}
	recheck_cut(sym);
	for (pp = &sym->stale; *pp;) {
		struct sym_elf *e = *pp;

		if (e->pins) {
			pp = &e->lru_next;
			continue;
		}
		*pp = e->lru_next;
		e->stale = false; /* off the list now */
		sym->nstale--;
		entry_free(sym, e);
	}
}
