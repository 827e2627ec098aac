// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's configuration, loaded (config.h): the config file's syntax,
 * the command line (getopt_long built from the keys table of
 * config_keys.c) and the usage text.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "config_keys.h"
#include "util/args.h"
#include "util/log.h"
#include "util/version.h"

/* getopt values: keys are OPT_KEY + index. */
enum { OPT_CONFIG = 256, OPT_VERSION, OPT_KEY = 512 };

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * Split one non-comment line into key and value (both pointing into line,
 * which is modified). 0, or -EINVAL with a message (without path:line).
 */
static int split_line(char *line, char **key, char **value, char *err, size_t errlen)
{
	char *eq = strchr(line, '='), *v, *out;

	if (!eq)
		return args_fail(err, errlen, "expected 'key = value'");
	*eq = '\0';
	*key = trim(line);
	if (!**key)
		return args_fail(err, errlen, "expected 'key = value', the key is empty");
	v = eq + 1;
	while (isspace((unsigned char)*v))
		v++;
	if (*v != '"') {
		/* Unquoted: a '#' after white space starts a comment. */
		for (char *p = v; *p; p++) {
			if (*p == '#' && p > v && isspace((unsigned char)p[-1])) {
				*p = '\0';
				break;
			}
		}
		*value = trim(v);
		return 0;
	}
	/* Quoted: \" and \\ are escapes; only a comment may follow. */
	out = *value = v;
	for (v++; *v != '"'; v++) {
		if (!*v)
			return args_fail(err, errlen, "unterminated quoted value of '%s'", *key);
		if (*v == '\\' && (v[1] == '"' || v[1] == '\\'))
			v++;
		*out++ = *v;
	}
	*out = '\0';
	v = trim(v + 1);
	if (*v && *v != '#')
		return args_fail(err, errlen,
				 "unexpected text after the quoted value of '%s': '%s'", *key, v);
	return 0;
}

int config_load_file(struct agent_config *c, const char *path, char *err, size_t errlen)
{
	char *line = NULL, *key = NULL, *value = NULL, msg[512];
	size_t cap = 0, lineno = 0;
	struct stat st;
	ssize_t len;
	FILE *f;
	int ret = 0;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(-ret));
		return ret;
	}
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p = line;

		lineno++;
		if ((size_t)len != strlen(line)) {
			ret = args_fail(msg, sizeof(msg), "NUL byte in the line");
			break;
		}
		if (lineno == 1 && !strncmp(p, "\xef\xbb\xbf", 3))
			p += 3; /* UTF-8 byte order mark */
		p = trim(p);
		if (!*p || *p == '#')
			continue;
		ret = split_line(p, &key, &value, msg, sizeof(msg));
		if (!ret)
			ret = config_set(c, key, value, msg, sizeof(msg));
		if (ret)
			break;
	}
	if (!ret && ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(EIO));
	} else if (ret) {
		snprintf(err, errlen, "%s:%zu: %s", path, lineno, msg);
	}
	free(line);
	fclose(f);
	if (!ret)
		ret = config_set_str(&c->config_path, path, err, errlen);
	return ret;
}

void config_usage(void)
{
	const int col = 30;

	printf("Usage: ebprof agent [OPTIONS]\n"
	       "Profile every postgres process continuously: one pprof per process and\n"
	       "interval, written to disk and optionally pushed to profefe or Pyroscope.\n"
	       "Every option can also be set in the config file as 'key = value'\n"
	       "(e.g. 'interval = 60'); flags override the file.\n");
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct key_def *k = &config_keys[i];
		char left[64];
		const char *h = k->help;
		int n;

		if (k->section)
			printf("\n%s:\n", k->section);
		if (k->shortopt)
			n = snprintf(left, sizeof(left), "  -%c, --%s", k->shortopt, k->name);
		else
			n = snprintf(left, sizeof(left), "      --%s", k->name);
		if (k->arg)
			n += snprintf(left + n, sizeof(left) - n, " %s", k->arg);
		printf("%s", left);
		if (n >= col - 1)
			printf("\n%*s", col, "");
		else
			printf("%*s", col - n, "");
		/* Help lines after the first are indented to the column. */
		for (;;) {
			size_t l = strcspn(h, "\n");

			printf("%.*s", (int)l, h);
			if (!h[l])
				break;
			printf("\n%*s", col, "");
			h += l + 1;
		}
		if (k->def && col + strlen(h) + strlen(k->def) + 12 > 80)
			printf("\n%*s(default: %s)", col, "", k->def);
		else if (k->def)
			printf(" (default: %s)", k->def);
		printf("\n");
	}
	printf("\nGeneral:\n"
	       "      --config PATH           config file (default " CONFIG_DEFAULT_PATH ",\n"
	       "                              read only if it exists)\n"
	       "  -v, --verbose               log-level one step higher (repeatable)\n"
	       "  -h, --help                  this help\n"
	       "      --version               print the version\n"
	       "\n"
	       "Durations: 3600, 90m, 12h, 7d, 2w. Sizes: 1000, 1024K, 512M, 1G (powers of\n"
	       "1024; KiB, MiB, GiB, TiB also accepted). Booleans in the file: true/false,\n"
	       "yes/no, on/off, 1/0. Lists are separated by commas.\n"
	       "Exit status: 0 success, 1 runtime failure, 2 bad configuration.\n");
}

/* Build the getopt_long tables from config_keys[]. */
static void build_options(struct option *opts, char *shortopts)
{
	size_t n = 0, s = 0;

	shortopts[s++] = ':';
	for (size_t i = 0; i < config_nkeys; i++) {
		opts[n++] = (struct option){ config_keys[i].name,
					     config_keys[i].type == T_BOOL ? optional_argument
									   : required_argument,
					     NULL, OPT_KEY + (int)i };
		if (config_keys[i].shortopt) {
			shortopts[s++] = config_keys[i].shortopt;
			shortopts[s++] = ':';
		}
	}
	opts[n++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	opts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	memcpy(shortopts + s, "vh", 3);
}

static int key_of_option(int opt)
{
	if (opt >= OPT_KEY && opt < OPT_KEY + (int)config_nkeys)
		return opt - OPT_KEY;
	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].shortopt && config_keys[i].shortopt == opt)
			return (int)i;
	return -1;
}

int config_parse_args_path(struct agent_config *c, int argc, char **argv, const char *default_path,
			   char *err, size_t errlen)
{
	struct option opts[CONFIG_MAX_KEYS + 5];
	char shortopts[2 * CONFIG_MAX_KEYS + 4], what[64];
	const char *config_path = NULL;
	int opt, verbose = 0, ret, i;

	build_options(opts, shortopts);

	/* Pass 1: --help and --config only; errors are reported by pass 2. */
	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		if (opt == 'h') {
			config_usage();
			return 1;
		}
		if (opt == OPT_VERSION) {
			puts(ebprof_version_line);
			return 1;
		}
		if (opt == OPT_CONFIG)
			config_path = optarg;
	}

	if (config_path) {
		ret = config_load_file(c, config_path, err, errlen);
		if (ret)
			return ret;
	} else if (default_path) {
		ret = config_load_file(c, default_path, err, errlen);
		if (ret == -ENOENT)
			err[0] = '\0';
		else if (ret)
			return ret;
	}

	/* Pass 2: every flag, in order, over the file. */
	optind = 0;
	while ((opt = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (opt) {
		case OPT_CONFIG:
			break;
		case 'v':
			verbose++;
			break;
		case ':':
		case '?':
			return args_option_error(opt, argv, opts, "agent", err, errlen);
		default:
			i = key_of_option(opt);
			if (i < 0)
				return args_fail(err, errlen, "internal error: option %d", opt);
			snprintf(what, sizeof(what), "--%s", config_keys[i].name);
			ret = config_key_apply(c, &config_keys[i],
					       config_keys[i].type == T_BOOL && !optarg ? "true"
											: optarg,
					       what, err, errlen);
			if (ret)
				return ret;
		}
	}
	if (optind < argc)
		return args_fail(err, errlen, "unexpected argument '%s' (see ebprof agent --help)",
				 argv[optind]);
	c->log_level = c->log_level + verbose > LOG_DEBUG ? LOG_DEBUG : c->log_level + verbose;
	if (c->no_kernel && c->no_user)
		return args_fail(err, errlen,
				 "no-kernel and no-user together leave nothing to sample");
	return 0;
}

int config_parse_args(struct agent_config *c, int argc, char **argv, char *err, size_t errlen)
{
	return config_parse_args_path(c, argc, argv, CONFIG_DEFAULT_PATH, err, errlen);
}
