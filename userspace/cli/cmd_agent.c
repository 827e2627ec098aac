// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof agent`: the command line into a configuration (agent/config.h),
 * then the agent's life (agent/agent.h). */
#include <errno.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "commands.h"
#include "util/args.h"
#include "util/log.h"

int cmd_agent(int argc, char **argv)
{
	struct agent_config cfg;
	char err[512];
	int ret;

	ret = config_defaults(&cfg);
	if (ret) {
		log_error("out of memory");
		return EXIT_RUNTIME;
	}
	ret = config_parse_args(&cfg, argc, argv, err, sizeof(err));
	if (ret) {
		if (ret != 1)
			log_error("%s", err);
		config_free(&cfg);
		return ret == 1 ? EXIT_OK : EXIT_USAGE;
	}
	return agent_run(&cfg, argc, argv);
}

void cmd_agent_usage(void)
{
	config_usage();
}
