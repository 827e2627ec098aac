// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one table of the commands' options (options.h). Rows of the same
 * name are one option as different commands take it: they read the same
 * field the same way (same type, letter and value; test_cli_options checks
 * it) and differ only in their help, or in the values a command accepts
 * (merge --format has no svg). The man page's option lists are printed
 * from these rows: after a change, `make man`.
 */
#include <stddef.h>
#include <linux/types.h>

#include "ebprof/bpf_shared.h"
#include "options.h"
#include "serve/collector.h"
#include "store_select.h"
#include "util/profile_types.h"

/* The field f of struct cli_values, which must be of type T. */
#define V(f, T)                                                                                    \
	.off = offsetof(struct cli_values, f) + 0 * sizeof(&((struct cli_values *)0)->f == (T *)0)
/* A list: its array f of items T, and its count n. */
#define LIST(f, n, T) V(f, T *), .off_n = offsetof(struct cli_values, n)

static int choose_format(const char *name, void *field)
{
	return render_format_parse(name, field);
}

static int choose_unwind(const char *name, void *field)
{
	return sampler_unwind_parse(name, field);
}

static int choose_query_labels(const char *name, void *field)
{
	return query_labels_parse(name, field);
}

const struct cli_option cli_options[] = {
	/* --- targets --- */
	{ .name = "pid",
	  .shortopt = 'p',
	  .type = CLI_PIDS,
	  LIST(pids, npids, uint32_t),
	  .cmds = CLI_RECORD | CLI_TOP,
	  .arg = "PID[,PID]",
	  .section = "Targets",
	  .help = "these processes, their threads and children (repeatable){record:; the "
		  "recording ends when all of them have exited}" },
	{ .name = "all",
	  .shortopt = 'a',
	  .type = CLI_FLAG,
	  V(all, bool),
	  .cmds = CLI_RECORD,
	  .section = "Targets",
	  .help = "every process, kernel threads included",
	  .man = "Every process, kernel threads included (the idle task is not counted); "
		 "not with `-p` or `--comm`" },
	{ .name = "comm",
	  .type = CLI_NAMES,
	  LIST(comms, ncomms, char *),
	  .cmds = CLI_RECORD | CLI_TOP,
	  .arg = "NAME[,NAME]",
	  .max = EBPROF_MAX_COMMS,
	  .section = "Targets",
	  .help = "processes by these names (comm or executable) instead of postgres and "
		  "postmaster (repeatable)",
	  .man = "Processes whose comm or executable basename is one of these names, instead "
		 "of postgres and postmaster (repeatable)" },
	{ .name = "no-inherit",
	  .type = CLI_FLAG,
	  V(no_inherit, bool),
	  .cmds = CLI_RECORD,
	  .section = "Targets",
	  .help = "do not follow processes forked by targets" },
	/* --- sampling --- */
	{ .name = "type",
	  .type = CLI_CHOICE,
	  V(type, const char *),
	  .cmds = CLI_RECORD,
	  .arg = "TYPE",
	  .choices = PTYPE_NAMES,
	  .once = true,
	  .def = "cpu",
	  .section = "Sampling",
	  .help = "`cpu`: stacks sampled on the CPU; `offcpu`: time away from the CPU by stack, "
		  "state and, for PostgreSQL 14+, wait event; `faults`: page faults, in bytes; "
		  "`memory`: PostgreSQL backends' memory contexts at the end; one type per file",
	  .man = "`cpu`: stacks sampled on the CPU; `offcpu`: time away from the CPU, timed at "
		 "sched_switch and taken where the thread resumes, by stack, state (`sleeping`, "
		 "`disk`, `runnable`, `idle`) and, for PostgreSQL 14 and later, wait event "
		 "(`wait_event_type`, `wait_event`, as pg_stat_activity names them); `faults`: "
		 "page faults, one sample every --faults-period of them, weighed in bytes "
		 "(where resident memory grows); `memory`: the memory contexts of every "
		 "PostgreSQL backend among the targets, read from outside it at the end of the "
		 "recording (total and used bytes by context path, as "
		 "pg_backend_memory_contexts shows them); one type per file" },
	{ .name = "offcpu-min",
	  .type = CLI_INT,
	  V(offcpu_min_us, long),
	  .cmds = CLI_RECORD,
	  .arg = "USECS",
	  .min = 0,
	  .max = 60000000,
	  .def = "0",
	  .section = "Sampling",
	  .help = "off-CPU: waits shorter than this are not counted" },
	{ .name = "offcpu-ratio",
	  .type = CLI_INT,
	  V(offcpu_pct, long),
	  .cmds = CLI_RECORD | CLI_TOP,
	  .arg = "PCT",
	  .min = 1,
	  .max = 100,
	  .def = "100",
	  .section = "Sampling",
	  .help = "off-CPU: percent of switches taken (times scaled back)",
	  .man = "Off-CPU: the percent of switches taken (times are scaled back, so at low "
		 "ratios a few long waits may be missed or over-counted)" },
	{ .name = "offcpu-period",
	  .type = CLI_INT,
	  V(offcpu_period_us, long),
	  .cmds = CLI_RECORD | CLI_TOP,
	  .arg = "USECS",
	  .min = 0,
	  .max = SAMPLER_OFFCPU_PERIOD_MAX_US,
	  .def = SAMPLER_OFFCPU_PERIOD_US_TEXT,
	  .section = "Sampling",
	  .help = "off-CPU: waits at least this long are taken whole, shorter ones by chance "
		  "(their share of it) as this long; 0: every wait",
	  .man = "Off-CPU: a wait at least this long is taken whole, a shorter one with the "
		 "probability of its share of it and counted as this long; 0 takes every "
		 "wait" },
	{ .name = "faults-period",
	  .type = CLI_INT,
	  V(faults_period, long),
	  .cmds = CLI_RECORD,
	  .arg = "N",
	  .min = 1,
	  .max = SAMPLER_FAULTS_PERIOD_MAX,
	  .def = SAMPLER_FAULTS_PERIOD_TEXT,
	  .section = "Sampling",
	  .help = "faults: one sample every N page faults of a CPU, weighing N pages" },
	{ .name = "memory-min-rss",
	  .type = CLI_SIZE,
	  V(memory_min_rss, int64_t),
	  .cmds = CLI_RECORD,
	  .arg = "SIZE",
	  .def_text = "every backend",
	  .section = "Sampling",
	  .help = "memory: backends with less private resident memory are left out (e.g. 8M)" },
	{ .name = "frequency",
	  .shortopt = 'F',
	  .type = CLI_INT,
	  V(frequency, long),
	  .cmds = CLI_RECORD | CLI_TOP,
	  .arg = "HZ",
	  .min = 1,
	  .max = 10000,
	  .def = "99",
	  .section = "Sampling",
	  .help = "samples per second per CPU" },
	{ .name = "duration",
	  .shortopt = 'd',
	  .type = CLI_SECONDS,
	  V(duration, double),
	  .cmds = CLI_RECORD,
	  .arg = "SECS",
	  .section = "Sampling",
	  .def_text = "until Ctrl-C or SIGTERM",
	  .help = "stop after SECS seconds" },
	{ .name = "delay",
	  .shortopt = 'd',
	  .type = CLI_INT,
	  V(delay, long),
	  .cmds = CLI_TOP,
	  .arg = "SECS",
	  .min = 1,
	  .max = 60,
	  .def = "2",
	  .section = "Sampling",
	  .help = "refresh interval in seconds" },
	{ .name = "no-waits",
	  .type = CLI_FLAG,
	  V(no_waits, bool),
	  .cmds = CLI_TOP,
	  .section = "Sampling",
	  .help = "CPU only: no off-CPU sampling, no wait column",
	  .man = "CPU only: no off-CPU sampling and no wait line; when off-CPU sampling cannot "
		 "be started, `top` says why and runs CPU only" },
	{ .name = "no-kernel",
	  .type = CLI_FLAG,
	  V(no_kernel, bool),
	  .cmds = CLI_RECORD,
	  .section = "Sampling",
	  .help = "do not collect kernel stacks" },
	{ .name = "no-user",
	  .type = CLI_FLAG,
	  V(no_user, bool),
	  .cmds = CLI_RECORD,
	  .section = "Sampling",
	  .help = "do not collect user stacks" },
	{ .name = "btf",
	  .type = CLI_STRING,
	  V(btf, const char *),
	  .cmds = CLI_RECORD,
	  .arg = "PATH",
	  .section = "Sampling",
	  .help = "vmlinux BTF file for kernels without /sys/kernel/btf/vmlinux",
	  .man = "The vmlinux BTF file, for a kernel without /sys/kernel/btf/vmlinux (built "
		 "without CONFIG_DEBUG_INFO_BTF)" },
	{ .name = "unwind",
	  .type = CLI_CHOICE,
	  V(unwind, enum sampler_unwind),
	  .cmds = CLI_RECORD,
	  .arg = "MODE",
	  .choices = "dwarf,fp",
	  .unlisted = "dwarf-loop,dwarf-tail", /* a way of DWARF forced, for tests */
	  .choose = choose_unwind,
	  .def = "dwarf",
	  .section = "Sampling",
	  .help = "user stacks: `dwarf` (from the binaries' CFI, in BPF) or `fp` (frame "
		  "pointers only)",
	  .man = "How user stacks are unwound: `dwarf` (from each binary's CFI, .eh_frame or "
		 ".debug_frame, compiled into tables the BPF program walks, up to 2048 frames) "
		 "or `fp` (frame pointers only, 127 frames). A stack cut short ends in a "
		 "[truncated: REASON] frame; samples with a frame found by frame pointer (JIT "
		 "code) carry the label `unwind=fp`" },
	{ .name = "query-labels",
	  .type = CLI_CHOICE,
	  V(query_labels, enum query_labels),
	  .cmds = CLI_RECORD,
	  .arg = "MODE",
	  .choices = "normalized,fingerprint,off",
	  .choose = choose_query_labels,
	  .def = "normalized",
	  .section = "Sampling",
	  .help = "statements of PostgreSQL backends as sample labels: `normalized` (query, "
		  "query_fingerprint, query_id), `fingerprint` (no text) or `off`",
	  .man = "Statement labels of PostgreSQL samples: `normalized` (query, "
		 "query_fingerprint, query_id), `fingerprint` (no text) or `off` (nothing is "
		 "read from backends)" },
	{ .name = "no-plpgsql",
	  .type = CLI_FLAG,
	  V(no_plpgsql, bool),
	  .cmds = CLI_RECORD,
	  .section = "Sampling",
	  .help = "no PL/pgSQL frames (the functions and lines PostgreSQL backends run in "
		  "PL/pgSQL, at their C frames)",
	  .man = "No PL/pgSQL frames: without it, every PL/pgSQL function a PostgreSQL backend "
		 "runs is a frame named by its signature (`schema.fn(argtypes)`) at its current "
		 "line, placed at the C frame that executes it (`plpgsql_exec_function`, "
		 "`plpgsql_exec_trigger`)" },
	/* --- which stored profiles --- */
	{ .name = "dir",
	  .type = CLI_STRING,
	  V(dir, const char *),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "DIR",
	  .def = STORE_DEFAULT_DIR,
	  .section = "Selection",
	  .help = "the profile store" },
	{ .name = "from",
	  .type = CLI_TIME,
	  V(from, struct cli_time),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "T",
	  .section = "Selection",
	  .help = "profiles that end after T: 2026-11-21T03:00[:SS][Z], '2026-11-21 03:00', "
		  "2026-11-21, 03:00 (today), -30m, -2h, -1d (before now), now or "
		  "@UNIXSECONDS; local time unless Z" },
	{ .name = "to",
	  .type = CLI_TIME,
	  V(to, struct cli_time),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "T",
	  .section = "Selection",
	  .help = "profiles that start before T (a time as for --from)" },
	{ .name = "label",
	  .type = CLI_LABELS,
	  LIST(labels, nlabels, struct kv),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "KEY=VALUE",
	  .section = "Selection",
	  .help = "only profiles with this label (repeatable, all must match), e.g. "
		  "backend_type=checkpointer, pg_database=app" },
	{ .name = "pid",
	  .shortopt = 'p',
	  .type = CLI_PIDS,
	  LIST(pids, npids, uint32_t),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "PID[,PID]",
	  .section = "Selection",
	  .help = "only these processes (repeatable)" },
	{ .name = "service",
	  .type = CLI_STRING,
	  V(service, const char *),
	  .cmds = CLI_LS | CLI_MERGE,
	  .arg = "NAME",
	  .section = "Selection",
	  .def_text = "every service",
	  .help = "only this service" },
	{ .name = "type",
	  .type = CLI_CHOICE,
	  V(type, const char *),
	  .cmds = CLI_LS,
	  .arg = "TYPE",
	  .choices = PTYPE_NAMES,
	  .once = true,
	  .def_text = "every type",
	  .section = "Selection",
	  .help = "only profiles of this type" },
	{ .name = "type", /* merges profiles of one type: cpu unless said */
	  .type = CLI_CHOICE,
	  V(type, const char *),
	  .cmds = CLI_MERGE,
	  .arg = "TYPE",
	  .choices = PTYPE_NAMES,
	  .once = true,
	  .def_text = "cpu, unless --label type=...",
	  .section = "Selection",
	  .help = "only profiles of this type, the sample types of one profile" },
	/* --- symbols --- */
	{ .name = "debug-dir",
	  .type = CLI_STRING,
	  V(debug_dirs, const char *),
	  .cmds = CLI_SYMBOLIZE,
	  .arg = "DIR[:DIR]",
	  .def = "/usr/lib/debug",
	  .section = "Symbols",
	  .help = "debug directories, holding .build-id/xx/yyyy.debug" },
	{ .name = "debuginfod-urls",
	  .type = CLI_STRING,
	  V(debuginfod_urls, const char *),
	  .cmds = CLI_SYMBOLIZE,
	  .arg = "URLS",
	  .empty_ok = true,
	  .section = "Symbols",
	  .help = "debuginfod servers, space-separated (default: $DEBUGINFOD_URLS; files are "
		  "kept in $DEBUGINFOD_CACHE_PATH, by default /var/cache/ebprof/debuginfod)" },
	{ .name = "debuginfod-timeout",
	  .type = CLI_INT,
	  V(debuginfod_timeout, long),
	  .cmds = CLI_SYMBOLIZE,
	  .arg = "SECS",
	  .min = 1,
	  .max = 600,
	  .def = "10",
	  .section = "Symbols",
	  .help = "seconds a server may take per request" },
	{ .name = "offline",
	  .type = CLI_FLAG,
	  V(offline, bool),
	  .cmds = CLI_RECORD | CLI_SYMBOLIZE,
	  .section = "Symbols",
	  .help = "never ask debuginfod servers ($DEBUGINFOD_URLS) for missing debug files",
	  .man = "Never ask debuginfod servers for missing debug files (see `SYMBOLS` and "
		 "`ENVIRONMENT`)" },
	/* --- output --- */
	{ .name = "output",
	  .shortopt = 'o',
	  .type = CLI_STRING,
	  V(output, const char *),
	  .cmds = CLI_RECORD | CLI_MERGE | CLI_FLAMEGRAPH | CLI_SYMBOLIZE,
	  .arg = "OUT",
	  .section = "Output",
	  .help = "output file, '-' for stdout (written atomically)",
	  .man = "Output file, `-` for standard output, written atomically (a temporary file, "
		 "renamed)" },
	{ .name = "format",
	  .type = CLI_CHOICE,
	  V(format, enum render_format),
	  .cmds = CLI_RECORD,
	  .arg = "FORMAT",
	  .choices = "pprof,folded,svg",
	  .choose = choose_format,
	  .def = "pprof",
	  .section = "Output",
	  .help = "`pprof` (gzip-compressed), `folded` or `svg` (an interactive flamegraph); "
		  "without -o written to profile.pb.gz, profile.folded or profile.svg",
	  .man = "`pprof` (gzip-compressed), `folded` (collapsed stacks, comm;frame;... "
		 "count) or `svg` (an interactive flame graph; of `--type offcpu` drawn by "
		 "time away, with a frame per wait event and colours by wait class, see "
		 "`FLAMEGRAPH OPTIONS`); without `-o` written to profile.pb.gz, profile.folded "
		 "or profile.svg" },
	{ .name = "format",
	  .type = CLI_CHOICE,
	  V(format, enum render_format),
	  .cmds = CLI_MERGE,
	  .arg = "FORMAT",
	  .choices = "pprof,folded",
	  .choose = choose_format,
	  .def = "pprof",
	  .section = "Output",
	  .help = "`pprof` (gzip-compressed) or `folded`" },
	{ .name = "group-by",
	  .type = CLI_GROUP_BY,
	  V(group_by, const char *),
	  .cmds = CLI_RECORD | CLI_FLAMEGRAPH,
	  .arg = "LABEL",
	  .section = "Output",
	  .help = "a root frame per value of the samples' LABEL: query, query_fingerprint, "
		  "query_id, pid, tid, thread_name, backend_type, database, user or comm"
		  "{record: (with --format folded or svg)}",
	  .man = "A root frame per value of the samples' LABEL: `query`, `query_fingerprint`, "
		 "`query_id`, `pid`, `tid`, `thread_name`, `backend_type`, `database`, `user` "
		 "or `comm`, so that statements (or processes) stand side by side{record: "
		 "(with `--format folded` or `svg`)}{flamegraph:; profiles of several "
		 "processes, such as `ebprof merge`'s, give their samples backend_type, "
		 "database and user, and off-CPU flame graphs draw the wait-event frames above "
		 "these}" },
	{ .name = "idle",
	  .type = CLI_FLAG,
	  V(idle, bool),
	  .cmds = CLI_RECORD | CLI_TOP | CLI_FLAMEGRAPH,
	  .section = "Output",
	  .help = "off-CPU: count the idle time too, left out by default: backends waiting for "
		  "their client outside a statement{top: (Client:ClientRead (idle)), background "
		  "processes in their main loop (Activity:*)}{record: (with --type offcpu "
		  "--format svg)}",
	  .man = "Off-CPU: count the idle time too, left out by default: samples with "
		 "`state=idle`, a backend waiting for its client outside any statement"
		 "{top: (shown as `Client:ClientRead (idle)`), and background processes "
		 "waiting in their main loop (wait event type `Activity`)}{record: (with "
		 "`--type offcpu --format svg`; the profile keeps them in every other "
		 "format)}" },
	{ .name = "json",
	  .type = CLI_FLAG,
	  V(json, bool),
	  .cmds = CLI_LS,
	  .section = "Output",
	  .help = "one JSON object per line (start_ns, end_ns, pid, size, path, labels)" },
	{ .name = "sample-type",
	  .type = CLI_STRING,
	  V(sample_type, const char *),
	  .cmds = CLI_FLAMEGRAPH,
	  .arg = "TYPE",
	  .section = "Output",
	  .help = "sample type to draw (e.g. cpu, samples, alloc_space; default: the profile's "
		  "default, else the value its type weighs (cpu, offcpu, faults), else its last "
		  "type)" },
	{ .name = "title",
	  .type = CLI_STRING,
	  V(title, const char *),
	  .cmds = CLI_FLAMEGRAPH,
	  .arg = "TITLE",
	  .empty_ok = true,
	  .section = "Output",
	  .help = "title (default: \"CPU flame graph\" for CPU profiles, \"Off-CPU time\" "
		  "for off-CPU ones, \"Page faults\" (drawn in bytes) for page faults, \"TYPE "
		  "flame graph\" otherwise)" },
	{ .name = "width",
	  .type = CLI_INT,
	  V(width, long),
	  .cmds = CLI_FLAMEGRAPH,
	  .arg = "PX",
	  .min = 100,
	  .max = 100000,
	  .def = "1200",
	  .section = "Output",
	  .help = "image width in pixels" },
	{ .name = "max-depth",
	  .type = CLI_INT,
	  V(max_depth, long),
	  .cmds = CLI_FLAMEGRAPH,
	  .arg = "N",
	  .min = 2,
	  .max = 100000,
	  .def = "256",
	  .section = "Output",
	  .help = "rows drawn per stack; deeper stacks are cut at the leaf side with a marker" },
	{ .name = "rows",
	  .shortopt = 'n',
	  .type = CLI_INT,
	  V(rows, long),
	  .cmds = CLI_TOP,
	  .arg = "N",
	  .min = 1,
	  .max = 100,
	  .section = "Output",
	  .def_text = "what fits the terminal",
	  .help = "statements shown" },
	{ .name = "once",
	  .type = CLI_FLAG,
	  V(once, bool),
	  .cmds = CLI_TOP,
	  .section = "Output",
	  .help = "sample one interval, print it as text and exit",
	  .man = "Sample one interval, print it as text (each statement with its five hottest "
		 "functions and, with waits, its ten longest waits in seconds) and exit; for "
		 "scripts" },
	/* --- the collector --- */
	{ .name = "listen",
	  .type = CLI_STRING,
	  V(listen, const char *),
	  .cmds = CLI_SERVE,
	  .arg = "ADDR:PORT",
	  .def = COLLECTOR_DEFAULT_LISTEN,
	  .section = "Collector",
	  .help = "IPv4 address, [IPv6 address] or localhost and a port",
	  .man = "An IPv4 address, an IPv6 address in brackets or `localhost`, and a port" },
	{ .name = "store",
	  .type = CLI_STRING,
	  V(store, const char *),
	  .cmds = CLI_SERVE,
	  .arg = "DIR",
	  .def = COLLECTOR_DEFAULT_STORE,
	  .section = "Collector",
	  .help = "profiles and catalog",
	  .man = "Profiles and catalog.sqlite. A directory an agent writes (output-dir, by "
		 "default /var/lib/ebprof/profiles) can be the store: its profiles are "
		 "catalogued where they are, with the labels of the agent's index, at start "
		 "and every minute; rows of files the agent's retention removed are dropped" },
	{ .name = "retention",
	  .type = CLI_AGE,
	  V(retention_s, int64_t),
	  .cmds = CLI_SERVE,
	  .arg = "AGE",
	  .def = COLLECTOR_DEFAULT_RETENTION,
	  .section = "Collector",
	  .help = "drop profiles older than AGE (e.g. 12h, 7d, 4w; off keeps them)",
	  .man = "Drop profiles older than AGE (12h, 7d, 4w; `off` keeps them), at start and "
		 "every minute; over an agent's directory this also removes the agent's "
		 "files" },
	{ .name = "max-size",
	  .type = CLI_SIZE,
	  V(max_bytes, int64_t),
	  .cmds = CLI_SERVE,
	  .arg = "SIZE",
	  .section = "Collector",
	  .def_text = "no bound",
	  .help = "then drop the oldest until the store holds at most SIZE of profiles (e.g. "
		  "500M, 20G)" },
	{ .name = "span-cache",
	  .type = CLI_SIZE,
	  V(span_cache, int64_t),
	  .cmds = CLI_SERVE,
	  .arg = "SIZE",
	  .def = COLLECTOR_DEFAULT_SPAN_CACHE,
	  .section = "Collector",
	  .help = "memory for the UI's merged past days, hours and ten minutes (off: merge "
		  "every profile)",
	  .man = "Memory for the web UI's merged past days, hours and ten-minute spans, kept "
		 "gzip'd, least recently used out first; a span is keyed by its profiles, so a "
		 "late push or a retention delete makes a new one. `off` merges every profile "
		 "of a view" },
	{ .name = "span-warm",
	  .type = CLI_AGE,
	  V(span_warm_s, int64_t),
	  .cmds = CLI_SERVE,
	  .arg = "AGE",
	  .def = COLLECTOR_DEFAULT_SPAN_WARM,
	  .section = "Collector",
	  .help = "make the spans of the last AGE ahead, every minute (off: only as views ask)" },
	{ .name = "token-file",
	  .type = CLI_STRING,
	  V(token_file, const char *),
	  .cmds = CLI_SERVE,
	  .arg = "FILE",
	  .section = "Collector",
	  .help = "require the token on FILE's first line on every API request: Authorization: "
		  "Bearer TOKEN, or basic auth with TOKEN as the password (the UI asks for it)",
	  .man = "Every API request (/api/, /ingest) must carry the token on the first line "
		 "of FILE: `Authorization: Bearer TOKEN` or basic authentication with the "
		 "token as password (Pyroscope clients); 401 otherwise. The web UI asks for it "
		 "once per browser tab. Agents send it with `profefe-token`" },
	/* --- every command --- */
	{ .name = "verbose",
	  .shortopt = 'v',
	  .type = CLI_COUNT,
	  V(verbose, int),
	  .cmds = CLI_RECORD | CLI_SYMBOLIZE | CLI_SERVE,
	  .section = "General",
	  .help = "more messages{symbolize: (where each binary's names came from)}; twice: "
		  "debug{record: (libbpf and verifier output too)}" },
	{ .name = "help",
	  .shortopt = 'h',
	  .type = CLI_HELP,
	  .cmds = CLI_ALL,
	  .section = "General",
	  .help = "this help",
	  .man = "Print the options" },
	{ .name = "version",
	  .type = CLI_VERSION,
	  .cmds = CLI_RECORD,
	  .section = "General",
	  .help = "print the version" },
};

const size_t cli_noptions = sizeof(cli_options) / sizeof(cli_options[0]);
_Static_assert(sizeof(cli_options) / sizeof(cli_options[0]) <= CLI_MAX_OPTIONS,
	       "raise CLI_MAX_OPTIONS");
