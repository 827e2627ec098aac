// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "util/fileio.h"
#include "util/log.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* libbpf's probes answer 1 (supported), 0 (not) or a negative errno. */
static bool yes(int probe)
{
	return probe == 1;
}

/*
 * Can this process load a program at all? libbpf's probes answer "no" to a
 * refusal (EPERM in a user namespace, a seccomp filter, an LSM) as to a
 * missing feature; the probe must not blame the kernel for that. 0, or the
 * negative errno of loading "return 0" as a socket filter (Linux 3.19).
 */
static int can_load(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, 2, NULL);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Batched lookup-and-delete on an empty hash map: ENOENT when supported. */
static bool probe_batch_ops(void)
{
	uint32_t key, out_batch, count = 1;
	uint64_t value;
	bool ok;
	int fd, ret;

	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ebprof_probe", sizeof(key), sizeof(value), 1, NULL);
	if (fd < 0)
		return false;
	ret = bpf_map_lookup_and_delete_batch(fd, NULL, &out_batch, &key, &value, &count, NULL);
	ok = ret == 0 || errno == ENOENT;
	close(fd);
	return ok;
}

/* Does the kernel's enum bpf_func_id name this helper? */
static bool has_helper(const struct btf *btf, const char *name)
{
	int id = btf__find_by_name_kind(btf, "bpf_func_id", BTF_KIND_ENUM);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e = t ? btf_enum(t) : NULL;

	for (int i = 0; e && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return true;
	return false;
}

/* Does the kernel's BTF have this function (a kfunc: 6.0+ BTF only)? */
static bool has_func(const struct btf *btf, const char *name)
{
	return btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
}

/* Does the kernel's union `name` have a member `member`? */
static bool has_union_member(const struct btf *btf, const char *name, const char *member)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_UNION);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (int i = 0; m && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), member))
			return true;
	return false;
}

/* The task iterators, from the kernel's own BTF (an iterator attaches
 * through it: an external --btf file does not serve). */
static void probe_task_iters(struct features *f)
{
	struct btf *btf;

	f->task_iter_asked = true;
	if (access("/sys/kernel/btf/vmlinux", R_OK) || !(btf = btf__load_vmlinux_btf()))
		return;
	f->task_iter = btf__find_by_name_kind(btf, "bpf_iter__task", BTF_KIND_STRUCT) > 0 &&
		       has_helper(btf, "BPF_FUNC_get_task_stack");
	f->task_iter_s = f->task_iter && f->loop &&
			 has_helper(btf, "BPF_FUNC_copy_from_user_task") &&
			 has_helper(btf, "BPF_FUNC_task_pt_regs");
	f->task_iter_targets =
		f->task_iter_s && has_func(btf, "bpf_task_from_pid") &&
		has_func(btf, "bpf_task_release") && has_func(btf, "bpf_rcu_read_lock") &&
		has_func(btf, "bpf_rcu_read_unlock") && has_func(btf, "bpf_iter_task_new") &&
		has_func(btf, "bpf_iter_task_next") && has_func(btf, "bpf_iter_task_destroy") &&
		has_func(btf, "bpf_iter_num_new");
	f->task_iter_pid = f->task_iter_s && has_union_member(btf, "bpf_iter_link_info", "task");
	btf__free(btf);
}

/*
 * Hash maps allocated as used (BPF_F_NO_PREALLOC) in a perf_event program:
 * 6.1 made them safe in NMI context (bpf_mem_alloc), older verifiers
 * refuse the program ("perf_event programs can only use preallocated hash
 * map"). A program that looks a key up in such a map loads or not.
 */
static bool probe_no_prealloc(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	int map, fd;

	map = bpf_map_create(BPF_MAP_TYPE_HASH, "ebprof_probe", 4, 4, 1, &mo);
	if (map < 0)
		return false;
	{
		const struct bpf_insn insns[] = {
			/* *(u32 *)(fp - 4) = 0; r2 = fp - 4 */
			{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X,
			  .dst_reg = BPF_REG_2,
			  .src_reg = BPF_REG_10 },
			{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
			/* r1 = map */
			{ .code = BPF_LD | BPF_DW | BPF_IMM,
			  .dst_reg = BPF_REG_1,
			  .src_reg = BPF_PSEUDO_MAP_FD,
			  .imm = map },
			{ 0 },
			{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
			{ .code = BPF_JMP | BPF_EXIT },
		};

		fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, NULL, "GPL", insns,
				   sizeof(insns) / sizeof(insns[0]), NULL);
	}
	close(map);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* All but the task iterators (probe_task_iters()). */
static int probe_base(const char *btf_path, struct features *f)
{
	const enum bpf_prog_type pe = BPF_PROG_TYPE_PERF_EVENT;
	struct utsname u;
	int ret;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0)
		snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->btf = access(btf_path ? btf_path : "/sys/kernel/btf/vmlinux", R_OK) == 0;

	ret = can_load();
	if (ret)
		return ret; /* no BPF at all, or no privilege to ask */
	ret = libbpf_probe_bpf_prog_type(pe, NULL);
	if (ret < 0)
		return ret;
	f->perf_event = yes(ret);
	f->hash = yes(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_HASH, NULL));
	f->percpu_array = yes(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PERCPU_ARRAY, NULL));
	f->ringbuf = yes(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL));
	f->raw_tp = yes(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL));
	/* The raw tracepoints' helpers are the perf_event ones too
	 * (bpf_tracing_func_proto). */
	if (f->perf_event) {
		f->get_stack = yes(libbpf_probe_bpf_helper(pe, BPF_FUNC_get_stack, NULL));
		f->current_task = yes(libbpf_probe_bpf_helper(pe, BPF_FUNC_get_current_task, NULL));
		f->cgroup_id =
			yes(libbpf_probe_bpf_helper(pe, BPF_FUNC_get_current_cgroup_id, NULL));
		f->read_kernel =
			yes(libbpf_probe_bpf_helper(pe, BPF_FUNC_probe_read_kernel_str, NULL));
	}
	f->batch_ops = probe_batch_ops();
	if (f->perf_event) {
		f->loop = yes(libbpf_probe_bpf_helper(pe, BPF_FUNC_loop, NULL));
		f->no_prealloc = probe_no_prealloc();
	}
	return 0;
}

int features_probe(const char *btf_path, struct features *f)
{
	int ret = probe_base(btf_path, f);

	if (!ret && !btf_path)
		probe_task_iters(f);
	return ret;
}

void features_format(const struct features *f, char *buf, size_t len)
{
#define YN(x) ((x) ? "yes" : "no")
	snprintf(buf, len,
		 "kernel %s: BTF %s, perf_event %s, raw_tp %s, hash %s, percpu_array %s, "
		 "ringbuf %s, bpf_get_stack %s, current_task %s, cgroup_id %s, "
		 "probe_read_kernel %s, batch ops %s%s, bpf_loop %s, maps allocated as used %s%s%s",
		 f->release[0] ? f->release : "?", YN(f->btf), YN(f->perf_event), YN(f->raw_tp),
		 YN(f->hash), YN(f->percpu_array), YN(f->ringbuf), YN(f->get_stack),
		 YN(f->current_task), YN(f->cgroup_id), YN(f->read_kernel), YN(f->batch_ops),
		 f->batch_ops ? "" : " (fallback: counts drained key by key)",
		 f->loop ? "yes" : "no (DWARF unwinding by tail calls)",
		 f->no_prealloc ? "yes" : "no (preallocated, sized smaller)",
		 f->task_iter_asked ? ", task iterator " : "",
		 !f->task_iter_asked	? ""
		 : f->task_iter_targets ? "sleepable, of the targets' threads (off-CPU sampled)"
		 : f->task_iter_pid	? "sleepable, per process (off-CPU sampled)"
		 : f->task_iter_s	? "sleepable (off-CPU sampled)"
		 : f->task_iter		? "yes, not sleepable (off-CPU timed at switches)"
					: "no (off-CPU timed at switches)");
#undef YN
}

int features_check(const struct features *f, char *err, size_t errlen)
{
	const struct {
		bool have;
		const char *what;
	} need[] = {
		{ f->btf, "vmlinux BTF (CONFIG_DEBUG_INFO_BTF, Linux 5.4+; or pass --btf FILE)" },
		{ f->perf_event, "BPF perf_event programs (Linux 4.9+)" },
		{ f->hash, "BPF hash maps (Linux 3.19+)" },
		{ f->percpu_array, "BPF per-CPU arrays (Linux 4.6+)" },
		{ f->ringbuf, "the BPF ring buffer (Linux 5.8+)" },
		{ f->get_stack, "bpf_get_stack() (Linux 4.18+)" },
		{ f->current_task, "bpf_get_current_task() (Linux 4.8+)" },
		{ f->raw_tp, "raw tracepoints for sched_process_fork/exec/exit (Linux 4.17+; "
			     "no fallback: new processes could not be followed)" },
		{ f->cgroup_id, "bpf_get_current_cgroup_id() (Linux 4.18+)" },
		{ f->read_kernel, "bpf_probe_read_kernel_str() (Linux 5.5+)" },
	};
	size_t off = 0;
	int missing = 0;

	if (!err || !errlen)
		err = NULL;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int n;

		if (need[i].have)
			continue;
		if (err && off < errlen) {
			n = snprintf(
				err + off, errlen - off, "%s%s",
				missing ? ", " : "kernel lacks what ebprof needs: ", need[i].what);
			off += n > 0 ? (size_t)n : 0;
		}
		missing++;
	}
	if (!missing)
		return 0;
	if (err && off < errlen)
		snprintf(err + off, errlen - off, " (kernel %s; ebprof needs Linux 5.8 or later)",
			 f->release[0] ? f->release : "?");
	return -ENOTSUP;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* Name the capability that is missing, the way an operator can fix it. */
static int check_privileges(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return 0; /* cannot tell: let the kernel decide */
	if (has_cap(data, CAP_SYS_ADMIN))
		return 0;
	if (!has_cap(data, CAP_BPF)) {
		snprintf(err, errlen,
			 "missing capability CAP_BPF (run as root or grant "
			 "CAP_BPF,CAP_PERFMON)");
		return -EPERM;
	}
	if (!has_cap(data, CAP_PERFMON)) {
		snprintf(err, errlen,
			 "missing capability CAP_PERFMON (run as root or grant "
			 "CAP_BPF,CAP_PERFMON)");
		return -EPERM;
	}
	return 0;
}

/* strerror() for libbpf's own codes too (LIBBPF_ERRNO__*, 4000+). */
const char *features_libbpf_strerror(int err)
{
	static __thread char buf[128];

	libbpf_strerror(err, buf, sizeof(buf));
	return buf;
}

/*
 * The feature probe, run once per process (a documented cache: the kernel
 * does not change under us, and the agent opens a sampler per reload and
 * per ad hoc profile): what the kernel offers in one info line, what it
 * lacks in err. The task iterators are probed apart, once, the first time
 * a session asks for them (off-CPU): the kernel's BTF parsed for nothing
 * cost every CPU recording 10 ms.
 */
static struct features probed;
static int probe_ret;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static pthread_once_t iters_once = PTHREAD_ONCE_INIT;
static const char *probe_btf_path;

static void run_probe(void)
{
	char line[512];

	probe_ret = probe_base(probe_btf_path, &probed);
	if (probe_ret) { /* cannot ask: the load itself reports what is wrong */
		log_debug("feature probe failed: %s", strerror(-probe_ret));
		return;
	}
	features_format(&probed, line, sizeof(line));
	log_info("%s", line);
}

static int probe_features(const char *btf_path, char *err, size_t errlen)
{
	probe_btf_path = btf_path;
	pthread_once(&probe_once, run_probe);
	return probe_ret ? 0 : features_check(&probed, err, errlen);
}

bool features_have_loop(void)
{
	return !probe_ret && probed.loop;
}

static void run_iters_probe(void)
{
	if (probe_ret || probe_btf_path) /* an external --btf does not serve */
		return;
	probe_task_iters(&probed);
	log_info("task iterator %s",
		 probed.task_iter_targets ? "sleepable, of the targets' threads (off-CPU sampled)"
		 : probed.task_iter_pid	  ? "sleepable, per process (off-CPU sampled)"
		 : probed.task_iter_s	  ? "sleepable (off-CPU sampled)"
		 : probed.task_iter	  ? "yes, not sleepable (off-CPU timed at switches)"
					  : "no (off-CPU timed at switches)");
}

bool features_have_task_iter_s(void)
{
	pthread_once(&iters_once, run_iters_probe);
	return !probe_ret && probed.task_iter_s;
}

bool features_have_task_iter_targets(void)
{
	pthread_once(&iters_once, run_iters_probe);
	return !probe_ret && probed.task_iter_targets;
}

bool features_have_task_iter_pid(void)
{
	pthread_once(&iters_once, run_iters_probe);
	return !probe_ret && probed.task_iter_pid;
}

bool features_have_task_iter(void)
{
	pthread_once(&iters_once, run_iters_probe);
	return !probe_ret && probed.task_iter;
}

bool features_have_no_prealloc(void)
{
	return !probe_ret && probed.no_prealloc;
}

int features_require(const char *btf_path, char *err, size_t errlen)
{
	int ret;

	ret = check_privileges(err, errlen);
	if (ret)
		return ret;
	if (btf_path) {
		struct btf *btf;

		if (access(btf_path, R_OK)) {
			ret = -errno;
			snprintf(err, errlen, "cannot read BTF file %s: %s", btf_path,
				 strerror(errno));
			return ret;
		}
		btf = btf__parse(btf_path, NULL);
		if (!btf) {
			ret = -errno;
			snprintf(err, errlen,
				 "%s is not a BTF file (nor an ELF file with .BTF): %s", btf_path,
				 features_libbpf_strerror(ret));
			return ret;
		}
		btf__free(btf);
	} else if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen,
			 "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing: "
			 "CONFIG_DEBUG_INFO_BTF is off); pass an external BTF file");
		return -ENOTSUP;
	}
	ret = probe_features(btf_path, err, errlen);
	return ret;
}

#define FENTRY_MEMO_DIR "/run/ebprof"
#define FENTRY_MEMO FENTRY_MEMO_DIR "/fentry-refused"

/* Once refused in this process (a documented cache, as the probe). */
static atomic_bool fentry_refused;

/* This boot's id (36 characters), "" when unknown. */
static void boot_id(char *buf, size_t size)
{
	size_t len = 0;

	if (read_small_file("/proc/sys/kernel/random/boot_id", buf, size, &len))
		len = 0;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	buf[len] = '\0';
}

bool features_fentry_refused(void)
{
	char id[64], memo[64];
	size_t len = 0;

	if (atomic_load(&fentry_refused))
		return true;
	boot_id(id, sizeof(id));
	if (!id[0] || read_small_file(FENTRY_MEMO, memo, sizeof(memo), &len) || strcmp(memo, id))
		return false; /* none, or of another boot */
	atomic_store(&fentry_refused, true);
	return true;
}

void features_fentry_refuse(void)
{
	char id[64];
	int ret;

	atomic_store(&fentry_refused, true);
	boot_id(id, sizeof(id));
	if (!id[0])
		return;
	ret = mkdir_p(FENTRY_MEMO_DIR, 0755);
	if (!ret)
		ret = write_file_atomic(FENTRY_MEMO, (const uint8_t *)id, strlen(id));
	if (ret)
		log_debug("cannot remember the refused fentry program in %s: %s", FENTRY_MEMO,
			  strerror(-ret));
}
