// SPDX-License-Identifier: BSD-2-Clause
/*
 * config_equal(): a SIGHUP with nothing edited restarts nothing (agent.c),
 * so two configurations must compare unequal whenever any key differs.
 * Every key of the table is set to two different valid values: a key
 * added to struct agent_config and forgotten in config_equal() fails here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "agent/config.h"
#include "agent/config_keys.h"

/* Two different valid values for a key of this type. */
static void two_values(const struct key_def *k, char *a, char *b, size_t len)
{
	const char *x = NULL, *y = NULL;

	switch (k->type) {
	case T_INT:
		snprintf(a, len, "%ld", k->min);
		snprintf(b, len, "%ld", k->max);
		return;
	case T_BOOL:
		x = "false", y = "true";
		break;
	case T_PATH:
		x = "/srv/a", y = "/srv/b";
		break;
	case T_DURATION:
		x = "1h", y = "2h";
		break;
	case T_SIZE:
		x = "64M", y = "128M";
		break;
	case T_NAMES:
		x = "postgres", y = "pgbouncer";
		break;
	case T_PIDS:
		x = "1", y = "1,2";
		break;
	case T_CGROUPS:
		x = "", y = "/"; /* the cgroup v2 root: no list, and one */
		break;
	case T_SERVICE:
	case T_TEXT:
		x = "db-a", y = "db-b";
		break;
	case T_URL:
	case T_URLS:
		x = "http://127.0.0.1:1", y = "http://127.0.0.1:2";
		break;
	case T_LISTEN:
		x = "127.0.0.1:3080", y = "127.0.0.1:3081";
		break;
	case T_LOGLEVEL:
		x = "error", y = "debug";
		break;
	case T_QUERYLABELS:
		x = "off", y = "fingerprint";
		break;
	case T_UNWIND:
		x = "fp", y = "dwarf";
		break;
	case T_OFFCPU_PATH:
		x = "switch", y = "auto";
		break;
	case T_TYPES:
		x = "cpu", y = "cpu,offcpu";
		break;
	}
	cr_assert_not_null(x, "key %s: a type this test does not know", k->name);
	snprintf(a, len, "%s", x);
	snprintf(b, len, "%s", y);
}

Test(config_equal, defaults_and_copies_are_equal)
{
	struct agent_config a, b;

	cr_assert_eq(config_defaults(&a), 0);
	cr_assert_eq(config_defaults(&b), 0);
	cr_expect(config_equal(&a, &b));
	cr_expect(config_equal(&a, &a));
	config_free(&a);
	config_free(&b);
}

Test(config_equal, every_key_tells)
{
	char va[128], vb[128], err[512];

	cr_assert_gt(config_nkeys, 30);
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct key_def *k = &config_keys[i];
		struct agent_config a, b;

		two_values(k, va, vb, sizeof(va));
		cr_assert_eq(config_defaults(&a), 0);
		cr_assert_eq(config_defaults(&b), 0);
		cr_assert_eq(config_set(&a, k->name, va, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(config_set(&b, k->name, vb, err, sizeof(err)), 0, "%s", err);
		cr_expect_not(config_equal(&a, &b), "%s = %s and %s = %s compare equal", k->name,
			      va, k->name, vb);
		/* the same value twice: equal, though every string is a copy */
		cr_assert_eq(config_set(&a, k->name, vb, err, sizeof(err)), 0, "%s", err);
		cr_expect(config_equal(&a, &b), "%s = %s twice compares unequal", k->name, vb);
		config_free(&a);
		config_free(&b);
	}
}

Test(config_equal, symbolizer_keys)
{
	struct agent_config a, b;
	char err[512];

	cr_assert_eq(config_defaults(&a), 0);
	cr_assert_eq(config_defaults(&b), 0);
	cr_assert_eq(config_set(&b, "frequency", "97", err, sizeof(err)), 0, "%s", err);
	cr_expect(config_same_symbols(&a, &b), "frequency is not the symbolizer's");
	cr_assert_eq(config_set(&b, "offline", "true", err, sizeof(err)), 0, "%s", err);
	cr_expect_not(config_same_symbols(&a, &b));
	config_free(&a);
	config_free(&b);
}
