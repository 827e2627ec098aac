/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The options of ebprof's commands, from one table (option_table.c): per
 * option its names, value, range or choices, default, help line, man page
 * text and the commands that take it. Each command's getopt_long table,
 * its --help (usage.c) and its option list in the man page (`ebprof
 * help-man`, packaging/ebprof.8 by `make man`) are built from the table,
 * so an option reads its value and errs the same way in every command.
 * `ebprof agent` has its own table, of config keys (agent/config_keys.c).
 *
 * A command that takes an option: its bit (CLI_RECORD, ...) in the
 * option's .cmds. A new option: a row in option_table.c and, for its
 * value, a field in struct cli_values.
 */
#ifndef EBPROF_CLI_OPTIONS_H
#define EBPROF_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/render.h"
#include "query/table.h"
#include "sampling/sampler.h"
#include "sinks/store/store.h"

/* The commands of the table, a bit each. */
enum {
	CLI_RECORD = 1u << 0,
	CLI_TOP = 1u << 1,
	CLI_LS = 1u << 2,
	CLI_MERGE = 1u << 3,
	CLI_FLAMEGRAPH = 1u << 4,
	CLI_SYMBOLIZE = 1u << 5,
	CLI_SERVE = 1u << 6,
	CLI_ALL = (1u << 7) - 1,
};

/* How an option's value is read, and the type of its field. */
enum cli_type {
	CLI_FLAG,     /* bool: set */
	CLI_COUNT,    /* int: one more each time given (-v -v) */
	CLI_INT,      /* long in [min, max] */
	CLI_SECONDS,  /* double seconds > 0 (at most a year) */
	CLI_STRING,   /* const char * into argv; not "" unless empty_ok */
	CLI_CHOICE,   /* one of .choices: by .choose into the field, else const char * */
	CLI_PIDS,     /* uint32_t * (+ size_t count at off_n): PID[,PID], lists add up */
	CLI_NAMES,    /* char ** (+ count): NAME[,NAME], lists add up, at most max */
	CLI_LABELS,   /* struct kv * (+ count): KEY=VALUE, each adds one */
	CLI_TIME,     /* struct cli_time: a time of the store's syntax (store_select.h) */
	CLI_AGE,      /* int64_t seconds: 12h, 7d, 4w; "off" is 0 */
	CLI_SIZE,     /* int64_t bytes: 500M, 20G; "off" and 0 are 0 */
	CLI_GROUP_BY, /* const char *: a label render_group_by_key() knows */
	CLI_HELP,     /* prints the command's usage */
	CLI_VERSION,  /* prints the version */
};

struct cli_option {
	const char *name; /* --name */
	char shortopt;	  /* -x, 0 for none */
	enum cli_type type;
	size_t off;	      /* its field in struct cli_values */
	size_t off_n;	      /* CLI_PIDS, CLI_NAMES, CLI_LABELS: the count */
	unsigned cmds;	      /* CLI_RECORD | ...: the commands that take it */
	const char *arg;      /* the value's placeholder (HZ, PID[,PID]); NULL: none */
	long min, max;	      /* CLI_INT: range; CLI_NAMES: max = most names */
	const char *choices;  /* CLI_CHOICE: "a,b,c", in help and errors */
	const char *unlisted; /* CLI_CHOICE: also taken, never shown ("x,y") */
	int (*choose)(const char *name, void *field); /* CLI_CHOICE; NULL: the name */
	bool once;	      /* given twice with different values is an error */
	bool empty_ok;	      /* CLI_STRING: "" is a value */
	const char *def;      /* default, read as if given first; shown */
	const char *def_text; /* a default that is no value, in words ("until Ctrl-C") */
	const char *section;  /* the heading it is listed under */
	/*
	 * One line of --help, wrapped, the range and default added to it.
	 * `word` is bold in the man page; {CMD[,CMD]:text} is text where
	 * one of these commands' options are printed, nothing elsewhere.
	 */
	const char *help;
	const char *man; /* the man page's paragraph, same markup; NULL: help */
};

/* The table, in the order of help texts and the man page (at most
 * CLI_MAX_OPTIONS rows). */
#define CLI_MAX_OPTIONS 96
extern const struct cli_option cli_options[];
extern const size_t cli_noptions;

/* A time option's value: ns since the epoch, and the text given (NULL:
 * not given). */
struct cli_time {
	int64_t ns;
	const char *arg;
};

/* Every option's value. Strings point into argv or the table; the lists
 * are owned (cli_values_free). */
struct cli_values {
	/* targets */
	uint32_t *pids; /* -p: record, top: targets; ls, merge: a filter */
	size_t npids;
	char **comms;
	size_t ncomms;
	bool all, no_inherit;
	/* sampling */
	const char *type; /* a profile type's name: what record samples, what ls takes */
	long offcpu_min_us, offcpu_pct, offcpu_period_us;
	long faults_period;
	int64_t memory_min_rss;
	long frequency;
	double duration; /* 0: until stopped */
	long delay;
	bool no_waits, no_kernel, no_user, no_plpgsql;
	const char *btf;
	enum sampler_unwind unwind;
	enum query_labels query_labels;
	/* selection of stored profiles */
	const char *dir, *service;
	struct cli_time from, to;
	struct kv *labels; /* keys and values malloc'ed */
	size_t nlabels;
	/* symbols */
	const char *debug_dirs, *debuginfod_urls; /* NULL: $DEBUGINFOD_URLS */
	long debuginfod_timeout;
	bool offline;
	/* output */
	const char *output; /* NULL: none given */
	enum render_format format;
	const char *group_by;
	bool idle, json, once;
	const char *sample_type, *title;
	long width, max_depth, rows;
	/* the collector */
	const char *listen, *store, *token_file;
	int64_t retention_s, max_bytes;
	int64_t span_cache, span_warm_s;
	/* general */
	int verbose;
	const char *input; /* the command's operand (struct cli_command) */
};

/* Where a command writes without -o. */
enum cli_output {
	CLI_OUTPUT_NONE,      /* it takes no -o */
	CLI_OUTPUT_REQUIRED,  /* nowhere: "CMD needs -o OUT" */
	CLI_OUTPUT_STDOUT,    /* to stdout */
	CLI_OUTPUT_BY_FORMAT, /* to profile.pb.gz, .folded or .svg by --format */
};

/* What a command is, for its --help, and what it reads besides options. */
struct cli_command {
	unsigned id;	      /* CLI_RECORD, ... */
	const char *name;     /* "record" */
	const char *synopsis; /* after "Usage: ebprof NAME " */
	const char *about;    /* what it does: lines before the options */
	const char *epilog;   /* lines after them (exit status, hints) */
	const char *operand;  /* one profile to read ("IN.pb.gz") or NULL: none */
	enum cli_output output;
};

/*
 * Parse argv (argv[0] the command's name) into *v, which the caller zeroed:
 * the defaults of cmd's options first, then the options given, then the
 * operand and the output path (cmd->output; whether it can be written).
 * 0; 1 when help or the version was printed; -EINVAL or -ENOMEM, logged
 * here in one line. Free v with cli_values_free() in every case.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_values *v);
void cli_values_free(struct cli_values *v);

/* Is name one of the comma-separated names in the len bytes at list? */
bool cli_listed(const char *list, size_t len, const char *name);

/* `ebprof CMD --help` to stdout. */
void cli_usage(const struct cli_command *cmd);
/* The man page's list of the options the n commands take (troff: a .PP
 * heading per section, a .TP per option), to f. An option not every one
 * of them takes says which do. */
void cli_man(FILE *f, const struct cli_command *const *cmds, size_t n);

#endif /* EBPROF_CLI_OPTIONS_H */
