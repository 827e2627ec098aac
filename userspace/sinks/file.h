/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A file as a sink: each profile written to one path in one format
 * (formats/render.h), atomically ("-" = stdout). Made for sessions that
 * finish one profile (ebprof record); a second one replaces the first.
 */
#ifndef EBPROF_FILE_SINK_H
#define EBPROF_FILE_SINK_H

#include "formats/render.h"
#include "sink.h"

/* path and the strings of opts are copied. 0 or -ENOMEM. */
int file_sink_open(const char *path, enum render_format format, const struct render_opts *opts,
		   struct sink **out);

#endif /* EBPROF_FILE_SINK_H */
