// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampling/ layer (ARCHITECTURE.md): the BPF program's userspace side.
 * This file loads bpf/profile.bpf.c through its skeleton, attaches the
 * perf events and process tracepoints, keeps the target map and delivers
 * process events; sampler_drain.c drains the counts; sampler_stats.c
 * reads the program's counters and names them; bpf_features.c
 * checks what the kernel and the process allow first; stack sources (stack_source.h,
 * unwind_fp.c) turn stack ids into addresses. Everything leaves this layer
 * as a struct raw_sample or a struct ebprof_event.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "btf_cache.h"
#include "map_sizes.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "sampler_internal.h"
#include "verifier_stats.h"

static void fmt_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* While an optional program is tried (the trampoline or kprobe for titles
 * at exit), libbpf's warnings are debug lines: a failure there has a
 * fallback and is reported once by its caller. */
static bool libbpf_optional;

void sampler_libbpf_optional(bool on)
{
	libbpf_optional = on;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_optional && level == LIBBPF_WARN)
		level = LIBBPF_DEBUG;
	if (level == LIBBPF_WARN && log_get_level() < LOG_INFO)
		return 0; /* the caller reports the failure in one line */
	if (level != LIBBPF_WARN && log_get_level() < LOG_DEBUG)
		return 0;
	/* Verbatim: verifier logs are long and multi-line. */
	return vfprintf(stderr, fmt, ap);
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	s->poll_bytes += size;
	s->poll_records++;
	if (size < sizeof(struct ebprof_event))
		return 0;
	if (((struct ebprof_event *)data)->type == EVENT_TITLE &&
	    size < sizeof(struct ebprof_title))
		return 0;
	/* a statement's record ends with its text (and NUL) */
	if (((struct ebprof_event *)data)->type == EVENT_QUERY &&
	    (size < offsetof(struct ebprof_query, text) ||
	     ((struct ebprof_query *)data)->len >= size - offsetof(struct ebprof_query, text)))
		return 0;
	/* a PL/pgSQL chain's ends with its n levels */
	if (((struct ebprof_event *)data)->type == EVENT_PLPGSQL &&
	    (size < offsetof(struct ebprof_plpgsql, level) ||
	     ((struct ebprof_plpgsql *)data)->n > EBPROF_PLPGSQL_DEPTH ||
	     size < offsetof(struct ebprof_plpgsql, level) +
			     ((struct ebprof_plpgsql *)data)->n *
				     sizeof(struct ebprof_plpgsql_level)))
		return 0;
	if (s->on_event)
		s->on_event(data, s->event_ctx);
	return 0;
}

/* Open the skeleton, configure it from opts and load it; fentry: with the
 * trampoline program for titles at exit, else the kprobe one. */
static int open_and_load(struct sampler *s, const struct sampler_opts *opts,
			 const struct bpf_object_open_opts *oopts, bool fentry, char *err,
			 size_t errlen)
{
	struct verifier_stats *vs;
	int64_t t0;
	int ret;

	s->skel = profile_bpf__open_opts(oopts);
	if (!s->skel) {
		ret = -errno;
		fmt_err(err, errlen, "cannot open the BPF program: %s", strerror(errno));
		return ret;
	}
	s->skel->rodata->filter_targets = !opts->all;
	s->skel->rodata->want_kernel = opts->kernel;
	s->skel->rodata->want_user = opts->user;
	s->skel->rodata->follow_forks = opts->follow_forks;
	s->skel->rodata->ncomms = opts->ncomms;
	s->skel->rodata->want_queries = opts->queries;
	s->skel->rodata->want_plpgsql = opts->plpgsql;
	for (size_t i = 0; i < opts->ncomms; i++)
		strncpy((char *)s->skel->rodata->comms[i], opts->comms[i],
			EBPROF_TASK_COMM_LEN - 1);
	sampler_size_maps(s, opts);
	bpf_program__set_autoload(s->skel->progs.on_group_exit_fentry, fentry);
	bpf_program__set_autoload(s->skel->progs.on_group_exit_kprobe, !fentry);
	unwind_configure(s, opts);
	offcpu_configure(s, opts);
	faults_configure(s, opts);

	vs = verifier_stats_arm(s->skel->obj);
	t0 = mono_ns();
	ret = profile_bpf__load(s->skel);
	verifier_stats_report(vs, s->skel->obj, (mono_ns() - t0) / 1e6);
	if (!ret)
		return 0;
	if (ret == -EPERM || ret == -EACCES)
		fmt_err(err, errlen,
			"the kernel refused to load the BPF program (%s): missing "
			"CAP_BPF/CAP_SYS_ADMIN, or kernel.unprivileged_bpf_disabled/lockdown",
			strerror(-ret));
	else
		fmt_err(err, errlen,
			"cannot load the BPF program: %s (run with -v for the verifier log)",
			features_libbpf_strerror(ret));
	return ret;
}

int sampler_open(const struct sampler_opts *opts, sampler_event_fn on_event, void *ctx,
		 struct sampler **out, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct btf_cache min = { .fd = -1 };
	struct sampler *s;
	bool fentry;
	int ret;

	libbpf_set_print(libbpf_print); /* before anything of libbpf speaks */
	if (opts->frequency < 1 || opts->frequency > 10000) {
		fmt_err(err, errlen, "frequency must be between 1 and 10000 Hz, got %d",
			opts->frequency);
		return -EINVAL;
	}
	if (opts->ncomms > EBPROF_MAX_COMMS) {
		fmt_err(err, errlen, "at most %d process names, got %zu", EBPROF_MAX_COMMS,
			opts->ncomms);
		return -EINVAL;
	}
	ret = features_require(opts->btf_path, err, errlen);
	if (ret)
		return ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->on_event = on_event;
	s->event_ctx = ctx;
	s->frequency = opts->frequency;
	s->types = opts->types ? opts->types : PTYPE_BIT(PTYPE_CPU);
	ret = offcpu_choose(s, opts, err, errlen);
	if (ret) {
		free(s);
		return ret;
	}
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		ret = s->ncpus ? s->ncpus : -EINVAL;
		fmt_err(err, errlen, "cannot count CPUs: %s", strerror(-ret));
		free(s);
		return ret;
	}
	s->pfds = calloc(s->ncpus, sizeof(*s->pfds));
	s->links = calloc(s->ncpus, sizeof(*s->links));
	s->keys = calloc(DRAIN_CHUNK, sizeof(*s->keys));
	s->values = calloc(DRAIN_CHUNK, sizeof(*s->values));
	if (!s->pfds || !s->links || !s->keys || !s->values) {
		ret = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < s->ncpus; i++)
		s->pfds[i] = -1;

	if (opts->btf_path) {
		oopts.btf_custom_path = opts->btf_path;
	} else {
		/* The part of the kernel's BTF the program relocates with, not
		 * all of it (a 12 MiB peak); without fentry, which would read
		 * all of it again to attach (the kprobe takes its place). */
		size_t len;
		const void *obj = profile_bpf__elf_bytes(&len);

		if (!btf_cache_get(opts->btf_cache_dir, obj, len, &min))
			oopts.btf_custom_path = min.path;
	}
	/* With the trampoline for titles at exit when the kernel's own BTF
	 * is there; should that program not load, once more without it, and
	 * without it from then on (features_fentry_refused()). */
	fentry = !oopts.btf_custom_path && !features_fentry_refused();
	libbpf_optional = fentry;
	ret = open_and_load(s, opts, &oopts, fentry, err, errlen);
	libbpf_optional = false;
	if (ret && fentry) {
		log_debug("loading without the fentry program: %s", err);
		profile_bpf__destroy(s->skel);
		s->skel = NULL;
		ret = open_and_load(s, opts, &oopts, false, err, errlen);
		if (!ret) /* fentry was what the kernel refused */
			features_fentry_refuse();
	}
	if (ret && min.fd >= 0) { /* the kernel's whole BTF, as without the cache */
		log_warn("cannot load the BPF program with the cached part of the kernel's BTF "
			 "(%s): loading it with the whole BTF",
			 err);
		profile_bpf__destroy(s->skel);
		s->skel = NULL;
		oopts.btf_custom_path = NULL;
		ret = open_and_load(s, opts, &oopts, false, err, errlen);
	}
	s->btf_cached = !ret && oopts.btf_custom_path && min.fd >= 0;
	btf_cache_close(&min);
	if (ret)
		goto fail;
	waits_load(s); /* the wait sampler's one-run visit: its own object */
	log_info("BPF maps for %d CPUs at %d Hz every %d s: %u counts, %u stacks, %u processes, "
		 "%u off-CPU counts, %u fault counts (about %.1f MiB at most, %s); event ring "
		 "%u KiB",
		 s->ncpus, opts->frequency,
		 opts->interval_s > 0 ? opts->interval_s : MAP_SIZES_DEFAULT_INTERVAL_S,
		 bpf_map__max_entries(s->skel->maps.counts0),
		 bpf_map__max_entries(s->skel->maps.stacks),
		 bpf_map__max_entries(s->skel->maps.targets),
		 bpf_map__max_entries(s->skel->maps.offcpu_counts0),
		 bpf_map__max_entries(s->skel->maps.fault_counts0),
		 s->map_bytes / (1024.0 * 1024.0),
		 s->prealloc ? "preallocated" : "allocated as used",
		 bpf_map__max_entries(s->skel->maps.events) / 1024);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		ret = -errno;
		fmt_err(err, errlen, "cannot open the event ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (s->unwind != SAMPLER_UNWIND_FP)
		ret = unwind_setup(s, opts, err, errlen);
	else if ((ret = stack_source_fp_new(bpf_map__fd(s->skel->maps.stacks), &s->stacks)))
		fmt_err(err, errlen, "cannot create the stack source: %s", strerror(-ret));
	if (ret)
		goto fail;
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return ret;
}

bool sampler_btf_cached(const struct sampler *s)
{
	return s->btf_cached;
}

int sampler_add_target(struct sampler *s, uint32_t tgid)
{
	uint8_t yes = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.targets), &tgid, &yes, BPF_ANY))
		return -errno;
	return 0;
}

int sampler_set_pg_proc(struct sampler *s, uint32_t tgid, const struct ebprof_pg_proc *pg)
{
	int fd = bpf_map__fd(s->skel->maps.pg_procs);

	if (!pg)
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	if (bpf_map_update_elem(fd, &tgid, pg, BPF_ANY))
		return -errno;
	return 0;
}

int sampler_set_plpgsql_proc(struct sampler *s, uint32_t tgid, const struct ebprof_plpgsql_proc *pl)
{
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.plpgsql_procs), &tgid, pl, BPF_ANY))
		return -errno;
	/* after the entry: its process may have cached an older one */
	if (pl->callback)
		__atomic_add_fetch(&s->skel->bss->plpgsql_epoch, 1, __ATOMIC_RELEASE);
	return 0;
}

void sampler_resend_queries(struct sampler *s)
{
	__atomic_add_fetch(&s->skel->bss->query_gen, 1, __ATOMIC_RELAXED);
}

/* Titles at exit are a refinement (without them, the title last seen in
 * a sample stands): the trampoline, else a kprobe, else a debug line. */
static void attach_title_hook(struct sampler *s)
{
	struct bpf_program *fentry = s->skel->progs.on_group_exit_fentry;
	struct bpf_program *kprobe = s->skel->progs.on_group_exit_kprobe;
	int ret = 0;

	libbpf_optional = true;
	if (bpf_program__autoload(fentry)) {
		s->skel->links.on_group_exit_fentry = bpf_program__attach(fentry);
		ret = s->skel->links.on_group_exit_fentry ? 0 : -errno;
	} else {
		s->skel->links.on_group_exit_kprobe = bpf_program__attach(kprobe);
		ret = s->skel->links.on_group_exit_kprobe ? 0 : -errno;
	}
	libbpf_optional = false;
	if (!ret)
		return;
	log_debug("no process titles at exit (%s on do_group_exit: %s): the title of a "
		  "process is the one its samples saw",
		  bpf_program__autoload(fentry) ? "fentry" : "kprobe", strerror(-ret));
}

int sampler_attach_tracepoints(struct sampler *s, char *err, size_t errlen)
{
	struct bpf_program *progs[] = { s->skel->progs.on_fork, s->skel->progs.on_exec,
					s->skel->progs.on_exit };
	struct bpf_link **links[] = { &s->skel->links.on_fork, &s->skel->links.on_exec,
				      &s->skel->links.on_exit };

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		*links[i] = bpf_program__attach(progs[i]);
		if (!*links[i]) {
			int ret = -errno;

			fmt_err(err, errlen, "cannot attach %s: %s", bpf_program__name(progs[i]),
				strerror(errno));
			return ret;
		}
	}
	attach_title_hook(s);
	return 0;
}

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int sampler_attach_cpus(struct sampler *s, struct perf_event_attr *attr, struct bpf_program *prog,
			int *fds, struct bpf_link **links, const char *what, char *err,
			size_t errlen)
{
	int n = 0;

	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		int fd = perf_event_open(attr, cpu);

		if (fd < 0) {
			int ret = -errno;

			if (ret == -ENODEV)
				continue; /* possible but offline CPU */
			fmt_err(err, errlen, "perf_event_open on CPU %d failed: %s%s", cpu,
				strerror(errno),
				errno == EACCES || errno == EPERM
					? " (missing CAP_PERFMON, or kernel.perf_event_paranoid)"
					: "");
			return ret;
		}
		fds[cpu] = fd;
		links[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!links[cpu]) {
			int ret = -errno;

			fmt_err(err, errlen, "cannot attach %s on CPU %d: %s", what, cpu,
				strerror(errno));
			return ret;
		}
		n++;
	}
	return n;
}

void sampler_detach_cpus(struct sampler *s, int *fds, struct bpf_link **links)
{
	for (int cpu = 0; fds && links && cpu < s->ncpus; cpu++) {
		bpf_link__destroy(links[cpu]);
		links[cpu] = NULL;
		if (fds[cpu] >= 0)
			close(fds[cpu]);
		fds[cpu] = -1;
	}
}

int sampler_start(struct sampler *s, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
	};
	int ret = offcpu_attach(s, err, errlen);

	if (!ret)
		ret = faults_attach(s, err, errlen);
	if (ret || !(s->types & PTYPE_BIT(PTYPE_CPU))) {
		if (ret)
			sampler_stop(s);
		return ret;
	}
	attr.sample_freq = (uint64_t)s->frequency;
	ret = sampler_attach_cpus(s, &attr, unwind_sample_prog(s), s->pfds, s->links, "the sampler",
				  err, errlen);
	if (ret < 0) {
		sampler_stop(s);
		return ret;
	}
	s->nattached = ret;
	if (!s->nattached) {
		fmt_err(err, errlen, "no online CPU to sample");
		return -ENODEV;
	}
	return 0;
}

/*
 * cpu-clock is an hrtimer event: the kernel turns the frequency it was
 * opened with into a fixed period (perf_swevent_init_hrtimer() clears
 * attr.freq), so a new rate is given as its period in nanoseconds.
 */
int sampler_set_frequency(struct sampler *s, int hz)
{
	uint64_t period;

	if (hz < 1 || hz > 10000)
		return -EINVAL;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		period = 1000000000ull / (uint64_t)hz;
		if (s->pfds[cpu] >= 0 && ioctl(s->pfds[cpu], PERF_EVENT_IOC_PERIOD, &period)) {
			int ret = -errno;

			period = 1000000000ull / (uint64_t)s->frequency;
			for (int c = 0; c < cpu; c++) /* as they were */
				if (s->pfds[c] >= 0)
					ioctl(s->pfds[c], PERF_EVENT_IOC_PERIOD, &period);
			return ret;
		}
	}
	s->frequency = hz;
	return 0;
}

int sampler_frequency(const struct sampler *s)
{
	return s->frequency;
}

void sampler_stop(struct sampler *s)
{
	offcpu_detach(s);
	faults_detach(s);
	sampler_detach_cpus(s, s->pfds, s->links);
	s->nattached = 0;
}

/*
 * The next wait: every wake-up costs the agent more than what little a
 * quiet host sends, so the wait doubles (up to SAMPLER_POLL_MAX_MS) while
 * a poll takes under a 32nd of the smallest ring, and falls back to
 * SAMPLER_POLL_MIN_MS once one takes more than an 8th: at a steady rate
 * the rings stay under a quarter full. Records of the rings other files
 * add (sampler_add_ringbuf()) count as the largest event each. Events
 * that cannot wait wake userspace at once (EVENT_F_UNREADY).
 */
static void adapt_poll(struct sampler *s, uint64_t records)
{
	uint64_t ring = bpf_map__max_entries(s->skel->maps.events), bytes = s->poll_bytes;
	int ms = sampler_poll_ms(s);

	if (s->urb && bpf_map__max_entries(s->skel->maps.ustacks) < ring)
		ring = bpf_map__max_entries(s->skel->maps.ustacks);
	if (records > s->poll_records)
		bytes += (records - s->poll_records) * sizeof(struct ebprof_query);
	if (bytes > ring / 8)
		ms = SAMPLER_POLL_MIN_MS;
	else if (bytes < ring / 32 && ms < SAMPLER_POLL_MAX_MS)
		ms = ms * 2 > SAMPLER_POLL_MAX_MS ? SAMPLER_POLL_MAX_MS : ms * 2;
	s->poll_ms = ms;
}

int sampler_poll(struct sampler *s, int timeout_ms)
{
	int ret = 0, waited = 0;

	/* The program submits without waking us (BPF_RB_NO_WAKEUP): wait
	 * the timeout out (a signal ends it early), then take what came. */
	s->poll_bytes = s->poll_records = 0;
	if (timeout_ms > 0)
		ret = ring_buffer__poll(s->rb, timeout_ms);
	if (ret < 0 && ret != -EINTR)
		return ret;
	waited = ret > 0 ? ret : 0;
	ret = ring_buffer__consume(s->rb);
	if (ret >= 0 && s->urb)
		ring_buffer__consume(s->urb);
	if (ret >= 0)
		adapt_poll(s, (uint64_t)waited + (uint64_t)ret);
	return ret;
}

int sampler_poll_ms(const struct sampler *s)
{
	return s->poll_ms ? s->poll_ms : SAMPLER_POLL_MIN_MS;
}

int sampler_add_ringbuf(struct sampler *s, int map_fd, sampler_ring_fn fn, void *ctx)
{
	return ring_buffer__add(s->rb, map_fd, fn, ctx);
}

int sampler_add_cgroup(struct sampler *s, uint64_t cgroup_id)
{
	uint8_t yes = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.target_cgroups), &cgroup_id, &yes,
				BPF_ANY))
		return -errno;
	return 0;
}

int sampler_ncpus(const struct sampler *s)
{
	return s->nattached ? s->nattached : s->fault_cpus;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	if (s->pfds)
		sampler_stop(s);
	offcpu_cut_detach(s);
	maps_prefetch_stop(s->prefetch);
	ring_buffer__free(s->rb);
	ring_buffer__free(s->urb);
	unwind_tables_free(s->tables);
	if (s->stacks)
		s->stacks->destroy(s->stacks);
	profile_bpf__destroy(s->skel);
	free(s->pfds);
	free(s->links);
	free(s->keys);
	free(s->values);
	free(s->seen);
	free(s->okeys);
	free(s->ovalues);
	free(s->fault_fds);
	free(s->fault_links);
	free(s);
}
