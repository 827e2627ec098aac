/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Selection of stored profiles by `ebprof ls` and `ebprof merge` from
 * their options (--dir, --from, --to, --label, --pid, --service, --type;
 * the rows of options.h), and the time syntax --from and --to accept.
 * Times without 'Z' are local time (TZ).
 */
#ifndef EBPROF_STORE_CLI_H
#define EBPROF_STORE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/store/store.h"

#define STORE_DEFAULT_DIR "/var/lib/ebprof/profiles"

struct cli_values;

/*
 * List the profiles the selection options of v (--dir, --from, --to,
 * --label, --pid, --service, --type; options.h) select; one_type: a
 * caller that needs one type of profile (cpu unless --type or --label
 * type=... says). Returns EXIT_OK with *e (free with store_entries_free)
 * and *n > 0; otherwise logs one line and returns EXIT_USAGE (--from not
 * before --to, no store there, nothing matches) or EXIT_RUNTIME.
 */
int store_select(const struct cli_values *v, bool one_type, struct store_entry **e, size_t *n);

/* "KEY=VALUE", KEY of [a-z0-9_] not starting with a digit, into *kv (key
 * and value malloc'ed, the caller frees). 0, -ENOMEM, or -EINVAL with a
 * one-line message in err. */
int store_label_parse(const char *s, struct kv *kv, char *err, size_t errlen);

/* Parse a time into ns since the epoch: 2026-11-21T03:00[:SS][Z],
 * '2026-11-21 03:00', 2026-11-21, 03:00 (today), -30m/-2h/-1d/-1w (before
 * now_ns), now or @UNIXSECONDS. 0 or -EINVAL with a one-line message in
 * err. */
int store_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, char *err, size_t errlen);

/* Local time as 2026-11-21T03:00:00+01:00 into buf (>= 32 bytes). */
void store_format_time(int64_t ns, char *buf, size_t len);

#endif /* EBPROF_STORE_CLI_H */
