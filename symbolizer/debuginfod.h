/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Debug files by build-id from debuginfod servers
 * (GET URL/buildid/HEX/debuginfo), kept in a bounded on-disk cache.
 *
 * Lookups never block the caller unless it asks to: a miss is queued for
 * a worker thread, which fetches it over libcurl; the symbolizer picks the
 * arrivals up later (symdi_arrivals()) and reopens the binary with its
 * debug file. A downloaded file is kept only when it is an ELF file with
 * the build-id asked for. Missing build-ids (404 on every server) are
 * remembered on disk for a day, failures (timeout, refused, 5xx) for a
 * minute, so a build-id is not asked for at every interval.
 *
 * Why not libdebuginfod: elfutils 0.188 takes its server list, cache
 * directory and timeout only from environment variables (which a threaded
 * daemon reloading its configuration cannot change safely) and ships no
 * static archive for the disk image; the protocol is one GET, and libcurl
 * is linked already. The cache layout is ours (HEX.debug, HEX.missing).
 *
 * Thread-safe: every function may be called from any thread.
 */
#ifndef EBPROF_SYM_DEBUGINFOD_H
#define EBPROF_SYM_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symdi;

struct symdi_opts {
	const char *urls;      /* space-separated base URLs (http, https) */
	const char *cache_dir; /* NULL = SYMDI_DEFAULT_CACHE */
	uint64_t cache_bytes;  /* bound of the cache; 0 = 1 GiB */
	int timeout_ms;	       /* per request; 0 = 10 s */
};

#define SYMDI_DEFAULT_CACHE "/var/cache/ebprof/debuginfod"
/* How long "no server has it" is believed (seconds). */
#define SYMDI_MISSING_TTL (24 * 3600)
/* A download not finished in this many seconds was left by a crash. */
#define SYMDI_TEMP_MAX_AGE 3600

struct symdi_stats {
	uint64_t requests; /* HTTP requests made */
	uint64_t found;	   /* debug files downloaded and kept */
	uint64_t missing;  /* build-ids no server has */
	uint64_t errors;   /* failed requests (network, 5xx, bad file) */
	uint64_t dropped;  /* lookups not queued: queue full */
	uint64_t queued;   /* waiting or in flight now */
	uint64_t cache_bytes;
};

/*
 * Start a client (and its worker thread). Returns 0 and *out; -EINVAL when
 * urls names no usable server (each unusable URL is warned about once),
 * -ENOMEM, or the error of creating the cache directory.
 */
int symdi_new(const struct symdi_opts *opts, struct symdi **out);
/* Stop the worker (an in-flight request ends at its timeout) and free. */
void symdi_free(struct symdi *d);

/*
 * The debug file of a build-id (lower-case hex). Returns 0 and a malloc'd
 * path (the caller frees it); -ENOENT when no server has it (or it failed
 * a minute ago); -EAGAIN when the request is queued or in flight (wait
 * false), or, with wait, the result of fetching it now in the caller's
 * thread.
 */
int symdi_lookup(struct symdi *d, const char *hex, bool wait, char **path);

/* Call fn for every build-id whose debug file arrived since the last call;
 * returns how many. */
size_t symdi_arrivals(struct symdi *d, void (*fn)(void *ctx, const char *hex), void *ctx);

void symdi_get_stats(struct symdi *d, struct symdi_stats *out);

/* The cache (debuginfod_cache.c), for the client. DIR/HEX.SUFFIX
 * (malloc'd, NULL on ENOMEM). */
char *symdi_cache_path(const char *dir, const char *hex, const char *suffix);
/* 0 and the cached debug file (malloc'd); -ENOENT known missing (a marker
 * HEX.MISSING younger than a day); -EAGAIN not known. */
int symdi_cache_check(const char *dir, const char *hex, const char *missing, char **path);
/* Remove the least recently used debug files past bound bytes, never keep
 * (a file name, NULL = none); the bytes left. */
uint64_t symdi_cache_trim(const char *dir, uint64_t bound, const char *keep);
/* mkdir -p, the last directory 0700. 0 or a negative errno. */
int symdi_mkdirs(const char *path);

#endif /* EBPROF_SYM_DEBUGINFOD_H */
