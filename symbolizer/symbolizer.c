// SPDX-License-Identifier: BSD-2-Clause
/*
 * The symbolizer's cache and public API. Each binary is one struct sym_elf
 * keyed by its GNU build-id (fallback device+inode+size+mtime); aliases
 * map the (device, inode) pairs it was seen under to the entry, so a warm
 * sym_elf_get() costs one stat() and two hash lookups. Each entry memoises
 * its resolved offsets. Unpinned entries are evicted least recently used
 * first once the memory estimate exceeds the budget.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libiberty/hashtab.h>

#include <ebprof/symbolizer.h>

#include "demangle.h"
#include "dwarf_resolve.h"
#include "elf_binary.h"
#include "kallsyms.h"
#include "sym_log.h"

#define SYM_DEFAULT_CACHE_BYTES (64ULL << 20)
/* Longest inline chain kept per address. */
#define SYM_MAX_FRAMES 64
/* Memoised offsets per binary before the memo starts over. */
#define SYM_MEMO_MAX 65536
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
};

struct symbolizer {
	size_t max_bytes;
	bool no_demangle;
	char *debug_dirs;    /* owned; NULL = default */
	char *kallsyms_path; /* owned */
	htab_t by_key;	     /* struct sym_elf, by key */
	htab_t aliases;	     /* struct sym_alias, by (dev, ino) */
	struct sym_alias *negatives;
	size_t nnegatives;
	struct sym_elf *lru_head, *lru_tail; /* head = most recently used */
	struct sym_stats stats;
	struct ksyms *ksyms;
	int ksyms_err;
	bool ksyms_tried;
	char *kname; /* last demangled kernel name */
};

/* --- small helpers ------------------------------------------------------ */

static void account(struct symbolizer *sym, struct sym_elf *e)
{
	size_t b = sizeof(*e) + e->file_bytes + e->memo_bytes + e->str_bytes +
		   e->id.nloads * sizeof(*e->id.loads);

	sym->stats.cache_bytes = sym->stats.cache_bytes - e->bytes + b;
	e->bytes = b;
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

struct bytes_key {
	const void *p;
	size_t len;
};

static int memo_eq(const void *elem, const void *key)
{
	return ((const struct memo_rec *)elem)->offset == *(const uint64_t *)key;
}

static int istr_eq(const void *elem, const void *key)
{
	return !strcmp(((const struct istr *)elem)->s, key);
}

static int alias_eq(const void *elem, const void *key)
{
	const struct sym_alias *a = elem;
	const uint64_t *k = key; /* dev, ino */

	return a->dev == k[0] && a->ino == k[1];
}

static int entry_eq(const void *elem, const void *key)
{
	const struct sym_elf *e = elem;
	const struct bytes_key *k = key;

	return e->key_len == k->len && !memcmp(e->key, k->p, k->len);
}

static htab_t table_new(htab_eq eq)
{
	return htab_create_alloc(16, elem_hash, eq, NULL, calloc, free);
}

/* Insert elem (hash set) unless an equal one is there: 0 or -ENOMEM. */
static int table_insert(htab_t t, void *elem, const void *key, uint64_t hash)
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
static uint64_t hash_bytes(const void *data, size_t len)
{
	return iterative_hash(data, len, 0);
}

static uint64_t hash_u64(uint64_t v)
{
	return iterative_hash(&v, sizeof(v), 0);
}

static void memo_clear(struct sym_elf *e)
{
	htab_traverse_noresize(e->memo, free_elem, NULL);
	htab_traverse_noresize(e->strs, free_elem, NULL);
	htab_empty(e->memo);
	htab_empty(e->strs);
	e->memo_bytes = 0;
	e->str_bytes = 0;
}

/* --- aliases ------------------------------------------------------------ */

static uint64_t alias_hash(uint64_t dev, uint64_t ino)
{
	return hash_u64(dev * 0x9e3779b97f4a7c15ULL ^ ino);
}

static struct sym_alias *alias_find(struct symbolizer *sym, uint64_t dev, uint64_t ino)
{
	const uint64_t key[2] = { dev, ino };

	return htab_find_with_hash(sym->aliases, key, (hashval_t)alias_hash(dev, ino));
}

static bool alias_fresh(const struct sym_alias *a, const struct stat *st)
{
	return a->size == (int64_t)st->st_size && a->mtime.tv_sec == st->st_mtim.tv_sec &&
	       a->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Unlink from its owner's list and the table, and free. */
static void alias_drop(struct symbolizer *sym, struct sym_alias *a)
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

static void negatives_clear(struct symbolizer *sym)
{
	while (sym->negatives)
		alias_drop(sym, sym->negatives);
}

/* Remember (dev, ino) -> e (or, e == NULL, -> err). Best effort. */
static void alias_add(struct symbolizer *sym, uint64_t dev, uint64_t ino, const struct stat *st,
		      struct sym_elf *e, int err)
{
	struct sym_alias *a = alias_find(sym, dev, ino);

	if (a)
		alias_drop(sym, a);
	if (!e && sym->nnegatives >= SYM_NEG_MAX)
		negatives_clear(sym);
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
	if (table_insert(sym->aliases, a, (const uint64_t[2]){ dev, ino }, a->hash)) {
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
static void aliases_add(struct symbolizer *sym, const struct sym_binary *bin, const struct stat *st,
			struct sym_elf *e, int err)
{
	alias_add(sym, st->st_dev, st->st_ino, st, e, err);
	if (bin->inode && (bin->dev != st->st_dev || bin->inode != st->st_ino))
		alias_add(sym, bin->dev, bin->inode, st, e, err);
}

/* --- entries ------------------------------------------------------------ */

static struct sym_elf *entry_find(struct symbolizer *sym, const unsigned char *key, size_t len)
{
	struct bytes_key k = { key, len };

	return htab_find_with_hash(sym->by_key, &k, (hashval_t)hash_bytes(key, len));
}

static void entry_destroy(struct symbolizer *sym, struct sym_elf *e)
{
	while (e->aliases)
		alias_drop(sym, e->aliases);
	htab_remove_elt_with_hash(sym->by_key, &(struct bytes_key){ e->key, e->key_len },
				  (hashval_t)e->hash);
	lru_unlink(sym, e);
	memo_clear(e);
	htab_delete(e->memo);
	htab_delete(e->strs);
	symdw_close(e->dw);
	elfbin_ident_release(&e->id);
	sym->stats.cache_bytes -= e->bytes;
	sym->stats.binaries_cached--;
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
			entry_destroy(sym, e);
			sym->stats.evictions++;
		}
		e = prev;
	}
}

static int pin(struct symbolizer *sym, struct sym_elf *e, struct sym_elf **out)
{
	e->pins++;
	lru_unlink(sym, e);
	lru_push_front(sym, e);
	*out = e;
	evict(sym);
	return 0;
}

static size_t make_key(const struct elf_ident *id, const struct stat *st, unsigned char *key)
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
static int entry_create(struct symbolizer *sym, const struct sym_binary *bin, int fd,
			const struct stat *st, struct elf_ident *id, const unsigned char *key,
			size_t key_len, struct sym_elf **out)
{
	struct sym_elf *e;
	char *debug = NULL;
	struct stat dst;
	int err;

	e = calloc(1, sizeof(*e));
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	e->memo = table_new(memo_eq);
	e->strs = table_new(istr_eq);
	if (!e->memo || !e->strs) {
		close(fd);
		err = -ENOMEM;
		goto fail;
	}
	memcpy(e->key, key, key_len);
	e->key_len = key_len;
	elfbin_hex(id->build_id, id->build_id_len, e->build_id);
	if (!id->has_dwarf) {
		err = elfbin_find_debug(sym->debug_dirs, bin, id, st, &debug);
		if (err == -ENOMEM) {
			close(fd);
			goto fail;
		}
	}
	err = symdw_open(fd, bin->path, debug, &e->dw);
	if (err) {
		free(debug);
		goto fail;
	}
	e->id = *id; /* take over the arrays */
	memset(id, 0, sizeof(*id));
	e->file_bytes = (size_t)st->st_size;
	if (debug && !stat(debug, &dst))
		e->file_bytes += (size_t)dst.st_size;
	free(debug);
	e->hash = hash_bytes(key, key_len);
	if (table_insert(sym->by_key, e, &(struct bytes_key){ key, key_len }, e->hash)) {
		symdw_close(e->dw);
		elfbin_ident_release(&e->id);
		err = -ENOMEM;
		goto fail;
	}
	lru_push_front(sym, e);
	sym->stats.binaries_cached++;
	sym->stats.binaries_opened++;
	account(sym, e);
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

/* --- public API --------------------------------------------------------- */

int sym_new(const struct sym_opts *opts, struct symbolizer **out)
{
	struct symbolizer *sym;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	sym->max_bytes = SYM_DEFAULT_CACHE_BYTES;
	if (opts) {
		if (opts->max_cache_bytes)
			sym->max_bytes = opts->max_cache_bytes;
		sym->no_demangle = opts->no_demangle;
		if (opts->debug_dirs && !(sym->debug_dirs = strdup(opts->debug_dirs)))
			goto nomem;
		if (opts->kallsyms_path && !(sym->kallsyms_path = strdup(opts->kallsyms_path)))
			goto nomem;
	}
	sym->by_key = table_new(entry_eq);
	sym->aliases = table_new(alias_eq);
	if (!sym->by_key || !sym->aliases)
		goto nomem;
	*out = sym;
	return 0;
nomem:
	if (sym->by_key)
		htab_delete(sym->by_key);
	if (sym->aliases)
		htab_delete(sym->aliases);
	free(sym->debug_dirs);
	free(sym->kallsyms_path);
	free(sym);
	return -ENOMEM;
}

void sym_free(struct symbolizer *sym)
{
	if (!sym)
		return;
	while (sym->lru_head)
		entry_destroy(sym, sym->lru_head);
	negatives_clear(sym);
	htab_delete(sym->by_key);
	htab_delete(sym->aliases);
	ksyms_free(sym->ksyms);
	free(sym->kname);
	free(sym->debug_dirs);
	free(sym->kallsyms_path);
	free(sym);
}

/* A cached answer for this mapping without opening anything? */
static struct sym_alias *warm_lookup(struct symbolizer *sym, const struct sym_binary *bin,
				     int *stat_err)
{
	bool via_map_files = false;
	struct sym_alias *a;
	struct stat st;

	*stat_err = elfbin_stat(bin, &st, &via_map_files);
	if (!*stat_err) {
		a = alias_find(sym, st.st_dev, st.st_ino);
		if (a && alias_fresh(a, &st))
			return a;
		if (a)
			alias_drop(sym, a); /* replaced or modified file */
	}
	if (bin->inode) {
		a = alias_find(sym, bin->dev, bin->inode);
		/* Trust the maps identity when the file cannot be checked
		 * (process gone) or only its path was found. */
		if (a && (*stat_err || !via_map_files || alias_fresh(a, &st)))
			return a;
	}
	return NULL;
}

int sym_elf_get(struct symbolizer *sym, const struct sym_binary *bin, struct sym_elf **out)
{
	unsigned char key[KEY_MAX];
	struct elf_ident id;
	struct sym_alias *a;
	struct sym_elf *e;
	struct stat st;
	size_t key_len;
	int err, fd;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!sym || !bin)
		return -EINVAL;

	a = warm_lookup(sym, bin, &err);
	if (a) {
		if (!a->elf)
			return a->err;
		sym->stats.cache_hits++;
		return pin(sym, a->elf, out);
	}
	if (err && err != -EACCES && err != -EPERM)
		return err; /* nothing to open */

	err = elfbin_open(bin, &fd, &st);
	if (err)
		return err;
	err = elfbin_ident(fd, &id);
	if (err) {
		if (err == -ENOEXEC)
			aliases_add(sym, bin, &st, NULL, err);
		close(fd);
		return err;
	}
	key_len = make_key(&id, &st, key);
	e = entry_find(sym, key, key_len);
	if (e) {
		/* same build under another name (copy, container, ...) */
		close(fd);
		elfbin_ident_release(&id);
		aliases_add(sym, bin, &st, e, 0);
		sym->stats.cache_hits++;
		return pin(sym, e, out);
	}
	err = entry_create(sym, bin, fd, &st, &id, key, key_len, &e);
	elfbin_ident_release(&id);
	if (err) {
		if (err == -ENOEXEC)
			aliases_add(sym, bin, &st, NULL, err);
		return err;
	}
	aliases_add(sym, bin, &st, e, 0);
	return pin(sym, e, out);
}

void sym_elf_put(struct symbolizer *sym, struct sym_elf *elf)
{
	(void)sym;
	/* Eviction waits for the next sym_elf_get(), so strings returned
	 * before this put stay valid until then. */
	if (elf && elf->pins)
		elf->pins--;
}

const char *sym_elf_build_id(const struct sym_elf *elf)
{
	return elf ? elf->build_id : "";
}

bool sym_elf_has_lines(const struct sym_elf *elf)
{
	return elf && symdw_has_lines(elf->dw);
}

static struct memo_rec *memo_find(struct sym_elf *e, uint64_t offset)
{
	return htab_find_with_hash(e->memo, &offset, (hashval_t)hash_u64(offset));
}

/* Intern s in the entry; NULL on allocation failure. */
static const char *intern(struct sym_elf *e, const char *s)
{
	size_t len = strlen(s) + 1;
	uint64_t h = hash_bytes(s, len - 1);
	struct istr *is = htab_find_with_hash(e->strs, s, (hashval_t)h);

	if (is)
		return is->s;
	is = malloc(sizeof(*is) + len);
	if (!is)
		return NULL;
	is->hash = h;
	memcpy(is->s, s, len);
	if (table_insert(e->strs, is, is->s, h)) {
		free(is);
		return NULL;
	}
	e->str_bytes += sizeof(*is) + len;
	return is->s;
}

static int resolve_uncached(struct symbolizer *sym, struct sym_elf *e, uint64_t offset,
			    struct sym_frame *frames)
{
	struct symdw_frame raw[SYM_MAX_FRAMES];
	uint64_t vaddr;
	int n;

	if (elfbin_vaddr(&e->id, offset, &vaddr))
		return 0;
	n = symdw_resolve(e->dw, vaddr, raw, SYM_MAX_FRAMES);
	for (int i = 0; i < n; i++) {
		struct sym_frame *f = &frames[i];

		memset(f, 0, sizeof(*f));
		f->function = raw[i].name;
		f->file = raw[i].file;
		f->line = raw[i].line;
		f->column = raw[i].column;
		f->inlined = i < n - 1;
		if (raw[i].name && !sym->no_demangle && sym_is_mangled(raw[i].name)) {
			char *d = sym_demangle(raw[i].name);
			const char *in = d ? intern(e, d) : NULL;

			if (in) {
				f->function = in;
				f->system_name = raw[i].name;
			}
			free(d);
		}
	}
	return n;
}

int sym_elf_resolve(struct symbolizer *sym, struct sym_elf *elf, uint64_t file_offset,
		    struct sym_frame *frames, int max)
{
	struct sym_frame local[SYM_MAX_FRAMES];
	const struct sym_frame *src;
	struct memo_rec *r;
	int n, skip;

	if (!sym || !elf || !frames || max <= 0)
		return -EINVAL;
	sym->stats.resolve_calls++;
	r = memo_find(elf, file_offset);
	if (r) {
		n = r->n;
		src = r->frames;
	} else {
		if (htab_elements(elf->memo) >= SYM_MEMO_MAX)
			memo_clear(elf);
		n = resolve_uncached(sym, elf, file_offset, local);
		src = local;
		r = malloc(sizeof(*r) + n * sizeof(*local));
		if (r) {
			r->hash = hash_u64(file_offset);
			r->offset = file_offset;
			r->n = n;
			memcpy(r->frames, local, n * sizeof(*local));
			if (table_insert(elf->memo, r, &file_offset, r->hash)) {
				free(r);
			} else {
				elf->memo_bytes += sizeof(*r) + n * sizeof(*local);
				src = r->frames;
			}
		}
		account(sym, elf);
	}
	if (!n)
		sym->stats.resolve_failures++;
	skip = n > max ? n - max : 0;
	memcpy(frames, src + skip, (n - skip) * sizeof(*frames));
	return n - skip;
}

int sym_kernel_resolve(struct symbolizer *sym, uint64_t addr, struct sym_frame *frame)
{
	const char *name, *module;

	if (!sym || !frame)
		return -EINVAL;
	if (!sym->ksyms_tried) {
		sym->ksyms_err = ksyms_load(
			sym->kallsyms_path ? sym->kallsyms_path : "/proc/kallsyms", &sym->ksyms);
		/* retry later only after transient failures */
		sym->ksyms_tried = sym->ksyms_err != -ENOMEM;
		if (sym->ksyms_err)
			sym_debug("symbolizer: kallsyms: %s", strerror(-sym->ksyms_err));
	}
	if (sym->ksyms_err)
		return sym->ksyms_err;
	sym->stats.resolve_calls++;
	memset(frame, 0, sizeof(*frame));
	if (!ksyms_lookup(sym->ksyms, addr, &name, &module, NULL)) {
		sym->stats.resolve_failures++;
		return 0;
	}
	frame->function = name;
	frame->file = module;
	if (!sym->no_demangle && sym_is_mangled(name)) {
		free(sym->kname);
		sym->kname = sym_demangle(name);
		if (sym->kname) {
			frame->function = sym->kname;
			frame->system_name = name;
		}
	}
	return 1;
}

void sym_get_stats(const struct symbolizer *sym, struct sym_stats *out)
{
	if (!out)
		return;
	if (!sym) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = sym->stats;
}
