/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The browser tests' harness: Debian's /usr/bin/chromium driven by
 * playwright-core (installed under BUILD/browser/node_modules by
 * tests/fixtures/browser.mk) through a script of tests/browser/, which
 * prints one "key=value" line per observation for the C test to check
 * (tl_kv). Screenshots go to BUILD/browser/artifacts.
 */
#ifndef EBPROF_BROWSER_ENV_H
#define EBPROF_BROWSER_ENV_H

/* Asserts that Chromium, node, playwright-core and the script (a path
 * from the source tree) are there, and makes the artifacts directory;
 * returns its path (static storage, valid until the next call). */
const char *browser_env_ready(const char *script);

/* Runs `node SCRIPT ARGS... ARTIFACTS` (args NULL-terminated), asserts it
 * exits 0, prints its output and returns it (malloc'ed, the caller frees). */
char *browser_env_run(const char *script, const char *const args[]);

#endif /* EBPROF_BROWSER_ENV_H */
