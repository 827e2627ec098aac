/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * C++ (Itanium ABI) and Rust (legacy and v0) name demangling through
 * libiberty.
 */
#ifndef EBPROF_SYM_DEMANGLE_H
#define EBPROF_SYM_DEMANGLE_H

#include <stdbool.h>

/* Does the name look mangled (C++ "_Z...", Rust v0 "_R...")? */
bool sym_is_mangled(const char *name);

/*
 * Demangle a C++ or Rust symbol name: "ns::f<int>(int)" (parameters kept,
 * return types dropped), "crate::module::function" for Rust (hash
 * dropped). Returns a malloc'd string the caller frees, or NULL when the
 * name is not mangled, cannot be demangled, or memory runs out.
 */
char *sym_demangle(const char *name);

#endif /* EBPROF_SYM_DEMANGLE_H */
