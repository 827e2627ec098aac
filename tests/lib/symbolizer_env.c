// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer_env.h"
#include "symfix.h"

const char *debug_dir(void)
{
	return fx("debug");
}

struct symbolizer *new_sym(const char *debug_dirs, size_t max_bytes, bool no_demangle)
{
	struct sym_opts o = { .max_cache_bytes = max_bytes,
			      .debug_dirs = debug_dirs,
			      .no_demangle = no_demangle };
	struct symbolizer *sym = NULL;

	cr_assert_eq(sym_new(&o, &sym), 0);
	cr_assert_not_null(sym);
	return sym;
}

struct sym_elf *get_path(struct symbolizer *sym, const char *path)
{
	struct sym_binary b = { .path = path };
	struct sym_elf *e = NULL;
	int err = sym_elf_get(sym, &b, &e);

	cr_assert_eq(err, 0, "sym_elf_get(%s) = %d (%s)", path, err, strerror(-err));
	cr_assert_not_null(e);
	return e;
}

void *read_all(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc(st.st_size);
	cr_assert_not_null(buf);
	cr_assert_eq(read(fd, buf, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return buf;
}

long dwfl_rss(const char *path)
{
	char real[PATH_MAX], line[1024];
	FILE *f = fopen("/proc/self/smaps", "re");
	long kb = -1, v;
	bool in = false;

	cr_assert_not_null(realpath(path, real));
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char perms[8], file[PATH_MAX] = "";
		unsigned long off;

		if (sscanf(line, "%*x-%*x %7s %lx %*s %*s %4095s", perms, &off, file) >= 2) {
			in = !strcmp(perms, "rw-p") && !off && !strcmp(file, real);
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			kb = (kb < 0 ? 0 : kb) + v;
	}
	fclose(f);
	return kb;
}
