// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profile builder on this test process itself: real maps snapshot,
 * real symbolizer, a real kernel symbol from /proc/kallsyms.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile/build.h"

__attribute__((noinline)) int builder_leaf_fn(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int builder_caller_fn(int x)
{
	return builder_leaf_fn(x) + 2;
}

/* Two functions back to back, without padding between them: the first
 * byte of the second is also a return address into the first (a call
 * that is its last instruction). */
__asm__(".text\n"
	".globl builder_adjacent_a\n"
	".type builder_adjacent_a, @function\n"
	"builder_adjacent_a:\n"
	"	nop\n"
	"	ret\n"
	".size builder_adjacent_a, . - builder_adjacent_a\n"
	".globl builder_adjacent_b\n"
	".type builder_adjacent_b, @function\n"
	"builder_adjacent_b:\n"
	"	ret\n"
	".size builder_adjacent_b, . - builder_adjacent_b\n");
void builder_adjacent_a(void);
void builder_adjacent_b(void);

static uint64_t kallsyms_addr(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	unsigned long long addr;
	uint64_t found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, name)) {
			found = addr;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static const char *fn_name(const struct profile *p, const struct pf_location *loc, size_t i)
{
	return profile_string(p, p->functions[loc->lines[i].function_id - 1].name);
}

struct fixture {
	struct proc_registry *procs;
	struct symbolizer *sym;
	struct builder *b;
};

static void setup(struct fixture *fx)
{
	struct builder_opts o = { 0 };

	cr_assert_eq(procs_new(&fx->procs), 0);
	cr_assert_eq(procs_snapshot(fx->procs, getpid(), false), 0);
	cr_assert_eq(sym_new(&(struct sym_opts){ 0 }, &fx->sym), 0);
	o.type = PTYPE_CPU;
	o.period = 10000000; /* 100 Hz */
	o.sym = fx->sym;
	o.procs = fx->procs;
	o.time_nanos = 1700000000000000000LL;
	cr_assert_eq(builder_new(&o, &fx->b), 0);
}

static void teardown(struct fixture *fx)
{
	builder_free(fx->b);
	sym_free(fx->sym);
	procs_free(fx->procs);
}

Test(builder, kernel_then_user_frames_symbolized)
{
	struct fixture fx;
	uint64_t kaddr = kallsyms_addr("schedule");
	uint64_t user[2] = { (uint64_t)(uintptr_t)&builder_leaf_fn + 1,
			     (uint64_t)(uintptr_t)&builder_caller_fn + 5 };
	uint64_t kernel[1] = { kaddr + 4 };
	struct raw_sample s = { 0 };
	struct profile *p;
	const struct pf_sample *ps;
	bool kmap = false, umap = false;

	cr_assert_neq(kaddr, 0, "kallsyms hides addresses: run as root");
	setup(&fx);
	s.pid = (uint32_t)getpid();
	s.tid = s.pid + 1;
	strcpy(s.comm, "worker-1");
	s.count = 7;
	s.kernel = kernel;
	s.nkernel = 1;
	s.user = user;
	s.nuser = 2;
	cr_assert_eq(builder_add(&s, fx.b), 0);
	cr_assert_eq(builder_add(&s, fx.b), 0); /* same stack: merged */
	cr_assert_eq(builder_finish(fx.b, 2000000000LL, &p), 0);

	cr_expect_eq(p->nsample_types, 2);
	cr_expect_str_eq(profile_string(p, p->sample_types[0].type), "samples");
	cr_expect_str_eq(profile_string(p, p->sample_types[0].unit), "count");
	cr_expect_str_eq(profile_string(p, p->sample_types[1].type), "cpu");
	cr_expect_str_eq(profile_string(p, p->sample_types[1].unit), "nanoseconds");
	cr_expect_str_eq(profile_string(p, p->period_type.type), "cpu");
	cr_expect_eq(p->period, 10000000);
	cr_expect_eq(p->time_nanos, 1700000000000000000LL);
	cr_expect_eq(p->duration_nanos, 2000000000LL);
	cr_assert_eq(p->nsamples, 1);
	ps = &p->samples[0];
	cr_expect_eq(ps->values[0], 14);
	cr_expect_eq(ps->values[1], 14 * 10000000LL);
	cr_assert_eq(ps->nlocations, 3);
	/* kernel leaf first, then the user stack leaf first */
	cr_assert_gt(p->locations[ps->location_ids[0] - 1].nlines, 0);
	cr_expect_str_eq(fn_name(p, &p->locations[ps->location_ids[0] - 1], 0), "schedule");
	cr_expect_str_eq(fn_name(p, &p->locations[ps->location_ids[1] - 1], 0), "builder_leaf_fn");
	cr_expect_str_eq(fn_name(p, &p->locations[ps->location_ids[2] - 1], 0),
			 "builder_caller_fn");
	cr_expect_eq(p->locations[ps->location_ids[1] - 1].address, user[0]);
	for (size_t i = 0; i < p->nmappings; i++) {
		const char *name = profile_string(p, p->mappings[i].filename);

		cr_expect_eq(p->mappings[i].id, i + 1);
		if (!strcmp(name, "[kernel.kallsyms]"))
			kmap = true;
		if (strstr(name, "test_build")) {
			umap = true;
			cr_expect_neq(strlen(profile_string(p, p->mappings[i].build_id)), 0,
				      "no build-id on %s", name);
			cr_expect(p->mappings[i].has_functions);
		}
	}
	cr_expect(kmap, "no [kernel.kallsyms] mapping");
	cr_expect(umap, "no mapping for the test binary");
	cr_expect_eq(ps->nlabels, 3);
	for (size_t i = 0; i < ps->nlabels; i++) {
		const char *key = profile_string(p, ps->labels[i].key);

		if (!strcmp(key, "pid"))
			cr_expect_eq(ps->labels[i].num, getpid());
		else if (!strcmp(key, "tid"))
			cr_expect_eq(ps->labels[i].num, getpid() + 1);
		else if (!strcmp(key, "thread_name"))
			cr_expect_str_eq(profile_string(p, ps->labels[i].str), "worker-1");
		else
			cr_expect(false, "unexpected label %s", key);
	}
	profile_free(p);
	teardown(&fx);
}

Test(builder, unresolved_frames_keep_their_address)
{
	struct fixture fx;
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t user[2] = { (uint64_t)(uintptr_t)anon + 16, 0x10 /* in no mapping */ };
	struct raw_sample s = { 0 };
	struct profile *p;
	const struct pf_location *l0, *l1;

	cr_assert_neq(anon, MAP_FAILED);
	setup(&fx);
	cr_assert_eq(procs_snapshot(fx.procs, getpid(), true), 0); /* sees the new mapping */
	s.pid = s.tid = (uint32_t)getpid();
	strcpy(s.comm, "x");
	s.count = 1;
	s.user = user;
	s.nuser = 2;
	s.kernel_lost = true;
	cr_assert_eq(builder_add(&s, fx.b), 0);
	cr_assert_eq(builder_finish(fx.b, 1, &p), 0);
	cr_assert_eq(p->samples[0].nlocations, 3);
	cr_expect_str_eq(fn_name(p, &p->locations[p->samples[0].location_ids[0] - 1], 0),
			 "[lost kernel stack]");
	l0 = &p->locations[p->samples[0].location_ids[1] - 1];
	l1 = &p->locations[p->samples[0].location_ids[2] - 1];
	cr_expect_eq(l0->address, user[0]);
	cr_expect_eq(l0->nlines, 0);
	cr_expect_neq(l0->mapping_id, 0);
	cr_expect_eq(l1->address, 0x10);
	cr_expect_eq(l1->nlines, 0);
	cr_expect_eq(l1->mapping_id, 0);
	profile_free(p);
	teardown(&fx);
	munmap(anon, 4096);
}

/* One address as a leaf (looked up as itself) and as a return address
 * (looked up at the byte before): two locations, whichever came first. */
static void check_leaf_and_return_address(bool leaf_first)
{
	uint64_t b_addr = (uint64_t)(uintptr_t)&builder_adjacent_b;
	uint64_t leaf[1] = { b_addr };
	uint64_t caller[2] = { (uint64_t)(uintptr_t)&builder_leaf_fn + 1, b_addr };
	struct raw_sample s1 = { 0 }, s2 = { 0 };
	const struct pf_sample *as_leaf = NULL, *as_caller = NULL;
	struct fixture fx;
	struct profile *p;

	cr_assert_eq((uint64_t)(uintptr_t)&builder_adjacent_a + 2, b_addr);
	setup(&fx);
	s1.pid = s1.tid = s2.pid = s2.tid = (uint32_t)getpid();
	strcpy(s1.comm, "x");
	strcpy(s2.comm, "x");
	s1.count = s2.count = 1;
	s1.user = leaf;
	s1.nuser = 1;
	s2.user = caller;
	s2.nuser = 2;
	cr_assert_eq(builder_add(leaf_first ? &s1 : &s2, fx.b), 0);
	cr_assert_eq(builder_add(leaf_first ? &s2 : &s1, fx.b), 0);
	cr_assert_eq(builder_finish(fx.b, 1, &p), 0);
	cr_assert_eq(p->nsamples, 2);
	for (size_t i = 0; i < 2; i++) {
		if (p->samples[i].nlocations == 1)
			as_leaf = &p->samples[i];
		else
			as_caller = &p->samples[i];
	}
	cr_assert(as_leaf && as_caller);
	cr_assert_eq(as_caller->nlocations, 2);
	cr_assert_gt(p->locations[as_leaf->location_ids[0] - 1].nlines, 0);
	cr_expect_str_eq(fn_name(p, &p->locations[as_leaf->location_ids[0] - 1], 0),
			 "builder_adjacent_b");
	cr_assert_gt(p->locations[as_caller->location_ids[1] - 1].nlines, 0);
	cr_expect_str_eq(fn_name(p, &p->locations[as_caller->location_ids[1] - 1], 0),
			 "builder_adjacent_a", "the return address is the caller's, leaf first: %d",
			 leaf_first);
	cr_expect_eq(p->locations[as_caller->location_ids[1] - 1].address, b_addr);
	profile_free(p);
	teardown(&fx);
}

Test(builder, an_address_as_leaf_and_as_return_address)
{
	check_leaf_and_return_address(true);
	check_leaf_and_return_address(false);
}

Test(symreport, rows_are_bounded)
{
	struct symreport r = { 0 };
	char name[32];
	size_t idx;

	for (int i = 0; i < 2 * SYMREPORT_MAX_ROWS; i++) {
		snprintf(name, sizeof(name), "/bin/b%d", i);
		cr_assert_eq(symreport_row(&r, name, "dynsym", &idx), 0);
		r.rows[idx].samples++;
	}
	cr_expect_eq(r.n, SYMREPORT_MAX_ROWS);
	cr_expect_str_eq(r.rows[idx].binary, SYMREPORT_OTHER);
	cr_expect_eq(r.rows[idx].samples, SYMREPORT_MAX_ROWS + 1);
	symreport_sort(&r);
	cr_expect_str_eq(r.rows[0].binary, SYMREPORT_OTHER);
	symreport_clear(&r);
}
