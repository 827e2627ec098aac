// SPDX-License-Identifier: BSD-2-Clause
/* Memory-context snapshots of a session's PostgreSQL backends (memsnap.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memsnap.h"
#include "query/normalize.h"
#include "util/hashmap.h"
#include "util/timeutil.h"

/* Below this, a backend's growth is not worth a snapshot at once: an idle
 * backend holds 2-3 MiB of its own. */
#define JUMP_FLOOR (16ULL << 20)
/* A backend below half its jump's threshold is looked at again after this
 * (one far from it would have to grow more than twice in the meantime);
 * the others at every call (the session's growth tick, a second). */
#define FAR_CHECK_NS (5 * 1000000000LL)
/* Walks of one snapshot at most (walk()). */
#define WALK_TRIES 3

struct msproc {
	uint32_t pid;	       /* the key comes first */
	int fd;		       /* /proc/PID/statm, -1: not open */
	int64_t next_check_ns; /* memsnap_jumped() reads it again from then */
	bool has_shot;
	struct memsnap_shot shot;
	size_t shot_bytes; /* what shot holds */
};

struct memsnap {
	struct memsnap_opts o;
	struct hashmap *procs; /* pid -> struct msproc */
	long page;
	struct memsnap_stats st;
};

int memsnap_new(const struct memsnap_opts *o, struct memsnap **out)
{
	struct memsnap *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->o = *o;
	m->o.max_kept = m->o.max_kept ?: 8u << 20;
	m->o.read_budget = m->o.read_budget ?: 16u << 20;
	m->page = sysconf(_SC_PAGESIZE);
	m->procs = hm_new(hm_hash_u32, hm_equal_u32);
	if (!m->procs || m->page <= 0) {
		memsnap_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

static void drop_shot(struct memsnap *m, struct msproc *p)
{
	if (!p->has_shot)
		return;
	pgmem_snapshot_free(&p->shot.snap);
	free(p->shot.query);
	memset(&p->shot, 0, sizeof(p->shot));
	m->st.kept_bytes -= p->shot_bytes;
	p->shot_bytes = 0;
	p->has_shot = false;
}

static void free_proc(struct memsnap *m, struct msproc *p)
{
	drop_shot(m, p);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

void memsnap_free(struct memsnap *m)
{
	const void *k;
	void *v;

	if (!m)
		return;
	for (size_t it = 0; m->procs && hm_next(m->procs, &it, &k, &v);)
		free_proc(m, v);
	hm_free(m->procs);
	free(m);
}

static struct msproc *proc(struct memsnap *m, uint32_t pid)
{
	void *v;
	struct msproc *p;

	if (!hm_find(m->procs, &pid, &v))
		return v;
	p = hm_find_or_new(m->procs, &pid, sizeof(pid), sizeof(*p));
	if (p)
		p->fd = -1;
	return p;
}

int memsnap_rss(struct memsnap *m, uint32_t pid, uint64_t *rss)
{
	struct msproc *p = proc(m, pid);
	unsigned long long size, resident, shared;
	char buf[128], path[64];
	ssize_t n;

	if (!p)
		return -ENOMEM;
	if (p->fd < 0) {
		snprintf(path, sizeof(path), "/proc/%u/statm", pid);
		p->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (p->fd < 0)
			return errno == ENOENT ? -ESRCH : -errno;
	}
	n = pread(p->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return n ? -errno : -ESRCH; /* a process that exited reads nothing */
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3)
		return -EINVAL;
	/* private: what is resident and not shared (file pages, shmem) */
	*rss = resident > shared ? (resident - shared) * (uint64_t)m->page : 0;
	return 0;
}

/* The statement pid runs, normalized, into shot (nothing when it runs
 * none or it cannot be read). */
static void read_statement(struct memsnap *m, struct memread *r, const struct pg_proc_addrs *a,
			   struct memsnap_shot *shot)
{
	char text[QUERY_LABEL_MAX];
	const struct query_info *q;
	uint64_t ptr, be;
	int32_t state;
	bool cut;

	if (!m->o.queries || !a->query_string ||
	    memread_read(r, a->query_string, &ptr, sizeof(ptr)) || !ptr ||
	    memread_string(r, ptr, text, sizeof(text), &cut) || !*text)
		return;
	ptr = hm_hash_str(text) ^ 0x737461746d74ULL; /* "statmt" */
	if (!query_table_add(m->o.queries, ptr, text, strlen(text), cut) &&
	    (q = query_table_get(m->o.queries, ptr))) {
		shot->query = strdup(q->label);
		memcpy(shot->fingerprint, q->fingerprint_hex, sizeof(shot->fingerprint));
	}
	memset(text, 0, sizeof(text)); /* the literals go at once */
	if (a->be_entry && a->query_id_off && !memread_read(r, a->be_entry, &be, sizeof(be)) &&
	    be && !memread_read(r, be + a->state_off, &state, sizeof(state)) &&
	    state == a->state_running)
		memread_read(r, be + a->query_id_off, &shot->query_id, sizeof(shot->query_id));
}

/* Nodes a walk dropped because they changed under it (a context freed
 * or reset while it was read): another walk a moment later may find them
 * whole, unlike one past a bound. */
static uint64_t torn(const struct pgmem_snapshot *s)
{
	return s->drops[PGMEM_DROP_UNREADABLE] + s->drops[PGMEM_DROP_TAG] +
	       s->drops[PGMEM_DROP_METHODS] + s->drops[PGMEM_DROP_LINKS] +
	       s->drops[PGMEM_DROP_NAME] + s->drops[PGMEM_DROP_CYCLE];
}

/* pid's contexts and statement into shot: a walk, and up to WALK_TRIES - 1
 * more while it ran into nodes that changed under it (a query's contexts
 * come and go; a node freed as it was read takes the rest of its
 * siblings out of the walk); the one with the fewest such drops is kept
 * (a hostile tree drops as many each time). 0 or a negative errno. */
static int walk(struct memsnap *m, uint32_t pid, const struct pg_proc_addrs *a,
		const struct pgmem_layout *l, struct memsnap_shot *shot)
{
	for (int i = 0; i < WALK_TRIES; i++) {
		struct pgmem_snapshot s;
		struct memread *r = NULL;
		int err = memread_new_pid((pid_t)pid, m->o.read_budget, &r);

		if (!err)
			err = pgmem_walk(r, l, a->top_memory_context, &m->o.limits, &s);
		if (err) {
			memread_free(r);
			return i ? 0 : err; /* the walk before stands */
		}
		if (i && torn(&s) >= torn(&shot->snap)) {
			pgmem_snapshot_free(&s);
		} else {
			pgmem_snapshot_free(&shot->snap);
			shot->snap = s;
			free(shot->query);
			shot->query = NULL;
			shot->query_id = 0;
			read_statement(m, r, a, shot);
		}
		memread_free(r);
		if (!torn(&shot->snap))
			break;
		m->st.retries += i + 1 < WALK_TRIES;
	}
	return 0;
}

static size_t shot_bytes(const struct memsnap_shot *s)
{
	size_t n = sizeof(*s) + s->snap.cap * sizeof(*s->snap.ctx);

	for (size_t i = 0; i < s->snap.n; i++)
		n += s->snap.ctx[i].ident ? strlen(s->snap.ctx[i].ident) + 1 : 0;
	return n + (s->query ? strlen(s->query) + 1 : 0);
}

/* Within max_kept: the last snapshots of the smallest backends go first,
 * keep's last. */
static void evict(struct memsnap *m, const struct msproc *keep)
{
	while (m->st.kept_bytes > m->o.max_kept) {
		struct msproc *small = NULL;
		const void *k;
		void *v;

		for (size_t it = 0; hm_next(m->procs, &it, &k, &v);) {
			struct msproc *p = v;

			if (p->has_shot && p != keep && (!small || p->shot.rss < small->shot.rss))
				small = p;
		}
		if (!small)
			break;
		drop_shot(m, small);
		m->st.evicted++;
	}
}

int memsnap_take(struct memsnap *m, uint32_t pid, const struct pg_proc_addrs *a, bool force,
		 const struct memsnap_shot **out)
{
	const struct pgmem_layout *l = pgmem_layout_for((int)a->major);
	struct memsnap_shot shot = { 0 };
	struct msproc *p = proc(m, pid);
	struct timespec c0, c1;
	int err;

	if (!p)
		return -ENOMEM;
	if (!l || !a->top_memory_context)
		return -ENOTSUP; /* a version without a known layout */
	err = memsnap_rss(m, pid, &shot.rss);
	if (err)
		return err;
	if (!force && shot.rss < m->o.min_rss)
		return 1;
	shot.time_ns = wall_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	err = walk(m, pid, a, l, &shot);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	m->st.cpu_ns += (uint64_t)(timespec_ns(&c1) - timespec_ns(&c0));
	if (err) {
		m->st.failed++;
		return err;
	}
	m->st.taken++;
	m->st.walk_ns += shot.snap.walk_ns;
	for (int d = 0; d < PGMEM_DROP_MAX; d++)
		m->st.drops[d] += shot.snap.drops[d];
	drop_shot(m, p);
	p->shot = shot;
	p->has_shot = true;
	p->shot_bytes = shot_bytes(&p->shot);
	m->st.kept_bytes += p->shot_bytes;
	evict(m, p);
	*out = &p->shot;
	return 0;
}

bool memsnap_jumped(struct memsnap *m, uint32_t pid)
{
	struct msproc *p = proc(m, pid);
	int64_t now = mono_ns();
	double threshold;
	uint64_t rss;

	if (!p || m->o.jump <= 0 || now < p->next_check_ns || memsnap_rss(m, pid, &rss))
		return false;
	threshold = (double)(m->o.min_rss > JUMP_FLOOR ? m->o.min_rss : JUMP_FLOOR);
	if (p->has_shot && m->o.jump * (double)p->shot.rss > threshold)
		threshold = m->o.jump * (double)p->shot.rss;
	p->next_check_ns = 2 * (double)rss < threshold ? now + FAR_CHECK_NS : 0;
	if ((double)rss >= threshold) {
		m->st.jumps++;
		return true;
	}
	return false;
}

const struct memsnap_shot *memsnap_last(const struct memsnap *m, uint32_t pid)
{
	void *v;

	if (hm_find(m->procs, &pid, &v))
		return NULL;
	return ((struct msproc *)v)->has_shot ? &((struct msproc *)v)->shot : NULL;
}

void memsnap_forget(struct memsnap *m, uint32_t pid)
{
	void *v;

	if (hm_remove(m->procs, &pid, NULL, &v))
		return;
	free_proc(m, v);
}

void memsnap_get_stats(const struct memsnap *m, struct memsnap_stats *out)
{
	*out = m->st;
}
