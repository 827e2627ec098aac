// SPDX-License-Identifier: BSD-2-Clause
/*
 * Frames no symbol names (profile/unnamed.h), on this test process with
 * the stripped fixture library libsym_static.so loaded (its static
 * functions in no symbol table, its debug file by build-id under the
 * fixtures' debug directory): the profile builder names every address of
 * one static function after that function's start, one Function, while
 * each Location keeps its own address; two functions are two Functions;
 * an address no FDE covers keeps no line. The profile is read back by go
 * tool pprof, and re-symbolized (`ebprof symbolize`) with the debug file
 * the same locations get their real names; a profile written before
 * function starts were named gets them from the binary alone.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "profile/build.h"
#include "profile/resymbolize.h"
#include "profile/unnamed.h"
#include "symbolizer_env.h"
#include "symfix.h"
#include "testlib.h"

/* The library loaded, where its functions are, and their names. */
struct lib {
	const char *path;
	char full[512];
	void *handle;
	uint64_t base;			     /* load address (its vaddrs are its file offsets) */
	uint64_t alpha, beta, exported, crt; /* file offsets */
	char alpha_name[64], beta_name[64];
};

static void load_lib(struct lib *l)
{
	void *(*fn)(int);

	l->path = fx("libsym_static.so");
	snprintf(l->full, sizeof(l->full), "%s.full", l->path);
	l->handle = dlopen(l->path, RTLD_NOW);
	cr_assert_not_null(l->handle, "%s", dlerror());
	fn = (void *(*)(int))dlsym(l->handle, "sym_static_fn");
	cr_assert_not_null(fn);
	l->alpha = sym_offset(l->path, l->full, "static_alpha");
	l->beta = sym_offset(l->path, l->full, "static_beta");
	l->exported = sym_offset(l->path, l->full, "sym_static_exported");
	l->crt = sym_offset(l->path, l->full, "deregister_tm_clones"); /* no FDE */
	l->base = (uint64_t)(uintptr_t)fn(0) - l->alpha;
	cr_assert_eq((uint64_t)(uintptr_t)fn(1) - l->base, l->beta);
	snprintf(l->alpha_name, sizeof(l->alpha_name), "libsym_static.so+0x%" PRIx64, l->alpha);
	snprintf(l->beta_name, sizeof(l->beta_name), "libsym_static.so+0x%" PRIx64, l->beta);
}

static const struct pf_function *fn_of(const struct profile *p, const struct pf_location *loc)
{
	cr_assert_eq(loc->nlines, 1, "location 0x%" PRIx64 ": %zu lines", loc->address,
		     loc->nlines);
	return &p->functions[loc->lines[0].function_id - 1];
}

static const char *name_of(const struct profile *p, const struct pf_location *loc)
{
	return profile_string(p, fn_of(p, loc)->name);
}

/* The location of address addr in p (asserted). */
static const struct pf_location *loc_at(const struct profile *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nlocations; i++)
		if (p->locations[i].address == addr)
			return &p->locations[i];
	cr_assert_fail("no location at 0x%" PRIx64, addr);
	return NULL;
}

/* Leaves: two addresses in static_alpha, one in static_beta, one in crt
 * code without an FDE; callers in sym_static_exported (.dynsym). */
static struct profile *build_profile(struct lib *l, uint64_t *addr, struct builder_stats *st)
{
	struct proc_registry *procs;
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct builder_opts o = { .type = PTYPE_CPU,
				  .period = 10000000,
				  .time_nanos = 1700000000000000000LL };
	struct builder *b;
	struct profile *p;

	addr[0] = l->base + l->alpha + 2;
	addr[1] = l->base + l->alpha + 20;
	addr[2] = l->base + l->beta + 3;
	addr[3] = l->base + l->crt + 1;
	addr[4] = l->base + l->exported + 5;
	cr_assert_eq(procs_new(&procs), 0);
	cr_assert_eq(procs_snapshot(procs, getpid(), false), 0);
	o.sym = sym;
	o.procs = procs;
	cr_assert_eq(builder_new(&o, &b), 0);
	for (int i = 0; i < 4; i++) {
		uint64_t user[2] = { addr[i], addr[4] };
		struct raw_sample s = { .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid() };

		strcpy(s.comm, "x");
		s.count = 1 + (uint64_t)i;
		s.user = user;
		s.nuser = 2;
		cr_assert_eq(builder_add(&s, b), 0);
	}
	builder_get_stats(b, st);
	cr_assert_eq(builder_finish(b, 1000000000LL, &p), 0);
	builder_free(b);
	procs_free(procs);
	sym_free(sym);
	return p;
}

Test(unnamed, one_function_one_frame_each_location_its_address)
{
	struct lib l;
	uint64_t addr[5];
	struct builder_stats st;
	struct profile *p;
	const struct pf_location *a0, *a1, *b0, *gap, *caller;
	struct gp_profile *gp;
	uint8_t *buf;
	size_t len;
	int alpha_leaves = 0;

	load_lib(&l);
	p = build_profile(&l, addr, &st);
	a0 = loc_at(p, addr[0]);
	a1 = loc_at(p, addr[1]);
	b0 = loc_at(p, addr[2]);
	gap = loc_at(p, addr[3]);
	caller = loc_at(p, addr[4]);

	/* one function: two locations, their own addresses, one Function */
	cr_assert(a0->nlines == 1 && a1->nlines == 1 && b0->nlines == 1,
		  "static functions have no line: %zu %zu %zu", a0->nlines, a1->nlines, b0->nlines);
	cr_expect_neq(a0->id, a1->id);
	cr_expect_eq(a0->lines[0].function_id, a1->lines[0].function_id);
	cr_expect_str_eq(name_of(p, a0), l.alpha_name);
	cr_expect_str_eq(profile_string(p, fn_of(p, a0)->system_name), l.alpha_name);
	cr_expect_str_eq(profile_string(p, fn_of(p, a0)->filename), "");
	/* another function: another Function */
	cr_expect_str_eq(name_of(p, b0), l.beta_name);
	cr_expect_neq(b0->lines[0].function_id, a0->lines[0].function_id);
	/* no FDE: no line, the address names it */
	cr_expect_eq(gap->nlines, 0);
	cr_expect_str_eq(name_of(p, caller), "sym_static_exported");
	cr_expect(unnamed_location(p, a0) && unnamed_location(p, b0) && unnamed_location(p, gap));
	cr_expect_not(unnamed_location(p, caller));
	/* named after a function's start is not symbolized */
	cr_expect_eq(st.user_frames, 8);
	cr_expect_eq(st.user_frames_resolved, 4, "only the .dynsym frames are resolved");

	/* what pprof readers see */
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	gp = gp_read_mem(buf, len);
	cr_assert_not_null(gp);
	for (size_t i = 0; i < gp->nsamples; i++) {
		const struct gp_frame *f = &gp->samples[i].frames[0];

		if (f->fn && !strcmp(f->fn, l.alpha_name)) {
			cr_expect(f->addr == addr[0] || f->addr == addr[1], "0x%" PRIx64, f->addr);
			alpha_leaves++;
		}
	}
	cr_expect_eq(alpha_leaves, 2, "two samples, two addresses, one name");
	gp_free(gp);
	free(buf);
	profile_free(p);
	dlclose(l.handle);
}

Test(unnamed, symbolize_with_the_debug_file_names_them)
{
	struct lib l;
	uint64_t addr[5];
	struct builder_stats st;
	struct profile *p, *named;
	struct resym_stats rs;
	struct symbolizer *sym = new_sym(debug_dir(), 0, false);
	const struct pf_location *a0, *a1;

	load_lib(&l);
	p = build_profile(&l, addr, &st);
	cr_assert_eq(profile_resymbolize(p, sym, &named, &rs), 0);
	cr_expect_eq(rs.locations, 4, "alpha twice, beta, the gap");
	cr_expect_eq(rs.resolved, 4);
	a0 = loc_at(named, addr[0]);
	a1 = loc_at(named, addr[1]);
	cr_expect_neq(a0->id, a1->id, "each location keeps its address");
	cr_expect_str_eq(name_of(named, a0), "static_alpha");
	cr_expect(ends_with(profile_string(named, fn_of(named, a0)->filename), "sym_static.c"));
	cr_expect_gt(a0->lines[0].line, 0);
	cr_expect_str_eq(name_of(named, a1), "static_alpha");
	cr_expect_str_eq(name_of(named, loc_at(named, addr[2])), "static_beta");
	for (size_t i = 0; i < named->nlocations; i++)
		cr_expect_not(named->locations[i].nlines == 1 &&
				      unnamed_function_id(named,
							  named->locations[i].lines[0].function_id),
			      "0x%" PRIx64 " is still named after its function's start",
			      named->locations[i].address);
	profile_free(named);
	profile_free(p);
	sym_free(sym);
	dlclose(l.handle);
}

Test(unnamed, older_profiles_get_function_starts_from_the_binary)
{
	struct lib l;
	struct profile *p = profile_new(), *named;
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e;
	struct resym_stats rs;
	struct pf_mapping m = { 0 };
	uint64_t locs[2];
	int64_t v = 1, mid;
	char abs[PATH_MAX];

	load_lib(&l);
	e = get_path(sym, l.path);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	m.start = l.base;
	m.limit = l.base + 0x10000;
	m.filename = profile_str(p, realpath(l.path, abs)); /* as maps names it */
	m.build_id = profile_str(p, sym_elf_build_id(e));
	sym_elf_put(sym, e);
	mid = profile_add_mapping(p, &m);
	cr_assert_gt(mid, 0);
	/* what a profile of before looks like: locations without lines */
	locs[0] = (uint64_t)profile_add_location(p, (uint64_t)mid, l.base + l.alpha + 2, NULL, 0);
	locs[1] = (uint64_t)profile_add_location(p, (uint64_t)mid, l.base + l.alpha + 20, NULL, 0);
	cr_assert_eq(profile_add_sample(p, &locs[0], 1, &v, NULL, 0), 0);
	cr_assert_eq(profile_add_sample(p, &locs[1], 1, &v, NULL, 0), 0);

	cr_assert_eq(profile_resymbolize(p, sym, &named, &rs), 0);
	cr_expect_eq(rs.locations, 2);
	cr_expect_eq(rs.resolved, 0, "a function's start is no symbol");
	cr_expect_str_eq(name_of(named, loc_at(named, l.base + l.alpha + 2)), l.alpha_name);
	cr_expect_str_eq(name_of(named, loc_at(named, l.base + l.alpha + 20)), l.alpha_name);
	profile_free(named);
	profile_free(p);
	sym_free(sym);
	dlclose(l.handle);
}

Test(unnamed, names)
{
	char buf[64];

	unnamed_label(buf, sizeof(buf), "/usr/lib/postgresql/15/bin/postgres", 0x47c3a0);
	cr_expect_str_eq(buf, "postgres+0x47c3a0");
	unnamed_label(buf, sizeof(buf), "postgres", 0);
	cr_expect_str_eq(buf, "postgres+0x0");
	cr_expect(unnamed_name("postgres+0x47c3a0"));
	cr_expect(unnamed_name("libc.so.6+0x1f"));
	cr_expect_not(unnamed_name("exec_simple_query"));
	cr_expect_not(unnamed_name("+0x10"));
	cr_expect_not(unnamed_name("postgres+0x"));
	cr_expect_not(unnamed_name("postgres+0x12g"));
	cr_expect_not(unnamed_name("operator+(int)"));
	cr_expect_not(unnamed_name("postgres+12"));
}
