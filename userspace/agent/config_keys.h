/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The keys of the agent's configuration (config.h), shared by the two
 * files of the configuration: config_keys.c owns the table (type, range,
 * field, default and help of every key) and applies values; config.c
 * derives the config file parser, the getopt_long table and the usage text
 * from it.
 */
#ifndef EBPROF_CONFIG_KEYS_H
#define EBPROF_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

enum key_type {
	T_INT,	       /* int in [min, max] */
	T_BOOL,	       /* bool; a plain flag on the command line */
	T_PATH,	       /* absolute path (char *); "" if empty_ok */
	T_DURATION,    /* int64_t seconds */
	T_SIZE,	       /* int64_t bytes */
	T_NAMES,       /* char ** + size_t count, at most max names */
	T_PIDS,	       /* uint32_t * + size_t count */
	T_CGROUPS,     /* char ** + size_t count, resolved cgroup v2 directories */
	T_SERVICE,     /* char *, [A-Za-z0-9._-]{1,128} */
	T_URL,	       /* char *, http(s) base URL; "" = NULL */
	T_URLS,	       /* char *, space-separated http(s) URLs; "" kept */
	T_TEXT,	       /* char *, any printable text; "" = NULL */
	T_LISTEN,      /* char *, ADDR:PORT or "" */
	T_LOGLEVEL,    /* int, enum log_level */
	T_QUERYLABELS, /* enum query_labels */
	T_UNWIND,      /* enum sampler_unwind */
	T_OFFCPU_PATH, /* enum sampler_offcpu_path */
	T_TYPES,       /* unsigned, PTYPE_BIT()s of "cpu,offcpu" */
};

struct key_def {
	const char *name;
	enum key_type type;
	size_t off;	     /* field in struct agent_config */
	size_t off_n;	     /* T_NAMES/T_PIDS/T_CGROUPS: the count field */
	char shortopt;	     /* 0 = none */
	long min, max;	     /* T_INT range; T_NAMES: max = most names */
	bool empty_ok;	     /* T_PATH: "" allowed (= off); T_SIZE: "0" allowed */
	const char *arg;     /* placeholder in the usage */
	const char *def;     /* default, applied by config_defaults(); NULL = none */
	const char *help;    /* usage text ('\n' continues on the next line) */
	const char *section; /* usage heading printed before this key */
};

/* The single list of keys, in usage order (at most CONFIG_MAX_KEYS). */
#define CONFIG_MAX_KEYS 64
extern const struct key_def config_keys[];
extern const size_t config_nkeys;

/* The key of that name, or NULL. */
const struct key_def *config_key_find(const char *name);

/*
 * Apply one value to key k; what is how the key is named in messages
 * ("interval" in the file, "--interval" for flags). 0, or -EINVAL /
 * -ENOMEM with a one-line message in err.
 */
int config_key_apply(struct agent_config *c, const struct key_def *k, const char *v,
		     const char *what, char *err, size_t errlen);

/* Replace a string field with a copy of v (NULL allowed). 0 or -ENOMEM. */
int config_set_str(char **field, const char *v, char *err, size_t errlen);

#endif /* EBPROF_CONFIG_KEYS_H */
