// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"

#include "record_env.h"

void rec_require_root(void)
{
	cr_assert_eq(geteuid(), 0, "integration tests load BPF programs: run them as root");
}

/* Start a fixture that prints pid=N and waits for a line on stdin. */
pid_t rec_start_fixture(struct tl_proc *fx, char *const argv[])
{
	char line[128];
	int pid = 0;

	cr_assert_eq(tl_spawn(fx, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	cr_assert_gt(pid, 0);
	return pid;
}

bool rec_waits_for_go(const struct gp_sample *s)
{
	return gp_frame_pos(s, "fixture_start") >= 0 || gp_frame_pos(s, "_IO_fgets") >= 0 ||
	       gp_frame_pos(s, "fgets") >= 0;
}

/* A work_split (argv[0] may be a copy under another name) burning secs. */
pid_t rec_start_work_split(struct tl_proc *fx, const char *exe, const char *secs)
{
	return rec_start_fixture(fx, (char *[]){ (char *)exe, (char *)secs, NULL });
}

/* The CPU seconds a work_split reports, once it exited 0. */
double rec_work_split_cpu(struct tl_proc *fx)
{
	char line[128];
	double cpu = 0;

	cr_assert_eq(tl_wait_line(fx->out, "cpu_seconds=", line, sizeof(line), 60), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(fx, 10), 0);
	cr_assert_gt(cpu, 0);
	return cpu;
}

/* Start `ebprof record ARGS -v` and wait until it samples: up to 120 s, as
 * a TCG guest of the kernel matrix verifies the programs 10-30x slower
 * (5.10's off-CPU tail calls and 41 unwind tables of PostgreSQL took over
 * 30 s there once, with the host busy). */
void rec_start_record(struct rec_run *r, char **args)
{
	char *argv[32];
	int n = 0;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "record";
	while (*args && n < 30)
		argv[n++] = *args++;
	argv[n++] = "-v";
	argv[n] = NULL;
	cr_assert_eq(tl_start_logged(&r->p, &r->log, argv, "sampling at", 120), 0,
		     "ebprof record did not start sampling");
}

/* Wait for the recorder (sig first, when not 0): its exit status; its
 * log stays in r->log. */
int rec_finish_record(struct rec_run *r, int sig, double timeout)
{
	return tl_finish_logged(&r->p, &r->log, sig, timeout);
}

/* "ebprof: wrote PATH: N samples from ..." of a log, or -1. */
int64_t rec_summary_samples(const char *log)
{
	const char *s = strstr(log, "ebprof: wrote "), *e;

	if (!s || !(e = strstr(s, " samples from ")))
		return -1;
	while (e > s && e[-1] >= '0' && e[-1] <= '9')
		e--;
	return strtoll(e, NULL, 10);
}

/* Read path back with go tool pprof (asserts it can). */
struct gp_profile *rec_read_back(const char *path)
{
	struct gp_profile *p = gp_read(path);

	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	return p;
}

/*
 * The samples BPF counted (the profile's comment, written from the
 * sampler's counter) equal the samples go tool pprof finds, and the
 * summary line (the profile builder's count) says the same: no sample
 * was lost between the kernel and the file. log may be NULL.
 */
void rec_expect_counts_agree(const struct gp_profile *p, const char *log)
{
	int64_t total = gp_total(p, -1, 0), counted = gp_counted_samples(p);

	cr_expect_eq(counted, total, "BPF counted %lld samples, the profile holds %lld",
		     (long long)counted, (long long)total);
	if (log)
		cr_expect_eq(rec_summary_samples(log), total,
			     "the summary says %lld samples, the profile holds %lld",
			     (long long)rec_summary_samples(log), (long long)total);
}

/* pid, tid (numeric) and thread_name (string) on every sample. */
void rec_expect_sample_labels(const struct gp_profile *p)
{
	size_t bad = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		bad += gp_label_kind(s, "pid") != GP_NUM || gp_label_kind(s, "tid") != GP_NUM ||
		       gp_label_kind(s, "thread_name") != GP_STR || gp_label_num(s, "pid") <= 0 ||
		       gp_label_num(s, "tid") <= 0 || !gp_label(s, "thread_name")[0];
	}
	cr_expect_eq(bad, 0, "%zu of %zu samples lack numeric pid/tid or thread_name", bad,
		     p->nsamples);
}

double rec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* samples within tol (fraction) of freq x cpu seconds. */
void rec_expect_rate(int64_t samples, int freq, double cpu, double tol, const char *what)
{
	double want = freq * cpu;

	tol = tl_sample_tol(want, tol);
	cr_log_info("%s: %.3f s of CPU at %d Hz -> expected %.0f samples, got %lld", what, cpu,
		    freq, want, (long long)samples);
	cr_expect(samples >= (1 - tol) * want && samples <= (1 + tol) * want,
		  "%s: %lld samples, expected %.0f +- %.0f%% (%.3f s of CPU at %d Hz)", what,
		  (long long)samples, want, tol * 100, cpu, freq);
}

/* The GNU build-id of an ELF file as readelf (binutils) prints it. */
char *rec_elf_build_id(const char *path)
{
	char cmd[4200], *out = NULL, *s, id[128] = "";

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>&1", path);
	cr_assert_eq(tl_sh(cmd, &out), 0, "readelf -n %s: %s", path, out);
	s = strstr(out, "Build ID: ");
	cr_assert_not_null(s, "%s has no build-id: %s", path, out);
	sscanf(s + 10, "%127[0-9a-f]", id);
	free(out);
	return strdup(id);
}

/* Copy the work_split fixture to dir/name: a process named name. */
void rec_work_split_named(const char *dir, const char *name, char *exe, size_t len)
{
	char cmd[2048], *out = NULL;

	snprintf(exe, len, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' 2>&1", tl_path("fixtures/work_split"), exe);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	free(out);
}

/* Sum of the counts of folded lines; *burn those with a burn_three frame
 * under comm work_split; *bad the malformed ones. */
int64_t rec_folded_sum(char *text, int64_t *burn, int *bad)
{
	int64_t sum = 0;
	char *save = NULL;

	*burn = 0;
	*bad = 0;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');
		long long n = sp ? atoll(sp + 1) : 0;

		if (n <= 0) {
			(*bad)++;
			continue;
		}
		sum += n;
		if (!strncmp(l, "work_split;", 11) && strstr(l, ";burn_three"))
			*burn += n;
	}
	return sum;
}

/* Whether a mapping is a user one: a file that is not the kernel's (Go
 * shows locations without a mapping under a fake one without a file). */
bool rec_user_mapping(const struct gp_mapping *m)
{
	return m && m->file[0] && strcmp(m->file, "[kernel.kallsyms]");
}

bool rec_kernel_mapping(const struct gp_mapping *m)
{
	return m && !strcmp(m->file, "[kernel.kallsyms]");
}

/* The running kernel's GNU build-id, from its ELF notes in
 * /sys/kernel/notes (not through ebprof). */
char *rec_kernel_build_id(void)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char *hex = NULL;

	cr_assert_eq(read_file("/sys/kernel/notes", &buf, &len), 0);
	for (size_t off = 0; off + 12 <= len && !hex;) {
		uint32_t nsz, dsz, type;
		size_t desc;

		memcpy(&nsz, buf + off, 4);
		memcpy(&dsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc = off + 12 + ((nsz + 3) & ~3u);
		if (desc + dsz > len)
			break;
		if (type == 3 && nsz == 4 && !memcmp(buf + off + 12, "GNU", 4)) {
			hex = calloc(2 * dsz + 1, 1);
			cr_assert_not_null(hex);
			for (uint32_t i = 0; i < dsz; i++)
				sprintf(hex + 2 * i, "%02x", buf[desc + i]);
		}
		off = desc + ((dsz + 3) & ~3u);
	}
	free(buf);
	cr_assert_not_null(hex, "no GNU build-id note in /sys/kernel/notes");
	return hex;
}

/* Samples (weighted by their count) with a frame under a kernel / user
 * mapping. */
void rec_count_frames(const struct gp_profile *p, int64_t *kernel, int64_t *user)
{
	*kernel = *user = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		bool k = false, u = false;

		for (size_t j = 0; j < p->samples[i].nframes; j++) {
			k |= rec_kernel_mapping(p->samples[i].frames[j].mapping);
			u |= rec_user_mapping(p->samples[i].frames[j].mapping);
		}
		*kernel += k ? p->samples[i].values[0] : 0;
		*user += u ? p->samples[i].values[0] : 0;
	}
}

/* Run ebprof with args; expect exit code and a message on stderr, and
 * that the output path was not created. */
void rec_expect_rejected(const char *args, int code, const char *message)
{
	char *dir = tl_tmpdir("bad"), cmd[1024], out[512], *text = NULL;
	char *build = realpath(tl_build(), NULL);
	struct stat st;
	int rc;

	cr_assert_not_null(build);
	snprintf(out, sizeof(out), "%s/never.pb.gz", dir);
	snprintf(cmd, sizeof(cmd), "cd %s && %s/ebprof record %s 2>&1 >/dev/null", dir, build,
		 args);
	free(build);
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, code, "'%s' exited %d, expected %d: %s", args, rc, code, text);
	cr_expect(strstr(text, message) != NULL, "'%s': message '%s' lacks '%s'", args, text,
		  message);
	cr_expect_eq(strchr(text, '\n') - text + 1, (long)strlen(text), "'%s': not one line: %s",
		     args, text);
	cr_expect_neq(stat(out, &st), 0, "output written despite the error");
	cr_expect_neq(stat("profile.pb.gz", &st), 0);
	free(text);
}
