/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the agent configuration tests (tests/unit/test_config_*.c):
 * a temporary configuration file, the agent's argument parser called on a
 * list of arguments, where cgroup v2 is mounted. Failures are Criterion
 * assertions.
 */
#ifndef EBPROF_TEST_CONFIG_FIXTURE_H
#define EBPROF_TEST_CONFIG_FIXTURE_H

#include <stddef.h>

#include "agent/config.h"

/* A default configuration file that is not there. */
#define NO_DEFAULT "/nonexistent/ebprof-test/ebprof.conf"

/* Write content to a new temp file; path receives its name (the caller
 * unlinks it). */
void write_tmp(char *path, size_t len, const char *content);

/* config_parse_args_path() on "agent" + the NULL-terminated arguments,
 * with default_path as the default config file (NULL: none). */
int parse_with(struct agent_config *c, const char *default_path, char *err, size_t errlen, ...);

#define parse(c, err, ...) parse_with(c, NO_DEFAULT, err, sizeof(err), __VA_ARGS__, NULL)

/* Where cgroup v2 is mounted here, or NULL (then the cgroup tests fail). */
const char *cgroup2_root(void);

#endif /* EBPROF_TEST_CONFIG_FIXTURE_H */
