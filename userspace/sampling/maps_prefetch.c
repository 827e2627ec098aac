// SPDX-License-Identifier: BSD-2-Clause
/*
 * The maps of new processes, read ahead on a thread (maps_prefetch.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "ebprof/bpf_shared.h"
#include "maps_prefetch.h"
#include "process/processes.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_AGE_NS (60 * NSEC_PER_SEC)

struct slot {
	uint32_t pid; /* 0: free */
	uint64_t ns;  /* the announcement's time (its event's) */
	struct proc_maps *maps;
	char *exe;
};

struct maps_prefetch {
	pthread_t thread;
	struct ring_buffer *rb;
	int stop_fd; /* an eventfd: readable once stop is asked */
	pthread_mutex_t lock;
	struct slot slot[PREFETCH_SLOTS];
	uint64_t read, gone, dropped; /* the thread's own (gone: or exec'd since) */
};

static void slot_clear(struct slot *s)
{
	procmaps_free(s->maps);
	free(s->exe);
	memset(s, 0, sizeof(*s));
}

/* Keep a snapshot: in a free slot, else instead of the oldest; a slot a
 * minute old is free. */
static void keep(struct maps_prefetch *mp, uint32_t pid, uint64_t ns, struct proc_maps *maps,
		 char *exe)
{
	uint64_t now = (uint64_t)mono_ns();
	struct slot *to = NULL;

	pthread_mutex_lock(&mp->lock);
	for (size_t i = 0; i < PREFETCH_SLOTS; i++) {
		struct slot *s = &mp->slot[i];

		if (s->pid && now - s->ns > MAX_AGE_NS)
			slot_clear(s);
		if (!to || (to->pid && (!s->pid || s->ns < to->ns)))
			to = s;
	}
	if (to->pid)
		mp->dropped++;
	slot_clear(to);
	*to = (struct slot){ .pid = pid, .ns = ns, .maps = maps, .exe = exe };
	pthread_mutex_unlock(&mp->lock);
}

/* Is the image the BPF program announced the one running under pid? */
static bool same_image(const struct ebprof_fresh *f)
{
	uint64_t start = 0;

	return !proc_read_start_code(f->pid, &start) && start == f->start_code;
}

/* Read the announced process's maps, when they are still its announced
 * image's (an exec since would give another layout: not kept). */
static int on_fresh(void *ctx, void *data, size_t size)
{
	const struct ebprof_fresh *f = data;
	struct maps_prefetch *mp = ctx;
	struct proc_maps *maps;
	char *exe = NULL;

	if (size < sizeof(*f))
		return 0;
	if (!same_image(f) || procmaps_read((int)f->pid, true, &maps)) {
		mp->gone++;
		return 0;
	}
	proc_read_exe(f->pid, &exe);
	if (!same_image(f)) {
		procmaps_free(maps);
		free(exe);
		mp->gone++;
		return 0;
	}
	mp->read++;
	keep(mp, f->pid, f->ktime_ns, maps, exe);
	return 0;
}

/* Until stop_fd says stop: the ring's records as they come (its epoll
 * fd is readable when one is), and the stop at once rather than at the
 * end of a poll's timeout (a recording's exit waited up to 100 ms). */
static void *run(void *arg)
{
	struct maps_prefetch *mp = arg;
	struct pollfd fds[2] = { { .fd = ring_buffer__epoll_fd(mp->rb), .events = POLLIN },
				 { .fd = mp->stop_fd, .events = POLLIN } };

	for (;;) {
		int ret = poll(fds, 2, -1);

		if (ret < 0 && errno != EINTR) {
			ret = -errno;
			log_warn("the maps of new processes are no longer read ahead: %s",
				 strerror(-ret));
			break;
		}
		if (fds[1].revents)
			break;
		ret = ring_buffer__consume(mp->rb);
		if (ret < 0 && ret != -EINTR) {
			log_warn("the maps of new processes are no longer read ahead: %s",
				 strerror(-ret));
			break;
		}
	}
	return NULL;
}

int maps_prefetch_start(int ring_fd, struct maps_prefetch **out)
{
	struct maps_prefetch *mp = calloc(1, sizeof(*mp));
	int ret;

	if (!mp)
		return -ENOMEM;
	pthread_mutex_init(&mp->lock, NULL);
	mp->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (mp->stop_fd < 0) {
		ret = -errno;
		goto fail;
	}
	mp->rb = ring_buffer__new(ring_fd, on_fresh, mp, NULL);
	if (!mp->rb) {
		ret = -errno;
		goto fail;
	}
	ret = -pthread_create(&mp->thread, NULL, run, mp);
	if (ret)
		goto fail;
	*out = mp;
	return 0;
fail:
	ring_buffer__free(mp->rb);
	if (mp->stop_fd >= 0)
		close(mp->stop_fd);
	pthread_mutex_destroy(&mp->lock);
	free(mp);
	return ret;
}

void maps_prefetch_stop(struct maps_prefetch *mp)
{
	if (!mp)
		return;
	if (eventfd_write(mp->stop_fd, 1))
		log_warn("cannot stop reading the maps of new processes: %s", strerror(errno));
	pthread_join(mp->thread, NULL);
	close(mp->stop_fd);
	ring_buffer__free(mp->rb);
	log_debug("maps of new processes read ahead: %llu, %llu gone or exec'd before, %llu "
		  "dropped untaken",
		  (unsigned long long)mp->read, (unsigned long long)mp->gone,
		  (unsigned long long)mp->dropped);
	for (size_t i = 0; i < PREFETCH_SLOTS; i++)
		slot_clear(&mp->slot[i]);
	pthread_mutex_destroy(&mp->lock);
	free(mp);
}

struct proc_maps *maps_prefetch_take(struct maps_prefetch *mp, uint32_t pid, uint64_t ns,
				     char **exe)
{
	struct proc_maps *maps = NULL;

	*exe = NULL;
	if (!mp)
		return NULL;
	pthread_mutex_lock(&mp->lock);
	for (size_t i = 0; i < PREFETCH_SLOTS; i++) {
		struct slot *s = &mp->slot[i];

		if (s->pid != pid || s->ns > ns)
			continue;
		if (s->ns == ns) {
			maps = s->maps;
			*exe = s->exe;
			s->maps = NULL;
			s->exe = NULL;
		}
		slot_clear(s); /* this one, or one announced before: nobody asks */
	}
	pthread_mutex_unlock(&mp->lock);
	return maps;
}
