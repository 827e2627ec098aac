/* SPDX-License-Identifier: BSD-2-Clause */
/* The sinks of the agent, from its configuration: agent/sinks.c holds the
 * table (one line per kind of output). */
#ifndef EBPROF_AGENT_SINKS_H
#define EBPROF_AGENT_SINKS_H

#include <stddef.h>

#include "config.h"
#include "sinks/sink.h"

#define AGENT_MAX_SINKS 4

/* Open the sinks c asks for into out (at most AGENT_MAX_SINKS), in table
 * order. 0, or a negative errno (logged, with what was opened closed). */
int agent_sinks_open(const struct agent_config *c, struct sink **out, size_t *n);
/* "profile directory /var/lib/ebprof/profiles, profefe, pyroscope" */
void agent_sinks_describe(const struct agent_config *c, char *buf, size_t len);

#endif /* EBPROF_AGENT_SINKS_H */
