/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Command-line selection of stored profiles, shared by `ebprof ls` and
 * `ebprof merge`: --dir, --from, --to, --label, --pid, --service, and the
 * time syntax they accept. Times without 'Z' are local time (TZ).
 */
#ifndef EBPROF_STORE_CLI_H
#define EBPROF_STORE_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/store/store.h"

#define STORE_DEFAULT_DIR "/var/lib/ebprof/profiles"

/* getopt_long values of the filter options (outside the char range). */
enum {
	STORE_OPT_DIR = 0x1000,
	STORE_OPT_FROM,
	STORE_OPT_TO,
	STORE_OPT_LABEL,
	STORE_OPT_SERVICE,
	STORE_OPT_TYPE,
	STORE_OPT_PID = 'p',
};

/* Entries for a struct option array. */
// clang-format off
#define STORE_FILTER_LONGOPTS \
	{ "dir", required_argument, NULL, STORE_OPT_DIR }, \
	{ "from", required_argument, NULL, STORE_OPT_FROM }, \
	{ "to", required_argument, NULL, STORE_OPT_TO }, \
	{ "label", required_argument, NULL, STORE_OPT_LABEL }, \
	{ "service", required_argument, NULL, STORE_OPT_SERVICE }, \
	{ "type", required_argument, NULL, STORE_OPT_TYPE }, \
	{ "pid", required_argument, NULL, STORE_OPT_PID }
// clang-format on

/* Usage lines of the filter options. */
#define STORE_FILTER_USAGE                                                                         \
	"  --dir DIR           the profile store (default " STORE_DEFAULT_DIR ")\n"                \
	"  --from T, --to T    profiles overlapping [T1, T2); T is 2026-11-21T03:00[:SS][Z],\n"    \
	"                      '2026-11-21 03:00', 2026-11-21, 03:00 (today), -30m/-2h/-1d\n"      \
	"                      (before now), now or @UNIXSECONDS; local time unless Z\n"           \
	"  --label KEY=VALUE   only profiles with this label (repeatable, all must match),\n"      \
	"                      e.g. backend_type=checkpointer, pg_database=app\n"                  \
	"  -p, --pid PID[,PID] only these processes (repeatable)\n"                                \
	"  --service NAME      only this service (default: every service)\n"                       \
	"  --type TYPE         cpu, offcpu or faults profiles (merge: default cpu; ls: all)\n"

/* A selection; owns the label and pid arrays, borrows dir and service
 * from argv. q points into it: use it while f is alive. */
struct store_filter {
	const char *dir;
	struct store_query q;
	struct kv *labels;
	size_t nlabels;
	uint32_t *pids;
	size_t npids;
	const char *from_arg, *to_arg;
	const char *type; /* --type, NULL: none given */
	bool one_type;	  /* set by a caller that needs one type: cpu if none */
};

void store_filter_init(struct store_filter *f);
void store_filter_free(struct store_filter *f);

/*
 * Apply one option returned by getopt_long (opt, optarg). now_ns is the
 * reference for relative times. Returns 0 when applied, 1 when opt is not
 * a filter option, -EINVAL or -ENOMEM with a one-line message in err.
 */
int store_filter_option(struct store_filter *f, int opt, const char *arg, int64_t now_ns, char *err,
			size_t errlen);
/*
 * getopt_long over argv (resetting it first when optind is 0, as at the
 * start) that applies the filter options to f itself, relative to now_ns:
 * returns the next option that is not a filter option, as getopt_long
 * would, -1 at the end, or STORE_FILTER_BAD with the message in err.
 */
#define STORE_FILTER_BAD (-2)
int store_filter_getopt(struct store_filter *f, int argc, char **argv, const char *optstring,
			const struct option *longopts, int64_t now_ns, char *err, size_t errlen);

/* Checks across options (--from before --to). 0 or -EINVAL with err. */
int store_filter_finish(struct store_filter *f, char *err, size_t errlen);

/* List the profiles the filter selects. Returns EXIT_OK with *e (free with
 * store_entries_free) and *n > 0; otherwise logs one line and returns
 * EXIT_USAGE (no store there, nothing matches) or EXIT_RUNTIME. */
int store_filter_select(const struct store_filter *f, struct store_entry **e, size_t *n);

/* Parse a time (syntax above) into ns since the epoch. 0 or -EINVAL with
 * a one-line message in err. */
int store_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, char *err, size_t errlen);

/* Local time as 2026-11-21T03:00:00+01:00 into buf (>= 32 bytes). */
void store_format_time(int64_t ns, char *buf, size_t len);

#endif /* EBPROF_STORE_CLI_H */
