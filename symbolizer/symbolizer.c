// SPDX-License-Identifier: BSD-2-Clause
/*
 * The symbolizer's public API (ebprof/symbolizer.h): a binary is found in
 * the cache (sym_cache.c) through the (device, inode) it is seen under, so
 * a warm sym_elf_get() costs one stat() and two hash lookups; each entry
 * memoises its resolved offsets; kernel addresses go to kallsyms.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libiberty/hashtab.h>

#include <ebprof/symbolizer.h>

#include "demangle.h"
#include "sym_cache.h"
#include "sym_guard.h"
#include "sym_log.h"

int sym_new(const struct sym_opts *opts, struct symbolizer **out)
{
	struct symbolizer *sym;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	if (symg_install()) /* files cut short while mapped would kill us */
		sym_warn("symbolizer: no SIGBUS handler: %s", strerror(-symg_install()));
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	sym->max_bytes = SYM_DEFAULT_CACHE_BYTES;
	sym->recheck_s = SYM_RECHECK_S;
	if (opts) {
		if (opts->max_cache_bytes)
			sym->max_bytes = opts->max_cache_bytes;
		sym->no_demangle = opts->no_demangle;
		if (opts->debug_dirs && !(sym->debug_dirs = strdup(opts->debug_dirs)))
			goto nomem;
		if (opts->plain_debug_dir && !(sym->plain_dir = strdup(opts->plain_debug_dir)))
			goto nomem;
		if (opts->kallsyms_path && !(sym->kallsyms_path = strdup(opts->kallsyms_path)))
			goto nomem;
		if (opts->debuginfod_urls &&
		    opts->debuginfod_urls[strspn(opts->debuginfod_urls, " \t\n")]) {
			struct symdi_opts dopts = {
				.urls = opts->debuginfod_urls,
				.cache_dir = opts->debuginfod_cache,
				.cache_bytes = opts->debuginfod_cache_bytes,
				.timeout_ms = opts->debuginfod_timeout_ms,
			};
			/* Unusable URLs or cache: warned about; names come
			 * from local files only. */
			if (symdi_new(&dopts, &sym->di) == -ENOMEM)
				goto nomem;
			sym->di_wait = opts->debuginfod_wait;
		}
	}
	sym->by_key = symc_table_new(symc_entry_eq);
	sym->aliases = symc_table_new(symc_alias_eq);
	if (!sym->by_key || !sym->aliases)
		goto nomem;
	*out = sym;
	return 0;
nomem:
	if (sym->by_key)
		htab_delete(sym->by_key);
	if (sym->aliases)
		htab_delete(sym->aliases);
	symdi_free(sym->di);
	free(sym->debug_dirs);
	free(sym->plain_dir);
	free(sym->kallsyms_path);
	free(sym);
	return -ENOMEM;
}

void sym_free(struct symbolizer *sym)
{
	if (!sym)
		return;
	while (sym->lru_head)
		symc_entry_destroy(sym, sym->lru_head);
	while (sym->stale)
		symc_entry_destroy(sym, sym->stale);
	symc_negatives_clear(sym);
	symc_park_free(sym);
	htab_delete(sym->by_key);
	htab_delete(sym->aliases);
	ksyms_free(sym->ksyms);
	ksyms_core_free(sym->kcore);
	symdi_free(sym->di);
	free(sym->kname);
	free(sym->kcopy);
	free(sym->debug_dirs);
	free(sym->plain_dir);
	free(sym->kallsyms_path);
	free(sym);
}

/*
 * A cached answer for this mapping without opening anything? *replaced:
 * the file found by the mapping's path (not through map_files: the
 * process is gone) is another inode than the one mapped, a binary
 * upgraded on disk since; its path must not be used for this mapping.
 */
static struct sym_alias *warm_lookup(struct symbolizer *sym, const struct sym_binary *bin,
				     int *stat_err, bool *replaced)
{
	bool via_map_files = false;
	struct sym_alias *a;
	struct stat st;

	*stat_err = elfbin_stat(bin, &st, &via_map_files);
	*replaced = !*stat_err && !via_map_files && bin->inode && st.st_ino != bin->inode;
	if (!*stat_err && !*replaced) {
		a = symc_alias_find(sym, st.st_dev, st.st_ino);
		if (a && symc_alias_fresh(a, &st))
			return a;
		if (a)
			symc_alias_drop(sym, a); /* replaced or modified file */
	}
	if (bin->inode) {
		a = symc_alias_find(sym, bin->dev, bin->inode);
		/* Trust the maps identity when the file cannot be checked
		 * (process gone, path replaced) or only its path was found. */
		if (a && (*stat_err || *replaced || !via_map_files || symc_alias_fresh(a, &st)))
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
	bool replaced;
	int err, fd;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!sym || !bin)
		return -EINVAL;

	symc_refresh(sym);
	a = warm_lookup(sym, bin, &err, &replaced);
	if (a) {
		if (!a->elf)
			return a->err;
		sym->stats.cache_hits++;
		return symc_pin(sym, a->elf, out);
	}
	if (err && err != -EACCES && err != -EPERM)
		return err; /* nothing to open */
	if (replaced)
		return -ESTALE; /* its path names another binary now */

	err = elfbin_open(bin, &fd, &st);
	if (err)
		return err;
	err = elfbin_ident(fd, &id);
	if (err) {
		if (err == -ENOEXEC)
			symc_aliases_add(sym, bin, &st, NULL, err);
		close(fd);
		return err;
	}
	key_len = symc_make_key(&id, &st, key);
	e = symc_entry_find(sym, key, key_len);
	if (e) {
		/* same build under another name (copy, container, ...) */
		close(fd);
		elfbin_ident_release(&id);
		symc_aliases_add(sym, bin, &st, e, 0);
		sym->stats.cache_hits++;
		return symc_pin(sym, e, out);
	}
	err = symc_entry_create(sym, bin, fd, &st, &id, key, key_len, &e);
	elfbin_ident_release(&id);
	if (err) {
		if (err == -ENOEXEC)
			symc_aliases_add(sym, bin, &st, NULL, err);
		return err;
	}
	symc_aliases_add(sym, bin, &st, e, 0);
	return symc_pin(sym, e, out);
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

const char *sym_elf_debug_source(const struct sym_elf *elf)
{
	static const char *const names[] = {
		[SRC_DWARF] = "dwarf",		 [SRC_DEBUG_FILE] = "debug-file",
		[SRC_DEBUGINFOD] = "debuginfod", [SRC_MINIDEBUGINFO] = "minidebuginfo",
		[SRC_SYMTAB] = "symtab",	 [SRC_DYNSYM] = "dynsym",
	};

	return elf ? names[elf->source] : "none";
}

/* Open path as a binary and keep it when it carries build_id. */
static int get_if_build_id(struct symbolizer *sym, const char *path, const char *build_id,
			   struct sym_elf **out)
{
	struct sym_binary bin = { .path = path };
	int err = sym_elf_get(sym, &bin, out);

	if (err)
		return err;
	if (!strcmp((*out)->build_id, build_id))
		return 0;
	sym_elf_put(sym, *out);
	*out = NULL;
	return -ENOENT;
}

int sym_elf_get_by_build_id(struct symbolizer *sym, const char *build_id, const char *path,
			    struct sym_elf **out)
{
	const char *dirs = sym->debug_dirs ? sym->debug_dirs : "/usr/lib/debug";
	size_t n = strlen(build_id);
	char *p = NULL;
	int err;

	*out = NULL;
	if (n < 4 || n > 2 * ELFBIN_MAX_BUILD_ID || strspn(build_id, "0123456789abcdef") != n)
		return -EINVAL;
	if (path && path[0] == '/' && !get_if_build_id(sym, path, build_id, out))
		return 0;
	while (*dirs) {
		size_t len = strcspn(dirs, ":");

		if (len && asprintf(&p, "%.*s/.build-id/%.2s/%s.debug", (int)len, dirs, build_id,
				    build_id + 2) >= 0) {
			err = get_if_build_id(sym, p, build_id, out);
			free(p);
			if (!err)
				return 0;
		}
		dirs += len + (dirs[len] == ':');
	}
	if (!sym->di)
		return -ENOENT;
	err = symdi_lookup(sym->di, build_id, sym->di_wait, &p);
	if (err)
		return err == -EAGAIN ? -ENOENT : err;
	err = get_if_build_id(sym, p, build_id, out);
	free(p);
	return err;
}

static struct memo_rec *memo_find(struct sym_elf *e, uint64_t offset)
{
	return htab_find_with_hash(e->memo, &offset, (hashval_t)symc_hash_u64(offset));
}

/* Intern s in the entry; NULL on allocation failure. */
static const char *intern(struct sym_elf *e, const char *s)
{
	return symc_intern(e->strs, &e->str_bytes, s);
}

/* The strings of a frame point into libdw's data, the file's mapping:
 * copied into the entry, so that no caller reads a file that may be cut
 * short under it (sym_guard.h). On allocation failure they stay. */
static void own_strings(struct sym_elf *e, struct sym_frame *f)
{
	const char **p[] = { &f->function, &f->system_name, &f->file };

	for (size_t k = 0; k < sizeof(p) / sizeof(p[0]); k++) {
		const char *in = *p[k] ? intern(e, *p[k]) : NULL;

		if (in)
			*p[k] = in;
	}
}

static int resolve_uncached(struct symbolizer *sym, struct sym_elf *e, uint64_t offset,
			    struct sym_frame *frames)
{
	struct symdw_frame raw[SYM_MAX_FRAMES];
	uint64_t vaddr;
	int n;

	if (elfbin_vaddr(&e->id, offset, &vaddr))
		return 0;
	symdw_intern_units(e->dw, SYMDW_UNIT_WINDOW, symc_drop_entry_pages, e);
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
		own_strings(e, f);
	}
	return n;
}

int sym_elf_resolve(struct symbolizer *sym, struct sym_elf *elf, uint64_t file_offset,
		    struct sym_frame *frames, int max)
{
	struct sym_frame local[SYM_MAX_FRAMES];
	const struct sym_frame *src;
	struct memo_rec *r;
	struct symg g;
	bool first;
	int n, skip;

	if (!sym || !elf || !frames || max <= 0)
		return -EINVAL;
	sym->stats.resolve_calls++;
	r = memo_find(elf, file_offset); /* its strings are copies: safe to answer */
	if (r) {
		r->used = sym->round;
		n = r->n;
		src = r->frames;
	} else if (elf->truncated) { /* nothing more is read of it */
		sym->stats.resolve_failures++;
		return 0;
	} else {
		sym->stats.resolved++;
		if (htab_elements(elf->memo) >= SYM_MEMO_MAX)
			symc_memo_clear(elf);
		first = !elf->memo_bytes;
		sym->stats.first_reads += first;
		symg_enter(&g);
		n = resolve_uncached(sym, elf, file_offset, local);
		if (symc_leave(elf, &g)) { /* elf may be gone */
			sym->stats.resolve_failures++;
			return 0;
		}
		src = local;
		r = malloc(sizeof(*r) + n * sizeof(*local));
		if (r) {
			r->hash = symc_hash_u64(file_offset);
			r->offset = file_offset;
			r->used = sym->round;
			r->n = n;
			memcpy(r->frames, local, n * sizeof(*local));
			if (symc_table_insert(elf->memo, r, &file_offset, r->hash)) {
				free(r);
			} else {
				elf->memo_bytes += sizeof(*r) + n * sizeof(*local);
				src = r->frames;
			}
		}
		symc_account(sym, elf);
		/* the first lookup read the binary's tables whole: those pages
		 * go now, not after every binary of the stack was read too */
		if (first)
			symc_drop_entry_pages(elf);
	}
	if (!n)
		sym->stats.resolve_failures++;
	skip = n > max ? n - max : 0;
	memcpy(frames, src + skip, (n - skip) * sizeof(*frames));
	return n - skip;
}

/* The boot's file of the core kernel's symbols was cut short while read:
 * dropped, every symbol read from /proc/kallsyms instead (and the file
 * written again from it). */
static void truncated_core(struct symbolizer *sym)
{
	sym_warn("%s: truncated while being read; its symbols are dropped (read from "
		 "/proc/kallsyms instead)",
		 KALLSYMS_CORE_FILE);
	sym->stats.truncated++;
	ksyms_core_free(sym->kcore);
	sym->kcore = NULL;
	sym->kcore_touched = false;
	ksyms_free(sym->ksyms); /* only what lies outside the core's range */
	sym->ksyms = NULL;
	sym->ksyms_tried = false;
	sym->ksyms_err = 0;
}

/* The table that knows addr: the core kernel's from the boot's file
 * when it covers addr, else the rest of /proc/kallsyms (read once: all of
 * it when there is no boot's file, which is written from it). NULL with
 * the error in sym->ksyms_err, or 0 when nothing outside the core is. */
static const struct ksyms *kernel_table(struct symbolizer *sym, uint64_t addr)
{
	int err;

	if (!sym->kallsyms_path && !sym->kcore_tried) {
		sym->kcore_tried = true;
		err = ksyms_core_read(KALLSYMS_CORE_FILE, &sym->kcore);
		if (err == -EIO)
			truncated_core(sym);
		else if (err && err != -ENOENT)
			sym_debug("symbolizer: %s: %s", KALLSYMS_CORE_FILE, strerror(-err));
	}
	if (ksyms_core_covers(sym->kcore, addr)) {
		sym->kcore_touched = true;
		return ksyms_core_table(sym->kcore);
	}
	if (!sym->ksyms_tried) {
		uint64_t lo, hi;

		/* with the core's table at hand, only what lies outside it */
		ksyms_core_range(sym->kcore, &lo, &hi);
		sym->ksyms_err = ksyms_load_outside(sym->kallsyms_path ? sym->kallsyms_path
								       : "/proc/kallsyms",
						    lo, hi, &sym->ksyms);
		if (sym->kcore && sym->ksyms_err == -ENODATA)
			sym->ksyms_err = 0; /* no module: nothing outside is covered */
		/* retry later only after transient failures */
		sym->ksyms_tried = sym->ksyms_err != -ENOMEM;
		if (sym->ksyms_err)
			sym_debug("symbolizer: kallsyms: %s", strerror(-sym->ksyms_err));
		if (!sym->ksyms_err && !sym->kallsyms_path && !sym->kcore &&
		    (err = ksyms_core_write(KALLSYMS_CORE_FILE, sym->ksyms)))
			sym_debug("symbolizer: cannot keep the kernel's symbols in %s: %s",
				  KALLSYMS_CORE_FILE, strerror(-err));
	}
	return sym->ksyms_err ? NULL : sym->ksyms;
}

/* ksyms_lookup(), but a name of the core's table is copied out of its
 * file's mapping (guarded): 1, 0, or a negative errno. */
static int kernel_lookup(struct symbolizer *sym, const struct ksyms *ks, uint64_t addr,
			 const char **name, const char **module)
{
	int found;

	if (!sym->kcore || ks != ksyms_core_table(sym->kcore))
		return ksyms_lookup(ks, addr, name, module, NULL);
	found = ksyms_core_lookup(sym->kcore, addr, &sym->kcopy, &sym->kcopy_len);
	if (found != -EIO) {
		*name = sym->kcopy;
		*module = NULL;
		return found;
	}
	truncated_core(sym);
	ks = kernel_table(sym, addr);
	return ks ? ksyms_lookup(ks, addr, name, module, NULL) : 0;
}

int sym_kernel_resolve(struct symbolizer *sym, uint64_t addr, struct sym_frame *frame)
{
	const struct ksyms *ks;
	const char *name, *module;

	if (!sym || !frame)
		return -EINVAL;
	ks = kernel_table(sym, addr);
	sym->stats.resolve_calls += !ks && !sym->ksyms_err;
	sym->stats.resolve_failures += !ks && !sym->ksyms_err;
	if (!ks)
		return sym->ksyms_err;
	sym->stats.resolve_calls++;
	memset(frame, 0, sizeof(*frame));
	if (kernel_lookup(sym, ks, addr, &name, &module) <= 0) {
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
	if (sym->di) {
		struct symdi_stats ds;

		symdi_get_stats(sym->di, &ds);
		out->debuginfod_requests = ds.requests;
		out->debuginfod_found = ds.found;
		out->debuginfod_missing = ds.missing;
		out->debuginfod_errors = ds.errors;
		out->debuginfod_queued = ds.queued;
		out->debuginfod_cache_bytes = ds.cache_bytes;
	}
}
