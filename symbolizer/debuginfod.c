// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "debuginfod.h"
#include "elf_binary.h"
#include "sym_log.h"

#define SYMDI_QUEUE 1024
#define SYMDI_ARRIVALS 1024
#define SYMDI_FAILURES 256
#define SYMDI_MAX_URLS 8
#define SYMDI_HEX_MAX (2 * ELFBIN_MAX_BUILD_ID + 1)
#define SYMDI_FAILURE_TTL 60
#define SYMDI_DEFAULT_BYTES (1ULL << 30)
#define SYMDI_DEFAULT_TIMEOUT_MS 10000

struct symdi_server {
	char *base;  /* without trailing '/' */
	bool failed; /* warned about; cleared by the next success */
};

struct symdi_failure {
	char hex[SYMDI_HEX_MAX];
	time_t until;
};

struct symdi {
	struct symdi_server servers[SYMDI_MAX_URLS];
	size_t nservers;
	char *dir;
	/* Suffix of "no server has it" markers: "SERVERS.missing", SERVERS a
	 * hash of the server list, so other servers are asked afresh. */
	char missing[32];
	uint64_t cache_bytes;
	long timeout_ms;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t worker;
	bool started, stop;
	char queue[SYMDI_QUEUE][SYMDI_HEX_MAX]; /* ring */
	size_t qhead, qlen;
	char inflight[SYMDI_HEX_MAX];
	char arrivals[SYMDI_ARRIVALS][SYMDI_HEX_MAX];
	size_t narrivals;
	struct symdi_failure failures[SYMDI_FAILURES]; /* ring */
	size_t nextfail;
	struct symdi_stats stats;
};

static bool valid_hex(const char *hex)
{
	size_t n = strlen(hex);

	if (n < 2 || n >= SYMDI_HEX_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)hex[i]) && (hex[i] < 'a' || hex[i] > 'f'))
			return false;
	return true;
}

static int add_server(struct symdi *d, const char *url, size_t len)
{
	struct symdi_server *s;

	if ((len < 8 || strncmp(url, "http://", 7)) && (len < 9 || strncmp(url, "https://", 8))) {
		sym_warn("debuginfod: ignoring '%.*s': not an http:// or https:// URL", (int)len,
			 url);
		return 0;
	}
	if (d->nservers == SYMDI_MAX_URLS) {
		sym_warn("debuginfod: ignoring '%.*s': more than %d servers", (int)len, url,
			 SYMDI_MAX_URLS);
		return 0;
	}
	while (len && url[len - 1] == '/')
		len--;
	s = &d->servers[d->nservers];
	s->base = strndup(url, len);
	if (!s->base)
		return -ENOMEM;
	d->nservers++;
	return 0;
}

/* --- fetching ------------------------------------------------------------ */

struct sink {
	int fd;
	uint64_t written;
	bool failed;
};

static size_t write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sink *s = arg;
	size_t len = size * nmemb, off = 0;

	if (s->written + len > ELFBIN_MAX_DEBUG_FILE) {
		s->failed = true;
		return 0;
	}
	while (off < len) {
		ssize_t w = write(s->fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->failed = true;
			return 0;
		}
		off += (size_t)w;
	}
	s->written += len;
	return len;
}

/* Is the file an ELF file carrying this build-id? */
static bool has_build_id(int fd, const char *hex)
{
	char got[SYMDI_HEX_MAX];
	struct elf_ident id;
	bool ok;

	if (elfbin_ident(fd, &id))
		return false;
	elfbin_hex(id.build_id, id.build_id_len, got);
	ok = id.build_id_len && !strcmp(got, hex);
	elfbin_ident_release(&id);
	return ok;
}

/* libcurl's progress callback: abort the transfer when the client stops. */
static int progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct symdi *d = arg;
	bool stop;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	pthread_mutex_lock(&d->mu);
	stop = d->stop;
	pthread_mutex_unlock(&d->mu);
	return stop;
}

/* Trim the cache to its bound, keeping keep; its size into the stats. */
static void trim(struct symdi *d, const char *keep)
{
	uint64_t total = symdi_cache_trim(d->dir, d->cache_bytes, keep);

	pthread_mutex_lock(&d->mu);
	d->stats.cache_bytes = total;
	pthread_mutex_unlock(&d->mu);
}

static void count(struct symdi *d, uint64_t *counter)
{
	pthread_mutex_lock(&d->mu);
	(*counter)++;
	pthread_mutex_unlock(&d->mu);
}

/* Warn when a server starts failing and when it answers again (logged
 * outside the lock: a slow stderr must not hold up lookups). */
static void server_state(struct symdi *d, struct symdi_server *s, const char *problem)
{
	bool was;

	pthread_mutex_lock(&d->mu);
	was = s->failed;
	s->failed = problem != NULL;
	pthread_mutex_unlock(&d->mu);
	if (problem && !was)
		sym_warn("debuginfod: %s: %s (profiles keep addresses until it answers)", s->base,
			 problem);
	else if (!problem && was)
		sym_warn("debuginfod: %s answers again", s->base);
}

/* Ask one server: 0 stored (path set), -ENOENT it does not have it, -EIO. */
static int fetch_one(struct symdi *d, struct symdi_server *s, const char *hex, char **path)
{
	char url[1024], errbuf[CURL_ERROR_SIZE] = "", problem[CURL_ERROR_SIZE + 64];
	struct sink sink = { .fd = -1 };
	char *tmp = NULL, *final = NULL;
	long status = 0;
	CURLcode rc;
	CURL *c;
	int err = -EIO;

	if ((size_t)snprintf(url, sizeof(url), "%s/buildid/%s/debuginfo", s->base, hex) >=
	    sizeof(url))
		return -EIO;
	if (asprintf(&tmp, "%s/.%s.XXXXXX", d->dir, hex) < 0)
		return -ENOMEM;
	sink.fd = mkstemp(tmp);
	if (sink.fd < 0) {
		err = -errno;
		sym_warn("debuginfod: cannot write to the cache %s: %s", d->dir, strerror(errno));
		free(tmp);
		return err;
	}
	c = curl_easy_init();
	if (!c)
		goto out;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* an https server may not send us to plain http */
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
			 strncmp(s->base, "https:", 6) ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 4L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, d->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, d->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ebprof");
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, d);
	count(d, &d->stats.requests);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		goto out; /* stopping */
	if (rc == CURLE_OK && status == 404) {
		server_state(d, s, NULL);
		err = -ENOENT;
		goto out;
	}
	if (rc != CURLE_OK || status != 200) {
		if (rc != CURLE_OK)
			snprintf(problem, sizeof(problem), "%s",
				 errbuf[0] ? errbuf : curl_easy_strerror(rc));
		else
			snprintf(problem, sizeof(problem), "HTTP status %ld", status);
		server_state(d, s, problem);
		goto out;
	}
	server_state(d, s, NULL);
	if (sink.failed || !has_build_id(sink.fd, hex)) {
		sym_warn("debuginfod: %s sent for %s a file that is not its debug file; ignored",
			 s->base, hex);
		goto out;
	}
	final = symdi_cache_path(d->dir, hex, "debug");
	if (!final || fchmod(sink.fd, 0644) || rename(tmp, final)) {
		free(final);
		goto out;
	}
	*path = final;
	err = 0;
out:
	close(sink.fd);
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

static void remember_failure(struct symdi *d, const char *hex)
{
	struct symdi_failure *f;

	pthread_mutex_lock(&d->mu);
	f = &d->failures[d->nextfail++ % SYMDI_FAILURES];
	snprintf(f->hex, sizeof(f->hex), "%s", hex);
	f->until = time(NULL) + SYMDI_FAILURE_TTL;
	pthread_mutex_unlock(&d->mu);
}

static bool failed_recently(struct symdi *d, const char *hex)
{
	time_t now = time(NULL);
	bool failed = false;

	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < SYMDI_FAILURES && !failed; i++)
		failed = d->failures[i].until > now && !strcmp(d->failures[i].hex, hex);
	pthread_mutex_unlock(&d->mu);
	return failed;
}

/* Ask every server in order; remember the answer. */
static int fetch(struct symdi *d, const char *hex, char **path)
{
	bool all_missing = true;
	int fd, err;

	for (size_t i = 0; i < d->nservers; i++) {
		err = fetch_one(d, &d->servers[i], hex, path);
		if (!err) {
			count(d, &d->stats.found);
			trim(d, strrchr(*path, '/') + 1);
			return 0;
		}
		if (err != -ENOENT)
			all_missing = false;
	}
	if (!all_missing) {
		count(d, &d->stats.errors);
		remember_failure(d, hex);
		return -ENOENT;
	}
	count(d, &d->stats.missing);
	sym_debug("debuginfod: no server has %s", hex);
	char *p = symdi_cache_path(d->dir, hex, d->missing);

	if (p) {
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0)
			close(fd);
		free(p);
	}
	return -ENOENT;
}

static void *worker(void *arg)
{
	struct symdi *d = arg;
	char hex[SYMDI_HEX_MAX];

	pthread_mutex_lock(&d->mu);
	for (;;) {
		char *path = NULL;

		while (!d->stop && !d->qlen)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stop)
			break;
		memcpy(hex, d->queue[d->qhead], sizeof(hex));
		d->qhead = (d->qhead + 1) % SYMDI_QUEUE;
		d->qlen--;
		memcpy(d->inflight, hex, sizeof(hex));
		pthread_mutex_unlock(&d->mu);

		int err = fetch(d, hex, &path);

		free(path);
		pthread_mutex_lock(&d->mu);
		d->inflight[0] = '\0';
		if (!err && d->narrivals < SYMDI_ARRIVALS)
			memcpy(d->arrivals[d->narrivals++], hex, sizeof(hex));
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* --- API ----------------------------------------------------------------- */

int symdi_new(const struct symdi_opts *opts, struct symdi **out)
{
	const char *u = opts && opts->urls ? opts->urls : "";
	struct symdi *d;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	while (*u) {
		size_t len = strcspn(u, " \t\n");

		if (len && (err = add_server(d, u, len)))
			goto fail;
		u += len;
		u += strspn(u, " \t\n");
	}
	err = -EINVAL;
	if (!d->nservers)
		goto fail;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a of the servers */

	for (size_t i = 0; i < d->nservers; i++) {
		for (const char *c = d->servers[i].base; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
		h = (h ^ ' ') * 1099511628211ULL;
	}
	snprintf(d->missing, sizeof(d->missing), "%016llx.missing", (unsigned long long)h);
	d->cache_bytes = opts->cache_bytes ? opts->cache_bytes : SYMDI_DEFAULT_BYTES;
	d->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : SYMDI_DEFAULT_TIMEOUT_MS;
	err = -ENOMEM;
	d->dir =
		strdup(opts->cache_dir && *opts->cache_dir ? opts->cache_dir : SYMDI_DEFAULT_CACHE);
	if (!d->dir)
		goto fail;
	err = symdi_mkdirs(d->dir);
	if (err) {
		sym_warn("debuginfod: cannot create the cache %s: %s", d->dir, strerror(-err));
		goto fail;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		err = -ENOMEM;
		goto fail;
	}
	err = -pthread_create(&d->worker, NULL, worker, d);
	if (err)
		goto fail;
	d->started = true;
	trim(d, NULL);
	*out = d;
	return 0;
fail:
	symdi_free(d);
	return err;
}

void symdi_free(struct symdi *d)
{
	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->worker, NULL);
	}
	for (size_t i = 0; i < d->nservers; i++)
		free(d->servers[i].base);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d->dir);
	free(d);
}

/* Queued or in flight already? (d->mu held) */
static bool pending(struct symdi *d, const char *hex)
{
	if (!strcmp(d->inflight, hex))
		return true;
	for (size_t i = 0; i < d->qlen; i++)
		if (!strcmp(d->queue[(d->qhead + i) % SYMDI_QUEUE], hex))
			return true;
	return false;
}

int symdi_lookup(struct symdi *d, const char *hex, bool wait, char **path)
{
	int err;

	*path = NULL;
	if (!d || !valid_hex(hex))
		return -EINVAL;
	err = symdi_cache_check(d->dir, hex, d->missing, path);
	if (err != -EAGAIN)
		return err;
	if (failed_recently(d, hex))
		return -ENOENT;
	if (wait)
		return fetch(d, hex, path);
	pthread_mutex_lock(&d->mu);
	if (!pending(d, hex)) {
		if (d->qlen == SYMDI_QUEUE) {
			d->stats.dropped++;
		} else {
			memcpy(d->queue[(d->qhead + d->qlen) % SYMDI_QUEUE], hex, strlen(hex) + 1);
			d->qlen++;
			pthread_cond_signal(&d->cv);
		}
	}
	pthread_mutex_unlock(&d->mu);
	return -EAGAIN;
}

size_t symdi_arrivals(struct symdi *d, void (*fn)(void *ctx, const char *hex), void *ctx)
{
	char(*got)[SYMDI_HEX_MAX];
	size_t n;

	if (!d)
		return 0;
	pthread_mutex_lock(&d->mu);
	n = d->narrivals;
	if (!n) {
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	got = malloc(n * sizeof(*got));
	if (got) {
		memcpy(got, d->arrivals, n * sizeof(*got));
		d->narrivals = 0;
	}
	pthread_mutex_unlock(&d->mu);
	if (!got)
		return 0;
	for (size_t i = 0; i < n; i++)
		fn(ctx, got[i]);
	free(got);
	return n;
}

void symdi_get_stats(struct symdi *d, struct symdi_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	*out = d->stats;
	out->queued = d->qlen + (d->inflight[0] ? 1 : 0);
	pthread_mutex_unlock(&d->mu);
}
