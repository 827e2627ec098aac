// SPDX-License-Identifier: BSD-2-Clause
/*
 * The wait sampler's visit of the targets' threads in one run
 * (bpf/waits_targets.bpf.h, kfuncs of Linux 6.7+), loaded from an object
 * of its own (bpf/waits_targets.bpf.c: profile.bpf.c again, with it) so
 * that profile.bpf.c's names no kfunc: a libbpf before 1.3 fails to load
 * an object naming one the kernel lacks (6.1-6.6) without CAP_SYS_ADMIN.
 * This one is opened only where the kernel has them all
 * (features_have_task_iter_targets()), and only its program
 * waits_visit_targets is loaded, on the loaded session's maps and global
 * data (bpf_map__reuse_fd()): .bss, .data and .rodata are shared, so
 * their layout must be profile.bpf.c's, checked here variable by
 * variable (the same source makes the same, but a mismatch would have
 * the program read and write the wrong globals). Its own: waits_list,
 * its .data.waits_n, string constants. The object is closed once its
 * link is made: the link keeps the program, the program the maps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "sampler_internal.h"
#include "util/log.h"
#include "waits_targets.h"

/* The object, gzip'd (the Makefile: WAITS_TARGETS_GZ, its path): ~57 KiB
 * rather than ~200 in the binary and the disk image */
__asm__(".section .rodata\n"
	".balign 8\n"
	"waits_targets_gz:\n"
	".incbin \"" WAITS_TARGETS_GZ "\"\n"
	"waits_targets_gz_end:\n"
	".previous\n");
extern const unsigned char waits_targets_gz[], waits_targets_gz_end[];

/* The object inflated: 0 and *out (the caller's: free()), *len; or a
 * negative errno. Its size is the gzip trailer's (ISIZE, little-endian). */
static int inflate_object(void **out, size_t *len)
{
	size_t gz = (size_t)(waits_targets_gz_end - waits_targets_gz);
	const unsigned char *t;
	z_stream z = { 0 };
	void *buf;
	int ret;

	if (gz < 18)
		return -EINVAL;
	t = waits_targets_gz + gz - 4;
	*len = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
	buf = malloc(*len);
	if (!buf)
		return -ENOMEM;
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)waits_targets_gz;
	z.avail_in = (uInt)gz;
	z.next_out = buf;
	z.avail_out = (uInt)*len;
	ret = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (ret != Z_STREAM_END || z.total_out != *len) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/* Is the data section sec laid out alike in both objects (its variables'
 * names, offsets and sizes, in order)? */
static bool same_datasec(const struct btf *a, const struct btf *b, const char *sec)
{
	int ia = btf__find_by_name_kind(a, sec, BTF_KIND_DATASEC);
	int ib = btf__find_by_name_kind(b, sec, BTF_KIND_DATASEC);
	const struct btf_type *ta, *tb;
	const struct btf_var_secinfo *va, *vb;

	if (ia < 0 || ib < 0)
		return ia < 0 && ib < 0; /* in neither: nothing to share */
	ta = btf__type_by_id(a, ia);
	tb = btf__type_by_id(b, ib);
	if (btf_vlen(ta) != btf_vlen(tb) || ta->size != tb->size)
		return false;
	va = btf_var_secinfos(ta);
	vb = btf_var_secinfos(tb);
	for (int i = 0; i < btf_vlen(ta); i++) {
		const char *na = btf__name_by_offset(a, btf__type_by_id(a, va[i].type)->name_off);
		const char *nb = btf__name_by_offset(b, btf__type_by_id(b, vb[i].type)->name_off);

		if (va[i].offset != vb[i].offset || va[i].size != vb[i].size || !na || !nb ||
		    strcmp(na, nb))
			return false;
	}
	return true;
}

/* The section of an internal map's name ("profile_.bss": ".bss"). */
static const char *internal_section(const char *name)
{
	const char *dot = strchr(name, '.');

	return dot ? dot : name;
}

/* Each map of obj the session's (by name) reused; the shared data
 * sections checked first. */
static int share_maps(struct bpf_object *obj, struct bpf_object *mine, char *err, size_t errlen)
{
	static const char *const shared[] = { ".bss", ".data", ".rodata" };
	const struct btf *bt = bpf_object__btf(obj), *bm = bpf_object__btf(mine);
	struct bpf_map *m, *their;
	const char *sec;
	bool share;
	int ret;

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (!bt || !bm || !same_datasec(bt, bm, shared[i])) {
			snprintf(err, errlen, "its %s is not laid out as the session's", shared[i]);
			return -EINVAL;
		}
	bpf_object__for_each_map(m, obj)
	{
		share = true;
		if (bpf_map__is_internal(m)) {
			sec = internal_section(bpf_map__name(m));
			share = false;
			for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
				share = share || !strcmp(sec, shared[i]);
		}
		their = share ? bpf_object__find_map_by_name(mine, bpf_map__name(m)) : NULL;
		if (!their && share && bpf_map__is_internal(m)) { /* its globals apart */
			snprintf(err, errlen, "the session has no %s", bpf_map__name(m));
			return -ENOENT;
		}
		if (!their) {
			if (share && strcmp(bpf_map__name(m), "waits_list"))
				log_debug("wait sampler: map %s of its own", bpf_map__name(m));
			continue;
		}
		ret = bpf_map__reuse_fd(m, bpf_map__fd(their));
		if (ret) {
			snprintf(err, errlen, "cannot share the map %s: %s", bpf_map__name(m),
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int waits_targets_attach(struct sampler *s, struct bpf_link **out, char *err, size_t errlen)
{
	/* its internal maps named as the session's ("profile_.bss") */
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "profile_bpf");
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, io);
	union bpf_iter_link_info li = { .task.tid = (uint32_t)getpid() };
	struct bpf_object *obj;
	struct bpf_program *p, *prog = NULL;
	struct bpf_map *list;
	void *bytes;
	size_t len;
	int ret;

	*out = NULL;
	ret = inflate_object(&bytes, &len);
	if (ret) {
		snprintf(err, errlen, "cannot inflate it: %s", strerror(-ret));
		return ret;
	}
	obj = bpf_object__open_mem(bytes, len, &oo);
	if (!obj) {
		ret = -errno;
		snprintf(err, errlen, "cannot open it: %s", strerror(errno));
		free(bytes);
		return ret;
	}
	bpf_object__for_each_program(p, obj)
	{
		bool it = !strcmp(bpf_program__name(p), "waits_visit_targets");

		bpf_program__set_autoload(p, it);
		prog = it ? p : prog;
	}
	list = bpf_object__find_map_by_name(obj, "waits_list");
	if (!prog || !list) {
		snprintf(err, errlen, "no waits_visit_targets in it");
		ret = -ENOENT;
		goto out;
	}
	/* the targets' tgids and tids: as many as the threads it keeps */
	bpf_map__set_max_entries(list, bpf_map__max_entries(s->skel->maps.waits_threads));
	ret = share_maps(obj, s->skel->obj, err, errlen);
	if (ret)
		goto out;
	ret = bpf_object__load(obj);
	if (ret) {
		snprintf(err, errlen, "cannot load it: %s (-v: the verifier's log)",
			 strerror(-ret));
		goto out;
	}
	/* one task, this process's main thread (its leader: 6.1's tid
	 * filter finds no other), whose one visit finds the targets'
	 * threads */
	io.link_info = &li;
	io.link_info_len = sizeof(li);
	*out = bpf_program__attach_iter(prog, &io);
	if (!*out) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach it: %s", strerror(errno));
	}
out:
	bpf_object__close(obj);
	free(bytes); /* libbpf reads it until closed */
	return ret;
}
