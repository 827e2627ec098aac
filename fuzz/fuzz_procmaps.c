// SPDX-License-Identifier: BSD-2-Clause
/* /proc/PID/maps of any process, containers included: one line at a time,
 * and the whole text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "process/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct proc_maps *maps = NULL;
	FILE *f;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct map_entry e;

		if (!procmaps_parse_line(line, &e))
			free(e.path);
	}
	free(text);
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!procmaps_parse(f, (size & 1) != 0, &maps))
		procmaps_free(maps);
	fclose(f);
	return 0;
}
