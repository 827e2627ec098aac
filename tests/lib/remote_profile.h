/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the remote tests (tests/unit/test_remote_*.c). */
#ifndef EBPROF_TEST_REMOTE_PROFILE_H
#define EBPROF_TEST_REMOTE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "sinks/remote/remote.h"
#include "sinks/sink.h"

/* A profile record: len bytes of data (the caller's buffer) that differ
 * from pid to pid, labels service=db comm=postgres, one minute of
 * 2023-11-14. */
void remote_test_profile(struct sink_profile *rec, uint8_t *data, size_t len, uint32_t pid);

/* Wait until r counts pushed profiles and holds none (or 20 s); its
 * counts in *st. */
void remote_test_wait_pushed(struct remote *r, uint64_t pushed, struct remote_stats *st);

#endif
