// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "config_fixture.h"

#define CGROUP2_MAGIC 0x63677270

void write_tmp(char *path, size_t len, const char *content)
{
	int fd;

	snprintf(path, len, "/tmp/ebprof-test-config-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

int parse_with(struct agent_config *c, const char *default_path, char *err, size_t errlen, ...)
{
	char *argv[64] = { "agent" };
	int argc = 1;
	va_list ap;

	va_start(ap, errlen);
	for (const char *a; (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	err[0] = '\0';
	return config_parse_args_path(c, argc, argv, default_path, err, errlen);
}

const char *cgroup2_root(void)
{
	struct statfs sf;

	if (!statfs("/sys/fs/cgroup", &sf) && sf.f_type == CGROUP2_MAGIC)
		return "/sys/fs/cgroup";
	if (!statfs("/sys/fs/cgroup/unified", &sf) && sf.f_type == CGROUP2_MAGIC)
		return "/sys/fs/cgroup/unified";
	return NULL;
}
