// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>

#include "options.h"
#include "util/log.h"

int cli_option_end(int c, char *const argv[], const char *cmd, void (*usage)(void))
{
	switch (c) {
	case 'h':
		usage();
		return 1;
	case ':':
		log_error("option %s needs a value", argv[optind - 1]);
		return -EINVAL;
	default:
		log_error("unknown option '%s' (see ebprof %s --help)", argv[optind - 1], cmd);
		return -EINVAL;
	}
}

int cli_operands(int argc, char *const argv[], int max, const char *cmd)
{
	if (argc - optind <= max)
		return 0;
	log_error("unexpected argument '%s' (see ebprof %s --help)", argv[optind + max], cmd);
	return -EINVAL;
}

int cli_profile_operand(int argc, char *const argv[], const char *cmd, const char **input)
{
	if (optind >= argc) {
		log_error("%s needs a profile (IN.pb.gz, '-' for stdin)", cmd);
		return -EINVAL;
	}
	if (cli_operands(argc, argv, 1, cmd))
		return -EINVAL;
	*input = argv[optind];
	return 0;
}
