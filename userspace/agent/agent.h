/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The continuous profiler: samples the target processes for its whole life
 * and, every interval, hands one pprof per process to the sinks (disk
 * store, profefe, Pyroscope), with the HTTP API beside it.
 */
#ifndef EBPROF_AGENT_H
#define EBPROF_AGENT_H

#include "config.h"

/*
 * Run until SIGTERM/SIGINT. Takes over cfg (parsed from argc/argv, which a
 * SIGHUP parses again; cfg is left empty). Returns the process exit code
 * (util/args.h).
 */
int agent_run(struct agent_config *cfg, int argc, char **argv);

#endif /* EBPROF_AGENT_H */
