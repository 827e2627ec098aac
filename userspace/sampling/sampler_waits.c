// SPDX-License-Identifier: BSD-2-Clause
/*
 * The wait sampler (bpf/waits.bpf.h): off-CPU time sampled rather than
 * timed at every switch, on kernels with a sleepable task iterator
 * (5.18+). Which of the two ways a session takes (sampler.h's
 * enum sampler_offcpu_path), the iterator's links, and the thread that
 * reads them at the rate. Which threads a read visits (waits_visit_mode):
 *  - the targets', in one run of waits_visit_targets (6.7+: the kfuncs
 *    it calls; loaded from an object of its own, waits_targets.h);
 *  - the targets', a link of waits_visit per target process (6.1+:
 *    waits_links.h), each read in turn; past the links' limit the host's;
 *  - every thread of the host, one link of waits_visit (5.18-6.0, -a).
 * Targets' threads found off the CPU count as waits of one period. The
 * thread's CPU time is the sampler's whole cost (the program runs in its
 * reads), kept for /metrics. Stacks the program keeps for threads that
 * have not run since are kept alive across the stack GC.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf_features.h"
#include "sampler_internal.h"
#include "util/log.h"
#include "waits_links.h"
#include "waits_targets.h"

#define NSEC 1000000000LL

struct waits {
	struct profile_bpf *skel;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* stop */
	bool stop;
	int link_fd;		   /* the host's or the targets' link; -1: per process */
	struct waits_links *links; /* ... the links per process */
	int host_fd;		   /* ... the host's link, past their limit (-1: none yet) */
	size_t links_max;
	bool links_forced; /* ... EBPROF_WAITS_LINKS_MAX: no cost limit */
	_Atomic bool over; /* ... visiting the host's now */
	size_t worth;	   /* ... waits_links_worth(), read once a second */
	int rate;
	int64_t period_ns;
	_Atomic uint64_t ticks, late, cpu_ns;
	_Atomic uint64_t nlinks, made, closed, nover;
};

int sampler_offcpu_path_parse(const char *name, enum sampler_offcpu_path *out)
{
	static const char *const names[] = { "auto", "iterator", "switch" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*out = (enum sampler_offcpu_path)i;
			return 0;
		}
	return -EINVAL;
}

/*
 * Which threads a visit looks at: the targets' in one run (6.7+: the
 * kernel has its kfuncs), else theirs a link per process (6.1+), else the host's (and
 * with -a). EBPROF_WAITS_VISIT=host|processes|targets forces one (an
 * error where it cannot be): for bench/waits-cost.sh to measure each
 * in one run.
 */
static int choose_visit(struct sampler *s, const struct sampler_opts *opts, const char **why,
			char *err, size_t errlen)
{
	static const char *const names[] = { "host", "processes", "targets" };
	const char *force = getenv("EBPROF_WAITS_VISIT");
	bool targets = features_have_task_iter_targets();
	bool procs = features_have_task_iter_pid() && waits_links_usable();
	size_t i;

	if (force && *force) {
		for (i = 0; i < 3 && strcmp(force, names[i]); i++)
			;
		if (i == 3 || (i == WAITS_VISIT_TARGETS && !targets) ||
		    (i == WAITS_VISIT_PROCS && !procs) || (opts->all && i != WAITS_VISIT_HOST)) {
			snprintf(err, errlen,
				 "EBPROF_WAITS_VISIT=%s: not a way this build, kernel or session "
				 "can visit (host; processes: Linux 6.1+, the host's PID "
				 "namespace; targets: 6.7+; -a: host alone)",
				 force);
			return -ENOTSUP;
		}
		s->waits_visit = (enum waits_visit_mode)i;
		*why = i == WAITS_VISIT_HOST ? "every thread of the host (forced)"
		       : i == WAITS_VISIT_PROCS
			       ? "the targets' threads, a link per process (forced)"
			       : "the targets' threads in one run (forced)";
		return 0;
	}
	s->waits_visit = opts->all ? WAITS_VISIT_HOST
			 : targets ? WAITS_VISIT_TARGETS
			 : procs   ? WAITS_VISIT_PROCS
				   : WAITS_VISIT_HOST;
	*why = opts->all ? "every thread of the host (-a)"
	       : targets ? "the targets' threads in one run"
	       : procs	 ? "the targets' threads, a link per process"
	       : !features_have_task_iter_pid()
		       ? "every thread of the host (a link per process needs Linux 6.1+)"
		       : "every thread of the host (in a child PID namespace)";
	return 0;
}

int offcpu_choose(struct sampler *s, const struct sampler_opts *opts, char *err, size_t errlen)
{
	const char *why = "";
	bool have;
	int ret;

	s->offcpu_rate = opts->offcpu_rate ? opts->offcpu_rate : SAMPLER_OFFCPU_RATE;
	if (!(opts->types & PTYPE_BIT(PTYPE_OFFCPU))) {
		s->offcpu_path = SAMPLER_OFFCPU_AUTO; /* none */
		return 0;
	}
	have = features_have_task_iter_s(); /* probed now: off-CPU only */
	if (s->offcpu_rate < 1 || s->offcpu_rate > SAMPLER_OFFCPU_RATE_MAX) {
		snprintf(err, errlen, "offcpu-rate must be between 1 and %d Hz, got %d",
			 SAMPLER_OFFCPU_RATE_MAX, s->offcpu_rate);
		return -EINVAL;
	}
	if (opts->offcpu_path == SAMPLER_OFFCPU_ITER && !have) {
		snprintf(err, errlen,
			 "offcpu-path iterator needs a sleepable task iterator with "
			 "bpf_copy_from_user_task() (Linux 5.18+, its own BTF): not this kernel");
		return -ENOTSUP;
	}
	s->offcpu_path = opts->offcpu_path == SAMPLER_OFFCPU_SWITCH || !have ? SAMPLER_OFFCPU_SWITCH
									     : SAMPLER_OFFCPU_ITER;
	if (s->offcpu_path == SAMPLER_OFFCPU_ITER) {
		ret = choose_visit(s, opts, &why, err, errlen);
		if (ret)
			return ret;
	}
	if (s->offcpu_path == SAMPLER_OFFCPU_ITER)
		log_info("off-CPU: sampled by a sleepable task iterator at %d Hz, no hook at "
			 "switches, visiting %s",
			 s->offcpu_rate, why);
	else
		log_info("off-CPU: timed at every switch (%s)",
			 have ? "offcpu-path switch"
			      : "this kernel has no sleepable task iterator, Linux 5.18+");
	return 0;
}

void waits_configure(struct sampler *s)
{
	struct profile_bpf *sk = s->skel;
	bool on = s->offcpu_path == SAMPLER_OFFCPU_ITER;

	/* also when the targets are visited in one run (its own object,
	 * waits_targets.h): the links' way, should that one not load */
	bpf_program__set_autoload(sk->progs.waits_visit, on);
	sk->rodata->waits_user_fp = s->unwind == SAMPLER_UNWIND_FP;
	if (!on)
		bpf_map__set_max_entries(sk->maps.waits_threads, 1);
}

static int64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * NSEC + t.tv_nsec;
}

/* One visit of every thread (of the targets, or of the host): a read of a
 * new iterator to its end. */
static void visit(int link_fd)
{
	char buf[64];
	int fd = bpf_iter_create(link_fd);

	if (fd < 0) {
		log_debug("wait sampler: cannot create the iterator: %s", strerror(errno));
		return;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* One visit of the targets' threads, a link per process: the links made
 * and closed as the targets came and went. Where links cost more than the
 * host walk (waits_links_worth(): the targets many against the host's
 * threads), or past their limit, the host's threads instead (said once
 * each way; back to links under four fifths of the limit). */
static void visit_procs(struct waits *w)
{
	size_t limit, nt = 0;
	uint64_t made, closed;
	int ret;

	/* the host's threads (/proc/loadavg) once a second, not every read */
	if (!w->links_forced && (!w->worth || atomic_load(&w->ticks) % w->rate == 0))
		w->worth = waits_links_worth();
	limit = w->links_forced ? SIZE_MAX : w->worth;

	if (w->over && limit != SIZE_MAX)
		limit = limit / 5 * 4;
	ret = waits_links_sync(w->links, limit, &nt);
	if (ret == -E2BIG) {
		if (!w->over)
			log_info("wait sampler: %zu target processes, more than %s %zu: "
				 "visiting every thread of the host instead",
				 nt,
				 nt > w->links_max ? "the links it may hold (half RLIMIT_NOFILE)"
						   : "a seventh of the host's threads, where links "
						     "cost more than the host walk:",
				 nt > w->links_max ? w->links_max : limit);
		w->over = true;
		if (w->host_fd < 0) {
			w->host_fd = bpf_link_create(bpf_program__fd(w->skel->progs.waits_visit), 0,
						     BPF_TRACE_ITER, NULL);
			if (w->host_fd < 0)
				log_debug("wait sampler: cannot link the host's visit: %s",
					  strerror(errno));
		}
		if (w->host_fd >= 0)
			visit(w->host_fd);
		atomic_fetch_add(&w->nover, 1);
	} else {
		if (ret)
			log_debug("wait sampler: cannot read the targets: %s", strerror(-ret));
		if (w->over && !ret)
			log_info("wait sampler: %zu target processes: visiting theirs alone again, "
				 "a link each",
				 nt);
		w->over = w->over && ret;
		waits_links_visit(w->links);
	}
	waits_links_totals(w->links, &made, &closed);
	atomic_store(&w->nlinks, waits_links_count(w->links));
	atomic_store(&w->made, made);
	atomic_store(&w->closed, closed);
}

/* The most a visit counts: a reader held up longer (stopped, a machine
 * suspended) leaves the rest out rather than give it all to what it finds. */
#define WAITS_MAX_NS NSEC

static void *tick(void *arg)
{
	struct waits *w = arg;
	int64_t next = mono_ns(), last = next, now;
	struct timespec cpu, at;

	pthread_setname_np(pthread_self(), "ebprof-waits"); /* its CPU told apart (bench/) */
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		next += w->period_ns;
		at.tv_sec = next / NSEC;
		at.tv_nsec = next % NSEC;
		if (pthread_cond_timedwait(&w->wake, &w->lock, &at) != ETIMEDOUT)
			continue; /* told to stop (or woken for nothing) */
		/* the visit under the lock: a drain taking the runs of the
		 * threads (waits_take_runs()) waits for it to end */
		/* a visit stands for the time since the last one: a late one
		 * (the thread held up on a busy host) for more than a period */
		now = mono_ns();
		w->skel->bss->waits_ns =
			(uint64_t)(now - last < WAITS_MAX_NS ? now - last : WAITS_MAX_NS);
		last = now;
		if (w->links)
			visit_procs(w);
		else
			visit(w->link_fd);
		atomic_fetch_add(&w->ticks, 1);
		if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu))
			atomic_store(&w->cpu_ns, (uint64_t)cpu.tv_sec * NSEC + cpu.tv_nsec);
		/* more than a period behind: on from now, said so */
		now = mono_ns();
		if (now > next + w->period_ns) {
			atomic_fetch_add(&w->late, (uint64_t)((now - next) / w->period_ns));
			next += (now - next) / w->period_ns * w->period_ns;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The one-run visit's program loaded and linked with the session's
 * (sampler_open(): its load, the kernel's whole BTF read and a verifier
 * run, is the start's, not the first visits'); should it fail, the next
 * way this kernel has (-v says which). */
void waits_load(struct sampler *s)
{
	char why[256];

	if (s->offcpu_path != SAMPLER_OFFCPU_ITER || s->waits_visit != WAITS_VISIT_TARGETS ||
	    s->waits_link)
		return;
	if (!waits_targets_attach(s, &s->waits_link, why, sizeof(why)))
		return;
	s->waits_visit = features_have_task_iter_pid() && waits_links_usable() ? WAITS_VISIT_PROCS
									       : WAITS_VISIT_HOST;
	log_warn("wait sampler: cannot visit the targets' threads in one run (%s): visiting %s "
		 "instead",
		 why,
		 s->waits_visit == WAITS_VISIT_PROCS ? "theirs a link per process"
						     : "every thread of the host");
}

int waits_attach(struct sampler *s, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	struct waits *w;
	int ret;

	if (s->offcpu_path != SAMPLER_OFFCPU_ITER || s->waits)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->link_fd = w->host_fd = -1;
	waits_load(s); /* again after a detach (its link destroyed) */
	if (s->waits_visit == WAITS_VISIT_PROCS) {
		w->links_max = waits_links_max(&w->links_forced);
		ret = waits_links_new(bpf_program__fd(s->skel->progs.waits_visit),
				      bpf_map__fd(s->skel->maps.targets), w->links_max, &w->links);
		if (ret) {
			snprintf(err, errlen, "cannot start the wait sampler: %s", strerror(-ret));
			free(w);
			return ret;
		}
	} else if (s->waits_visit == WAITS_VISIT_HOST) {
		s->waits_link = bpf_program__attach_iter(s->skel->progs.waits_visit, NULL);
	}
	if (!w->links && !s->waits_link) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach the wait sampler's task iterator: %s",
			 strerror(errno));
		free(w);
		return ret;
	}
	if (s->waits_link)
		w->link_fd = bpf_link__fd(s->waits_link);
	w->skel = s->skel;
	w->period_ns = NSEC / s->offcpu_rate;
	w->rate = s->offcpu_rate;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&w->thread, NULL, tick, w);
	if (ret) {
		snprintf(err, errlen, "cannot start the wait sampler's thread: %s", strerror(-ret));
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		waits_links_free(w->links);
		free(w);
		bpf_link__destroy(s->waits_link);
		s->waits_link = NULL;
		return ret;
	}
	s->waits = w;
	log_debug("off-CPU sampled by a task iterator at %d Hz (%s)", s->offcpu_rate,
		  s->waits_visit == WAITS_VISIT_TARGETS ? "the targets' threads, one run"
		  : w->links				? "the targets' threads, a link per process"
							: "every thread of the host");
	return 0;
}

void waits_detach(struct sampler *s)
{
	struct waits *w = s->waits;

	if (w) {
		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
		s->waits_ticks = atomic_load(&w->ticks);
		s->waits_late = atomic_load(&w->late);
		s->waits_cpu_ns = atomic_load(&w->cpu_ns);
		s->waits_over = atomic_load(&w->nover);
		s->waits_max = w->links_max;
		s->waits_host_end = w->over;
		waits_links_totals(w->links, &s->waits_made, &s->waits_closed);
		s->waits_closed += waits_links_count(w->links); /* closed now */
		waits_links_free(w->links);
		if (w->host_fd >= 0)
			close(w->host_fd);
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		free(w);
		s->waits = NULL;
	}
	bpf_link__destroy(s->waits_link);
	s->waits_link = NULL;
}

#define MARK_CHUNK 256

/* The stacks the program keeps for threads that have not run since. */
void waits_mark_live(struct sampler *s)
{
	int fd = bpf_map__fd(s->skel->maps.waits_threads);
	uint32_t keys[MARK_CHUNK], out = 0, n;
	struct waits_thread *vals;
	void *in = NULL;
	bool done = false;

	if (s->offcpu_path != SAMPLER_OFFCPU_ITER)
		return;
	vals = calloc(MARK_CHUNK, sizeof(*vals));
	if (!vals) {
		s->seen_cap = SIZE_MAX; /* cannot tell what is in use: free nothing */
		return;
	}
	while (!done) {
		n = MARK_CHUNK;
		if (bpf_map_lookup_batch(fd, in, &out, keys, vals, &n, NULL)) {
			if (errno != ENOENT) {
				s->seen_cap = SIZE_MAX;
				break;
			}
			done = true;
		}
		in = &out;
		for (uint32_t i = 0; i < n; i++) {
			sampler_mark_stack(s, vals[i].key.s.kstack);
			sampler_mark_stack(s, vals[i].key.s.ustack);
			sampler_mark_stack(s, vals[i].idle_kstack);
			sampler_mark_stack(s, vals[i].ustack);
		}
	}
	free(vals);
}

/*
 * The runs of visits the program keeps in the threads' entries (struct
 * waits_thread), handed to fn as the counts map's entries are: those of
 * the epoch ending, read with the visits paused (the reader holds w->lock
 * through a visit), then the epoch moved on, so that the program leaves
 * them behind (waits_fold()). A wait in progress is so counted up to the
 * drain, as it was when every visit went to the counts.
 */
int waits_take_runs(struct sampler *s, raw_sample_fn fn, void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.waits_threads), ret = 0, total = 0;
	uint32_t keys[MARK_CHUNK], out = 0, n, epoch;
	struct waits_thread *vals = NULL, *runs = NULL, *more;
	size_t nruns = 0, cap = 0;
	struct waits *w = s->waits;
	void *in = NULL;
	bool done = false;

	if (s->offcpu_path != SAMPLER_OFFCPU_ITER)
		return 0;
	vals = calloc(MARK_CHUNK, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (w)
		pthread_mutex_lock(&w->lock);
	epoch = s->skel->bss->waits_epoch;
	while (!done) {
		n = MARK_CHUNK;
		if (bpf_map_lookup_batch(fd, in, &out, keys, vals, &n, NULL)) {
			if (errno != ENOENT) {
				ret = -errno;
				break;
			}
			done = true;
		}
		in = &out;
		for (uint32_t i = 0; i < n; i++) {
			if (!vals[i].run_count || vals[i].run_epoch != epoch)
				continue;
			if (nruns == cap) {
				cap = cap ? cap * 2 : MARK_CHUNK;
				more = realloc(runs, cap * sizeof(*runs));
				if (!more) {
					ret = -ENOMEM;
					done = true;
					break;
				}
				runs = more;
			}
			runs[nruns++] = vals[i];
		}
	}
	/* taken (or lost: a failed read): the program leaves them */
	s->skel->bss->waits_epoch = epoch + 1;
	if (w)
		pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < nruns && !ret; i++) {
		struct offcpu_value v = { .count = runs[i].run_count, .ns = runs[i].run_ns };

		ret = offcpu_deliver(s, &runs[i].key, &v, fn, ctx);
		total++;
	}
	free(runs);
	free(vals);
	return ret < 0 ? ret : total;
}

void sampler_offcpu_info(const struct sampler *s, struct sampler_offcpu_info *out)
{
	const struct waits *w = s->waits;

	memset(out, 0, sizeof(*out));
	if (!(s->types & PTYPE_BIT(PTYPE_OFFCPU)))
		return;
	out->path = s->offcpu_path == SAMPLER_OFFCPU_ITER ? "iterator" : "switch";
	if (s->offcpu_path != SAMPLER_OFFCPU_ITER)
		return;
	out->visits = s->waits_visit == WAITS_VISIT_TARGETS ? "targets"
		      : s->waits_visit == WAITS_VISIT_PROCS && !(w ? w->over : s->waits_host_end)
			      ? "processes"
			      : "host";
	out->rate = s->offcpu_rate;
	out->ticks = w ? atomic_load(&w->ticks) : s->waits_ticks;
	out->late = w ? atomic_load(&w->late) : s->waits_late;
	out->cpu_ns = w ? atomic_load(&w->cpu_ns) : s->waits_cpu_ns;
	if (s->waits_visit != WAITS_VISIT_PROCS)
		return;
	out->links = w ? atomic_load(&w->nlinks) : 0;
	out->links_max = w ? w->links_max : s->waits_max;
	out->links_made = w ? atomic_load(&w->made) : s->waits_made;
	out->links_closed = w ? atomic_load(&w->closed) : s->waits_closed;
	out->links_over = w ? atomic_load(&w->nover) : s->waits_over;
}
