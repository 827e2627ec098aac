// SPDX-License-Identifier: BSD-2-Clause
/* The profile store as a sink (store.h): each profile becomes a file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

static int write_profile(struct sink *s, const struct sink_profile *r)
{
	struct store *st = (struct store *)s;
	int err = store_write(st, r, NULL, 0);

	if (err)
		snprintf(s->err, sizeof(s->err), "cannot store it under %s: %s", st->dir,
			 err == -EFBIG ? "larger than retention-size" : strerror(-err));
	return err;
}

static void describe(struct sink *s, char *buf, size_t len)
{
	struct store_stats st;

	store_get_stats((struct store *)s, &st);
	snprintf(buf, len, "store: %llu files, %.1f MiB", (unsigned long long)st.files,
		 st.bytes / 1048576.0);
}

static size_t metrics(struct sink *s, struct sink_metric *out)
{
	struct store_stats st;

	store_get_stats((struct store *)s, &st);
	out[0] = (struct sink_metric){ "ebprof_store_bytes", "gauge", "Bytes of profiles on disk.",
				       "", st.bytes };
	out[1] = (struct sink_metric){ "ebprof_store_files", "gauge", "Profiles on disk.", "",
				       st.files };
	out[2] = (struct sink_metric){
		"ebprof_store_removed_total", "counter",
		"Profiles removed by retention or to make room on a full disk.", "", st.removed
	};
	out[3] = (struct sink_metric){ "ebprof_store_write_errors_total", "counter",
				       "Failed profile writes.", "", st.write_errors };
	out[4] = (struct sink_metric){ "ebprof_store_disk_full_total", "counter",
				       "Writes that met a full disk (old profiles were removed to "
				       "make room).",
				       "", st.disk_full };
	out[5] = (struct sink_metric){
		"ebprof_store_dir_lost_total", "counter",
		"Times the profile directory was found removed while running (made again).", "",
		st.dir_lost
	};
	return 6;
}

static void close_sink(struct sink *s, double drain_s)
{
	(void)drain_s;
	store_close((struct store *)s);
}

const struct sink_ops store_sink_ops = {
	.kind = "store",
	.wants_pprof = true,
	.write = write_profile,
	.describe = describe,
	.metrics = metrics,
	.close = close_sink,
};

int store_sink_open(const struct store_opts *opts, struct sink **out)
{
	struct store *st;
	int err = store_open(opts, &st);

	if (!err)
		*out = &st->base;
	return err;
}
