/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Configuration of `ebprof agent`: defaults, the config file
 * (/etc/ebprof/ebprof.conf, `key = value`, '#' comments) and command-line
 * flags, which use the same names as the file keys (`--output-dir` <->
 * `output-dir = ...`). Flags override the file. Unknown keys and bad values
 * are errors naming the key and, for the file, the path and line.
 *
 * A struct agent_config owns all its strings and arrays; free it with
 * config_free().
 *
 * File syntax: one `key = value` per line; blank lines and lines starting
 * with '#' are ignored; white space around key and value is trimmed; an
 * unquoted value ends at a '#' preceded by white space (a comment), so
 * `pass#word` stays whole; "double quotes" keep spaces and
 * '#' (escapes \" and \\). A key given twice: the later line wins (as a
 * later flag wins over an earlier one and over the file); lists (comm, pid,
 * cgroup) are replaced, not appended. An empty list value (`pid =`) empties
 * the list, `comm =` included. Booleans: true/false/yes/no/on/off/1/0.
 * On the command line booleans are plain flags (`--no-kernel`), also
 * `--no-kernel=false`. -v raises the log level one step after everything
 * else was applied (repeatable, capped at debug). no-kernel together with
 * no-user is an error. URLs lose their trailing '/'. cgroup paths are
 * stored as canonical /sys/fs/cgroup/... directories (a path given
 * relative to the cgroup root is resolved under the cgroup v2 mount:
 * /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid hosts), and must
 * be cgroup v2 directories.
 *
 * On error the struct stays valid (partly updated): config_free() it.
 */
#ifndef EBPROF_CONFIG_H
#define EBPROF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/table.h"
#include "sampling/sampler.h"

#define CONFIG_DEFAULT_PATH "/etc/ebprof/ebprof.conf"

struct agent_config {
	int frequency;			/* frequency: Hz, 1..10000, default 19 */
	unsigned profile_types;		/* profile-types: PTYPE_BIT()s, default cpu */
	int offcpu_min_us;		/* offcpu-min: microseconds, default 0 */
	int offcpu_ratio;		/* offcpu-ratio: percent of switches, default 100 */
	int offcpu_period_us;		/* offcpu-period: microseconds, 0: every wait */
	int faults_period;		/* faults-period: a sample every N page faults */
	int64_t memory_min_rss;		/* memory-min-rss: bytes, default 8M */
	int interval;			/* interval: seconds, 1..86400, default 60 */
	bool group_short_lived;		/* group-short-lived: default true */
	int group_min_samples;		/* group-min-samples: 0..1000000, default 0 */
	enum query_labels query_labels; /* query-labels: default normalized */
	char *output_dir;      /* output-dir: default /var/lib/ebprof/profiles; "" = no disk sink */
	int64_t retention_age; /* retention-age: seconds ("7d", "12h", "90m", "3600"), default 7d */
	int64_t retention_size; /* retention-size: bytes ("1G", "512M", "1024K", "1000"), default 1
				   GiB */
	char **comms;		/* comm: names, default postgres,postmaster */
	size_t ncomms;
	uint32_t *pids; /* pid: extra processes */
	size_t npids;
	char **cgroups; /* cgroup: cgroup v2 paths (comma-separated list) */
	size_t ncgroups;
	char *service;		       /* service: default the host name */
	char *push_profefe;	       /* push-profefe: base URL, NULL = off */
	char *profefe_token;	       /* profefe-token: bearer token, NULL = none */
	char *push_pyroscope;	       /* push-pyroscope: base URL, NULL = off */
	char *pyroscope_user;	       /* pyroscope-user: basic auth user */
	char *pyroscope_password;      /* pyroscope-password */
	char *pyroscope_tenant;	       /* pyroscope-tenant: X-Scope-OrgID */
	char *queue_dir;	       /* queue-dir: default /var/lib/ebprof/queue */
	int64_t queue_size;	       /* queue-size: bytes per remote, default 256M */
	int remote_timeout;	       /* remote-timeout: seconds per push, 1..600, default 30 */
	char *debuginfod_urls;	       /* debuginfod-urls: NULL = $DEBUGINFOD_URLS, "" = none */
	char *debuginfod_cache;	       /* debuginfod-cache: default /var/cache/ebprof/debuginfod */
	int64_t debuginfod_cache_size; /* debuginfod-cache-size: bytes, default 1G */
	int debuginfod_timeout;	       /* debuginfod-timeout: seconds, 1..600, default 10 */
	bool offline;		       /* offline: no debuginfod */
	char *http_listen;	    /* http-listen: ADDR:PORT, default 127.0.0.1:3080, "" = off */
	bool no_kernel;		    /* no-kernel: true/false */
	bool no_user;		    /* no-user */
	bool no_plpgsql;	    /* no-plpgsql: no PL/pgSQL frames */
	char *btf;		    /* btf: vmlinux BTF file, NULL = /sys/kernel/btf/vmlinux */
	enum sampler_unwind unwind; /* unwind: dwarf (default) or fp */
	int64_t unwind_budget;	    /* unwind-budget: bytes of unwind tables, default 64M */
	int64_t memory_budget;	    /* memory-budget: resident bytes, default 20M, 0 = none */
	int log_level;	   /* log-level: error|warn|info|debug -> enum log_level, default info */
	char *config_path; /* --config: the file read, NULL if none */

	int offcpu_rate;		      /* offcpu-rate: the wait sampler's Hz, default 10 */
	enum sampler_offcpu_path offcpu_path; /* offcpu-path: auto, iterator or switch */
};

/* Fill defaults (host name for service, characters outside [A-Za-z0-9._-]
 * replaced by '_'). Overwrites *c without freeing it. 0 or -ENOMEM. */
int config_defaults(struct agent_config *c);
void config_free(struct agent_config *c);

/* Whether a and b configure the same agent: every field of struct
 * agent_config (a field added there belongs here too). */
bool config_equal(const struct agent_config *a, const struct agent_config *b);

/* Whether a and b set up the symbolizer alike (the debuginfod keys and
 * offline): a reload keeps its warm cache then. */
bool config_same_symbols(const struct agent_config *a, const struct agent_config *b);

/*
 * Apply one key/value (from a flag or the file). 0, or -EINVAL with a
 * one-line message in err naming the key, e.g.
 *   "interval must be an integer between 1 and 86400, got 'x'"
 *   "unknown key 'foo'"
 */
int config_set(struct agent_config *c, const char *key, const char *value, char *err,
	       size_t errlen);

/*
 * Read a config file and apply its keys. Errors name path and line:
 *   "/etc/ebprof/ebprof.conf:12: unknown key 'foo'"
 *   "/etc/ebprof/ebprof.conf:3: expected 'key = value'"
 * A missing file is -ENOENT (the caller decides whether that matters:
 * the default path may be absent, an explicit --config may not); other
 * open/read errors are -errno. Keys before a bad line stay applied. On
 * success c->config_path is set to a copy of path.
 */
int config_load_file(struct agent_config *c, const char *path, char *err, size_t errlen);

/*
 * Parse the agent's command line (argv[0] = "agent"): every key as
 * --key VALUE or --key=VALUE, plus -F (frequency), -p (pid), -v (raise
 * log level), -h/--help, --config PATH, --no-kernel, --no-user. Reads the
 * config file first (--config PATH, else the default path if it exists),
 * then applies the flags. c must have been filled by config_defaults().
 * Returns 0, 1 when --help was printed, or a negative errno with the
 * message in err: -EINVAL for bad flags/values, or the file's error
 * (-ENOENT when an explicit --config does not exist).
 */
int config_parse_args(struct agent_config *c, int argc, char **argv, char *err, size_t errlen);
/* The same with another default config path (NULL = none); for tests. */
int config_parse_args_path(struct agent_config *c, int argc, char **argv, const char *default_path,
			   char *err, size_t errlen);

/* Print the agent's usage (every flag) to stdout. */
void config_usage(void);

/* Parsers shared with other commands: "7d" -> seconds (suffix s, m, h, d,
 * w), "1G" -> bytes (K, M, G, T or KiB..TiB, powers of 1024). 0, -EINVAL
 * for bad syntax (signs, spaces, unknown suffix, empty), -ERANGE for 0 or
 * a value that does not fit in int64_t. */
int config_parse_duration(const char *s, int64_t *out);
int config_parse_size(const char *s, int64_t *out);
/* "127.0.0.1:3080", "[::1]:3080", "localhost:3080" -> host (without the
 * brackets, copied into host unless NULL) and port 1..65535. 0 or -EINVAL. */
int config_parse_listen(const char *s, char *host, size_t hostlen, int *port);

#endif /* EBPROF_CONFIG_H */
