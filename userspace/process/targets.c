// SPDX-License-Identifier: BSD-2-Clause
/*
 * The initial target set (targets.h): one /proc scan by name, pid and
 * descendants, cgroup v2 membership, and the default name rule.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "processes.h"
#include "targets.h"
#include "util/compare.h"
#include "util/array.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CGROUP_FS "/sys/fs/cgroup"

const char *const targets_default_comms[TARGETS_NDEFAULT_COMMS] = { "postgres", "postmaster" };

struct proc_row {
	uint32_t pid, ppid;
	bool match;
};

bool targets_name_matches(const char *comm, const char *exe, const char *const *names,
			  size_t nnames)
{
	const char *base = exe ? strrchr(exe, '/') : NULL;

	base = base ? base + 1 : exe;
	for (size_t i = 0; i < nnames; i++) {
		/* comm is truncated to 15 characters by the kernel */
		if (comm && !strncmp(comm, names[i], 15))
			return true;
		if (base && !strcmp(base, names[i]))
			return true;
	}
	return false;
}

void targets_names(const struct target_rules *rules, const char *const **names, size_t *n)
{
	*names = NULL;
	*n = 0;
	if (rules->ncomms) {
		*names = rules->comms;
		*n = rules->ncomms;
	} else if (!rules->npids && !rules->ncgroups) {
		*names = targets_default_comms;
		*n = TARGETS_NDEFAULT_COMMS;
	}
}

/* The processes the names and pids of the rules match. */
static int scan_proc(const struct target_rules *rules, uint32_t **out, size_t *n)
{
	const char *const *names;
	struct proc_row *rows = NULL;
	size_t nrows = 0, cap = 0, nout = 0;
	uint32_t *res = NULL;
	struct dirent *de;
	size_t nnames;
	bool changed;
	DIR *dir;

	targets_names(rules, &names, &nnames);
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct proc_row r = { 0 };
		char comm[32] = "", *exe = NULL;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		r.pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		if (proc_read_ppid(r.pid, &r.ppid))
			continue; /* gone */
		for (size_t i = 0; i < rules->npids; i++)
			if (rules->pids[i] == r.pid)
				r.match = true;
		if (!r.match && nnames) {
			proc_read_comm(r.pid, comm, sizeof(comm));
			proc_read_exe(r.pid, &exe); /* fails for kernel threads */
			r.match = targets_name_matches(comm, exe, names, nnames);
			free(exe);
		}
		if (ARRAY_RESERVE(rows, &cap, nrows + 1)) {
			closedir(dir);
			free(rows);
			return -ENOMEM;
		}
		rows[nrows++] = r;
	}
	closedir(dir);

	/* Propagate matches to descendants until nothing changes (process
	 * trees are shallow, so a few passes). */
	do {
		changed = false;
		if (!rules->descendants)
			break;
		for (size_t i = 0; i < nrows; i++) {
			if (rows[i].match)
				continue;
			for (size_t j = 0; j < nrows; j++) {
				if (rows[j].match && rows[j].pid == rows[i].ppid) {
					rows[i].match = changed = true;
					break;
				}
			}
		}
	} while (changed);

	res = malloc((nrows ? nrows : 1) * sizeof(*res));
	if (!res) {
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrows; i++)
		if (rows[i].match)
			res[nout++] = rows[i].pid;
	free(rows);
	sort_array(res, nout, sizeof(*res), cmp_u32);
	*out = res;
	*n = nout;
	return 0;
}

int targets_scan(const struct target_rules *rules, uint32_t **out, size_t *n)
{
	int ret;

	*out = NULL;
	*n = 0;
	ret = scan_proc(rules, out, n);

	for (size_t i = 0; !ret && i < rules->ncgroups; i++)
		ret = targets_cgroup_pids(rules->cgroups[i], out, n);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
		return ret;
	}
	if (rules->ncgroups) { /* sorted and unique again */
		size_t k = 0;

		sort_array(*out, *n, sizeof(**out), cmp_u32);
		for (size_t i = 0; i < *n; i++)
			if (!k || (*out)[k - 1] != (*out)[i])
				(*out)[k++] = (*out)[i];
		*n = k;
	}
	return 0;
}

int targets_cgroup_id(const char *path, uint64_t *id)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = (uint64_t)st.st_ino;
	return 0;
}

static int append_pid(uint32_t **pids, size_t *n, uint32_t pid)
{
	uint32_t *np = realloc(*pids, (*n + 1) * sizeof(*np));

	if (!np)
		return -ENOMEM;
	np[(*n)++] = pid;
	*pids = np;
	return 0;
}

int targets_cgroup_pids(const char *path, uint32_t **pids, size_t *n)
{
	char file[4096];
	unsigned int pid;
	struct dirent *de;
	DIR *dir;
	FILE *f;
	int err = 0;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (!err && fscanf(f, "%u", &pid) == 1)
		err = append_pid(pids, n, pid);
	fclose(f);
	dir = opendir(path);
	if (!dir)
		return err ? err : -errno;
	while (!err && (de = readdir(dir))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		err = targets_cgroup_pids(file, pids, n);
		if (err == -ENOENT) /* removed meanwhile */
			err = 0;
	}
	closedir(dir);
	return err;
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return !statfs(path, &sf) && sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Where cgroup v2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified on
 * hybrid hosts. */
static const char *cgroup2_root(void)
{
	if (!is_cgroup2(CGROUP_FS) && is_cgroup2(CGROUP_FS "/unified"))
		return CGROUP_FS "/unified";
	return CGROUP_FS;
}

static int fail(char *msg, size_t msglen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *msg, size_t msglen, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return err;
}

int targets_cgroup_resolve(const char *p, size_t len, char **out, char *msg, size_t msglen)
{
	char given[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
	size_t fslen = strlen(CGROUP_FS);
	struct stat st;

	if (!len || len >= sizeof(given))
		return fail(msg, msglen, -EINVAL, "empty or too long cgroup path");
	memcpy(given, p, len);
	given[len] = '\0';
	if (given[0] != '/')
		return fail(msg, msglen, -EINVAL, "cgroup '%s' is not an absolute path", given);
	if (!strncmp(given, CGROUP_FS, fslen) && (!given[fslen] || given[fslen] == '/'))
		snprintf(full, sizeof(full), "%s", given);
	else if (snprintf(full, sizeof(full), "%s%s", cgroup2_root(), given) >= (int)sizeof(full))
		return fail(msg, msglen, -EINVAL, "cgroup path '%s' too long", given);
	if (!realpath(full, real))
		return fail(msg, msglen, -EINVAL, "cgroup '%s' does not exist (%s: %s)", given,
			    full, strerror(errno));
	if (stat(real, &st) || !S_ISDIR(st.st_mode))
		return fail(msg, msglen, -EINVAL, "cgroup '%s' is not a directory (%s)", given,
			    real);
	if (strncmp(real, CGROUP_FS, fslen) || (real[fslen] && real[fslen] != '/'))
		return fail(msg, msglen, -EINVAL, "cgroup '%s' is not under " CGROUP_FS " (%s)",
			    given, real);
	if (!is_cgroup2(real))
		return fail(msg, msglen, -EINVAL, "cgroup '%s' is not a cgroup v2 directory (%s)",
			    given, real);
	*out = strdup(real);
	return *out ? 0 : fail(msg, msglen, -ENOMEM, "out of memory");
}
