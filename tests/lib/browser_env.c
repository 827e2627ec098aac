// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser_env.h"
#include "testlib.h"

static char artifacts[512];

const char *browser_env_ready(const char *script)
{
	const char *modules = tl_path("browser/node_modules");
	char cmd[1024], *out = NULL;

	cr_assert_eq(access("/usr/bin/chromium", X_OK), 0,
		     "/usr/bin/chromium missing: install Debian's chromium (make deps)");
	cr_assert_eq(tl_sh("node --version", &out), 0, "node missing: %s", out ? out : "");
	free(out);
	out = NULL;
	snprintf(cmd, sizeof(cmd), "%s/playwright-core/package.json", modules);
	cr_assert_eq(access(cmd, R_OK), 0, "%s missing: run make test (tests/fixtures/browser.mk)",
		     cmd);
	cr_assert_eq(access(script, R_OK), 0, "%s missing: run from the source tree", script);
	snprintf(artifacts, sizeof(artifacts), "%s", tl_path("browser/artifacts"));
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", artifacts);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out ? out : "");
	free(out);
	return artifacts;
}

char *browser_env_run(const char *script, const char *const args[])
{
	const char *dir = browser_env_ready(script);
	char cmd[4096], *out = NULL;
	size_t n;
	int rc;

	n = (size_t)snprintf(cmd, sizeof(cmd), "NODE_PATH='%s' node %s",
			     tl_path("browser/node_modules"), script);
	for (size_t i = 0; args && args[i] && n < sizeof(cmd); i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " '%s'", args[i]);
	if (n < sizeof(cmd))
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " '%s'", dir);
	cr_assert_lt(n, sizeof(cmd), "browser command too long");
	rc = tl_sh(cmd, &out);
	cr_assert_eq(rc, 0, "browser script failed (%d):\n%s", rc, out ? out : "");
	printf("browser script output:\n%s", out);
	return out;
}
