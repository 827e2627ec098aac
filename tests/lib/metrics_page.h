/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's /metrics page in unit tests: written from an agent_metrics,
 * picked apart, and checked strictly against Prometheus' text format.
 */
#ifndef EBPROF_METRICS_PAGE_H
#define EBPROF_METRICS_PAGE_H

#include "agent/metrics.h"

/* The page m writes (malloc'ed, the caller frees). */
char *metrics_page(struct agent_metrics *m);
/* The lines of text that start with prefix, joined (malloc'ed). */
char *metrics_lines_with(const char *text, const char *prefix);
/* Asserts the page is Prometheus text format: each family's HELP then
 * TYPE (counter or gauge) exactly once, before its samples, kept together;
 * label pairs key="value"; values numbers; a newline at the end. */
void metrics_check_format(const char *text);

#endif /* EBPROF_METRICS_PAGE_H */
