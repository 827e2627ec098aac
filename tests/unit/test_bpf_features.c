// SPDX-License-Identifier: BSD-2-Clause
/*
 * The feature probe: on the host kernel (which has everything ebprof
 * needs) every feature is found; a kernel that lacks some is refused in
 * one line naming each missing feature and the Linux version that has it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "sampling/bpf_features.h"

static struct features everything(void)
{
	struct features f = {
		.release = "6.1.0-test",
		.btf = true,
		.perf_event = true,
		.raw_tp = true,
		.hash = true,
		.percpu_array = true,
		.ringbuf = true,
		.get_stack = true,
		.current_task = true,
		.cgroup_id = true,
		.read_kernel = true,
		.batch_ops = true,
	};

	return f;
}

Test(features, host_kernel_has_everything)
{
	struct features f;
	char line[512], err[512] = "";

	cr_assert_eq(geteuid(), 0,
		     "not root: probing loads BPF programs (run as root, as CI does)");
	cr_assert_eq(features_probe(NULL, &f), 0);
	features_format(&f, line, sizeof(line));
	cr_log_info("%s", line);
	cr_expect_eq(features_check(&f, err, sizeof(err)), 0, "%s", err);
	cr_expect(f.batch_ops, "%s", line);
	cr_expect(strstr(line, " no") == NULL, "%s", line);
}

Test(features, missing_btf_file_is_reported)
{
	struct features f;
	char err[512] = "";

	cr_assert_eq(geteuid(), 0,
		     "not root: probing loads BPF programs (run as root, as CI does)");
	cr_assert_eq(features_probe("/nonexistent/vmlinux.btf", &f), 0);
	cr_expect(!f.btf);
	cr_expect_eq(features_check(&f, err, sizeof(err)), -ENOTSUP);
	cr_expect(strstr(err, "vmlinux BTF") != NULL, "%s", err);
	cr_expect(strstr(err, "--btf") != NULL, "%s", err);
}

Test(features, every_missing_feature_named_with_its_version_in_one_line)
{
	struct features f = everything();
	char err[1024] = "";

	f.ringbuf = false;
	f.current_task = false;
	cr_assert_eq(features_check(&f, err, sizeof(err)), -ENOTSUP);
	cr_expect(strstr(err, "ring buffer (Linux 5.8+)") != NULL, "%s", err);
	cr_expect(strstr(err, "bpf_get_current_task() (Linux 4.8+)") != NULL, "%s", err);
	cr_expect(strstr(err, "6.1.0-test") != NULL, "%s", err);
	cr_expect(strchr(err, '\n') == NULL, "%s", err);
}

Test(features, batch_ops_are_optional_and_their_fallback_is_named)
{
	struct features f = everything();
	char line[512], err[256] = "";

	f.batch_ops = false;
	cr_expect_eq(features_check(&f, err, sizeof(err)), 0, "%s", err);
	features_format(&f, line, sizeof(line));
	cr_expect(strstr(line, "kernel 6.1.0-test: BTF yes") == line, "%s", line);
	cr_expect(strstr(line, "batch ops no (fallback") != NULL, "%s", line);
}

Test(features, short_error_buffer_is_not_overrun)
{
	struct features f = { .release = "x" };
	char err[16];

	memset(err, 'Z', sizeof(err));
	cr_expect_eq(features_check(&f, err, 10), -ENOTSUP);
	cr_expect_eq(err[9], '\0');
	cr_expect_eq(err[10], 'Z');
}
