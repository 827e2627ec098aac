// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

json_t *json_lossy_string(const char *s)
{
	json_t *j;
	char *copy;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}
