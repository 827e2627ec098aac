// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"
#include "kallsyms_internal.h"

/*
 * Memory: a kernel has some 60 000 functions (and since 6.2 as many
 * __pfx_ padding symbols): 16 bytes per kept symbol plus its name, about
 * 2 MB for a distribution kernel; the parse's own arrays are freed.
 */

/* One line of the file while parsing. */
struct kraw {
	uint64_t addr;
	uint32_t name_off; /* into the parse's names blob; text symbols only */
	uint32_t mod;	   /* 0 = core kernel, else index into mods */
	uint32_t seq;	   /* line order, for a stable sort */
	uint8_t text;
	uint8_t rank; /* preference among symbols at the same address */
	uint8_t pfx;  /* __pfx_NAME: the padding before NAME, a boundary */
};

struct kparse {
	struct kraw *raw;
	size_t nraw, capraw;
	char *names;
	size_t names_len, names_cap;
	char **mods;
	size_t nmods, capmods;
	bool nonzero;
	uint64_t skip_lo, skip_hi; /* lines in [skip_lo, skip_hi) left out */
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int names_add(struct kparse *kp, const char *s, size_t len, uint32_t *off)
{
	if (kp->names_len + len + 1 > UINT32_MAX)
		return -E2BIG;
	if (kp->names_len + len + 1 > kp->names_cap) {
		size_t cap = kp->names_cap ? kp->names_cap * 2 : 1 << 16;
		char *n;

		while (cap < kp->names_len + len + 1)
			cap *= 2;
		n = realloc(kp->names, cap);
		if (!n)
			return -ENOMEM;
		kp->names = n;
		kp->names_cap = cap;
	}
	memcpy(kp->names + kp->names_len, s, len);
	kp->names[kp->names_len + len] = '\0';
	*off = (uint32_t)kp->names_len;
	kp->names_len += len + 1;
	return 0;
}

/* Index of the module name (1-based), adding it when new. */
static int mod_index(struct kparse *kp, const char *s, size_t len, uint32_t *idx)
{
	char *copy;

	/* Symbols of one module come together: search from the end. */
	for (size_t i = kp->nmods; i > 1; i--) {
		const char *m = kp->mods[i - 1];

		if (strlen(m) == len && !memcmp(m, s, len)) {
			*idx = (uint32_t)(i - 1);
			return 0;
		}
	}
	if (kp->nmods == 0)
		kp->nmods = 1; /* slot 0 is the core kernel */
	if (kp->nmods >= kp->capmods) {
		size_t cap = kp->capmods ? kp->capmods * 2 : 16;
		char **m = realloc(kp->mods, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		if (!kp->capmods)
			m[0] = NULL;
		kp->mods = m;
		kp->capmods = cap;
	}
	copy = strndup(s, len);
	if (!copy)
		return -ENOMEM;
	kp->mods[kp->nmods] = copy;
	*idx = (uint32_t)kp->nmods++;
	return 0;
}

static uint8_t type_rank(char type)
{
	switch (type) {
	case 'T':
		return 3;
	case 'W':
		return 2;
	case 't':
		return 1;
	default:
		return 0;
	}
}

static int parse_line(struct kparse *kp, char *line)
{
	struct kraw r = { 0 };
	char *p = line, *end, *name, *mod = NULL;
	size_t name_len, mod_len = 0;
	char type;
	int err;

	while (is_space(*p))
		p++;
	errno = 0;
	r.addr = strtoull(p, &end, 16);
	if (end == p || errno || !is_space(*end))
		return 0; /* malformed: skip */
	p = end;
	while (is_space(*p))
		p++;
	type = *p;
	if (!type || !is_space(p[1]))
		return 0;
	p++;
	while (is_space(*p))
		p++;
	name = p;
	while (*p && !is_space(*p))
		p++;
	name_len = p - name;
	if (!name_len)
		return 0;
	while (is_space(*p))
		p++;
	if (*p == '[') {
		mod = ++p;
		while (*p && *p != ']')
			p++;
		mod_len = p - mod;
	}

	if (r.addr)
		kp->nonzero = true;
	if (r.addr >= kp->skip_lo && r.addr < kp->skip_hi)
		return 0;
	r.text = type == 't' || type == 'T' || type == 'w' || type == 'W';
	r.rank = type_rank(type);
	/* Function padding (CONFIG_FUNCTION_PADDING, 6.2+): not a function,
	 * but what lies before one; its samples (call thunks) are that one's. */
	r.pfx = r.text && name_len > 6 && !memcmp(name, "__pfx_", 6);
	r.text &= !r.pfx;
	if (mod && mod_len) {
		err = mod_index(kp, mod, mod_len, &r.mod);
		if (err)
			return err;
	}
	if (r.text) {
		err = names_add(kp, name, name_len, &r.name_off);
		if (err)
			return err;
	}
	if (kp->nraw >= kp->capraw) {
		size_t cap = kp->capraw ? kp->capraw * 2 : 4096;
		struct kraw *n = realloc(kp->raw, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		kp->raw = n;
		kp->capraw = cap;
	}
	if (kp->nraw >= UINT32_MAX)
		return -E2BIG;
	r.seq = (uint32_t)kp->nraw;
	kp->raw[kp->nraw++] = r;
	return 0;
}

static int kraw_cmp(const void *a, const void *b)
{
	const struct kraw *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Is candidate c a better name than the current best b (same address)? */
static bool better(const struct kparse *kp, const struct kraw *c, const struct kraw *b)
{
	if (c->rank != b->rank)
		return c->rank > b->rank;
	return leading_underscores(kp->names + c->name_off) <
	       leading_underscores(kp->names + b->name_off);
}

/* Append s to the kept names: its offset there. */
static int keep_name(struct ksyms *ks, size_t *len, size_t *cap, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;

	if (*len + n > UINT32_MAX)
		return -E2BIG;
	if (*len + n > *cap) {
		size_t c = *cap ? *cap * 2 : 1 << 16;
		char *p;

		while (c < *len + n)
			c *= 2;
		p = realloc(ks->names, c);
		if (!p)
			return -ENOMEM;
		ks->names = p;
		*cap = c;
	}
	memcpy(ks->names + *len, s, n);
	*off = (uint32_t)*len;
	*len += n;
	return 0;
}

/* Note the module of the symbol just added at index i. */
static int note_module(struct ksyms *ks, size_t *cap, uint32_t i, uint32_t mod)
{
	if (ks->nruns && ks->runs[ks->nruns - 1].mod == mod)
		return 0;
	if (ks->nruns == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct kmod_run *r = realloc(ks->runs, c * sizeof(*r));

		if (!r)
			return -ENOMEM;
		ks->runs = r;
		*cap = c;
	}
	ks->runs[ks->nruns++] = (struct kmod_run){ i, mod };
	return 0;
}

/* Shrink an array to its use: what is freed is given back. */
static void *shrink(void *p, size_t bytes)
{
	void *q = realloc(p, bytes ? bytes : 1);

	return q ? q : p;
}

static int build(struct kparse *kp, struct ksyms *ks)
{
	size_t i = 0, n = 0, nregions = kp->nmods ? kp->nmods : 1;
	size_t names_len = 0, names_cap = 0, runs_cap = 0;
	uint64_t *region_last;
	uint64_t pfx_addr = 0; /* of the padding just before, 0: none */
	int err = 0;

	if (kp->nraw)
		qsort(kp->raw, kp->nraw, sizeof(*kp->raw), kraw_cmp);
	/* highest address of any symbol of each region */
	region_last = calloc(nregions, sizeof(*region_last));
	if (!region_last)
		return -ENOMEM;
	for (size_t k = 0; k < kp->nraw; k++)
		region_last[kp->raw[k].mod] = kp->raw[k].addr;
	ks->syms = malloc((kp->nraw ? kp->nraw : 1) * sizeof(*ks->syms));
	if (!ks->syms) {
		free(region_last);
		return -ENOMEM;
	}
	while (i < kp->nraw && !err) {
		size_t j = i;
		const struct kraw *best = NULL;
		bool pfx = false;
		uint64_t end;

		/* the group of symbols at this address */
		while (j < kp->nraw && kp->raw[j].addr == kp->raw[i].addr)
			j++;
		for (size_t k = i; k < j; k++) {
			const struct kraw *c = &kp->raw[k];

			pfx |= c->pfx;
			if (c->text && (!best || better(kp, c, best)))
				best = c;
		}
		if (best) {
			struct ksym *s = &ks->syms[n];

			s->addr = best->addr;
			/* up to the next symbol; the last of its region has
			 * no known size: only its own address */
			end = j < kp->nraw && best->addr < region_last[best->mod] ? kp->raw[j].addr
										  : best->addr + 1;
			s->size = end - best->addr < (1u << 24) ? end - best->addr : (1u << 24) - 1;
			s->pad =
				pfx_addr && best->addr - pfx_addr < 256 ? best->addr - pfx_addr : 0;
			err = keep_name(ks, &names_len, &names_cap, kp->names + best->name_off,
					&s->name_off);
			if (!err)
				err = note_module(ks, &runs_cap, (uint32_t)n, best->mod);
			n++;
		}
		pfx_addr = pfx && !best ? kp->raw[i].addr : 0;
		i = j;
	}
	free(region_last);
	if (err)
		return err;
	ks->n = n;
	ks->syms = shrink(ks->syms, n * sizeof(*ks->syms));
	ks->names = shrink(ks->names, names_len);
	ks->runs = shrink(ks->runs, ks->nruns * sizeof(*ks->runs));
	return 0;
}

static void kparse_release(struct kparse *kp)
{
	free(kp->raw);
	free(kp->names);
	for (size_t i = 1; i < kp->nmods; i++)
		free(kp->mods[i]);
	free(kp->mods);
}

int ksyms_load(const char *path, struct ksyms **out)
{
	return ksyms_load_outside(path, 0, 0, out);
}

int ksyms_load_outside(const char *path, uint64_t lo, uint64_t hi, struct ksyms **out)
{
	struct kparse kp = { .skip_lo = lo, .skip_hi = hi };
	struct ksyms *ks = NULL;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err = 0;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		err = parse_line(&kp, line);
		if (err)
			goto out;
	}
	if (ferror(f)) {
		err = -EIO;
		goto out;
	}
	if (kp.nraw && !kp.nonzero) {
		err = -EPERM;
		goto out;
	}
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto out;
	}
	err = build(&kp, ks);
	if (err)
		goto out;
	if (!ks->n) {
		err = -ENODATA;
		goto out;
	}
	/* hand the module names over */
	ks->mods = kp.mods;
	ks->nmods = kp.nmods;
	kp.mods = NULL;
	kp.nmods = 0;
	*out = ks;
	ks = NULL;
out:
	if (ks) {
		free(ks->syms);
		free(ks->names);
		free(ks->runs);
		free(ks);
	}
	kparse_release(&kp);
	free(line);
	fclose(f);
	return err;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->names);
	free(ks->runs);
	for (size_t i = 1; i < ks->nmods; i++)
		free(ks->mods[i]);
	free(ks->mods);
	free(ks);
}

size_t ksyms_count(const struct ksyms *ks)
{
	return ks ? ks->n : 0;
}

/* The module of symbol i. */
static uint32_t module_of(const struct ksyms *ks, size_t i)
{
	size_t lo = 0, hi = ks->nruns;

	/* last run with first <= i */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->runs[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return ks->nruns ? ks->runs[lo].mod : 0;
}

int ksyms_lookup(const struct ksyms *ks, uint64_t addr, const char **name, const char **module,
		 uint64_t *start)
{
	size_t lo = 0, hi;
	const struct ksym *s;
	uint32_t mod;

	if (!ks || !ks->n)
		return 0;
	if (addr < ks->syms[0].addr) {
		hi = 0; /* only the padding of the first symbol */
	} else {
		hi = ks->n;
		/* last symbol with s->addr <= addr */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (ks->syms[mid].addr <= addr)
				lo = mid;
			else
				hi = mid;
		}
		s = &ks->syms[lo];
		if (addr - s->addr < s->size)
			goto found;
		hi = lo + 1;
	}
	/* in the gap before the next symbol: its padding, if it has one */
	if (hi >= ks->n || ks->syms[hi].addr - addr > ks->syms[hi].pad)
		return 0;
	lo = hi;
	s = &ks->syms[lo];
found:
	mod = module_of(ks, lo);
	if (name)
		*name = ks->names + s->name_off;
	if (module)
		*module = mod && mod < ks->nmods ? ks->mods[mod] : NULL;
	if (start)
		*start = s->addr;
	return 1;
}

int sym_kernel_build_id(char *buf, size_t size)
{
	unsigned char notes[4096];
	ssize_t n;
	size_t pos = 0;
	int fd;

	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, notes, sizeof(notes));
	close(fd);
	if (n < 0)
		return -errno;
	while (pos + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;
		size_t name_off = pos + 12, desc_off;

		memcpy(&namesz, notes + pos, 4);
		memcpy(&descsz, notes + pos + 4, 4);
		memcpy(&type, notes + pos + 8, 4);
		desc_off = name_off + ((namesz + 3) & ~3u);
		if (desc_off + descsz > (size_t)n)
			break;
		if (type == 3 && namesz == 4 && !memcmp(notes + name_off, "GNU", 4)) {
			if (size < descsz * 2 + 1)
				return -ENOSPC;
			for (uint32_t i = 0; i < descsz; i++)
				sprintf(buf + 2 * i, "%02x", notes[desc_off + i]);
			return 0;
		}
		pos = desc_off + ((descsz + 3) & ~3u);
	}
	return -ENOENT;
}
