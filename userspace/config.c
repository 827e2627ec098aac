// SPDX-License-Identifier: BSD-2-Clause
/*
 * Configuration of `ebprof agent`. One table (keys[] below) lists every
 * key with its type, range, field, default and help text; the config file
 * parser, the getopt_long table and the usage text are all derived from it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/types.h>

#include "cli.h"
#include "config.h"
#include "ebprof/bpf_shared.h"
#include "log.h"
#include "version.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CGROUP_FS "/sys/fs/cgroup"
#define SERVICE_MAX 128

enum key_type {
	T_INT,	    /* int in [min, max] */
	T_BOOL,	    /* bool; a plain flag on the command line */
	T_PATH,	    /* absolute path (char *); "" if empty_ok */
	T_DURATION, /* int64_t seconds */
	T_SIZE,	    /* int64_t bytes */
	T_NAMES,    /* char ** + size_t count, at most max names */
	T_PIDS,	    /* uint32_t * + size_t count */
	T_CGROUPS,  /* char ** + size_t count, resolved cgroup v2 directories */
	T_SERVICE,  /* char *, [A-Za-z0-9._-]{1,128} */
	T_URL,	    /* char *, http(s) base URL; "" = NULL */
	T_TEXT,	    /* char *, any printable text; "" = NULL */
	T_LISTEN,   /* char *, ADDR:PORT or "" */
	T_LOGLEVEL, /* int, enum log_level */
};

struct key_def {
	const char *name;
	enum key_type type;
	size_t off;	     /* field in struct agent_config */
	size_t off_n;	     /* T_NAMES/T_PIDS/T_CGROUPS: the count field */
	char shortopt;	     /* 0 = none */
	long min, max;	     /* T_INT range; T_NAMES: max = most names */
	bool empty_ok;	     /* T_PATH: "" allowed (= off) */
	const char *arg;     /* placeholder in the usage */
	const char *def;     /* default, applied by config_defaults(); NULL = none */
	const char *help;    /* usage text ('\n' continues on the next line) */
	const char *section; /* usage heading printed before this key */
};

#define F(f) offsetof(struct agent_config, f)

/* The single list of keys: file keys, long flags, defaults and usage. */
static const struct key_def keys[] = {
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
	{ .name = "no-kernel",
	  .type = T_BOOL,
	  .off = F(no_kernel),
	  .help = "do not collect kernel stacks" },
	{ .name = "no-user",
	  .type = T_BOOL,
	  .off = F(no_user),
	  .help = "do not collect user stacks" },
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

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* getopt values: keys are OPT_KEY + index. */
enum { OPT_CONFIG = 256, OPT_VERSION, OPT_KEY = 512 };

static int no_memory(char *err, size_t errlen)
{
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static const struct key_def *find_key(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

#define FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))
#define COUNT(c, k) ((size_t *)((char *)(c) + (k)->off_n))

/* ---- value parsers ---- */

int config_parse_duration(const char *s, int64_t *out)
{
	static const struct {
		char suffix;
		int64_t mult;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 604800 } };
	int64_t mult = 0;
	long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*end) {
		mult = 1;
	} else if (!end[1]) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (*end == units[i].suffix)
				mult = units[i].mult;
	}
	if (!mult)
		return -EINVAL;
	if (errno == ERANGE || v <= 0 || v > INT64_MAX / mult)
		return -ERANGE;
	*out = (int64_t)v * mult;
	return 0;
}

int config_parse_size(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int shift;
	} units[] = { { "", 0 },   { "K", 10 },	  { "KiB", 10 }, { "M", 20 },  { "MiB", 20 },
		      { "G", 30 }, { "GiB", 30 }, { "T", 40 },	 { "TiB", 40 } };
	int shift = -1;
	long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(end, units[i].suffix))
			shift = units[i].shift;
	if (shift < 0)
		return -EINVAL;
	if (errno == ERANGE || v <= 0 || v > (INT64_MAX >> shift))
		return -ERANGE;
	*out = (int64_t)v << shift;
	return 0;
}

static int parse_port(const char *s, int *port)
{
	long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}

int config_parse_listen(const char *s, char *host, size_t hostlen, int *port)
{
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char buf[sizeof(struct in6_addr)];
	const char *colon;
	size_t len;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		len = (size_t)(close - s - 1);
		if (!len || len >= sizeof(addr))
			return -EINVAL;
		memcpy(addr, s + 1, len);
		addr[len] = '\0';
		if (inet_pton(AF_INET6, addr, buf) != 1)
			return -EINVAL;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		len = (size_t)(colon - s);
		if (!len || len >= sizeof(addr))
			return -EINVAL;
		memcpy(addr, s, len);
		addr[len] = '\0';
		if (strcmp(addr, "localhost") && inet_pton(AF_INET, addr, buf) != 1)
			return -EINVAL;
	}
	if (parse_port(colon + 1, port))
		return -EINVAL;
	if (host) {
		if (len >= hostlen)
			return -EINVAL;
		memcpy(host, addr, len + 1);
	}
	return 0;
}

static bool has_control_chars(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* http(s)://[user@]host[:port][/path], no query or fragment. */
static bool valid_url(const char *s)
{
	const char *auth, *host, *end, *at, *port = NULL;

	if (!strncasecmp(s, "http://", 7))
		auth = s + 7;
	else if (!strncasecmp(s, "https://", 8))
		auth = s + 8;
	else
		return false;
	if (has_control_chars(s) || strpbrk(s, " ?#"))
		return false;
	end = auth + strcspn(auth, "/");
	at = memrchr(auth, '@', (size_t)(end - auth));
	host = at ? at + 1 : auth;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (!close || close == host + 1)
			return false;
		if (close + 1 < end) {
			if (close[1] != ':')
				return false;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(host, ':', (size_t)(end - host));

		if ((colon ? colon : end) == host)
			return false;
		for (const char *p = host; p < (colon ? colon : end); p++)
			if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
				return false;
		if (colon)
			port = colon + 1;
	}
	if (port) {
		char buf[8];
		int v;

		if ((size_t)(end - port) >= sizeof(buf))
			return false;
		memcpy(buf, port, (size_t)(end - port));
		buf[end - port] = '\0';
		if (parse_port(buf, &v))
			return false;
	}
	return true;
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

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return !statfs(path, &sf) && sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Where cgroup v2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified on
 * hybrid hosts. */
static const char *cgroup2_root(void)
{
	if (!is_cgroup2(CGROUP_FS) && is_cgroup2(CGROUP_FS "/unified"))
		return CGROUP_FS "/unified";
	return CGROUP_FS;
}

/* One cgroup path -> malloc'ed canonical /sys/fs/cgroup/... directory. */
static int resolve_cgroup(const char *p, size_t len, const char *what, char **out, char *err,
			  size_t errlen)
{
	char given[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
	size_t fslen = strlen(CGROUP_FS);
	struct stat st;

	if (!len || len >= sizeof(given))
		return cli_fail(err, errlen, "%s: empty or too long cgroup path", what);
	memcpy(given, p, len);
	given[len] = '\0';
	if (given[0] != '/')
		return cli_fail(err, errlen, "%s: cgroup '%s' is not an absolute path", what,
				given);
	if (!strncmp(given, CGROUP_FS, fslen) && (!given[fslen] || given[fslen] == '/'))
		snprintf(full, sizeof(full), "%s", given);
	else if (snprintf(full, sizeof(full), "%s%s", cgroup2_root(), given) >= (int)sizeof(full))
		return cli_fail(err, errlen, "%s: cgroup path '%s' too long", what, given);
	if (!realpath(full, real))
		return cli_fail(err, errlen, "%s: cgroup '%s' does not exist (%s: %s)", what, given,
				full, strerror(errno));
	if (stat(real, &st) || !S_ISDIR(st.st_mode))
		return cli_fail(err, errlen, "%s: cgroup '%s' is not a directory (%s)", what, given,
				real);
	if (strncmp(real, CGROUP_FS, fslen) || (real[fslen] && real[fslen] != '/'))
		return cli_fail(err, errlen, "%s: cgroup '%s' is not under " CGROUP_FS " (%s)",
				what, given, real);
	if (!is_cgroup2(real))
		return cli_fail(err, errlen, "%s: cgroup '%s' is not a cgroup v2 directory (%s)",
				what, given, real);
	*out = strdup(real);
	return *out ? 0 : no_memory(err, errlen);
}

static int parse_cgroups(const char *s, const char *what, char ***out, size_t *n, char *err,
			 size_t errlen)
{
	size_t cap = 1, count = 0;
	char **list;
	int ret;

	for (const char *c = s; *c; c++)
		cap += *c == ',';
	list = calloc(cap, sizeof(*list));
	if (!list)
		return no_memory(err, errlen);
	for (const char *p = s;; p += strcspn(p, ",") + 1) {
		ret = resolve_cgroup(p, strcspn(p, ","), what, &list[count], err, errlen);
		if (ret) {
			cli_free_list(list, count);
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

/* Replace a string field with a copy of v (NULL allowed). */
static int set_str(char **field, const char *v, char *err, size_t errlen)
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

/*
 * Apply one value to the key k; what is how the key is named in messages
 * ("interval" in the file, "--interval" for flags).
 */
static int set_value(struct agent_config *c, const struct key_def *k, const char *v,
		     const char *what, char *err, size_t errlen)
{
	char msg[384];
	int64_t i64;
	long l;
	int ret;

	switch (k->type) {
	case T_INT:
		ret = cli_parse_int(v, what, k->min, k->max, &l, err, errlen);
		if (ret)
			return ret;
		*FIELD(c, k, int) = (int)l;
		return 0;
	case T_BOOL:
		if (parse_bool(v, FIELD(c, k, bool)))
			return cli_fail(err, errlen,
					"%s must be true/false, yes/no, on/off or 1/0, got '%s'",
					what, v);
		return 0;
	case T_PATH:
		if (!*v && k->empty_ok)
			return set_str(FIELD(c, k, char *), "", err, errlen);
		if (v[0] != '/' || has_control_chars(v))
			return cli_fail(err, errlen, "%s must be an absolute path%s, got '%s'",
					what, k->empty_ok ? " or \"\"" : "", v);
		return set_str(FIELD(c, k, char *), v, err, errlen);
	case T_DURATION:
		ret = config_parse_duration(v, &i64);
		if (ret == -EINVAL)
			return cli_fail(
				err, errlen,
				"%s must be a duration in seconds or with a suffix s, m, h, d "
				"or w (e.g. 7d), got '%s'",
				what, v);
		if (ret)
			return cli_fail(err, errlen,
					"%s must be greater than 0 and fit in 64 bits, got '%s'",
					what, v);
		*FIELD(c, k, int64_t) = i64;
		return 0;
	case T_SIZE:
		ret = config_parse_size(v, &i64);
		if (ret == -EINVAL)
			return cli_fail(err, errlen,
					"%s must be a size in bytes or with a suffix K, M, G or T "
					"(e.g. 512M), got '%s'",
					what, v);
		if (ret)
			return cli_fail(err, errlen,
					"%s must be greater than 0 and fit in 64 bits, got '%s'",
					what, v);
		*FIELD(c, k, int64_t) = i64;
		return 0;
	case T_NAMES: {
		char **names = NULL;
		size_t n = 0;

		if (*v) {
			ret = cli_parse_names(v, &names, &n, msg, sizeof(msg));
			if (ret == -ENOMEM)
				return no_memory(err, errlen);
			if (ret)
				return cli_fail(err, errlen, "%s: %s", what, msg);
			if (k->max && n > (size_t)k->max) {
				cli_free_list(names, n);
				return cli_fail(err, errlen,
						"%s takes at most %ld names, got %zu in '%s'", what,
						k->max, n, v);
			}
		}
		cli_free_list(*FIELD(c, k, char **), *COUNT(c, k));
		*FIELD(c, k, char **) = names;
		*COUNT(c, k) = n;
		return 0;
	}
	case T_PIDS: {
		uint32_t *pids = NULL;
		size_t n = 0;

		if (*v) {
			ret = cli_parse_pids(v, &pids, &n, msg, sizeof(msg));
			if (ret == -ENOMEM)
				return no_memory(err, errlen);
			if (ret)
				return cli_fail(err, errlen, "%s: %s", what, msg);
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
		cli_free_list(*FIELD(c, k, char **), *COUNT(c, k));
		*FIELD(c, k, char **) = list;
		*COUNT(c, k) = n;
		return 0;
	}
	case T_SERVICE:
		if (!valid_service(v))
			return cli_fail(
				err, errlen,
				"%s must be 1 to %d characters among A-Z a-z 0-9 . _ -, got '%s'",
				what, SERVICE_MAX, v);
		return set_str(FIELD(c, k, char *), v, err, errlen);
	case T_URL: {
		char *copy;
		size_t n;

		if (!*v)
			return set_str(FIELD(c, k, char *), NULL, err, errlen);
		if (!valid_url(v))
			return cli_fail(err, errlen,
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
	case T_TEXT:
		if (has_control_chars(v))
			return cli_fail(err, errlen, "%s must not contain control characters",
					what);
		return set_str(FIELD(c, k, char *), *v ? v : NULL, err, errlen);
	case T_LISTEN: {
		int port;

		if (*v && config_parse_listen(v, NULL, 0, &port))
			return cli_fail(err, errlen,
					"%s must be ADDR:PORT (IPv4 address, [IPv6 address] or "
					"localhost; port 1..65535) or \"\", got '%s'",
					what, v);
		return set_str(FIELD(c, k, char *), v, err, errlen);
	}
	case T_LOGLEVEL:
		if (parse_log_level(v, FIELD(c, k, int)))
			return cli_fail(err, errlen,
					"%s must be error, warn, info or debug, got '%s'", what, v);
		return 0;
	}
	return cli_fail(err, errlen, "%s: internal error: unknown key type", what);
}

/* ---- public API ---- */

int config_defaults(struct agent_config *c)
{
	char host[256] = "";
	char err[256];
	size_t n;
	int ret;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++) {
		if (!keys[i].def)
			continue;
		ret = set_value(c, &keys[i], keys[i].def, keys[i].name, err, sizeof(err));
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
	cli_free_list(c->comms, c->ncomms);
	free(c->pids);
	cli_free_list(c->cgroups, c->ncgroups);
	free(c->service);
	free(c->push_profefe);
	free(c->push_pyroscope);
	free(c->pyroscope_user);
	free(c->pyroscope_password);
	free(c->pyroscope_tenant);
	free(c->queue_dir);
	free(c->btf);
	free(c->http_listen);
	free(c->config_path);
	memset(c, 0, sizeof(*c));
}

int config_set(struct agent_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key_def *k = find_key(key);

	if (!k)
		return cli_fail(err, errlen, "unknown key '%s'", key);
	return set_value(c, k, value, k->name, err, errlen);
}

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
		return cli_fail(err, errlen, "expected 'key = value'");
	*eq = '\0';
	*key = trim(line);
	if (!**key)
		return cli_fail(err, errlen, "expected 'key = value', the key is empty");
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
			return cli_fail(err, errlen, "unterminated quoted value of '%s'", *key);
		if (*v == '\\' && (v[1] == '"' || v[1] == '\\'))
			v++;
		*out++ = *v;
	}
	*out = '\0';
	v = trim(v + 1);
	if (*v && *v != '#')
		return cli_fail(err, errlen, "unexpected text after the quoted value of '%s': '%s'",
				*key, v);
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
			ret = cli_fail(msg, sizeof(msg), "NUL byte in the line");
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
		ret = set_str(&c->config_path, path, err, errlen);
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
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key_def *k = &keys[i];
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

/* Build the getopt_long tables from keys[]. */
static void build_options(struct option *opts, char *shortopts)
{
	size_t n = 0, s = 0;

	shortopts[s++] = ':';
	for (size_t i = 0; i < NKEYS; i++) {
		opts[n++] = (struct option){ keys[i].name,
					     keys[i].type == T_BOOL ? optional_argument
								    : required_argument,
					     NULL, OPT_KEY + (int)i };
		if (keys[i].shortopt) {
			shortopts[s++] = keys[i].shortopt;
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
	if (opt >= OPT_KEY && opt < OPT_KEY + (int)NKEYS)
		return opt - OPT_KEY;
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].shortopt && keys[i].shortopt == opt)
			return (int)i;
	return -1;
}

/* The message for getopt's '?' (unknown, ambiguous, or a value given to a
 * flag without one). */
static int bad_option(const struct option *opts, const char *arg, int opt, char *err, size_t errlen)
{
	size_t len, matches = 0;

	if (strncmp(arg, "--", 2))
		return cli_fail(err, errlen, "unknown option '-%c' (see ebprof agent --help)",
				opt ? opt : '?');
	len = strcspn(arg + 2, "=");
	for (const struct option *o = opts; o->name; o++) {
		if (strlen(o->name) == len && !strncmp(o->name, arg + 2, len))
			return cli_fail(err, errlen, "option '--%s' takes no value", o->name);
		matches += !strncmp(o->name, arg + 2, len);
	}
	return cli_fail(err, errlen, "%s option '%.*s' (see ebprof agent --help)",
			matches > 1 ? "ambiguous" : "unknown", (int)len + 2, arg);
}

int config_parse_args_path(struct agent_config *c, int argc, char **argv, const char *default_path,
			   char *err, size_t errlen)
{
	struct option opts[NKEYS + 5];
	char shortopts[2 * NKEYS + 4], what[64];
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
			if (optopt > 0 && optopt < 256)
				return cli_fail(err, errlen, "option -%c needs a value", optopt);
			return cli_fail(err, errlen, "option %s needs a value", argv[optind - 1]);
		case '?':
			return bad_option(opts, argv[optind - 1], optopt, err, errlen);
		default:
			i = key_of_option(opt);
			if (i < 0)
				return cli_fail(err, errlen, "internal error: option %d", opt);
			snprintf(what, sizeof(what), "--%s", keys[i].name);
			ret = set_value(c, &keys[i],
					keys[i].type == T_BOOL && !optarg ? "true" : optarg, what,
					err, errlen);
			if (ret)
				return ret;
		}
	}
	if (optind < argc)
		return cli_fail(err, errlen, "unexpected argument '%s' (see ebprof agent --help)",
				argv[optind]);
	c->log_level = c->log_level + verbose > LOG_DEBUG ? LOG_DEBUG : c->log_level + verbose;
	if (c->no_kernel && c->no_user)
		return cli_fail(err, errlen,
				"no-kernel and no-user together leave nothing to sample");
	return 0;
}

int config_parse_args(struct agent_config *c, int argc, char **argv, char *err, size_t errlen)
{
	return config_parse_args_path(c, argc, argv, CONFIG_DEFAULT_PATH, err, errlen);
}
