// SPDX-License-Identifier: BSD-2-Clause
/* The agent's configuration file (root reads it; an operator's typo must
 * be an error, never a crash). */
#include <unistd.h>

#include "agent/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_config c;
	char path[64], err[512];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!config_defaults(&c)) {
		config_load_file(&c, path, err, sizeof(err));
		config_free(&c);
	}
	close(fd);
	return 0;
}
