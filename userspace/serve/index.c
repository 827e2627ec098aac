// SPDX-License-Identifier: BSD-2-Clause
/*
 * Profiles the agent wrote into the collector's store directory
 * (serve_internal.h): `ebprof serve --store DIR` over an agent's profile
 * directory (sinks/store/store.h layout, DIR/SERVICE/YYYY-MM-DD/...)
 * catalogs its files where they are, with the labels of the agent's index;
 * rows of files the agent's retention removed are dropped. Each row's id
 * is a hash of its path, so a file is cataloged once however often the
 * directory is scanned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/pprof.h"
#include "serve_internal.h"
#include "sinks/store/store.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/profile_types.h"

#define OWN_PREFIX "profiles/" /* what the collector stores itself */

/* Stable across versions (ids are stored): FNV-1a, twice seeded. */
static void path_id(const char *rel, char id[CATALOG_ID_LEN + 1])
{
	uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;

	for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
		a = (a ^ *p) * 0x100000001b3ULL;
		b = (b ^ *p) * 0x100000001b3ULL;
	}
	snprintf(id, CATALOG_ID_LEN + 1, "%016llx%016llx", (unsigned long long)a,
		 (unsigned long long)b);
}

/* The profile's totals (serve_totals()) into row; 0 when it cannot be
 * read (it is cataloged all the same: a merge says what is wrong). */
static void totals_of(const char *path, struct catalog_row *row)
{
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len;

	if (!read_file_max(path, COLLECTOR_MAX_BODY, &buf, &len) && !pprof_decode(buf, len, &p))
		serve_totals(p, &row->value, &row->idle);
	free(buf);
	profile_free(p);
}

static int add_entry(struct collector *co, const struct store_entry *e, const char *rel)
{
	struct catalog_label labels[CATALOG_MAX_LABELS];
	const char *service = store_entry_label(e, "service"), *type = store_entry_label(e, "type");
	struct catalog_row row = { 0 };
	size_t n = 0;
	int ret;

	path_id(rel, row.id);
	pthread_mutex_lock(&co->lock);
	ret = catalog_has(co->cat, row.id);
	pthread_mutex_unlock(&co->lock);
	if (ret)
		return ret < 0 ? ret : 0;
	for (size_t i = 0; i < e->nlabels && n < CATALOG_MAX_LABELS; i++)
		if (strcmp(e->labels[i].key, "service")) {
			labels[n].key = (char *)e->labels[i].key;
			labels[n++].value = (char *)e->labels[i].value;
		}
	row.service = (char *)(service && *service ? service : "default");
	/* the agent's files: profefe's name for their type, as pushed */
	if (ptype_by_name(type))
		type = ptype_by_name(type)->profefe;
	else if (type && *type && !serve_valid_type(type))
		type = "other";
	row.type = (char *)(type && *type ? type : "cpu");
	row.created_ns = e->start_ns;
	row.path = (char *)rel;
	row.size = e->size;
	totals_of(e->path, &row);
	row.labels = labels;
	row.nlabels = n;
	pthread_mutex_lock(&co->lock);
	ret = catalog_add(co->cat, &row);
	pthread_mutex_unlock(&co->lock);
	return ret == -EEXIST ? 0 : ret < 0 ? ret : 1;
}

static bool vanished(void *ctx, const char *rel)
{
	struct collector *co = ctx;
	char path[4352];
	struct stat st;

	if (!strncmp(rel, OWN_PREFIX, strlen(OWN_PREFIX)))
		return false; /* the collector's own: removed by its retention */
	snprintf(path, sizeof(path), "%s/%s", co->store, rel);
	return stat(path, &st) && errno == ENOENT;
}

int serve_index(struct collector *co)
{
	struct store_query q = { 0 };
	struct store_entry *ents = NULL;
	size_t n = 0, plen = strlen(co->store);
	int ret, added = 0, gone;

	ret = store_list(co->store, &q, &ents, &n);
	if (ret) {
		log_warn("serve: cannot scan %s for agent profiles: %s", co->store, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < n && ret >= 0; i++) {
		const char *rel = ents[i].path + plen;

		if (strncmp(ents[i].path, co->store, plen) || *rel != '/')
			continue;
		ret = add_entry(co, &ents[i], rel + 1);
		added += ret > 0;
	}
	store_entries_free(ents, n);
	pthread_mutex_lock(&co->lock);
	gone = catalog_prune(co->cat, vanished, co);
	pthread_mutex_unlock(&co->lock);
	if (added || gone > 0)
		log_info("serve: %d agent profile%s cataloged, %d gone", added,
			 added == 1 ? "" : "s", gone > 0 ? gone : 0);
	return ret < 0 ? ret : added;
}
