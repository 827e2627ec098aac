// SPDX-License-Identifier: BSD-2-Clause
/* Statement texts read from backends' memory: the normalizer (libpg_query,
 * and the token fallback for text that does not parse). The first byte
 * says whether the text was cut at the capture limit. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "query/normalize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct query_norm n;

	if (!size)
		return 0;
	if (query_normalize((const char *)data + 1, size - 1, data[0] & 1, &n))
		return 0;
	if (strlen(n.text) >= QUERY_LABEL_MAX)
		abort(); /* a label is bounded */
	free(n.text);
	return 0;
}
