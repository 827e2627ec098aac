/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the pprof tests (tests/unit/test_pprof_*.c): a CPU profile
 * like ebprof writes (user stacks in /usr/bin/app with an inline chain, a
 * libc frame that stayed unresolved, kernel frames), the check of every
 * field of it, the invariants profile.h promises on any profile, and
 * lookups into a profile. Failures are Criterion assertions; the profile
 * returned is the caller's (profile_free).
 */
#ifndef EBPROF_TEST_PPROF_FIXTURE_H
#define EBPROF_TEST_PPROF_FIXTURE_H

#include <stdint.h>

#include "profile/profile.h"
#include "formats/pprof_wire.h" /* the Pb* message types */

#define PERIOD 10000000LL
#define TIME_NS 1700000000123456789LL
#define DURATION_NS 60000000000LL
#define APP_BUILD_ID "0123456789abcdef0123456789abcdef01234567"

/* The fixture profile. */
struct profile *make_profile(void);
/* Every field of the fixture, looked up by meaning (not by index). */
void check_fixture(const struct profile *p);
/* The invariants profile.h promises, on any profile. */
void check_invariants(const struct profile *p);

/* String i of p. */
const char *S(const struct profile *p, int64_t i);
/* Function / location by 1-based id (asserted in range). */
const struct pf_function *func(const struct profile *p, uint64_t id);
const struct pf_location *loc(const struct profile *p, uint64_t id);
/* A sample's numeric / string label (asserted present). */
int64_t label_num(const struct profile *p, const struct pf_sample *s, const char *key);
const char *label_str(const struct profile *p, const struct pf_sample *s, const char *key);

#endif /* EBPROF_TEST_PPROF_FIXTURE_H */
