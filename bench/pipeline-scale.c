// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's flush path at a scale this host cannot sample: the samples
 * of a 64-CPU host at 99 Hz, a thousand backends, ten thousand distinct
 * stacks per interval, through the real pipeline (pipeline/feed.c: the
 * session's builders, symbolizer, labels, pprof encoding and the store
 * sink, as the agent runs them), with BPF replaced by this program's
 * drain only.
 *
 *   pipeline-scale [--procs N] [--stacks N] [--cpus N] [--hz N]
 *                  [--interval S] [--intervals N] [--warmup N]
 *                  [--dist zipf|uniform] [--own-maps] [--dir DIR]
 *
 * The backends are real processes: children of this program, forked
 * after every library is mapped, asleep until it ends; the session reads
 * their /proc/PID/maps (as forks of a known parent they share its
 * snapshot, as the postmaster's backends do; --own-maps: each its own, as
 * processes found at the start). The stacks are made of real code
 * addresses: the middle of function symbols (.symtab, else .dynsym) of
 * every object mapped (this program, libc, libdw, libcurl, ...), 10 to 40
 * user frames, and for half of them 4 to 16 kernel frames from
 * /proc/kallsyms. Stack i belongs to backend i mod procs; every stack is
 * counted every interval, cpus x hz x interval samples in all (one each,
 * the rest by rank 1/r with --dist zipf, evenly with uniform), each
 * (process, stack) handed once with its count, as the count maps hand
 * them. The same stacks come back every interval (a steady load).
 *
 * Per interval one line of figures; at the end the medians over the
 * intervals after the warm-up, "key=value" (bench/pipeline-scale.sh
 * reads them). Profiles go to DIR (a temporary directory, removed, when
 * not given) as the agent's store writes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <link.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pipeline/session.h"
#include "sinks/store/store.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_INTERVALS 64

struct opts {
	int procs, stacks, cpus, hz, interval_s, intervals, warmup;
	bool zipf, own_maps;
	const char *dir;
};

struct stack {
	uint32_t pid;
	uint16_t nk, nu;
	uint64_t count;
	uint64_t *frames; /* nk kernel then nu user, leaf first */
};

struct pool {
	uint64_t *a;
	size_t n, cap;
};

struct feed {
	struct stack *st;
	size_t n;
	/* at the end of the drain: the builders hold the interval */
	double drain_ms, drain_cpu_ms;
	size_t heap_built;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) /* xorshift64*: deterministic runs */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int pool_add(struct pool *p, uint64_t a)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4096;
		uint64_t *n = realloc(p->a, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->a = n;
		p->cap = cap;
	}
	p->a[p->n++] = a;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : cmp_u64(x + 1, y + 1);
}

static void pool_unique(struct pool *p)
{
	size_t j = 0;

	if (!p->n)
		return;
	qsort(p->a, p->n, sizeof(*p->a), cmp_u64);
	for (size_t i = 1; i < p->n; i++)
		if (p->a[i] != p->a[j])
			p->a[++j] = p->a[i];
	p->n = j + 1;
}

/* The middle of every sized function symbol of the object at path,
 * loaded at base: .symtab when it has one, else .dynsym. */
static void elf_functions(const char *path, uint64_t base, struct pool *p)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL, *use = NULL;
	GElf_Shdr sh;
	Elf *e;

	if (fd < 0)
		return;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !use))
			use = scn;
	}
	if (use && gelf_getshdr(use, &sh) && sh.sh_entsize) {
		Elf_Data *d = elf_getdata(use, NULL);
		size_t n = sh.sh_size / sh.sh_entsize;
		GElf_Sym sym;

		for (size_t i = 0; d && i < n; i++) {
			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
			    sym.st_size < 2)
				continue;
			if (pool_add(p, base + sym.st_value + sym.st_size / 2))
				break;
		}
	}
	elf_end(e);
	close(fd);
}

static int each_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	const char *name = info->dlpi_name;
	(void)size;

	if (!name[0])
		name = "/proc/self/exe";
	else if (name[0] != '/')
		return 0; /* the vDSO */
	elf_functions(name, info->dlpi_addr, ctx);
	return 0;
}

static void kernel_functions(struct pool *p)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], type, name[256];
	unsigned long long a;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && a &&
		    (type == 't' || type == 'T') && strncmp(name, "__pfx_", 6) &&
		    pool_add(p, a + 1))
			break;
	if (f)
		fclose(f);
}

/* Stack i: the backend i mod procs, random chains from the pools. */
static int make_stacks(const struct opts *o, const uint32_t *pids, const struct pool *user,
		       const struct pool *kern, struct stack *st)
{
	uint64_t total = (uint64_t)o->cpus * o->hz * o->interval_s, left, given = 0;
	double wsum = 0;

	for (int i = 0; i < o->stacks; i++) {
		struct stack *s = &st[i];

		s->pid = pids[i % o->procs];
		s->nu = (uint16_t)(10 + rnd() % 31);
		s->nk = kern->n && (rnd() & 1) ? (uint16_t)(4 + rnd() % 13) : 0;
		s->frames = malloc((s->nk + s->nu) * sizeof(*s->frames));
		if (!s->frames)
			return -ENOMEM;
		for (int j = 0; j < s->nk; j++)
			s->frames[j] = kern->a[rnd() % kern->n];
		for (int j = 0; j < s->nu; j++)
			s->frames[s->nk + j] = user->a[rnd() % user->n];
	}
	/* one sample each, the rest by rank (ranks shuffled over the stacks) */
	left = total - (uint64_t)o->stacks;
	for (int r = 1; r <= o->stacks; r++)
		wsum += o->zipf ? 1.0 / r : 1.0;
	for (int i = 0; i < o->stacks; i++) {
		double w = o->zipf ? 1.0 / (i + 1) : 1.0;

		st[i].count = 1 + (uint64_t)(left * w / wsum);
		given += st[i].count;
	}
	for (int i = 0; given < total; i = (i + 1) % o->stacks, given++)
		st[i].count++;
	for (int i = o->stacks - 1; i > 0; i--) {
		size_t j = rnd() % (size_t)(i + 1);
		uint64_t c = st[i].count;

		st[i].count = st[j].count;
		st[j].count = c;
	}
	return 0;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Distinct (process, address) pairs: the locations of all the profiles
 * of an interval (the builder interns one per address per mapping). */
static size_t count_locations(const struct stack *st, size_t n)
{
	size_t total = 0, m = 0, k = 0;
	uint64_t *a;

	for (size_t i = 0; i < n; i++)
		total += st[i].nk + st[i].nu;
	a = malloc(total * 2 * sizeof(*a));
	if (!a)
		return 0;
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < st[i].nk + st[i].nu; j++) {
			a[2 * m] = st[i].pid;
			a[2 * m++ + 1] = st[i].frames[j];
		}
	qsort(a, m, 2 * sizeof(*a), cmp_pair);
	for (size_t i = 0; i < m; i++)
		k += !i || a[2 * i] != a[2 * i - 2] || a[2 * i + 1] != a[2 * i - 1];
	free(a);
	return k;
}

/* The drain: every (process, stack) once with its count. */
static int drain(raw_sample_fn add, void *add_ctx, void *ctx)
{
	struct feed *f = ctx;
	int64_t t0 = mono_ns();
	double c0 = cpu_ms();

	for (size_t i = 0; i < f->n; i++) {
		const struct stack *s = &f->st[i];
		struct raw_sample rs = { 0 };
		int err;

		rs.pid = rs.tid = s->pid;
		snprintf(rs.comm, sizeof(rs.comm), "postgres");
		rs.count = s->count;
		rs.nkernel = s->nk;
		rs.kernel = s->frames;
		rs.nuser = s->nu;
		rs.user = s->frames + s->nk;
		rs.user_end = UNWIND_END_OK;
		err = add(&rs, add_ctx);
		if (err)
			return err;
	}
	f->drain_ms = (mono_ns() - t0) / 1e6;
	f->drain_cpu_ms = cpu_ms() - c0;
	f->heap_built = mallinfo2().uordblks;
	return (int)f->n;
}

/* VmRSS or VmHWM of this process, KiB. */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	size_t klen = strlen(key);
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtol(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1)
			fprintf(stderr, "pipeline-scale: cannot reset the peak RSS\n");
		close(fd);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void usage(void)
{
	fprintf(stderr, "usage: pipeline-scale [--procs N] [--stacks N] [--cpus N] [--hz N] "
			"[--interval S] [--intervals N] [--warmup N] [--dist zipf|uniform] "
			"[--own-maps] [--dir DIR]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	/* the integer options first, in the order of ints[] */
	static const struct option lo[] = {
		{ "procs", 1, NULL, 'n' },    { "stacks", 1, NULL, 'n' },
		{ "cpus", 1, NULL, 'n' },     { "hz", 1, NULL, 'n' },
		{ "interval", 1, NULL, 'n' }, { "intervals", 1, NULL, 'n' },
		{ "warmup", 1, NULL, 'n' },   { "dist", 1, NULL, 'd' },
		{ "own-maps", 0, NULL, 'o' }, { "dir", 1, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	int *ints[] = { &o->procs,	&o->stacks,    &o->cpus,  &o->hz,
			&o->interval_s, &o->intervals, &o->warmup };
	int c, idx = 0;

	*o = (struct opts){ .procs = 1000,
			    .stacks = 10000,
			    .cpus = 64,
			    .hz = 99,
			    .interval_s = 10,
			    .intervals = 5,
			    .warmup = 1,
			    .zipf = true };
	while ((c = getopt_long(argc, argv, "", lo, &idx)) != -1) {
		if (c == 'n')
			*ints[idx] = atoi(optarg);
		else if (c == 'd')
			o->zipf = !strcmp(optarg, "zipf");
		else if (c == 'o')
			o->own_maps = true;
		else if (c == 'D')
			o->dir = optarg;
		else
			usage();
	}
	if (optind != argc || o->procs < 1 || o->stacks < 1 || o->cpus < 1 || o->hz < 1 ||
	    o->interval_s < 1 || o->intervals < 1 || o->warmup < 0 ||
	    o->intervals + o->warmup > MAX_INTERVALS ||
	    (uint64_t)o->stacks > (uint64_t)o->cpus * o->hz * o->interval_s)
		usage();
}

/* Forked now, asleep until this program ends: the backends. */
static int spawn(int n, uint32_t *pids)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -errno;
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		pids[i] = (uint32_t)pid;
	}
	return 0;
}

static void reap(int n, const uint32_t *pids)
{
	for (int i = 0; i < n; i++)
		if (pids[i])
			kill((pid_t)pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		if (pids[i])
			waitpid((pid_t)pids[i], NULL, 0);
}

struct figures {
	double wall_ms, cpu_ms, drain_ms, drain_cpu_ms;
	double rss_before, rss_peak, rss_after; /* KiB */
	double heap_built;			/* bytes the builders held, at the drain's end */
};

static int run(const struct opts *o, struct session *s, struct feed *fd, struct figures *fig)
{
	int64_t end = wall_ns();

	for (int k = 0; k < o->warmup + o->intervals; k++) {
		struct session_interval iv;
		struct figures *g = &fig[k];
		size_t heap0 = mallinfo2().uordblks;
		double c0, w0;
		int err;

		reset_peak();
		g->rss_before = status_kib("VmRSS");
		c0 = cpu_ms();
		w0 = mono_ns() / 1e6;
		end += (int64_t)o->interval_s * NSEC_PER_SEC;
		err = session_flush_fed(s, end, drain, fd, &iv);
		g->wall_ms = mono_ns() / 1e6 - w0;
		g->cpu_ms = cpu_ms() - c0;
		g->drain_ms = fd->drain_ms;
		g->drain_cpu_ms = fd->drain_cpu_ms;
		g->heap_built = (double)fd->heap_built - (double)heap0;
		g->rss_peak = status_kib("VmHWM");
		malloc_trim(0); /* as the agent does after each interval */
		g->rss_after = status_kib("VmRSS");
		printf("interval %d%s: flush %.1f ms wall %.1f ms cpu (drain %.1f ms, %.1f ms "
		       "cpu), "
		       "%llu profiles, %llu failed, %llu samples, %llu stacks; RSS %.0f -> peak "
		       "%.0f -> %.0f KiB; builders' heap %.0f KiB\n",
		       k + 1, k < o->warmup ? " (warm-up)" : "", g->wall_ms, g->cpu_ms, g->drain_ms,
		       g->drain_cpu_ms, (unsigned long long)iv.written,
		       (unsigned long long)iv.failed, (unsigned long long)iv.built.samples,
		       (unsigned long long)iv.built.stacks, g->rss_before, g->rss_peak,
		       g->rss_after, g->heap_built / 1024);
		fflush(stdout);
		if (err || iv.failed || iv.built.stacks != fd->n) {
			fprintf(stderr,
				"pipeline-scale: interval %d: %llu of %zu stacks built, "
				"%llu profiles failed\n",
				k + 1, (unsigned long long)iv.built.stacks, fd->n,
				(unsigned long long)iv.failed);
			return -EIO;
		}
	}
	return 0;
}

static void summary(const struct opts *o, struct figures *fig, double rss_setup, size_t nlocs)
{
	int n = o->intervals;
	double v[MAX_INTERVALS];
	struct figures *m = fig + o->warmup;
	double peak, after, heap;

#define MED(field)                                                                                 \
	({                                                                                         \
		for (int i = 0; i < n; i++)                                                        \
			v[i] = m[i].field;                                                         \
		median(v, n);                                                                      \
	})
	peak = MED(rss_peak);
	after = MED(rss_after);
	heap = MED(heap_built);
	printf("median: flush_wall_ms=%.1f flush_cpu_ms=%.1f drain_ms=%.1f drain_cpu_ms=%.1f\n",
	       MED(wall_ms), MED(cpu_ms), MED(drain_ms), MED(drain_cpu_ms));
	printf("median: rss_setup_kib=%.0f rss_peak_kib=%.0f rss_steady_kib=%.0f "
	       "rss_first_kib=%.0f\n",
	       rss_setup, peak, after, fig[0].rss_after);
	printf("per_stack: heap_bytes=%.0f peak_rss_bytes=%.0f retained_rss_bytes=%.0f "
	       "flush_cpu_us=%.2f\n",
	       heap / o->stacks, (peak - MED(rss_before)) * 1024 / o->stacks,
	       (after - rss_setup) * 1024 / o->stacks, MED(cpu_ms) * 1000 / o->stacks);
	printf("per_location: locations=%zu heap_bytes=%.0f\n", nlocs, nlocs ? heap / nlocs : 0);
#undef MED
}

int main(int argc, char **argv)
{
	struct pool user = { 0 }, kern = { 0 };
	struct figures fig[MAX_INTERVALS] = { 0 };
	struct session_opts so = { 0 };
	struct sink *store = NULL;
	struct session *s = NULL;
	struct feed fd = { 0 };
	char tmp[] = "/tmp/pipeline-scale.XXXXXX";
	uint64_t fed = 0;
	size_t nlocs;
	uint32_t *pids;
	double rss_setup;
	int ret;
	struct opts o;

	parse(argc, argv, &o);
	/* as the agent (agent/agent.c) */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_ARENA_MAX, 2);
	log_set_level(LOG_WARN);
	elf_version(EV_CURRENT);
	pids = calloc((size_t)o.procs, sizeof(*pids));
	fd.st = calloc((size_t)o.stacks, sizeof(*fd.st));
	fd.n = (size_t)o.stacks;
	if (!pids || !fd.st)
		return 1;
	ret = spawn(o.procs, pids);
	if (!ret) {
		dl_iterate_phdr(each_object, &user);
		kernel_functions(&kern);
		pool_unique(&user);
		pool_unique(&kern);
		ret = user.n ? make_stacks(&o, pids, &user, &kern, fd.st) : -ENOENT;
	}
	if (!ret && !o.dir)
		ret = mkdtemp(tmp) ? 0 : -errno;
	if (!ret)
		ret = store_sink_open(&(struct store_opts){ .dir = o.dir ? o.dir : tmp }, &store);
	if (!ret) {
		so.split = SESSION_PER_PROCESS;
		so.frequency = o.hz;
		so.interval_s = o.interval_s;
		so.kernel = so.user = true;
		so.service = "pipeline-scale";
		so.group_short_lived = true;
		so.sinks = &store;
		so.nsinks = 1;
		ret = session_open_fed(&so, &s);
	}
	if (!ret && !o.own_maps)
		ret = session_fed_process(s, (uint32_t)getpid(), 0);
	for (int i = 0; !ret && i < o.procs; i++)
		ret = session_fed_process(s, pids[i], o.own_maps ? 0 : (uint32_t)getpid());
	if (ret) {
		fprintf(stderr, "pipeline-scale: cannot set up: %s\n", strerror(-ret));
		goto out;
	}
	for (int i = 0; i < o.stacks; i++)
		fed += fd.st[i].count;
	printf("load: %d cpus x %d Hz x %d s = %llu samples per interval over %d stacks (%s) "
	       "of %d processes (%s maps); %zu user and %zu kernel functions to draw from\n",
	       o.cpus, o.hz, o.interval_s, (unsigned long long)fed, o.stacks,
	       o.zipf ? "zipf" : "uniform", o.procs, o.own_maps ? "own" : "shared", user.n, kern.n);
	printf("fed: samples=%llu stacks=%d intervals=%d\n",
	       (unsigned long long)fed * (uint64_t)(o.warmup + o.intervals), o.stacks,
	       o.warmup + o.intervals);
	nlocs = count_locations(fd.st, fd.n);
	malloc_trim(0);
	rss_setup = status_kib("VmRSS");
	ret = run(&o, s, &fd, fig);
	if (!ret)
		summary(&o, fig, rss_setup, nlocs);
out:
	session_close(s);
	sink_close(store, 0);
	if (!o.dir)
		nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	reap(o.procs, pids);
	for (int i = 0; i < o.stacks; i++)
		free(fd.st[i].frames);
	free(fd.st);
	free(pids);
	free(user.a);
	free(kern.a);
	return ret ? 1 : 0;
}
