// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "flamegraph_svg.h"
#include "testlib.h"

/* Render p; returns the SVG text (caller frees), *ret the result. */
char *render(const struct profile *p, const struct flamegraph_opts *o, int *ret, char *err,
	     size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	*ret = flamegraph_write(p, o, f, err, errlen);
	cr_assert_eq(fclose(f), 0);
	return text;
}

char *render_ok(const struct profile *p, const struct flamegraph_opts *o)
{
	char err[512];
	int ret;
	char *svg = render(p, o, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "flamegraph_write: %d %s", ret, err);
	return svg;
}

static const char *check_entity(const char *s)
{
	static const char *const ok[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strncmp(s, ok[i], strlen(ok[i])))
			return s + strlen(ok[i]);
	cr_assert_fail("bad entity at '%.20s'", s);
	return NULL;
}

/* Tags nest and close, attributes are quoted, '&' starts an entity, no
 * '<' in attribute values; skips <?...?>, comments and CDATA. */
void check_xml(const char *s)
{
	const char *names[4096];
	size_t lens[4096], sp = 0, roots = 0;

	cr_assert(!strncmp(s, "<?xml", 5), "does not start with <?xml");
	while (*s) {
		if (*s == '&') {
			s = check_entity(s);
			continue;
		}
		if (*s != '<') {
			s++;
			continue;
		}
		if (!strncmp(s, "<?", 2) || !strncmp(s, "<!--", 4) || !strncmp(s, "<![CDATA[", 9)) {
			const char *end = s[1] == '?' ? "?>" : s[2] == '-' ? "-->" : "]]>";
			const char *e = strstr(s, end);

			cr_assert_not_null(e, "unterminated %.10s", s);
			s = e + strlen(end);
			continue;
		}
		if (s[1] == '/') {
			size_t n = strcspn(s + 2, ">");

			cr_assert_gt(sp, 0, "close tag without open: %.20s", s);
			sp--;
			cr_assert(n == lens[sp] && !strncmp(s + 2, names[sp], n),
				  "</%.*s> closes <%.*s>", (int)n, s + 2, (int)lens[sp], names[sp]);
			s += n + 3;
			continue;
		}
		const char *name = s + 1, *p;
		size_t n = strcspn(name, " \t\n/>");

		cr_assert_gt(n, 0);
		p = name + n;
		for (;;) {
			p += strspn(p, " \t\n");
			if (!strncmp(p, "/>", 2)) {
				p += 2;
				if (!sp)
					roots++;
				break;
			}
			if (*p == '>') {
				p++;
				if (!sp)
					roots++;
				cr_assert_lt(sp, 4096);
				names[sp] = name;
				lens[sp++] = n;
				break;
			}
			size_t an = strcspn(p, "= \t\n>");

			cr_assert_gt(an, 0, "bad attribute at %.20s", p);
			p += an;
			cr_assert_eq(*p, '=', "attribute without value at %.20s", p - an);
			p++;
			char q = *p;

			cr_assert(q == '"' || q == '\'', "unquoted attribute at %.20s", p - an);
			for (p++; *p != q; p++) {
				cr_assert(*p && *p != '<', "bad attribute value");
				if (*p == '&')
					p = check_entity(p) - 1;
			}
			p++;
		}
		s = p;
	}
	cr_assert_eq(sp, 0, "%zu elements not closed", sp);
	cr_assert_eq(roots, 1, "%zu root elements", roots);
}

/* xmllint (libxml2-utils) parses it: well-formed XML, valid UTF-8. */
void xmllint_ok(const char *svg)
{
	char path[] = "/tmp/ebprof-fg-XXXXXX", cmd[256];
	char *out = NULL;
	int fd = mkstemp(path), rc;
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs(svg, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = tl_sh(cmd, &out);
	unlink(path);
	cr_assert_eq(rc, 0, "xmllint (%d): %s", rc, out ? out : "");
	free(out);
}

void check_svg(const char *svg)
{
	check_xml(svg);
	xmllint_ok(svg);
	cr_assert_not_null(strstr(svg, "<svg "));
	cr_assert_not_null(strstr(svg, "id=\"reset\""));
	cr_assert_not_null(strstr(svg, "id=\"search\""));
	cr_assert_not_null(strstr(svg, "id=\"matched\""));
	cr_assert_not_null(strstr(svg, "<script"));
	/* self-contained: nothing to fetch */
	cr_assert_null(strstr(svg, "href="));
	cr_assert_null(strstr(svg, "src="));
	cr_assert_null(strstr(svg, "@import"));
}

int nth_frame(const char *svg, const char *ename, int nth, struct frame *fr)
{
	char key[512];
	const char *s = svg, *g, *end;

	snprintf(key, sizeof(key), "data-name=\"%s\"", ename);
	for (;;) {
		s = strstr(s, key);
		if (!s)
			return -ENOENT;
		if (nth-- == 0)
			break;
		s++;
	}
	/* walk back to "<g " */
	for (g = s; g > svg && strncmp(g, "<g ", 3); g--)
		;
	end = strstr(s, "</g>");
	cr_assert_not_null(end);
	memset(fr, 0, sizeof(*fr));
	cr_assert_eq(sscanf(g, "<g class=\"frame %95[^\"]\"", fr->cls), 1);
	cr_assert_eq(sscanf(s + strlen(key), " data-o=\"%lld\" data-v=\"%lld\" data-l=\"%d\"",
			    &fr->o, &fr->v, &fr->l),
		     3);
	const char *t = strstr(s, "<title>"), *r = strstr(s, "<rect ");

	cr_assert(t && t < end && r && r < end);
	sscanf(t, "<title>%511[^<]", fr->title);
	cr_assert_eq(sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &fr->x, &fr->y, &fr->w),
		     3);
	cr_assert_eq(sscanf(strstr(r, "fill="), "fill=\"rgb(%u,%u,%u)\"", &fr->r, &fr->g, &fr->b),
		     3);
	t = strstr(r, "<text ");
	cr_assert(t && t < end);
	t = strchr(t, '>') + 1;
	snprintf(fr->label, sizeof(fr->label), "%.*s", (int)(strstr(t, "</text>") - t), t);
	return 0;
}

struct frame frame_of(const char *svg, const char *ename)
{
	struct frame fr;

	cr_assert_eq(nth_frame(svg, ename, 0, &fr), 0, "no frame %s", ename);
	return fr;
}

int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

int svg_int_attr(const char *svg, const char *attr)
{
	char key[64];
	const char *s;

	snprintf(key, sizeof(key), " %s=\"", attr);
	s = strstr(strstr(svg, "<svg "), key);
	cr_assert_not_null(s);
	return atoi(s + strlen(key));
}

char *slurp(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	cr_assert_eq(read_file(path, &buf, &len), 0, "read %s", path);
	buf = realloc(buf, len + 1);
	cr_assert_not_null(buf);
	buf[len] = '\0';
	return (char *)buf;
}
