// SPDX-License-Identifier: BSD-2-Clause
/*
 * Paths of a process in a root of its own (root): the symbolizer opens its
 * binary and debug files inside that root as the process sees them. A
 * static stripped fixture (sym_prog_static) runs in a mount namespace of
 * its own with a fresh directory pivoted to its root (so its maps name
 * paths inside it, as a container's do); there an absolute symlink names a file that exists twice:
 * in the root (the right one) and at the same path on the host (a decoy: the debug file of another
 * program carrying the same build-id, or another binary). Through the symbolizer's public API, as
 * the agent calls it, the in-root file must be the one read, never the host's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ebprof/symbolizer.h"
#include "symfix.h"
#include "testlib.h"

static char root[] = "/tmp/ebprof-itest-root-XXXXXX";
static char host[] = "/tmp/ebprof-itest-host-XXXXXX";
static pid_t child = -1;

static void setup(void)
{
	cr_assert_eq(geteuid(), 0, "this test needs root (chroot, /proc/PID/root)");
	cr_assert_not_null(mkdtemp(root));
	cr_assert_not_null(mkdtemp(host));
	tl_system("mkdir -p '%s/bin' '%s%s' && cp '%s' '%s/bin/prog'", root, root, host,
		  fx("sym_prog_static"), root);
}

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	tl_system("rm -rf '%s' '%s'", root, host);
}

TestSuite(container_paths, .init = setup, .fini = teardown, .timeout = 60);

/* The build-id of a fixture, as readelf prints it. */
static void build_id(const char *name, char *out, size_t len)
{
	char cmd[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: *//p'", fx(name));
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, (int)len, f), "no build-id in %s", fx(name));
	out[strcspn(out, "\n")] = '\0';
	pclose(f);
}

/* bin/prog with root as its root, once it has run its functions. */
static void start_in_root(void)
{
	char line[64];
	int p[2];
	FILE *f;

	cr_assert_eq(pipe(p), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (!child) {
		char old[sizeof(root) + 8];

		dup2(p[1], 1);
		snprintf(old, sizeof(old), "%s/.old", root);
		/* a container's way: its own mount namespace, root pivoted */
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(root, root, NULL, MS_BIND, NULL) || mkdir(old, 0700) ||
		    syscall(SYS_pivot_root, root, old) || chdir("/") ||
		    umount2("/.old", MNT_DETACH) || rmdir("/.old"))
			_exit(126);
		execl("/bin/prog", "prog", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	cr_assert_not_null(fgets(line, sizeof(line), f), "the chrooted fixture did not start");
	fclose(f);
}

/* The executable mapping of bin/prog in the child's maps: its range and
 * path (without " (deleted)"). */
static void text_mapping(struct sym_binary *b, char *path, size_t len)
{
	char file[64], line[1024], perms[8];
	unsigned long long start, end;
	FILE *f;
	int pos;

	snprintf(file, sizeof(file), "/proc/%d/maps", child);
	f = fopen(file, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &start, &end, perms, &pos) < 3 ||
		    strcmp(perms, "r-xp") || strncmp(line + pos, "/bin/", 5))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (ends_with(line, " (deleted)"))
			line[strlen(line) - 10] = '\0';
		snprintf(path, len, "%s", line + pos);
		*b = (struct sym_binary){
			.path = path, .pid = child, .map_start = start, .map_end = end
		};
		fclose(f);
		return;
	}
	fclose(f);
	cr_assert_fail("no executable mapping of /bin/prog in %s", file);
}

/* A decoy debug file at dst: another program's DWARF under the build-id
 * of sym_prog_static. */
static void make_decoy(const char *dst)
{
	tl_system("objcopy -O binary --only-section=.note.gnu.build-id '%s' '%s.note' && "
		  "objcopy --only-keep-debug '%s' '%s' && "
		  "objcopy --update-section .note.gnu.build-id='%s.note' '%s' && rm '%s.note'",
		  fx("sym_prog_static.debug"), dst, fx("sym_inline"), dst, dst, dst, dst);
}

/* The function at sym_prog_work's offset, as a fresh symbolizer names it
 * for the running fixture. */
static void expect_named_from_root(const char *how)
{
	struct symbolizer *sym = NULL;
	struct sym_frame frames[8];
	struct sym_binary b;
	struct sym_elf *elf;
	char path[512];
	uint64_t off =
		sym_offset(fx("sym_prog_static"), fx("sym_prog_static.full"), "sym_prog_work");
	int n;

	text_mapping(&b, path, sizeof(path));
	cr_assert_eq(sym_new(&(struct sym_opts){ 0 }, &sym), 0);
	cr_assert_eq(sym_elf_get(sym, &b, &elf), 0);
	cr_expect_str_eq(sym_elf_debug_source(elf), "debug-file", "%s: no debug file found", how);
	n = sym_elf_resolve(sym, elf, off, frames, 8);
	cr_expect_gt(n, 0, "%s: nothing at sym_prog_work's offset", how);
	if (n > 0)
		cr_expect_str_eq(frames[n - 1].function ? frames[n - 1].function : "(null)",
				 "sym_prog_work", "%s: not the in-root debug file", how);
	sym_elf_put(sym, elf);
	sym_free(sym);
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug -> /HOST/dbg.debug inside the
 * root; the host has a decoy at /HOST/dbg.debug. */
Test(container_paths, debug_file_by_build_id_stays_in_the_root)
{
	char bid[128], cmd[1024];

	build_id("sym_prog_static", bid, sizeof(bid));
	tl_system("mkdir -p '%s/usr/lib/debug/.build-id/%.2s' && cp '%s' '%s%s/dbg.debug' && "
		  "ln -s '%s/dbg.debug' '%s/usr/lib/debug/.build-id/%.2s/%s.debug'",
		  root, bid, fx("sym_prog_static.debug"), root, host, host, root, bid, bid + 2);
	snprintf(cmd, sizeof(cmd), "%s/dbg.debug", host);
	make_decoy(cmd);
	start_in_root();
	expect_named_from_root("build-id");
}

/* The .gnu_debuglink name in .debug/ beside the binary -> /HOST/dl.debug. */
Test(container_paths, debug_file_by_debuglink_stays_in_the_root)
{
	char decoy[512];

	tl_system("mkdir -p '%s/bin/.debug' && cp '%s' '%s%s/dl.debug' && "
		  "ln -s '%s/dl.debug' '%s/bin/.debug/sym_prog_static.debug'",
		  root, fx("sym_prog_static.debug"), root, host, host, root);
	snprintf(decoy, sizeof(decoy), "%s/dl.debug", host);
	make_decoy(decoy);
	start_in_root();
	expect_named_from_root("debuglink");
}

/* The binary's path turned into an absolute symlink after it was mapped
 * (/bin/prog -> /HOST/prog, the same file inside the root; another
 * program at /HOST/prog on the host), opened by its path as when the
 * process is symbolized through another one (no range of its own for
 * /proc/PID/map_files). */
Test(container_paths, binary_path_stays_in_the_root)
{
	char want[128], path[512];
	struct symbolizer *sym = NULL;
	struct sym_binary b;
	struct sym_elf *elf;

	build_id("sym_prog_static", want, sizeof(want));
	tl_system("cp '%s' '%s/prog'", fx("sym_prog_dynsym"), host);
	start_in_root();
	tl_system("ln '%s/bin/prog' '%s%s/prog' && ln -s '%s/prog' '%s/bin/prog.new' && "
		  "mv '%s/bin/prog.new' '%s/bin/prog'",
		  root, root, host, host, root, root, root);
	text_mapping(&b, path, sizeof(path));
	cr_assert_str_eq(path, "/bin/prog");
	b.map_start = b.map_end = 0;
	cr_assert_eq(sym_new(&(struct sym_opts){ 0 }, &sym), 0);
	cr_assert_eq(sym_elf_get(sym, &b, &elf), 0);
	cr_expect_str_eq(sym_elf_build_id(elf), want, "the host's /HOST/prog was opened");
	sym_elf_put(sym, elf);
	sym_free(sym);
}
