// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's /metrics page (agent/metrics.c), what others report into
 * it: the snapshot of its sinks (each family's HELP and TYPE exactly once
 * and its samples together, even when two sinks report the same family,
 * labels as given, no labels without braces), too many figures cut, the
 * symbolizer's figures by binary, and the memory budget and what it
 * degraded.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/metrics.h"
#include "metrics_page.h"

struct fake {
	struct sink base;
	struct sink_metric m[SINK_MAX_METRICS];
	size_t n;
};

static size_t fake_metrics(struct sink *s, struct sink_metric *out)
{
	struct fake *f = (struct fake *)s;

	memcpy(out, f->m, f->n * sizeof(*out));
	return f->n;
}

static void fake_close(struct sink *s, double drain_s)
{
	(void)s;
	(void)drain_s;
}

static const struct sink_ops fake_ops = { .kind = "fake",
					  .metrics = fake_metrics,
					  .close = fake_close };

static struct sink_metric M(const char *name, const char *type, const char *help,
			    const char *labels, uint64_t v) {
	struct sink_metric m = { name, type, help, "", v };

	snprintf(m.labels, sizeof(m.labels), "%s", labels);
	return m;
}

#define REMOTE "ebprof_remote_profiles", "gauge", "Remote push, by remote and state."

static const char sink_page[] = "# HELP ebprof_store_bytes Bytes of profiles on disk.\n"
				"# TYPE ebprof_store_bytes gauge\n"
				"ebprof_store_bytes 1234\n"
				"# HELP ebprof_store_files Profiles on disk.\n"
				"# TYPE ebprof_store_files gauge\n"
				"ebprof_store_files 3\n"
				"# HELP ebprof_remote_profiles Remote push, by remote and state.\n"
				"# TYPE ebprof_remote_profiles gauge\n"
				"ebprof_remote_profiles{remote=\"profefe\",state=\"pushed\"} 10\n"
				"ebprof_remote_profiles{remote=\"profefe\",state=\"queued\"} 1\n"
				"ebprof_remote_profiles{remote=\"pyroscope\",state=\"pushed\"} 20\n"
				"ebprof_remote_profiles{remote=\"pyroscope\",state=\"queued\"} 2\n"
				"# HELP ebprof_x_total X.\n"
				"# TYPE ebprof_x_total counter\n"
				"ebprof_x_total 5\n"
				"# HELP ebprof_symbolizer_cache_bytes ";

/* Two remotes report the same family: one HELP, one TYPE, every sample
 * under it, together, in the order the sinks gave them; a family of a
 * later sink after it. */
Test(metrics, families_of_several_sinks_declared_once)
{
	struct agent_metrics m;
	struct fake store = { .base.ops = &fake_ops,
			      .m = { M("ebprof_store_bytes", "gauge", "Bytes of profiles on disk.",
				       "", 1234),
				     M("ebprof_store_files", "gauge", "Profiles on disk.", "", 3) },
			      .n = 2 },
		    profefe = { .base.ops = &fake_ops,
				.m = { M(REMOTE, "remote=\"profefe\",state=\"pushed\"", 10),
				       M(REMOTE, "remote=\"profefe\",state=\"queued\"", 1),
				       M("ebprof_x_total", "counter", "X.", "", 5) },
				.n = 3 },
		    pyroscope = { .base.ops = &fake_ops,
				  .m = { M(REMOTE, "remote=\"pyroscope\",state=\"pushed\"", 20),
					 M(REMOTE, "remote=\"pyroscope\",state=\"queued\"", 2) },
				  .n = 2 };
	struct sink *sinks[] = { &store.base, &profefe.base, &pyroscope.base };
	char *text, *start;

	agent_metrics_init(&m);
	agent_metrics_snapshot(&m, 0, sinks, 3, NULL, 0);
	text = metrics_page(&m);
	metrics_check_format(text);
	start = strstr(text, "# HELP ebprof_store_bytes");
	cr_assert_not_null(start, "%s", text);
	cr_expect(!strncmp(start, sink_page, strlen(sink_page)), "got:\n%s\nwant:\n%s", start,
		  sink_page);
	free(text);

	/* The snapshot is a snapshot: a later one replaces it, sinks gone. */
	profefe.m[0].value = 11;
	agent_metrics_snapshot(&m, 0, sinks + 1, 1, NULL, 0);
	text = metrics_page(&m);
	metrics_check_format(text);
	cr_expect_null(strstr(text, "ebprof_store_bytes"), "%s", text);
	cr_expect_null(strstr(text, "pyroscope"), "%s", text);
	cr_expect(strstr(text, "ebprof_remote_profiles{remote=\"profefe\",state=\"pushed\"} 11\n"),
		  "%s", text);
	free(text);
	agent_metrics_destroy(&m);
}

/* More figures than the snapshot holds: cut, the page still valid. */
Test(metrics, too_many_figures_are_cut)
{
	struct agent_metrics m;
	struct fake f[6];
	struct sink *sinks[6];
	char *text, *samples;
	size_t n = 0;

	for (int i = 0; i < 6; i++) {
		f[i] = (struct fake){ .base.ops = &fake_ops, .n = SINK_MAX_METRICS };
		for (int k = 0; k < SINK_MAX_METRICS; k++) {
			char labels[64];

			snprintf(labels, sizeof(labels), "sink=\"%d\",k=\"%d\"", i, k);
			f[i].m[k] =
				M("ebprof_many", "gauge", "Many.", labels, (uint64_t)(i * 100 + k));
		}
		sinks[i] = &f[i].base;
	}
	agent_metrics_init(&m);
	agent_metrics_snapshot(&m, 0, sinks, 6, NULL, 0);
	cr_expect_eq(m.nsinks, AGENT_MAX_SINK_METRICS);
	text = metrics_page(&m);
	metrics_check_format(text);
	samples = metrics_lines_with(text, "ebprof_many{");
	for (const char *p = samples; (p = strchr(p, '\n')); p++)
		n++;
	cr_expect_eq(n, AGENT_MAX_SINK_METRICS);
	free(samples);
	free(text);
	agent_metrics_destroy(&m);
}

/* The symbolizer's figures come from the symbolizer given. */
Test(metrics, symbolizer_figures)
{
	struct agent_metrics m;
	struct symbolizer *sym;
	struct sym_binary b = { .path = "/proc/self/exe" };
	struct sym_elf *e;
	struct sym_stats st;
	char *text, want[128];

	cr_assert_eq(sym_new(NULL, &sym), 0);
	cr_assert_eq(sym_elf_get(sym, &b, &e), 0);
	sym_elf_put(sym, e);
	sym_get_stats(sym, &st);
	cr_assert_eq(st.binaries_cached, 1);
	agent_metrics_init(&m);
	agent_metrics_snapshot(&m, 0, NULL, 0, sym, 0);
	text = metrics_page(&m);
	metrics_check_format(text);
	snprintf(want, sizeof(want), "\nebprof_symbolizer_cache_bytes %llu\n",
		 (unsigned long long)st.cache_bytes);
	cr_expect_gt(st.cache_bytes, 0);
	cr_expect(strstr(text, want) != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_symbolizer_binaries 1\n") != NULL, "%s", text);
	free(text);
	agent_metrics_destroy(&m);
	sym_free(sym);
}

Test(metrics, symbolization_by_binary)
{
	struct session_interval iv = { 0 };
	struct agent_metrics m;
	struct symreport r = { 0 };
	char *text, *lines;
	size_t a, b;

	cr_assert_eq(symreport_row(&r, "/usr/lib/postgresql/15/bin/postgres", "dynsym", &a), 0);
	cr_assert_eq(symreport_row(&r, "/tmp/evil\"\\\nna\xff\x01me\xc3\xa9", "none", &b), 0);
	r.rows[a] = (struct symreport_row){ r.rows[a].binary, "dynsym", 100, 78, 40, 30 };
	r.rows[b].samples = 5;
	iv.symbols = &r;
	agent_metrics_init(&m);
	agent_metrics_interval(&m, &iv);
	agent_metrics_interval(&m, &iv);
	text = metrics_page(&m);
	metrics_check_format(text);
	lines = metrics_lines_with(text, "ebprof_symbol_samples_resolved_total{");
	cr_expect_str_eq(lines,
			 "ebprof_symbol_samples_resolved_total{binary=\"/usr/lib/postgresql/"
			 "15/bin/postgres\",source=\"dynsym\"} 156\n"
			 "ebprof_symbol_samples_resolved_total{binary=\"/tmp/evil\\\"\\\\\\nna??"
			 "me\xc3\xa9\",source=\"none\"} 0\n");
	free(lines);
	lines = metrics_lines_with(text, "ebprof_symbol_leaf_samples_total{");
	cr_expect(strstr(lines, "source=\"dynsym\"} 80\n"), "%s", lines);
	free(lines);
	free(text);
	agent_metrics_destroy(&m);
	symreport_clear(&r);
}

Test(metrics, the_memory_budget_and_what_it_degraded)
{
	struct agent_metrics m;
	struct membudget b = { .budget = 20 << 20 };
	char *text;

	agent_metrics_init(&m);
	membudget_decide(&b, 30 << 20);
	membudget_after(&b, 24 << 20);
	b.peak = 31 << 20;
	agent_metrics_budget(&m, &b);
	text = metrics_page(&m);
	cr_expect(strstr(text, "\nebprof_memory_budget_bytes 20971520\n"), "%s", text);
	cr_expect(strstr(text, "\nebprof_rss_bytes 25165824\n"));
	cr_expect(strstr(text, "\nebprof_rss_peak_bytes 32505856\n"));
	cr_expect(strstr(text, "\nebprof_degraded{what=\"symbol_cache\"} 1\n"));
	cr_expect(strstr(text, "\nebprof_degraded_total{what=\"symbol_cache\"} 1\n"));
	cr_expect(strstr(text, "\nebprof_memory_over_budget 1\n"));
	metrics_check_format(text);
	free(text);
	agent_metrics_destroy(&m);
}
