// SPDX-License-Identifier: BSD-2-Clause
/*
 * The option lists of --help and of the man page, printed from the table
 * (options.h). Help lines wrap at 80 columns; the man page gets troff,
 * with `word` in bold.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "options.h"

#define WIDTH 79   /* columns of a help line, at most */
#define MAX_COL 30 /* where help texts start, at most */

/*
 * o's text (man: the man page's, else its help) into buf with its
 * {CMD:text} parts kept for the n commands printed and dropped for others,
 * then its range and default: ", 1..10000 (default 99)", or a sentence
 * of its own after a text of several.
 */
static void text_of(const struct cli_option *o, bool man, const struct cli_command *const *cmds,
		    size_t ncmds, char *buf, size_t len)
{
	const char *t = man && o->man ? o->man : o->help;
	bool sentences = man && strstr(t, ". ");
	size_t n = 0;

	while (*t && n + 1 < len) {
		const char *colon, *close;
		bool keep = false;

		if (*t != '{') {
			buf[n++] = *t++;
			continue;
		}
		colon = strchr(t, ':');
		close = colon ? strchr(colon, '}') : NULL;
		if (!close) { /* no {CMD:text}: as it is */
			buf[n++] = *t++;
			continue;
		}
		for (size_t i = 0; i < ncmds; i++)
			keep |= cli_listed(t + 1, (size_t)(colon - t - 1), cmds[i]->name);
		for (const char *c = colon + 1; keep && c < close && n + 1 < len; c++)
			buf[n++] = *c;
		t = close + 1;
	}
	buf[n] = '\0';
	if (o->type == CLI_INT && n < len)
		n += (size_t)snprintf(buf + n, len - n,
				      sentences ? ". Range %ld..%ld" : ", %ld..%ld", o->min,
				      o->max);
	else if (o->type == CLI_NAMES && n < len)
		n += (size_t)snprintf(buf + n, len - n,
				      sentences ? ". At most %ld" : ", at most %ld", o->max);
	if ((!o->def && !o->def_text) || n >= len)
		return;
	if (!sentences)
		snprintf(buf + n, len - n, o->def ? " (default %s)" : " (default: %s)",
			 o->def ? o->def : o->def_text);
	else
		snprintf(buf + n, len - n, "%s %s",
			 o->type == CLI_INT || o->type == CLI_NAMES ? ", default" : ". Default:",
			 o->def ? o->def : o->def_text);
}

/* "  -F, --frequency HZ" into buf; its length. */
static int left(const struct cli_option *o, char *buf, size_t len)
{
	int n;

	if (o->shortopt)
		n = snprintf(buf, len, "  -%c, --%s", o->shortopt, o->name);
	else
		n = snprintf(buf, len, "      --%s", o->name);
	if (o->arg)
		n += snprintf(buf + n, len - (size_t)n, " %s", o->arg);
	return n;
}

/* text at column col (the cursor at column at), words wrapped at WIDTH;
 * backquotes left out. */
static void wrapped(const char *text, int col, int at)
{
	while (*text) {
		size_t word = strcspn(text, " ");
		int w = 0;

		for (size_t i = 0; i < word; i++)
			w += text[i] != '`';
		if (at > col && at + 1 + w > WIDTH) {
			printf("\n%*s", col, "");
			at = col;
		} else if (at > col) {
			putchar(' ');
			at++;
		}
		for (size_t i = 0; i < word; i++)
			if (text[i] != '`')
				putchar(text[i]);
		at += w;
		text += word;
		text += strspn(text, " ");
	}
	putchar('\n');
}

void cli_usage(const struct cli_command *cmd)
{
	const char *section = NULL;
	char l[64], text[1024];
	int col = 0, n;

	for (size_t i = 0; i < cli_noptions; i++) {
		if (!(cli_options[i].cmds & cmd->id))
			continue;
		n = left(&cli_options[i], l, sizeof(l)) + 2;
		col = n > col ? n : col;
	}
	col = col > MAX_COL ? MAX_COL : col;
	printf("Usage: ebprof %s %s\n%s", cmd->name, cmd->synopsis, cmd->about);
	for (size_t i = 0; i < cli_noptions; i++) {
		const struct cli_option *o = &cli_options[i];

		if (!(o->cmds & cmd->id))
			continue;
		if (!section || strcmp(section, o->section))
			printf("\n%s:\n", o->section);
		section = o->section;
		n = left(o, l, sizeof(l));
		fputs(l, stdout);
		if (n > col - 2) {
			printf("\n%*s", col, "");
			n = col;
		} else {
			printf("%*s", col - n, "");
			n = col;
		}
		text_of(o, false, &cmd, 1, text, sizeof(text));
		wrapped(text, col, n);
	}
	printf("\n%s", cmd->epilog);
}

/* text in troff: '-' and '\' escaped, `word` in bold. */
static void troff(FILE *f, const char *text)
{
	bool bold = false;

	if (*text == '.' || *text == '\'')
		fputs("\\&", f);
	for (const char *c = text; *c; c++) {
		if (*c == '`')
			fputs((bold = !bold) ? "\\fB" : "\\fR", f);
		else if (*c == '-')
			fputs("\\-", f);
		else if (*c == '\\')
			fputs("\\e", f);
		else
			fputc(*c, f);
	}
}

/* The value's placeholder: its capitals in italics (PID[,PID]). */
static void troff_arg(FILE *f, const char *arg)
{
	for (const char *c = arg; *c;) {
		size_t caps = 0;

		while (isupper((unsigned char)c[caps]))
			caps++;
		if (caps) {
			fprintf(f, "\\fI%.*s\\fR", (int)caps, c);
			c += caps;
		} else {
			fputs(*c == '-' ? "\\-" : (char[]){ *c, 0 }, f);
			c++;
		}
	}
}

/* "; merge and symbolize only" when o is not taken by all n commands. */
static void only(FILE *f, const struct cli_option *o, const struct cli_command *const *cmds,
		 size_t n)
{
	size_t taking = 0, said = 0;

	for (size_t i = 0; i < n; i++)
		taking += (o->cmds & cmds[i]->id) != 0;
	if (taking == n)
		return;
	fputs("; ", f);
	for (size_t i = 0; i < n; i++) {
		if (!(o->cmds & cmds[i]->id))
			continue;
		fprintf(f, "%s\\fB%s\\fR",
			!said		     ? ""
			: said + 1 == taking ? " and "
					     : ", ",
			cmds[i]->name);
		said++;
	}
	fputs(" only", f);
}

void cli_man(FILE *f, const struct cli_command *const *cmds, size_t n)
{
	const char *section = NULL;
	unsigned mask = 0;
	char text[2048];

	for (size_t i = 0; i < n; i++)
		mask |= cmds[i]->id;
	for (size_t i = 0; i < cli_noptions; i++) {
		const struct cli_option *o = &cli_options[i];

		if (!(o->cmds & mask))
			continue;
		if (!section || strcmp(section, o->section))
			fprintf(f, ".PP\n%s:\n", o->section);
		section = o->section;
		fputs(".TP\n", f);
		if (o->shortopt)
			fprintf(f, "\\fB\\-%c\\fR, ", o->shortopt);
		fputs("\\fB", f);
		troff(f, "--");
		troff(f, o->name);
		fputs("\\fR", f);
		if (o->arg) {
			fputc(' ', f);
			troff_arg(f, o->arg);
		}
		fputc('\n', f);
		text_of(o, true, cmds, n, text, sizeof(text));
		if (!o->man) /* a help line, as a sentence */
			text[0] = (char)toupper((unsigned char)text[0]);
		troff(f, text);
		only(f, o, cmds, n);
		fputs(".\n", f);
	}
}
