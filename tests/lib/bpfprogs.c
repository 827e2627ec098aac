// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "bpfprogs.h"

static void add_id(struct tl_bpf_progs *p, uint32_t id)
{
	size_t i = 0;

	while (i < p->n && p->ids[i] < id)
		i++;
	if ((i < p->n && p->ids[i] == id) || p->n == TL_BPF_MAX_PROGS)
		return;
	memmove(&p->ids[i + 1], &p->ids[i], (p->n - i) * sizeof(p->ids[0]));
	p->ids[i] = id;
	p->n++;
}

void tl_bpf_progs(pid_t pid, struct tl_bpf_progs *out)
{
	char path[64], line[256];
	struct dirent *d;
	DIR *dir;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	dir = opendir(path);
	cr_assert_not_null(dir, "cannot read %s", path);
	while ((d = readdir(dir))) {
		char fpath[400];
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(fpath, sizeof(fpath), "%s/%s", path, d->d_name);
		f = fopen(fpath, "r");
		if (!f)
			continue; /* closed meanwhile */
		while (fgets(line, sizeof(line), f)) {
			unsigned id;

			if (sscanf(line, "prog_id: %u", &id) == 1 && id)
				add_id(out, id);
		}
		fclose(f);
	}
	closedir(dir);
	for (size_t i = 0; i < out->n; i++) {
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(out->ids[i]);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			snprintf(out->names[i], sizeof(out->names[i]), "%s", info.name);
		if (fd >= 0)
			close(fd);
	}
}

bool tl_bpf_has(const struct tl_bpf_progs *p, const char *prefix)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strncmp(p->names[i], prefix, strlen(prefix)))
			return true;
	return false;
}

bool tl_bpf_same(const struct tl_bpf_progs *a, const struct tl_bpf_progs *b)
{
	return a->n == b->n && !memcmp(a->ids, b->ids, a->n * sizeof(a->ids[0]));
}

const char *tl_bpf_text(const struct tl_bpf_progs *p, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u %s", i ? ", " : "", p->ids[i],
					p->names[i]);
	return buf;
}

/* The byte of var in map fd's value (a global data section), -1 when its
 * BTF has no such variable. */
static int datasec_u8(int fd, const struct bpf_map_info *mi, const char *var)
{
	struct btf *btf = btf__load_from_kernel_by_id(mi->btf_id);
	const struct btf_type *t = btf ? btf__type_by_id(btf, mi->btf_value_type_id) : NULL;
	const struct btf_var_secinfo *v = t && btf_is_datasec(t) ? btf_var_secinfos(t) : NULL;
	uint8_t *value = calloc(1, mi->value_size);
	uint32_t zero = 0;
	int ret = -1;

	for (int i = 0; v && value && i < btf_vlen(t); i++, v++) {
		const struct btf_type *vt = btf__type_by_id(btf, v->type);

		if (strcmp(btf__name_by_offset(btf, vt->name_off), var) ||
		    v->offset >= mi->value_size || bpf_map_lookup_elem(fd, &zero, value))
			continue;
		ret = value[v->offset];
		break;
	}
	free(value);
	btf__free(btf);
	return ret;
}

int tl_bpf_rodata_u8(pid_t pid, const char *prog, const char *var)
{
	struct tl_bpf_progs p;
	int ret = -1;

	tl_bpf_progs(pid, &p);
	for (size_t i = 0; i < p.n && ret < 0; i++) {
		uint32_t map_ids[64], len;
		struct bpf_prog_info info = { 0 };
		int fd;

		if (strncmp(p.names[i], prog, strlen(prog)))
			continue;
		fd = bpf_prog_get_fd_by_id(p.ids[i]);
		info.nr_map_ids = 64;
		info.map_ids = (uint64_t)(uintptr_t)map_ids;
		len = sizeof(info);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		close(fd);
		for (uint32_t m = 0; m < info.nr_map_ids && m < 64 && ret < 0; m++) {
			struct bpf_map_info mi = { 0 };
			int mfd = bpf_map_get_fd_by_id(map_ids[m]);

			len = sizeof(mi);
			if (mfd >= 0 && !bpf_obj_get_info_by_fd(mfd, &mi, &len) &&
			    strstr(mi.name, ".rodata") && mi.btf_id)
				ret = datasec_u8(mfd, &mi, var);
			if (mfd >= 0)
				close(mfd);
		}
	}
	return ret;
}
