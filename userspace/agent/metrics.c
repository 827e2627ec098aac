// SPDX-License-Identifier: BSD-2-Clause
#include <stddef.h>
#include <string.h>

#include "metrics.h"
#include "sinks.h"

_Static_assert(AGENT_MAX_SINK_METRICS >= AGENT_MAX_SINKS * SINK_MAX_METRICS,
	       "room for every figure of every sink");

void agent_metrics_init(struct agent_metrics *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
}

void agent_metrics_destroy(struct agent_metrics *m)
{
	symreport_clear(&m->symbols);
	pthread_mutex_destroy(&m->lock);
}

void agent_metrics_interval(struct agent_metrics *m, const struct session_interval *iv)
{
	pthread_mutex_lock(&m->lock);
	m->intervals++;
	m->samples += iv->samples;
	m->profiles_written += iv->written;
	m->profile_errors += iv->failed;
	for (int i = 0; i < STAT_MAX; i++)
		m->lost[i] += iv->lost[i];
	m->queries = iv->queries;
	for (int i = 1; i < UNWIND_END_MAX; i++)
		m->truncated[i] += iv->built.truncated[i];
	m->fp_samples += iv->built.fp_samples;
	m->offcpu_ns += iv->built.offcpu_ns;
	m->fault_bytes += iv->built.fault_bytes;
	m->unwind = iv->unwind;
	m->offcpu = iv->offcpu;
	m->memory = iv->memory;
	m->memory_oom = iv->memory_oom;
	agent_load_take(&m->load, iv->load);
	if (iv->symbols && !symreport_merge(&m->symbols, iv->symbols))
		symreport_sort(&m->symbols);
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics_snapshot(struct agent_metrics *m, uint64_t processes, struct sink *const *sinks,
			    size_t nsinks, const struct symbolizer *sym, int64_t last_flush_ns)
{
	struct sink_metric one[SINK_MAX_METRICS];

	pthread_mutex_lock(&m->lock);
	m->processes_tracked = processes;
	m->nsinks = 0;
	for (size_t i = 0; i < nsinks; i++) {
		size_t n = sink_metrics(sinks[i], one);

		for (size_t k = 0; k < n && m->nsinks < AGENT_MAX_SINK_METRICS; k++)
			m->sinks[m->nsinks++] = one[k];
	}
	sym_get_stats(sym, &m->sym);
	m->last_flush_ns = last_flush_ns;
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics_budget(struct agent_metrics *m, const struct membudget *b)
{
	pthread_mutex_lock(&m->lock);
	m->budget = *b;
	pthread_mutex_unlock(&m->lock);
}

/* The HELP and TYPE lines of one metric. */
static void head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One metric without labels. */
static void metric(FILE *out, const char *name, const char *type, const char *help, uint64_t value)
{
	head(out, name, type, help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)value);
}

/* How off-CPU time is taken (none when the session takes none): the
 * path, and the wait sampler's rate, visits and CPU time. */
static void offcpu_path_metrics(FILE *out, const struct agent_metrics *m)
{
	const struct sampler_offcpu_info *o = &m->offcpu;

	if (!o->path)
		return;
	head(out, "ebprof_offcpu_path", "gauge",
	     "How off-CPU time is taken: path=\"iterator\" (sampled by a sleepable task iterator, "
	     "no hook at switches) or path=\"switch\" (timed at every switch).");
	fprintf(out, "ebprof_offcpu_path{path=\"%s\"} 1\n", o->path);
	if (strcmp(o->path, "iterator"))
		return;
	head(out, "ebprof_waits_visiting", "gauge",
	     "Which threads a read of the wait sampler's iterator looks at: visits=\"targets\" "
	     "(the targets' alone in one run, Linux 6.7+), visits=\"processes\" (the targets' "
	     "alone, a link per process, 6.1+) or visits=\"host\" (every thread of the host).");
	fprintf(out, "ebprof_waits_visiting{visits=\"%s\"} 1\n", o->visits ? o->visits : "host");
	if (o->links_max) {
		metric(out, "ebprof_waits_links", "gauge",
		       "Task iterator links the wait sampler holds, one per target process.",
		       o->links);
		metric(out, "ebprof_waits_links_max", "gauge",
		       "The most links it holds (half RLIMIT_NOFILE); past it, it visits the host.",
		       o->links_max);
		metric(out, "ebprof_waits_links_over_total", "counter",
		       "Visits of every thread of the host made for more target processes than "
		       "links.",
		       o->links_over);
	}
	metric(out, "ebprof_waits_rate_hz", "gauge",
	       "The wait sampler's visits of every target thread per second (offcpu-rate).",
	       (uint64_t)o->rate);
	metric(out, "ebprof_waits_visits_total", "counter",
	       "Reads of the wait sampler's iterator (each visits every target thread).", o->ticks);
	metric(out, "ebprof_waits_late_total", "counter",
	       "Periods the wait sampler's thread was held up past (the next visit counts them).",
	       o->late);
	metric(out, "ebprof_waits_threads_seen_total", "counter",
	       "Threads the wait sampler looked at, targets or not.", m->lost[STAT_WAITS_SEEN]);
	metric(out, "ebprof_waits_threads_visited_total", "counter",
	       "Target threads the wait sampler found off the CPU.", m->lost[STAT_WAITS_VISITS]);
	metric(out, "ebprof_waits_threads_unchanged_total", "counter",
	       "... of them not run since their last visit (their last stacks again).",
	       m->lost[STAT_WAITS_SAME]);
	head(out, "ebprof_waits_cpu_seconds_total", "counter",
	     "CPU time of the wait sampler's thread, its BPF program's included (the whole cost "
	     "of sampling off-CPU time).");
	fprintf(out, "ebprof_waits_cpu_seconds_total %.6f\n", o->cpu_ns / 1e9);
}

/* The sinks' figures, each family's HELP and TYPE once (two remotes
 * report the same family with other labels). */
static void sink_families(FILE *out, const struct agent_metrics *m)
{
	for (size_t i = 0; i < m->nsinks; i++) {
		const struct sink_metric *x = &m->sinks[i];
		bool seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(m->sinks[k].name, x->name);
		if (seen)
			continue;
		head(out, x->name, x->type, x->help);
		for (size_t k = i; k < m->nsinks; k++) {
			const struct sink_metric *y = &m->sinks[k];

			if (strcmp(y->name, x->name))
				continue;
			if (y->labels[0])
				fprintf(out, "%s{%s} %llu\n", y->name, y->labels,
					(unsigned long long)y->value);
			else
				fprintf(out, "%s %llu\n", y->name, (unsigned long long)y->value);
		}
	}
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80		   ? 1
		   : (s[0] & 0xe0) == 0xc0 ? 2
		   : (s[0] & 0xf0) == 0xe0 ? 3
		   : (s[0] & 0xf8) == 0xf0 ? 4
					   : 0;

	if (n == 2 && s[0] < 0xc2)
		return 0; /* overlong */
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A label value as the text format wants it: \\, \" and \n escaped, and
 * valid UTF-8 (a scrape with one bad byte is dropped whole): other bytes
 * and control characters become '?'. Paths come from other users. */
static void label_value(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		size_t n = utf8_len(s);

		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (!n || *s < 0x20 || *s == 0x7f)
			fputc('?', out);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
}

/* The symbolization report: one family per figure, a series per binary. */
static void symbol_family(FILE *out, const struct symreport *r, const char *name, const char *help,
			  size_t field)
{
	head(out, name, "counter", help);
	for (size_t i = 0; i < r->n && i < AGENT_MAX_SYMBOL_ROWS; i++) {
		const struct symreport_row *row = &r->rows[i];

		fprintf(out, "%s{binary=\"", name);
		label_value(out, row->binary);
		fprintf(out, "\",source=\"%s\"} %llu\n", row->source,
			(unsigned long long)*(const uint64_t *)((const char *)row + field));
	}
}

static void symbol_metrics(FILE *out, const struct agent_metrics *m)
{
	symbol_family(out, &m->symbols, "ebprof_symbol_samples_total",
		      "Samples with a frame in the binary, by where its names come from.",
		      offsetof(struct symreport_row, samples));
	symbol_family(out, &m->symbols, "ebprof_symbol_samples_resolved_total",
		      "... of which the frame resolved to a function.",
		      offsetof(struct symreport_row, resolved));
	symbol_family(out, &m->symbols, "ebprof_symbol_leaf_samples_total",
		      "Samples whose user leaf is in the binary.",
		      offsetof(struct symreport_row, leaf));
	symbol_family(out, &m->symbols, "ebprof_symbol_leaf_samples_resolved_total",
		      "... of which the leaf resolved to a function.",
		      offsetof(struct symreport_row, leaf_resolved));
	metric(out, "ebprof_debuginfod_requests_total", "counter",
	       "Requests to debuginfod servers.", m->sym.debuginfod_requests);
	metric(out, "ebprof_debuginfod_found_total", "counter",
	       "Debug files downloaded from debuginfod.", m->sym.debuginfod_found);
	metric(out, "ebprof_debuginfod_missing_total", "counter",
	       "Build-ids no debuginfod server has.", m->sym.debuginfod_missing);
	metric(out, "ebprof_debuginfod_errors_total", "counter",
	       "Failed debuginfod lookups (network, server error, wrong file).",
	       m->sym.debuginfod_errors);
	metric(out, "ebprof_debuginfod_queued", "gauge", "debuginfod lookups waiting or in flight.",
	       m->sym.debuginfod_queued);
	metric(out, "ebprof_debuginfod_cache_bytes", "gauge", "Size of the debuginfod cache.",
	       m->sym.debuginfod_cache_bytes);
}

static void unwind_metrics(FILE *out, const struct agent_metrics *m)
{
	const struct unwind_tables_stats *t = &m->unwind.tables;

	head(out, "ebprof_unwind_truncated_samples_total", "counter",
	     "Samples whose user stack was cut short, by why (its last frame says so).");
	for (int i = 1; i < UNWIND_END_MAX; i++)
		fprintf(out, "ebprof_unwind_truncated_samples_total{reason=\"%s\"} %llu\n",
			sampler_unwind_end_name(i), (unsigned long long)m->truncated[i]);
	metric(out, "ebprof_unwind_fp_samples_total", "counter",
	       "Samples with a user frame found by frame pointer (no unwind table).",
	       m->fp_samples);
	metric(out, "ebprof_unwind_tables", "gauge", "Unwind tables loaded in the kernel.",
	       t->tables);
	metric(out, "ebprof_unwind_table_bytes", "gauge", "Kernel memory of the unwind tables.",
	       t->bytes);
	metric(out, "ebprof_unwind_table_builds_total", "counter",
	       "Unwind tables compiled from CFI (not found in the disk cache).", t->built);
	head(out, "ebprof_unwind_table_build_seconds_total", "counter",
	     "Time spent compiling unwind tables.");
	fprintf(out, "ebprof_unwind_table_build_seconds_total %.6f\n", t->build_ns / 1e9);
	metric(out, "ebprof_unwind_table_cache_hits_total", "counter",
	       "Unwind tables read from the disk cache.", t->cache_hits);
	metric(out, "ebprof_unwind_over_budget_total", "counter",
	       "Binaries unwound by frame pointers: their table was over the memory budget.",
	       t->over_budget);
	metric(out, "ebprof_unwind_tables_out_of_budget", "gauge",
	       "Binaries mapped now whose table is out of the memory budget (frame pointers).",
	       t->out_of_budget);
	metric(out, "ebprof_unwind_table_evictions_total", "counter",
	       "Tables sent back to frame pointers for binaries sampled more.", t->evicted);
	metric(out, "ebprof_unwind_table_promotions_total", "counter",
	       "Tables out of the budget loaded again: sampled more than tables loaded.",
	       t->promoted);
	metric(out, "ebprof_unwind_tables_freed_total", "counter",
	       "Tables unloaded: no process maps their binary any more.", t->freed);
	metric(out, "ebprof_unwind_no_table_total", "counter",
	       "Binaries without usable CFI, or that could not be opened.", t->no_cfi + t->failed);
	metric(out, "ebprof_unwind_stacks", "gauge", "Distinct unwound user stacks held.",
	       m->unwind.stacks.stacks);
	metric(out, "ebprof_unwind_stack_bytes", "gauge", "Memory of the unwound user stacks held.",
	       m->unwind.stacks.bytes);
}

static void memory_metrics(FILE *out, const struct agent_metrics *m)
{
	head(out, "ebprof_memory_snapshots_total", "counter",
	     "Memory-context snapshots of PostgreSQL backends, by result.");
	fprintf(out, "ebprof_memory_snapshots_total{result=\"taken\"} %llu\n",
		(unsigned long long)m->memory.taken);
	fprintf(out, "ebprof_memory_snapshots_total{result=\"failed\"} %llu\n",
		(unsigned long long)m->memory.failed);
	metric(out, "ebprof_memory_growth_snapshots_total", "counter",
	       "Snapshots taken at once because a backend's private memory doubled.",
	       m->memory.jumps);
	metric(out, "ebprof_memory_walk_retries_total", "counter",
	       "Walks made again because contexts changed under the one before.",
	       m->memory.retries);
	head(out, "ebprof_memory_walk_seconds_total", "counter",
	     "CPU time spent reading memory contexts from outside the backends.");
	fprintf(out, "ebprof_memory_walk_seconds_total %.6f\n", m->memory.cpu_ns / 1e9);
	head(out, "ebprof_memory_dropped_total", "counter",
	     "Memory contexts (with their branch) a walk dropped, by reason.");
	for (int d = 0; d < PGMEM_DROP_MAX; d++)
		fprintf(out, "ebprof_memory_dropped_total{reason=\"%s\"} %llu\n",
			pgmem_drop_name((enum pgmem_drop)d),
			(unsigned long long)m->memory.drops[d]);
	metric(out, "ebprof_memory_kept_bytes", "gauge",
	       "Memory of the last snapshots kept for OOM kills.", m->memory.kept_bytes);
	metric(out, "ebprof_memory_oom_kills_total", "counter",
	       "PostgreSQL processes the kernel killed for lack of memory.", m->memory_oom);
}

static void budget_metrics(FILE *out, const struct agent_metrics *m)
{
	const struct membudget *b = &m->budget;

	metric(out, "ebprof_memory_budget_bytes", "gauge",
	       "The agent's memory budget (memory-budget; 0: none).", b->budget);
	metric(out, "ebprof_rss_bytes", "gauge",
	       "The agent's resident memory at the last interval's end.", b->rss);
	metric(out, "ebprof_rss_peak_bytes", "gauge", "The agent's peak resident memory (VmHWM).",
	       b->peak);
	head(out, "ebprof_degraded", "gauge",
	     "1 where the last interval's end degraded to keep within the memory budget.");
	fprintf(out, "ebprof_degraded{what=\"symbol_cache\"} %d\n", b->symbols_degraded);
	head(out, "ebprof_degraded_total", "counter",
	     "Interval ends that degraded to keep within the memory budget.");
	fprintf(out, "ebprof_degraded_total{what=\"symbol_cache\"} %llu\n",
		(unsigned long long)b->symbol_releases);
	metric(out, "ebprof_memory_over_budget", "gauge",
	       "1 when the agent stayed over its memory budget after degrading.", b->over_budget);
	metric(out, "ebprof_symbolizer_released_total", "counter",
	       "Binaries whose symbol data the memory budget dropped.", m->sym.released);
	metric(out, "ebprof_symbolizer_released_cold_total", "counter",
	       "Of those, binaries with no address used in the last 4 intervals: none kept.",
	       m->sym.released_cold);
	metric(out, "ebprof_symbolizer_results_kept", "gauge",
	       "Resolved addresses used in the last 4 intervals the last release kept.",
	       m->sym.results_kept);
	metric(out, "ebprof_symbolizer_results_dropped_total", "counter",
	       "Resolved addresses the memory budget dropped: unused for 4 intervals.",
	       m->sym.results_dropped);
	metric(out, "ebprof_symbolizer_resolved_total", "counter",
	       "Addresses resolved from the binaries (not from the symbolizer's memo).",
	       m->sym.resolved);
}

int agent_metrics_write(FILE *out, void *ctx)
{
	struct agent_metrics *m = ctx;

	pthread_mutex_lock(&m->lock);
	metric(out, "ebprof_intervals_total", "counter", "Intervals flushed.", m->intervals);
	metric(out, "ebprof_samples_total", "counter", "Samples of target processes.", m->samples);
	metric(out, "ebprof_profiles_written_total", "counter",
	       "Per-process profiles handed to the sinks.", m->profiles_written);
	metric(out, "ebprof_profile_errors_total", "counter",
	       "Profiles that could not be built or stored.", m->profile_errors);
	metric(out, "ebprof_processes_tracked", "gauge", "Processes the agent knows now.",
	       m->processes_tracked);
	head(out, "ebprof_last_flush_timestamp_seconds", "gauge", "End of the last interval.");
	fprintf(out, "ebprof_last_flush_timestamp_seconds %.3f\n", m->last_flush_ns / 1e9);
	head(out, "ebprof_lost_total", "counter", "Samples, stacks or events lost, by cause.");
	for (int i = STAT_SAMPLES + 1; i < STAT_LOSS_END; i++)
		fprintf(out, "ebprof_lost_total{cause=\"%s\"} %llu\n", sampler_stat_name(i),
			(unsigned long long)m->lost[i]);
	sink_families(out, m);
	metric(out, "ebprof_symbolizer_cache_bytes", "gauge", "Estimated size of the binary cache.",
	       m->sym.cache_bytes);
	metric(out, "ebprof_symbolizer_binaries", "gauge", "Binaries in the symbolizer cache.",
	       m->sym.binaries_cached);
	metric(out, "ebprof_symbolizer_truncated_total", "counter",
	       "Binaries, debug files or kernel symbol files found cut short while read.",
	       m->sym.truncated);
	symbol_metrics(out, m);
	agent_load_write(out, &m->load);
	metric(out, "ebprof_statement_texts_read_total", "counter",
	       "Statement texts the BPF program read from backends.", m->lost[STAT_QUERY_READS]);
	metric(out, "ebprof_statement_texts_sent_total", "counter",
	       "Statement texts that changed and were sent to be normalized.",
	       m->lost[STAT_QUERY_SENT]);
	metric(out, "ebprof_statement_normalizations_total", "counter",
	       "Statement texts normalized (libpg_query).", m->queries.normalized);
	metric(out, "ebprof_statement_shape_hits_total", "counter",
	       "Statement texts whose normalization was cached.", m->queries.shape_hits);
	head(out, "ebprof_statement_normalize_seconds_total", "counter",
	     "Time spent normalizing statements.");
	fprintf(out, "ebprof_statement_normalize_seconds_total %.6f\n",
		m->queries.normalize_ns / 1e9);
	metric(out, "ebprof_statements_known", "gauge", "Normalized statements kept now.",
	       m->queries.statements);
	unwind_metrics(out, m);
	head(out, "ebprof_offcpu_seconds_total", "counter",
	     "Time target threads spent off the CPU, in off-CPU profiles (scaled by the ratio "
	     "taken).");
	fprintf(out, "ebprof_offcpu_seconds_total %.6f\n", m->offcpu_ns / 1e9);
	offcpu_path_metrics(out, m);
	metric(out, "ebprof_offcpu_short_waits_total", "counter",
	       "Waits shorter than offcpu-min, not counted.", m->lost[STAT_OFFCPU_SHORT]);
	metric(out, "ebprof_offcpu_switches_skipped_total", "counter",
	       "Switches not taken (offcpu-ratio).", m->lost[STAT_OFFCPU_SKIPPED]);
	metric(out, "ebprof_offcpu_waits_untaken_total", "counter",
	       "Waits shorter than offcpu-period left out by chance (their time is carried by "
	       "those taken).",
	       m->lost[STAT_OFFCPU_UNTAKEN]);
	metric(out, "ebprof_fault_samples_total", "counter",
	       "Page-fault samples of target processes (one every faults-period faults).",
	       m->lost[STAT_FAULT_SAMPLES]);
	metric(out, "ebprof_fault_bytes_total", "counter",
	       "Page faults in the profiles, in bytes (samples x faults-period x page size).",
	       m->fault_bytes);
	memory_metrics(out, m);
	budget_metrics(out, m);
	pthread_mutex_unlock(&m->lock);
	return 0;
}
