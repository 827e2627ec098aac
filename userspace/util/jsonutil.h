/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON helpers over jansson shared by the store's index and the remote
 * queue's files. */
#ifndef EBPROF_JSONUTIL_H
#define EBPROF_JSONUTIL_H

#include <jansson.h>

/* A JSON string of s (NULL -> null) that never fails on bad input: when s
 * is not valid UTF-8, its non-ASCII and control bytes become '?' (a weird
 * label must not lose a profile). NULL only on -ENOMEM. New reference. */
json_t *json_lossy_string(const char *s);

#endif /* EBPROF_JSONUTIL_H */
