// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof flamegraph` (cmd_flamegraph.c) on real Go profiles, CPU and
 * heap, made by a tiny Go program: sample types, errors, stdout.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "formats/flamegraph.h"
#include "flamegraph_svg.h"
#include "testlib.h"

static const char go_prog[] = "package main\n"
			      "\n"
			      "import (\n"
			      "\t\"os\"\n"
			      "\t\"runtime\"\n"
			      "\t\"runtime/pprof\"\n"
			      "\t\"time\"\n"
			      ")\n"
			      "\n"
			      "var sink [][]byte\n"
			      "\n"
			      "//go:noinline\n"
			      "func burn(d time.Duration) uint64 {\n"
			      "\tx := uint64(1)\n"
			      "\tfor end := time.Now().Add(d); time.Now().Before(end); {\n"
			      "\t\tfor i := 0; i < 100000; i++ {\n"
			      "\t\t\tx = x*6364136223846793005 + 1442695040888963407\n"
			      "\t\t}\n"
			      "\t}\n"
			      "\treturn x\n"
			      "}\n"
			      "\n"
			      "//go:noinline\n"
			      "func allocate() {\n"
			      "\tfor i := 0; i < 2000; i++ {\n"
			      "\t\tsink = append(sink, make([]byte, 4096))\n"
			      "\t}\n"
			      "}\n"
			      "\n"
			      "func main() {\n"
			      "\truntime.MemProfileRate = 1\n"
			      "\tf, err := os.Create(os.Args[1])\n"
			      "\tif err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tif err := pprof.StartCPUProfile(f); err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tx := burn(600 * time.Millisecond)\n"
			      "\tpprof.StopCPUProfile()\n"
			      "\tf.Close()\n"
			      "\tallocate()\n"
			      "\truntime.GC()\n"
			      "\th, err := os.Create(os.Args[2])\n"
			      "\tif err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tif err := pprof.WriteHeapProfile(h); err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\th.Close()\n"
			      "\tif x == 42 {\n"
			      "\t\tprintln(len(sink))\n"
			      "\t}\n"
			      "}\n";

static char *dir;

static void make_go_profiles(void)
{
	char path[512], cmd[1024], *out = NULL;
	FILE *f;
	int rc;

	dir = tl_tmpdir("flamegraph");
	cr_assert_not_null(dir);
	snprintf(path, sizeof(path), "%s/prog.go", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(go_prog, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} "
		 "GOPROXY=off GOFLAGS=-mod=mod go run prog.go cpu.pb.gz heap.pb.gz",
		 dir);
	rc = tl_sh(cmd, &out);
	cr_assert_eq(rc, 0, "go run (%d): %s", rc, out ? out : "");
	free(out);
}

static void remove_dir(void)
{
	char cmd[600];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	free(dir);
	dir = NULL;
	cr_assert_eq(system(cmd), 0);
}

static const char *in_dir(const char *name)
{
	static char bufs[32][512];
	static int slot;
	char *b = bufs[slot++ % 32];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static int run_cmd(int argc, const char **argv)
{
	fflush(NULL);
	return cmd_flamegraph(argc, (char **)argv);
}

TestSuite(go_pprof, .init = make_go_profiles, .fini = remove_dir, .timeout = 300);

Test(go_pprof, cpu_profile)
{
	struct profile *p = tl_load_profile(in_dir("cpu.pb.gz"));
	struct frame burn;
	char *svg;

	cr_assert_not_null(p);
	cr_assert_eq(flamegraph_sample_type(p, NULL, NULL, 0), 1, "cpu is Go's last type");
	svg = render_ok(p, NULL);
	check_svg(svg);
	burn = frame_of(svg, "main.burn");
	cr_assert(burn.v > 0 && burn.w > IW * 0.5, "main.burn is most of the profile: %g px",
		  burn.w);
	cr_assert_not_null(strstr(burn.title, " samples"), "%s", burn.title);
	cr_assert(strstr(burn.title, " ms (") || strstr(burn.title, " s ("), "%s", burn.title);
	frame_of(svg, "runtime.main");
	free(svg);
	profile_free(p);
}

Test(go_pprof, heap_profile_through_the_command)
{
	const char *argv[] = { "flamegraph", "--sample-type",	 "alloc_space",
			       "-o",	     in_dir("heap.svg"), in_dir("heap.pb.gz") };
	struct frame alloc;
	char *svg;

	cr_assert_eq(run_cmd(6, argv), 0);
	svg = slurp(in_dir("heap.svg"));
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">alloc_space flame graph</text>"));
	cr_assert_not_null(strstr(svg, "alloc_space (bytes)"));
	alloc = frame_of(svg, "main.allocate");
	cr_assert_geq(alloc.v, 2000 * 4096);
	cr_assert_not_null(strstr(alloc.title, " MiB ("), "%s", alloc.title);
	free(svg);

	/* --title, --width, and the default type (Go's last: inuse_space) */
	const char *argv2[] = {
		"flamegraph",	     "--title",		  "Heap", "--width", "1280", "-o",
		in_dir("heap2.svg"), in_dir("heap.pb.gz")
	};

	cr_assert_eq(run_cmd(8, argv2), 0);
	svg = slurp(in_dir("heap2.svg"));
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">Heap</text>"));
	cr_assert_not_null(strstr(svg, "inuse_space (bytes)"));
	cr_assert_eq(svg_int_attr(svg, "width"), 1280);
	free(svg);
}

Test(go_pprof, command_errors)
{
	const char *unknown[] = { "flamegraph", "--sample-type", "cpu", in_dir("heap.pb.gz") };
	const char *width[] = { "flamegraph", "--width", "ten", in_dir("cpu.pb.gz") };
	const char *width2[] = { "flamegraph", "--width", "5", in_dir("cpu.pb.gz") };
	const char *group[] = { "flamegraph", "--group-by", "sql", in_dir("cpu.pb.gz") };
	const char *missing[] = { "flamegraph", in_dir("missing.pb.gz") };
	const char *corrupt[] = { "flamegraph", in_dir("prog.go") };
	const char *noarg[] = { "flamegraph" };
	const char *two[] = { "flamegraph", in_dir("cpu.pb.gz"), in_dir("cpu.pb.gz") };
	const char *badout[] = { "flamegraph", "-o", in_dir("nodir/x.svg"), in_dir("cpu.pb.gz") };
	const char *help[] = { "flamegraph", "--help" };
	FILE *f;

	cr_assert_eq(run_cmd(4, unknown), 2);
	cr_assert_eq(run_cmd(4, width), 2);
	cr_assert_eq(run_cmd(4, width2), 2);
	cr_assert_eq(run_cmd(4, group), 2);
	cr_assert_eq(run_cmd(2, missing), 2);
	cr_assert_eq(run_cmd(2, corrupt), 2);
	f = fopen(in_dir("truncated.pb.gz"), "w");
	cr_assert_not_null(f);
	fputs("\x1f\x8b\x08\x00garbage", f);
	fclose(f);
	corrupt[1] = in_dir("truncated.pb.gz");
	cr_assert_eq(run_cmd(2, corrupt), 2);
	cr_assert_eq(run_cmd(1, noarg), 2);
	cr_assert_eq(run_cmd(3, two), 2);
	cr_assert_eq(run_cmd(4, badout), 2);
	cr_assert_eq(access(in_dir("nodir"), F_OK), -1);
	cr_assert_eq(run_cmd(2, help), 0);
}

Test(go_pprof, command_to_stdout)
{
	char cmd[1024], *out = NULL;
	const char *argv[] = { "flamegraph", in_dir("cpu.pb.gz") };
	int rc;

	/* stdout of this process goes to a file for the duration */
	snprintf(cmd, sizeof(cmd), "%s", in_dir("stdout.svg"));
	fflush(stdout);
	cr_assert_not_null(freopen(cmd, "w", stdout));
	rc = run_cmd(2, argv);
	fflush(stdout);
	cr_assert_not_null(freopen("/dev/null", "w", stdout));
	cr_assert_eq(rc, 0);
	out = slurp(in_dir("stdout.svg"));
	check_svg(out);
	frame_of(out, "main.burn");
	free(out);
}
