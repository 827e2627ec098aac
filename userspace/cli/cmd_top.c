// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof top`: CPU and waits by SQL statement, live (like perf top and
 * pg_top): a session with a CPU and an off-CPU profile per process per
 * refresh interval, summed by top_table.c, drawn in an 80-column
 * terminal, each statement with a line of its time on the CPU against
 * its wait events; a key selects a statement and shows its hottest
 * functions and all its waits. --once prints one plain snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "pipeline/session.h"
#include "top_memory.h"
#include "top_table.h"
#include "util/args.h"
#include "util/log.h"
#include "util/version.h"

struct top {
	struct sink base;
	struct cli_values o;
	struct top_table *table; /* being filled */
	struct top_table *shown; /* the last interval's, rows point into it */
	const struct top_row *rows;
	size_t nrows;
	int64_t total_ns, wait_ns;
	size_t sel;
	bool details, tty, drawn;
	bool waits; /* off-CPU sampled too (not --no-waits, and the kernel lets it) */
	int ncpus;
	struct top_memory mem, mem_shown; /* backends by private memory */
};

static atomic_int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

const struct cli_command cli_top = {
	.id = CLI_TOP,
	.name = "top",
	.synopsis = "[OPTIONS]",
	.about = "CPU and waits by SQL statement, refreshed every 2 s: each normalized\n"
		 "statement with its share of the CPU, backends, database, user and query id,\n"
		 "and its time (CPU + off-CPU, summed over backends) split into CPU and its\n"
		 "top wait events (Lock:transactionid, IO:DataFileRead, ..., or the state:\n"
		 "sleeping, disk, runnable), most time first. j/k or the arrows select a\n"
		 "statement, Enter shows its hottest functions and all its waits, q quits.\n"
		 "The targets are every postgres process unless -p or --comm says otherwise.\n",
	.epilog = "Exit status: 0 success, 1 runtime failure (privileges, kernel), 2 bad input.\n",
};

static int top_write(struct sink *k, const struct sink_profile *r)
{
	struct top *t = (struct top *)k;

	if (ptype_of_record(r->type) == ptype_info(PTYPE_MEMORY))
		return top_memory_add(&t->mem, r);
	return top_table_add(t->table, r);
}

static const struct sink_ops top_ops = { .kind = "top", .write = top_write };

static void term_size(int *cols, int *lines)
{
	struct winsize ws;

	*cols = 80;
	*lines = 24;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40 && ws.ws_row >= 10) {
		*cols = ws.ws_col;
		*lines = ws.ws_row;
	}
}

/* s cut to width columns (bytes of ASCII; a cut UTF-8 character is not
 * printed). */
static void put_cut(const char *s, int width)
{
	int n = (int)strlen(s);

	if (n > width) {
		n = width > 1 ? width - 1 : 0;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		printf("%.*s~", n, s);
		return;
	}
	fputs(s, stdout);
}

#define MEMORY_LINES 5		  /* backends by memory under the statements */
#define DETAIL_FUNCS_WITH_WAITS 5 /* functions the detail view lists beside waits */
#define DETAIL_MIN_WAITS 5	  /* waits it lists at least (more if they fit) */

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "wall 3.52s  cpu 2%  Lock:transactionid 97%  ...": the statement's time,
 * CPU and the top waits' shares of it. */
static void put_wait_line(const struct top_row *r, int cols)
{
	int64_t wall = r->cpu_ns + r->wait_ns;
	char line[512];
	size_t n;

	n = (size_t)snprintf(line, sizeof(line), "wall %.2fs  cpu %.0f%%", wall / 1e9,
			     pct(r->cpu_ns, wall));
	for (size_t i = 0; i < r->nwaits && i < TOP_ROW_WAITS && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "  %s %.0f%%", r->waits[i].name,
				      pct(r->waits[i].ns, wall));
	if (r->nwaits > TOP_ROW_WAITS && n < sizeof(line))
		snprintf(line + n, sizeof(line) - n, "  +%zu", r->nwaits - TOP_ROW_WAITS);
	fputs("          ", stdout);
	put_cut(line, cols - 10);
	putchar('\n');
}

static void put_row(const struct top *t, const struct top_row *r, bool selected, int cols)
{
	char who[160];

	snprintf(who, sizeof(who), "%zu backend%s  %s%s%s%s%s", r->backends,
		 r->backends == 1 ? "" : "s", r->database, *r->user ? "/" : "", r->user,
		 *r->query_id ? "  query_id " : "", r->query_id);
	printf("%s%c%6.1f%%  ", selected && t->tty ? "\033[7m" : "", selected ? '>' : ' ',
	       pct(r->cpu_ns, t->total_ns));
	put_cut(who, cols - 10);
	printf("%s\n          ", selected && t->tty ? "\033[0m" : "");
	put_cut(r->query, cols - 10);
	putchar('\n');
	if (t->waits)
		put_wait_line(r, cols);
}

static void put_funcs(const struct top_row *r, int cols, size_t max)
{
	printf("  %6s %6s  hottest functions of the statement\n", "self%", "total%");
	for (size_t i = 0; i < r->nfuncs && i < max; i++) {
		printf("  %6.1f %6.1f  ", pct(r->funcs[i].self_ns, r->cpu_ns),
		       pct(r->funcs[i].total_ns, r->cpu_ns));
		put_cut(r->funcs[i].name, cols - 18);
		putchar('\n');
	}
	if (!r->nplpgsql)
		return;
	printf("  %6s %6s  its PL/pgSQL functions at their lines\n", "", "total%");
	for (size_t i = 0; i < r->nplpgsql && i < max; i++) {
		printf("  %6s %6.1f  ", "", pct(r->plpgsql[i].total_ns, r->cpu_ns));
		put_cut(r->plpgsql[i].name, cols - 18);
		putchar('\n');
	}
}

/* Every wait of the statement (the detail view). */
static void put_waits(const struct top_row *r, int cols, size_t max)
{
	int64_t wall = r->cpu_ns + r->wait_ns;

	printf("  %6s %8s  time of the statement (%.2f s)\n", "share", "secs", wall / 1e9);
	printf("  %5.1f%% %8.3f  cpu\n", pct(r->cpu_ns, wall), r->cpu_ns / 1e9);
	for (size_t i = 0; i < r->nwaits && i < max; i++) {
		printf("  %5.1f%% %8.3f  ", pct(r->waits[i].ns, wall), r->waits[i].ns / 1e9);
		put_cut(r->waits[i].name, cols - 19);
		putchar('\n');
	}
	if (r->nwaits > max)
		printf("  (%zu more)\n", r->nwaits - max);
}

/* The backends with the most private memory, their largest context and
 * statement: max lines under a heading. */
static void put_memory(const struct top *t, int cols, size_t max)
{
	char line[512];

	if (!t->mem_shown.n)
		return;
	printf("\n  %-7s %-18s %9s  %s\n", "PID", "BACKEND", "PRIVATE", "LARGEST CONTEXT");
	for (size_t i = 0; i < t->mem_shown.n && i < max; i++) {
		const struct top_mem_row *r = &t->mem_shown.rows[i];

		snprintf(line, sizeof(line), "  %-7u %-18.18s %7.1fMi  %s %.1fMi of %.1fMi%s%s",
			 r->pid, r->backend_type[0] ? r->backend_type : "-", r->rss / 1048576.0,
			 r->largest, r->largest_bytes / 1048576.0, r->total / 1048576.0,
			 r->query[0] ? "  " : "", r->query);
		put_cut(line, cols);
		putchar('\n');
	}
}

static void draw(struct top *t)
{
	int cols, lines;
	size_t fit, shown = 0;
	int detail_lines, row_lines, nfuncs, nwaits, avail;
	char when[32];
	time_t now = time(NULL);

	term_size(&cols, &lines);
	if (!t->tty)
		cols = 80;
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	else if (t->drawn)
		putchar('\n');
	if (t->waits)
		printf("ebprof top %s %lds: CPU %.2fs, waits %.2fs, %ld Hz, %d CPUs, %zu "
		       "statements\n",
		       when, t->o.delay, t->total_ns / 1e9, t->wait_ns / 1e9, t->o.frequency,
		       t->ncpus, t->nrows);
	else
		printf("ebprof top %s: %.2f CPU s in %lds at %ld Hz on %d CPUs, %zu statements\n",
		       when, t->total_ns / 1e9, t->o.delay, t->o.frequency, t->ncpus, t->nrows);
	/* the detail view: its functions, and its waits (as many as fit
	 * beside one row) */
	row_lines = t->waits ? 3 : 2;
	nfuncs = t->waits ? DETAIL_FUNCS_WITH_WAITS : TOP_MAX_FUNCS;
	nwaits = lines - 3 - row_lines - (nfuncs + 2) - 3;
	if (t->sel < t->nrows && (size_t)nwaits > t->rows[t->sel].nwaits)
		nwaits = (int)t->rows[t->sel].nwaits; /* no more than it has */
	if (nwaits < DETAIL_MIN_WAITS)
		nwaits = DETAIL_MIN_WAITS;
	detail_lines = !t->details ? 0 : nfuncs + 2 + (t->waits ? nwaits + 3 : 0);
	if (t->details && t->sel < t->nrows && t->rows[t->sel].nplpgsql) /* and its PL/pgSQL */
		detail_lines += 1 + (int)(t->rows[t->sel].nplpgsql < (size_t)nfuncs
						  ? t->rows[t->sel].nplpgsql
						  : (size_t)nfuncs);
	avail = lines - 3 - detail_lines -
		(t->mem_shown.n
			 ? (int)(t->mem_shown.n < MEMORY_LINES ? t->mem_shown.n : MEMORY_LINES) + 2
			 : 0);
	fit = t->o.rows ? (size_t)t->o.rows
			: (size_t)(avail > row_lines ? avail : row_lines) / (size_t)row_lines;
	if (!t->tty && !t->o.rows)
		fit = 20;
	if (t->sel >= t->nrows)
		t->sel = t->nrows ? t->nrows - 1 : 0;
	for (size_t i = t->sel >= fit ? t->sel - fit + 1 : 0; i < t->nrows && shown < fit;
	     i++, shown++) {
		put_row(t, &t->rows[i], t->tty && i == t->sel, cols);
		if (!t->tty) {
			put_funcs(&t->rows[i], cols, 5);
			if (t->waits)
				put_waits(&t->rows[i], cols, 10);
		}
	}
	if (t->tty && t->details && t->nrows) {
		putchar('\n');
		put_funcs(&t->rows[t->sel], cols, (size_t)nfuncs);
		if (t->waits)
			put_waits(&t->rows[t->sel], cols, (size_t)nwaits);
	}
	if (!t->nrows)
		puts(t->waits ? "  (no samples: the targets neither ran nor waited)"
			      : "  (no samples: the targets used no CPU)");
	put_memory(t, cols, t->tty ? MEMORY_LINES : 10);
	fflush(stdout);
	t->drawn = true;
}

/* The interval is over: its table becomes what is shown. */
static void on_interval(const struct session_interval *iv, void *ctx)
{
	struct top *t = ctx;

	struct top_table *done = t->table;

	(void)iv;
	t->table = t->shown;
	t->shown = done;
	top_table_reset(t->table);
	if (t->mem.n || t->mem_shown.n) { /* memory profiles come per interval */
		struct top_memory m = t->mem_shown;

		t->mem_shown = t->mem;
		t->mem = m;
		top_memory_reset(&t->mem);
		top_memory_sort(&t->mem_shown);
	}
	t->wait_ns = top_table_wait_ns(t->shown);
	if (top_table_rows(t->shown, &t->rows, &t->nrows, &t->total_ns)) {
		log_error("out of memory");
		t->nrows = 0;
		return;
	}
	if (!t->o.once)
		draw(t);
}

/* Keys, between intervals. */
static void on_progress(const struct session_progress *p, void *ctx)
{
	struct top *t = ctx;
	char k[8];
	ssize_t n;

	(void)p;
	if (!t->tty)
		return;
	while ((n = read(STDIN_FILENO, k, sizeof(k))) > 0) {
		if (k[0] == 'q')
			atomic_store(&stop_requested, 1);
		else if (k[0] == 'j' || (n >= 3 && k[0] == '\033' && k[2] == 'B'))
			t->sel += t->sel + 1 < t->nrows;
		else if (k[0] == 'k' || (n >= 3 && k[0] == '\033' && k[2] == 'A'))
			t->sel -= t->sel > 0;
		else if (k[0] == '\n' || k[0] == '\r')
			t->details = !t->details;
		else
			continue;
		draw(t);
	}
}

static void session_options(struct top *t, struct sink **sink, struct session_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->frequency = (int)t->o.frequency;
	so->types = PTYPE_BIT(PTYPE_CPU) | (t->waits ? PTYPE_BIT(PTYPE_OFFCPU) : 0) |
		    PTYPE_BIT(PTYPE_MEMORY);
	so->memory_min_rss = 4u << 20; /* an idle backend holds 2-3 MiB */
	so->offcpu_pct = (uint32_t)t->o.offcpu_pct;
	so->offcpu_period_ns = (uint64_t)t->o.offcpu_period_us * 1000;
	so->kernel = so->user = so->inherit = true;
	so->pids = t->o.pids;
	so->npids = t->o.npids;
	so->comms = (const char *const *)t->o.comms;
	so->ncomms = t->o.ncomms;
	so->require_targets = true;
	so->split = SESSION_PER_PROCESS;
	so->interval_s = t->o.once ? 0 : (int)t->o.delay;
	so->query_labels = QUERY_LABELS_NORMALIZED;
	so->sinks = sink;
	so->nsinks = 1;
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .base.ops = &top_ops };
	struct sink *sink = &t.base;
	struct session_opts so;
	struct session_run_opts ro = { 0 };
	struct session *s = NULL;
	struct sigaction sa = { 0 };
	struct termios saved, raw;
	bool raw_mode = false;
	char err[512] = "";
	int rc = EXIT_RUNTIME, ret;

	ret = cli_parse(&cli_top, argc, argv, &t.o);
	if (ret) {
		rc = ret > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	t.waits = !t.o.no_waits;
	t.tty = !t.o.once && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (top_table_new(&t.table) || top_table_new(&t.shown)) {
		log_error("out of memory");
		goto out;
	}
	top_table_include_idle(t.table, t.o.idle);
	top_table_include_idle(t.shown, t.o.idle);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	session_options(&t, &sink, &so);
	ret = session_open(&so, &s, err, sizeof(err));
	if (ret && ret != -ESRCH && t.waits) {
		log_warn("no off-CPU sampling here (%s): CPU only, as with --no-waits", err);
		t.waits = false;
		session_options(&t, &sink, &so);
		ret = session_open(&so, &s, err, sizeof(err));
	}
	if (ret) {
		log_error("%s", err);
		rc = ret == -ESRCH ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	t.ncpus = session_ncpus(s);
	if (t.tty && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		raw_mode = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		fputs("\033[?25l", stdout); /* no cursor */
	}
	if (t.o.once)
		fprintf(stderr, "ebprof top: sampling %ld s%s\n", t.o.delay,
			t.waits ? ", CPU and waits" : "");
	ro.duration_s = t.o.once ? (double)t.o.delay : 0;
	ro.stop = &stop_requested;
	ro.on_interval = on_interval;
	ro.on_progress = on_progress;
	ro.ctx = &t;
	ret = session_run(s, &ro, NULL, err, sizeof(err));
	if (!ret)
		ret = session_finish(s, &ro);
	if (ret) {
		log_error("%s", err);
		goto out;
	}
	if (t.o.once)
		draw(&t);
	rc = EXIT_OK;
out:
	if (raw_mode) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		fputs("\033[?25h\n", stdout);
	}
	session_close(s);
	top_table_free(t.table);
	top_table_free(t.shown);
	top_memory_free(&t.mem);
	top_memory_free(&t.mem_shown);
	cli_values_free(&t.o);
	return rc;
}
