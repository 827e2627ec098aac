/* SPDX-License-Identifier: BSD-2-Clause */
/* Clocks in the units the profiler uses: nanoseconds since the epoch for
 * profile times, monotonic nanoseconds for durations and deadlines. */
#ifndef EBPROF_TIMEUTIL_H
#define EBPROF_TIMEUTIL_H

#include <stdint.h>
#include <time.h>

#define NSEC_PER_SEC 1000000000LL

static inline int64_t timespec_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NSEC_PER_SEC + ts->tv_nsec;
}

/* CLOCK_REALTIME in ns: what pprof's time_nanos holds. */
static inline int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return timespec_ns(&ts);
}

/* CLOCK_MONOTONIC in ns. */
static inline int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_ns(&ts);
}

#endif /* EBPROF_TIMEUTIL_H */
