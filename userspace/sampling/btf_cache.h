/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The part of the kernel's BTF the BPF program's CO-RE relocations use,
 * cached per kernel and program (bpftool gen min_core_btf).
 *
 * To relocate the program, libbpf reads the kernel's whole BTF
 * (/sys/kernel/btf/vmlinux, 5.5 MB on Linux 6.18) into memory twice and
 * indexes it: 12 MiB for a few tens of milliseconds, the agent's
 * resident peak at its start. The relocations need some 40 types of it,
 * 1 KiB once extracted. bpftool extracts them, in a process of its own,
 * once per kernel and BPF program; the file is kept in the cache
 * directory under a name made of the kernel BTF's and the program's
 * checksums and of its own, and libbpf reads it instead of the kernel's
 * (btf_custom_path).
 *
 * Trusted only if the directory and the file belong to this user and no
 * one else may write them, and the file's checksum is the one its name
 * says; otherwise (or without bpftool) the kernel's whole BTF is used, as
 * before, with one line saying why.
 */
#ifndef EBPROF_BTF_CACHE_H
#define EBPROF_BTF_CACHE_H

#include <stddef.h>

#define BTF_CACHE_DEFAULT_DIR "/var/cache/ebprof/btf"

struct btf_cache {
	int fd; /* the verified file, open (libbpf reads path, /proc/self/fd/N) */
	char path[64];
};

/* The cached minimal BTF of the program in obj (len bytes) for the
 * running kernel, made with bpftool when missing; dir: the cache
 * directory (NULL: BTF_CACHE_DEFAULT_DIR, "": none, -ENOENT). 0 and c
 * filled, or a negative errno (the reason logged once: the caller loads
 * with the kernel's whole BTF). btf_cache_close() when loaded. */
int btf_cache_get(const char *dir, const void *obj, size_t len, struct btf_cache *c);

void btf_cache_close(struct btf_cache *c);

#endif /* EBPROF_BTF_CACHE_H */
