// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's upkeep (serve_internal.h): a thread that, at start and
 * every minute, catalogs what an agent wrote into the store (index.c),
 * drops the profiles older than the retention and then
 * the oldest until the store fits its size; rows first, files after (a
 * crash in between leaves files no row names, never a row without its
 * file); then makes the merged spans that settled since (warm.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve_internal.h"
#include "util/log.h"

#define RETENTION_PERIOD_S 60

static void remove_file(void *ctx, const char *rel)
{
	struct collector *co = ctx;
	char path[4352];

	if (strstr(rel, "..")) /* the catalog names files under the store only */
		return;
	snprintf(path, sizeof(path), "%s/%s", co->store, rel);
	if (unlink(path) && errno != ENOENT)
		log_warn("serve: cannot remove %s: %s", path, strerror(errno));
}

int serve_expire(struct collector *co)
{
	struct timespec now;
	int64_t before = 0;
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	if (co->retention_s > 0)
		before = ((int64_t)now.tv_sec - co->retention_s) * 1000000000LL;
	if (!before && co->max_bytes <= 0)
		return 0;
	pthread_mutex_lock(&co->lock);
	n = catalog_expire(co->cat, before, co->max_bytes, remove_file, co);
	pthread_mutex_unlock(&co->lock);
	if (co->cache && before)
		mergecache_forget_before(co->cache, before);
	if (n > 0)
		log_info("serve: retention removed %d profile%s", n, n == 1 ? "" : "s");
	else if (n < 0)
		log_warn("serve: retention failed: %s", strerror(-n));
	return n;
}

static void *run(void *arg)
{
	struct collector *co = arg;
	struct timespec until;

	pthread_mutex_lock(&co->stop_lock);
	while (!co->stopping) {
		pthread_mutex_unlock(&co->stop_lock);
		serve_index(co);
		serve_expire(co);
		serve_warm(co);
		pthread_mutex_lock(&co->stop_lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += RETENTION_PERIOD_S;
		while (!co->stopping &&
		       pthread_cond_timedwait(&co->stop_cond, &co->stop_lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&co->stop_lock);
	return NULL;
}

int serve_retention_start(struct collector *co)
{
	pthread_condattr_t a;
	int ret;

	pthread_mutex_init(&co->stop_lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&co->stop_cond, &a);
	pthread_condattr_destroy(&a);
	co->sync_ready = true;
	ret = -pthread_create(&co->retention, NULL, run, co);
	co->retention_running = !ret;
	return ret;
}

void serve_retention_stop(struct collector *co)
{
	if (!co->sync_ready)
		return;
	pthread_mutex_lock(&co->stop_lock);
	co->stopping = true;
	pthread_cond_broadcast(&co->stop_cond);
	pthread_mutex_unlock(&co->stop_lock);
	if (co->retention_running)
		pthread_join(co->retention, NULL);
	pthread_cond_destroy(&co->stop_cond);
	pthread_mutex_destroy(&co->stop_lock);
	co->sync_ready = false;
}
