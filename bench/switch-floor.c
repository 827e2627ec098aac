// SPDX-License-Identifier: BSD-2-Clause
/*
 * bench/switch-floor OBJECT: loads the BPF object (bench/switch-floor.bpf.c),
 * attaches each of its programs by its section name, says "attached" on
 * stdout and holds them until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

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

	if (argc != 2) {
		fprintf(stderr, "usage: switch-floor OBJECT\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "switch-floor: cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(p, obj)
	{
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
