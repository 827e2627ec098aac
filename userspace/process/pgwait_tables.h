/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wait event names of each PostgreSQL major version (pgwait_tables.c,
 * made from PostgreSQL's src/include/utils/wait_event.h, wait_event.c,
 * lwlocknames.txt, lwlock.c and lock.h of each version; from 17,
 * wait_event_names.txt): for each class, the names of its events by
 * number (the low 16 bits of wait_event_info). For pgwait.c only.
 */
#ifndef EBPROF_PGWAIT_TABLES_H
#define EBPROF_PGWAIT_TABLES_H

#include <stddef.h>
#include <stdint.h>

struct pgw_table {
	unsigned major_min, major_max;
	uint8_t class_id; /* wait_event_info >> 24 */
	const char *const *names;
	size_t n;
};

extern const struct pgw_table pgw_tables[];
extern const size_t pgw_ntables;

#endif /* EBPROF_PGWAIT_TABLES_H */
