/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `ebprof agent`: the continuous profiler. Samples the target processes
 * for its whole life and, every interval, hands one pprof per process to
 * the sinks (disk store, profefe, Pyroscope).
 */
#ifndef EBPROF_AGENT_H
#define EBPROF_AGENT_H

/* Runs until SIGTERM/SIGINT; returns the process exit code (cli.h). */
int agent_main(int argc, char **argv);

#endif /* EBPROF_AGENT_H */
