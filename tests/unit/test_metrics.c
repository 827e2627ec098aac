// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's /metrics page (agent/metrics.c), Prometheus text format: the
 * exact page of a fresh agent, totals summed over intervals, the snapshot
 * of its sinks (each family's HELP and TYPE exactly once and its samples
 * together, even when two sinks report the same family, labels as given,
 * no labels without braces), the symbolizer's figures, and the page
 * checked line by line against the format.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/metrics.h"

static char *page(struct agent_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(agent_metrics_write(f, m), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

/* The lines of text that start with prefix, joined. */
static char *lines_with(const char *text, const char *prefix)
{
	char *out = calloc(1, strlen(text) + 1);
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (!strncmp(p, prefix, strlen(prefix)))
			strncat(out, p, n);
		p += n;
	}
	return out;
}

/*
 * Prometheus text format, strictly: "# HELP name text" then "# TYPE name
 * counter|gauge" for each family, exactly once, before its samples; every
 * sample "name[{labels}] value" of the family last declared (samples of a
 * family together); label pairs key="value"; values numbers.
 */
static void check_format(const char *text)
{
	char fam[128] = "", seen[96][128];
	size_t nseen = 0, lineno = 0;
	const char *p = text;

	cr_assert(*text && text[strlen(text) - 1] == '\n', "the page must end with a newline");
	while (*p) {
		const char *nl = strchr(p, '\n');
		char line[512], name[128], type[32];
		size_t n = (size_t)(nl - p);

		lineno++;
		cr_assert_lt(n, sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (!strncmp(line, "# HELP ", 7)) {
			cr_assert_eq(sscanf(line, "# HELP %127s", name), 1, "line %zu: %s", lineno,
				     line);
			for (size_t i = 0; i < nseen; i++)
				cr_assert_str_neq(seen[i], name,
						  "line %zu: family %s declared twice", lineno,
						  name);
			cr_assert_lt(nseen, 96);
			strcpy(seen[nseen++], name);
			cr_assert_gt(strlen(line), 8 + strlen(name), "line %zu: no help text",
				     lineno);
			/* TYPE follows */
			nl = strchr(p, '\n');
			cr_assert_not_null(nl);
			cr_assert_eq(sscanf(p, "# TYPE %127s %31s", fam, type), 2, "after line %zu",
				     lineno);
			cr_assert_str_eq(fam, name, "HELP and TYPE of different families");
			cr_assert(!strcmp(type, "counter") || !strcmp(type, "gauge"), "type %s",
				  type);
			p = nl + 1;
			lineno++;
			continue;
		}
		cr_assert_neq(line[0], '#', "line %zu: a comment that is no HELP: %s", lineno,
			      line);
		{
			size_t k = strcspn(line, "{ ");
			char *sp;
			double v;

			cr_assert(fam[0], "line %zu: a sample before any TYPE", lineno);
			cr_assert(k == strlen(fam) && !strncmp(line, fam, k),
				  "line %zu: sample %s outside its family %s", lineno, line, fam);
			if (line[k] == '{') {
				char *close = strchr(line, '}');

				cr_assert_not_null(close, "line %zu: %s", lineno, line);
				cr_assert(strstr(line + k, "=\""), "line %zu: labels %s", lineno,
					  line);
				sp = close + 1;
			} else {
				sp = line + k;
			}
			cr_assert_eq(*sp, ' ', "line %zu: %s", lineno, line);
			cr_assert_eq(sscanf(sp, " %lf", &v), 1, "line %zu: value of %s", lineno,
				     line);
		}
	}
}

Test(metrics, a_fresh_agent)
{
	struct agent_metrics m;
	char *text, want[16384];
	size_t off = 0;

	agent_metrics_init(&m);
	text = page(&m);
	off += (size_t)snprintf(
		want + off, sizeof(want) - off,
		"# HELP ebprof_intervals_total Intervals flushed.\n"
		"# TYPE ebprof_intervals_total counter\n"
		"ebprof_intervals_total 0\n"
		"# HELP ebprof_samples_total Samples of target processes.\n"
		"# TYPE ebprof_samples_total counter\n"
		"ebprof_samples_total 0\n"
		"# HELP ebprof_profiles_written_total Per-process profiles handed to the sinks.\n"
		"# TYPE ebprof_profiles_written_total counter\n"
		"ebprof_profiles_written_total 0\n"
		"# HELP ebprof_profile_errors_total Profiles that could not be built or stored.\n"
		"# TYPE ebprof_profile_errors_total counter\n"
		"ebprof_profile_errors_total 0\n"
		"# HELP ebprof_processes_tracked Processes the agent knows now.\n"
		"# TYPE ebprof_processes_tracked gauge\n"
		"ebprof_processes_tracked 0\n"
		"# HELP ebprof_last_flush_timestamp_seconds End of the last interval.\n"
		"# TYPE ebprof_last_flush_timestamp_seconds gauge\n"
		"ebprof_last_flush_timestamp_seconds 0.000\n"
		"# HELP ebprof_lost_total Samples, stacks or events lost, by cause.\n"
		"# TYPE ebprof_lost_total counter\n");
	for (int i = STAT_SAMPLES + 1; i < STAT_LOSS_END; i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off,
					"ebprof_lost_total{cause=\"%s\"} 0\n",
					sampler_stat_name((enum ebprof_stat)i));
	snprintf(
		want + off, sizeof(want) - off,
		"# HELP ebprof_symbolizer_cache_bytes Estimated size of the binary cache.\n"
		"# TYPE ebprof_symbolizer_cache_bytes gauge\n"
		"ebprof_symbolizer_cache_bytes 0\n"
		"# HELP ebprof_symbolizer_binaries Binaries in the symbolizer cache.\n"
		"# TYPE ebprof_symbolizer_binaries gauge\n"
		"ebprof_symbolizer_binaries 0\n"
		"# HELP ebprof_symbol_samples_total Samples with a frame in the binary, by "
		"where its names come from.\n"
		"# TYPE ebprof_symbol_samples_total counter\n"
		"# HELP ebprof_symbol_samples_resolved_total ... of which the frame resolved to "
		"a function.\n"
		"# TYPE ebprof_symbol_samples_resolved_total counter\n"
		"# HELP ebprof_symbol_leaf_samples_total Samples whose user leaf is in the "
		"binary.\n"
		"# TYPE ebprof_symbol_leaf_samples_total counter\n"
		"# HELP ebprof_symbol_leaf_samples_resolved_total ... of which the leaf resolved "
		"to a function.\n"
		"# TYPE ebprof_symbol_leaf_samples_resolved_total counter\n"
		"# HELP ebprof_debuginfod_requests_total Requests to debuginfod servers.\n"
		"# TYPE ebprof_debuginfod_requests_total counter\n"
		"ebprof_debuginfod_requests_total 0\n"
		"# HELP ebprof_debuginfod_found_total Debug files downloaded from debuginfod.\n"
		"# TYPE ebprof_debuginfod_found_total counter\n"
		"ebprof_debuginfod_found_total 0\n"
		"# HELP ebprof_debuginfod_missing_total Build-ids no debuginfod server has.\n"
		"# TYPE ebprof_debuginfod_missing_total counter\n"
		"ebprof_debuginfod_missing_total 0\n"
		"# HELP ebprof_debuginfod_errors_total Failed debuginfod lookups (network, server "
		"error, wrong file).\n"
		"# TYPE ebprof_debuginfod_errors_total counter\n"
		"ebprof_debuginfod_errors_total 0\n"
		"# HELP ebprof_debuginfod_queued debuginfod lookups waiting or in flight.\n"
		"# TYPE ebprof_debuginfod_queued gauge\n"
		"ebprof_debuginfod_queued 0\n"
		"# HELP ebprof_debuginfod_cache_bytes Size of the debuginfod cache.\n"
		"# TYPE ebprof_debuginfod_cache_bytes gauge\n"
		"ebprof_debuginfod_cache_bytes 0\n"
		"# HELP ebprof_statement_texts_read_total Statement texts the BPF program read "
		"from backends.\n"
		"# TYPE ebprof_statement_texts_read_total counter\n"
		"ebprof_statement_texts_read_total 0\n"
		"# HELP ebprof_statement_texts_sent_total Statement texts that changed and were "
		"sent to be normalized.\n"
		"# TYPE ebprof_statement_texts_sent_total counter\n"
		"ebprof_statement_texts_sent_total 0\n"
		"# HELP ebprof_statement_normalizations_total Statement texts normalized "
		"(libpg_query).\n"
		"# TYPE ebprof_statement_normalizations_total counter\n"
		"ebprof_statement_normalizations_total 0\n"
		"# HELP ebprof_statement_shape_hits_total Statement texts whose normalization was "
		"cached.\n"
		"# TYPE ebprof_statement_shape_hits_total counter\n"
		"ebprof_statement_shape_hits_total 0\n"
		"# HELP ebprof_statement_normalize_seconds_total Time spent normalizing "
		"statements.\n"
		"# TYPE ebprof_statement_normalize_seconds_total counter\n"
		"ebprof_statement_normalize_seconds_total 0.000000\n"
		"# HELP ebprof_statements_known Normalized statements kept now.\n"
		"# TYPE ebprof_statements_known gauge\n"
		"ebprof_statements_known 0\n"
		"# HELP ebprof_unwind_truncated_samples_total Samples whose user stack was cut "
		"short, by why (its last frame says so).\n"
		"# TYPE ebprof_unwind_truncated_samples_total counter\n"
		"ebprof_unwind_truncated_samples_total{reason=\"no unwind table\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"read fault\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"depth limit\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"unsupported rule\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"bad frame\"} 0\n"
		"# HELP ebprof_unwind_fp_samples_total Samples with a user frame found by frame "
		"pointer (no unwind table).\n"
		"# TYPE ebprof_unwind_fp_samples_total counter\n"
		"ebprof_unwind_fp_samples_total 0\n"
		"# HELP ebprof_unwind_tables Unwind tables loaded in the kernel.\n"
		"# TYPE ebprof_unwind_tables gauge\n"
		"ebprof_unwind_tables 0\n"
		"# HELP ebprof_unwind_table_bytes Kernel memory of the unwind tables.\n"
		"# TYPE ebprof_unwind_table_bytes gauge\n"
		"ebprof_unwind_table_bytes 0\n"
		"# HELP ebprof_unwind_table_builds_total Unwind tables compiled from CFI (not "
		"found in the disk cache).\n"
		"# TYPE ebprof_unwind_table_builds_total counter\n"
		"ebprof_unwind_table_builds_total 0\n"
		"# HELP ebprof_unwind_table_build_seconds_total Time spent compiling unwind "
		"tables.\n"
		"# TYPE ebprof_unwind_table_build_seconds_total counter\n"
		"ebprof_unwind_table_build_seconds_total 0.000000\n"
		"# HELP ebprof_unwind_table_cache_hits_total Unwind tables read from the disk "
		"cache.\n"
		"# TYPE ebprof_unwind_table_cache_hits_total counter\n"
		"ebprof_unwind_table_cache_hits_total 0\n"
		"# HELP ebprof_unwind_over_budget_total Binaries unwound by frame pointers: "
		"their table was over the memory budget.\n"
		"# TYPE ebprof_unwind_over_budget_total counter\n"
		"ebprof_unwind_over_budget_total 0\n"
		"# HELP ebprof_unwind_tables_out_of_budget Binaries mapped now whose table is "
		"out of the memory budget (frame pointers).\n"
		"# TYPE ebprof_unwind_tables_out_of_budget gauge\n"
		"ebprof_unwind_tables_out_of_budget 0\n"
		"# HELP ebprof_unwind_table_evictions_total Tables sent back to frame pointers "
		"for binaries sampled more.\n"
		"# TYPE ebprof_unwind_table_evictions_total counter\n"
		"ebprof_unwind_table_evictions_total 0\n"
		"# HELP ebprof_unwind_table_promotions_total Tables out of the budget loaded "
		"again: sampled more than tables loaded.\n"
		"# TYPE ebprof_unwind_table_promotions_total counter\n"
		"ebprof_unwind_table_promotions_total 0\n"
		"# HELP ebprof_unwind_tables_freed_total Tables unloaded: no process maps their "
		"binary any more.\n"
		"# TYPE ebprof_unwind_tables_freed_total counter\n"
		"ebprof_unwind_tables_freed_total 0\n"
		"# HELP ebprof_unwind_no_table_total Binaries without usable CFI, or that could "
		"not be opened.\n"
		"# TYPE ebprof_unwind_no_table_total counter\n"
		"ebprof_unwind_no_table_total 0\n"
		"# HELP ebprof_unwind_stacks Distinct unwound user stacks held.\n"
		"# TYPE ebprof_unwind_stacks gauge\n"
		"ebprof_unwind_stacks 0\n"
		"# HELP ebprof_unwind_stack_bytes Memory of the unwound user stacks held.\n"
		"# TYPE ebprof_unwind_stack_bytes gauge\n"
		"ebprof_unwind_stack_bytes 0\n"
		"# HELP ebprof_offcpu_seconds_total Time target threads spent off the CPU, in "
		"off-CPU profiles (scaled by the ratio taken).\n"
		"# TYPE ebprof_offcpu_seconds_total counter\n"
		"ebprof_offcpu_seconds_total 0.000000\n"
		"# HELP ebprof_offcpu_short_waits_total Waits shorter than offcpu-min, not "
		"counted.\n"
		"# TYPE ebprof_offcpu_short_waits_total counter\n"
		"ebprof_offcpu_short_waits_total 0\n"
		"# HELP ebprof_offcpu_switches_skipped_total Switches not taken (offcpu-ratio).\n"
		"# TYPE ebprof_offcpu_switches_skipped_total counter\n"
		"ebprof_offcpu_switches_skipped_total 0\n"
		"# HELP ebprof_offcpu_waits_untaken_total Waits shorter than offcpu-period left "
		"out by chance (their time is carried by those taken).\n"
		"# TYPE ebprof_offcpu_waits_untaken_total counter\n"
		"ebprof_offcpu_waits_untaken_total 0\n"
		"# HELP ebprof_fault_samples_total Page-fault samples of target processes (one "
		"every faults-period faults).\n"
		"# TYPE ebprof_fault_samples_total counter\n"
		"ebprof_fault_samples_total 0\n"
		"# HELP ebprof_fault_bytes_total Page faults in the profiles, in bytes (samples x "
		"faults-period x page size).\n"
		"# TYPE ebprof_fault_bytes_total counter\n"
		"ebprof_fault_bytes_total 0\n"
		"# HELP ebprof_memory_snapshots_total Memory-context snapshots of PostgreSQL "
		"backends, by result.\n"
		"# TYPE ebprof_memory_snapshots_total counter\n"
		"ebprof_memory_snapshots_total{result=\"taken\"} 0\n"
		"ebprof_memory_snapshots_total{result=\"failed\"} 0\n"
		"# HELP ebprof_memory_growth_snapshots_total Snapshots taken at once because a "
		"backend's private memory doubled.\n"
		"# TYPE ebprof_memory_growth_snapshots_total counter\n"
		"ebprof_memory_growth_snapshots_total 0\n"
		"# HELP ebprof_memory_walk_retries_total Walks made again because contexts "
		"changed under the one before.\n"
		"# TYPE ebprof_memory_walk_retries_total counter\n"
		"ebprof_memory_walk_retries_total 0\n"
		"# HELP ebprof_memory_walk_seconds_total CPU time spent reading memory "
		"contexts from outside the backends.\n"
		"# TYPE ebprof_memory_walk_seconds_total counter\n"
		"ebprof_memory_walk_seconds_total 0.000000\n"
		"# HELP ebprof_memory_dropped_total Memory contexts (with their branch) a walk "
		"dropped, by reason.\n"
		"# TYPE ebprof_memory_dropped_total counter\n"
		"ebprof_memory_dropped_total{reason=\"unreadable\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"tag\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"methods\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"links\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"name\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"size\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"cycle\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"depth\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"contexts\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"bytes\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"time\"} 0\n"
		"# HELP ebprof_memory_kept_bytes Memory of the last snapshots kept for OOM kills.\n"
		"# TYPE ebprof_memory_kept_bytes gauge\n"
		"ebprof_memory_kept_bytes 0\n"
		"# HELP ebprof_memory_oom_kills_total PostgreSQL processes the kernel killed for "
		"lack of memory.\n"
		"# TYPE ebprof_memory_oom_kills_total counter\n"
		"ebprof_memory_oom_kills_total 0\n"
		"# HELP ebprof_memory_budget_bytes The agent's memory budget (memory-budget; 0: "
		"none).\n"
		"# TYPE ebprof_memory_budget_bytes gauge\n"
		"ebprof_memory_budget_bytes 0\n"
		"# HELP ebprof_rss_bytes The agent's resident memory at the last interval's end.\n"
		"# TYPE ebprof_rss_bytes gauge\n"
		"ebprof_rss_bytes 0\n"
		"# HELP ebprof_rss_peak_bytes The agent's peak resident memory (VmHWM).\n"
		"# TYPE ebprof_rss_peak_bytes gauge\n"
		"ebprof_rss_peak_bytes 0\n"
		"# HELP ebprof_degraded 1 where the last interval's end degraded to keep within "
		"the "
		"memory budget.\n"
		"# TYPE ebprof_degraded gauge\n"
		"ebprof_degraded{what=\"symbol_cache\"} 0\n"
		"# HELP ebprof_degraded_total Interval ends that degraded to keep within the "
		"memory "
		"budget.\n"
		"# TYPE ebprof_degraded_total counter\n"
		"ebprof_degraded_total{what=\"symbol_cache\"} 0\n"
		"# HELP ebprof_memory_over_budget 1 when the agent stayed over its memory budget "
		"after "
		"degrading.\n"
		"# TYPE ebprof_memory_over_budget gauge\n"
		"ebprof_memory_over_budget 0\n"
		"# HELP ebprof_symbolizer_released_total Binaries whose symbol data the memory "
		"budget "
		"dropped.\n"
		"# TYPE ebprof_symbolizer_released_total counter\n"
		"ebprof_symbolizer_released_total 0\n"
		"# HELP ebprof_symbolizer_released_cold_total Of those, binaries not used in the "
		"interval: nothing of them kept.\n"
		"# TYPE ebprof_symbolizer_released_cold_total counter\n"
		"ebprof_symbolizer_released_cold_total 0\n"
		"# HELP ebprof_symbolizer_results_kept Resolved addresses of the last interval the "
		"memory budget kept.\n"
		"# TYPE ebprof_symbolizer_results_kept gauge\n"
		"ebprof_symbolizer_results_kept 0\n"
		"# HELP ebprof_symbolizer_results_dropped_total Resolved addresses the memory "
		"budget dropped: not used in an interval.\n"
		"# TYPE ebprof_symbolizer_results_dropped_total counter\n"
		"ebprof_symbolizer_results_dropped_total 0\n"
		"# HELP ebprof_symbolizer_resolved_total Addresses resolved from the binaries (not "
		"from the symbolizer's memo).\n"
		"# TYPE ebprof_symbolizer_resolved_total counter\n"
		"ebprof_symbolizer_resolved_total 0\n");
	cr_expect_str_eq(text, want);
	check_format(text);
	free(text);
	agent_metrics_destroy(&m);
}

Test(metrics, intervals_add_up)
{
	struct agent_metrics m;
	struct session_interval a = { .samples = 100, .written = 3, .failed = 1 },
				b = { .samples = 50, .written = 2 };
	char *text, *lost, want[256];

	a.lost[STAT_STACKS_FULL] = 4;
	a.lost[STAT_SAMPLES] = 999; /* not a loss: not listed */
	b.lost[STAT_STACKS_FULL] = 1;
	b.lost[STAT_TARGETS_FULL] = 7;
	agent_metrics_init(&m);
	agent_metrics_interval(&m, &a);
	agent_metrics_interval(&m, &b);
	agent_metrics_snapshot(&m, 12, NULL, 0, NULL, 1700000000123456789LL);
	text = page(&m);
	check_format(text);
	cr_expect(strstr(text, "\nebprof_intervals_total 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_samples_total 150\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_profiles_written_total 5\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_profile_errors_total 1\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_processes_tracked 12\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_last_flush_timestamp_seconds 1700000000.123\n") != NULL,
		  "%s", text);
	lost = lines_with(text, "ebprof_lost_total{");
	snprintf(want, sizeof(want), "ebprof_lost_total{cause=\"%s\"} 5\n",
		 sampler_stat_name(STAT_STACKS_FULL));
	cr_expect(strstr(lost, want) != NULL, "%s", lost);
	snprintf(want, sizeof(want), "ebprof_lost_total{cause=\"%s\"} 7\n",
		 sampler_stat_name(STAT_TARGETS_FULL));
	cr_expect(strstr(lost, want) != NULL, "%s", lost);
	cr_expect_null(strstr(lost, "999"), "samples are no loss: %s", lost);
	cr_expect_null(strstr(lost, "cause=\"samples\""), "%s", lost);
	free(lost);
	free(text);
	agent_metrics_destroy(&m);
}

/* The off-CPU path the last interval's session took, and the wait
 * sampler's figures only when it is the iterator. */
Test(metrics, offcpu_path_and_wait_sampler)
{
	struct agent_metrics m;
	struct session_interval iv = { .offcpu = { .path = "iterator",
						   .rate = 10,
						   .ticks = 300,
						   .late = 2,
						   .cpu_ns = 1500000000 } };
	char *text;

	iv.lost[STAT_WAITS_VISITS] = 4000;
	iv.lost[STAT_WAITS_SAME] = 3500;
	agent_metrics_init(&m);
	text = page(&m);
	cr_expect_null(strstr(text, "ebprof_offcpu_path"), "no off-CPU, no path: %s", text);
	free(text);
	agent_metrics_interval(&m, &iv);
	text = page(&m);
	check_format(text);
	cr_expect(strstr(text, "\nebprof_offcpu_path{path=\"iterator\"} 1\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_rate_hz 10\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_visits_total 300\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_late_total 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_threads_visited_total 4000\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_threads_unchanged_total 3500\n") != NULL, "%s",
		  text);
	cr_expect(strstr(text, "\nebprof_waits_cpu_seconds_total 1.500000\n") != NULL, "%s", text);
	free(text);
	iv = (struct session_interval){ .offcpu = { .path = "switch" } };
	agent_metrics_interval(&m, &iv);
	text = page(&m);
	cr_expect(strstr(text, "\nebprof_offcpu_path{path=\"switch\"} 1\n") != NULL, "%s", text);
	cr_expect_null(strstr(text, "ebprof_waits_rate_hz"), "the switch path has no rate: %s",
		       text);
	free(text);
	agent_metrics_destroy(&m);
}

/* ---- the sinks' figures ------------------------------------------------------------ */

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
	text = page(&m);
	check_format(text);
	start = strstr(text, "# HELP ebprof_store_bytes");
	cr_assert_not_null(start, "%s", text);
	cr_expect(!strncmp(start, sink_page, strlen(sink_page)), "got:\n%s\nwant:\n%s", start,
		  sink_page);
	free(text);

	/* The snapshot is a snapshot: a later one replaces it, sinks gone. */
	profefe.m[0].value = 11;
	agent_metrics_snapshot(&m, 0, sinks + 1, 1, NULL, 0);
	text = page(&m);
	check_format(text);
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
	text = page(&m);
	check_format(text);
	samples = lines_with(text, "ebprof_many{");
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
	text = page(&m);
	check_format(text);
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
	text = page(&m);
	check_format(text);
	lines = lines_with(text, "ebprof_symbol_samples_resolved_total{");
	cr_expect_str_eq(lines,
			 "ebprof_symbol_samples_resolved_total{binary=\"/usr/lib/postgresql/"
			 "15/bin/postgres\",source=\"dynsym\"} 156\n"
			 "ebprof_symbol_samples_resolved_total{binary=\"/tmp/evil\\\"\\\\\\nna??"
			 "me\xc3\xa9\",source=\"none\"} 0\n");
	free(lines);
	lines = lines_with(text, "ebprof_symbol_leaf_samples_total{");
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
	text = page(&m);
	cr_expect(strstr(text, "\nebprof_memory_budget_bytes 20971520\n"), "%s", text);
	cr_expect(strstr(text, "\nebprof_rss_bytes 25165824\n"));
	cr_expect(strstr(text, "\nebprof_rss_peak_bytes 32505856\n"));
	cr_expect(strstr(text, "\nebprof_degraded{what=\"symbol_cache\"} 1\n"));
	cr_expect(strstr(text, "\nebprof_degraded_total{what=\"symbol_cache\"} 1\n"));
	cr_expect(strstr(text, "\nebprof_memory_over_budget 1\n"));
	check_format(text);
	free(text);
	agent_metrics_destroy(&m);
}
