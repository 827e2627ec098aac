// SPDX-License-Identifier: BSD-2-Clause
/*
 * The keys of `ebprof agent`'s configuration (config_keys.h): one table
 * lists every key with its type, range, field, default and help text.
 * config_apply.c checks and applies their values.
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
#include "sampling/sampler.h"
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
	{ .name = "profile-types",
	  .type = T_TYPES,
	  .off = F(profile_types),
	  .arg = "TYPE[,TYPE]",
	  .def = "cpu",
	  .help = "cpu (sampled stacks), offcpu (time away\n"
		  "from the CPU with PostgreSQL wait events)\n"
		  "and/or faults (page faults, in bytes)\n"
		  "and/or memory (PostgreSQL backends' memory\n"
		  "contexts): a profile of each per process\n"
		  "and interval.\n"
		  "offcpu costs ~1-2% of a core under 25 000\n"
		  "switches/s (bench/results/offcpu-*), faults\n"
		  "every page fault ~90 ns, over 1% of a core\n"
		  "under connection churn (bench/results/faults-*)" },
	{ .name = "offcpu-rate",
	  .type = T_INT,
	  .off = F(offcpu_rate),
	  .min = 1,
	  .max = SAMPLER_OFFCPU_RATE_MAX,
	  .arg = "HZ",
	  .def = SAMPLER_OFFCPU_RATE_TEXT,
	  .help = "offcpu, sampled (kernels 5.18+): visits of\n"
		  "every thread of the targets per second; one\n"
		  "found off the CPU counts 1/HZ s of its wait" },
	{ .name = "offcpu-path",
	  .type = T_OFFCPU_PATH,
	  .off = F(offcpu_path),
	  .arg = "PATH",
	  .def = "auto",
	  .help = "offcpu: iterator (sampled by a sleepable\n"
		  "task iterator, 5.18+), switch (timed at\n"
		  "every switch) or auto (the iterator where\n"
		  "the kernel has it); offcpu-min, -ratio and\n"
		  "-period are the switch path's" },
	{ .name = "offcpu-min",
	  .type = T_INT,
	  .off = F(offcpu_min_us),
	  .min = 0,
	  .max = 60000000,
	  .arg = "USECS",
	  .def = "0",
	  .help = "offcpu: waits shorter than this are not\n"
		  "counted (their number is, in the metrics)" },
	{ .name = "offcpu-ratio",
	  .type = T_INT,
	  .off = F(offcpu_ratio),
	  .min = 1,
	  .max = 100,
	  .arg = "PCT",
	  .def = "100",
	  .help = "offcpu: percent of switches taken, 1..100\n"
		  "(times scaled back: threads that wait seldom\n"
		  "get noisy totals); stacks cost ~7 us a switch" },
	{ .name = "offcpu-period",
	  .type = T_INT,
	  .off = F(offcpu_period_us),
	  .min = 0,
	  .max = SAMPLER_OFFCPU_PERIOD_MAX_US,
	  .arg = "USECS",
	  .def = "50000",
	  .help = "offcpu: a wait at least this long is taken\n"
		  "whole, a shorter one with the probability\n"
		  "of its share of it, counted as this long\n"
		  "(0: every wait); bounds the stacks taken.\n"
		  "50 ms: ~1% of a core at 25 000 switches/s\n"
		  "(record and top: 10 ms)" },
	{ .name = "faults-period",
	  .type = T_INT,
	  .off = F(faults_period),
	  .min = 1,
	  .max = SAMPLER_FAULTS_PERIOD_MAX,
	  .arg = "N",
	  .def = SAMPLER_FAULTS_PERIOD_TEXT,
	  .help = "faults: one sample every N page faults of\n"
		  "a CPU, weighing N pages" },
	{ .name = "memory-min-rss",
	  .type = T_SIZE,
	  .off = F(memory_min_rss),
	  .arg = "SIZE",
	  .def = "8M",
	  .help = "memory: backends with less private\n"
		  "resident memory are not snapshotted; one\n"
		  "that doubles it since its last snapshot is\n"
		  "snapshotted at once" },
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
	{ .name = "no-plpgsql",
	  .type = T_BOOL,
	  .off = F(no_plpgsql),
	  .help = "no PL/pgSQL frames: the functions and\n"
		  "lines PostgreSQL backends run in PL/pgSQL,\n"
		  "placed at their C frames, are left out" },
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
	{ .name = "memory-budget",
	  .type = T_SIZE,
	  .off = F(memory_budget),
	  .empty_ok = true,
	  .arg = "SIZE",
	  .def = "20M",
	  .help = "the agent's resident memory; over it at an\n"
		  "interval's end, it drops symbol data not in\n"
		  "use, read again when needed (/metrics:\n"
		  "ebprof_degraded); 0: no budget" },
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
	{ .name = "remote-timeout",
	  .type = T_INT,
	  .off = F(remote_timeout),
	  .min = 1,
	  .max = 600,
	  .arg = "SECS",
	  .def = "30",
	  .help = "seconds a push may take, 1..600 (connecting:\n"
		  "at most 10 of them); then it is retried" },
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
		  "and a port; [::]:PORT every address; \"\" = off" },
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
