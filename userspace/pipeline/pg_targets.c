// SPDX-License-Identifier: BSD-2-Clause
/*
 * Does a session have PostgreSQL targets (session_internal.h)? Asked once,
 * before its BPF program is loaded: the statement and PL/pgSQL readers
 * are most of the sampling program's instructions (29 472 verified with
 * them, 6 651 without: 45 ms of the verifier's time at every start), and
 * looking for PostgreSQL in a process opens its binaries' symbol tables.
 *
 * A session may have PostgreSQL targets when its target set is open
 * (-a, cgroups: a postmaster may start in it at any time), when its names
 * are PostgreSQL's (the default postgres and postmaster: a cluster started
 * after the agent is sampled and labelled), or when one of the processes
 * it targets now is PostgreSQL: named so, or whose executable defines
 * debug_query_string (a renamed server). Otherwise (-p and --comm of other
 * programs) it reads no statement, and a target that executes PostgreSQL
 * later is said once (handle_event()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "util/log.h"

/* Is process pid PostgreSQL: by its name, else by its executable? */
static bool pid_is_pg(struct session *s, uint32_t pid)
{
	char comm[32] = "", path[64];
	struct sym_binary bin = { .path = path };
	struct sym_elf *elf;
	char *exe = NULL;
	uint64_t vaddr;
	bool pg;

	proc_read_comm(pid, comm, sizeof(comm));
	proc_read_exe(pid, &exe);
	pg = targets_name_matches(comm, exe, targets_default_comms, TARGETS_NDEFAULT_COMMS);
	free(exe);
	if (pg)
		return true;
	/* the file the process runs, as pg_attach_process() looks at it */
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (!s->sym || sym_elf_get(s->sym, &bin, &elf))
		return false;
	pg = !sym_elf_symbol(elf, "debug_query_string", &vaddr);
	sym_elf_put(s->sym, elf);
	return pg;
}

bool session_pg_targets(struct session *s, const char **why)
{
	const struct session_opts *o = &s->o;
	struct target_rules rules = session_target_rules(o);
	const char *const *names = NULL;
	uint32_t *tgids = NULL;
	size_t nnames = 0, n = 0;
	bool pg = false;

	if (o->all || o->ncgroups) {
		*why = o->all ? "every process is a target" : "the targets' cgroups are open";
		return true;
	}
	targets_names(&rules, &names, &nnames);
	for (size_t i = 0; i < nnames; i++)
		if (targets_name_matches(names[i], NULL, targets_default_comms,
					 TARGETS_NDEFAULT_COMMS)) {
			*why = "targets named postgres or postmaster";
			return true;
		}
	*why = "a PostgreSQL process among the targets";
	for (size_t i = 0; i < o->npids; i++) /* the common case, without a scan */
		if (pid_is_pg(s, o->pids[i]))
			return true;
	if (targets_scan(&rules, &tgids, &n)) /* the scan says why at the seed */
		return true;
	for (size_t i = 0; i < n && !pg; i++)
		pg = pid_is_pg(s, tgids[i]);
	free(tgids);
	if (!pg)
		*why = "no PostgreSQL target";
	return pg;
}
