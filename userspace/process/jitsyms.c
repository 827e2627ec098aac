// SPDX-License-Identifier: BSD-2-Clause
/*
 * JIT code symbols (jitsyms.h): perf maps and jitdump files parsed into a
 * sorted table of non-overlapping ranges, the later record winning where
 * ranges overlap; reading them for a live process as hostile input; and
 * the signature of those files the registry's cache compares.
 *
 * jitdump: tools/perf/Documentation/jitdump-specification.txt in Linux.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "jitsyms.h"
#include "util/compare.h"

struct jit_range {
	uint64_t start, end; /* [start, end) */
	uint32_t name;	     /* offset in names */
};

struct jit_syms {
	struct jit_range *ranges; /* sorted, non-overlapping */
	size_t n;
	char *names; /* NUL-terminated names, back to back */
	size_t names_len, names_cap;
	size_t records; /* accepted so far, against JITSYMS_MAX_ENTRIES */
	size_t skipped;
};

/* The records of one parse, in file order (the later wins). */
struct jit_recs {
	struct jit_range *items;
	size_t n, cap;
};

struct jit_syms *jitsyms_new(void)
{
	return calloc(1, sizeof(struct jit_syms));
}

void jitsyms_free(struct jit_syms *js)
{
	if (!js)
		return;
	free(js->ranges);
	free(js->names);
	free(js);
}

size_t jitsyms_count(const struct jit_syms *js)
{
	return js ? js->n : 0;
}

size_t jitsyms_bytes(const struct jit_syms *js)
{
	return js ? sizeof(*js) + js->n * sizeof(*js->ranges) + js->names_cap : 0;
}

size_t jitsyms_skipped(const struct jit_syms *js)
{
	return js ? js->skipped : 0;
}

const char *jitsyms_find(const struct jit_syms *js, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!js)
		return NULL;
	hi = js->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < js->ranges[mid].start)
			hi = mid;
		else if (addr >= js->ranges[mid].end)
			lo = mid + 1;
		else
			return js->names + js->ranges[mid].name;
	}
	return NULL;
}

/* Append a name, bounded and printable; its offset, or -ENOMEM. */
static int64_t add_name(struct jit_syms *js, const char *s, size_t len)
{
	size_t off = js->names_len;

	if (len > JITSYMS_NAME_MAX)
		len = JITSYMS_NAME_MAX;
	if (ARRAY_RESERVE(js->names, &js->names_cap, off + len + 1))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		js->names[off + i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	js->names[off + len] = '\0';
	js->names_len = off + len + 1;
	return (int64_t)off;
}

/* Whether one more record fits under the cap. */
static bool room(struct jit_syms *js, const struct jit_recs *recs)
{
	return js->records + recs->n < JITSYMS_MAX_ENTRIES;
}

static int add_rec(struct jit_recs *recs, uint64_t start, uint64_t size, uint32_t name)
{
	if (ARRAY_RESERVE(recs->items, &recs->cap, recs->n + 1))
		return -ENOMEM;
	recs->items[recs->n++] =
		(struct jit_range){ .start = start, .end = start + size, .name = name };
	return 0;
}

/* Index of the first of the n sorted bounds b that is >= x. */
static size_t bound_at(const uint64_t *b, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first segment from i on not named yet (union-find, path halving). */
static size_t unnamed(size_t *next, size_t i)
{
	while (next[i] != i) {
		next[i] = next[next[i]];
		i = next[i];
	}
	return i;
}

/*
 * Merge the records of a parse into js's ranges. The borders of every
 * range cut the address space into segments; records name them latest
 * first (this parse's from its last, then the table's, which never
 * overlap), each naming only segments still unnamed. O(m log m). 0 or
 * -ENOMEM (js unchanged).
 */
static int merge(struct jit_syms *js, struct jit_recs *recs)
{
	size_t m = js->n + recs->n, nb = 0, nout = 0;
	uint64_t *b = NULL;
	size_t *next = NULL;
	uint32_t *name = NULL;
	struct jit_range *out = NULL;
	int err = -ENOMEM;

	if (!recs->n)
		return 0;
	b = malloc(2 * m * sizeof(*b));
	next = malloc(2 * m * sizeof(*next));
	name = malloc(2 * m * sizeof(*name));
	out = malloc(2 * m * sizeof(*out));
	if (!b || !next || !name || !out)
		goto out;
	for (size_t k = 0; k < m; k++) {
		const struct jit_range *r = k < js->n ? &js->ranges[k] : &recs->items[k - js->n];

		b[nb++] = r->start;
		b[nb++] = r->end;
	}
	sort_array(b, nb, sizeof(*b), cmp_u64);
	nb = 0; /* unique */
	for (size_t i = 0; i < 2 * m; i++)
		if (!nb || b[i] != b[nb - 1])
			b[nb++] = b[i];
	for (size_t i = 0; i < nb; i++)
		next[i] = i;
	for (size_t k = m; k-- > 0;) {
		const struct jit_range *r = k >= js->n ? &recs->items[k - js->n] : &js->ranges[k];
		size_t end = bound_at(b, nb, r->end);

		for (size_t i = unnamed(next, bound_at(b, nb, r->start)); i < end;
		     i = unnamed(next, i + 1)) {
			name[i] = r->name;
			next[i] = i + 1;
		}
	}
	for (size_t i = 0; i + 1 < nb; i++) {
		if (next[i] == i)
			continue; /* no record covers it */
		if (nout && out[nout - 1].end == b[i] && out[nout - 1].name == name[i])
			out[nout - 1].end = b[i + 1];
		else
			out[nout++] = (struct jit_range){ .start = b[i],
							  .end = b[i + 1],
							  .name = name[i] };
	}
	free(js->ranges);
	js->ranges = out;
	js->n = nout;
	js->records += recs->n;
	out = NULL;
	err = 0;
out:
	free(b);
	free(next);
	free(name);
	free(out);
	return err;
}

/* End of a parse: merge, or undo the names it added. */
static int finish(struct jit_syms *js, struct jit_recs *recs, size_t names_len, int err)
{
	if (!err)
		err = merge(js, recs);
	if (err)
		js->names_len = names_len;
	else
		err = (int)recs->n;
	free(recs->items);
	return err;
}

/* Hex number with optional 0x, at least one digit, no overflow; then a
 * blank or the end of the line. */
static int parse_hex(const char **pp, const char *end, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	int digits = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end; p++, digits++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (x > UINT64_MAX >> 4)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	if (!digits || (p < end && *p != ' ' && *p != '\t'))
		return -EINVAL;
	*v = x;
	*pp = p;
	return 0;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* One "START SIZE name" line: 1 added, 0 ignored, -EINVAL, -ENOMEM. */
static int perfmap_line(struct jit_syms *js, struct jit_recs *recs, const char *p, const char *end)
{
	uint64_t start, size;
	int64_t name;

	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	p = skip_blanks(p, end);
	if (p == end)
		return 0; /* blank line */
	if (parse_hex(&p, end, &start))
		return -EINVAL;
	p = skip_blanks(p, end);
	if (parse_hex(&p, end, &size))
		return -EINVAL;
	p = skip_blanks(p, end);
	if (p == end || size > UINT64_MAX - start)
		return -EINVAL;
	if (!size)
		return 0;
	name = add_name(js, p, (size_t)(end - p));
	if (name < 0 || add_rec(recs, start, size, (uint32_t)name))
		return -ENOMEM;
	return 1;
}

int jitsyms_parse_perfmap(const char *text, size_t len, struct jit_syms *js)
{
	const char *p = text, *end = text + len;
	struct jit_recs recs = { 0 };
	size_t names_len = js->names_len;
	int err = 0;

	if (!text && len)
		return -EINVAL;
	while (p < end && room(js, &recs)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		int r = perfmap_line(js, &recs, p, eol);

		if (r == -ENOMEM) {
			err = r;
			break;
		}
		if (r < 0)
			js->skipped++;
		p = nl ? nl + 1 : end;
	}
	return finish(js, &recs, names_len, err);
}

#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_HEADER_SIZE 40
#define JITDUMP_RECORD_HEADER 16

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* One record body: 1 added, 0 ignored, -EINVAL malformed, -ENOMEM. */
static int jitdump_record(struct jit_syms *js, struct jit_recs *recs, struct hashmap *idx,
			  uint32_t id, const uint8_t *b, size_t blen)
{
	uint64_t addr, size, index;
	const uint8_t *nul;
	int64_t name;
	void *v;

	if (id == 0) { /* JIT_CODE_LOAD */
		/* pid, tid, vma, code_addr, code_size, code_index, name\0, code */
		if (blen < 40)
			return -EINVAL;
		addr = rd64(b + 16);
		size = rd64(b + 24);
		index = rd64(b + 32);
		nul = memchr(b + 40, '\0', blen - 40);
		if (!nul || size > UINT64_MAX - addr)
			return -EINVAL;
		if (!size)
			return 0;
		name = add_name(js, (const char *)b + 40, (size_t)(nul - (b + 40)));
		if (name < 0 || add_rec(recs, addr, size, (uint32_t)name))
			return -ENOMEM;
		if (hm_set_u64(idx, index, (void *)(uintptr_t)((uint64_t)name + 1)))
			return -ENOMEM;
		return 1;
	}
	if (id == 1) { /* JIT_CODE_MOVE */
		/* pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index */
		if (blen < 48)
			return -EINVAL;
		addr = rd64(b + 24);
		size = rd64(b + 32);
		index = rd64(b + 40);
		if (size > UINT64_MAX - addr)
			return -EINVAL;
		if (hm_find_u64(idx, index, &v))
			return -EINVAL; /* no load of that code */
		if (!size)
			return 0;
		if (add_rec(recs, addr, size, (uint32_t)((uintptr_t)v - 1)))
			return -ENOMEM;
		return 1;
	}
	return 0; /* DEBUG_INFO, CLOSE, UNWINDING_INFO, newer ones */
}

int jitsyms_parse_jitdump(const void *data, size_t len, struct jit_syms *js)
{
	const uint8_t *d = data;
	struct jit_recs recs = { 0 };
	struct hashmap *idx; /* code_index -> name offset + 1, for moves */
	size_t names_len = js->names_len, off;
	int err = 0;

	/* magic, version, total_size, elf_mach, pad1, pid, timestamp, flags */
	if (!d || len < JITDUMP_HEADER_SIZE || rd32(d) != JITDUMP_MAGIC || rd32(d + 4) != 1 ||
	    rd32(d + 8) < JITDUMP_HEADER_SIZE)
		return -EINVAL;
	idx = hm_new_u64();
	if (!idx)
		return -ENOMEM;
	off = rd32(d + 8);
	while (off < len && room(js, &recs)) {
		uint32_t id, total;
		int r;

		if (len - off < JITDUMP_RECORD_HEADER) {
			js->skipped++; /* cut short: still being written */
			break;
		}
		id = rd32(d + off);
		total = rd32(d + off + 4);
		if (total < JITDUMP_RECORD_HEADER || total > len - off) {
			js->skipped++;
			break;
		}
		r = jitdump_record(js, &recs, idx, id, d + off + JITDUMP_RECORD_HEADER,
				   total - JITDUMP_RECORD_HEADER);
		if (r == -ENOMEM) {
			err = r;
			break;
		}
		if (r < 0)
			js->skipped++;
		off += total;
	}
	hm_free(idx);
	return finish(js, &recs, names_len, err);
}
