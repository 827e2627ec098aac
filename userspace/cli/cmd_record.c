// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>
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

struct record_opts {
	enum ptype type; /* --type */
	long offcpu_min_us, offcpu_pct, offcpu_period_us;
	long faults_period;
	long frequency;
	double duration; /* 0: until interrupted */
	uint32_t *pids;
	size_t npids;
	bool all;
	char **comms;
	size_t ncomms;
	const char *output;
	enum render_format format;
	bool kernel, user, inherit;
	const char *btf_path;
	enum query_labels query_labels;
	enum sampler_unwind unwind;
	const char *group_by;
	bool idle; /* svg of offcpu: draw the idle time too */
	bool offline;
	int verbose;
};

/* Set by the SIGINT/SIGTERM handler, read by the recording loop
 * (lock-free, so async-signal-safe). */
static atomic_int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

void cmd_record_usage(void)
{
	printf("Usage: ebprof record [OPTIONS]\n"
	       "Sample CPU stacks of processes (or the stacks where they wait, or fault\n"
	       "pages in) and write one symbolized profile.\n"
	       "\n"
	       "Targets (default: every process named postgres or postmaster, by comm or\n"
	       "executable name, and every process forked from one of them):\n"
	       "  -p, --pid PID[,PID]    these processes (and their threads and children)\n"
	       "  -a, --all              every process, kernel threads included\n"
	       "      --comm NAME[,NAME] match these names instead of postgres,postmaster\n"
	       "      --no-inherit       do not follow processes forked by targets\n"
	       "\n"
	       "Sampling:\n"
	       "      --type TYPE        cpu (default): stacks sampled on the CPU; offcpu:\n"
	       "                         time away from the CPU by stack, state and, for\n"
	       "                         PostgreSQL 14+, wait event; faults: page faults,\n"
	       "                         in bytes (one type per file)\n"
	       "      --offcpu-min USECS offcpu: waits shorter than this are not counted,\n"
	       "                         0..60000000 (default 0)\n"
	       "      --offcpu-ratio PCT offcpu: percent of switches taken, 1..100 (times\n"
	       "                         scaled back; default 100)\n"
	       "      --offcpu-period USECS offcpu: waits at least this long are taken\n"
	       "                         whole, shorter ones by chance (their share of it)\n"
	       "                         as this long; 0: every wait, 0..1000000\n"
	       "                         (default " SAMPLER_OFFCPU_PERIOD_US_TEXT ")\n"
	       "      --faults-period N  faults: one sample every N page faults of a CPU,\n"
	       "                         weighing N pages, 1..1000000 "
	       "(default " SAMPLER_FAULTS_PERIOD_TEXT ")\n"
	       "  -F, --frequency HZ     samples per second per CPU, 1..10000 (default 99)\n"
	       "  -d, --duration SECS    stop after SECS seconds (default: until Ctrl-C)\n"
	       "      --no-kernel        do not collect kernel stacks\n"
	       "      --no-user          do not collect user stacks\n"
	       "      --btf PATH         vmlinux BTF file for kernels without /sys/kernel/btf\n"
	       "      --unwind MODE      user stacks: dwarf (from the binaries' CFI, in BPF;\n"
	       "                         default) or fp (frame pointers only)\n"
	       "      --query-labels MODE  statements of PostgreSQL backends as sample labels:\n"
	       "                         normalized (query, query_fingerprint, query_id;\n"
	       "                         default), fingerprint (no text) or off\n"
	       "      --offline          never ask the debuginfod servers of $DEBUGINFOD_URLS\n"
	       "                         for missing debug files (fetched while sampling,\n"
	       "                         kept in $DEBUGINFOD_CACHE_PATH, by default\n"
	       "                         /var/cache/ebprof/debuginfod)\n"
	       "\n"
	       "Output:\n"
	       "  -o, --output PATH      output file, '-' for stdout (default profile.pb.gz,\n"
	       "                         profile.folded or profile.svg by format)\n"
	       "      --format FORMAT    pprof (gzip-compressed, default), folded, or svg\n"
	       "                         (an interactive flamegraph)\n"
	       "      --group-by LABEL   folded and svg: a root frame per value of LABEL\n"
	       "                         (query, query_fingerprint, query_id, pid, ...)\n"
	       "      --idle             svg of --type offcpu: draw the idle time too\n"
	       "                         (backends waiting for their client outside a\n"
	       "                         statement; left out by default)\n"
	       "  -v, --verbose          more messages (repeat for debug)\n"
	       "  -h, --help             this help\n"
	       "      --version          print the version\n"
	       "\n"
	       "Exit status: 0 success, 1 runtime failure (privileges, kernel), 2 bad input.\n"
	       "Open a profile with: go tool pprof -http=: profile.pb.gz\n");
}

/* The types record takes: those the sampler counts. */
static unsigned sampled_types(void)
{
	unsigned m = 0;

	for (int t = 0; t < PTYPE_N; t++)
		m |= ptype_info(t)->source == PTYPE_FROM_BPF ? PTYPE_BIT(t) : 0;
	return m;
}

static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum {
		OPT_COMM = 256,
		OPT_FORMAT,
		OPT_NO_KERNEL,
		OPT_NO_USER,
		OPT_NO_INHERIT,
		OPT_BTF,
		OPT_VERSION,
		OPT_QUERY_LABELS,
		OPT_UNWIND,
		OPT_GROUP_BY,
		OPT_OFFLINE,
		OPT_TYPE,
		OPT_OFFCPU_MIN,
		OPT_OFFCPU_RATIO,
		OPT_OFFCPU_PERIOD,
		OPT_FAULTS_PERIOD,
		OPT_IDLE,
	};
	static const struct option longopts[] = {
		{ "frequency", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "no-user", no_argument, NULL, OPT_NO_USER },
		{ "no-inherit", no_argument, NULL, OPT_NO_INHERIT },
		{ "btf", required_argument, NULL, OPT_BTF },
		{ "unwind", required_argument, NULL, OPT_UNWIND },
		{ "query-labels", required_argument, NULL, OPT_QUERY_LABELS },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "offcpu-min", required_argument, NULL, OPT_OFFCPU_MIN },
		{ "offcpu-ratio", required_argument, NULL, OPT_OFFCPU_RATIO },
		{ "offcpu-period", required_argument, NULL, OPT_OFFCPU_PERIOD },
		{ "faults-period", required_argument, NULL, OPT_FAULTS_PERIOD },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int c;

	o->frequency = 99;
	o->offcpu_pct = 100;
	o->offcpu_period_us = SAMPLER_OFFCPU_PERIOD_US;
	o->faults_period = SAMPLER_FAULTS_PERIOD;
	o->kernel = o->user = o->inherit = true;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":F:d:p:ao:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (args_parse_int(optarg, "frequency", 1, 10000, &o->frequency, err,
					   sizeof(err)))
				goto bad;
			break;
		case 'd':
			if (args_parse_seconds(optarg, "duration", &o->duration, err, sizeof(err)))
				goto bad;
			break;
		case 'p':
			free(o->pids);
			if (args_parse_pids(optarg, &o->pids, &o->npids, err, sizeof(err)))
				goto bad;
			break;
		case 'a':
			o->all = true;
			break;
		case OPT_COMM:
			args_free_list(o->comms, o->ncomms);
			o->comms = NULL;
			if (args_parse_names(optarg, &o->comms, &o->ncomms, err, sizeof(err)))
				goto bad;
			if (o->ncomms > EBPROF_MAX_COMMS) {
				snprintf(err, sizeof(err), "--comm takes at most %d names, got %zu",
					 EBPROF_MAX_COMMS, o->ncomms);
				goto bad;
			}
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_FORMAT:
			if (render_format_parse(optarg, &o->format)) {
				snprintf(err, sizeof(err),
					 "unknown format '%s': use pprof, folded or svg", optarg);
				goto bad;
			}
			break;
		case OPT_NO_KERNEL:
			o->kernel = false;
			break;
		case OPT_NO_USER:
			o->user = false;
			break;
		case OPT_NO_INHERIT:
			o->inherit = false;
			break;
		case OPT_BTF:
			o->btf_path = optarg;
			break;
		case OPT_UNWIND:
			if (sampler_unwind_parse(optarg, &o->unwind)) {
				snprintf(err, sizeof(err), "unknown unwind '%s': use dwarf or fp",
					 optarg);
				goto bad;
			}
			break;
		case OPT_QUERY_LABELS:
			if (query_labels_parse(optarg, &o->query_labels)) {
				snprintf(err, sizeof(err),
					 "unknown query-labels '%s': use normalized, fingerprint "
					 "or off",
					 optarg);
				goto bad;
			}
			break;
		case OPT_GROUP_BY:
			if (!(o->group_by = render_group_by_key(optarg, err, sizeof(err))))
				goto bad;
			break;
		case OPT_OFFLINE:
			o->offline = true;
			break;
		case OPT_TYPE: {
			const struct ptype_info *t = ptype_by_name(optarg);
			char names[64];

			if (!t || t->source != PTYPE_FROM_BPF) {
				snprintf(
					err, sizeof(err), "unknown type '%s': use %s", optarg,
					ptype_names(sampled_types(), " or ", names, sizeof(names)));
				goto bad;
			}
			o->type = t->id;
			break;
		}
		case OPT_OFFCPU_MIN:
			if (args_parse_int(optarg, "offcpu-min", 0, 60000000, &o->offcpu_min_us,
					   err, sizeof(err)))
				goto bad;
			break;
		case OPT_OFFCPU_RATIO:
			if (args_parse_int(optarg, "offcpu-ratio", 1, 100, &o->offcpu_pct, err,
					   sizeof(err)))
				goto bad;
			break;
		case OPT_OFFCPU_PERIOD:
			if (args_parse_int(optarg, "offcpu-period", 0, SAMPLER_OFFCPU_PERIOD_MAX_US,
					   &o->offcpu_period_us, err, sizeof(err)))
				goto bad;
			break;
		case OPT_FAULTS_PERIOD:
			if (args_parse_int(optarg, "faults-period", 1, SAMPLER_FAULTS_PERIOD_MAX,
					   &o->faults_period, err, sizeof(err)))
				goto bad;
			break;
		case OPT_IDLE:
			o->idle = true;
			break;
		case 'v':
			o->verbose++;
			break;
		case OPT_VERSION:
			puts(ebprof_version_line);
			return 1;
		default:
			return cli_option_end(c, argv, "record", cmd_record_usage);
		}
	}
	if (cli_operands(argc, argv, 0, "record"))
		return -EINVAL;
	if (o->all && (o->npids || o->ncomms)) {
		snprintf(err, sizeof(err), "-a/--all cannot be combined with -p or --comm");
		goto bad;
	}
	if (!o->kernel && !o->user) {
		snprintf(err, sizeof(err), "--no-kernel and --no-user leave nothing to record");
		goto bad;
	}
	if (o->group_by && o->format != RENDER_FOLDED && o->format != RENDER_SVG) {
		snprintf(err, sizeof(err), "--group-by needs --format folded or svg");
		goto bad;
	}
	if (o->idle && (o->type != PTYPE_OFFCPU || o->format != RENDER_SVG)) {
		snprintf(err, sizeof(err), "--idle needs --type offcpu and --format svg");
		goto bad;
	}
	if (!o->output)
		o->output = render_default_name(o->format);
	if (args_check_output(o->output, err, sizeof(err)))
		goto bad;
	return 0;
bad:
	log_error("%s", err);
	return -EINVAL;
}

/* One line on the terminal, redrawn in place. */
static void progress(const struct session_progress *p, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "\r\033[Kebprof: recording %.1fs, %llu samples, %lu processes",
		p->elapsed_s, (unsigned long long)p->samples, p->processes);
	fflush(stderr);
}

static void session_options(const struct record_opts *o, const char *comment, struct sink **sink,
			    struct session_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->frequency = (int)o->frequency;
	so->types = PTYPE_BIT(o->type);
	so->faults_period = (uint32_t)o->faults_period;
	so->offcpu_min_ns = (uint64_t)o->offcpu_min_us * 1000;
	so->offcpu_pct = (uint32_t)o->offcpu_pct;
	so->offcpu_period_ns = (uint64_t)o->offcpu_period_us * 1000;
	so->all = o->all;
	so->kernel = o->kernel;
	so->user = o->user;
	so->inherit = o->inherit;
	so->pids = o->pids;
	so->npids = o->npids;
	so->comms = (const char *const *)o->comms;
	so->ncomms = o->ncomms;
	so->btf_path = o->btf_path;
	so->unwind = o->unwind;
	so->query_labels = o->query_labels;
	so->require_targets = true;
	so->split = SESSION_ONE_PROFILE;
	so->prewarm = !o->all; /* not every binary of the machine */
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

/* The summary line on a terminal or with -v. */
static void summary(const struct record_opts *o, const struct session_stats *st)
{
	uint64_t frames = st->built.user_frames + st->built.kernel_frames;
	uint64_t resolved = st->built.user_frames_resolved + st->built.kernel_frames_resolved;

	int stat = sampler_type_stat(o->type);
	char counted[64] = "", what[64], faulted[32] = "";

	/* Every sample BPF counted is in the profile; say so when not. */
	if (stat >= 0 && st->bpf.v[stat] != st->built.samples)
		snprintf(counted, sizeof(counted), "; BPF counted %llu samples",
			 (unsigned long long)st->bpf.v[stat]);
	if (o->type == PTYPE_OFFCPU)
		snprintf(what, sizeof(what), "%llu waits (%.3f s off the CPU)",
			 (unsigned long long)st->built.samples, st->built.offcpu_ns / 1e9);
	else
		snprintf(what, sizeof(what), "%llu samples", (unsigned long long)st->built.samples);
	if (o->type == PTYPE_FAULTS)
		snprintf(faulted, sizeof(faulted), " (%.1f MiB faulted)",
			 st->built.fault_bytes / 1048576.0);
	fprintf(stderr,
		"ebprof: wrote %s: %s from %lu processes in %.1fs%s, %llu frames "
		"(%.1f%% symbolized), profile written %.0f ms after sampling ended%s%s%s\n",
		strcmp(o->output, "-") ? o->output : "stdout", what, st->processes, st->elapsed_s,
		faulted, (unsigned long long)frames, frames ? 100.0 * resolved / frames : 0.0,
		st->last_flush_ms, counted, st->lost_text[0] ? "; lost: " : "", st->lost_text);
	symbols_summary(st->symbols);
	unwind_summary(st);
	if (st->built.query_samples + st->built.query_gap + st->built.query_lost)
		fprintf(stderr,
			"ebprof: %llu samples ran a statement, %llu between statements, %llu of "
			"unknown text\n",
			(unsigned long long)st->built.query_samples,
			(unsigned long long)st->built.query_gap,
			(unsigned long long)st->built.query_lost);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
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
	int rc = EXIT_RUNTIME, ret;

	ret = parse_args(argc, argv, &o);
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
	snprintf(title, sizeof(title), "ebprof record: %s", ptype_info(o.type)->label);
	rend.title = title;
	if (file_sink_open(o.output, o.format, &rend, &file)) {
		log_error("out of memory");
		goto out;
	}
	session_options(&o, comment, &file, &so);
	/* Debug files missing locally come from debuginfod, as perf does,
	 * fetched while sampling (the session prewarms the symbolizer). */
	syo.debuginfod_urls = o.offline ? NULL : getenv("DEBUGINFOD_URLS");
	syo.debuginfod_cache = getenv("DEBUGINFOD_CACHE_PATH");
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
	if (o.type == PTYPE_FAULTS)
		log_info("sampling at 1 in %ld page faults on %d CPUs%s", o.faults_period,
			 session_ncpus(s), o.duration > 0 ? "" : " until stopped");
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
		summary(&o, &st);
	if (st.built.samples == 0)
		log_warn("no samples were recorded%s",
			 o.type == PTYPE_CPU ? ": the targets used no CPU" : "");
	rc = EXIT_OK;
out:
	session_close(s);
	sym_free(sym);
	sink_close(file, 0);
	free(o.pids);
	args_free_list(o.comms, o.ncomms);
	return rc;
}
