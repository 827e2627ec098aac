// SPDX-License-Identifier: BSD-2-Clause
/*
 * Applying values to the agent's configuration keys (config_keys.h): how a
 * value of each key type is checked and stored, the defaults, and the
 * config's release. The table of keys is config_keys.c.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config_keys.h"
#include "http/http.h"
#include "process/targets.h"
#include "sinks/remote/remote.h"
#include "util/args.h"
#include "util/log.h"
#include "util/netlisten.h"
#include "util/profile_types.h"

#define SERVICE_MAX 128

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
		if (k->empty_ok && !strcmp(v, "0")) {
			*FIELD(c, k, int64_t) = 0;
			return 0;
		}
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
	case T_OFFCPU_PATH:
		if (sampler_offcpu_path_parse(v, FIELD(c, k, enum sampler_offcpu_path)))
			return args_fail(err, errlen,
					 "%s must be auto, iterator or switch, got '%s'", what, v);
		return 0;
	case T_TYPES: {
		unsigned types = 0;
		char names[64];

		if (ptype_parse_list(v, &types))
			return args_fail(err, errlen,
					 "%s must be a comma-separated list of %s, got '%s'", what,
					 ptype_names(PTYPE_ALL, " or ", names, sizeof(names)), v);
		*FIELD(c, k, unsigned) = types;
		return 0;
	}
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

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_strs(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!same_str(a[i], b[i]))
			return false;
	return true;
}

bool config_same_symbols(const struct agent_config *a, const struct agent_config *b)
{
	return same_str(a->debuginfod_urls, b->debuginfod_urls) &&
	       same_str(a->debuginfod_cache, b->debuginfod_cache) &&
	       a->debuginfod_cache_size == b->debuginfod_cache_size &&
	       a->debuginfod_timeout == b->debuginfod_timeout && a->offline == b->offline;
}

bool config_equal(const struct agent_config *a, const struct agent_config *b)
{
	return a->frequency == b->frequency && a->profile_types == b->profile_types &&
	       a->offcpu_min_us == b->offcpu_min_us && a->offcpu_ratio == b->offcpu_ratio &&
	       a->offcpu_period_us == b->offcpu_period_us && a->offcpu_rate == b->offcpu_rate &&
	       a->offcpu_path == b->offcpu_path && a->faults_period == b->faults_period &&
	       a->memory_min_rss == b->memory_min_rss && a->interval == b->interval &&
	       a->group_short_lived == b->group_short_lived &&
	       a->group_min_samples == b->group_min_samples && a->query_labels == b->query_labels &&
	       same_str(a->output_dir, b->output_dir) && a->retention_age == b->retention_age &&
	       a->retention_size == b->retention_size &&
	       same_strs(a->comms, a->ncomms, b->comms, b->ncomms) && a->npids == b->npids &&
	       (!a->npids || !memcmp(a->pids, b->pids, a->npids * sizeof(*a->pids))) &&
	       same_strs(a->cgroups, a->ncgroups, b->cgroups, b->ncgroups) &&
	       same_str(a->service, b->service) && same_str(a->push_profefe, b->push_profefe) &&
	       same_str(a->profefe_token, b->profefe_token) &&
	       same_str(a->push_pyroscope, b->push_pyroscope) &&
	       same_str(a->pyroscope_user, b->pyroscope_user) &&
	       same_str(a->pyroscope_password, b->pyroscope_password) &&
	       same_str(a->pyroscope_tenant, b->pyroscope_tenant) &&
	       same_str(a->queue_dir, b->queue_dir) && a->queue_size == b->queue_size &&
	       a->remote_timeout == b->remote_timeout && config_same_symbols(a, b) &&
	       same_str(a->http_listen, b->http_listen) && a->no_kernel == b->no_kernel &&
	       a->no_user == b->no_user && a->no_plpgsql == b->no_plpgsql &&
	       same_str(a->btf, b->btf) && a->unwind == b->unwind &&
	       a->unwind_budget == b->unwind_budget && a->memory_budget == b->memory_budget &&
	       a->log_level == b->log_level && same_str(a->config_path, b->config_path);
}

int config_set(struct agent_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key_def *k = config_key_find(key);

	if (!k)
		return args_fail(err, errlen, "unknown key '%s'", key);
	return config_key_apply(c, k, value, k->name, err, errlen);
}
