/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Structures shared by the BPF sampler (bpf/profile.bpf.c) and userspace
 * (userspace/sampling/sampler.c). Included from BPF after vmlinux.h and from
 * userspace after <linux/types.h>; it must not include anything itself.
 */
#ifndef EBPROF_BPF_SHARED_H
#define EBPROF_BPF_SHARED_H

#define EBPROF_TASK_COMM_LEN 16
#define EBPROF_MAX_STACK_DEPTH 127 /* PERF_MAX_STACK_DEPTH */
#define EBPROF_MAX_COMMS 8	   /* names in the default target rule */
#define EBPROF_QUERY_LEN 1024	   /* statement text captured, its NUL included */

/* Key of the counts maps: one entry per distinct (thread, name, stacks). */
struct sample_key {
	__u32 tgid;
	__u32 tid;
	__u64 kstack; /* key of the kernel stack in `stacks`, 0: none */
	__u64 ustack; /* key of the user stack in `stacks`, 0: none */
	char comm[EBPROF_TASK_COMM_LEN];
	__u32 flags; /* SAMPLE_*: see below */
	__u32 pad;
	/* PostgreSQL backends (pg_procs): the hash of the statement text the
	 * backend was running (its text came as an EVENT_QUERY), 0: none;
	 * the query id it published, 0: none or not running. */
	__u64 query;
	__s64 query_id;
	/* The PL/pgSQL functions it was running: the hash of their chain
	 * (sent as an EVENT_PLPGSQL), 0: none. */
	__u64 plpgsql;
};

#define SAMPLE_KSTACK_LOST 1u	/* a kernel stack was taken but could not be kept */
#define SAMPLE_USTACK_LOST 2u	/* a user stack was taken but could not be kept */
#define SAMPLE_QUERY_GAP 4u	/* running, between two statements (no text) */
#define SAMPLE_QUERY_LOST 8u	/* running a statement whose text was not kept */
#define SAMPLE_USTACK_DWARF 16u /* ustack is a DWARF-unwound stack (`ustacks`) */
#define SAMPLE_USER_EXACT 32u	/* ustack (frame pointers) starts at an interrupted instruction */

/* Value of the `pg_procs` map, keyed by tgid: where a PostgreSQL process
 * keeps what it runs, set by userspace from the executable's symbols and
 * copied to forked children. Addresses are in the process; 0: absent
 * (query_string 0: not a PostgreSQL process). */
struct ebprof_pg_proc {
	__u64 query_string;	   /* &debug_query_string (const char *) */
	__u64 be_entry;		   /* &MyBEEntry (PgBackendStatus *), PostgreSQL 14+ */
	__u16 state_off;	   /* offsetof(PgBackendStatus, st_state) */
	__u16 query_id_off;	   /* offsetof(PgBackendStatus, st_query_id), 0: none */
	__s32 state_running;	   /* value of STATE_RUNNING in that version */
	__u32 major;		   /* major version, 0: unknown (wait event names) */
	__u32 wait_event_off;	   /* where the wait event is in what *wait_event points to */
	__u64 wait_event;	   /* &my_wait_event_info (uint32 *, offset 0), PostgreSQL 14+;
				    * &MyProc (PGPROC *, offset of wait_event_info) before; 0: none */
	__u64 error_context_stack; /* &error_context_stack (ErrorContextCallback *), 0: none */
};

/*
 * PL/pgSQL frames. Each PL/pgSQL function running pushes an entry
 * {previous, callback, arg} on the backend's error_context_stack whose
 * callback is plpgsql.so's plpgsql_exec_error_callback and arg its
 * PLpgSQL_execstate. Value of the `plpgsql_procs` map, keyed by tgid: where
 * that callback is in the process (plpgsql.so is loaded per backend) and
 * the layout of what the walk reads, set by userspace (callback 0: no
 * PL/pgSQL in the process) and copied to forked children. Offsets are of
 * PostgreSQL's structs in that version (sampling/plpgsql_bin.c).
 */
#define EBPROF_PLPGSQL_DEPTH 16	   /* PL/pgSQL functions kept, innermost first */
#define EBPROF_PLPGSQL_ENTRIES 48  /* error_context_stack entries walked at most */
#define EBPROF_PLPGSQL_SIG_LEN 256 /* signature text captured, its NUL included */
#define EBPROF_PLPGSQL_SPAN 256	   /* bytes of a PLpgSQL_execstate read at most */

struct ebprof_plpgsql_proc {
	__u64 callback;	       /* &plpgsql_exec_error_callback, 0: none */
	__u16 span;	       /* bytes of PLpgSQL_execstate read: past its last offset */
	__u16 func_off;	       /* offsetof(PLpgSQL_execstate, func) */
	__u16 err_stmt_off;    /* ... err_stmt */
	__u16 err_var_off;     /* ... err_var (15+), 0: none */
	__u16 signature_off;   /* offsetof(PLpgSQL_function, fn_signature) */
	__u16 stmt_lineno_off; /* offsetof(PLpgSQL_stmt, lineno) */
	__u16 var_lineno_off;  /* offsetof(PLpgSQL_variable, lineno) */
	__u16 pad;
};

/*
 * Off-CPU time (--type offcpu): when a targeted thread leaves the CPU, the
 * time and its state are kept (`offcpu_starts`); when it comes back, a
 * wait at least the period long is taken whole and a shorter one with a
 * probability of its share of the period, counted as the period (so the
 * sum stays the time away, on average). A wait taken gets its stacks,
 * statement and PostgreSQL wait event in the thread's own context as it
 * resumes (unchanged since it left), and its time is added to the entry of
 * that key in `offcpu_counts0/1` (flipped with the CPU counts by
 * active_counts).
 */
enum offcpu_state {
	OFFCPU_SLEEPING = 1, /* waiting, interruptible (S) */
	OFFCPU_DISK,	     /* waiting, uninterruptible (D): disk, page faults */
	OFFCPU_RUNNABLE,     /* preempted or yielded: waiting for a CPU */
	OFFCPU_STATE_MAX,
};

struct offcpu_key {
	struct sample_key s;
	__u32 wait_event; /* PostgreSQL's wait_event_info as it left, 0: none */
	__u8 state;	  /* enum offcpu_state */
	__u8 has_wait;	  /* 1: a process whose wait events are read */
	__u16 pg_major;	  /* its PostgreSQL major version, 0: unknown */
};

/* A targeted thread (`offcpu_starts`, by tid; cleared when the
 * thread exits): its process, since when away (0: on a CPU), and how. */
struct offcpu_start {
	__u64 ts;
	__u32 tgid;
	__u8 state; /* enum offcpu_state */
};

struct offcpu_value {
	__u64 count; /* times away */
	__u64 ns;    /* time away */
};

/* A wait in progress at a drain, cut there (the `offcpu_cut` task
 * iterator's record, switch path): its time so far is counted in the
 * interval ending, the rest where it ends. Nothing but its kernel stack
 * can be had from outside the thread without sleeping: userspace reads
 * its statement and wait event (process_vm_readv). */
struct offcpu_cut_rec {
	__u32 tgid;
	__u32 tid;
	__u64 ns; /* away so far (since its last cut), or the period */
	char comm[EBPROF_TASK_COMM_LEN];
	__u32 nkernel; /* frames in ips */
	__u8 state;    /* enum offcpu_state */
	__u8 pad[3];
	__u64 ips[EBPROF_MAX_STACK_DEPTH];
};

/* The wait sampler (bpf/waits.bpf.h, kernels with a sleepable task
 * iterator): at each tick, a visit of every thread of the targets; one
 * found off the CPU counts as a wait of one period under its key. What it
 * keeps of a thread between visits (`waits_threads`, by tid), so that one
 * that has not run since (its switch count unchanged) costs one lookup;
 * userspace keeps the stacks named here alive. Its visits under one key
 * are a run, added to the counts when the key changes (by the program)
 * or at a drain (by userspace, the runs of waits_epoch then, which it
 * moves on): most threads count nothing in the counts map at a visit. */
struct waits_thread {
	/* what a visit of a thread not run since reads, in one cache line */
	__u64 start;	       /* the thread's start_time: a tid taken again differs */
	__u64 nsw;	       /* nvcsw + nivcsw at the last visit */
	__u64 run_ns;	       /* its run: time counted under key, not yet in */
	__u32 run_count;       /* the counts (0: none), of visits, */
	__u32 run_epoch;       /* of waits_epoch then (another: drained) */
	__u32 gen;	       /* query_gen of key's statement */
	__u32 pl_epoch;	       /* plpgsql_epoch of key's PL/pgSQL chain */
	__u8 state;	       /* key.state */
	__u8 idle;	       /* ustack and idle_kstack: of a visit idle for its client */
	__u16 idle_major;      /* pg_major of its idle visit */
	__u32 idle_kflags;     /* SAMPLE_KSTACK_LOST of idle_kstack */
	struct offcpu_key key; /* what the last visit counted: its run's key */
	__u64 idle_kstack;     /* the kernel stack of its last idle visit */
	__u64 ustack;	       /* the user stack last taken (0: none) */
	__u64 ustack_pc;       /* ... at these user registers: reused */
	__u64 ustack_sp;       /* where they are the same (0: none) */
	__u64 ustack_bp;
	__u32 ustack_flags; /* its SAMPLE_* user stack flags */
	__u32 pad;
};

/* Value of the `stacks` map, keyed by a 64-bit hash of its frames:
 * addresses leaf first, zero-filled after the last frame. */
struct stack_trace {
	__u64 ips[EBPROF_MAX_STACK_DEPTH];
};

/*
 * DWARF unwinding (--unwind dwarf). An unwind table is the CFI of one
 * binary (.eh_frame, else .debug_frame) compiled by userspace
 * (symbolizer/unwind_table.c) into rows sorted by pc: row i holds from its
 * pc up to the next row's. The rule of a row gives the canonical frame
 * address (CFA: the caller's rsp), the return address is at CFA - 8
 * (x86-64 ABI; a table whose CFI says otherwise marks the row
 * UNWIND_CFA_UNSUPPORTED) and rbp was saved at CFA + rbp_off (0: rbp
 * unchanged). Each table is an array map of its own, exactly its size,
 * in the `unwind_tables` array of maps: npages + 1 index entries first
 * (entry k: in its pc, the index of the row that covers the start of page
 * page_base + k, so a pc of that page is between entries k and k + 1: a
 * search of a few rows instead of the whole table), then the rows.
 */
enum unwind_cfa {
	UNWIND_CFA_RSP = 0,	/* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP,		/* CFA = rbp + cfa_off */
	UNWIND_CFA_PLT,		/* PLT entry: rsp + cfa_off, + 8 when (rip & 15) >= flags */
	UNWIND_CFA_DEREF_RBP,	/* stack realignment: CFA = *(rbp + cfa_off) */
	UNWIND_CFA_SIGNAL,	/* __restore_rt: the kernel's rt_sigframe is at rsp */
	UNWIND_CFA_END,		/* return address undefined: the outermost frame */
	UNWIND_CFA_GAP,		/* no CFI here: frame pointers */
	UNWIND_CFA_UNSUPPORTED, /* a rule the unwinder does not implement */
};

struct unwind_row {
	__u32 pc;      /* ELF virtual address where the row starts */
	__s32 cfa_off; /* see enum unwind_cfa */
	__s16 rbp_off; /* rbp saved at CFA + rbp_off; 0: unchanged */
	__u8 cfa;      /* enum unwind_cfa */
	__u8 flags;    /* UNWIND_CFA_PLT: the (rip & 15) threshold */
	__u32 pad;     /* array maps store values 8-byte aligned anyway */
};

#define EBPROF_MAX_UNWIND_DEPTH 2048 /* user frames of a DWARF-unwound stack */
/* Set in a DWARF-unwound user frame (struct ebprof_ustack's ips) that is
 * the instruction itself rather than a return address: the first frame
 * unless the kernel was entered by a system call, a frame under a signal
 * frame. User addresses never have bit 63 set. */
#define EBPROF_IP_EXACT (1ULL << 63)
#define EBPROF_MAX_UNWIND_MAPPINGS 128	 /* executable mappings of a process */
#define EBPROF_MAX_TABLE_ROWS (1u << 22) /* rows of one table: 22 search steps */
#define EBPROF_MAX_UNWIND_TABLES 4096	 /* tables loaded at once */

/* One executable mapping of a process, for the unwinder. */
struct unwind_mapping {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;	  /* ELF virtual address = address - bias */
	__u32 table;	  /* its table's index in `unwind_tables` */
	__u32 nrows;	  /* entries of that table; 0: none (frame pointers) */
	__u32 page_base;  /* first 4 KiB page (vaddr >> 12) of its page index */
	__u32 npages;	  /* pages indexed; 0: no index (rows start at 0) */
};

/* An element of the `unwind_sets` array: executable mappings sorted by
 * start, set by userspace from /proc/PID/maps. `unwind_pids` maps a tgid
 * to its set (processes with the same layout share one: a postmaster and
 * its backends); the BPF program gives a forked child its parent's set. */
/* `unwind_pids` value of a process that exec'd and has no set for its new
 * image yet: a set userspace made from what it knew before that exec
 * (a forked child's parent's layout) must not replace it. */
#define EBPROF_UNWIND_NO_SET 0xffffffffu
struct unwind_proc {
	__u32 n;
	__u32 pad;
	struct unwind_mapping m[EBPROF_MAX_UNWIND_MAPPINGS];
};

/* Why a DWARF-unwound user stack ended. */
enum unwind_end {
	UNWIND_END_OK = 0,	/* the outermost frame (return address undefined or 0) */
	UNWIND_END_NO_TABLE,	/* no table for the pc and no frame pointer to follow */
	UNWIND_END_READ_FAULT,	/* a saved register could not be read */
	UNWIND_END_DEPTH,	/* EBPROF_MAX_UNWIND_DEPTH frames */
	UNWIND_END_UNSUPPORTED, /* a CFI rule the unwinder does not implement */
	UNWIND_END_BAD_FRAME,	/* the stack pointer did not move up */
	UNWIND_END_MAX,
};

/* Ring buffer record (`ustacks`) of a DWARF-unwound user stack, sent the
 * first time its hash is seen (the `ustack_known` map remembers which
 * were sent): the header and n frames, leaf first. */
struct ebprof_ustack {
	__u64 hash; /* the sample keys' ustack */
	__u32 n;
	__u16 end;	 /* enum unwind_end */
	__u16 fp_frames; /* frames found by following frame pointers */
	__u64 ips[EBPROF_MAX_UNWIND_DEPTH];
};

/* Indices into the per-CPU `stats` array: every sample is counted once
 * under STAT_SAMPLES, every failure under its own cause (up to
 * STAT_LOSS_END), then the work of statement capture. */
enum ebprof_stat {
	STAT_SAMPLES = 0,		  /* samples of targeted tasks */
	STAT_STACKS_FULL,		  /* stack map full: stack lost */
	STAT_KSTACK_EFAULT,		  /* kernel stack could not be read */
	STAT_USTACK_EFAULT,		  /* user stack could not be read */
	STAT_STACK_OTHER,		  /* any other bpf_get_stack error */
	STAT_COUNTS_FULL,		  /* counts map full: sample lost */
	STAT_EVENTS_LOST,		  /* ring buffer full: process event lost */
	STAT_TARGETS_FULL,		  /* target map full: new process not followed */
	STAT_SEEN_FULL,			  /* seen map full: sampled process not announced */
	STAT_QUERY_LOST,		  /* ring buffer full: statement text lost */
	STAT_PG_FULL,			  /* pg_procs map full: backend not labelled */
	STAT_USTACKS_LOST,		  /* ring buffer full: unwound stack lost */
	STAT_UNWIND_PROCS_FULL,		  /* unwind_pids full: child unwound by frame pointers */
	STAT_OFFCPU_FULL,		  /* off-CPU maps full: a wait lost */
	STAT_FAULTS_FULL,		  /* fault counts map full: a fault sample lost */
	STAT_PLPGSQL_LOST,		  /* ring buffer full: PL/pgSQL frames lost */
	STAT_PLPGSQL_FAULT,		  /* PL/pgSQL walk cut: an entry unreadable */
	STAT_PLPGSQL_CUT,		  /* ... cut: too long, cyclic or too deep */
	STAT_WAITS_LIST_FULL,		  /* wait sampler: target threads not visited (list full) */
	STAT_LOSS_END,			  /* the losses end here; what follows are counts */
	STAT_QUERY_READS = STAT_LOSS_END, /* statement texts read */
	STAT_QUERY_SENT,		  /* ... of which changed and were sent */
	STAT_QUERY_NS,			  /* bench builds (EBPROF_QUERY_TIMING): ns spent */
	STAT_QUERY_CALLS,		  /* ... over this many samples of PostgreSQL */
	STAT_USTACKS_SENT,		  /* unwound stacks sent to userspace */
	STAT_OFFCPU_SHORT,		  /* waits shorter than the threshold, not counted */
	STAT_OFFCPU_SKIPPED,		  /* switches not sampled (offcpu sampling ratio) */
	STAT_OFFCPU_UNTAKEN,		  /* waits under the period left out by chance */
	STAT_FAULT_SAMPLES,		  /* page-fault samples of targeted tasks */
	STAT_PLPGSQL_SENT,		  /* PL/pgSQL chains sent to userspace */
	STAT_WAITS_VISITS,		  /* wait sampler: threads of targets found off the CPU */
	STAT_WAITS_SAME,		  /* ... not run since their last visit: its key again */
	STAT_WAITS_IDLE,		  /* ... idle for their client: their last idle stacks */
	STAT_WAITS_ONCPU,		  /* ... found on a CPU (the CPU sampler's) */
	STAT_WAITS_CUT,			  /* switch path: waits in progress cut at a drain */
	STAT_WAITS_SEEN,		  /* wait sampler: threads looked at, targets or not */
	STAT_WAITS_OTHERS,		  /* ... of processes not targeted (the host walk) */
	STAT_WAITS_IDLE_SAME,		  /* wait sampler: ran, but idle where last idle: no read */
	STAT_WAITS_FOLDED,		  /* ... runs of visits added to the counts by BPF */
	STAT_MAX,
};

enum ebprof_event_type {
	EVENT_FORK = 1,	   /* pid = child tgid, ppid = parent tgid */
	EVENT_EXEC = 2,	   /* pid = tgid that exec'd (maps replaced) */
	EVENT_EXIT = 3,	   /* pid = tgid whose last thread exited */
	EVENT_FIRST = 4,   /* pid = tgid sampled for the first time */
	EVENT_TITLE = 5,   /* pid = sampled tgid: its title (struct ebprof_title) */
	EVENT_MAPS = 6,	   /* pid = sampled tgid whose executable mappings changed */
	EVENT_QUERY = 7,   /* pid = tgid, ppid = tid: statement text (struct ebprof_query) */
	EVENT_PLPGSQL = 8, /* pid = tgid, ppid = tid: PL/pgSQL chain (struct ebprof_plpgsql) */
};

/* Ring buffer record for process life-cycle events of targets. */
/* ebprof_event.flags */
enum {
	/* EVENT_FIRST, EVENT_FORK (the child): the process has no mapping
	 * set for the DWARF unwinder (exec'd, or forked from a process that
	 * had none): unwound by frame pointers until userspace gives it one.
	 * Such an event wakes userspace at once, as does an EVENT_MAPS of a
	 * process announced less than a second before. */
	EVENT_F_UNREADY = 1,
};

struct ebprof_event {
	__u32 type;
	__u32 pid;
	__u32 ppid;
	__u32 flags; /* EVENT_F_* */
	__u64 ktime_ns;
	/* EVENT_FIRST, EVENT_MAPS: pages of its executable mappings (the
	 * kernel's mm->exec_vm, /proc/PID/status VmExe + VmLib): a forked
	 * child with its parent's count has its parent's code mapped. */
	__u64 exec_pages;
	char comm[EBPROF_TASK_COMM_LEN];
};

/* A process the BPF program announces at once (EVENT_F_UNREADY, or new
 * code in its first second), also through the `fresh` ring buffer: a
 * thread of its own reads its maps while the event loop may be busy. */
struct ebprof_fresh {
	__u32 pid;
	__u32 pad;
	__u64 ktime_ns;	  /* the same as its EVENT_FIRST's or EVENT_MAPS's */
	__u64 start_code; /* mm->start_code: which image (/proc/PID/stat's startcode) */
};

/* EVENT_TITLE: the argv area of a sampled process as it exits, where
 * PostgreSQL keeps its process title ("postgres: alice shop [local]
 * idle"): a short-lived backend is often gone before userspace could
 * read /proc/PID/cmdline. len bytes of title, at most EBPROF_TITLE_LEN. */
#define EBPROF_TITLE_LEN 256

struct ebprof_title {
	struct ebprof_event h;
	__u32 len;
	__u32 pad;
	char title[EBPROF_TITLE_LEN];
};

/* EVENT_QUERY: the statement a backend thread runs, sent when it differs
 * from the last one sampled in that thread. Raw text with its literals:
 * userspace normalizes it at once and keeps only the normalized form.
 * The record ends after the text's NUL (len + 1 bytes of text). */
struct ebprof_query {
	struct ebprof_event h;
	__u64 hash;	 /* the sample keys' `query` */
	__u32 len;	 /* bytes of text, its NUL excluded */
	__u32 truncated; /* the text went on beyond EBPROF_QUERY_LEN - 1 bytes */
	char text[EBPROF_QUERY_LEN];
};

/* EVENT_PLPGSQL: the PL/pgSQL functions a backend thread ran at a sample
 * whose chain (sample_key.plpgsql) was not sent yet (or not since
 * userspace bumped plpgsql_gen): innermost first, each with its signature
 * (schema, never an argument's value) and current line. The record ends
 * after its n levels. */
struct ebprof_plpgsql_level {
	__s32 line; /* err_var's line where set, else err_stmt's; 0: none */
	__u32 len;  /* bytes of sig, its NUL excluded; 0: unreadable */
	char sig[EBPROF_PLPGSQL_SIG_LEN];
};

#define EBPROF_PLPGSQL_CUT 1u /* more functions outside these, left out */

struct ebprof_plpgsql {
	struct ebprof_event h;
	__u64 hash;  /* the sample keys' plpgsql */
	__u32 n;     /* levels that follow, 1..EBPROF_PLPGSQL_DEPTH */
	__u32 flags; /* EBPROF_PLPGSQL_* */
	struct ebprof_plpgsql_level level[EBPROF_PLPGSQL_DEPTH];
};

/* oom.bpf.c: the kernel chose a victim to kill for lack of memory (the
 * mark_victim tracepoint), any process: userspace decides whether it was
 * one of its targets. */
struct ebprof_oom_event {
	__u32 pid; /* the victim's tgid */
	__u32 pad;
	__u64 ktime_ns;
};

#endif /* EBPROF_BPF_SHARED_H */
