// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "procevents.h"

struct fork_ev {
	int64_t parent, child;
};

struct pe_listener {
	int fd;
	pthread_t thread;
	atomic_bool stop;
	bool running;
	pthread_mutex_t lock;
	struct fork_ev *ev;
	size_t nev, cap;
	int64_t *start;
	size_t nstart;
	bool dropped;
};

static int subscribe(int fd, enum proc_cn_mcast_op op)
{
	struct __attribute__((aligned(NLMSG_ALIGNTO))) {
		struct nlmsghdr nl;
		struct __attribute__((__packed__)) {
			struct cn_msg cn;
			enum proc_cn_mcast_op op;
		};
	} msg;

	memset(&msg, 0, sizeof(msg));
	msg.nl.nlmsg_len = sizeof(msg);
	msg.nl.nlmsg_type = NLMSG_DONE;
	msg.nl.nlmsg_pid = (__u32)getpid();
	msg.cn.id.idx = CN_IDX_PROC;
	msg.cn.id.val = CN_VAL_PROC;
	msg.cn.len = sizeof(enum proc_cn_mcast_op);
	msg.op = op;
	return send(fd, &msg, sizeof(msg), 0) < 0 ? -errno : 0;
}

static void add_event(struct pe_listener *l, int64_t parent, int64_t child)
{
	pthread_mutex_lock(&l->lock);
	if (l->nev == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		struct fork_ev *ev = realloc(l->ev, cap * sizeof(*ev));

		if (!ev) {
			l->dropped = true;
			pthread_mutex_unlock(&l->lock);
			return;
		}
		l->ev = ev;
		l->cap = cap;
	}
	l->ev[l->nev++] = (struct fork_ev){ parent, child };
	pthread_mutex_unlock(&l->lock);
}

static void *listen_thread(void *arg)
{
	struct pe_listener *l = arg;
	char buf[65536] __attribute__((aligned(NLMSG_ALIGNTO)));

	while (!atomic_load(&l->stop)) {
		struct pollfd pfd = { l->fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(l->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == ENOBUFS) {
				pthread_mutex_lock(&l->lock);
				l->dropped = true;
				pthread_mutex_unlock(&l->lock);
			}
			continue;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			struct cn_msg *cn = NLMSG_DATA(h);
			struct proc_event ev = { 0 };

			if (h->nlmsg_type != NLMSG_DONE || cn->id.idx != CN_IDX_PROC)
				continue;
			/* the event sits 4 bytes off its 8-byte alignment
			 * after the headers: copied out, not read in place */
			memcpy(&ev, cn->data, cn->len < sizeof(ev) ? cn->len : sizeof(ev));
			/* a new process, not a thread */
			if (ev.what == PROC_EVENT_FORK &&
			    ev.event_data.fork.child_pid == ev.event_data.fork.child_tgid)
				add_event(l, ev.event_data.fork.parent_tgid,
					  ev.event_data.fork.child_tgid);
		}
	}
	return NULL;
}

static int64_t ppid_of(int pid)
{
	char path[64], buf[512], *p;
	long long ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %lld", &ppid);
	fclose(f);
	return ppid;
}

bool pe_member(const int64_t *pids, size_t n, int64_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static int push(int64_t **set, size_t *n, int64_t pid)
{
	int64_t *s = realloc(*set, (*n + 1) * sizeof(**set));

	if (!s)
		return -ENOMEM;
	s[(*n)++] = pid;
	*set = s;
	return 0;
}

/* root and its descendants alive now, into l->start. */
static int scan(struct pe_listener *l, pid_t root)
{
	struct {
		int64_t pid, ppid;
	} *all = NULL;
	size_t nall = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");
	bool grew = true;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);
		void *na;

		if (pid <= 0)
			continue;
		na = realloc(all, (nall + 1) * sizeof(*all));
		if (!na) {
			closedir(d);
			free(all);
			return -ENOMEM;
		}
		all = na;
		all[nall].pid = pid;
		all[nall++].ppid = ppid_of(pid);
	}
	closedir(d);
	if (push(&l->start, &l->nstart, root))
		return -ENOMEM;
	while (grew) {
		grew = false;
		for (size_t i = 0; i < nall; i++)
			if (!pe_member(l->start, l->nstart, all[i].pid) &&
			    pe_member(l->start, l->nstart, all[i].ppid)) {
				if (push(&l->start, &l->nstart, all[i].pid))
					return -ENOMEM;
				grew = true;
			}
	}
	free(all);
	return 0;
}

int pe_start(pid_t root, struct pe_listener **out)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct pe_listener *l = calloc(1, sizeof(*l));
	int size = 8 << 20, err;

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (l->fd < 0) {
		err = -errno;
		goto fail;
	}
	setsockopt(l->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto fail;
	}
	err = subscribe(l->fd, PROC_CN_MCAST_LISTEN);
	if (err)
		goto fail;
	err = pthread_create(&l->thread, NULL, listen_thread, l);
	if (err) {
		err = -err;
		goto fail;
	}
	l->running = true;
	err = scan(l, root);
	if (err) {
		pe_free(l);
		return err;
	}
	*out = l;
	return 0;
fail:
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	pe_free(l);
	return err;
}

void pe_stop(struct pe_listener *l)
{
	if (!l || !l->running)
		return;
	atomic_store(&l->stop, true);
	pthread_join(l->thread, NULL);
	l->running = false;
	subscribe(l->fd, PROC_CN_MCAST_IGNORE);
}

int pe_tree(struct pe_listener *l, int64_t **pids, size_t *n)
{
	int64_t *set = NULL;
	size_t ns = 0;
	bool grew = true, dropped;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nstart; i++)
		if (push(&set, &ns, l->start[i]))
			goto nomem;
	while (grew) {
		grew = false;
		for (size_t i = 0; i < l->nev; i++)
			if (!pe_member(set, ns, l->ev[i].child) &&
			    pe_member(set, ns, l->ev[i].parent)) {
				if (push(&set, &ns, l->ev[i].child))
					goto nomem;
				grew = true;
			}
	}
	dropped = l->dropped;
	pthread_mutex_unlock(&l->lock);
	*pids = set;
	*n = ns;
	return dropped ? -EIO : 0;
nomem:
	pthread_mutex_unlock(&l->lock);
	free(set);
	return -ENOMEM;
}

void pe_free(struct pe_listener *l)
{
	if (!l)
		return;
	pe_stop(l);
	if (l->fd >= 0)
		close(l->fd);
	pthread_mutex_destroy(&l->lock);
	free(l->ev);
	free(l->start);
	free(l);
}
