// SPDX-License-Identifier: BSD-2-Clause
/*
 * The commands' table of options (cli/options.h): the table itself (no
 * command takes two options of one name or letter, rows of one name read
 * the same field the same way, every default is a value its option
 * takes), values read from command lines, and errors: one line each, the
 * same for an option in every command that takes it. cli_parse() runs in
 * a forked child, its stderr and stdout captured.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/store_select.h"
#include "../lib/testlib.h"

static const struct cli_command *const commands[] = {
	&cli_record, &cli_top, &cli_ls, &cli_merge, &cli_flamegraph, &cli_symbolize, &cli_serve,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static char *tmp;

static void setup(void)
{
	tmp = tl_tmpdir("options");
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_expect_eq(system(cmd), 0);
	free(tmp);
}

TestSuite(options, .init = setup, .fini = teardown, .timeout = 60);

struct run {
	int ret; /* cli_parse()'s, or 100 + the child's exit status otherwise */
	char err[1024], out[16384];
};

/* The command parse_main() parses for (set before it runs). */
static const struct cli_command *parsed;

/* cli_parse() as a command's entry point: 0, 1, 2 (-EINVAL), 3 (other). */
static int parse_main(int argc, char **argv)
{
	struct cli_values v = { 0 };
	int ret = cli_parse(parsed, argc, argv, &v);

	cli_values_free(&v);
	return ret == 0 ? 0 : ret == 1 ? 1 : ret == -EINVAL ? 2 : 3;
}

/* cli_parse(cmd, args) in a child; args NULL-terminated, without the
 * command's name. */
static void parse_in_child(const struct cli_command *cmd, const char *const *args, struct run *r)
{
	char *argv[32] = { (char *)cmd->name }, *out, *err;
	size_t outlen;
	int argc = 1, status;

	while (args[argc - 1] && argc < 31) {
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	parsed = cmd;
	status = tl_run_captured(parse_main, argc, argv, tmp, &out, &outlen, &err);
	cr_assert_leq(status, 3, "%s: exit %d", cmd->name, status);
	r->ret = (int[]){ 0, 1, -EINVAL, -ENOMEM }[status];
	snprintf(r->err, sizeof(r->err), "%s", err);
	snprintf(r->out, sizeof(r->out), "%s", out);
	free(out);
	free(err);
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* args rejected by cmd with one line holding needle. */
static void expect_error(const struct cli_command *cmd, const char *const *args, const char *needle)
{
	struct run r;

	parse_in_child(cmd, args, &r);
	cr_expect_eq(r.ret, -EINVAL, "%s %s: %d, %s", cmd->name, args[0], r.ret, r.err);
	cr_expect_eq(lines(r.err), 1, "%s %s: %s", cmd->name, args[0], r.err);
	cr_expect(strstr(r.err, needle), "%s %s: '%s' lacks '%s'", cmd->name, args[0], r.err,
		  needle);
}

Test(options, the_table_is_consistent)
{
	unsigned all = 0;

	for (size_t i = 0; i < NCOMMANDS; i++) {
		bool takes_o = false;

		all |= commands[i]->id;
		for (size_t j = 0; j < cli_noptions; j++)
			takes_o |= (cli_options[j].cmds & commands[i]->id) &&
				   !strcmp(cli_options[j].name, "output");
		cr_expect_eq(takes_o, commands[i]->output != CLI_OUTPUT_NONE,
			     "%s: -o and where it writes without it", commands[i]->name);
	}
	cr_expect_eq(all, CLI_ALL, "a command bit without a command");
	for (size_t i = 0; i < cli_noptions; i++) {
		const struct cli_option *a = &cli_options[i];

		cr_expect(a->cmds && !(a->cmds & ~CLI_ALL), "--%s: commands %#x", a->name, a->cmds);
		cr_expect(a->section && a->help && *a->help, "--%s: no section or help", a->name);
		cr_expect(a->type == CLI_INT ? a->min <= a->max : 1, "--%s: range", a->name);
		cr_expect((a->type == CLI_CHOICE) == (a->choices != NULL), "--%s: choices",
			  a->name);
		cr_expect((a->arg != NULL) == (a->type != CLI_FLAG && a->type != CLI_COUNT &&
					       a->type != CLI_HELP && a->type != CLI_VERSION),
			  "--%s: a value without a placeholder, or the other way", a->name);
		for (size_t j = i + 1; j < cli_noptions; j++) {
			const struct cli_option *b = &cli_options[j];

			cr_expect(!(a->cmds & b->cmds) || strcmp(a->name, b->name),
				  "--%s twice in a command", a->name);
			cr_expect(!(a->cmds & b->cmds) || !a->shortopt ||
					  a->shortopt != b->shortopt,
				  "-%c twice in a command (--%s, --%s)", a->shortopt, a->name,
				  b->name);
			if (strcmp(a->name, b->name))
				continue;
			/* one option as several commands take it */
			cr_expect(a->type == b->type && a->off == b->off &&
					  a->shortopt == b->shortopt && !strcmp(a->arg, b->arg) &&
					  a->once == b->once,
				  "the rows of --%s read it differently", a->name);
		}
	}
}

/* Every command with no option given: its defaults are values its
 * options take. */
Test(options, defaults_are_values)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *args[4] = { NULL }, **a = args;
		struct run r;

		if (commands[i]->operand)
			*a++ = "in.pb.gz";
		if (commands[i]->output == CLI_OUTPUT_REQUIRED) {
			*a++ = "-o";
			*a++ = "-";
		}
		parse_in_child(commands[i], args, &r);
		cr_expect_eq(r.ret, 0, "%s: %s", commands[i]->name, r.err);
		cr_expect_str_eq(r.err, "", "%s", commands[i]->name);
	}
}

Test(options, values)
{
	char *argv[] = { "record",     "-F",
			 "200",	       "-p",
			 "1,2",	       "--pid",
			 "3",	       "--comm",
			 "a,b",	       "--comm",
			 "c",	       "--type",
			 "offcpu",     "--unwind",
			 "dwarf-tail", "--format",
			 "svg",	       "--no-kernel",
			 "-vv",	       "-d",
			 "1.5",	       "--offcpu-period",
			 "0",	       "--btf",
			 "/x.btf",     NULL };
	struct cli_values v = { 0 };

	cr_assert_eq(cli_parse(&cli_record, 25, argv, &v), 0);
	cr_expect_eq(v.frequency, 200);
	cr_assert_eq(v.npids, 3, "-p lists add up");
	cr_expect(v.pids[0] == 1 && v.pids[1] == 2 && v.pids[2] == 3);
	cr_assert_eq(v.ncomms, 3, "--comm lists add up");
	cr_expect_str_eq(v.comms[2], "c");
	cr_expect_str_eq(v.type, "offcpu");
	cr_expect_eq(v.unwind, SAMPLER_UNWIND_TAIL, "an unlisted choice is taken");
	cr_expect_eq(v.format, RENDER_SVG);
	cr_expect(v.no_kernel && !v.no_user && !v.no_inherit);
	cr_expect_eq(v.verbose, 2);
	cr_expect_float_eq(v.duration, 1.5, 1e-9);
	cr_expect_eq(v.offcpu_period_us, 0);
	cr_expect_eq(v.offcpu_pct, 100, "a default");
	cr_expect_eq(v.query_labels, QUERY_LABELS_NORMALIZED);
	cr_expect_str_eq(v.btf, "/x.btf");
	cr_expect_str_eq(v.output, "profile.svg", "the default output of --format svg");
	cli_values_free(&v);
	cr_expect(!v.pids && !v.comms && !v.npids && !v.ncomms);

	char *top[] = { "top", NULL };
	struct cli_values t = { 0 };

	cr_assert_eq(cli_parse(&cli_top, 1, top, &t), 0);
	cr_expect(t.delay == 2 && t.frequency == 99 && t.offcpu_pct == 100 && !t.rows);
	cli_values_free(&t);

	char *ls[] = { "ls",	  "--label", "backend_type=checkpointer",
		       "--from",  "@100",    "--to",
		       "@200",	  "-p",	     "7",
		       "--label", "a_1=x=y", "--type",
		       "offcpu",  "--json",  NULL };
	struct cli_values l = { 0 };

	cr_assert_eq(cli_parse(&cli_ls, 14, ls, &l), 0);
	cr_expect_str_eq(l.dir, STORE_DEFAULT_DIR);
	cr_assert_eq(l.nlabels, 2);
	cr_expect_str_eq(l.labels[1].key, "a_1");
	cr_expect_str_eq(l.labels[1].value, "x=y");
	cr_expect(l.from.ns == 100000000000LL && l.to.ns == 200000000000LL);
	cr_expect_str_eq(l.from.arg, "@100");
	cr_expect(l.npids == 1 && l.pids[0] == 7 && l.json);
	cr_expect_str_eq(l.type, "offcpu");
	cli_values_free(&l);

	char *serve[] = { "serve", "--retention", "off", "--max-size", "2G", NULL };
	struct cli_values s = { 0 };

	cr_assert_eq(cli_parse(&cli_serve, 5, serve, &s), 0);
	cr_expect_eq(s.retention_s, 0);
	cr_expect_eq(s.max_bytes, 2LL << 30);
	cli_values_free(&s);
	serve[1] = "--store";
	serve[2] = "/s";
	cr_assert_eq(cli_parse(&cli_serve, 3, serve, &s), 0);
	cr_expect_eq(s.retention_s, 7 * 86400, "the default retention");
	cr_expect_str_eq(s.store, "/s");
	cli_values_free(&s);

	char *fg[] = { "flamegraph", "in.pb.gz", "--width", "300", NULL };
	struct cli_values f = { 0 };

	cr_assert_eq(cli_parse(&cli_flamegraph, 4, fg, &f), 0, "options after the operand");
	cr_expect_str_eq(f.input, "in.pb.gz");
	cr_expect(f.width == 300 && f.max_depth == 256);
	cli_values_free(&f);
}

/* A value each type refuses. */
static const char *bad_value(const struct cli_option *o)
{
	switch (o->type) {
	case CLI_INT:
	case CLI_SECONDS:
		return "ten";
	case CLI_STRING:
		return o->empty_ok ? NULL : "";
	case CLI_CHOICE:
	case CLI_GROUP_BY:
		return "bogus";
	case CLI_PIDS:
		return "12,ab";
	case CLI_NAMES:
		return "a/b";
	case CLI_LABELS:
		return "Bad-Key";
	case CLI_TIME:
		return "yesterday";
	case CLI_AGE:
		return "5x";
	case CLI_SIZE:
		return "-1";
	default:
		return NULL;
	}
}

/* The row of --name that cmd takes, or NULL. */
static const struct cli_option *row(const struct cli_command *cmd, const char *name)
{
	for (size_t i = 0; i < cli_noptions; i++)
		if ((cli_options[i].cmds & cmd->id) && !strcmp(cli_options[i].name, name))
			return &cli_options[i];
	return NULL;
}

/* Every option with a value: a bad one is one line naming it or the
 * value, the same line in every command that takes the option. */
Test(options, an_option_errs_the_same_everywhere)
{
	size_t compared = 0;

	for (size_t i = 0; i < cli_noptions; i++) {
		const char *name = cli_options[i].name;
		const struct cli_option *seen = NULL;
		char flag[64], first[1024] = "";

		for (size_t j = 0; j < i && name; j++)
			if (!strcmp(cli_options[j].name, name))
				name = NULL; /* done with its first row */
		snprintf(flag, sizeof(flag), "--%s", name ? name : "");
		for (size_t c = 0; name && c < NCOMMANDS; c++) {
			const struct cli_option *o = row(commands[c], name);
			const char *bad = o ? bad_value(o) : NULL;
			const char *args[] = { flag, bad, "in.pb.gz", NULL };
			struct run r;

			if (!bad)
				continue;
			if (!commands[c]->operand)
				args[2] = NULL;
			parse_in_child(commands[c], args, &r);
			cr_expect_eq(r.ret, -EINVAL, "%s %s '%s': %s", commands[c]->name, flag, bad,
				     r.err);
			cr_expect_eq(lines(r.err), 1, "%s %s: %s", commands[c]->name, flag, r.err);
			cr_expect(strstr(r.err, name) || (*bad && strstr(r.err, bad)),
				  "%s %s '%s': %s", commands[c]->name, flag, bad, r.err);
			if (!seen) {
				seen = o;
				snprintf(first, sizeof(first), "%s", r.err);
				continue;
			}
			if (o->type == CLI_CHOICE && strcmp(o->choices, seen->choices))
				continue; /* merge --format takes no svg, says so */
			cr_expect_str_eq(r.err, first, "%s %s", commands[c]->name, flag);
			compared++;
		}
	}
	cr_expect_geq(compared, 10, "only %zu options compared across commands", compared);
}

Test(options, errors)
{
	expect_error(&cli_record, (const char *[]){ "--type", "cpu", "--type", "offcpu", NULL },
		     "--type given twice (cpu, offcpu)");
	expect_error(&cli_record, (const char *[]){ "--unwind", "frames", NULL },
		     "unknown unwind 'frames': use dwarf or fp");
	expect_error(&cli_merge, (const char *[]){ "--format", "svg", NULL },
		     "unknown format 'svg': use pprof or folded");
	expect_error(&cli_record, (const char *[]){ "--format", "xml", NULL },
		     "unknown format 'xml': use pprof, folded or svg");
	expect_error(&cli_top, (const char *[]){ "--comm", "a,b,c,d,e", "--comm", "f,g,h,i", NULL },
		     "--comm takes at most 8 names, got 9");
	expect_error(&cli_record, (const char *[]){ "-o", "x", "-F", NULL },
		     "option -F needs a value");
	expect_error(&cli_record, (const char *[]){ "-vF", NULL }, "option -F needs a value");
	expect_error(&cli_ls, (const char *[]){ "--dir", NULL }, "option --dir needs a value");
	expect_error(&cli_ls, (const char *[]){ "--dir", "", NULL }, "option --dir needs a value");
	expect_error(&cli_top, (const char *[]){ "--bogus", NULL },
		     "unknown option '--bogus' (see ebprof top --help)");
	expect_error(&cli_top, (const char *[]){ "-x", NULL },
		     "unknown option '-x' (see ebprof top --help)");
	expect_error(&cli_record, (const char *[]){ "--no", NULL },
		     "ambiguous option '--no' (see ebprof record --help)");
	expect_error(&cli_record, (const char *[]){ "--all=1", NULL },
		     "option '--all' takes no value");
	expect_error(&cli_ls, (const char *[]){ "extra", NULL },
		     "unexpected argument 'extra' (see ebprof ls --help)");
	expect_error(&cli_symbolize, (const char *[]){ "a.pb.gz", "b.pb.gz", NULL },
		     "unexpected argument 'b.pb.gz' (see ebprof symbolize --help)");
	expect_error(&cli_flamegraph, (const char *[]){ "--idle", NULL },
		     "flamegraph needs a profile (IN.pb.gz, '-' for stdin)");
	expect_error(&cli_record, (const char *[]){ "-F", "0", NULL },
		     "--frequency must be between 1 and 10000, got 0");
	expect_error(&cli_top, (const char *[]){ "-F", "10001", NULL },
		     "--frequency must be between 1 and 10000, got 10001");
	/* not an option of this command */
	expect_error(&cli_top, (const char *[]){ "--duration", "1", NULL },
		     "unknown option '--duration' (see ebprof top --help)");
	expect_error(&cli_ls, (const char *[]){ "-o", "x", NULL },
		     "unknown option '-o' (see ebprof ls --help)");
}

Test(options, help_and_version)
{
	struct run r;

	parse_in_child(&cli_top, (const char *[]){ "-F", "5", "--help", "--bogus", NULL }, &r);
	cr_expect_eq(r.ret, 1);
	cr_expect_str_eq(r.err, "");
	cr_expect(strstr(r.out, "Usage: ebprof top [OPTIONS]\n"), "%s", r.out);
	parse_in_child(&cli_record, (const char *[]){ "--version", NULL }, &r);
	cr_expect_eq(r.ret, 1);
	cr_expect(!strncmp(r.out, "ebprof ", 7) && lines(r.out) == 1, "%s", r.out);
	expect_error(&cli_ls, (const char *[]){ "--version", NULL }, "unknown option '--version'");
}

Test(options, output)
{
	char path[600];
	struct run r;

	expect_error(&cli_merge, (const char *[]){ NULL }, "merge needs -o OUT ('-' for stdout)");
	expect_error(&cli_symbolize, (const char *[]){ "in.pb.gz", NULL },
		     "symbolize needs -o OUT ('-' for stdout)");
	snprintf(path, sizeof(path), "%s/nodir/x", tmp);
	expect_error(&cli_record, (const char *[]){ "-o", path, NULL }, "nodir does not exist");
	expect_error(&cli_flamegraph, (const char *[]){ "-o", tmp, "in.pb.gz", NULL },
		     "is a directory");

	char *fg[] = { "flamegraph", "in.pb.gz", NULL };
	char *rec[] = { "record", "--format", "folded", NULL };
	struct cli_values v = { 0 };

	cr_assert_eq(cli_parse(&cli_flamegraph, 2, fg, &v), 0);
	cr_expect_str_eq(v.output, "-");
	cli_values_free(&v);
	memset(&v, 0, sizeof(v));
	cr_assert_eq(cli_parse(&cli_record, 3, rec, &v), 0);
	cr_expect_str_eq(v.output, "profile.folded");
	cli_values_free(&v);
	snprintf(path, sizeof(path), "%s/x", tmp);
	parse_in_child(&cli_merge, (const char *[]){ "-o", path, NULL }, &r);
	cr_expect_eq(r.ret, 0, "%s", r.err);
	cr_expect_not_null(row(&cli_merge, "format"));
	cr_expect_null(row(&cli_ls, "format"));
	cr_expect_eq(row(&cli_top, "frequency"), row(&cli_record, "frequency"), "one row for -F");
}
