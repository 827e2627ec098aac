// SPDX-License-Identifier: BSD-2-Clause
/*
 * pprof helper of bench/compare.sh, built against ebprof's own profile
 * model and pprof codec (userspace/formats/pprof.h):
 *
 *   pprofutil stacks FILE...
 *       every sample as one line "COUNT<TAB>frame;frame;...", root first,
 *       one frame per location (a physical frame: a return address or the
 *       sampled ip), named by the outermost function of its inline chain,
 *       "0xADDR" when unresolved, "[NAME]" when named after its
 *       function's start only (postgres+0x47c3a0, profile/unnamed.h: a
 *       bracketed frame is no name to stackstats.py); kernel and user
 *       frames alike.
 *   pprofutil pstacks FILE...
 *       the same, each line prefixed by the sample's pid ("COUNT<TAB>PID<TAB>
 *       frames"), kernel frames suffixed "_[k]" (perf's habit), markers
 *       such as "[truncated: ...]" kept.
 *   pprofutil ustacks FILE...
 *       the same with user frames only (no kernel frame, no marker), each
 *       line prefixed by the sample's pid: "COUNT<TAB>PID<TAB>frames".
 *   pprofutil offsets SUFFIX FILE...
 *       the distinct file offsets (address - mapping start + mapping
 *       offset, hex) of the locations whose mapping file name ends with
 *       SUFFIX, e.g. /bin/postgres, sorted.
 *   pprofutil count FILE...
 *       one line over all files: samples=N with_pid=N (samples carrying a
 *       numeric pid label > 0) files=N.
 *   pprofutil leafshare FILE...
 *       of the samples whose stack has a user frame, how many have that
 *       leaf (the first user frame) named by a symbol (not by its
 *       function's start only): user_leaf=N named=N share=P, then the
 *       same per mapping file, most samples first.
 *   pprofutil unnamed SUFFIX FILE...
 *       the frames no symbol names in binaries whose mapping file name
 *       ends with SUFFIX, over all files: locations=N (such locations),
 *       before=N (their distinct names as readers gave them when each
 *       was named by its address, BASE+0xOFFSET), after=N (their distinct
 *       names now: the Function of a function's start, else that address
 *       label), functions=N (of them, function starts), frames=N and
 *       unnamed_frames=N (sample-weighted frames of those binaries, and
 *       the unnamed among them).
 *   pprofutil encode FILE SECONDS
 *       decode FILE once, then encode it (gzip and raw) again and again
 *       for about SECONDS each; prints one line of key=value figures.
 *   pprofutil merge decode|direct FILE...
 *       read the files into memory, then merge them all as the collector
 *       does: each decoded into a profile then merged (decode, as before
 *       pprof_merge_into()), or merged straight from its bytes (direct);
 *       prints ms= cpu_ms= (the merge only) samples= (distinct stacks)
 *       and fnv= (a hash of the result's pprof encoding: the same in both
 *       modes when they agree to the byte).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/pprof.h"
#include "profile/merge.h"
#include "util/fileio.h"
#include "profile/profile.h"
#include "profile/unnamed.h"

static struct profile *load(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	struct profile *p = NULL;
	int err = read_file(path, &buf, &len);

	if (!err)
		err = pprof_decode(buf, len, &p);
	free(buf);
	if (err) {
		fprintf(stderr, "pprofutil: %s: %s\n", path, strerror(-err));
		exit(1);
	}
	return p;
}

static void print_frame(const struct profile *p, uint64_t loc_id)
{
	const struct pf_location *l = &p->locations[loc_id - 1];
	const char *name = NULL;

	if (l->nlines) {
		const struct pf_function *f =
			&p->functions[l->lines[l->nlines - 1].function_id - 1];

		name = profile_string(p, f->name);
		if (!*name)
			name = profile_string(p, f->system_name);
	}
	if (name && *name && unnamed_location(p, l)) {
		printf("[%s]", name);
	} else if (name && *name) {
		for (; *name; name++)
			putchar(*name == ';' ? ':' : *name == '\n' ? ' ' : *name);
	} else {
		printf("0x%" PRIx64, l->address);
	}
}

static int64_t pid_of(const struct profile *p, const struct pf_sample *sm)
{
	for (size_t l = 0; l < sm->nlabels; l++) {
		const struct pf_label *lb = &sm->labels[l];

		if (!lb->str && lb->key > 0 && (size_t)lb->key < p->nstrings &&
		    !strcmp(p->strings[lb->key], "pid"))
			return lb->num;
	}
	return 0;
}

static bool user_location(const struct profile *p, uint64_t loc_id)
{
	const struct pf_location *l = &p->locations[loc_id - 1];

	return l->mapping_id && strcmp(profile_string(p, p->mappings[l->mapping_id - 1].filename),
				       "[kernel.kallsyms]");
}

/* Every sample, root first; with_pid: "COUNT<TAB>PID<TAB>frames", kernel
 * frames suffixed "_[k]". */
static int cmd_stacks(int argc, char **argv, bool with_pid)
{
	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t s = 0; s < p->nsamples; s++) {
			const struct pf_sample *sm = &p->samples[s];

			if (!sm->values[0])
				continue;
			printf("%" PRId64 "\t", sm->values[0]);
			if (with_pid)
				printf("%" PRId64 "\t", pid_of(p, sm));
			for (size_t k = sm->nlocations; k-- > 0;) {
				const struct pf_location *l =
					&p->locations[sm->location_ids[k] - 1];

				print_frame(p, sm->location_ids[k]);
				if (with_pid && l->mapping_id &&
				    !user_location(p, sm->location_ids[k]))
					fputs("_[k]", stdout);
				if (k)
					putchar(';');
			}
			putchar('\n');
		}
		profile_free(p);
	}
	return 0;
}

static int cmd_ustacks(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t s = 0; s < p->nsamples; s++) {
			const struct pf_sample *sm = &p->samples[s];
			bool first = true;

			if (!sm->values[0])
				continue;
			printf("%" PRId64 "\t%" PRId64 "\t", sm->values[0], pid_of(p, sm));
			for (size_t k = sm->nlocations; k-- > 0;) {
				if (!user_location(p, sm->location_ids[k]))
					continue;
				if (!first)
					putchar(';');
				print_frame(p, sm->location_ids[k]);
				first = false;
			}
			putchar('\n');
		}
		profile_free(p);
	}
	return 0;
}

static bool has_pid(const struct profile *p, const struct pf_sample *sm)
{
	for (size_t l = 0; l < sm->nlabels; l++) {
		const struct pf_label *lb = &sm->labels[l];

		if (!lb->str && lb->num > 0 && lb->key > 0 && (size_t)lb->key < p->nstrings &&
		    !strcmp(p->strings[lb->key], "pid"))
			return true;
	}
	return false;
}

static int cmd_count(int argc, char **argv)
{
	int64_t samples = 0, with_pid = 0;

	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t s = 0; s < p->nsamples; s++) {
			samples += p->samples[s].values[0];
			if (has_pid(p, &p->samples[s]))
				with_pid += p->samples[s].values[0];
		}
		profile_free(p);
	}
	printf("samples=%" PRId64 " with_pid=%" PRId64 " files=%d\n", samples, with_pid, argc);
	return 0;
}

/* The first location of s not in the kernel mapping nor synthetic. */
static const struct pf_location *user_leaf(const struct profile *p, const struct pf_sample *s)
{
	for (size_t i = 0; i < s->nlocations; i++) {
		const struct pf_location *l = &p->locations[s->location_ids[i] - 1];
		const struct pf_mapping *m;

		if (!l->mapping_id)
			continue; /* [lost ...] markers, addresses outside any mapping */
		m = &p->mappings[l->mapping_id - 1];
		if (!strcmp(profile_string(p, m->filename), "[kernel.kallsyms]"))
			continue;
		return l;
	}
	return NULL;
}

struct leaf_row {
	char file[256];
	int64_t n, named;
};

static int cmd_leafshare(int argc, char **argv)
{
	struct leaf_row rows[64] = { 0 };
	int64_t n = 0, named = 0;
	size_t nrows = 0;

	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t k = 0; k < p->nsamples; k++) {
			const struct pf_sample *s = &p->samples[k];
			const struct pf_location *l = user_leaf(p, s);
			const char *file;
			size_t r;

			if (!l)
				continue;
			file = profile_string(p, p->mappings[l->mapping_id - 1].filename);
			for (r = 0; r < nrows && strcmp(rows[r].file, file); r++)
				;
			if (r == nrows && nrows < 64)
				snprintf(rows[nrows++].file, sizeof(rows[0].file), "%s", file);
			n += s->values[0];
			named += unnamed_location(p, l) ? 0 : s->values[0];
			if (r < nrows) {
				rows[r].n += s->values[0];
				rows[r].named += unnamed_location(p, l) ? 0 : s->values[0];
			}
		}
		profile_free(p);
	}
	printf("user_leaf=%" PRId64 " named=%" PRId64 " share=%.1f\n", n, named,
	       n ? 100.0 * named / n : 0.0);
	for (size_t r = 0; r < nrows; r++)
		if (rows[r].n * 100 >= n) /* 1% or more */
			printf("  %s: %" PRId64 " named=%" PRId64 " share=%.1f\n", rows[r].file,
			       rows[r].n, rows[r].named, 100.0 * rows[r].named / rows[r].n);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Does location l belong to a mapping whose file ends with suffix? Its
 * mapping then. */
static const struct pf_mapping *of_suffix(const struct profile *p, const struct pf_location *l,
					  const char *suffix)
{
	const struct pf_mapping *m;
	const char *fn;
	size_t fl, sl = strlen(suffix);

	if (!l->mapping_id)
		return NULL;
	m = &p->mappings[l->mapping_id - 1];
	fn = profile_string(p, m->filename);
	fl = strlen(fn);
	if (fl < sl || strcmp(fn + fl - sl, suffix) || l->address < m->start)
		return NULL;
	return m;
}

static int cmd_offsets(const char *suffix, int argc, char **argv)
{
	uint64_t *offs = NULL;
	size_t n = 0, cap = 0;

	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t k = 0; k < p->nlocations; k++) {
			const struct pf_location *l = &p->locations[k];
			const struct pf_mapping *m = of_suffix(p, l, suffix);

			if (!m)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				offs = realloc(offs, cap * sizeof(*offs));
				if (!offs)
					return 1;
			}
			offs[n++] = l->address - m->start + m->offset;
		}
		profile_free(p);
	}
	qsort(offs, n, sizeof(*offs), cmp_u64);
	for (size_t k = 0; k < n; k++)
		if (!k || offs[k] != offs[k - 1])
			printf("0x%" PRIx64 "\n", offs[k]);
	free(offs);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Distinct strings of v (sorted in place); frees them. */
static size_t distinct(char **v, size_t n)
{
	size_t d = 0;

	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++)
		d += !i || strcmp(v[i], v[i - 1]);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	return d;
}

static int cmd_unnamed(const char *suffix, int argc, char **argv)
{
	char **before = NULL, **after = NULL, **funcs = NULL, label[512];
	size_t n = 0, nf = 0, cap = 0;
	int64_t frames = 0, unnamed = 0;

	for (int i = 0; i < argc; i++) {
		struct profile *p = load(argv[i]);

		for (size_t k = 0; k < p->nlocations; k++) {
			const struct pf_location *l = &p->locations[k];
			const struct pf_mapping *m = of_suffix(p, l, suffix);

			if (!m || !unnamed_location(p, l))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				before = realloc(before, cap * sizeof(*before));
				after = realloc(after, cap * sizeof(*after));
				funcs = realloc(funcs, cap * sizeof(*funcs));
				if (!before || !after || !funcs)
					return 1;
			}
			unnamed_label(label, sizeof(label), profile_string(p, m->filename),
				      l->address - m->start + m->offset);
			before[n] = strdup(label);
			if (l->nlines) {
				after[n] = strdup(profile_string(
					p, p->functions[l->lines[0].function_id - 1].name));
				funcs[nf++] = strdup(after[n]);
			} else {
				after[n] = strdup(label);
			}
			n++;
		}
		for (size_t k = 0; k < p->nsamples; k++) {
			const struct pf_sample *smp = &p->samples[k];

			for (size_t j = 0; j < smp->nlocations; j++) {
				const struct pf_location *l =
					&p->locations[smp->location_ids[j] - 1];

				if (!of_suffix(p, l, suffix))
					continue;
				frames += smp->values[0];
				unnamed += unnamed_location(p, l) ? smp->values[0] : 0;
			}
		}
		profile_free(p);
	}
	printf("locations=%zu before=%zu", n, distinct(before, n));
	printf(" after=%zu", distinct(after, n));
	printf(" functions=%zu frames=%" PRId64 " unnamed_frames=%" PRId64 "\n",
	       distinct(funcs, nf), frames, unnamed);
	free(before);
	free(after);
	free(funcs);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Encode p repeatedly for about secs; per-encoding wall and CPU ms. */
static void encode_loop(const struct profile *p, bool gzip, double secs, size_t *size, double *ms,
			double *cpu_ms, int *iters)
{
	double t0 = now(), c0 = cpu_now(), t;
	int n = 0;

	do {
		uint8_t *buf = NULL;
		size_t len = 0;
		int err = pprof_encode(p, gzip, &buf, &len);

		if (err) {
			fprintf(stderr, "pprofutil: encode: %s\n", strerror(-err));
			exit(1);
		}
		*size = len;
		free(buf);
		n++;
		t = now();
	} while (t - t0 < secs || n < 3);
	*ms = (t - t0) * 1000 / n;
	*cpu_ms = (cpu_now() - c0) * 1000 / n;
	*iters = n;
}

static int cmd_encode(const char *path, double secs)
{
	uint8_t *buf = NULL;
	size_t len = 0, gz_size, raw_size;
	struct profile *p = NULL;
	double t0, dec_ms, gz_ms, gz_cpu, raw_ms, raw_cpu;
	int err, gz_n, raw_n, dec_n = 0;
	int64_t samples = 0;

	if ((err = read_file(path, &buf, &len))) {
		fprintf(stderr, "pprofutil: %s: %s\n", path, strerror(-err));
		return 1;
	}
	t0 = now();
	do {
		if (p)
			profile_free(p);
		p = NULL;
		if ((err = pprof_decode(buf, len, &p))) {
			fprintf(stderr, "pprofutil: %s: %s\n", path, strerror(-err));
			return 1;
		}
		dec_n++;
	} while (now() - t0 < secs / 2 || dec_n < 3);
	dec_ms = (now() - t0) * 1000 / dec_n;
	encode_loop(p, true, secs, &gz_size, &gz_ms, &gz_cpu, &gz_n);
	encode_loop(p, false, secs, &raw_size, &raw_ms, &raw_cpu, &raw_n);
	for (size_t s = 0; s < p->nsamples; s++)
		samples += p->samples[s].values[0];
	printf("file_bytes=%zu samples=%" PRId64 " distinct_stacks=%zu locations=%zu functions=%zu "
	       "mappings=%zu strings=%zu duration_s=%.1f gzip_bytes=%zu gzip_ms=%.3f "
	       "gzip_cpu_ms=%.3f gzip_iters=%d raw_bytes=%zu raw_ms=%.3f raw_cpu_ms=%.3f "
	       "raw_iters=%d decode_ms=%.3f\n",
	       len, samples, p->nsamples, p->nlocations, p->nfunctions, p->nmappings, p->nstrings,
	       p->duration_nanos / 1e9, gz_size, gz_ms, gz_cpu, gz_n, raw_size, raw_ms, raw_cpu,
	       raw_n, dec_ms);
	profile_free(p);
	free(buf);
	return 0;
}

static int cmd_merge(const char *mode, int argc, char **argv)
{
	uint8_t **bufs = calloc((size_t)argc, sizeof(*bufs)), *enc = NULL;
	size_t *lens = calloc((size_t)argc, sizeof(*lens)), enclen = 0;
	bool direct = !strcmp(mode, "direct");
	struct profile *acc = profile_new();
	struct pprof_reader *r = NULL;
	uint64_t h = 0xcbf29ce484222325ULL;
	double t0, c0, ms, cpu_ms;
	int err = 0;

	if (!bufs || !lens || !acc || pprof_reader_new(&r) || (!direct && strcmp(mode, "decode")))
		return 2;
	for (int i = 0; i < argc; i++)
		if ((err = read_file(argv[i], &bufs[i], &lens[i]))) {
			fprintf(stderr, "pprofutil: %s: %s\n", argv[i], strerror(-err));
			return 1;
		}
	t0 = now();
	c0 = cpu_now();
	for (int i = 0; i < argc; i++) {
		struct profile *p = NULL;

		if (direct) {
			err = pprof_merge_into(r, acc, bufs[i], lens[i], NULL);
		} else {
			err = pprof_decode(bufs[i], lens[i], &p);
			if (!err)
				err = profile_merge_where(acc, p, NULL, 0, NULL);
			profile_free(p);
		}
		if (err && err != -EINVAL && err != -EBADMSG && err != -EFBIG) {
			fprintf(stderr, "pprofutil: merge %s: %s\n", argv[i], strerror(-err));
			return 1;
		}
	}
	ms = (now() - t0) * 1000;
	cpu_ms = (cpu_now() - c0) * 1000;
	if ((err = pprof_encode(acc, false, &enc, &enclen))) {
		fprintf(stderr, "pprofutil: encode: %s\n", strerror(-err));
		return 1;
	}
	for (size_t i = 0; i < enclen; i++)
		h = (h ^ enc[i]) * 0x100000001b3ULL;
	printf("mode=%s files=%d ms=%.1f cpu_ms=%.1f samples=%zu fnv=%016" PRIx64 "\n", mode, argc,
	       ms, cpu_ms, acc->nsamples, h);
	for (int i = 0; i < argc; i++)
		free(bufs[i]);
	free(bufs);
	free(lens);
	free(enc);
	pprof_reader_free(r);
	profile_free(acc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "stacks"))
		return cmd_stacks(argc - 2, argv + 2, false);
	if (argc >= 3 && !strcmp(argv[1], "pstacks"))
		return cmd_stacks(argc - 2, argv + 2, true);
	if (argc >= 3 && !strcmp(argv[1], "ustacks"))
		return cmd_ustacks(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "leafshare"))
		return cmd_leafshare(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "count"))
		return cmd_count(argc - 2, argv + 2);
	if (argc >= 4 && !strcmp(argv[1], "offsets"))
		return cmd_offsets(argv[2], argc - 3, argv + 3);
	if (argc >= 4 && !strcmp(argv[1], "unnamed"))
		return cmd_unnamed(argv[2], argc - 3, argv + 3);
	if (argc == 4 && !strcmp(argv[1], "encode"))
		return cmd_encode(argv[2], atof(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "merge"))
		return cmd_merge(argv[2], argc - 3, argv + 3);
	fprintf(stderr, "usage: pprofutil stacks FILE... | pstacks FILE... | ustacks FILE... | "
			"count FILE... | "
			"leafshare FILE... |\n"
			"       offsets SUFFIX FILE... | unnamed SUFFIX FILE... |\n"
			"       encode FILE SECONDS | merge decode|direct FILE...\n");
	return 2;
}
