/* SPDX-License-Identifier: BSD-2-Clause */
/* A profile record for the remote tests: len bytes of data (the caller's
 * buffer) that differ from pid to pid, labels service=db comm=postgres,
 * one minute of 2023-11-14. */
#ifndef EBPROF_TEST_REMOTE_PROFILE_H
#define EBPROF_TEST_REMOTE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

void remote_test_profile(struct sink_profile *rec, uint8_t *data, size_t len, uint32_t pid);

#endif
