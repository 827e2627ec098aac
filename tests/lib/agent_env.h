/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The environment of the agent tests (test_agent*.c): an agent with its
 * log, the samples its interval lines report, its store read back through
 * go tool pprof (gopprof.h), its /metrics. Everything asserts through
 * Criterion.
 */
#ifndef EBPROF_AGENT_ENV_H
#define EBPROF_AGENT_ENV_H

#include <stdint.h>

#include "sinks/store/store.h"
#include "testlib.h"

char *ag_empty_config(const char *dir);

/* A running agent, its stderr in log. */
struct ag_run {
	struct tl_proc p;
	struct tl_log log;
};

/* Start the agent with args and wait until it samples. */
void ag_start_agent(struct ag_run *ag, char **args);

/* The same, the agent inside the cgroup directory cg from its start (it
 * joins through `sh -c`, then execs). */
void ag_start_agent_in(struct ag_run *ag, const char *cg, char **args);

/* SIGTERM; the exit status. The log stays readable. */
int ag_stop_agent(struct ag_run *ag);

/*
 * The agent's interval lines ("interval from T (N s): P processes, S
 * samples, ...; W profiles written, F failed"): the sum of S, and of W
 * and F when asked.
 */
int64_t ag_logged_samples(const char *log, int64_t *written, int64_t *failed);

/* The store's profiles, each read back by go tool pprof (asserted). */
struct ag_stored {
	struct store_entry *ents;
	struct gp_profile **gp;
	size_t n;
};

void ag_read_store(const char *dir, struct ag_stored *st);

void ag_free_store(struct ag_stored *st);

/*
 * A per-process profile holds that process only: every sample has the
 * numeric pid label of its file's name, and tid/thread_name; its
 * comments repeat its labels. A group's profile (pid 0, group=short-lived)
 * holds exactly as many processes as its processes label says, every
 * sample with its own pid, tid and thread_name. Returns its samples.
 */
int64_t ag_check_process_profile(const struct store_entry *e, const struct gp_profile *p);

int ag_free_port(void);

/* A series from the agent's /metrics, or -1: a metric without labels, or
 * one with all of them as the agent writes them ("name{k=\"v\",...}"). */
int64_t ag_metric(const char *listen, const char *name);

#endif /* EBPROF_AGENT_ENV_H */
