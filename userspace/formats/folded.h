/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Collapsed ("folded") stacks, as Brendan Gregg's flamegraph.pl and
 * speedscope read them: one line per distinct stack,
 *   comm;root_frame;...;leaf_frame COUNT
 * Frames are function names (inlined frames included, outermost first);
 * an unresolved frame is written as its hex address ("0x7f12..."), a kernel
 * function gets the suffix "_[k]" like perf script's collapse output.
 * A frame is a kernel frame when its location's mapping filename is
 * "[kernel.kallsyms]" (an unresolved kernel address gets "_[k]" too).
 * A function without a name is written by its system_name, else as the
 * location's address. Semicolons and newlines inside names are replaced by
 * ':' and ' '. Lines are sorted (byte order) so output is deterministic;
 * lines whose merged value is 0 are left out.
 */
#ifndef EBPROF_FOLDED_H
#define EBPROF_FOLDED_H

#include <stdio.h>

#include "profile/profile.h"

/*
 * Write p as folded stacks to f. value_index selects the sample value
 * (0 = first sample type). The first element of each line is the sample's
 * "thread_name" label, else its "comm" label, else "[unknown]"; with
 * group_by (a label key, NULL: none) the value of that label comes before
 * it ("(no KEY)" when the sample has none), so statements, backends or
 * databases stand side by side. Lines with the same text are merged. 0 or
 * a negative errno.
 */
int folded_write(const struct profile *p, size_t value_index, const char *group_by, FILE *f);

/* The root frame group_by gives sample s: its label's value, else
 * "(no KEY)" written into buf. */
const char *folded_group_name(const struct profile *p, const struct pf_sample *s,
			      const char *group_by, char *buf, size_t len);

#endif /* EBPROF_FOLDED_H */
