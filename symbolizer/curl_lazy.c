// SPDX-License-Identifier: BSD-2-Clause
/*
 * libcurl, loaded on first use. The agent needs libcurl only for
 * debuginfod and the remote sinks, yet linking it maps libcurl and the
 * 27 libraries it needs (OpenSSL, krb5, LDAP, libssh2, RTMP, ...) into
 * every run: about 3 MiB of resident memory (bench/footprint-smaps.sh).
 * This file defines the libcurl functions ebprof calls; the first call
 * dlopen()s libcurl.so.4 and each forwards to the real one. The binary
 * links this object instead of -lcurl (the disk image, which links
 * libcurl statically, leaves it out).
 *
 * When libcurl cannot be loaded, the calls fail as libcurl does when out
 * of memory (NULL handles, CURLE_FAILED_INIT), and the error is logged
 * once to stderr.
 */
#define CURL_DISABLE_TYPECHECK 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include <curl/curl.h>

#define CURL_LIB "libcurl.so.4"

#define CURL_FUNCS(X)                                                                              \
	X(CURLcode, curl_global_init, (long flags))                                                \
	X(void, curl_global_cleanup, (void))                                                       \
	X(CURL *, curl_easy_init, (void))                                                          \
	X(void, curl_easy_cleanup, (CURL * h))                                                     \
	X(CURLcode, curl_easy_setopt, (CURL * h, CURLoption o, ...))                               \
	X(CURLcode, curl_easy_getinfo, (CURL * h, CURLINFO i, ...))                                \
	X(CURLcode, curl_easy_perform, (CURL * h))                                                 \
	X(const char *, curl_easy_strerror, (CURLcode c))                                          \
	X(char *, curl_easy_escape, (CURL * h, const char *s, int len))                            \
	X(void, curl_free, (void *p))                                                              \
	X(time_t, curl_getdate, (const char *s, const time_t *unused))                             \
	X(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s))          \
	X(void, curl_slist_free_all, (struct curl_slist * l))                                      \
	X(CURLU *, curl_url, (void))                                                               \
	X(void, curl_url_cleanup, (CURLU * u))                                                     \
	X(CURLUcode, curl_url_get, (CURLU * u, CURLUPart w, char **p, unsigned int f))             \
	X(CURLUcode, curl_url_set, (CURLU * u, CURLUPart w, const char *p, unsigned int f))

#define FIELD(ret, name, args) ret(*name) args;
static struct {
	CURL_FUNCS(FIELD)
} real; /* cache: filled once by load(), under `once` */
#undef FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded; /* 1: every function found */

static void load(void)
{
	void *h = dlopen(CURL_LIB, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "ebprof: error: cannot load %s: %s\n", CURL_LIB, dlerror());
		return;
	}
#define RESOLVE(ret, name, args)                                                                   \
	*(void **)&real.name = dlsym(h, #name);                                                    \
	if (!real.name) {                                                                          \
		fprintf(stderr, "ebprof: error: %s has no %s\n", CURL_LIB, #name);                 \
		return;                                                                            \
	}
	CURL_FUNCS(RESOLVE)
#undef RESOLVE
	loaded = 1;
}

static int ready(void)
{
	pthread_once(&once, load);
	return loaded;
}

CURLcode curl_global_init(long flags)
{
	return ready() ? real.curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
	if (loaded)
		real.curl_global_cleanup();
}

CURL *curl_easy_init(void)
{
	return ready() ? real.curl_easy_init() : NULL;
}

void curl_easy_cleanup(CURL *h)
{
	if (h && ready())
		real.curl_easy_cleanup(h);
}

/* The one argument after the option, passed on as the type libcurl reads
 * for that option's range (curl.h's CURLOPTTYPE_*). */
CURLcode curl_easy_setopt(CURL *h, CURLoption o, ...)
{
	va_list ap;
	CURLcode rc;

	if (!ready())
		return CURLE_FAILED_INIT;
	va_start(ap, o);
	if (o < CURLOPTTYPE_OBJECTPOINT)
		rc = real.curl_easy_setopt(h, o, va_arg(ap, long));
	else if (o < CURLOPTTYPE_FUNCTIONPOINT)
		rc = real.curl_easy_setopt(h, o, va_arg(ap, void *));
	else if (o < CURLOPTTYPE_OFF_T)
		rc = real.curl_easy_setopt(h, o, va_arg(ap, void (*)(void)));
	else if (o < CURLOPTTYPE_BLOB)
		rc = real.curl_easy_setopt(h, o, va_arg(ap, curl_off_t));
	else
		rc = real.curl_easy_setopt(h, o, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes one pointer. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO i, ...)
{
	va_list ap;
	void *p;

	if (!ready())
		return CURLE_FAILED_INIT;
	va_start(ap, i);
	p = va_arg(ap, void *);
	va_end(ap);
	return real.curl_easy_getinfo(h, i, p);
}

CURLcode curl_easy_perform(CURL *h)
{
	return ready() ? real.curl_easy_perform(h) : CURLE_FAILED_INIT;
}

const char *curl_easy_strerror(CURLcode c)
{
	return ready() ? real.curl_easy_strerror(c) : "libcurl not loaded";
}

char *curl_easy_escape(CURL *h, const char *s, int len)
{
	return ready() ? real.curl_easy_escape(h, s, len) : NULL;
}

void curl_free(void *p)
{
	if (p && ready())
		real.curl_free(p);
}

time_t curl_getdate(const char *s, const time_t *unused)
{
	return ready() ? real.curl_getdate(s, unused) : -1;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return ready() ? real.curl_slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
	if (l && ready())
		real.curl_slist_free_all(l);
}

CURLU *curl_url(void)
{
	return ready() ? real.curl_url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
	if (u && ready())
		real.curl_url_cleanup(u);
}

CURLUcode curl_url_get(CURLU *u, CURLUPart w, char **p, unsigned int f)
{
	return ready() ? real.curl_url_get(u, w, p, f) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart w, const char *p, unsigned int f)
{
	return ready() ? real.curl_url_set(u, w, p, f) : CURLUE_OUT_OF_MEMORY;
}
