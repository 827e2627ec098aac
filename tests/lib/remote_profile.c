// SPDX-License-Identifier: BSD-2-Clause
#include <unistd.h>

#include "remote_profile.h"

void remote_test_profile(struct sink_profile *rec, uint8_t *data, size_t len, uint32_t pid)
{
	static struct kv kv[] = { { "service", "db" }, { "comm", "postgres" } };
	uint32_t x = 0x9e3779b9u * (pid + 3);

	for (size_t j = 0; j < len; j++) { /* xorshift: bytes of no pattern */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[j] = (uint8_t)x;
	}
	*rec = (struct sink_profile){ .start_ns = 1700000000000000000LL,
				      .end_ns = 1700000060000000000LL,
				      .pid = pid,
				      .service = "db",
				      .comm = "postgres",
				      .labels = kv,
				      .nlabels = 2,
				      .data = data,
				      .len = len };
}

void remote_test_wait_pushed(struct remote *r, uint64_t pushed, struct remote_stats *st)
{
	for (int i = 0; i < 400; i++) {
		remote_get_stats(r, st);
		if (st->pushed >= pushed && !st->queued)
			return;
		usleep(50000);
	}
}
