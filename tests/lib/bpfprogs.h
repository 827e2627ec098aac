/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF programs a process holds, seen from outside as bpftool would:
 * the prog_id of each of its descriptors (/proc/PID/fdinfo: programs and
 * links), and each program's name from the kernel (BPF_OBJ_GET_INFO; 15
 * characters at most). For tests that check what a session loads.
 */
#ifndef EBPROF_TEST_BPFPROGS_H
#define EBPROF_TEST_BPFPROGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TL_BPF_MAX_PROGS 64

struct tl_bpf_progs {
	size_t n;
	uint32_t ids[TL_BPF_MAX_PROGS]; /* ascending, each once */
	char names[TL_BPF_MAX_PROGS][16];
};

/* pid's programs into *out (asserts /proc/PID/fdinfo can be read). */
void tl_bpf_progs(pid_t pid, struct tl_bpf_progs *out);
/* Does it hold a program whose name starts with prefix? */
bool tl_bpf_has(const struct tl_bpf_progs *p, const char *prefix);
/* The same ids (the same programs, none loaded or dropped)? */
bool tl_bpf_same(const struct tl_bpf_progs *a, const struct tl_bpf_progs *b);
/* The byte of global var (a const volatile bool of the program's .rodata:
 * what userspace configured it with before the load) of pid's program
 * whose name starts with prog, from the kernel (the map's BTF says where
 * var is); -1 when it has no such program or variable. */
int tl_bpf_rodata_u8(pid_t pid, const char *prog, const char *var);
/* "id name, id name, ..." into buf, for messages. */
const char *tl_bpf_text(const struct tl_bpf_progs *p, char *buf, size_t len);

#endif /* EBPROF_TEST_BPFPROGS_H */
