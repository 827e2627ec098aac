/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Opening a path named by a target process inside that process's root
 * (/proc/PID/root), as the process itself would see it: absolute symlinks
 * resolve against its root, ".." stops at its root, magic links (/proc/N/fd,
 * /proc/N/root, ...) are never followed. ebprof runs as root and reads the
 * binaries, debug files and JIT maps of processes in other users'
 * containers; a plain open("/proc/PID/root/PATH") lets the kernel resolve a
 * planted absolute symlink against the agent's root, i.e. the host's file
 * of that name.
 *
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) (Linux 5.6+) does it;
 * where openat2 answers ENOSYS (a kernel before 5.6, or a seccomp filter
 * that does not know it, as container runtimes' older profiles) or E2BIG,
 * the same walk is done by hand, a component at a time (openat O_PATH |
 * O_NOFOLLOW), symlinks read and resolved as text against the root fd,
 * ".." clamped at the root, at most EBPROF_IN_ROOT_MAX_LINKS symlinks and
 * EBPROF_IN_ROOT_PATH_MAX bytes of path to resolve. The walk checks the
 * root by device and inode where the kernel checks mounts; a directory
 * moved out of the root while it is walked (which needs a rename outside
 * the container) is the one race it does not see.
 *
 * Why a header of static functions in include/ebprof/: both the symbolizer
 * library (binaries and debug files; it is built with include/ only) and
 * userspace/process/ (jitdumps and perf maps; it may use util/ only) need
 * it, and the layers (ARCHITECTURE.md, tools/check-layers.sh) give them
 * no other common place: include/ebprof/ is the one folder below both.
 * Declared here and defined in the symbolizer, it would make process/
 * link against the symbolizer it may not use; so it is one implementation
 * compiled into the files that include it. It uses libc only, holds no
 * state, and is not for BPF programs.
 */
#ifndef EBPROF_IN_ROOT_H
#define EBPROF_IN_ROOT_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EBPROF_IN_ROOT_MAX_LINKS 40	 /* symlinks followed per open (the kernel's bound) */
#define EBPROF_IN_ROOT_PATH_MAX PATH_MAX /* bytes of path left to resolve, links expanded */

/* opts of ebprof_open_in_root(): skip openat2, walk by hand (tests). */
#define EBPROF_IN_ROOT_WALK 1u

/* The walk's state: the path left to resolve, from pos to the end of buf. */
struct ebprof_in_root_walk {
	char buf[EBPROF_IN_ROOT_PATH_MAX];
	size_t pos;
};

/* Put text (len bytes) and a '/' before what is left; -ENAMETOOLONG. */
static inline int ebprof_in_root_push(struct ebprof_in_root_walk *w, const char *text, size_t len)
{
	if (len + 1 > w->pos)
		return -ENAMETOOLONG;
	w->pos -= len + 1;
	memcpy(w->buf + w->pos, text, len);
	w->buf[w->pos + len] = '/';
	return 0;
}

/* Replace *dirfd (not rootfd) with fd. */
static inline void ebprof_in_root_move(int *dirfd, int rootfd, int fd)
{
	if (*dirfd != rootfd)
		close(*dirfd);
	*dirfd = fd;
}

/* Is fd the root directory rootfd (".." stays there)? */
static inline int ebprof_in_root_is_root(int fd, const struct stat *root)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	return st.st_dev == root->st_dev && st.st_ino == root->st_ino;
}

/*
 * The fallback: path (relative or absolute, both from rootfd) walked one
 * component at a time. Every component is opened O_PATH | O_NOFOLLOW in
 * the directory reached so far, so the kernel never follows a link: a
 * symlink's text is read and put before the rest of the path (an absolute
 * one restarts at rootfd); ".." at rootfd stays at rootfd. The last
 * component is opened with flags (O_NOFOLLOW among them: a final symlink
 * is -ELOOP, or with O_PATH the link itself, as open(2) does). Returns an
 * fd or a negative errno.
 */
static inline int ebprof_walk_in_root(int rootfd, const char *path, int flags)
{
	struct ebprof_in_root_walk w;
	int dirfd = rootfd, fd, err, links = 0;
	size_t plen = strlen(path);
	struct stat root, st;

	if (fstat(rootfd, &root))
		return -errno;
	if (!S_ISDIR(root.st_mode))
		return -ENOTDIR;
	w.pos = sizeof(w.buf);
	if (plen + 1 > sizeof(w.buf))
		return -ENAMETOOLONG;
	w.pos -= plen;
	memcpy(w.buf + w.pos, path, plen);
	for (;;) {
		char name[NAME_MAX + 1], target[EBPROF_IN_ROOT_PATH_MAX];
		size_t len;
		bool last;
		ssize_t n;

		for (len = 0; w.pos + len < sizeof(w.buf) && w.buf[w.pos + len] != '/'; len++)
			;
		if (len > NAME_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(name, w.buf + w.pos, len);
		name[len] = '\0';
		w.pos += len;
		/* "name/" at the end wants a directory: not the last component */
		last = w.pos == sizeof(w.buf);
		while (w.pos < sizeof(w.buf) && w.buf[w.pos] == '/')
			w.pos++;
		if (!len || !strcmp(name, ".")) { /* "", "/", a trailing "/" or "/." */
			if (last)
				break;
			continue;
		}
		if (!strcmp(name, "..")) {
			err = ebprof_in_root_is_root(dirfd, &root);
			if (err < 0)
				goto fail;
			if (!err) {
				fd = openat(dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (fd < 0) {
					err = -errno;
					goto fail;
				}
				ebprof_in_root_move(&dirfd, rootfd, fd);
			}
			if (last)
				break;
			continue;
		}
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		if (S_ISLNK(st.st_mode) && last && (flags & O_NOFOLLOW)) {
			if (flags & O_PATH) { /* as open(2): the link itself */
				ebprof_in_root_move(&dirfd, rootfd, rootfd);
				return fd;
			}
			close(fd);
			err = -ELOOP;
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(fd, "", target, sizeof(target));
			err = n < 0 ? -errno : 0;
			close(fd);
			if (err)
				goto fail;
			if (++links > EBPROF_IN_ROOT_MAX_LINKS)
				err = -ELOOP;
			else if ((size_t)n >= sizeof(target) || !n)
				err = n ? -ENAMETOOLONG : -ENOENT;
			else if (!last)
				err = ebprof_in_root_push(&w, target, (size_t)n);
			else /* nothing left: the link's text is all */
				memcpy(w.buf + (w.pos -= (size_t)n), target, (size_t)n);
			if (err)
				goto fail;
			if (target[0] == '/')
				ebprof_in_root_move(&dirfd, rootfd, rootfd);
			continue;
		}
		if (!last) {
			if (!S_ISDIR(st.st_mode)) {
				close(fd);
				err = -ENOTDIR;
				goto fail;
			}
			ebprof_in_root_move(&dirfd, rootfd, fd);
			continue;
		}
		if (flags & O_PATH) {
			ebprof_in_root_move(&dirfd, rootfd, rootfd);
			return fd;
		}
		close(fd);
		/* The name again, for reading: swapped for a link meanwhile,
		 * O_NOFOLLOW refuses it. */
		fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
		err = fd < 0 ? -errno : 0;
		ebprof_in_root_move(&dirfd, rootfd, rootfd);
		return fd < 0 ? err : fd;
	}
	/* The path ends at a directory: itself. */
	fd = openat(dirfd, ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC);
	err = fd < 0 ? -errno : 0;
	ebprof_in_root_move(&dirfd, rootfd, rootfd);
	return fd < 0 ? err : fd;
fail:
	ebprof_in_root_move(&dirfd, rootfd, rootfd);
	return err;
}

/*
 * Open path inside the root directory rootfd (an O_PATH | O_DIRECTORY fd of
 * /proc/PID/root, say). flags: O_RDONLY or O_PATH, with O_NOFOLLOW to
 * refuse a final symlink; O_CLOEXEC is added, and O_NONBLOCK to O_RDONLY
 * so a FIFO cannot block (the caller fstat()s what it got: only regular
 * files are to be read). opts: 0, or EBPROF_IN_ROOT_WALK. Returns an fd or
 * a negative errno (-ELOOP: too many links, a magic link, or a final link
 * with O_NOFOLLOW, which O_PATH opens itself as open(2) does;
 * -ENAMETOOLONG; -ENOENT, -ENOTDIR, -EACCES as open(2)).
 */
static inline int ebprof_open_in_root(int rootfd, const char *path, int flags, unsigned int opts)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NONBLOCK)),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = -1;

	if (rootfd < 0)
		return -EBADF;
	if (!path)
		return -EINVAL;
	if (!(opts & EBPROF_IN_ROOT_WALK)) {
		/* EAGAIN: a rename raced with the lookup; ask again a few times */
		for (int tries = 0; tries < 3; tries++) {
			fd = syscall(SYS_openat2, rootfd, path[0] ? path : ".", &how, sizeof(how));
			if (fd >= 0 || errno != EAGAIN)
				break;
		}
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS && errno != E2BIG)
			return -errno;
	}
	return ebprof_walk_in_root(rootfd, path, (int)how.flags);
}

#endif /* EBPROF_IN_ROOT_H */
