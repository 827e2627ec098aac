// SPDX-License-Identifier: BSD-2-Clause
/* The table of profile types (util/profile_types.h): every entry whole,
 * names parsed, looked up by name, by record and by sample type. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/profile_types.h"

/* Each entry says all a layer asks of it, and no two share what names
 * them: a store suffix, a Pyroscope series, a main sample type. */
Test(profile_types, every_entry_is_whole_and_distinct)
{
	for (int t = 0; t < PTYPE_N; t++) {
		const struct ptype_info *a = ptype_info(t);

		cr_assert_not_null(a);
		cr_expect_eq(a->id, t);
		cr_expect(a->name && *a->name && a->label && a->title && a->profefe &&
				  a->pyroscope && a->store_suffix,
			  "entry %d", t);
		cr_expect(a->nvalues >= 1 && a->nvalues <= PTYPE_MAX_VALUES && a->main < a->nvalues,
			  "%s: values", a->name);
		cr_expect(a->period.type && a->period.unit, "%s: period", a->name);
		/* the cpu profiles of old stores have no suffix; every other has one */
		cr_expect_eq(!*a->store_suffix, t == PTYPE_CPU, "%s: store suffix", a->name);
		for (int u = 0; u < t; u++) {
			const struct ptype_info *b = ptype_info(u);

			cr_expect_str_neq(a->name, b->name);
			cr_expect_str_neq(a->store_suffix, b->store_suffix);
			cr_expect_str_neq(a->pyroscope, b->pyroscope);
			cr_expect_str_neq(a->values[a->main].type, b->values[b->main].type);
		}
	}
	cr_expect_null(ptype_info(PTYPE_N));
}

/* What the pprof contract (DESIGN.md) says of each type. */
Test(profile_types, sample_types_of_the_contract)
{
	const struct ptype_info *f = ptype_info(PTYPE_FAULTS);

	cr_assert_eq(f->nvalues, 2);
	cr_expect_str_eq(f->values[0].type, "samples");
	cr_expect_str_eq(f->values[0].unit, "count");
	cr_expect_str_eq(f->values[1].type, "faults");
	cr_expect_str_eq(f->values[1].unit, "bytes");
	cr_expect_str_eq(f->profefe, "other");
	cr_expect(f->pyroscope_push);
	cr_expect_str_eq(ptype_info(PTYPE_CPU)->values[1].unit, "nanoseconds");
	cr_expect_str_eq(ptype_info(PTYPE_CPU)->pyroscope, "process_cpu");
	cr_expect_not(ptype_info(PTYPE_CPU)->pyroscope_push);
	cr_expect_str_eq(ptype_info(PTYPE_OFFCPU)->profefe, "block");
	cr_expect_eq(ptype_info(PTYPE_OFFCPU)->flame, PTYPE_FLAME_WAITS);
}

Test(profile_types, lookups)
{
	cr_expect_eq(ptype_by_name("faults"), ptype_info(PTYPE_FAULTS));
	cr_expect_null(ptype_by_name("fault"));
	cr_expect_null(ptype_by_name(""));
	cr_expect_null(ptype_by_name(NULL));
	/* a record without a type was a CPU profile */
	cr_expect_eq(ptype_of_record(NULL), ptype_info(PTYPE_CPU));
	cr_expect_eq(ptype_of_record("offcpu"), ptype_info(PTYPE_OFFCPU));
	cr_expect_null(ptype_of_record("heap"));
	cr_expect_eq(ptype_by_value("faults"), ptype_info(PTYPE_FAULTS));
	cr_expect_eq(ptype_by_value("cpu"), ptype_info(PTYPE_CPU));
	cr_expect_null(ptype_by_value("samples"));
	cr_expect_null(ptype_by_value("alloc_space"));
}

Test(profile_types, lists)
{
	unsigned m = 0;
	char buf[64];

	cr_expect_eq(ptype_parse_list("cpu", &m), 0);
	cr_expect_eq(m, PTYPE_BIT(PTYPE_CPU));
	cr_expect_eq(ptype_parse_list("faults,cpu,memory,offcpu,cpu", &m), 0);
	cr_expect_eq(m, PTYPE_ALL);
	m = 77;
	cr_expect_eq(ptype_parse_list("", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list("cpu,", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list(",cpu", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list("cpu,,faults", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list("cpu, faults", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list("faultsx", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list("faul", &m), -EINVAL);
	cr_expect_eq(ptype_parse_list(NULL, &m), -EINVAL);
	cr_expect_eq(m, 77, "untouched on error");
	cr_expect_str_eq(ptype_names(PTYPE_ALL, " or ", buf, sizeof(buf)),
			 "cpu, offcpu, faults or memory");
	cr_expect_str_eq(ptype_names(PTYPE_BIT(PTYPE_FAULTS), " or ", buf, sizeof(buf)), "faults");
	cr_expect_str_eq(ptype_names(PTYPE_BIT(PTYPE_CPU) | PTYPE_BIT(PTYPE_FAULTS), " and ", buf,
				     sizeof(buf)),
			 "cpu and faults");
	cr_expect_str_eq(ptype_names(0, " or ", buf, sizeof(buf)), "");
	cr_expect_str_eq(ptype_names(PTYPE_ALL, " or ", buf, 8), "cpu, of");
}

/* The compile-time list of names says what the table says. */
Test(profile_types, name_list_follows_the_table)
{
	char all[128] = "";

	for (int t = 0; t < PTYPE_N; t++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", t ? "," : "",
			 ptype_info(t)->name);
	cr_expect_str_eq(PTYPE_NAMES, all);
}
