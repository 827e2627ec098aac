// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof agent`: the agent's configuration and life are in agent/. */
#include "agent/agent.h"
#include "agent/config.h"
#include "commands.h"

int cmd_agent(int argc, char **argv)
{
	return agent_main(argc, argv);
}

void cmd_agent_usage(void)
{
	config_usage();
}
