// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "builder.h"
#include "cli.h"
#include "ebprof/symbolizer.h"
#include "folded.h"
#include "log.h"
#include "pprof.h"
#include "processes.h"
#include "record.h"
#include "sampler.h"
#include "targets.h"

enum out_format { FORMAT_PPROF, FORMAT_FOLDED };

struct record_opts {
	long frequency;
	double duration; /* 0: until interrupted */
	uint32_t *pids;
	size_t npids;
	bool all;
	char **comms;
	size_t ncomms;
	const char *output;
	enum out_format format;
	bool kernel, user, inherit;
	const char *btf_path;
	int verbose;
};

struct record_state {
	struct record_opts *opts;
	struct proc_registry *procs;
	unsigned long processes_sampled;
	unsigned long events;
	long live_targets; /* -p: seeded + forked - exited */
};

/* Set by the SIGINT/SIGTERM handler, read by the loop. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

void cmd_record_usage(void)
{
	printf("Usage: ebprof record [OPTIONS]\n"
	       "Sample CPU stacks of processes and write one symbolized profile.\n"
	       "\n"
	       "Targets (default: every process named postgres or postmaster, by comm or\n"
	       "executable name, and every process forked from one of them):\n"
	       "  -p, --pid PID[,PID]    these processes (and their threads and children)\n"
	       "  -a, --all              every process, kernel threads included\n"
	       "      --comm NAME[,NAME] match these names instead of postgres,postmaster\n"
	       "      --no-inherit       do not follow processes forked by targets\n"
	       "\n"
	       "Sampling:\n"
	       "  -F, --frequency HZ     samples per second per CPU, 1..10000 (default 99)\n"
	       "  -d, --duration SECS    stop after SECS seconds (default: until Ctrl-C)\n"
	       "      --no-kernel        do not collect kernel stacks\n"
	       "      --no-user          do not collect user stacks\n"
	       "      --btf PATH         vmlinux BTF file for kernels without /sys/kernel/btf\n"
	       "\n"
	       "Output:\n"
	       "  -o, --output PATH      output file, '-' for stdout (default profile.pb.gz,\n"
	       "                         or profile.folded with --format folded)\n"
	       "      --format FORMAT    pprof (gzip-compressed, default) or folded\n"
	       "  -v, --verbose          more messages (repeat for debug)\n"
	       "  -h, --help             this help\n"
	       "\n"
	       "Exit status: 0 success, 1 runtime failure (privileges, kernel), 2 bad input.\n"
	       "Open a profile with: go tool pprof -http=: profile.pb.gz\n");
}

static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_COMM = 256, OPT_FORMAT, OPT_NO_KERNEL, OPT_NO_USER, OPT_NO_INHERIT, OPT_BTF };
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
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int c;

	o->frequency = 99;
	o->kernel = o->user = o->inherit = true;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":F:d:p:ao:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (cli_parse_int(optarg, "frequency", 1, 10000, &o->frequency, err,
					  sizeof(err)))
				goto bad;
			break;
		case 'd':
			if (cli_parse_seconds(optarg, "duration", &o->duration, err, sizeof(err)))
				goto bad;
			break;
		case 'p':
			free(o->pids);
			if (cli_parse_pids(optarg, &o->pids, &o->npids, err, sizeof(err)))
				goto bad;
			break;
		case 'a':
			o->all = true;
			break;
		case OPT_COMM:
			cli_free_list(o->comms, o->ncomms);
			o->comms = NULL;
			if (cli_parse_names(optarg, &o->comms, &o->ncomms, err, sizeof(err)))
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
			if (!strcmp(optarg, "pprof")) {
				o->format = FORMAT_PPROF;
			} else if (!strcmp(optarg, "folded")) {
				o->format = FORMAT_FOLDED;
			} else {
				snprintf(err, sizeof(err),
					 "unknown format '%s': use pprof or folded", optarg);
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
		case 'v':
			o->verbose++;
			break;
		case 'h':
			cmd_record_usage();
			exit(EXIT_OK);
		case ':':
			snprintf(err, sizeof(err), "option %s needs a value", argv[optind - 1]);
			goto bad;
		default:
			snprintf(err, sizeof(err), "unknown option '%s' (see ebprof record --help)",
				 argv[optind - 1]);
			goto bad;
		}
	}
	if (optind < argc) {
		snprintf(err, sizeof(err), "unexpected argument '%s' (see ebprof record --help)",
			 argv[optind]);
		goto bad;
	}
	if (o->all && (o->npids || o->ncomms)) {
		snprintf(err, sizeof(err), "-a/--all cannot be combined with -p or --comm");
		goto bad;
	}
	if (!o->kernel && !o->user) {
		snprintf(err, sizeof(err), "--no-kernel and --no-user leave nothing to record");
		goto bad;
	}
	if (!o->output)
		o->output = o->format == FORMAT_FOLDED ? "profile.folded" : "profile.pb.gz";
	if (cli_check_output(o->output, err, sizeof(err)))
		goto bad;
	return 0;
bad:
	log_error("%s", err);
	return -EINVAL;
}

static void handle_event(const struct ebprof_event *e, void *ctx)
{
	struct record_state *st = ctx;
	int err;

	st->events++;
	switch (e->type) {
	case EVENT_FIRST:
		st->processes_sampled++;
		err = procs_snapshot(st->procs, e->pid, false);
		if (err)
			log_debug("no maps snapshot of pid %u: %s", e->pid, strerror(-err));
		break;
	case EVENT_FORK:
		procs_on_fork(st->procs, e->pid, e->ppid);
		st->live_targets++;
		break;
	case EVENT_EXEC:
		procs_on_exec(st->procs, e->pid);
		break;
	case EVENT_EXIT:
		procs_on_exit(st->procs, e->pid);
		st->live_targets--;
		break;
	}
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int64_t now_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Seed the BPF target map; returns the number of targets or -errno. */
static int seed_targets(struct sampler *s, struct record_state *st, char *err, size_t errlen)
{
	static const char *const default_comms[] = { "postgres", "postmaster" };
	struct record_opts *o = st->opts;
	struct target_rules rules = { 0 };
	uint32_t *tgids = NULL;
	size_t n = 0;
	int ret;

	for (size_t i = 0; i < o->npids; i++) {
		char path[64];
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (stat(path, &sb)) {
			snprintf(err, errlen, "no such process: %u", o->pids[i]);
			return -ESRCH;
		}
	}
	rules.pids = o->pids;
	rules.npids = o->npids;
	if (!o->npids) {
		rules.comms = o->ncomms ? (const char *const *)o->comms : default_comms;
		rules.ncomms = o->ncomms ? o->ncomms : 2;
	}
	rules.descendants = o->inherit;
	ret = targets_scan(&rules, &tgids, &n);
	if (ret) {
		snprintf(err, errlen, "cannot scan /proc: %s", strerror(-ret));
		return ret;
	}
	if (!n) {
		if (o->npids)
			snprintf(err, errlen, "none of the given processes exists any more");
		else
			snprintf(err, errlen,
				 "no target process found: no process named %s; use -p, --comm or -a",
				 o->ncomms ? "as given by --comm" : "postgres or postmaster");
		free(tgids);
		return -ESRCH;
	}
	for (size_t i = 0; i < n; i++) {
		ret = sampler_add_target(s, tgids[i]);
		if (ret) {
			snprintf(err, errlen, "cannot add target %u: %s", tgids[i], strerror(-ret));
			free(tgids);
			return ret;
		}
		/* Snapshot now: cheap for a handful of targets, and their
		 * children inherit it even if they exit before we look. */
		procs_snapshot(st->procs, tgids[i], false);
	}
	free(tgids);
	return (int)n;
}

/*
 * Warm the symbolizer while sampling runs: kallsyms and the binaries the
 * targets map (their symbol tables are built on the first lookup), so what
 * is left after sampling is resolving addresses. Not for -a: every binary
 * of the machine is not worth it.
 */
static void prewarm_symbols(struct symbolizer *sym, struct proc_registry *procs, bool kernel)
{
	struct proc_info *pi;
	struct sym_frame f[8];

	if (kernel)
		sym_kernel_resolve(sym, 0, f); /* loads kallsyms; the answer does not matter */
	for (size_t it = 0; (pi = procs_next(procs, &it));) {
		for (size_t i = 0; pi->maps && i < pi->maps->n; i++) {
			const struct map_entry *e = &pi->maps->entries[i];
			struct sym_binary bin = { e->path, (int)pi->pid, e->start, e->end, e->dev,
						  e->inode };
			struct sym_elf *elf;

			if (e->kind != MAPPING_FILE || sym_elf_get(sym, &bin, &elf))
				continue;
			sym_elf_resolve(sym, elf, e->offset, f, 8);
			sym_elf_put(sym, elf);
		}
	}
}

static void progress(double elapsed, const struct sampler_stats *ss, unsigned long procs,
		     bool final)
{
	fprintf(stderr, "\r\033[Kebprof: recording %.1fs, %llu samples, %lu processes%s", elapsed,
		(unsigned long long)ss->v[STAT_SAMPLES], procs, final ? "\n" : "");
	fflush(stderr);
}

/* "lost: 3 kernel stack collisions, ..." or "" when nothing was lost. */
static void loss_summary(const struct sampler_stats *ss, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = STAT_SAMPLES + 1; i < STAT_MAX; i++) {
		if (!ss->v[i])
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%llu %s",
				off ? ", " : "", (unsigned long long)ss->v[i],
				sampler_stat_name(i));
	}
}

static int write_output(const struct record_opts *o, struct profile *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (o->format == FORMAT_PPROF) {
		ret = pprof_encode(p, true, &buf, &len);
	} else {
		char *text = NULL;
		FILE *mem = open_memstream(&text, &len);

		if (!mem)
			return -errno;
		ret = folded_write(p, 0, mem);
		if (fclose(mem) && !ret)
			ret = -EIO;
		buf = (uint8_t *)text;
	}
	if (!ret)
		ret = write_file_atomic(o->output, buf, len);
	free(buf);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct record_state st = { .opts = &o };
	const char *comms_default[] = { "postgres", "postmaster" };
	struct sampler_opts sopts = { 0 };
	struct sampler_stats ss = { 0 };
	struct builder_opts bopts = { 0 };
	struct builder_stats bs;
	struct symbolizer *sym = NULL;
	struct sampler *s = NULL;
	struct builder *b = NULL;
	struct profile *prof = NULL;
	struct sigaction sa = { 0 };
	bool tty = isatty(STDERR_FILENO);
	double start, elapsed, last_progress = 0, t_end, t_written;
	int64_t wall_start;
	char err[512], line[512];
	int rc = EXIT_RUNTIME, ret;

	if (parse_args(argc, argv, &o)) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (o.verbose)
		log_set_level(o.verbose > 1 ? LOG_DEBUG : LOG_INFO);

	ret = procs_new(&st.procs);
	if (!ret)
		ret = sym_new(&(struct sym_opts){ 0 }, &sym);
	if (ret) {
		log_error("cannot initialize: %s", strerror(-ret));
		goto out;
	}

	sopts.frequency = (int)o.frequency;
	sopts.all = o.all;
	sopts.kernel = o.kernel;
	sopts.user = o.user;
	sopts.follow_forks = o.inherit;
	if (!o.all && !o.npids) {
		sopts.comms = o.ncomms ? (const char *const *)o.comms : comms_default;
		sopts.ncomms = o.ncomms ? o.ncomms : 2;
	}
	sopts.btf_path = o.btf_path;
	ret = sampler_open(&sopts, handle_event, &st, &s, err, sizeof(err));
	if (!ret)
		ret = sampler_attach_tracepoints(s, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		goto out;
	}
	if (!o.all) {
		ret = seed_targets(s, &st, err, sizeof(err));
		if (ret < 0) {
			log_error("%s", err);
			rc = ret == -ESRCH ? EXIT_USAGE : EXIT_RUNTIME;
			goto out;
		}
		log_info("following %d processes", ret);
		st.live_targets = ret;
	}

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	wall_start = now_wall_ns();
	start = now_mono();
	ret = sampler_start(s, err, sizeof(err));
	if (ret) {
		log_error("%s", err);
		goto out;
	}
	log_info("sampling at %ld Hz on %d CPUs%s", o.frequency, sampler_ncpus(s),
		 o.duration > 0 ? "" : " until Ctrl-C");
	prewarm_symbols(sym, st.procs, o.kernel && !o.all);

	while (!stop_requested) {
		double left = o.duration > 0 ? o.duration - (now_mono() - start) : 1.0;
		int timeout = left > 0.1 ? 100 : (int)(left * 1000);

		if (o.duration > 0 && left <= 0)
			break;
		/* Like perf record -p: done when every target has exited. */
		if (o.npids && st.live_targets <= 0) {
			log_info("all target processes exited");
			break;
		}
		ret = sampler_poll(s, timeout > 0 ? timeout : 0);
		if (ret < 0 && ret != -EINTR) {
			log_error("cannot read process events: %s", strerror(-ret));
			break;
		}
		if (tty && now_mono() - last_progress >= 0.25) {
			last_progress = now_mono();
			sampler_read_stats(s, &ss);
			progress(last_progress - start, &ss, st.processes_sampled, false);
		}
	}
	sampler_stop(s);
	t_end = now_mono();
	elapsed = t_end - start;
	sampler_poll(s, 0); /* events still queued: snapshots before building */
	sampler_read_stats(s, &ss);
	if (tty)
		progress(elapsed, &ss, st.processes_sampled, true);

	bopts.frequency = (int)o.frequency;
	bopts.sym = sym;
	bopts.procs = st.procs;
	bopts.time_nanos = wall_start;
	ret = builder_new(&bopts, &b);
	if (!ret) {
		ret = sampler_drain(s, true, builder_add, b);
		ret = ret < 0 ? ret : 0;
	}
	if (ret) {
		log_error("cannot build the profile: %s", strerror(-ret));
		goto out;
	}
	snprintf(line, sizeof(line), "ebprof %s record: %ld Hz, %.3f s, %llu samples", EBPROF_VERSION,
		 o.frequency, elapsed, (unsigned long long)ss.v[STAT_SAMPLES]);
	builder_comment(b, line);
	loss_summary(&ss, err, sizeof(err));
	if (err[0]) {
		snprintf(line, sizeof(line), "lost: %s", err);
		builder_comment(b, line);
	}
	builder_get_stats(b, &bs);
	ret = builder_finish(b, (int64_t)llround(elapsed * 1e9), &prof);
	if (!ret)
		ret = write_output(&o, prof);
	if (ret) {
		log_error("cannot write %s: %s", o.output, strerror(-ret));
		goto out;
	}
	t_written = now_mono();
	if (tty || o.verbose) {
		fprintf(stderr,
			"ebprof: wrote %s: %llu samples from %lu processes in %.1fs, %llu frames "
			"(%.1f%% symbolized), profile written %.0f ms after sampling ended%s%s\n",
			strcmp(o.output, "-") ? o.output : "stdout",
			(unsigned long long)bs.samples, st.processes_sampled, elapsed,
			(unsigned long long)(bs.user_frames + bs.kernel_frames),
			bs.user_frames + bs.kernel_frames ?
				100.0 * (bs.user_frames_resolved + bs.kernel_frames_resolved) /
					(bs.user_frames + bs.kernel_frames) :
				0.0,
			(t_written - t_end) * 1000, err[0] ? "; lost: " : "", err);
	}
	if (bs.samples == 0)
		log_warn("no samples were recorded: the targets used no CPU");
	rc = EXIT_OK;
out:
	profile_free(prof);
	builder_free(b);
	sampler_close(s);
	sym_free(sym);
	procs_free(st.procs);
	free(o.pids);
	cli_free_list(o.comms, o.ncomms);
	return rc;
}
