// SPDX-License-Identifier: BSD-2-Clause
/*
 * The keys of `ebprof agent`'s configuration (config_keys.h): one table
 * lists every key with its type, range, field, default and help text, and
 * how a value of each type is checked and applied.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <linux/types.h>

#include "config_keys.h"
#include "ebprof/bpf_shared.h"
#include "http/http.h"
#include "process/targets.h"
#include "sinks/remote/remote.h"
#include "util/args.h"
#include "util/log.h"
#include "util/netlisten.h"

#define SERVICE_MAX 128

#define F(f) offsetof(struct agent_config, f)

/* The single list of keys: file keys, long flags, defaults and usage. */
const struct key_def config_keys[] = {
	{ .name = "frequency",
	  .type = T_INT,
	  .off = F(frequency),
	  .shortopt = 'F',
	  .min = 1,
	  .max = 10000,
	  .arg = "HZ",
	  .def = "19",
	  .section = "Sampling",
	  .help = "samples per second per CPU, 1..10000" },
	{ .name = "interval",
	  .type = T_INT,
	  .off = F(interval),
	  .min = 1,
	  .max = 86400,
	  .arg = "SECS",
	  .def = "60",
	  .help = "seconds covered by each profile, 1..86400" },
	{ .name = "group-short-lived",
	  .type = T_BOOL,
	  .off = F(group_short_lived),
	  .def = "true",
	  .help = "processes younger than an interval share one\n"
		  "profile per backend type, database and user\n"
		  "(or name); off: a profile per process" },
	{ .name = "group-min-samples",
	  .type = T_INT,
	  .off = F(group_min_samples),
	  .min = 0,
	  .max = 1000000,
	  .arg = "N",
	  .def = "0",
	  .help = "also group processes with fewer than N\n"
		  "samples in an interval, 0..1000000" },
	{ .name = "query-labels",
	  .type = T_QUERYLABELS,
	  .off = F(query_labels),
	  .arg = "MODE",
	  .def = "normalized",
	  .help = "statement labels of PostgreSQL samples:\n"
		  "normalized (query, query_fingerprint,\n"
		  "query_id), fingerprint (no text) or off\n"
		  "(nothing read from backends)" },
	{ .name = "no-kernel",
	  .type = T_BOOL,
	  .off = F(no_kernel),
	  .help = "do not collect kernel stacks" },
	{ .name = "no-user",
	  .type = T_BOOL,
	  .off = F(no_user),
	  .help = "do not collect user stacks" },
	{ .name = "unwind",
	  .type = T_UNWIND,
	  .off = F(unwind),
	  .arg = "MODE",
	  .def = "dwarf",
	  .help = "user stacks: dwarf (from the binaries' CFI,\n"
		  "unwound in BPF) or fp (frame pointers only)" },
	{ .name = "unwind-budget",
	  .type = T_SIZE,
	  .off = F(unwind_budget),
	  .arg = "SIZE",
	  .def = "64M",
	  .help = "kernel memory for unwind tables; when full,\n"
		  "the binaries sampled least are unwound by\n"
		  "frame pointers" },
	{ .name = "btf",
	  .type = T_PATH,
	  .off = F(btf),
	  .arg = "PATH",
	  .help = "vmlinux BTF file for kernels without\n/sys/kernel/btf/vmlinux" },
	{ .name = "comm",
	  .type = T_NAMES,
	  .off = F(comms),
	  .off_n = F(ncomms),
	  .max = EBPROF_MAX_COMMS,
	  .arg = "NAME[,NAME]",
	  .def = "postgres,postmaster",
	  .section = "Targets",
	  .help = "processes with these names (at most 8)" },
	{ .name = "pid",
	  .type = T_PIDS,
	  .off = F(pids),
	  .off_n = F(npids),
	  .shortopt = 'p',
	  .arg = "PID[,PID]",
	  .help = "these processes too (and their children)" },
	{ .name = "cgroup",
	  .type = T_CGROUPS,
	  .off = F(cgroups),
	  .off_n = F(ncgroups),
	  .arg = "PATH[,PATH]",
	  .help = "processes in these cgroup v2 directories:\n"
		  "/sys/fs/cgroup/... or relative to the cgroup\n"
		  "root (/system.slice/postgresql.service)" },
	{ .name = "output-dir",
	  .type = T_PATH,
	  .off = F(output_dir),
	  .empty_ok = true,
	  .arg = "DIR",
	  .def = "/var/lib/ebprof/profiles",
	  .section = "Local store",
	  .help = "write the profiles under DIR (\"\" = no files)" },
	{ .name = "retention-age",
	  .type = T_DURATION,
	  .off = F(retention_age),
	  .arg = "AGE",
	  .def = "7d",
	  .help = "delete profiles older than AGE" },
	{ .name = "retention-size",
	  .type = T_SIZE,
	  .off = F(retention_size),
	  .arg = "SIZE",
	  .def = "1G",
	  .help = "keep at most SIZE of profiles" },
	{ .name = "service",
	  .type = T_SERVICE,
	  .off = F(service),
	  .arg = "NAME",
	  .help = "service of the profiles, [A-Za-z0-9._-]\n(default: the host name)" },
	{ .name = "push-profefe",
	  .type = T_URL,
	  .off = F(push_profefe),
	  .arg = "URL",
	  .section = "Remotes",
	  .help = "push profiles to this profefe collector" },
	{ .name = "profefe-token",
	  .type = T_TEXT,
	  .off = F(profefe_token),
	  .arg = "TOKEN",
	  .help = "bearer token of that collector\n(the token-file of ebprof serve)" },
	{ .name = "push-pyroscope",
	  .type = T_URL,
	  .off = F(push_pyroscope),
	  .arg = "URL",
	  .help = "push profiles to this Grafana Pyroscope" },
	{ .name = "pyroscope-user",
	  .type = T_TEXT,
	  .off = F(pyroscope_user),
	  .arg = "USER",
	  .help = "basic auth user for Pyroscope" },
	{ .name = "pyroscope-password",
	  .type = T_TEXT,
	  .off = F(pyroscope_password),
	  .arg = "PASS",
	  .help = "basic auth password (better in the file)" },
	{ .name = "pyroscope-tenant",
	  .type = T_TEXT,
	  .off = F(pyroscope_tenant),
	  .arg = "ID",
	  .help = "Pyroscope tenant (X-Scope-OrgID)" },
	{ .name = "queue-dir",
	  .type = T_PATH,
	  .off = F(queue_dir),
	  .arg = "DIR",
	  .def = "/var/lib/ebprof/queue",
	  .help = "profiles not yet pushed wait here" },
	{ .name = "queue-size",
	  .type = T_SIZE,
	  .off = F(queue_size),
	  .arg = "SIZE",
	  .def = "256M",
	  .help = "queue at most SIZE per remote" },
	{ .name = "debuginfod-urls",
	  .type = T_URLS,
	  .off = F(debuginfod_urls),
	  .arg = "URL[ URL]",
	  .section = "Symbols",
	  .help = "fetch missing debug files by build-id from\n"
		  "these debuginfod servers, in the background\n"
		  "(default: $DEBUGINFOD_URLS; \"\" = none)" },
	{ .name = "debuginfod-cache",
	  .type = T_PATH,
	  .off = F(debuginfod_cache),
	  .arg = "DIR",
	  .def = "/var/cache/ebprof/debuginfod",
	  .help = "debug files fetched are kept here" },
	{ .name = "debuginfod-cache-size",
	  .type = T_SIZE,
	  .off = F(debuginfod_cache_size),
	  .arg = "SIZE",
	  .def = "1G",
	  .help = "keep at most SIZE of them" },
	{ .name = "debuginfod-timeout",
	  .type = T_INT,
	  .off = F(debuginfod_timeout),
	  .min = 1,
	  .max = 600,
	  .arg = "SECS",
	  .def = "10",
	  .help = "seconds a server may take, 1..600" },
	{ .name = "offline",
	  .type = T_BOOL,
	  .off = F(offline),
	  .help = "never ask debuginfod servers" },
	{ .name = "http-listen",
	  .type = T_LISTEN,
	  .off = F(http_listen),
	  .arg = "ADDR:PORT",
	  .def = "127.0.0.1:3080",
	  .section = "Daemon",
	  .help = "HTTP endpoint: IPv4, [IPv6] or localhost\n"
		  "and a port; \"\" = off" },
	{ .name = "log-level",
	  .type = T_LOGLEVEL,
	  .off = F(log_level),
	  .arg = "LEVEL",
	  .def = "info",
	  .help = "error, warn, info or debug" },
};

const size_t config_nkeys = sizeof(config_keys) / sizeof(config_keys[0]);
_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) <= CONFIG_MAX_KEYS,
	       "raise CONFIG_MAX_KEYS");

static int no_memory(char *err, size_t errlen)
{
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

const struct key_def *config_key_find(const char *name)
{
	for (size_t i = 0; i < config_nkeys; i++)
		if (!strcmp(config_keys[i].name, name))
			return &config_keys[i];
	return NULL;
}

#define FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))
#define COUNT(c, k) ((size_t *)((char *)(c) + (k)->off_n))

static bool has_control_chars(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool valid_service(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > SERVICE_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "1", "on" };
	static const char *const no[] = { "false", "no", "0", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_log_level(const char *s, int *out)
{
	static const char *const names[] = { [LOG_ERROR] = "error",
					     [LOG_WARN] = "warn",
					     [LOG_INFO] = "info",
					     [LOG_DEBUG] = "debug" };

	for (int i = 0; i <= LOG_DEBUG; i++) {
		if (!strcasecmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_cgroups(const char *s, const char *what, char ***out, size_t *n, char *err,
			 size_t errlen)
{
	size_t cap = 1, count = 0;
	char msg[PATH_MAX + 256];
	char **list;
	int ret;

	for (const char *c = s; *c; c++)
		cap += *c == ',';
	list = calloc(cap, sizeof(*list));
	if (!list)
		return no_memory(err, errlen);
	for (const char *p = s;; p += strcspn(p, ",") + 1) {
		ret = targets_cgroup_resolve(p, strcspn(p, ","), &list[count], msg, sizeof(msg));
		if (ret) {
			snprintf(err, errlen, "%s: %s", what, msg);
			args_free_list(list, count);
			return ret;
		}
		count++;
		if (!p[strcspn(p, ",")])
			break;
	}
	*out = list;
	*n = count;
	return 0;
}

int config_set_str(char **field, const char *v, char *err, size_t errlen)
{
	char *copy = NULL;

	if (v) {
		copy = strdup(v);
		if (!copy)
			return no_memory(err, errlen);
	}
	free(*field);
	*field = copy;
	return 0;
}

int config_key_apply(struct agent_config *c, const struct key_def *k, const char *v,
		     const char *what, char *err, size_t errlen)
{
	char msg[384];
	int64_t i64;
	long l;
	int ret;

	switch (k->type) {
	case T_INT:
		ret = args_parse_int(v, what, k->min, k->max, &l, err, errlen);
		if (ret)
			return ret;
		*FIELD(c, k, int) = (int)l;
		return 0;
	case T_BOOL:
		if (parse_bool(v, FIELD(c, k, bool)))
			return args_fail(err, errlen,
					 "%s must be true/false, yes/no, on/off or 1/0, got '%s'",
					 what, v);
		return 0;
	case T_PATH:
		if (!*v && k->empty_ok)
			return config_set_str(FIELD(c, k, char *), "", err, errlen);
		if (v[0] != '/' || has_control_chars(v))
			return args_fail(err, errlen, "%s must be an absolute path%s, got '%s'",
					 what, k->empty_ok ? " or \"\"" : "", v);
		return config_set_str(FIELD(c, k, char *), v, err, errlen);
	case T_DURATION:
		ret = args_parse_duration(v, &i64);
		if (ret == -EINVAL)
			return args_fail(
				err, errlen,
				"%s must be a duration in seconds or with a suffix s, m, h, d "
				"or w (e.g. 7d), got '%s'",
				what, v);
		if (ret)
			return args_fail(err, errlen,
					 "%s must be greater than 0 and fit in 64 bits, got '%s'",
					 what, v);
		*FIELD(c, k, int64_t) = i64;
		return 0;
	case T_SIZE:
		ret = args_parse_size(v, &i64);
		if (ret == -EINVAL)
			return args_fail(err, errlen,
					 "%s must be a size in bytes or with a suffix K, M, G or T "
					 "(e.g. 512M), got '%s'",
					 what, v);
		if (ret)
			return args_fail(err, errlen,
					 "%s must be greater than 0 and fit in 64 bits, got '%s'",
					 what, v);
		*FIELD(c, k, int64_t) = i64;
		return 0;
	case T_NAMES: {
		char **names = NULL;
		size_t n = 0;

		if (*v) {
			ret = args_parse_names(v, &names, &n, msg, sizeof(msg));
			if (ret == -ENOMEM)
				return no_memory(err, errlen);
			if (ret)
				return args_fail(err, errlen, "%s: %s", what, msg);
			if (k->max && n > (size_t)k->max) {
				args_free_list(names, n);
				return args_fail(err, errlen,
						 "%s takes at most %ld names, got %zu in '%s'",
						 what, k->max, n, v);
			}
		}
		args_free_list(*FIELD(c, k, char **), *COUNT(c, k));
		*FIELD(c, k, char **) = names;
		*COUNT(c, k) = n;
		return 0;
	}
	case T_PIDS: {
		uint32_t *pids = NULL;
		size_t n = 0;

		if (*v) {
			ret = args_parse_pids(v, &pids, &n, msg, sizeof(msg));
			if (ret == -ENOMEM)
				return no_memory(err, errlen);
			if (ret)
				return args_fail(err, errlen, "%s: %s", what, msg);
		}
		free(*FIELD(c, k, uint32_t *));
		*FIELD(c, k, uint32_t *) = pids;
		*COUNT(c, k) = n;
		return 0;
	}
	case T_CGROUPS: {
		char **list = NULL;
		size_t n = 0;

		if (*v) {
			ret = parse_cgroups(v, what, &list, &n, err, errlen);
			if (ret)
				return ret;
		}
		args_free_list(*FIELD(c, k, char **), *COUNT(c, k));
		*FIELD(c, k, char **) = list;
		*COUNT(c, k) = n;
		return 0;
	}
	case T_SERVICE:
		if (!valid_service(v))
			return args_fail(
				err, errlen,
				"%s must be 1 to %d characters among A-Z a-z 0-9 . _ -, got '%s'",
				what, SERVICE_MAX, v);
		return config_set_str(FIELD(c, k, char *), v, err, errlen);
	case T_URL: {
		char *copy;
		size_t n;

		if (!*v)
			return config_set_str(FIELD(c, k, char *), NULL, err, errlen);
		if (remote_check_url(v))
			return args_fail(err, errlen,
					 "%s must be an http:// or https:// URL with a host and no "
					 "query, or \"\", got '%s'",
					 what, v);
		copy = strdup(v);
		if (!copy)
			return no_memory(err, errlen);
		/* A base URL: "http://h:1/" -> "http://h:1" (paths are appended). */
		n = strlen(copy);
		while (n && copy[n - 1] == '/' && strstr(copy, "://") + 3 < copy + n - 1)
			copy[--n] = '\0';
		free(*FIELD(c, k, char *));
		*FIELD(c, k, char *) = copy;
		return 0;
	}
	case T_URLS: {
		char *copy = strdup(v), *save = NULL;

		if (!copy)
			return no_memory(err, errlen);
		for (char *u = strtok_r(copy, " \t", &save); u; u = strtok_r(NULL, " \t", &save)) {
			if (remote_check_url(u)) {
				ret = args_fail(err, errlen,
						"%s must be http:// or https:// URLs separated by "
						"spaces, or \"\", got '%s'",
						what, u);
				free(copy);
				return ret;
			}
		}
		free(copy);
		/* "" is kept: it turns $DEBUGINFOD_URLS off */
		return config_set_str(FIELD(c, k, char *), v, err, errlen);
	}
	case T_TEXT:
		if (has_control_chars(v))
			return args_fail(err, errlen, "%s must not contain control characters",
					 what);
		return config_set_str(FIELD(c, k, char *), *v ? v : NULL, err, errlen);
	case T_LISTEN: {
		int port;

		if (*v && net_parse_listen(v, NULL, 0, &port))
			return args_fail(err, errlen,
					 "%s must be ADDR:PORT (IPv4 address, [IPv6 address] or "
					 "localhost; port 1..65535) or \"\", got '%s'",
					 what, v);
		return config_set_str(FIELD(c, k, char *), v, err, errlen);
	}
	case T_QUERYLABELS:
		if (query_labels_parse(v, FIELD(c, k, enum query_labels)))
			return args_fail(err, errlen,
					 "%s must be normalized, fingerprint or off, got '%s'",
					 what, v);
		return 0;
	case T_UNWIND:
		if (sampler_unwind_parse(v, FIELD(c, k, enum sampler_unwind)))
			return args_fail(err, errlen, "%s must be dwarf or fp, got '%s'", what, v);
		return 0;
	case T_LOGLEVEL:
		if (parse_log_level(v, FIELD(c, k, int)))
			return args_fail(err, errlen,
					 "%s must be error, warn, info or debug, got '%s'", what,
					 v);
		return 0;
	}
	return args_fail(err, errlen, "%s: internal error: unknown key type", what);
}

int config_defaults(struct agent_config *c)
{
	char host[256] = "";
	char err[256];
	size_t n;
	int ret;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < config_nkeys; i++) {
		if (!config_keys[i].def)
			continue;
		ret = config_key_apply(c, &config_keys[i], config_keys[i].def, config_keys[i].name,
				       err, sizeof(err));
		if (ret) {
			config_free(c);
			return ret;
		}
	}
	/* service: the host name, made a valid service name. */
	if (gethostname(host, sizeof(host) - 1))
		host[0] = '\0';
	host[SERVICE_MAX] = '\0';
	for (n = 0; host[n]; n++)
		if (!isalnum((unsigned char)host[n]) && !strchr("._-", host[n]))
			host[n] = '_';
	c->service = strdup(n ? host : "localhost");
	if (!c->service) {
		config_free(c);
		return -ENOMEM;
	}
	return 0;
}

void config_free(struct agent_config *c)
{
	if (!c)
		return;
	free(c->output_dir);
	args_free_list(c->comms, c->ncomms);
	free(c->pids);
	args_free_list(c->cgroups, c->ncgroups);
	free(c->service);
	free(c->push_profefe);
	free(c->push_pyroscope);
	free(c->pyroscope_user);
	free(c->pyroscope_password);
	free(c->profefe_token);
	free(c->pyroscope_tenant);
	free(c->queue_dir);
	free(c->debuginfod_urls);
	free(c->debuginfod_cache);
	free(c->btf);
	free(c->http_listen);
	free(c->config_path);
	memset(c, 0, sizeof(*c));
}

int config_set(struct agent_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key_def *k = config_key_find(key);

	if (!k)
		return args_fail(err, errlen, "unknown key '%s'", key);
	return config_key_apply(c, k, value, k->name, err, errlen);
}
