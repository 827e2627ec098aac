// SPDX-License-Identifier: BSD-2-Clause
#include <string.h>

#include "sink.h"

const char *record_label(const struct profile_record *r, const char *key)
{
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].key, key))
			return r->labels[i].value;
	return NULL;
}
