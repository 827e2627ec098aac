// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's life: its configuration makes the sinks (sinks.c) and a
 * session (pipeline/session.h) with a profile per process per interval;
 * the HTTP API serves ad hoc profiles and /metrics beside it. SIGHUP
 * flushes the running interval and starts again with the re-read
 * configuration (a bad one is reported and the running one kept, as is
 * one that does not start; an unchanged one restarts nothing);
 * SIGTERM/SIGINT flush the last interval, let the remotes drain briefly,
 * and exit 0.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "http/http.h"
#include "membudget.h"
#include "metrics.h"
#include "sinks.h"
#include "util/args.h"
#include "util/log.h"
#include "util/own_pages.h"
#include "util/version.h"

#define REMOTE_DRAIN_S 5.0
#define RELOAD_DRAIN_S 1.0

struct agent {
	struct agent_config cfg;
	int argc;
	char **argv;
	struct symbolizer *sym; /* kept across reloads: a warm cache */
	struct session *s;
	struct sink *sinks[AGENT_MAX_SINKS];
	size_t nsinks;
	struct http_server *http;
	struct agent_metrics metrics;
	struct membudget budget;     /* memory-budget, over reloads */
	struct session_run_opts run; /* until SIGTERM/SIGINT/SIGHUP, a line per interval */
	char comment[160];
};

/* Set by the signal handlers, read by the session's loop. */
static atomic_int stop_flag;
static volatile sig_atomic_t reload_requested, stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
	atomic_store(&stop_flag, 1);
}

static void on_reload(int sig)
{
	(void)sig;
	reload_requested = 1;
	atomic_store(&stop_flag, 1);
}

/* The memory budget at an interval's end (agent/membudget.h): over it,
 * the symbolizer drops what no process pins, keeping the resolutions of
 * the addresses of this interval (sym_release_cold()); within it, the
 * interval only ends the symbolizer's round of use. */
static void keep_budget(struct agent *a)
{
	struct membudget *b = &a->budget;
	bool was = b->symbols_degraded;
	uint64_t rss, peak, before;
	unsigned todo;

	b->budget = (uint64_t)a->cfg.memory_budget;
	if (membudget_read_status("/proc/self/status", &rss, &peak)) {
		sym_next_round(a->sym);
		return;
	}
	b->peak = peak;
	before = rss;
	todo = membudget_decide(b, rss);
	if (todo & MB_RELEASE_SYMBOLS) {
		size_t n = sym_release_cold(a->sym);

		malloc_trim(0);
		if (!membudget_read_status("/proc/self/status", &rss, &peak))
			membudget_after(b, rss);
		if (!was)
			log_warn("memory budget: %.1f MiB resident, over memory-budget %.1f MiB: "
				 "symbol data of %zu binaries dropped, read again when needed, "
				 "the resolutions of this interval's addresses kept (%.1f MiB "
				 "now%s)",
				 (double)before / 1048576.0, (double)b->budget / 1048576.0, n,
				 (double)rss / 1048576.0, b->over_budget ? ", still over" : "");
	} else {
		sym_next_round(a->sym);
		if (was)
			log_info("memory budget: %.1f MiB resident, within memory-budget %.1f MiB "
				 "again",
				 (double)rss / 1048576.0, (double)b->budget / 1048576.0);
	}
	agent_metrics_budget(&a->metrics, b);
}

/* The clean pages of the agent's own code and read-only data given back
 * (util/own_pages.h): after the start, what only the start used (the
 * loader's relocation of each library, the embedded BPF object, the TLS
 * libraries libmicrohttpd initializes); after a flush, what only the
 * flush used. What the agent uses again faults back in (minor faults:
 * bench/results/fp-start-*.md measured how much). */
static void give_back_pages(const char *when)
{
	struct own_pages_stats st;

	if (!own_pages_drop(&st))
		log_debug("%s: %.1f MiB of clean file pages of %zu mappings given back (%zu "
			  "with copied-on-write pages kept)",
			  when, st.kib / 1024.0, st.mappings, st.skipped);
}

/* One line per interval, and the metrics. */
static void on_interval(const struct session_interval *iv, void *ctx)
{
	struct agent *a = ctx;
	char when[32], sinks[512] = "", one[128];
	size_t off = 0;
	time_t t = (time_t)(iv->start_ns / 1000000000LL);

	agent_metrics_interval(&a->metrics, iv);
	/* What the interval freed (its builders, the state of processes that
	 * are gone) back to the system: glibc keeps freed heap it cannot
	 * return from the top, and a backend per connection frees a lot. */
	malloc_trim(0);
	keep_budget(a);
	give_back_pages("interval's end");
	agent_metrics_snapshot(&a->metrics, a->s ? session_nprocs(a->s) : 0, a->sinks, a->nsinks,
			       a->sym, iv->end_ns);
	for (size_t i = 0; i < a->nsinks && off < sizeof(sinks); i++) {
		sink_describe(a->sinks[i], one, sizeof(one));
		if (one[0])
			off += (size_t)snprintf(sinks + off, sizeof(sinks) - off, "; %s", one);
	}
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	log_info("interval from %s (%.0f s): %llu processes, %llu samples, %s%s; %llu profiles "
		 "written, %llu failed%s",
		 when, (iv->end_ns - iv->start_ns) / 1e9, (unsigned long long)iv->processes,
		 (unsigned long long)iv->samples, iv->lost_text[0] ? "lost " : "nothing lost",
		 iv->lost_text, (unsigned long long)iv->written, (unsigned long long)iv->failed,
		 sinks);
}

static int start_http(struct agent *a)
{
	struct http_opts ho = { 0 };
	char err[512];

	if (!a->cfg.http_listen || !a->cfg.http_listen[0])
		return 0;
	ho.listen = a->cfg.http_listen;
	ho.comms = (const char *const *)a->cfg.comms;
	ho.ncomms = a->cfg.ncomms;
	ho.pids = a->cfg.pids;
	ho.npids = a->cfg.npids;
	ho.cgroups = (const char *const *)a->cfg.cgroups;
	ho.ncgroups = a->cfg.ncgroups;
	ho.kernel = !a->cfg.no_kernel;
	ho.user = !a->cfg.no_user;
	ho.btf = a->cfg.btf;
	ho.unwind = a->cfg.unwind;
	ho.unwind_budget = (uint64_t)a->cfg.unwind_budget;
	ho.query_labels = a->cfg.query_labels;
	ho.session = a->s; /* ad hoc CPU profiles from its sampling */
	ho.no_plpgsql = a->cfg.no_plpgsql;
	ho.metrics = agent_metrics_write;
	ho.metrics_ctx = &a->metrics;
	if (http_start(&ho, &a->http, err, sizeof(err))) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

/* Sinks, session and HTTP API from a->cfg. 0, or an exit code. */
static int start(struct agent *a)
{
	struct session_opts so = { 0 };
	char err[512], where[512];

	log_set_level(a->cfg.log_level);
	if (agent_sinks_open(&a->cfg, a->sinks, &a->nsinks))
		return EXIT_RUNTIME;
	snprintf(a->comment, sizeof(a->comment), "ebprof %s agent: %d Hz, interval %d s",
		 ebprof_version, a->cfg.frequency, a->cfg.interval);
	so.frequency = a->cfg.frequency;
	so.types = a->cfg.profile_types;
	so.offcpu_min_ns = (uint64_t)a->cfg.offcpu_min_us * 1000;
	so.offcpu_pct = (uint32_t)a->cfg.offcpu_ratio;
	so.offcpu_period_ns = (uint64_t)a->cfg.offcpu_period_us * 1000;
	so.offcpu_rate = a->cfg.offcpu_rate;
	so.offcpu_path = a->cfg.offcpu_path;
	so.faults_period = (uint32_t)a->cfg.faults_period;
	so.memory_min_rss = (uint64_t)a->cfg.memory_min_rss;
	so.memory_jump = 2; /* "resident memory doubles since its last snapshot" */
	so.kernel = !a->cfg.no_kernel;
	so.user = !a->cfg.no_user;
	so.btf_path = a->cfg.btf;
	so.unwind = a->cfg.unwind;
	so.unwind_budget = (uint64_t)a->cfg.unwind_budget;
	so.inherit = true;
	so.pids = a->cfg.pids;
	so.npids = a->cfg.npids;
	so.comms = (const char *const *)a->cfg.comms;
	so.ncomms = a->cfg.ncomms;
	so.cgroups = (const char *const *)a->cfg.cgroups;
	so.ncgroups = a->cfg.ncgroups;
	so.split = SESSION_PER_PROCESS;
	so.interval_s = a->cfg.interval;
	so.group_short_lived = a->cfg.group_short_lived;
	so.group_min_samples = a->cfg.group_min_samples;
	so.query_labels = a->cfg.query_labels;
	so.no_plpgsql = a->cfg.no_plpgsql;
	so.db_load = true; /* /metrics' ebprof_db_load_* */
	so.service = a->cfg.service;
	so.comment = a->comment;
	so.sinks = a->sinks;
	so.nsinks = a->nsinks;
	so.sym = a->sym;
	if (session_open(&so, &a->s, err, sizeof(err))) {
		log_error("%s", err);
		return EXIT_RUNTIME;
	}
	agent_metrics_snapshot(&a->metrics, session_nprocs(a->s), a->sinks, a->nsinks, a->sym, 0);
	if (start_http(a))
		return EXIT_RUNTIME;
	give_back_pages("started");
	agent_sinks_describe(&a->cfg, where, sizeof(where));
	log_info("sampling at %d Hz on %d CPUs, a profile per process every %d s into %s",
		 a->cfg.frequency, session_ncpus(a->s), a->cfg.interval, where);
	return 0;
}

/* Stop sampling, flush what was counted, close the sinks. */
static void stop(struct agent *a, double drain_s)
{
	/* A running ad hoc profile answers with what it has: one taken from
	 * the session is ended by its thread, this one, before the server's
	 * threads are waited for. */
	if (a->s)
		session_taps_end(a->s, true);
	if (a->http)
		http_stop(a->http);
	a->http = NULL;
	if (a->s) {
		session_finish(a->s, &a->run);
		session_close(a->s);
		a->s = NULL;
	}
	sink_close_all(a->sinks, a->nsinks, drain_s);
	a->nsinks = 0;
}

/* The symbolizer of a configuration: debuginfod-* keys, else
 * $DEBUGINFOD_URLS, unless offline. */
static int new_symbolizer(const struct agent_config *c, struct symbolizer **out)
{
	const char *urls = c->debuginfod_urls ? c->debuginfod_urls : getenv("DEBUGINFOD_URLS");
	struct sym_opts o = {
		.debuginfod_urls = c->offline ? NULL : urls,
		.debuginfod_cache = c->debuginfod_cache,
		.debuginfod_cache_bytes = (uint64_t)c->debuginfod_cache_size,
		.debuginfod_timeout_ms = c->debuginfod_timeout * 1000,
		/* beside the unwind tables' cache (sampling/unwind_tables.c) */
		.plain_debug_dir = "/var/cache/ebprof/debug",
	};

	return sym_new(&o, out);
}

/* SIGHUP: the configuration again, from the file and the same flags. 0 to
 * go on with the new one, 1 to go on with the old one. */
static int reread(struct agent *a, struct agent_config *fresh)
{
	char err[512];
	int ret = config_defaults(fresh);

	if (!ret)
		ret = config_parse_args(fresh, a->argc, a->argv, err, sizeof(err));
	if (ret) {
		log_error("configuration not reloaded: %s", ret == -ENOMEM ? "out of memory" : err);
		config_free(fresh);
		return 1;
	}
	return 0;
}

/*
 * The handlers, and the signals blocked: they are let in only while the
 * main thread waits in session_run(). A signal that arrives while a BPF
 * program is being verified makes the kernel give up on it (EAGAIN, which
 * libbpf retries five times: a SIGHUP storm outlasts that) and the agent
 * would exit; threads (HTTP, ad hoc profiles that load programs of their
 * own, remotes) inherit the mask and never take them. A signal that came
 * meanwhile waits, and is handled as session_run() begins.
 */
static void handle_signals(sigset_t *mask)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_reload;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, mask, NULL);
}

/* A reload's configuration that did not start: the one that ran before,
 * started again. 0, or an exit code. */
static int start_old(struct agent *a, struct agent_config *old)
{
	log_error("the new configuration did not start: going on with the previous one");
	stop(a, 0);
	config_free(&a->cfg);
	a->cfg = *old;
	memset(old, 0, sizeof(*old));
	return start(a);
}

int agent_run(struct agent_config *cfg, int argc, char **argv)
{
	struct agent a = { .cfg = *cfg, .argc = argc, .argv = argv };
	struct agent_config fresh, old;
	char err[512];
	sigset_t mask;
	int rc, ret;

	memset(cfg, 0, sizeof(*cfg)); /* ours now */
	/* A fixed mmap threshold: glibc's sliding one moves big buffers
	 * (encoded profiles, drained maps) onto the heap after the first is
	 * freed, where they fragment it; and the daemon's few threads share
	 * two arenas rather than one each. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_ARENA_MAX, 2);
	a.run.stop = &stop_flag;
	a.run.on_interval = on_interval;
	a.run.ctx = &a;
	agent_metrics_init(&a.metrics);
	ret = new_symbolizer(&a.cfg, &a.sym);
	if (ret) {
		log_error("cannot initialize: %s", strerror(-ret));
		rc = EXIT_RUNTIME;
		goto out;
	}
	handle_signals(&mask);
	rc = start(&a);
	while (!rc) {
		pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
		ret = session_run(a.s, &a.run, NULL, err, sizeof(err));
		pthread_sigmask(SIG_BLOCK, &mask, NULL);
		if (ret) {
			log_error("%s", err);
			rc = EXIT_RUNTIME;
			break;
		}
		atomic_store(&stop_flag, 0);
		if (stop_requested)
			break;
		if (!reload_requested)
			continue;
		reload_requested = 0;
		if (reread(&a, &fresh))
			continue;
		if (config_equal(&a.cfg, &fresh)) {
			/* a storm of SIGHUPs, or a reload with nothing
			 * edited: sampling goes on untouched */
			log_info("configuration unchanged: nothing to reload");
			config_free(&fresh);
			continue;
		}
		log_info("reloading the configuration");
		stop(&a, RELOAD_DRAIN_S); /* flushes the running interval: nothing is lost */
		if (!config_same_symbols(&a.cfg, &fresh)) {
			struct symbolizer *sym;

			/* a cold cache, but the new servers */
			if (!new_symbolizer(&fresh, &sym)) {
				sym_free(a.sym);
				a.sym = sym;
			}
		}
		old = a.cfg;
		a.cfg = fresh;
		rc = start(&a);
		if (rc)
			rc = start_old(&a, &old);
		config_free(&old);
	}
	if (stop_requested) {
		log_info("stopping: flushing the last interval");
		if (!rc)
			rc = EXIT_OK;
	}
out:
	stop(&a, stop_requested ? REMOTE_DRAIN_S : 0);
	sym_free(a.sym);
	agent_metrics_destroy(&a.metrics);
	config_free(&a.cfg);
	return rc;
}
