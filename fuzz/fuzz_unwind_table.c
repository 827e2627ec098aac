// SPDX-License-Identifier: BSD-2-Clause
/* ELF images from containers: the unwind-table compiler (CFI read through
 * libdw: .eh_frame, .eh_frame_hdr, .debug_frame). */
#include "ebprof/symbolizer.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_unwind_table t;

	if (!sym_unwind_table_from_image(data, size, &t))
		sym_unwind_table_free(&t);
	return 0;
}
