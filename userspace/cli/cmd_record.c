// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/args.h"
#include "util/log.h"
#include "commands.h"
#include "options.h"
#include "formats/render.h"
#include "pipeline/session.h"
#include "sinks/file.h"
#include "util/timeutil.h"
#include "util/version.h"

/* Set by the SIGINT/SIGTERM handler, read by the recording loop
 * (lock-free, so async-signal-safe). */
static atomic_int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

const struct cli_command cli_record = {
	.id = CLI_RECORD,
	.name = "record",
	.synopsis = "[OPTIONS]",
	.about = "Sample CPU stacks of processes (or the stacks where they wait) and write\n"
		 "one symbolized profile. The targets are, unless -p, -a or --comm says\n"
		 "otherwise, every process named postgres or postmaster, by comm or\n"
		 "executable name, and every process forked from one of them.\n",
	.epilog = "Exit status: 0 success, 1 runtime failure (privileges, kernel), 2 bad input.\n"
		  "Open a profile with: go tool pprof -http=: profile.pb.gz\n",
	.output = CLI_OUTPUT_BY_FORMAT,
};

/* The options, and the checks across them. 0, 1 when help was printed,
 * -EINVAL (logged). */
static int parse_args(int argc, char **argv, struct cli_values *o, enum ptype *type)
{
	const struct ptype_info *t;
	const char *err = NULL;
	int ret = cli_parse(&cli_record, argc, argv, o);

	if (ret)
		return ret;
	if (!(t = ptype_by_name(o->type)))
		err = "internal error: a type the table does not know";
	else if (o->all && (o->npids || o->ncomms))
		err = "-a/--all cannot be combined with -p or --comm";
	else if (o->no_kernel && o->no_user)
		err = "--no-kernel and --no-user leave nothing to record";
	else if (o->group_by && o->format != RENDER_FOLDED && o->format != RENDER_SVG)
		err = "--group-by needs --format folded or svg";
	else if (o->idle && (t->id != PTYPE_OFFCPU || o->format != RENDER_SVG))
		err = "--idle needs --type offcpu and --format svg";
	if (t)
		*type = t->id;
	if (err) {
		log_error("%s", err);
		return -EINVAL;
	}
	return 0;
}

/* One line on the terminal, redrawn in place. */
static void progress(const struct session_progress *p, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "\r\033[Kebprof: recording %.1fs, %llu samples, %lu processes",
		p->elapsed_s, (unsigned long long)p->samples, p->processes);
	fflush(stderr);
}

/* The debuginfod servers to ask for missing debug files: none offline
 * or when $DEBUGINFOD_URLS names none. */
static const char *debuginfod_urls(const struct cli_values *o)
{
	const char *urls = o->offline ? NULL : getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t\n")] ? urls : NULL;
}

static void session_options(const struct cli_values *o, enum ptype type, const char *comment,
			    struct sink **sink, struct session_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->frequency = (int)o->frequency;
	so->types = PTYPE_BIT(type);
	so->faults_period = (uint32_t)o->faults_period;
	so->memory_min_rss = (uint64_t)o->memory_min_rss;
	so->memory_jump = 2; /* snapshots kept for an OOM kill meanwhile */
	so->offcpu_min_ns = (uint64_t)o->offcpu_min_us * 1000;
	so->offcpu_pct = (uint32_t)o->offcpu_pct;
	so->offcpu_period_ns = (uint64_t)o->offcpu_period_us * 1000;
	so->offcpu_rate = (int)o->offcpu_rate;
	so->offcpu_path = o->offcpu_path;
	so->all = o->all;
	so->kernel = !o->no_kernel;
	so->user = !o->no_user;
	so->inherit = !o->no_inherit;
	so->pids = o->pids;
	so->npids = o->npids;
	so->comms = (const char *const *)o->comms;
	so->ncomms = o->ncomms;
	so->btf_path = o->btf;
	so->unwind = o->unwind;
	so->query_labels = o->query_labels;
	so->no_plpgsql = o->no_plpgsql;
	so->require_targets = true;
	so->split = SESSION_ONE_PROFILE;
	/* debug files asked of debuginfod while sampling: not for every
	 * binary of the machine, and only when there are servers to ask */
	so->prewarm = !o->all && debuginfod_urls(o);
	so->comment = comment;
	so->sinks = sink;
	so->nsinks = 1;
}

/* Binaries shown in the summary (most samples first). */
#define SUMMARY_BINARIES 12

/* Per binary: how much resolved, and from which debug source. */
static void symbols_summary(const struct symreport *r)
{
	for (size_t i = 0; r && i < r->n && i < SUMMARY_BINARIES; i++) {
		const struct symreport_row *x = &r->rows[i];

		fprintf(stderr,
			"ebprof:   %5.1f%% of %llu frames symbolized (leaf %.1f%%) by %s: %s\n",
			x->samples ? 100.0 * x->resolved / x->samples : 0.0,
			(unsigned long long)x->samples,
			x->leaf ? 100.0 * x->leaf_resolved / x->leaf : 0.0, x->source, x->binary);
	}
	if (r && r->n > SUMMARY_BINARIES)
		fprintf(stderr, "ebprof:   ... and %zu other binaries\n", r->n - SUMMARY_BINARIES);
}

/* How user stacks were unwound, and what was cut short. */
static void unwind_summary(const struct session_stats *st)
{
	const struct unwind_tables_stats *t = &st->unwind.tables;
	char text[256];

	fprintf(stderr, "ebprof: user stacks: %s", st->unwind.mode);
	if (t->peak_tables)
		fprintf(stderr,
			", up to %llu unwind tables (%.1f MiB; %llu compiled in %.0f ms, %llu from "
			"the cache)",
			(unsigned long long)t->peak_tables, t->peak_bytes / 1048576.0,
			(unsigned long long)t->built, t->build_ns / 1e6,
			(unsigned long long)t->cache_hits);
	if (t->entered)
		fprintf(stderr, ", binaries entered %llu times", (unsigned long long)t->entered);
	if (t->over_budget)
		fprintf(stderr, ", %llu binaries over the table budget",
			(unsigned long long)t->over_budget);
	session_unwind_text(&st->built, text, sizeof(text));
	fprintf(stderr, "%s%s\n", text[0] ? "; " : "", text);
}

/* The wait sampler's visits: which threads, how many. */
static void waits_summary(const struct session_stats *st)
{
	const struct sampler_offcpu_info *o = &st->offcpu;

	if (!o->path || strcmp(o->path, "iterator"))
		return;
	fprintf(stderr,
		"ebprof: wait sampler (%s): %llu visits at %d Hz, %llu threads looked at, %llu of "
		"processes not targeted, %llu found off the CPU, %.1f ms of its thread's CPU\n",
		o->visits, (unsigned long long)o->ticks, o->rate,
		(unsigned long long)st->bpf.v[STAT_WAITS_SEEN],
		(unsigned long long)st->bpf.v[STAT_WAITS_OTHERS],
		(unsigned long long)st->bpf.v[STAT_WAITS_VISITS], o->cpu_ns / 1e6);
	fprintf(stderr,
		"ebprof: wait sampler visits: %llu of threads not run since, %llu idle where they "
		"were idle last (no memory read), %llu runs of visits into the counts at a "
		"change\n",
		(unsigned long long)st->bpf.v[STAT_WAITS_SAME],
		(unsigned long long)st->bpf.v[STAT_WAITS_IDLE_SAME],
		(unsigned long long)st->bpf.v[STAT_WAITS_FOLDED]);
	if (o->links_max) /* a link per target process */
		fprintf(stderr,
			"ebprof: wait sampler links: %llu made, %llu closed, at most %llu; %llu "
			"visits of the host instead (target processes past that, or more than "
			"links are "
			"worth)\n",
			(unsigned long long)o->links_made, (unsigned long long)o->links_closed,
			(unsigned long long)o->links_max, (unsigned long long)o->links_over);
}

/* The summary line on a terminal or with -v. */
static void summary(const struct cli_values *o, enum ptype type, const struct session_stats *st)
{
	uint64_t frames = st->built.user_frames + st->built.kernel_frames;
	uint64_t resolved = st->built.user_frames_resolved + st->built.kernel_frames_resolved;
	int stat = sampler_type_stat(type);
	char counted[64] = "", what[64], faulted[32] = "";

	/* Every sample BPF counted is in the profile; say so when not. */
	if (stat >= 0 && st->bpf.v[stat] != st->built.samples)
		snprintf(counted, sizeof(counted), "; BPF counted %llu samples",
			 (unsigned long long)st->bpf.v[stat]);
	if (type == PTYPE_OFFCPU)
		snprintf(what, sizeof(what), "%llu waits (%.3f s off the CPU)",
			 (unsigned long long)st->built.samples, st->built.offcpu_ns / 1e9);
	else if (type == PTYPE_MEMORY)
		snprintf(what, sizeof(what), "%llu memory-context snapshots (%.2f ms of CPU)",
			 (unsigned long long)st->memory.taken, st->memory.cpu_ns / 1e6);
	else
		snprintf(what, sizeof(what), "%llu samples", (unsigned long long)st->built.samples);
	if (type == PTYPE_FAULTS)
		snprintf(faulted, sizeof(faulted), " (%.1f MiB faulted)",
			 st->built.fault_bytes / 1048576.0);
	if (type == PTYPE_MEMORY) {
		fprintf(stderr,
			"ebprof: wrote %s: %s in %.1fs, profile written %.0f ms after the end%s\n",
			strcmp(o->output, "-") ? o->output : "stdout", what, st->elapsed_s,
			st->last_flush_ms,
			st->memory_oom ? " (with backends killed for lack of "
					 "memory: oom_killed=true)"
				       : "");
		return;
	}
	fprintf(stderr,
		"ebprof: wrote %s: %s from %lu processes in %.1fs%s, %llu frames "
		"(%.1f%% symbolized), profile written %.0f ms after sampling ended%s%s%s\n",
		strcmp(o->output, "-") ? o->output : "stdout", what, st->processes, st->elapsed_s,
		faulted, (unsigned long long)frames, frames ? 100.0 * resolved / frames : 0.0,
		st->last_flush_ms, counted, st->lost_text[0] ? "; lost: " : "", st->lost_text);
	symbols_summary(st->symbols);
	unwind_summary(st);
	waits_summary(st);
	if (st->built.query_samples + st->built.query_gap + st->built.query_lost)
		fprintf(stderr,
			"ebprof: %llu samples ran a statement, %llu between statements, %llu of "
			"unknown text\n",
			(unsigned long long)st->built.query_samples,
			(unsigned long long)st->built.query_gap,
			(unsigned long long)st->built.query_lost);
	if (st->built.plpgsql_samples)
		fprintf(stderr,
			"ebprof: %llu samples ran PL/pgSQL; %llu of their PL/pgSQL frames without "
			"the C frame that runs them\n",
			(unsigned long long)st->built.plpgsql_samples,
			(unsigned long long)st->built.plpgsql_unplaced);
}

int cmd_record(int argc, char **argv)
{
	struct cli_values o = { 0 };
	struct session_opts so;
	struct session_run_opts ro = { 0 };
	struct session_stats st;
	struct render_opts rend = { 0 };
	struct session *s = NULL;
	struct sink *file = NULL;
	struct sigaction sa = { 0 };
	struct sym_opts syo = { 0 };
	struct symbolizer *sym = NULL;
	bool tty = isatty(STDERR_FILENO);
	char err[512] = "", comment[128], title[64];
	enum ptype type = PTYPE_CPU;
	int rc = EXIT_RUNTIME, ret;

	ret = parse_args(argc, argv, &o, &type);
	if (ret) {
		rc = ret > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	if (o.verbose)
		log_set_level(o.verbose > 1 ? LOG_DEBUG : LOG_INFO);

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	snprintf(comment, sizeof(comment), "ebprof %s record", ebprof_version);
	rend.group_by = o.group_by;
	rend.idle = o.idle;
	snprintf(title, sizeof(title), "ebprof record: %s", ptype_info(type)->label);
	rend.title = title;
	if (file_sink_open(o.output, o.format, &rend, &file)) {
		log_error("out of memory");
		goto out;
	}
	session_options(&o, type, comment, &file, &so);
	/* Debug files missing locally come from debuginfod, as perf does,
	 * fetched while sampling (the session's prewarm). */
	syo.debuginfod_urls = debuginfod_urls(&o);
	syo.debuginfod_cache = getenv("DEBUGINFOD_CACHE_PATH");
	/* a one-shot process: compressed debug files inflated once (the
	 * agent's copies), not at every recording */
	syo.plain_debug_dir = "/var/cache/ebprof/debug";
	ret = sym_new(&syo, &sym);
	if (ret) {
		log_error("cannot initialize the symbolizer: %s", strerror(-ret));
		goto out;
	}
	so.sym = sym;
	ret = session_open(&so, &s, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		rc = ret == -ESRCH ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	if (type == PTYPE_FAULTS)
		log_info("sampling at 1 in %ld page faults on %d CPUs%s", o.faults_period,
			 session_ncpus(s), o.duration > 0 ? "" : " until stopped");
	else if (type == PTYPE_MEMORY)
		log_info("memory contexts of the PostgreSQL backends at the end%s",
			 o.duration > 0 ? "" : " (Ctrl-C)");
	else
		log_info("sampling at %ld Hz on %d CPUs%s", o.frequency, session_ncpus(s),
			 o.duration > 0 ? "" : " until stopped");
	ro.duration_s = o.duration;
	ro.stop_when_gone = o.npids > 0; /* like perf record -p */
	ro.stop = &stop_requested;
	ro.on_progress = tty ? progress : NULL;
	ret = session_run(s, &ro, NULL, err, sizeof(err));
	if (!ret)
		ret = session_finish(s, &ro);
	if (tty)
		fputc('\n', stderr);
	if (ret) {
		log_error("%s", err);
		goto out;
	}
	session_get_stats(s, &st);
	if (st.failed)
		goto out; /* the file sink said why */
	if (tty || o.verbose)
		summary(&o, type, &st);
	if (type == PTYPE_MEMORY && !st.memory.taken && st.memory.failed)
		log_warn("no memory contexts were read: the %llu backend(s) among the targets "
			 "could not be read (-v says why)",
			 (unsigned long long)st.memory.failed);
	else if (type == PTYPE_MEMORY && !st.memory.taken)
		log_warn("no memory contexts were read: no PostgreSQL backend among the targets "
			 "(or none above --memory-min-rss)");
	else if (type != PTYPE_MEMORY && st.built.samples == 0)
		log_warn("no samples were recorded%s",
			 type == PTYPE_CPU ? ": the targets used no CPU" : "");
	rc = EXIT_OK;
out:
	session_close(s);
	sym_free(sym);
	sink_close(file, 0);
	cli_values_free(&o);
	return rc;
}
