// SPDX-License-Identifier: BSD-2-Clause
/*
 * bench/switch-floor OBJECT [PROGRAM...]: loads the BPF object
 * (bench/switch-floor.bpf.c, bench/switch-maps.bpf.c), attaches each of its
 * programs (or only those named) by its section name, says "attached" on
 * stdout and holds them until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

/* Is p among the names given (or were none given)? */
static int wanted(struct bpf_program *p, int argc, char **argv)
{
	if (argc <= 2)
		return 1;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], bpf_program__name(p)))
			return 1;
	return 0;
}

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	int n = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: switch-floor OBJECT [PROGRAM...]\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	for (int i = 2; obj && i < argc; i++)
		if (!bpf_object__find_program_by_name(obj, argv[i])) {
			fprintf(stderr, "switch-floor: %s has no program %s\n", argv[1], argv[i]);
			bpf_object__close(obj);
			return 2;
		}
	if (obj)
		bpf_object__for_each_program(p, obj)
			bpf_program__set_autoload(p, wanted(p, argc, argv));
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "switch-floor: cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(p, obj)
	{
		if (!bpf_program__autoload(p))
			continue;
		if (!bpf_program__attach(p)) {
			fprintf(stderr, "switch-floor: cannot attach %s: %s\n",
				bpf_program__name(p), strerror(errno));
			bpf_object__close(obj);
			return 1;
		}
		n++;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached %d\n", n);
	fflush(stdout);
	while (!done)
		pause();
	bpf_object__close(obj); /* the links close with the process */
	return 0;
}
