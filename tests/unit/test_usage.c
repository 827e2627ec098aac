// SPDX-License-Identifier: BSD-2-Clause
/*
 * The option lists printed from the table (cli/usage.c): each command's
 * --help lists exactly the options it takes, with their ranges and
 * defaults, in 80 columns, with the {CMD:text} parts of other commands
 * left out; the man page's lists are troff with every '-' escaped and say
 * which command takes an option the others do not.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"

static const struct cli_command *const commands[] = {
	&cli_record, &cli_top, &cli_ls, &cli_merge, &cli_flamegraph, &cli_symbolize, &cli_serve,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* cmd's --help, malloc'ed. */
static char *help_of(const struct cli_command *cmd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	FILE *saved = stdout;

	cr_assert_not_null(f);
	stdout = f;
	cli_usage(cmd);
	stdout = saved;
	cr_assert_eq(fclose(f), 0);
	return text;
}

/* text with its runs of white space one space: wrapped lines as one. */
static char *flat(char *text)
{
	char *out = text;

	for (const char *p = text; *p; p++)
		if (!strchr(" \n", *p) || (out > text && out[-1] != ' '))
			*out++ = strchr(" \n", *p) ? ' ' : *p;
	*out = '\0';
	return text;
}

static char *man_of(const struct cli_command *const *cmds, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cli_man(f, cmds, n);
	cr_assert_eq(fclose(f), 0);
	return text;
}

/* Does text list --name as an option (at a line's start, after the
 * indent and a short name)? */
static bool lists(const char *text, const char *name)
{
	char needle[80];

	snprintf(needle, sizeof(needle), "--%s", name);
	for (const char *p = text; (p = strstr(p, needle)); p++) {
		const char *line = p;
		char after = p[strlen(needle)];

		while (line > text && line[-1] != '\n')
			line--;
		if ((after == ' ' || after == '\n') && p - line <= 6 &&
		    strspn(line, " -,abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") >=
			    (size_t)(p - line))
			return true;
	}
	return false;
}

Test(usage, help_lists_what_the_command_takes)
{
	for (size_t c = 0; c < NCOMMANDS; c++) {
		char *help = help_of(commands[c]);
		char usage[64];

		snprintf(usage, sizeof(usage), "Usage: ebprof %s ", commands[c]->name);
		cr_expect(!strncmp(help, usage, strlen(usage)), "%s", help);
		for (size_t i = 0; i < cli_noptions; i++) {
			const struct cli_option *o = &cli_options[i];
			bool takes = false;

			for (size_t j = 0; j < cli_noptions; j++)
				takes |= !strcmp(cli_options[j].name, o->name) &&
					 (cli_options[j].cmds & commands[c]->id);
			cr_expect_eq(lists(help, o->name), takes, "%s --help %s --%s",
				     commands[c]->name, takes ? "lacks" : "lists", o->name);
		}
		for (char *line = help, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			cr_assert_not_null(nl);
			cr_expect_leq(nl - line, 80, "%s: %.*s", commands[c]->name,
				      (int)(nl - line), line);
		}
		for (const char *l = help; *l; l = strchr(l, '\n') + 1)
			cr_expect(strncmp(l, "  ", 2) || strcspn(l, "{}`") > strcspn(l, "\n"),
				  "%s: markup left: %.*s", commands[c]->name, (int)strcspn(l, "\n"),
				  l);
		free(help);
	}
}

Test(usage, ranges_defaults_and_parts_of_one_command)
{
	char *record = flat(help_of(&cli_record)), *top = flat(help_of(&cli_top));
	char *fg = flat(help_of(&cli_flamegraph)), *merge = flat(help_of(&cli_merge));

	cr_expect(strstr(record, "samples per second per CPU, 1..10000 (default 99) "), "%s",
		  record);
	cr_expect(strstr(top, "samples per second per CPU, 1..10000 (default 99) "), "%s", top);
	cr_expect(strstr(top, "refresh interval in seconds, 1..60 (default 2) "), "%s", top);
	cr_expect(strstr(top, "statements shown, 1..100 (default: what fits the terminal)"), "%s",
		  top);
	cr_expect(strstr(record, "(default dwarf)"), "%s", record);
	cr_expect(strstr(record, "at most 8"), "%s", record);
	/* {record:...} in record's help only, {top:...} in top's */
	cr_expect(strstr(record, "the recording ends when all of them have exited"), "%s", record);
	cr_expect_null(strstr(top, "recording ends"), "%s", top);
	cr_expect(strstr(top, "(Activity:*)"), "%s", top);
	cr_expect_null(strstr(record, "Activity"), "%s", record);
	cr_expect_null(strstr(fg, "Activity"), "%s", fg);
	cr_expect(strstr(record, "(with --type offcpu --format svg)"), "%s", record);
	cr_expect_null(strstr(fg, "--format svg"), "%s", fg);
	cr_expect(strstr(merge, "(default: cpu, unless --label type=...)"), "%s", merge);
	free(record);
	free(top);
	free(fg);
	free(merge);
}

Test(usage, man_lists_in_troff)
{
	const struct cli_command *lsmerge[] = { &cli_ls, &cli_merge };
	char *man = man_of(lsmerge, 2);
	char *record = man_of((const struct cli_command *[]){ &cli_record }, 1);

	cr_expect(!strncmp(man, ".PP\nSelection:\n.TP\n", 19), "%s", man);
	cr_expect(strstr(man, ".TP\n\\fB\\-\\-dir\\fR \\fIDIR\\fR\nThe profile store (default "
			      "/var/lib/ebprof/profiles).\n"),
		  "%s", man);
	cr_expect(strstr(man, ".TP\n\\fB\\-p\\fR, \\fB\\-\\-pid\\fR \\fIPID\\fR[,\\fIPID\\fR]\n"),
		  "%s", man);
	cr_expect(strstr(man, "path, labels); \\fBls\\fR only.\n"), "%s", man);
	cr_expect(strstr(man, "\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIOUT\\fR\n"), "%s", man);
	cr_expect(strstr(man, "; \\fBmerge\\fR only.\n"), "%s", man);
	cr_expect(strstr(record, "\\fBdwarf\\fR"), "`dwarf` in bold: %s", record);
	cr_expect(strstr(record, "Samples per second per CPU, 1..10000 (default 99).\n"), "%s",
		  record);
	cr_expect(strstr(record, "unwind=fp\\fR. Default: dwarf.\n"), "a sentence of its own: %s",
		  record);
	for (const char *p = man; *p; p = strchr(p, '\n') + 1) {
		cr_expect(*p != '.' || !strncmp(p, ".PP\n", 4) || !strncmp(p, ".TP\n", 4),
			  "a line of troff: %.*s", (int)strcspn(p, "\n"), p);
		for (const char *d = p; *d && *d != '\n'; d++)
			cr_expect(*d != '-' || (d > man && d[-1] == '\\'), "a '-' unescaped: %.*s",
				  (int)strcspn(p, "\n"), p);
	}
	cr_expect_null(strpbrk(man, "{}`"), "markup left: %s", strpbrk(man, "{}`"));
	free(man);
	free(record);
}
