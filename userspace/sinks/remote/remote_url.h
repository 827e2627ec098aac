/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The URLs of a remote: base URL validation, the request URL of a profile
 * for profefe and Pyroscope, whether a redirect may be followed, and a
 * URL as log lines show it.
 *
 * profefe: {base}/api/0/profiles?service=S&type=cpu&labels=L where L is
 *   "k=v,k2=v2" over every label but service, each key and value
 *   percent-encoded first (so ',' and '=' inside them survive), then the
 *   whole L percent-encoded again as a query value; profefe decodes the
 *   query, splits on ',' and '=' and unescapes each part.
 * Pyroscope: {base}/ingest?name=N&from=UNIX&until=UNIX&format=pprof where
 *   N = APP{k=v,...} percent-encoded as a whole. Pyroscope's key parser
 *   has no escaping, so: APP is the service with every character outside
 *   [A-Za-z0-9_.-] replaced by '_' ("unknown" when empty); label keys get
 *   every character outside [A-Za-z0-9_] replaced by '_' and a leading
 *   '_' when they start with a digit; the reserved key __name__ is
 *   skipped; in values the characters , { } = " \ and control characters
 *   become '_' (everything else, spaces and non-ASCII UTF-8 included, is
 *   kept). from/until are start_ns/end_ns in whole seconds (floor).
 *
 * Strings returned are malloc'ed, the caller frees them.
 */
#ifndef EBPROF_REMOTE_URL_H
#define EBPROF_REMOTE_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "sinks/sink.h"

/* curl_global_init(), once per process: 0 or -EIO. */
int rhttp_curl_init(void);

/* Check a base URL: http or https, a host, no query or fragment, no
 * spaces or control characters. *base (optional) gets a copy without the
 * trailing '/'. 0 or -EINVAL (not logged), -ENOMEM. */
int rhttp_check_url(const char *url, char **base);

/* Request URLs (NULL on ENOMEM). */
char *rhttp_profefe_url(const char *base, const struct sink_profile *rec);
char *rhttp_pyroscope_url(const char *base, const struct sink_profile *rec);
/* The unescaped Pyroscope name APP{k=v,...}. */
char *rhttp_pyroscope_name(const struct sink_profile *rec);
/* Its parts: APP; whether a label of the profile is sent (not service,
 * __name__ or an empty key); a label key as sent. */
char *rhttp_pyroscope_app(const struct sink_profile *rec);
bool rhttp_pyroscope_label(const char *key);
char *rhttp_pyroscope_key(const char *key);

/*
 * May a profile POSTed to from and answered 307 or 308 be POSTed again to
 * to (absolute, as libcurl resolved the Location)? Only when to is a URL
 * of the same scheme as from (never https to http, never file:// or any
 * other), with a host; with same_origin (the remote sends credentials:
 * they must not go elsewhere) only to the same host and port. 0; -EPERM
 * with why (one line, without a trailing period) filled; -ENOMEM.
 */
int rhttp_redirect_check(const char *from, const char *to, bool same_origin, char *why, size_t len);

/* url as a log line shows it, in buf: scheme://host[:port]/path, without
 * credentials, query or fragment; what does not parse as a URL is shown
 * as it is, control characters as spaces, cut at len - 1 bytes. */
void rhttp_shown_url(const char *url, char *buf, size_t len);

#endif /* EBPROF_REMOTE_URL_H */
