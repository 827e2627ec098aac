// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading a command's options from the table (options.h): getopt_long's
 * tables built from the rows the command takes, each value read by its
 * type, the operand, and the output path.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "store_select.h"
#include "util/args.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/version.h"

/* getopt_long's value of row i's long name (short names return their
 * letter). */
#define OPT_ROW 256

#define FIELD(v, o, T) ((T *)((char *)(v) + (o)->off))
#define COUNT(v, o) ((size_t *)((char *)(v) + (o)->off_n))

/* Where a value is read: the command line's options and defaults alike. */
struct reading {
	const struct cli_command *cmd;
	struct cli_values *v;
	int64_t now_ns;	    /* relative times are before this */
	const char **given; /* per row: the value it was last given */
	char err[512];
};

bool cli_listed(const char *list, size_t len, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = list, *end = list + len; list && p < end;) {
		size_t w = strcspn(p, ",");

		w = w < (size_t)(end - p) ? w : (size_t)(end - p);
		if (w == l && !strncmp(p, name, l))
			return true;
		p += w + 1;
	}
	return false;
}

static bool listed(const char *list, const char *name)
{
	return list && cli_listed(list, strlen(list), name);
}

/* "a,b,c" as "a, b or c". */
static void choices_text(const char *list, char *buf, size_t len)
{
	size_t n = 0, count = 1, i = 0;

	for (const char *c = list; *c; c++)
		count += *c == ',';
	buf[0] = '\0';
	for (const char *p = list; *p && n < len; i++) {
		size_t l = strcspn(p, ",");

		n += (size_t)snprintf(buf + n, len - n, "%s%.*s",
				      !i	       ? ""
				      : i + 1 == count ? " or "
						       : ", ",
				      (int)l, p);
		p += l + (p[l] != 0);
	}
}

static int no_memory(struct reading *r)
{
	snprintf(r->err, sizeof(r->err), "out of memory");
	return -ENOMEM;
}

/* Append the n items at add to the list of o (a realloc'ed array). */
static int append(struct reading *r, const struct cli_option *o, const void *add, size_t n,
		  size_t size)
{
	void **list = FIELD(r->v, o, void *);
	size_t *count = COUNT(r->v, o);
	char *grown = realloc(*list, (*count + n) * size);

	if (!grown)
		return no_memory(r);
	memcpy(grown + *count * size, add, n * size);
	*list = grown;
	*count += n;
	return 0;
}

static int read_names(struct reading *r, const struct cli_option *o, const char *s)
{
	char **names;
	size_t n;
	int ret = args_parse_names(s, &names, &n, r->err, sizeof(r->err));

	if (ret == -ENOMEM)
		return no_memory(r);
	if (ret)
		return ret;
	if (*COUNT(r->v, o) + n > (size_t)o->max) {
		args_free_list(names, n);
		return args_fail(r->err, sizeof(r->err), "--%s takes at most %ld names, got %zu",
				 o->name, o->max, *COUNT(r->v, o) + n);
	}
	ret = append(r, o, names, n, sizeof(*names));
	if (ret)
		args_free_list(names, n);
	else
		free(names);
	return ret;
}

static int read_pids(struct reading *r, const struct cli_option *o, const char *s)
{
	uint32_t *pids;
	size_t n;
	int ret = args_parse_pids(s, &pids, &n, r->err, sizeof(r->err));

	if (ret == -ENOMEM)
		return no_memory(r);
	if (!ret)
		ret = append(r, o, pids, n, sizeof(*pids));
	if (!ret || ret == -ENOMEM)
		free(pids);
	return ret;
}

static int read_label(struct reading *r, const struct cli_option *o, const char *s)
{
	struct kv kv;
	int ret = store_label_parse(s, &kv, r->err, sizeof(r->err));

	if (ret == -ENOMEM)
		return no_memory(r);
	if (!ret)
		ret = append(r, o, &kv, 1, sizeof(kv));
	if (ret == -ENOMEM) {
		free((char *)kv.key);
		free((char *)kv.value);
	}
	return ret;
}

static int read_choice(struct reading *r, const struct cli_option *o, const char *s)
{
	char names[128];

	if (!listed(o->choices, s) && !listed(o->unlisted, s)) {
		choices_text(o->choices, names, sizeof(names));
		return args_fail(r->err, sizeof(r->err), "unknown %s '%s': use %s", o->name, s,
				 names);
	}
	if (!o->choose) {
		*FIELD(r->v, o, const char *) = s;
		return 0;
	}
	if (o->choose(s, FIELD(r->v, o, void)))
		return args_fail(r->err, sizeof(r->err), "--%s: '%s' is not known here", o->name,
				 s);
	return 0;
}

/* Read s as the value of row o. 0, or -EINVAL / -ENOMEM with r->err. */
static int read_value(struct reading *r, const struct cli_option *o, const char *s)
{
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "--%s", o->name);
	switch (o->type) {
	case CLI_FLAG:
		*FIELD(r->v, o, bool) = true;
		return 0;
	case CLI_COUNT:
		(*FIELD(r->v, o, int))++;
		return 0;
	case CLI_INT:
		return args_parse_int(s, what, o->min, o->max, FIELD(r->v, o, long), r->err,
				      sizeof(r->err));
	case CLI_SECONDS:
		return args_parse_seconds(s, what, FIELD(r->v, o, double), r->err, sizeof(r->err));
	case CLI_STRING:
		if (!*s && !o->empty_ok)
			return args_fail(r->err, sizeof(r->err), "option %s needs a value", what);
		*FIELD(r->v, o, const char *) = s;
		return 0;
	case CLI_CHOICE:
		return read_choice(r, o, s);
	case CLI_PIDS:
		return read_pids(r, o, s);
	case CLI_NAMES:
		return read_names(r, o, s);
	case CLI_LABELS:
		return read_label(r, o, s);
	case CLI_TIME:
		FIELD(r->v, o, struct cli_time)->arg = s;
		return store_parse_time(s, r->now_ns, &FIELD(r->v, o, struct cli_time)->ns, r->err,
					sizeof(r->err));
	case CLI_AGE:
		if (!strcmp(s, "off")) {
			*FIELD(r->v, o, int64_t) = 0;
			return 0;
		}
		if (args_parse_duration(s, FIELD(r->v, o, int64_t)))
			return args_fail(r->err, sizeof(r->err),
					 "%s: '%s' is not an age (12h, 7d, 4w or off)", what, s);
		return 0;
	case CLI_SIZE:
		if (!strcmp(s, "off") || !strcmp(s, "0")) {
			*FIELD(r->v, o, int64_t) = 0;
			return 0;
		}
		if (args_parse_size(s, FIELD(r->v, o, int64_t)))
			return args_fail(r->err, sizeof(r->err),
					 "%s: '%s' is not a size (500M, 20G, off)", what, s);
		return 0;
	case CLI_GROUP_BY:
		ret = !(*FIELD(r->v, o, const char *) =
				render_group_by_key(s, r->err, sizeof(r->err)));
		return ret ? -EINVAL : 0;
	case CLI_HELP:
		cli_usage(r->cmd);
		return 1;
	case CLI_VERSION:
		puts(ebprof_version_line);
		return 1;
	}
	return args_fail(r->err, sizeof(r->err), "%s: internal error: no such type", what);
}

/* Row i given s: its value, or the error of an option given twice. */
static int given(struct reading *r, size_t i, const char *s)
{
	const struct cli_option *o = &cli_options[i];

	if (o->once && r->given[i] && s && strcmp(r->given[i], s))
		return args_fail(r->err, sizeof(r->err), "--%s given twice (%s, %s)", o->name,
				 r->given[i], s);
	r->given[i] = s;
	return read_value(r, o, s);
}

/* getopt_long's tables of the rows cmd takes. opts has CLI_MAX_OPTIONS + 1
 * entries, shortopts 3 * CLI_MAX_OPTIONS + 2 bytes. */
static void build_options(unsigned id, struct option *opts, char *shortopts)
{
	size_t n = 0, s = 0;

	shortopts[s++] = ':';
	for (size_t i = 0; i < cli_noptions; i++) {
		const struct cli_option *o = &cli_options[i];

		if (!(o->cmds & id))
			continue;
		opts[n++] = (struct option){ o->name, o->arg ? required_argument : no_argument,
					     NULL, OPT_ROW + (int)i };
		if (o->shortopt) {
			shortopts[s++] = o->shortopt;
			if (o->arg)
				shortopts[s++] = ':';
		}
	}
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[s] = '\0';
}

/* The row of getopt_long's value c, or -1. */
static int row_of(unsigned id, int c)
{
	if (c >= OPT_ROW && c < OPT_ROW + (int)cli_noptions)
		return c - OPT_ROW;
	for (size_t i = 0; i < cli_noptions; i++)
		if ((cli_options[i].cmds & id) && cli_options[i].shortopt == c)
			return (int)i;
	return -1;
}

static int operands(const struct cli_command *cmd, int argc, char **argv, struct reading *r)
{
	int max = cmd->operand ? 1 : 0;

	if (cmd->operand && optind >= argc)
		return args_fail(r->err, sizeof(r->err), "%s needs a profile (%s, '-' for stdin)",
				 cmd->name, cmd->operand);
	if (argc - optind > max)
		return args_fail(r->err, sizeof(r->err),
				 "unexpected argument '%s' (see ebprof %s --help)",
				 argv[optind + max], cmd->name);
	if (cmd->operand)
		r->v->input = argv[optind];
	return 0;
}

/* The output path: -o, else where cmd writes without it; then whether it
 * can be written. */
static int output(struct reading *r)
{
	const char *def = NULL;

	switch (r->cmd->output) {
	case CLI_OUTPUT_NONE:
		return 0;
	case CLI_OUTPUT_REQUIRED:
		break;
	case CLI_OUTPUT_STDOUT:
		def = "-";
		break;
	case CLI_OUTPUT_BY_FORMAT:
		def = render_default_name(r->v->format);
		break;
	}
	if (!r->v->output && !def)
		return args_fail(r->err, sizeof(r->err), "%s needs -o OUT ('-' for stdout)",
				 r->cmd->name);
	if (!r->v->output)
		r->v->output = def;
	return args_check_output(r->v->output, r->err, sizeof(r->err));
}

static int parse(struct reading *r, int argc, char **argv)
{
	struct option opts[CLI_MAX_OPTIONS + 1];
	char shortopts[3 * CLI_MAX_OPTIONS + 2];
	int c, i, ret;

	for (size_t k = 0; k < cli_noptions; k++) {
		if (!(cli_options[k].cmds & r->cmd->id) || !cli_options[k].def)
			continue;
		ret = read_value(r, &cli_options[k], cli_options[k].def);
		if (ret)
			return ret;
	}
	build_options(r->cmd->id, opts, shortopts);
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		if (c == ':' || c == '?')
			return args_option_error(c, argv, opts, r->cmd->name, r->err,
						 sizeof(r->err));
		i = row_of(r->cmd->id, c);
		if (i < 0)
			return args_fail(r->err, sizeof(r->err), "internal error: option %d", c);
		ret = given(r, (size_t)i, optarg);
		if (ret)
			return ret;
	}
	ret = operands(r->cmd, argc, argv, r);
	return ret ? ret : output(r);
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_values *v)
{
	const char *given_values[CLI_MAX_OPTIONS];
	struct reading r = { .cmd = cmd, .v = v, .now_ns = wall_ns(), .given = given_values };
	int ret;

	memset(given_values, 0, sizeof(given_values));
	ret = parse(&r, argc, argv);
	if (ret < 0)
		log_error("%s", r.err);
	return ret;
}

void cli_values_free(struct cli_values *v)
{
	for (size_t i = 0; i < v->nlabels; i++) {
		free((char *)v->labels[i].key);
		free((char *)v->labels[i].value);
	}
	free(v->labels);
	free(v->pids);
	args_free_list(v->comms, v->ncomms);
	v->labels = NULL;
	v->pids = NULL;
	v->comms = NULL;
	v->nlabels = v->npids = v->ncomms = 0;
}
