// SPDX-License-Identifier: BSD-2-Clause
/*
 * Where the agent's profiles go: one line of the table per kind of sink,
 * with when the configuration asks for it and how to open it. A new output
 * is its sink (sinks/), its keys (config_keys.c) and a line here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sinks.h"
#include "sinks/remote/remote.h"
#include "sinks/store/store.h"
#include "util/log.h"

static bool want_store(const struct agent_config *c)
{
	return c->output_dir && c->output_dir[0];
}

static int open_store(const struct agent_config *c, struct sink **out)
{
	struct store_opts so = { c->output_dir, c->retention_age, c->retention_size };
	int err = store_sink_open(&so, out);

	if (err)
		log_error("cannot open the profile directory %s: %s", c->output_dir,
			  strerror(-err));
	return err;
}

static int open_remote(const struct agent_config *c, enum remote_kind kind, const char *url,
		       struct sink **out)
{
	struct remote_opts ro = { 0 };
	char qdir[4096];
	int err;

	snprintf(qdir, sizeof(qdir), "%s/%s", c->queue_dir, remote_kind_name(kind));
	ro.kind = kind;
	ro.url = url;
	ro.queue_dir = qdir;
	ro.queue_max_bytes = c->queue_size;
	ro.timeout_s = c->remote_timeout;
	if (kind == REMOTE_PROFEFE)
		ro.token = c->profefe_token;
	if (kind == REMOTE_PYROSCOPE) {
		ro.user = c->pyroscope_user;
		ro.password = c->pyroscope_password;
		ro.tenant = c->pyroscope_tenant;
	}
	err = remote_sink_open(&ro, out);
	/* No URL here: it may hold credentials (remote.c logs a redacted one
	 * for bad URLs). */
	if (err)
		log_error("cannot start pushing to %s: %s", remote_kind_name(kind), strerror(-err));
	return err;
}

static bool want_profefe(const struct agent_config *c)
{
	return c->push_profefe && c->push_profefe[0];
}

static int open_profefe(const struct agent_config *c, struct sink **out)
{
	return open_remote(c, REMOTE_PROFEFE, c->push_profefe, out);
}

static bool want_pyroscope(const struct agent_config *c)
{
	return c->push_pyroscope && c->push_pyroscope[0];
}

static int open_pyroscope(const struct agent_config *c, struct sink **out)
{
	return open_remote(c, REMOTE_PYROSCOPE, c->push_pyroscope, out);
}

static const struct {
	const char *name;
	bool (*wanted)(const struct agent_config *c);
	int (*open)(const struct agent_config *c, struct sink **out);
} kinds[] = {
	{ "profile directory", want_store, open_store },
	{ "profefe", want_profefe, open_profefe },
	{ "pyroscope", want_pyroscope, open_pyroscope },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
_Static_assert(NKINDS <= AGENT_MAX_SINKS, "raise AGENT_MAX_SINKS");

int agent_sinks_open(const struct agent_config *c, struct sink **out, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < NKINDS; i++) {
		int err;

		if (!kinds[i].wanted(c))
			continue;
		err = kinds[i].open(c, &out[*n]);
		if (err) {
			sink_close_all(out, *n, 0);
			*n = 0;
			return err;
		}
		(*n)++;
	}
	return 0;
}

void agent_sinks_describe(const struct agent_config *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NKINDS && off < len; i++) {
		if (!kinds[i].wanted(c))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
					kinds[i].name);
		if (kinds[i].open == open_store && off < len)
			off += (size_t)snprintf(buf + off, len - off, " %s", c->output_dir);
	}
	if (!off)
		snprintf(buf, len, "nowhere (no output-dir, no remote)");
}
