/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * File I/O shared by the profile writers, the store and the remote queue.
 * Functions return 0 or a negative errno; buffers they allocate belong to
 * the caller.
 */
#ifndef EBPROF_FILEIO_H
#define EBPROF_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* write(2) until everything is written (EINTR retried). */
int write_all(int fd, const void *buf, size_t len);

/* Write buf to path atomically (temp file in the same directory, fsync,
 * rename); path "-" writes to stdout; a path that exists and is not a
 * regular file (/dev/null, /dev/stdout, a FIFO) is written in place, never
 * replaced. 0 or a negative errno. */
int write_file_atomic(const char *path, const uint8_t *buf, size_t len);

/* Read a whole file ("-" = stdin); *buf malloc'ed. 0 or negative errno. */
int read_file(const char *path, uint8_t **buf, size_t *len);
/* The same, -EFBIG for more than max bytes (checked before reading a
 * regular file, while reading anything else). */
int read_file_max(const char *path, size_t max, uint8_t **buf, size_t *len);

/* Read at most size - 1 bytes of a small file (e.g. under /proc) into buf
 * and NUL-terminate it; *len (may be NULL) gets the byte count. */
int read_small_file(const char *path, char *buf, size_t size, size_t *len);

/* mkdir -p: path and its missing parents, with mode. 0 or a negative
 * errno (-ENAMETOOLONG past PATH_MAX). */
int mkdir_p(const char *path, mode_t mode);

#endif /* EBPROF_FILEIO_H */
