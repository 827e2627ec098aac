// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/args.h"
#include "commands.h"
#include "options.h"
#include "util/log.h"
#include "store_select.h"
#include "util/timeutil.h"

const struct cli_command cli_ls = {
	.id = CLI_LS,
	.name = "ls",
	.synopsis = "[OPTIONS]",
	.about = "List the profiles the agent stored, oldest first, one line each:\n"
		 "start (local time), duration, pid, comm, backend type, size, path.\n",
	.epilog = "Exit status: 0 profiles listed, 1 runtime failure, 2 bad input or no profile\n"
		  "matches.\n",
};

static void human_size(int64_t b, char *buf, size_t len)
{
	if (b < 1024)
		snprintf(buf, len, "%lldB", (long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%.1fK", b / 1024.0);
	else if (b < 1024LL * 1024 * 1024)
		snprintf(buf, len, "%.1fM", b / (1024.0 * 1024));
	else
		snprintf(buf, len, "%.1fG", b / (1024.0 * 1024 * 1024));
}

static void print_text(const struct store_entry *e)
{
	char start[48], dur[32], size[32];
	const char *comm = store_entry_label(e, "comm"), *bt = store_entry_label(e, "backend_type");
	int64_t d = e->end_ns - e->start_ns;

	store_format_time(e->start_ns, start, sizeof(start));
	if (d <= 0)
		snprintf(dur, sizeof(dur), "?");
	else if (d % 1000000000LL == 0)
		snprintf(dur, sizeof(dur), "%llds", (long long)(d / 1000000000LL));
	else
		snprintf(dur, sizeof(dur), "%.1fs", d / 1e9);
	human_size(e->size, size, sizeof(size));
	printf("%-25s %6s %8u  %-15s %-22s %7s  %s\n", start, dur, e->pid,
	       comm && *comm ? comm : "-", bt && *bt ? bt : "-", size, e->path);
}

static int print_json(const struct store_entry *e)
{
	json_t *o = json_object(), *labels = json_object();
	char start[48], *line;
	int err = !o || !labels;

	store_format_time(e->start_ns, start, sizeof(start));
	for (size_t i = 0; !err && i < e->nlabels; i++)
		err = json_object_set_new(labels, e->labels[i].key,
					  json_string(e->labels[i].value));
	if (!err)
		err = json_object_set_new(o, "start", json_string(start)) ||
		      json_object_set_new(o, "start_ns", json_integer(e->start_ns)) ||
		      json_object_set_new(o, "end_ns", json_integer(e->end_ns)) ||
		      json_object_set_new(o, "pid", json_integer(e->pid)) ||
		      json_object_set_new(o, "size", json_integer(e->size)) ||
		      json_object_set_new(o, "path", json_string(e->path)) ||
		      json_object_set(o, "labels", labels);
	line = err ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	json_decref(labels);
	if (!line)
		return -ENOMEM;
	printf("%s\n", line);
	free(line);
	return 0;
}

int cmd_ls(int argc, char **argv)
{
	struct cli_values o = { 0 };
	struct store_entry *e = NULL;
	size_t n = 0, i;
	int rc = EXIT_USAGE, err;

	err = cli_parse(&cli_ls, argc, argv, &o);
	if (err) {
		rc = err > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	rc = store_select(&o, false, &e, &n);
	if (rc != EXIT_OK)
		goto out;
	for (i = 0; i < n; i++) {
		if (!o.json)
			print_text(&e[i]);
		else if (print_json(&e[i]))
			rc = EXIT_RUNTIME;
	}
	if (fflush(stdout) || ferror(stdout)) {
		log_error("cannot write the list: %s", strerror(errno));
		rc = EXIT_RUNTIME;
	}
out:
	store_entries_free(e, n);
	cli_values_free(&o);
	return rc;
}
