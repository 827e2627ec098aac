// SPDX-License-Identifier: BSD-2-Clause
/* kallsyms text (a file given for another kernel, or a hostile one). */
#include <unistd.h>

#include "fuzz.h"
#include "kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms *ks = NULL;
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!ksyms_load(path, &ks)) {
		const char *name = NULL, *mod = NULL;
		uint64_t off = 0;

		ksyms_lookup(ks, size * 4096, &name, &mod, &off);
		ksyms_free(ks);
	}
	close(fd);
	return 0;
}
