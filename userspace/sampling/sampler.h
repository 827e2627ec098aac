/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF sampler: loads bpf/profile.bpf.c through its skeleton, attaches
 * a cpu-clock perf event in frequency mode on every online CPU and the
 * fork/exec/exit tracepoints, keeps the target map, delivers process
 * events and drains counted stacks as raw samples.
 *
 * The sampler owns the BPF objects and the stack source; everything it
 * hands to callbacks is valid only during the callback.
 */
#ifndef EBPROF_SAMPLER_H
#define EBPROF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack_source.h"
#include "process/procmaps.h"
#include "unwind_tables.h"
#include "util/profile_types.h"

/* How user stacks are unwound. */
enum sampler_unwind {
	SAMPLER_UNWIND_DWARF = 0, /* from CFI in BPF (whichever way the kernel allows) */
	SAMPLER_UNWIND_FP,	  /* frame pointers, bpf_get_stack() */
	SAMPLER_UNWIND_LOOP,	  /* DWARF, forced: bpf_loop() (5.17+) */
	SAMPLER_UNWIND_TAIL,	  /* DWARF, forced: tail calls (any kernel) */
};

/* Off-CPU waits shorter than the period are taken with the probability
 * of their share of it, and counted as the period: the default, and the
 * longest (the program draws from 32 bits of nanoseconds). */
#define SAMPLER_OFFCPU_PERIOD_US 10000
#define SAMPLER_OFFCPU_PERIOD_US_TEXT "10000" /* the same, for help texts */
#define SAMPLER_OFFCPU_PERIOD_MAX_US 1000000

/* How off-CPU time is taken: sampled by a task iterator where the kernel
 * has a sleepable one (5.18+), else timed at every switch. */
enum sampler_offcpu_path {
	SAMPLER_OFFCPU_AUTO = 0, /* the iterator where the kernel has it */
	SAMPLER_OFFCPU_ITER,	 /* forced: the iterator (an error without it) */
	SAMPLER_OFFCPU_SWITCH,	 /* forced: sched_switch and where it ends */
};

/* The wait sampler's visits per second: the default (measured:
 * bench/waits-cost.sh) and its range. */
#define SAMPLER_OFFCPU_RATE 10
#define SAMPLER_OFFCPU_RATE_TEXT "10" /* the same, for help texts */
#define SAMPLER_OFFCPU_RATE_MAX 100

/* Page faults: one sample every N faults on a CPU, weighing N pages;
 * its default (measured: bench/faults.sh) and the largest. */
#define SAMPLER_FAULTS_PERIOD 1000
#define SAMPLER_FAULTS_PERIOD_TEXT "1000" /* the same, for help texts */
#define SAMPLER_FAULTS_PERIOD_MAX 1000000

struct sampler_opts {
	unsigned types;		   /* PTYPE_BIT()s of the types counted in BPF:
				    * cpu (a cpu-clock perf event at frequency),
				    * offcpu (sched_switch), faults (a page-fault
				    * perf event, every faults_period); 0: cpu */
	uint64_t offcpu_min_ns;	   /* waits shorter than this are not counted */
	uint32_t offcpu_pct;	   /* percent of switches taken, 1..100; 0: 100 */
	uint64_t offcpu_period_ns; /* shorter waits taken by chance, 0: all */
	uint32_t faults_period;	   /* one sample every N page faults, 0: the default */
	int frequency;		   /* Hz, 1..10000 */
	bool all;		   /* every task, no target filter */
	bool kernel;		   /* collect kernel stacks */
	bool user;		   /* collect user stacks */
	bool follow_forks;	   /* children of targets become targets */
	bool queries;		   /* read the statements of pg_procs entries */
	bool plpgsql;		   /* PL/pgSQL frames of plpgsql_procs entries */
	const char *const *comms;  /* exec of a process with one of these names */
	size_t ncomms;		   /* makes it a target; at most EBPROF_MAX_COMMS */
	int interval_s;		   /* seconds between drains, sizes the maps
				    * (map_sizes.h); 0: unknown */
	uint32_t counts_entries;   /* 0 = from CPUs, frequency, interval, or
				    * the environment's EBPROF_MAP_ENTRIES (the
				    * tests' way to fill the maps on purpose) */
	uint32_t stack_entries;	   /* 0 = from CPUs, frequency, interval */
	const char *btf_path;	   /* external vmlinux BTF, NULL = the kernel's */
	const char *btf_cache_dir; /* the kernel BTF's part the program uses
				    * (btf_cache.h): NULL = /var/cache/ebprof/btf,
				    * "" = none (the whole BTF read) */
	enum sampler_unwind unwind;
	uint64_t unwind_budget;	      /* bytes of unwind tables; 0 = 64 MiB */
	const char *unwind_cache_dir; /* NULL = /var/cache/ebprof/unwind, "" = none */

	/* off-CPU: sampled, or timed at every switch (offcpu_min_ns,
	 * offcpu_pct and offcpu_period_ns are its) */
	enum sampler_offcpu_path offcpu_path;
	int offcpu_rate; /* the iterator's visits per second, 0: the default */
};

struct sampler_stats {
	uint64_t v[STAT_MAX]; /* indexed by enum ebprof_stat, summed over CPUs */
};

/* Process life-cycle events (see enum ebprof_event_type); an EVENT_TITLE
 * is a whole struct ebprof_title, an EVENT_QUERY holds its text and NUL,
 * an EVENT_PLPGSQL its n levels. */
typedef void (*sampler_event_fn)(const struct ebprof_event *e, void *ctx);

struct sampler;

/*
 * Check privileges and BTF, open and load the BPF program. On failure
 * returns a negative errno and writes a one-line reason into err (e.g.
 * "missing capability CAP_BPF"); -EPERM for privileges, -ENOTSUP for a
 * kernel without BTF.
 */
int sampler_open(const struct sampler_opts *opts, sampler_event_fn on_event, void *ctx,
		 struct sampler **out, char *err, size_t errlen);

/* Add a process to the target set. 0 or a negative errno. */
int sampler_add_target(struct sampler *s, uint32_t tgid);

/* Where PostgreSQL process tgid keeps its statement (the BPF program
 * copies it to the children it forks); NULL: forget it. 0 or a negative
 * errno. */
int sampler_set_pg_proc(struct sampler *s, uint32_t tgid, const struct ebprof_pg_proc *pg);

/* Where PostgreSQL process tgid's plpgsql.so keeps PL/pgSQL's error
 * callback, and the layout of what the walk reads (callback 0: none; the
 * BPF program copies it to the children it forks). 0 or a negative
 * errno. */
int sampler_set_plpgsql_proc(struct sampler *s, uint32_t tgid,
			     const struct ebprof_plpgsql_proc *pl);

/* Statement texts were forgotten: have every backend thread send its
 * statement again at its next sample. */
void sampler_resend_queries(struct sampler *s);

/* Make every process of a cgroup v2 (by its id: the inode number of its
 * directory) a target when it forks or execs. 0 or a negative errno. */
int sampler_add_cgroup(struct sampler *s, uint64_t cgroup_id);

/*
 * Free stacks no counted sample refers to any more: every stack not seen
 * by the last sampler_drain() nor referenced from the buffer being filled
 * now. A long-running agent calls it after each drain so the
 * map does not fill up (a full map loses new stacks). Returns
 * the number of stacks freed or a negative errno.
 */
int sampler_gc_stacks(struct sampler *s);

/* Attach the process tracepoints (call before scanning /proc so no fork
 * is missed), then the perf events. 0 or a negative errno + reason. */
int sampler_attach_tracepoints(struct sampler *s, char *err, size_t errlen);
int sampler_start(struct sampler *s, char *err, size_t errlen);
/* Detach the perf events: no more samples. Counts stay to be drained. */
void sampler_stop(struct sampler *s);

/* Wait timeout_ms (less when a signal comes), then deliver the process
 * events that came: the BPF program does not wake us per event. Returns
 * the number of events, or a negative errno. */
int sampler_poll(struct sampler *s, int timeout_ms);
/* How long the next sampler_poll() may wait (ms), from what the last
 * ones took: SAMPLER_POLL_MIN_MS on a busy host, up to
 * SAMPLER_POLL_MAX_MS on a quiet one. Not longer: a library an old
 * process loads (its EVENT_MAPS does not wake us) is unwound by frame
 * pointers until the next poll gives it its table. */
#define SAMPLER_POLL_MIN_MS 100
#define SAMPLER_POLL_MAX_MS 500
int sampler_poll_ms(const struct sampler *s);

/* Records of another BPF object's ring buffer (map_fd), handed to
 * fn(ctx, data, size) at every sampler_poll(). 0 or a negative errno. */
typedef int (*sampler_ring_fn)(void *ctx, void *data, size_t size);
int sampler_add_ringbuf(struct sampler *s, int map_fd, sampler_ring_fn fn, void *ctx);

/*
 * Switch sampling to the other counts buffer, then drain (read and delete)
 * the one that was active, handing each entry to fn through the stack
 * source. With both = true the new buffer is drained too (use after
 * sampler_stop()). Returns the number of entries drained or a negative
 * errno (the first error of fn stops the drain).
 */
int sampler_drain(struct sampler *s, bool both, raw_sample_fn fn, void *ctx);

/* The same within an interval, while sampling goes on (a recording's
 * samples symbolized as they come, an ad hoc profile's window): flip and
 * drain, leaving the once-per-interval work (the unwind tables' budget)
 * to sampler_drain(). The entries drained or a negative errno. */
int sampler_drain_early(struct sampler *s, raw_sample_fn fn, void *ctx);
/* The same, the wait sampler's runs of visits left in its threads'
 * entries (they fill no map; taken at the next other drain): a
 * recording's drain every second, so that an idle thread's run is not
 * delivered once a second (bench/waits-perf.sh: most of the recorder's
 * CPU outside the wait sampler's thread with 200 idle backends). */
int sampler_drain_counts(struct sampler *s, raw_sample_fn fn, void *ctx);

/* Sample the CPUs at hz from now on (1..10000), the programs as they
 * are: the frequency of the running perf events changed in place. 0 or
 * a negative errno (the events keep the frequency they had). */
int sampler_set_frequency(struct sampler *s, int hz);
/* The frequency sampled at now. */
int sampler_frequency(const struct sampler *s);

/* --unwind dwarf: pid's maps as a thread read them when the BPF program
 * announced it (a new process: sampling/maps_prefetch.h) by the event of
 * time ns (its ktime_ns), with its executable's path in *exe (may be
 * NULL); both the caller's (procmaps_free, free). NULL when none: frame
 * pointers, not announced, or not read. Each is handed out once. */
struct proc_maps *sampler_prefetched(struct sampler *s, uint32_t pid, uint64_t ns, char **exe);

/* --unwind dwarf: give pid's executable mappings and their unwind
 * tables to the BPF program (after its first sample, a new library, or
 * at the start for processes already running). execd: maps are of an
 * image pid exec'd (unwind_tables_load()). 0 with frame pointers; 0 or a
 * negative errno (-ESTALE: pid exec'd since, maps are of its old image). */
int sampler_unwind_process(struct sampler *s, uint32_t pid, const struct proc_maps *maps,
			   bool execd);

/* pid exited: drop its mappings should userspace have given them after
 * the BPF program dropped them at the exit (unwind_tables_exited()). */
void sampler_unwind_forget(struct sampler *s, uint32_t pid);

/* --unwind dwarf: child forked from parent at ktime fork_ns, the BPF
 * program copying parent's set to it (no EVENT_F_UNREADY): child holds
 * that set (unwind_tables_inherit()). 0, or a negative errno: child loads
 * its own at its first sample. */
int sampler_unwind_inherit(struct sampler *s, uint32_t child, uint32_t parent, uint64_t fork_ns);

/* Does pid still have the set it inherited at its fork
 * (unwind_tables_inherited())? false with frame pointers. gone: its
 * process is known to have exited (unwind_tables_inherited_gone()). */
bool sampler_unwind_inherited(struct sampler *s, uint32_t pid, bool gone);

/* What the unwinder did (zeros with frame pointers). */
struct sampler_unwind_info {
	const char *mode; /* "dwarf (bpf_loop)", "dwarf (tail calls)", "frame pointers" */
	struct unwind_tables_stats tables;
	struct dwarf_stack_stats stacks;
};
void sampler_unwind_info(const struct sampler *s, struct sampler_unwind_info *out);
/* "dwarf", "fp", or (tests, benchmarks) "dwarf-loop", "dwarf-tail";
 * 0 or -EINVAL. */
int sampler_unwind_parse(const char *s, enum sampler_unwind *out);
const char *sampler_unwind_mode_name(enum sampler_unwind u);
/* The names of enum unwind_end, for markers and metrics ("no unwind table"). */
const char *sampler_unwind_end_name(unsigned end);

/* How off-CPU time is taken, for -v and /metrics: "iterator" (sampled),
 * "switch" (timed at every switch), NULL when the session takes none;
 * the iterator's visits per second, and the CPU time its thread spent
 * (the wait sampler's whole cost, the BPF program's included: it runs in
 * that thread's reads). */
struct sampler_offcpu_info {
	const char *path;
	/* iterator: "targets" (their threads alone, one run), "processes"
	 * (their threads alone, a link per process) or "host" (every thread) */
	const char *visits;
	int rate;
	uint64_t ticks; /* visits of every thread */
	/* "processes": links held now, the most, made and closed since the
	 * start, and visits made of the host instead (more targets than links) */
	uint64_t links, links_max, links_made, links_closed, links_over;
	uint64_t late;	 /* periods the thread was held up past (the next visit counts them) */
	uint64_t cpu_ns; /* the thread's CPU time */
};
void sampler_offcpu_info(const struct sampler *s, struct sampler_offcpu_info *out);
/* "auto", "iterator", "switch"; 0 or -EINVAL. */
int sampler_offcpu_path_parse(const char *name, enum sampler_offcpu_path *out);

/* The counter (enum ebprof_stat) of the samples BPF took of type t:
 * STAT_SAMPLES for cpu, STAT_FAULT_SAMPLES for faults; -1 for a type
 * counted otherwise (offcpu: its waits) or not by BPF. */
int sampler_type_stat(enum ptype t);

/* Counters summed over CPUs since load. */
int sampler_read_stats(struct sampler *s, struct sampler_stats *out);

/* Online CPUs the perf event is attached to. */
int sampler_ncpus(const struct sampler *s);

/* Was the program loaded with the cached part of the kernel's BTF
 * (btf_cache.h), not the whole of it? */
bool sampler_btf_cached(const struct sampler *s);

void sampler_close(struct sampler *s);

/* Names of the stats for messages ("stacks lost (stack map full)", ...). */
const char *sampler_stat_name(enum ebprof_stat stat);
/* What was lost, from counters indexed by enum ebprof_stat (a struct
 * sampler_stats' v, or a difference of two): "3 stacks lost (stack map
 * full), 1 ..." into buf, "" when nothing was. */
void sampler_loss_text(const uint64_t *lost, char *buf, size_t len);

#endif /* EBPROF_SAMPLER_H */
