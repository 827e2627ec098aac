/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flamegraph SVGs as the tests read them (tests/unit/test_flamegraph*.c):
 * rendered into memory, checked as XML (a small nesting checker and
 * xmllint, an independent parser) and as a self-contained SVG, frames
 * looked up by name. Failures are Criterion assertions; returned strings
 * are the caller's (free).
 */
#ifndef EBPROF_TEST_FLAMEGRAPH_SVG_H
#define EBPROF_TEST_FLAMEGRAPH_SVG_H

#include <stddef.h>

#include "formats/flamegraph.h"

#define IW 1180.0 /* inner width at the default 1200 px */

/* Render p; returns the SVG text, *ret the result. */
char *render(const struct profile *p, const struct flamegraph_opts *o, int *ret, char *err,
	     size_t errlen);
/* ... asserting it succeeds. */
char *render_ok(const struct profile *p, const struct flamegraph_opts *o);

/* Tags nest and close, attributes are quoted, '&' starts an entity, no
 * '<' in attribute values; skips <?...?>, comments and CDATA. */
void check_xml(const char *s);
/* xmllint (libxml2-utils) parses it: well-formed XML, valid UTF-8. */
void xmllint_ok(const char *svg);
/* Both, and the SVG is interactive and self-contained (nothing to fetch). */
void check_svg(const char *svg);

/* A frame's <g>: class list, its rect, data-o/-v/-l, colour, title and
 * label. */
struct frame {
	char cls[96];
	double x, y, w;
	long long o, v;
	int l;
	unsigned r, g, b;
	char title[512];
	char label[256];
};
/* The nth frame named ename (under any parent): 0, or -ENOENT. */
int nth_frame(const char *svg, const char *ename, int nth, struct frame *fr);
/* The first one (asserted). */
struct frame frame_of(const char *svg, const char *ename);

/* Occurrences of needle in s (overlapping ones too). */
int count(const char *s, const char *needle);
/* An integer attribute of the <svg> element. */
int svg_int_attr(const char *svg, const char *attr);
/* A whole file as a string. */
char *slurp(const char *path);

#endif /* EBPROF_TEST_FLAMEGRAPH_SVG_H */
