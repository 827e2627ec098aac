// SPDX-License-Identifier: BSD-2-Clause
/*
 * The independent reader of the integration tests (gopprof.h), its
 * parser: the text gopprof.c had `go tool pprof -raw` print parsed into a
 * small model of our own (gopprof_internal.h: gp_parse). The
 * format is Go's profile.(*Profile).String() (github.com/google/pprof,
 * vendored in Go's cmd/): comments, period, samples ("%10d" values, ": ",
 * location ids; a line of string labels, a line of numeric labels, each
 * indented 16 spaces), locations ("%6d: %#x M=%d " and per line
 * "fn file:line s=N", further lines of the inline chain indented 13
 * spaces) and mappings ("%d: %#x/%#x/%#x file buildid [FN][FL][LN][IN]");
 * after TOP_MARK, the header of `go tool pprof -top` (its duration).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/compare.h"
#include "gopprof_internal.h"

static char *xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (!d)
		abort();
	return d;
}

static void *grow(void *arr, size_t n, size_t size)
{
	/* Room for element n (0-based), in steps of powers of two. */
	if (n && (n & (n - 1)))
		return arr;
	arr = realloc(arr, (n ? 2 * n : 1) * size);
	if (!arr)
		abort();
	return arr;
}

#define PUSH(arr, n) ((arr) = grow((arr), (n), sizeof(*(arr))), &(arr)[(n)++])

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * The duration of `go tool pprof -top`'s header: pprof's measurement
 * label, the value scaled to a unit and printed with two decimals ("1s",
 * "1.50s", "300ms", "2mins"); Go's time.Duration form ("2m0.5s") too.
 */
static int parse_go_duration(const char *s, int64_t *ns)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = { { "ns", 1 },	    { "us", 1e3 },	{ "\xc2\xb5s", 1e3 },
		      { "\xce\xbcs", 1e3 }, { "ms", 1e6 },	{ "mins", 60e9 },
		      { "min", 60e9 },	    { "hrs", 3600e9 },	{ "hr", 3600e9 },
		      { "days", 86400e9 },  { "day", 86400e9 }, { "s", 1e9 },
		      { "m", 60e9 },	    { "h", 3600e9 } };
	double total = 0;

	if (s[0] == '0' && (s[1] == '\0' || s[1] == ',')) {
		*ns = 0;
		return 0;
	}
	while (*s && *s != ',') {
		char *end;
		double v = strtod(s, &end);
		size_t u;

		if (end == s)
			return -EINVAL;
		s = end;
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (starts(s, units[u].name))
				break;
		if (u == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		s += strlen(units[u].name);
		total += v * units[u].ns;
	}
	*ns = (int64_t)(total + 0.5);
	return 0;
}

/* Go's time.Time String() in UTC: "2026-11-23 12:10:41.903225852 +0000 UTC". */
static int parse_time(const char *s, int64_t *ns)
{
	struct tm tm = { 0 };
	char frac[16] = "", zone[8] = "";
	int64_t sub = 0;
	int n = 0;

	if (sscanf(s, "%d-%d-%d %d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -EINVAL;
	s += n;
	if (*s == '.' && sscanf(s + 1, "%9[0-9]%n", frac, &n) == 1) {
		for (size_t i = 0; i < 9; i++)
			sub = sub * 10 + (i < strlen(frac) ? frac[i] - '0' : 0);
		s += 1 + n;
	}
	if (sscanf(s, " %7s", zone) != 1 || strcmp(zone, "+0000"))
		return -EINVAL; /* not UTC: gp_read runs Go with TZ=UTC */
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ns = (int64_t)timegm(&tm) * 1000000000LL + sub;
	return 0;
}

/* Is line[i..] the start of a "key:[" token? */
static bool label_start(const char *line, size_t i)
{
	size_t j = i;

	if (i > 0 && line[i - 1] != ' ')
		return false;
	if (!isalpha((unsigned char)line[j]) && line[j] != '_')
		return false;
	while (isalnum((unsigned char)line[j]) || strchr("_.-/", line[j]))
		j++;
	return line[j] == ':' && line[j + 1] == '[';
}

/* "k1:[v1] k2:[v 2]" (keys sorted by Go) into s->labels. */
static int parse_labels(const char *line, enum gp_label_kind kind, struct gp_sample *s)
{
	size_t i = 0, n = strlen(line);

	while (i < n && line[i] == ' ')
		i++;
	while (i < n) {
		size_t k = i, colon, end;
		struct gp_label *l;

		if (!label_start(line, k))
			return -EINVAL;
		colon = k + strcspn(line + k, ":");
		/* The value ends at the "]" before the next token, or the line's. */
		end = colon + 2;
		for (;;) {
			char *rb = strchr(line + end, ']');

			if (!rb)
				return -EINVAL;
			end = (size_t)(rb - line);
			if (end + 1 == n || (line[end + 1] == ' ' && label_start(line, end + 2)))
				break;
			end++;
		}
		l = PUSH(s->labels, s->nlabels);
		l->key = xstrndup(line + k, colon - k);
		l->value = xstrndup(line + colon + 2, end - colon - 2);
		l->kind = kind;
		i = end + 1;
		while (i < n && line[i] == ' ')
			i++;
	}
	return 0;
}

/* " %10d %10d: 1 2 3 " */
static int parse_sample(const char *line, size_t ntypes, struct gp_sample *s)
{
	const char *p = line;
	size_t nv = 0;
	char *end;

	memset(s, 0, sizeof(*s));
	s->values = calloc(ntypes ? ntypes : 1, sizeof(*s->values));
	if (!s->values)
		abort();
	while (*p && *p != ':') {
		int64_t v = strtoll(p, &end, 10);

		if (end == p || nv >= ntypes)
			return -EINVAL;
		s->values[nv++] = v;
		p = end;
		while (*p == ' ')
			p++;
	}
	if (*p != ':' || nv != ntypes)
		return -EINVAL;
	p++;
	for (;;) {
		uint64_t id;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		id = strtoull(p, &end, 10);
		if (end == p)
			return -EINVAL;
		*PUSH(s->loc_ids, s->nlocs) = id;
		p = end;
	}
	return 0;
}

/* "fn file:line s=N" or "fn file:line s=N(systemname)" or "??". */
static int parse_line(const char *text, struct gp_line *ln)
{
	const char *s_eq, *colon, *space;

	memset(ln, 0, sizeof(*ln));
	if (!strcmp(text, "??")) {
		ln->fn = xstrndup("??", 2);
		ln->file = xstrndup("", 0);
		return 0;
	}
	s_eq = strstr(text, " s=");
	for (const char *q = s_eq; q; q = strstr(q + 1, " s="))
		s_eq = q; /* the last one: names may hold anything */
	if (!s_eq)
		return -EINVAL;
	colon = s_eq;
	while (colon > text && colon[-1] != ':')
		colon--;
	if (colon == text)
		return -EINVAL;
	colon--;
	ln->line = strtoll(colon + 1, NULL, 10);
	space = colon;
	while (space > text && space[-1] != ' ')
		space--;
	if (space == text)
		return -EINVAL;
	space--;
	ln->fn = xstrndup(text, (size_t)(space - text));
	ln->file = xstrndup(space + 1, (size_t)(colon - space - 1));
	return 0;
}

/* "%6d: %#x M=%d [F] " + the first line, if any. */
static int parse_location(const char *line, struct gp_location *loc)
{
	char *end;
	const char *p = line;

	memset(loc, 0, sizeof(*loc));
	while (*p == ' ')
		p++;
	loc->id = strtoull(p, &end, 10);
	if (end == p || strncmp(end, ": 0x", 4))
		return -EINVAL;
	p = end + 2;
	loc->addr = strtoull(p, &end, 16);
	p = end;
	if (*p == ' ')
		p++;
	if (starts(p, "M=")) {
		loc->mapping_id = strtoull(p + 2, &end, 10);
		p = end;
		if (*p == ' ')
			p++;
	}
	if (starts(p, "[F] "))
		p += 4;
	if (*p) {
		struct gp_line *ln = PUSH(loc->lines, loc->nlines);

		return parse_line(p, ln);
	}
	return 0;
}

static bool is_location_line(const char *line)
{
	const char *p = line;

	while (*p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	return starts(p, ": 0x");
}

/* "%d: %#x/%#x/%#x %s %s %s": file, build id, bits. */
static int parse_mapping(const char *line, struct gp_mapping *m)
{
	const char *p = line, *bits, *bid;
	char *end;

	memset(m, 0, sizeof(*m));
	m->id = strtoull(p, &end, 10);
	if (end == p || strncmp(end, ": 0x", 4))
		return -EINVAL;
	m->start = strtoull(end + 2, &end, 16);
	if (*end != '/')
		return -EINVAL;
	m->limit = strtoull(end + 1, &end, 16);
	if (*end != '/')
		return -EINVAL;
	m->offset = strtoull(end + 1, &end, 16);
	if (*end != ' ')
		return -EINVAL;
	p = end + 1;
	/* Neither the build id nor the bits hold a space; the file may. */
	bits = memrchr(p, ' ', strlen(p));
	if (!bits)
		return -EINVAL;
	bid = bits > p ? memrchr(p, ' ', (size_t)(bits - p)) : NULL;
	if (!bid)
		return -EINVAL;
	m->file = xstrndup(p, (size_t)(bid - p));
	m->build_id = xstrndup(bid + 1, (size_t)(bits - bid - 1));
	bits++;
	m->has_functions = strstr(bits, "[FN]") != NULL;
	m->has_filenames = strstr(bits, "[FL]") != NULL;
	m->has_lines = strstr(bits, "[LN]") != NULL;
	m->has_inlines = strstr(bits, "[IN]") != NULL;
	return 0;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct gp_location *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct gp_location *find_loc(const struct gp_profile *p, uint64_t id)
{
	struct gp_location key = { .id = id };

	return search_array(&key, p->locations, p->nlocations, sizeof(key), cmp_loc);
}

/* Every sample's frames, leaf first, from its locations. */
static int build_frames(struct gp_profile *p)
{
	sort_array(p->locations, p->nlocations, sizeof(*p->locations), cmp_loc);
	for (size_t i = 0; i < p->nsamples; i++) {
		struct gp_sample *s = &p->samples[i];

		for (size_t j = 0; j < s->nlocs; j++) {
			const struct gp_location *loc = find_loc(p, s->loc_ids[j]);
			const struct gp_mapping *m;
			struct gp_frame *f;

			if (!loc) {
				fprintf(stderr, "gp: sample %zu: no location %llu\n", i,
					(unsigned long long)s->loc_ids[j]);
				return -EINVAL;
			}
			m = gp_mapping(p, loc->mapping_id);
			if (loc->mapping_id && !m) {
				fprintf(stderr, "gp: location %llu: no mapping %llu\n",
					(unsigned long long)loc->id,
					(unsigned long long)loc->mapping_id);
				return -EINVAL;
			}
			if (!loc->nlines) {
				f = PUSH(s->frames, s->nframes);
				*f = (struct gp_frame){ .addr = loc->addr, .mapping = m };
			}
			for (size_t k = 0; k < loc->nlines; k++) {
				f = PUSH(s->frames, s->nframes);
				*f = (struct gp_frame){ .fn = loc->lines[k].fn,
							.file = loc->lines[k].file,
							.line = loc->lines[k].line,
							.addr = loc->addr,
							.mapping = m,
							.inlined = k + 1 < loc->nlines };
			}
		}
	}
	return 0;
}

enum section { HEADER, TYPES, SAMPLES, LOCATIONS, MAPPINGS, TOP };

int gp_parse(struct gp_profile *p, char *text)
{
	enum section sec = HEADER;
	struct gp_location *loc = NULL;
	struct gp_sample *s = NULL;
	int nlabel_lines = 0;
	size_t lineno = 0;
	char *save = NULL;
	bool top = false;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int err = 0;

		lineno++;
		if (!strcmp(line, TOP_MARK)) {
			sec = TOP;
			top = true;
			continue;
		}
		switch (sec) {
		case HEADER:
			if (starts(line, "Comment: ")) {
				*PUSH(p->comments, p->ncomments) = xstrndup(line + 9, strlen(line));
			} else if (starts(line, "PeriodType: ")) {
				char *sp = strchr(line + 12, ' ');

				if (!sp)
					err = -EINVAL;
				else {
					p->period_type =
						xstrndup(line + 12, (size_t)(sp - line - 12));
					p->period_unit = xstrndup(sp + 1, strlen(sp + 1));
				}
			} else if (starts(line, "Period: ")) {
				p->period = strtoll(line + 8, NULL, 10);
			} else if (!strcmp(line, "Samples:")) {
				sec = TYPES;
			} else if (starts(line, "Time: ")) {
				err = parse_time(line + 6, &p->time_ns);
			} else if (!starts(line, "Duration: ")) {
				err = -EINVAL;
			}
			break;
		case TYPES:
			for (char *t = line, *sp; *t; t = sp) {
				char *br;

				sp = strchr(t, ' ');
				sp = sp ? sp : t + strlen(t);
				br = strstr(t, "[dflt]");
				*PUSH(p->types, p->ntypes) =
					xstrndup(t, (size_t)((br && br < sp ? br : sp) - t));
				while (*sp == ' ')
					sp++;
			}
			sec = SAMPLES;
			break;
		case SAMPLES: {
			const char *q = line;

			if (!strcmp(line, "Locations")) {
				sec = LOCATIONS;
				break;
			}
			while (*q == ' ')
				q++;
			if (isdigit((unsigned char)*q) || *q == '-') {
				s = PUSH(p->samples, p->nsamples);
				err = parse_sample(line, p->ntypes, s);
				nlabel_lines = 0;
			} else if (s && q - line == 16 && nlabel_lines < 2) {
				/* a first line may be either kind; fixed below */
				err = parse_labels(line, nlabel_lines ? GP_NUM : GP_UNSURE, s);
				if (!err && nlabel_lines == 1)
					for (size_t i = 0; i < s->nlabels; i++)
						if (s->labels[i].kind == GP_UNSURE)
							s->labels[i].kind = GP_STR;
				nlabel_lines++;
			} else {
				err = -EINVAL;
			}
			break;
		}
		case LOCATIONS:
			if (!strcmp(line, "Mappings")) {
				sec = MAPPINGS;
			} else if (is_location_line(line)) {
				loc = PUSH(p->locations, p->nlocations);
				err = parse_location(line, loc);
			} else if (loc && loc->nlines && !strncmp(line, "             ", 13) &&
				   line[13] != ' ') {
				err = parse_line(line + 13, PUSH(loc->lines, loc->nlines));
			} else {
				err = -EINVAL;
			}
			break;
		case MAPPINGS:
			err = parse_mapping(line, PUSH(p->mappings, p->nmappings));
			break;
		case TOP:
			if (starts(line, "Duration: "))
				err = parse_go_duration(line + 10, &p->duration_ns);
			break;
		}
		if (err) {
			fprintf(stderr,
				"gp: %s: cannot parse line %zu of go tool pprof's output: %s\n",
				p->path, lineno, line);
			return -EINVAL;
		}
	}
	if (sec < LOCATIONS || !top) {
		fprintf(stderr, "gp: %s: go tool pprof's output ends early\n", p->path);
		return -EINVAL;
	}
	return build_frames(p);
}
