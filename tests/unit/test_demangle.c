// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <stdlib.h>

#include "demangle.h"

static void expect_demangled(const char *mangled, const char *want)
{
	char *d = sym_demangle(mangled);

	cr_assert_not_null(d, "%s not demangled", mangled);
	cr_expect_str_eq(d, want, "%s", mangled);
	free(d);
}

Test(demangle, cxx)
{
	expect_demangled("_Z1fv", "f()");
	expect_demangled("_ZN3ebp6detail5twiceIiEET_S2_", "ebp::detail::twice<int>(int)");
	expect_demangled("_ZNK3ebp6detail6Widget4frobEi", "ebp::detail::Widget::frob(int) const");
	expect_demangled("_ZN3foo3barEv.cold", "foo::bar() [clone .cold]");
}

Test(demangle, rust_legacy_and_v0)
{
	/* legacy: the hash is dropped */
	expect_demangled("_ZN4core3fmt5write17h5f3a0a5c4e3b2a1bE", "core::fmt::write");
	/* v0 */
	expect_demangled("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example");
	expect_demangled("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
}

Test(demangle, not_mangled)
{
	cr_expect_null(sym_demangle("main"));
	cr_expect_null(sym_demangle("_start"));
	cr_expect_null(sym_demangle("_ZZ"), "malformed");
	cr_expect_null(sym_demangle(""));
	cr_expect_null(sym_demangle(NULL));
	cr_expect_not(sym_is_mangled("schedule"));
	cr_expect(sym_is_mangled("_Z1fv"));
	cr_expect(sym_is_mangled("_RNvC7mycrate3foo"));
}
