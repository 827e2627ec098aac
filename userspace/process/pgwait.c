// SPDX-License-Identifier: BSD-2-Clause
/* PostgreSQL's wait events by name (pgwait.h), from pgwait_tables.c. */
#include <errno.h>
#include <stdio.h>

#include "pgwait.h"
#include "pgwait_tables.h"

/* wait_event_type by class (the top byte); the same in every version */
static const char *const class_names[] = {
	[0x01] = "LWLock", [0x03] = "Lock",	      [0x04] = "BufferPin", [0x05] = "Activity",
	[0x06] = "Client", [0x07] = "Extension",      [0x08] = "IPC",	    [0x09] = "Timeout",
	[0x0A] = "IO",	   [0x0B] = "InjectionPoint",
};

#define NCLASSES (sizeof(class_names) / sizeof(class_names[0]))

/* The table of class in major; NULL for a version the tables do not
 * have (events are renumbered between versions: a guess would mislabel). */
static const struct pgw_table *table_of(uint8_t class_id, unsigned major)
{
	for (size_t i = 0; i < pgw_ntables; i++) {
		const struct pgw_table *t = &pgw_tables[i];

		if (t->class_id == class_id && major >= t->major_min && major <= t->major_max)
			return t;
	}
	return NULL;
}

int pg_wait_event_name(uint32_t info, unsigned major, char *type, size_t tlen, char *event,
		       size_t elen)
{
	uint8_t class_id = (uint8_t)(info >> 24);
	uint16_t id = (uint16_t)(info & 0xffff);
	const struct pgw_table *t;

	if (class_id < NCLASSES && class_names[class_id])
		snprintf(type, tlen, "%s", class_names[class_id]);
	else
		snprintf(type, tlen, "0x%02x", class_id);
	t = table_of(class_id, major);
	if (t && id < t->n && t->names[id]) {
		snprintf(event, elen, "%s", t->names[id]);
		return 0;
	}
	snprintf(event, elen, "0x%08x", info);
	return -ENOENT;
}
