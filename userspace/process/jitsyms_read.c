// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading the JIT symbol files of a live process (jitsyms.h) as hostile
 * input: the jitdumps it maps, opened through /proc/PID/map_files or inside
 * its root, and /tmp/perf-NSPID.map inside its root; regular files owned by
 * the process's user only, each read bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ebprof/in_root.h"
#include "util/fileio.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "jitsyms.h"

/* "jit-<digits>.dump" as the last component of path. */
static bool is_jitdump(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL, *p;

	base = base ? base + 1 : path;
	if (!base || strncmp(base, "jit-", 4))
		return false;
	for (p = base + 4; *p >= '0' && *p <= '9'; p++)
		;
	return p > base + 4 && !strcmp(p, ".dump");
}

bool jitsyms_mapped(const struct proc_maps *maps)
{
	for (size_t i = 0; maps && i < maps->n; i++)
		if (maps->entries[i].kind == MAPPING_FILE && is_jitdump(maps->entries[i].path))
			return true;
	return false;
}

/* Open path inside the root directory rootfd without leaving it, without
 * following a final symlink or any magic link (ebprof/in_root.h). flags:
 * O_RDONLY or O_PATH. */
static int open_in_root(int rootfd, const char *path, int flags)
{
	return ebprof_open_in_root(rootfd, path, flags | O_NOFOLLOW, 0);
}

/* The file behind a mapping: /proc/PID/map_files (the very file mapped,
 * even deleted), else its path in the process's root. */
static int open_mapped(uint32_t pid, int rootfd, const struct map_entry *e, int flags)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)e->start, (unsigned long long)e->end);
	fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	return open_in_root(rootfd, e->path, flags);
}

/* The perf map's name in the process's root: its pid in its own PID
 * namespace (last field of NSpid), or pid on kernels without NSpid. */
static void perfmap_name(uint32_t pid, char *buf, size_t size)
{
	char path[64], status[4096], *p, *q;
	unsigned long ns = pid, v;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (!read_small_file(path, status, sizeof(status), NULL) &&
	    (p = strstr(status, "\nNSpid:")))
		for (p += 7; (v = strtoul(p, &q, 10)), q != p; p = q) {
			ns = v;
			if (*q == '\n')
				break;
		}
	snprintf(buf, size, "tmp/perf-%lu.map", ns);
}

/* Read fd (a regular file owned by uid) up to max bytes and parse it;
 * *used += the bytes read. 0, or -ENOMEM. */
static int load_fd(int fd, uid_t uid, bool jitdump, size_t max, size_t *used, const char *what,
		   struct jit_syms *js)
{
	size_t want, done = 0;
	struct stat st;
	char *buf;
	int r;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid) {
		log_debug("jit symbols: %s skipped: not a regular file of the process's user",
			  what);
		return 0;
	}
	want = (uint64_t)st.st_size < max ? (size_t)st.st_size : max;
	buf = malloc(want ? want : 1);
	if (!buf)
		return -ENOMEM;
	while (done < want) {
		ssize_t n = read(fd, buf + done, want - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	*used += done;
	if (!jitdump && done && done == max && buf[done - 1] != '\n') { /* cut at the cap */
		char *nl = memrchr(buf, '\n', done);

		done = nl ? (size_t)(nl - buf) + 1 : 0;
	}
	r = jitdump ? jitsyms_parse_jitdump(buf, done, js) : jitsyms_parse_perfmap(buf, done, js);
	free(buf);
	if (r < 0 && r != -ENOMEM)
		log_debug("jit symbols: %s: not a jitdump (%s)", what, strerror(-r));
	return r == -ENOMEM ? r : 0;
}

/* Fold a file's identity, size and mtime (zeros when fd < 0) into h. */
static uint64_t stamp_fd(uint64_t h, int fd)
{
	uint64_t v[5] = { 0 };
	struct stat st;

	if (fd >= 0 && !fstat(fd, &st)) {
		v[0] = st.st_dev;
		v[1] = st.st_ino;
		v[2] = (uint64_t)st.st_size;
		v[3] = (uint64_t)st.st_mtim.tv_sec;
		v[4] = (uint64_t)st.st_mtim.tv_nsec ^ (uint64_t)st.st_mode << 32;
	}
	if (fd >= 0)
		close(fd);
	return hm_mix64(h ^ hm_hash_bytes(v, sizeof(v)));
}

#define JITSYMS_MAX_DUMPS 16 /* jitdump files read per process */

/*
 * The files of pid: its jitdumps (at most JITSYMS_MAX_DUMPS, together at
 * most JITSYMS_JITDUMP_MAX bytes), then its perf map. With js, parse them
 * into js; without, fold their stat into *stamp.
 */
static int walk(uint32_t pid, const struct proc_maps *maps, struct jit_syms *js, uint64_t *stamp)
{
	int err, fd, rootfd, flags = js ? O_RDONLY : O_PATH;
	struct proc_maps *own = NULL;
	size_t used = 0, ndumps = 0;
	char path[64], what[96];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	if (stat(path, &st))
		return errno == ENOENT ? -ESRCH : -errno;
	if (!maps) {
		err = procmaps_read((int)pid, true, &own);
		if (err)
			return err == -ENOENT ? -ESRCH : err;
		maps = own;
	}
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = 0;
	for (size_t i = 0; i < maps->n && !err && ndumps < JITSYMS_MAX_DUMPS; i++) {
		const struct map_entry *e = &maps->entries[i];

		if (e->kind != MAPPING_FILE || !is_jitdump(e->path))
			continue;
		ndumps++;
		fd = open_mapped(pid, rootfd, e, flags);
		if (!js) {
			*stamp = stamp_fd(*stamp, fd);
		} else if (fd < 0) {
			log_debug("jit symbols: pid %u: %s: %s", pid, e->path, strerror(-fd));
		} else if (used < JITSYMS_JITDUMP_MAX) {
			snprintf(what, sizeof(what), "pid %u jitdump", pid);
			err = load_fd(fd, st.st_uid, true, JITSYMS_JITDUMP_MAX - used, &used, what,
				      js);
			close(fd);
		} else {
			close(fd);
		}
	}
	perfmap_name(pid, path, sizeof(path));
	fd = err ? -1 : open_in_root(rootfd, path, flags);
	if (!js) {
		*stamp = hm_mix64(stamp_fd(*stamp, fd) ^ st.st_uid);
	} else if (fd >= 0) {
		snprintf(what, sizeof(what), "pid %u /%s", pid, path);
		used = 0;
		err = load_fd(fd, st.st_uid, false, JITSYMS_PERFMAP_MAX, &used, what, js);
		close(fd);
	} else if (fd != -ENOENT && !err) {
		log_debug("jit symbols: pid %u /%s: %s", pid, path, strerror(-fd));
	}
	if (rootfd >= 0)
		close(rootfd);
	procmaps_free(own);
	return err;
}

int jitsyms_perfmap_look(uint32_t pid)
{
	char path[64];
	int rootfd, fd;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : 0;
	perfmap_name(pid, path, sizeof(path));
	fd = open_in_root(rootfd, path, O_PATH);
	close(rootfd);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

bool jitsyms_perfmap_exists(uint32_t pid)
{
	return jitsyms_perfmap_look(pid) > 0;
}

int jitsyms_load(uint32_t pid, const struct proc_maps *maps, struct jit_syms **out)
{
	struct jit_syms *js = jitsyms_new();
	int err;

	if (!js)
		return -ENOMEM;
	err = walk(pid, maps, js, NULL);
	if (err) {
		jitsyms_free(js);
		return err;
	}
	*out = js;
	return 0;
}

int jitsyms_stamp(uint32_t pid, const struct proc_maps *maps, uint64_t *stamp)
{
	*stamp = 0x6a6974;
	return walk(pid, maps, NULL, stamp);
}
