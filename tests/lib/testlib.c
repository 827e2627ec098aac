// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "util/fileio.h"
#include "testlib.h"

const char *tl_build(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

const char *tl_path(const char *rel)
{
	static char bufs[8][512];
	static int slot;
	char *b = bufs[slot++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tl_build(), rel);
	return b;
}

/* path's bytes, NUL-terminated (asserted). */
static char *slurp(const char *path, size_t *len)
{
	uint8_t *b;
	size_t n;
	char *s;

	cr_assert_eq(read_file(path, &b, &n), 0, "%s", path);
	s = realloc(b, n + 1);
	cr_assert_not_null(s);
	s[n] = '\0';
	if (len)
		*len = n;
	return s;
}

int tl_run_captured(int (*fn)(int, char **), int argc, char **argv, const char *dir, char **out,
		    size_t *outlen, char **err)
{
	char outp[600], errp[600];
	int status;
	pid_t pid;

	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0)
			_exit(99);
		dup2(o, 1);
		dup2(e, 2);
		status = fn(argc, argv);
		fflush(stdout);
		fflush(stderr);
		_exit(status);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "%s crashed", argv[0]);
	*out = slurp(outp, outlen);
	*err = slurp(errp, NULL);
	return WEXITSTATUS(status);
}

double tl_sample_tol(double want, double tol)
{
	double chance = want > 0 ? 3 / sqrt(want) : 1;

	return chance > tol ? chance : tol;
}

double tl_share_tol(double n, double p, double tol)
{
	double chance = n > 0 ? 3 * sqrt(p * (1 - p) / n) : 1;

	return chance > tol ? chance : tol;
}

int tl_sh(const char *cmd, char **out)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	FILE *f;
	int status;

	if (!buf)
		return -ENOMEM;
	f = popen(cmd, "r");
	if (!f) {
		free(buf);
		return -errno;
	}
	for (;;) {
		size_t r;

		if (n + 1024 > cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	status = pclose(f);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tl_rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tl_tmpdir(const char *tag)
{
	/* Most tests keep their directory to the end: remembered here, the
	 * paths stay reachable, so the leak checker (make test SANITIZE=1)
	 * speaks of the program's leaks, not of these. */
	static char *made[256];
	static size_t nmade;
	char tmpl[256], *dir;

	snprintf(tmpl, sizeof(tmpl), "/tmp/ebprof-test-%s-XXXXXX", tag);
	dir = mkdtemp(tmpl) ? strdup(tmpl) : NULL;
	if (dir && nmade < sizeof(made) / sizeof(made[0]))
		made[nmade++] = dir;
	return dir;
}

static char scratch[256];

void tl_scratch_make(const char *tag)
{
	snprintf(scratch, sizeof(scratch), "/tmp/ebprof-test-%s-XXXXXX", tag);
	cr_assert_not_null(mkdtemp(scratch), "cannot make %s", scratch);
}

void tl_scratch_remove(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	cr_expect_eq(system(cmd), 0);
}

const char *tl_scratch_dir(void)
{
	return scratch;
}

const char *tl_at(const char *rel)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", scratch, rel);
	return b;
}

struct profile *tl_load_profile(const char *path)
{
	struct profile *p = NULL;
	uint8_t *buf;
	size_t len;
	int err = read_file(path, &buf, &len);

	if (err) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(-err));
		return NULL;
	}
	err = pprof_decode(buf, len, &p);
	free(buf);
	if (err)
		fprintf(stderr, "cannot decode %s: %s\n", path, strerror(-err));
	return p;
}

int tl_go_pprof_check(const char *path, char **out)
{
	char cmd[1024], *text = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} GOFLAGS=-mod=mod "
		 "go tool pprof -raw '%s' 2>&1",
		 path);
	rc = tl_sh(cmd, &text);
	if (rc == 0 && text && strcasestr(text, "warning"))
		rc = 1;
	if (rc)
		fprintf(stderr, "go tool pprof -raw %s failed (%d):\n%.4000s\n", path, rc,
			text ? text : "");
	if (out)
		*out = text;
	else
		free(text);
	return rc;
}

int64_t tl_label_num(const struct profile *p, const struct pf_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(profile_string(p, s->labels[i].key), key) && !s->labels[i].str)
			return s->labels[i].num;
	return -1;
}

int tl_frame_pos(const struct profile *p, const struct pf_sample *s, const char *fn)
{
	int pos = 0;

	for (size_t i = 0; i < s->nlocations; i++) {
		const struct pf_location *loc = &p->locations[s->location_ids[i] - 1];

		for (size_t j = 0; j < loc->nlines; j++, pos++) {
			const struct pf_function *f = &p->functions[loc->lines[j].function_id - 1];

			if (!strcmp(profile_string(p, f->name), fn))
				return pos;
		}
		if (!loc->nlines)
			pos++;
	}
	return -1;
}

int64_t tl_samples_with(const struct profile *p, const char *fn, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		if (pid >= 0 && tl_label_num(p, s, "pid") != pid)
			continue;
		if (tl_frame_pos(p, s, fn) >= 0)
			sum += s->values[vi];
	}
	return sum;
}

int64_t tl_samples_total(const struct profile *p, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		if (pid < 0 || tl_label_num(p, &p->samples[i], "pid") == pid)
			sum += p->samples[i].values[vi];
	return sum;
}

uint64_t tl_mapping(struct profile *p, uint64_t start, uint64_t limit, const char *file)
{
	struct pf_mapping m = { .start = start, .limit = limit };
	int64_t id;

	m.filename = profile_str(p, file);
	id = profile_add_mapping(p, &m);
	cr_assert_gt(id, 0);
	return (uint64_t)id;
}

uint64_t tl_loc(struct profile *p, uint64_t mapping, uint64_t addr, const char *fn)
{
	int64_t f = profile_add_function(p, fn, NULL, NULL, 0), l;
	struct pf_line ln = { .function_id = (uint64_t)f };

	cr_assert_gt(f, 0);
	l = profile_add_location(p, mapping, addr, &ln, 1);
	cr_assert_gt(l, 0);
	return (uint64_t)l;
}

int64_t tl_proc_cpu_ns(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char sp[384];
		long long ns;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		f = fopen(sp, "r");
		if (f && fscanf(f, "%lld", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

const char *tl_kv(const char *out, const char *key)
{
	static char buf[8][512];
	static int slot;
	char *b = buf[slot++ % 8], k[128];
	const char *s = out;
	size_t n;

	snprintf(k, sizeof(k), "%s=", key);
	b[0] = '\0';
	while (s && (s = strstr(s, k))) {
		if (s == out || s[-1] == '\n') {
			s += strlen(k);
			n = strcspn(s, "\n");
			snprintf(b, sizeof(buf[0]), "%.*s", (int)n, s);
			return b;
		}
		s++;
	}
	return b;
}

void tl_expect_usage_error(const char *args, const char *needle)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tl_path("ebprof"), args);
	cr_expect_eq(tl_sh(cmd, &out), 2, "%s: exit status", args);
	cr_expect(out && strstr(out, needle), "%s: no '%s' in: %s", args, needle, out ? out : "");
	free(out);
}

void tl_system(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

bool tl_kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	cr_assert_eq(uname(&u), 0);
	cr_assert_geq(sscanf(u.release, "%d.%d", &ma, &mi), 1, "kernel release %s", u.release);
	return ma > major || (ma == major && mi >= minor);
}
