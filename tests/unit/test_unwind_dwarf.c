// SPDX-License-Identifier: BSD-2-Clause
/*
 * The DWARF stack source: ring buffer records of unwound stacks (hostile
 * sizes refused), resolution of sample keys into raw samples, and the
 * two-step forgetting of stacks no sample refers to any more. A real
 * `ustack_known` map (a hash map made here) shows what BPF would be told.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "sampling/stack_source.h"

static struct stack_source *src;
static int known_fd = -1;

static void setup(void)
{
	known_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "known", 8, 1, 64, NULL);
	cr_assert_geq(known_fd, 0, "cannot create a BPF map (root needed): %s", strerror(errno));
	cr_assert_eq(stack_source_dwarf_new(-1, known_fd, &src), 0);
}

static void teardown(void)
{
	src->destroy(src);
	close(known_fd);
}

TestSuite(unwind_dwarf, .init = setup, .fini = teardown);

static struct ebprof_ustack rec;

static size_t make(uint64_t hash, uint32_t n, uint16_t end, uint16_t fp)
{
	memset(&rec, 0, sizeof(rec));
	rec.hash = hash;
	rec.n = n;
	rec.end = end;
	rec.fp_frames = fp;
	for (uint32_t i = 0; i < n && i < EBPROF_MAX_UNWIND_DEPTH; i++)
		rec.ips[i] = 0x1000 + i;
	return offsetof(struct ebprof_ustack, ips) + n * sizeof(uint64_t);
}

struct seen {
	int calls;
	struct raw_sample s;
	uint64_t ips[EBPROF_MAX_UNWIND_DEPTH];
};

static int take(const struct raw_sample *s, void *ctx)
{
	struct seen *w = ctx;

	w->calls++;
	w->s = *s;
	if (s->nuser)
		memcpy(w->ips, s->user, s->nuser * sizeof(uint64_t));
	return 0;
}

static struct seen resolve(uint64_t hash, uint64_t count)
{
	struct sample_key key = {
		.tgid = 7, .tid = 8, .ustack = hash, .flags = SAMPLE_USTACK_DWARF
	};
	struct seen w = { 0 };

	cr_assert_eq(src->resolve(src, &key, count, take, &w), 0);
	cr_assert_eq(w.calls, 1);
	return w;
}

Test(unwind_dwarf, malformed_records_are_refused)
{
	size_t head = offsetof(struct ebprof_ustack, ips);

	cr_expect_eq(stack_source_dwarf_add(src, &rec, head - 1), -EINVAL);
	make(1, 0, 0, 0);
	cr_expect_eq(stack_source_dwarf_add(src, &rec, head), -EINVAL, "no frames");
	make(1, 4, 0, 0);
	cr_expect_eq(stack_source_dwarf_add(src, &rec, head + 3 * 8), -EINVAL, "short record");
	make(1, 4, UNWIND_END_MAX, 0);
	cr_expect_eq(stack_source_dwarf_add(src, &rec, head + 4 * 8), -EINVAL, "bad end");
	make(1, 4, 0, 0);
	rec.n = EBPROF_MAX_UNWIND_DEPTH + 1;
	cr_expect_eq(stack_source_dwarf_add(src, &rec, sizeof(rec)), -EINVAL, "too deep");

	struct dwarf_stack_stats st;

	stack_source_dwarf_stats(src, &st);
	cr_expect_eq(st.stacks, 0);
}

Test(unwind_dwarf, a_stack_resolves_with_its_end_and_fp_mark)
{
	struct dwarf_stack_stats st;
	struct seen w;

	cr_assert_eq(stack_source_dwarf_add(src, &rec, make(42, 1024, UNWIND_END_DEPTH, 3)), 0);
	w = resolve(42, 5);
	cr_expect_eq(w.s.nuser, 1024);
	cr_expect_eq(w.ips[0], 0x1000);
	cr_expect_eq(w.ips[1023], 0x1000 + 1023);
	cr_expect_eq(w.s.user_end, UNWIND_END_DEPTH);
	cr_expect(w.s.user_fp);
	cr_expect_not(w.s.user_lost);
	cr_expect_eq(w.s.count, 5);
	stack_source_dwarf_stats(src, &st);
	cr_expect_eq(st.ends[UNWIND_END_DEPTH], 5);
	cr_expect_eq(st.fp_samples, 5);
	cr_expect_eq(st.stacks, 1);
}

Test(unwind_dwarf, an_unknown_stack_is_a_lost_stack)
{
	struct dwarf_stack_stats st;
	struct seen w = resolve(99, 2);

	cr_expect(w.s.user_lost);
	cr_expect_eq(w.s.nuser, 0);
	stack_source_dwarf_stats(src, &st);
	cr_expect_eq(st.unknown, 2);
}

Test(unwind_dwarf, unused_stacks_are_forgotten_in_two_steps)
{
	uint64_t h = 5, keep = 6;
	uint8_t one = 1, v;

	cr_assert_eq(bpf_map_update_elem(known_fd, &h, &one, BPF_ANY), 0);
	cr_assert_eq(stack_source_dwarf_add(src, &rec, make(h, 3, 0, 0)), 0);
	cr_assert_eq(stack_source_dwarf_add(src, &rec, make(keep, 3, 0, 0)), 0);
	/* new stacks count as used until the first collection */
	cr_expect_eq(stack_source_dwarf_gc(src, NULL, 0), 0);
	cr_expect_eq(bpf_map_lookup_elem(known_fd, &h, &v), 0, "still known to BPF");
	/* unused: BPF forgets it first, we keep it one more round */
	cr_expect_eq(stack_source_dwarf_gc(src, &keep, 1), 0);
	cr_expect_neq(bpf_map_lookup_elem(known_fd, &h, &v), 0, "BPF must send it again");
	cr_expect_eq(resolve(h, 1).s.nuser, 3, "a sample counted meanwhile still resolves");
	/* used meanwhile: kept this round; BPF no longer knows it, so the
	 * next unused round frees it */
	cr_expect_eq(stack_source_dwarf_gc(src, &keep, 1), 0);
	cr_expect_eq(stack_source_dwarf_gc(src, &keep, 1), 1);
	cr_expect(resolve(h, 1).s.user_lost);
	cr_expect_eq(resolve(keep, 1).s.nuser, 3, "the kept one stays");
}

Test(unwind_dwarf, a_stack_sent_again_is_kept_once)
{
	struct dwarf_stack_stats st;

	cr_assert_eq(stack_source_dwarf_add(src, &rec, make(8, 10, 0, 0)), 0);
	cr_assert_eq(stack_source_dwarf_add(src, &rec, make(8, 10, 0, 0)), 0);
	stack_source_dwarf_stats(src, &st);
	cr_expect_eq(st.stacks, 1);
	cr_expect_eq(st.bytes > 10 * 8, true);
}
