// SPDX-License-Identifier: BSD-2-Clause
/*
 * Merged spans made before anyone asks (serve_internal.h): on the
 * retention thread, at start and every minute, the spans (merge.c,
 * mergecache.h) of every service and type over the last --span-warm
 * (24h by default), so the first view of a recent day, hour or live range
 * finds them rather than reading each profile. At start every day of it,
 * oldest first (the newest are then the most recently used in the cache);
 * then each minute only what settled since: the new ten minutes, and the
 * hour and the day they end. A profile pushed late into a past span is
 * left to the view that needs it (the span's key changed, merge.c makes
 * it again).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_internal.h"
#include "util/log.h"

#define NS 1000000000LL
#define TEN_MINUTES (600 * NS)
#define HOUR (3600 * NS)
#define DAY (86400 * NS)

/* profefe's types, as serve_valid_type() takes them */
static const char *const types[] = { "cpu",	  "heap",	  "block", "mutex",
				     "goroutine", "threadcreate", "trace", "other" };

static bool stopping(struct collector *co)
{
	bool s;

	pthread_mutex_lock(&co->stop_lock);
	s = co->stopping;
	pthread_mutex_unlock(&co->stop_lock);
	return s;
}

static int64_t floor_to(int64_t t, int64_t w)
{
	return t - ((t % w) + w) % w;
}

/* The spans inside [from, to) of every service and type, made; the number
 * made added to *made. 0 or a negative errno. */
static int warm_range(struct collector *co, int64_t from, int64_t to, size_t *made)
{
	char **services = NULL;
	size_t nservices = 0;
	int ret;

	pthread_mutex_lock(&co->lock);
	ret = catalog_services(co->cat, &services, &nservices);
	pthread_mutex_unlock(&co->lock);
	for (size_t s = 0; !ret && s < nservices; s++)
		for (size_t t = 0; !ret && t < sizeof(types) / sizeof(types[0]); t++) {
			struct catalog_query q = { .service = services[s],
						   .type = types[t],
						   .from_ns = from,
						   .to_ns = to - 1 };
			struct catalog_row *rows = NULL;
			struct serve_merge_stats st;
			struct profile *p = NULL;
			size_t n = 0;

			pthread_mutex_lock(&co->lock);
			ret = catalog_list(co->cat, &q, &rows, &n);
			pthread_mutex_unlock(&co->lock);
			if (!ret && n)
				ret = serve_merge_spans(co, rows, n, q.from_ns, q.to_ns, NULL, &p,
							&st);
			if (!ret && n)
				*made += st.made;
			profile_free(p);
			catalog_rows_free(rows, n);
		}
	for (size_t s = 0; s < nservices; s++)
		free(services[s]);
	free(services);
	return ret;
}

int serve_warm(struct collector *co)
{
	struct timespec now, t0, t1;
	int64_t settled, from, lo;
	size_t made = 0;
	int ret = 0;

	if (!co->cache || co->span_warm_s <= 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	settled = floor_to((int64_t)now.tv_sec * NS + now.tv_nsec - SERVE_SPAN_SETTLED_NS,
			   TEN_MINUTES);
	from = floor_to(settled - co->span_warm_s * NS, DAY);
	if (co->warmed_ns >= settled)
		return 0;
	if (co->warmed_ns < from) { /* every day, oldest first */
		for (lo = from; !ret && lo < settled && !stopping(co); lo += DAY)
			ret = warm_range(co, lo, lo + DAY < settled ? lo + DAY : settled, &made);
	} else { /* what settled since, then the hours and the day it ends */
		ret = warm_range(co, co->warmed_ns, settled, &made);
		for (lo = floor_to(co->warmed_ns, HOUR); !ret && lo + HOUR <= settled; lo += HOUR)
			if (lo + HOUR > co->warmed_ns)
				ret = warm_range(co, lo, lo + HOUR, &made);
		for (lo = floor_to(co->warmed_ns, DAY); !ret && lo + DAY <= settled; lo += DAY)
			if (lo + DAY > co->warmed_ns)
				ret = warm_range(co, lo, lo + DAY, &made);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret) {
		log_warn("serve: cannot merge spans ahead: %s", strerror(-ret));
		return ret;
	}
	if (!stopping(co)) /* else the next start does it again */
		co->warmed_ns = settled;
	if (made)
		log_info("serve: %zu merged span%s made ahead in %.1f s", made,
			 made == 1 ? "" : "s",
			 (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
