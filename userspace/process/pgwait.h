/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PostgreSQL's wait events by name: the 32-bit wait_event_info a backend
 * publishes (class in the top byte, event in the low 16 bits) as
 * pg_stat_activity shows it, wait_event_type and wait_event ("Lock",
 * "transactionid"), per major version (the events of a class are numbered
 * in an order that changed between versions). Static tables; no state.
 */
#ifndef EBPROF_PGWAIT_H
#define EBPROF_PGWAIT_H

#include <stddef.h>
#include <stdint.h>

/* The names of info in PostgreSQL major (12..17) into type and event
 * (each >= 16 bytes). An event the tables do not know, or any event of a
 * version they do not have (0: unknown), is named by its hex number
 * ("0x0a00ffff") under its class; a class they do not know by its hex
 * number ("0x0c"). Returns 0, or -ENOENT when named so. */
int pg_wait_event_name(uint32_t info, unsigned major, char *type, size_t tlen, char *event,
		       size_t elen);

#endif /* EBPROF_PGWAIT_H */
