// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "pgcluster.h"
#include "procevents.h"
#include "sinks/store/store.h"
#include "agent_env.h"

char *ag_empty_config(const char *dir)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/empty.conf", dir);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs("# no settings: defaults and flags only\n", f);
	fclose(f);
	return path;
}

/* Start the agent with args and wait until it samples. */
void ag_start_agent(struct ag_run *ag, char **args)
{
	char *argv[40];
	int n = 0;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "agent";
	while (*args && n < 38)
		argv[n++] = *args++;
	argv[n] = NULL;
	cr_assert_eq(tl_start_logged(&ag->p, &ag->log, argv, "sampling at", 30), 0,
		     "the agent did not start sampling");
}

void ag_start_agent_in(struct ag_run *ag, const char *cg, char **args)
{
	char *argv[44], procs[512];
	int n = 0;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = "echo $$ > \"$0\" && exec \"$@\"";
	argv[n++] = procs;
	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "agent";
	while (*args && n < 42)
		argv[n++] = *args++;
	argv[n] = NULL;
	cr_assert_eq(tl_start_logged(&ag->p, &ag->log, argv, "sampling at", 30), 0,
		     "the agent did not start sampling in %s", cg);
}

/* SIGTERM; the exit status. The log stays readable. */
int ag_stop_agent(struct ag_run *ag)
{
	return tl_finish_logged(&ag->p, &ag->log, SIGTERM, 60);
}

/*
 * The agent's interval lines ("interval from T (N s): P processes, S
 * samples, ...; W profiles written, F failed"): the sum of S, and of W
 * and F when asked.
 */
int64_t ag_logged_samples(const char *log, int64_t *written, int64_t *failed)
{
	int64_t samples = 0, w = 0, f = 0;

	for (const char *s = log; (s = strstr(s, "interval from ")); s++) {
		const char *c = strstr(s, "): "), *nl = strchr(s, '\n'), *wr;
		unsigned long long procs, n, pw, pf;

		if (!c || (nl && c > nl) ||
		    sscanf(c, "): %llu processes, %llu samples", &procs, &n) != 2)
			continue;
		samples += (int64_t)n;
		wr = strstr(c, "; ");
		while (wr && (!nl || wr < nl) &&
		       sscanf(wr, "; %llu profiles written, %llu failed", &pw, &pf) != 2)
			wr = strstr(wr + 1, "; ");
		if (wr && (!nl || wr < nl)) {
			w += (int64_t)pw;
			f += (int64_t)pf;
		}
	}
	if (written)
		*written = w;
	if (failed)
		*failed = f;
	return samples;
}

void ag_read_store(const char *dir, struct ag_stored *st)
{
	struct store_query q = { 0 };

	cr_assert_eq(store_list(dir, &q, &st->ents, &st->n), 0, "cannot list %s", dir);
	st->gp = calloc(st->n + 1, sizeof(*st->gp));
	cr_assert_not_null(st->gp);
	for (size_t i = 0; i < st->n; i++) {
		st->gp[i] = gp_read(st->ents[i].path);
		cr_assert_not_null(st->gp[i], "go tool pprof cannot read %s", st->ents[i].path);
	}
}

void ag_free_store(struct ag_stored *st)
{
	for (size_t i = 0; i < st->n; i++)
		gp_free(st->gp[i]);
	free(st->gp);
	store_entries_free(st->ents, st->n);
}

/*
 * A per-process profile holds that process only: every sample has the
 * numeric pid label of its file's name, and tid/thread_name; its
 * comments repeat its labels. Returns its samples.
 */
/* The distinct pid labels of p's samples (-1 when one has none). */
static int64_t distinct_pids(const struct gp_profile *p)
{
	int64_t n = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t pid = gp_label_num(&p->samples[i], "pid");
		size_t j;

		if (pid <= 0)
			return -1;
		for (j = 0; j < i && gp_label_num(&p->samples[j], "pid") != pid; j++)
			;
		n += j == i;
	}
	return n;
}

int64_t ag_check_process_profile(const struct store_entry *e, const struct gp_profile *p)
{
	const char *group = store_entry_label(e, "group"), *nprocs;
	char want[64];
	size_t bad = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t pid = gp_label_num(s, "pid");

		bad += (e->pid ? pid != (int64_t)e->pid : pid <= 0) ||
		       gp_label_num(s, "tid") <= 0 || !gp_label(s, "thread_name");
	}
	cr_expect_eq(bad, 0, "%s: %zu samples not labelled pid %u (or without tid/thread_name)",
		     e->path, bad, e->pid);
	if (e->pid) {
		cr_expect_null(group, "%s: a process's profile labelled group=%s", e->path, group);
		snprintf(want, sizeof(want), "pid=%u", e->pid);
	} else {
		nprocs = store_entry_label(e, "processes");
		cr_expect_str_eq(group ? group : "", "short-lived", "%s: pid 0, not a group",
				 e->path);
		cr_expect_eq(nprocs ? strtoll(nprocs, NULL, 10) : -1, distinct_pids(p),
			     "%s: processes=%s, not its samples' distinct pids", e->path,
			     nprocs ? nprocs : "(none)");
		snprintf(want, sizeof(want), "group=short-lived");
	}
	cr_expect_not_null(gp_comment(p, want), "%s: no comment %s", e->path, want);
	/* the period is in its weighed value: cpu/nanoseconds, faults/bytes */
	if (p->period_type && p->period_unit) {
		snprintf(want, sizeof(want), "%s/%s", p->period_type, p->period_unit);
		cr_expect_eq(gp_type(p, want), 1, "%s: period type %s", e->path, want);
	} else {
		cr_expect_fail("%s: no period type", e->path);
	}
	return gp_total(p, -1, 0);
}

int ag_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A metric without labels from the agent's /metrics, or -1. */
int64_t ag_metric(const char *listen, const char *name)
{
	char url[128], want[128], *s;
	struct httpc_resp r;
	int64_t v = -1;

	snprintf(url, sizeof(url), "http://%s/metrics", listen);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s: %s", url, r.error);
	cr_assert_eq(r.status, 200);
	snprintf(want, sizeof(want), "\n%s ", name);
	s = strstr(r.body, want);
	if (s)
		v = strtoll(s + strlen(want), NULL, 10);
	httpc_free(&r);
	return v;
}
