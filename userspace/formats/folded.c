// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "util/hashmap.h"
#include "util/array.h"
#include "util/compare.h"

#define KERNEL_MAPPING "[kernel.kallsyms]"

struct folded_line {
	char *text; /* owned; also the key in the map */
	int64_t value;
};

struct folded {
	struct hashmap *map; /* text -> index in lines */
	struct folded_line *lines;
	size_t nlines, cap_lines;
	char *buf; /* line being built */
	size_t len, cap;
};

static int buf_reserve(struct folded *f, size_t more)
{
	size_t cap = f->cap ? f->cap : 256;
	char *b;

	if (more > SIZE_MAX / 2 - f->len)
		return -ENOMEM;
	if (f->len + more + 1 <= f->cap)
		return 0;
	while (cap < f->len + more + 1)
		cap *= 2;
	b = realloc(f->buf, cap);
	if (!b)
		return -ENOMEM;
	f->buf = b;
	f->cap = cap;
	return 0;
}

/* Append s with ';' -> ':' and newlines -> ' '. */
static int buf_add_name(struct folded *f, const char *s)
{
	size_t n = strlen(s), i;
	int err = buf_reserve(f, n);

	if (err)
		return err;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == ';')
			c = ':';
		else if (c == '\n' || c == '\r')
			c = ' ';
		f->buf[f->len++] = c;
	}
	f->buf[f->len] = '\0';
	return 0;
}

static int buf_add_raw(struct folded *f, const char *s)
{
	size_t n = strlen(s);
	int err = buf_reserve(f, n);

	if (err)
		return err;
	memcpy(f->buf + f->len, s, n + 1);
	f->len += n;
	return 0;
}

static const char *sample_comm(const struct profile *p, const struct pf_sample *s)
{
	const char *name = profile_sample_thread(p, s);

	return name ? name : "[unknown]";
}

static bool is_kernel(const struct profile *p, const struct pf_location *l)
{
	if (!l->mapping_id || l->mapping_id > p->nmappings)
		return false;
	return !strcmp(profile_string(p, p->mappings[l->mapping_id - 1].filename), KERNEL_MAPPING);
}

static int add_address(struct folded *f, uint64_t address, const char *suffix)
{
	char hex[32];

	snprintf(hex, sizeof(hex), "0x%" PRIx64 "%s", address, suffix);
	return buf_add_raw(f, hex);
}

/* Append one location's frames, outermost first, each preceded by ';'. */
static int add_location(struct folded *f, const struct profile *p, const struct pf_location *l)
{
	const char *suffix = is_kernel(p, l) ? "_[k]" : "";
	size_t j;
	int err;

	if (!l->nlines) {
		err = buf_add_raw(f, ";");
		return err ? err : add_address(f, l->address, suffix);
	}
	for (j = l->nlines; j-- > 0;) {
		uint64_t fid = l->lines[j].function_id;
		const char *name = "";

		if (fid && fid <= p->nfunctions) {
			const struct pf_function *fn = &p->functions[fid - 1];

			name = profile_string(p, fn->name);
			if (!*name)
				name = profile_string(p, fn->system_name);
		}
		err = buf_add_raw(f, ";");
		if (err)
			return err;
		if (*name) {
			err = buf_add_name(f, name);
			if (!err)
				err = buf_add_raw(f, suffix);
		} else {
			err = add_address(f, l->address, suffix);
		}
		if (err)
			return err;
	}
	return 0;
}

static int add_line(struct folded *f, int64_t value)
{
	struct folded_line *fl;
	void *v;
	char *text;

	if (!hm_find(f->map, f->buf, &v)) {
		fl = &f->lines[(uintptr_t)v];
		fl->value = (int64_t)((uint64_t)fl->value + (uint64_t)value);
		return 0;
	}
	if (ARRAY_RESERVE(f->lines, &f->cap_lines, f->nlines + 1))
		return -ENOMEM;
	text = strdup(f->buf);
	if (!text)
		return -ENOMEM;
	if (hm_set(f->map, text, (void *)(uintptr_t)f->nlines, NULL)) {
		free(text);
		return -ENOMEM;
	}
	fl = &f->lines[f->nlines++];
	fl->text = text;
	fl->value = value;
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;

	return strcmp(x->text, y->text);
}

const char *folded_group_name(const struct profile *p, const struct pf_sample *s,
			      const char *group_by, char *buf, size_t len)
{
	const char *v = profile_sample_label(p, s, group_by, buf, len);

	if (v && *v)
		return v;
	snprintf(buf, len, "(no %s)", group_by);
	return buf;
}

int folded_write(const struct profile *p, size_t value_index, const char *group_by, FILE *out)
{
	char group[64];
	struct folded f = { 0 };
	size_t i, k;
	int err = 0;

	if (!p || !out || value_index >= p->nsample_types)
		return -EINVAL;
	f.map = hm_new(hm_hash_str, hm_equal_str);
	if (!f.map)
		return -ENOMEM;
	for (i = 0; i < p->nsamples && !err; i++) {
		const struct pf_sample *s = &p->samples[i];

		f.len = 0;
		err = buf_reserve(&f, 0);
		if (err)
			break;
		f.buf[0] = '\0';
		if (group_by) {
			err = buf_add_name(&f,
					   folded_group_name(p, s, group_by, group, sizeof(group)));
			if (!err)
				err = buf_add_raw(&f, ";");
			if (err)
				break;
		}
		err = buf_add_name(&f, sample_comm(p, s));
		/* location_ids are leaf first: walk them backwards. */
		for (k = s->nlocations; !err && k-- > 0;) {
			uint64_t id = s->location_ids[k];

			if (!id || id > p->nlocations) {
				err = -EINVAL;
				break;
			}
			err = add_location(&f, p, &p->locations[id - 1]);
		}
		if (!err)
			err = add_line(&f, s->values[value_index]);
	}
	if (!err) {
		if (f.nlines)
			sort_array(f.lines, f.nlines, sizeof(*f.lines), cmp_lines);
		for (i = 0; i < f.nlines; i++) {
			if (!f.lines[i].value)
				continue;
			if (fprintf(out, "%s %" PRId64 "\n", f.lines[i].text, f.lines[i].value) <
			    0) {
				err = -EIO;
				break;
			}
		}
		if (!err && (fflush(out) || ferror(out)))
			err = -EIO;
	}
	for (i = 0; i < f.nlines; i++)
		free(f.lines[i].text);
	free(f.lines);
	free(f.buf);
	hm_free(f.map);
	return err;
}
