// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_page.h"

char *metrics_page(struct agent_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(agent_metrics_write(f, m), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

/* The lines of text that start with prefix, joined. */
char *metrics_lines_with(const char *text, const char *prefix)
{
	char *out = calloc(1, strlen(text) + 1);
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (!strncmp(p, prefix, strlen(prefix)))
			strncat(out, p, n);
		p += n;
	}
	return out;
}

/*
 * Prometheus text format, strictly: "# HELP name text" then "# TYPE name
 * counter|gauge" for each family, exactly once, before its samples; every
 * sample "name[{labels}] value" of the family last declared (samples of a
 * family together); label pairs key="value"; values numbers.
 */
void metrics_check_format(const char *text)
{
	char fam[128] = "", seen[96][128];
	size_t nseen = 0, lineno = 0;
	const char *p = text;

	cr_assert(*text && text[strlen(text) - 1] == '\n', "the page must end with a newline");
	while (*p) {
		const char *nl = strchr(p, '\n');
		char line[512], name[128], type[32];
		size_t n = (size_t)(nl - p);

		lineno++;
		cr_assert_lt(n, sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (!strncmp(line, "# HELP ", 7)) {
			cr_assert_eq(sscanf(line, "# HELP %127s", name), 1, "line %zu: %s", lineno,
				     line);
			for (size_t i = 0; i < nseen; i++)
				cr_assert_str_neq(seen[i], name,
						  "line %zu: family %s declared twice", lineno,
						  name);
			cr_assert_lt(nseen, 96);
			strcpy(seen[nseen++], name);
			cr_assert_gt(strlen(line), 8 + strlen(name), "line %zu: no help text",
				     lineno);
			/* TYPE follows */
			nl = strchr(p, '\n');
			cr_assert_not_null(nl);
			cr_assert_eq(sscanf(p, "# TYPE %127s %31s", fam, type), 2, "after line %zu",
				     lineno);
			cr_assert_str_eq(fam, name, "HELP and TYPE of different families");
			cr_assert(!strcmp(type, "counter") || !strcmp(type, "gauge"), "type %s",
				  type);
			p = nl + 1;
			lineno++;
			continue;
		}
		cr_assert_neq(line[0], '#', "line %zu: a comment that is no HELP: %s", lineno,
			      line);
		{
			size_t k = strcspn(line, "{ ");
			char *sp;
			double v;

			cr_assert(fam[0], "line %zu: a sample before any TYPE", lineno);
			cr_assert(k == strlen(fam) && !strncmp(line, fam, k),
				  "line %zu: sample %s outside its family %s", lineno, line, fam);
			if (line[k] == '{') {
				char *close = strchr(line, '}');

				cr_assert_not_null(close, "line %zu: %s", lineno, line);
				cr_assert(strstr(line + k, "=\""), "line %zu: labels %s", lineno,
					  line);
				sp = close + 1;
			} else {
				sp = line + k;
			}
			cr_assert_eq(*sp, ' ', "line %zu: %s", lineno, line);
			cr_assert_eq(sscanf(sp, " %lf", &v), 1, "line %zu: value of %s", lineno,
				     line);
		}
	}
}
