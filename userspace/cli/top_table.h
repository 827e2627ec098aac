/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What `ebprof top` shows (cmd_top.c draws it): CPU by normalized
 * statement, summed from the per-process profiles of an interval, with
 * the backends, databases, users and query ids that ran each statement,
 * and each statement's hottest functions (self and total) and PL/pgSQL
 * lines (total: a PL/pgSQL frame has no time of its own). Off-CPU
 * profiles add each statement's time away by wait event ("Lock:
 * transactionid"), or by state ("sleeping", "disk", "runnable") where the
 * backend had set none. Idle waits (a backend waiting for its client with
 * no statement, state idle; a background process in its main loop, wait
 * event type Activity) are left out unless asked for. Samples that ran no
 * statement are one row, "(no statement)".
 */
#ifndef EBPROF_TOP_TABLE_H
#define EBPROF_TOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

#define TOP_MAX_FUNCS 10
#define TOP_MAX_PLPGSQL 5 /* PL/pgSQL lines kept per statement */
#define TOP_ROW_WAITS 4	  /* wait events a statement's line shows */

struct top_wait {
	const char *name; /* "Type:Event", a state, or "Client:ClientRead (idle)" */
	int64_t ns;
};

struct top_func {
	const char *name;
	int64_t self_ns, total_ns;
};

struct top_row {
	const char *query;    /* normalized statement, or "(no statement)" */
	const char *query_id; /* "" when none, "(several)" when more than one */
	const char *database; /* "" when unknown, "(several)" */
	const char *user;     /* likewise */
	int64_t cpu_ns;
	int64_t wait_ns;	      /* off-CPU time counted: the sum of waits */
	const struct top_wait *waits; /* all of them, most time first */
	size_t nwaits;
	size_t backends;		      /* distinct pids */
	struct top_func funcs[TOP_MAX_FUNCS]; /* by self time, most first */
	size_t nfuncs;
	/* PL/pgSQL functions at their lines ("fn(argtypes) line N"), by
	 * total time (self_ns 0: their time is in C frames), most first */
	struct top_func plpgsql[TOP_MAX_PLPGSQL];
	size_t nplpgsql;
};

struct top_table;

int top_table_new(struct top_table **out);
void top_table_free(struct top_table *t);
/* Count idle waits too (default: left out), as "Type:Event (idle)". */
void top_table_include_idle(struct top_table *t, bool on);
/* Forget everything added (a new interval). */
void top_table_reset(struct top_table *t);
/* Add a per-process profile, CPU or off-CPU (its sample type "offcpu"
 * says which; the pid, database and user labels come from r). 0 or
 * -ENOMEM. */
int top_table_add(struct top_table *t, const struct sink_profile *r);
/*
 * The rows, most time (CPU + waits) first, valid until the next call on
 * t; *total_ns: the CPU of every sample added. 0 or -ENOMEM.
 */
int top_table_rows(struct top_table *t, const struct top_row **rows, size_t *n, int64_t *total_ns);
/* The off-CPU time counted, every statement's. */
int64_t top_table_wait_ns(const struct top_table *t);

#endif /* EBPROF_TOP_TABLE_H */
