// SPDX-License-Identifier: BSD-2-Clause
/*
 * PostgreSQL's wait events by name (userspace/process/pgwait.c): events
 * that moved between versions get each version's name, unknown events and
 * versions are named by their number under their class, never guessed.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "process/pgwait.h"

static void expect_name(uint32_t info, unsigned major, const char *type, const char *event)
{
	char t[32], e[64];
	int ret = pg_wait_event_name(info, major, t, sizeof(t), e, sizeof(e));

	cr_expect_eq(ret, 0, "0x%08x in %u: not found", info, major);
	cr_expect_str_eq(t, type, "0x%08x in %u", info, major);
	cr_expect_str_eq(e, event, "0x%08x in %u", info, major);
}

Test(pgwait, the_events_of_the_issue_in_every_version)
{
	for (unsigned v = 13; v <= 17; v++)
		expect_name(0x03000005, v, "Lock", "transactionid");
	expect_name(0x03000004, 12, "Lock", "transactionid"); /* 13 added frozenid before it */
	for (unsigned v = 12; v <= 17; v++)
		expect_name(0x06000000, v, "Client", "ClientRead");
	expect_name(0x01000008, 15, "LWLock", "WALWrite");
	expect_name(0x01000008, 17, "LWLock", "WALWrite");
	expect_name(0x01000038, 15, "LWLock", "BufferContent");
	expect_name(0x0100003D, 17, "LWLock", "BufferContent"); /* new tranches before it */
	expect_name(0x0A000011, 15, "IO", "DataFileRead");
	expect_name(0x0A00000D, 12, "IO", "DataFileRead");
	expect_name(0x09000002, 15, "Timeout", "PgSleep");
	expect_name(0x09000001, 12, "Timeout", "PgSleep");
	expect_name(0x04000000, 15, "BufferPin", "BufferPin");
	expect_name(0x07000000, 15, "Extension", "Extension");
}

Test(pgwait, unknown_events_and_versions_are_numbers_not_guesses)
{
	char t[32], e[64];

	cr_expect_eq(pg_wait_event_name(0x0A00ffff, 15, t, sizeof(t), e, sizeof(e)), -ENOENT);
	cr_expect_str_eq(t, "IO");
	cr_expect_str_eq(e, "0x0a00ffff");
	/* a version the tables do not have: its class, the number */
	cr_expect_eq(pg_wait_event_name(0x03000005, 18, t, sizeof(t), e, sizeof(e)), -ENOENT);
	cr_expect_str_eq(t, "Lock");
	cr_expect_str_eq(e, "0x03000005");
	cr_expect_eq(pg_wait_event_name(0x03000005, 0, t, sizeof(t), e, sizeof(e)), -ENOENT);
	cr_expect_eq(pg_wait_event_name(0x0C000001, 15, t, sizeof(t), e, sizeof(e)), -ENOENT);
	cr_expect_str_eq(t, "0x0c");
	cr_expect_str_eq(e, "0x0c000001");
	/* short buffers: cut, terminated */
	cr_expect_eq(pg_wait_event_name(0x06000000, 15, t, 4, e, 5), 0);
	cr_expect_str_eq(t, "Cli");
	cr_expect_str_eq(e, "Clie");
}
