// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SIGBUS guard of the symbolizer's file mappings (sym_guard.h).
 *
 * Why zeros and not siglongjmp(): jumping out of libdw or libelf in the
 * middle of a call leaves their state (trees, caches, locks) half updated,
 * so the binary's handles could only be leaked, never freed; a hostile
 * user could truncate and restore a file over and over to grow the agent.
 * With the hole filled, the call runs to its end on data that is merely
 * wrong, its result is dropped, and the handles are closed as usual. Why
 * not read files into memory instead (ELF_C_READ): libdw then copies every
 * DWARF section it uses into the heap, the whole of PostgreSQL's or
 * libc's debug file, where the mapping keeps resident only the pages a
 * lookup touches (and file_pages.c gives those back).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "sym_guard.h"

__thread struct symg *symg_current __attribute__((tls_model("initial-exec")));
static struct sigaction previous;
static uintptr_t page_size;
static int install_err;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The faulting instruction's own page: a binary of the agent's cut short,
 * not data a region reads; zeros there would be run as code. */
static bool fetch_fault(const siginfo_t *si, const void *ucv)
{
	const ucontext_t *uc = ucv;
	uintptr_t pc = 0;

#if defined(__x86_64__)
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	pc = (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
#endif
	return !pc || (pc & ~(page_size - 1)) == ((uintptr_t)si->si_addr & ~(page_size - 1));
}

/* Not ours: what would have happened without the guard. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
		return;
	}
	if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* ignored: one sent by kill() is; a fault cannot be (the kernel
	 * kills the process when it retries the instruction) */
	if (previous.sa_handler == SIG_IGN && si->si_code <= 0)
		return;
	/* default action: a fault repeats when the instruction is retried,
	 * a signal sent by kill() is raised again (blocked until we return) */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct symg *g = symg_current;
	int saved = errno;
	uintptr_t page = (uintptr_t)si->si_addr & ~(page_size - 1);

	if (g && si->si_code == BUS_ADRERR && !fetch_fault(si, uc) &&
	    mmap((void *)page, page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		if (!g->faults++)
			g->addr = (uintptr_t)si->si_addr;
		errno = saved;
		return;
	}
	errno = saved;
	pass_on(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (sigaction(SIGBUS, &sa, &previous))
		install_err = -errno;
}

int symg_install(void)
{
	pthread_once(&once, install);
	return install_err;
}
