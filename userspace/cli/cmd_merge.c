// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/args.h"
#include "commands.h"
#include "formats/render.h"
#include "options.h"
#include "util/log.h"
#include "profile/merge.h"
#include "store_select.h"
#include "util/timeutil.h"

const struct cli_command cli_merge = {
	.id = CLI_MERGE,
	.name = "merge",
	.synopsis = "[OPTIONS] -o OUT",
	.about = "Merge the stored profiles selected into one profile. Every sample keeps the\n"
		 "identity of its process as labels pid, comm, backend_type, database and\n"
		 "user, so\n"
		 "  go tool pprof -tagfocus backend_type=checkpointer OUT\n"
		 "still works. Unreadable profiles are skipped with a warning.\n",
	.epilog = "Exit status: 0 merged, 1 runtime failure, 2 bad input, no profile matches or\n"
		  "profiles of different sample types.\n",
	.output = CLI_OUTPUT_REQUIRED,
};

static void types_str(const struct profile *p, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->nsample_types && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s/%s", i ? ", " : "",
				      profile_string(p, p->sample_types[i].type),
				      profile_string(p, p->sample_types[i].unit));
}

/* Read, check and merge one stored profile. 0; 1 skipped (warned);
 * -EINVAL for differing sample types; other -errno (logged). */
static int merge_one(struct profile *dst, const struct store_entry *e)
{
	const char *comm = store_entry_label(e, "comm"), *bt = store_entry_label(e, "backend_type");
	const char *db = store_entry_label(e, "pg_database"),
		   *user = store_entry_label(e, "pg_user");
	struct profile *src = NULL;
	struct pf_label extra[5];
	size_t nextra = 0;
	char msg[512];
	int err;

	err = pprof_read_file(e->path, &src, msg, sizeof(msg));
	if (err == -ENOMEM) {
		log_error("%s", msg);
		return err;
	}
	if (err) {
		log_warn("skipping %s", msg);
		return 1;
	}
	if (dst->nsample_types && !profile_same_sample_types(dst, src)) {
		char a[256], b[256];

		types_str(src, a, sizeof(a));
		types_str(dst, b, sizeof(b));
		log_error("%s: sample types (%s) differ from the profiles before it (%s)", e->path,
			  a, b);
		profile_free(src);
		return -EINVAL;
	}
	extra[nextra++] = profile_label_num(dst, "pid", e->pid, NULL);
	if (comm && *comm)
		extra[nextra++] = profile_label_str(dst, "comm", comm);
	if (bt && *bt)
		extra[nextra++] = profile_label_str(dst, "backend_type", bt);
	if (db && *db)
		extra[nextra++] = profile_label_str(dst, "database", db);
	if (user && *user)
		extra[nextra++] = profile_label_str(dst, "user", user);
	err = profile_merge(dst, src, extra, nextra);
	profile_free(src);
	if (err)
		log_error("cannot merge %s: %s", e->path, strerror(-err));
	return err;
}

int cmd_merge(int argc, char **argv)
{
	struct cli_values o = { 0 };
	struct store_entry *e = NULL;
	struct profile *dst = NULL;
	size_t n = 0, i, merged = 0, skipped = 0;
	char from[48], to[48], msg[512];
	int rc = EXIT_USAGE, err;

	err = cli_parse(&cli_merge, argc, argv, &o);
	if (err) {
		rc = err > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	/* one type: the sample types of one profile */
	rc = store_select(&o, true, &e, &n);
	if (rc != EXIT_OK)
		goto out;
	dst = profile_new();
	if (!dst) {
		log_error("out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = merge_one(dst, &e[i]);
		if (err < 0) {
			rc = err == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
			goto out;
		}
		if (err > 0)
			skipped++;
		else
			merged++;
	}
	if (!merged) {
		log_error("none of the %zu profiles selected could be read", n);
		rc = EXIT_RUNTIME;
		goto out;
	}
	err = render_to_file(dst, o.format, NULL, o.output, msg, sizeof(msg));
	if (err) {
		log_error("%s", msg);
		rc = EXIT_RUNTIME;
		goto out;
	}
	store_format_time(dst->time_nanos, from, sizeof(from));
	store_format_time(dst->time_nanos + dst->duration_nanos, to, sizeof(to));
	fprintf(stderr, "ebprof: merged %zu profiles (%s to %s) into %s", merged, from, to,
		strcmp(o.output, "-") ? o.output : "stdout");
	if (skipped)
		fprintf(stderr, "; skipped %zu unreadable (see the warnings above)", skipped);
	fprintf(stderr, "\n");
	rc = EXIT_OK;
out:
	profile_free(dst);
	store_entries_free(e, n);
	cli_values_free(&o);
	return rc;
}
