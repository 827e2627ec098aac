// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading another process's memory (memread.h): aligned pieces fetched
 * with process_vm_readv(2) into a direct-mapped cache of SLOTS pieces (a
 * piece's slot is its address's piece number modulo SLOTS: a walk mostly
 * reads near where it just read), an unreadable piece cached as such.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "memread.h"

#define SLOTS 256 /* 1 MiB of pieces at most */
/* Pieces fetched at once: the piece asked for and the one after it, one
 * system call (a node often runs on into the next page; more than two
 * copied more than they saved: bench/memory.sh). */
#define AHEAD 2

enum slot_state { EMPTY, DATA, FAULT };

struct slot {
	uint64_t addr; /* the piece held */
	enum slot_state state;
	uint8_t *buf; /* MEMREAD_PIECE bytes once used, kept */
};

struct memread {
	memread_fetch_fn fetch;
	void *ctx;
	pid_t pid;
	size_t budget; /* bytes that may still be fetched */
	struct slot slots[SLOTS];
	struct memread_stats st;
};

/* n pieces from addr into bufs[]: how many were read (a read stops at the
 * first that cannot be), or a negative errno (-EFAULT: not even the
 * first). */
static ssize_t fetch_pid(struct memread *r, uint64_t addr, uint8_t *const *bufs, int n)
{
	struct iovec local[AHEAD], remote[AHEAD];
	ssize_t got;

	for (int i = 0; i < n; i++) {
		local[i] = (struct iovec){ bufs[i], MEMREAD_PIECE };
		remote[i] = (struct iovec){ (void *)(uintptr_t)(addr + (uint64_t)i * MEMREAD_PIECE),
					    MEMREAD_PIECE };
	}
	got = process_vm_readv(r->pid, local, (unsigned long)n, remote, (unsigned long)n, 0);
	if (got >= 0)
		return got / MEMREAD_PIECE ? got / MEMREAD_PIECE : -EFAULT;
	if (errno == EFAULT || errno == ENOMEM || errno == EINVAL)
		return -EFAULT; /* ENOMEM: the range is not mapped */
	return -errno;
}

/* The caller's fetch, one piece at a time. */
static ssize_t fetch_fn(struct memread *r, uint64_t addr, uint8_t *const *bufs, int n)
{
	(void)n;
	return r->fetch(r->ctx, addr, bufs[0], MEMREAD_PIECE) ?: 1;
}

int memread_new_fn(memread_fetch_fn fetch, void *ctx, size_t max_bytes, struct memread **out)
{
	struct memread *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->fetch = fetch;
	r->ctx = ctx;
	r->budget = max_bytes;
	*out = r;
	return 0;
}

int memread_new_pid(pid_t pid, size_t max_bytes, struct memread **out)
{
	int err = memread_new_fn(NULL, NULL, max_bytes, out);

	if (!err)
		(*out)->pid = pid;
	return err;
}

void memread_free(struct memread *r)
{
	if (!r)
		return;
	for (int i = 0; i < SLOTS; i++)
		free(r->slots[i].buf);
	free(r);
}

static struct slot *slot_of(struct memread *r, uint64_t addr)
{
	return &r->slots[(addr / MEMREAD_PIECE) % SLOTS];
}

/* The piece at addr (aligned): held, or fetched now into its slot with
 * those after it that are not held. */
static int piece(struct memread *r, uint64_t addr, const uint8_t **out)
{
	struct slot *sl = slot_of(r, addr);
	uint8_t *bufs[AHEAD];
	ssize_t got;
	int n = 0;

	if (sl->state != EMPTY && sl->addr == addr) {
		r->st.hits++;
		if (sl->state == FAULT)
			return -EFAULT;
		*out = sl->buf;
		return 0;
	}
	/* the pieces of its group of AHEAD from this one, up to one already
	 * held (a process's reader; a caller's fetch reads one) */
	for (; n < (r->pid ? AHEAD : 1); n++) {
		uint64_t a = addr + (uint64_t)n * MEMREAD_PIECE;
		struct slot *s = slot_of(r, a);

		if ((n && !(a / MEMREAD_PIECE % AHEAD)) ||
		    (n && s->state != EMPTY && s->addr == a) ||
		    r->budget < (size_t)(n + 1) * MEMREAD_PIECE)
			break;
		if (!s->buf && !(s->buf = malloc(MEMREAD_PIECE)))
			return -ENOMEM;
		s->state = EMPTY;
		bufs[n] = s->buf;
	}
	if (!n)
		return -E2BIG;
	r->st.fetches++;
	got = r->pid ? fetch_pid(r, addr, bufs, n) : fetch_fn(r, addr, bufs, n);
	if (got < 0 && got != -EFAULT)
		return (int)got; /* gone, refused: nothing to remember */
	sl->addr = addr;
	if (got < 0) {
		r->st.faults++;
		r->budget -= MEMREAD_PIECE;
		sl->state = FAULT;
		return -EFAULT;
	}
	for (ssize_t i = 0; i < got; i++) {
		struct slot *s = slot_of(r, addr + (uint64_t)i * MEMREAD_PIECE);

		s->addr = addr + (uint64_t)i * MEMREAD_PIECE;
		s->state = DATA;
	}
	r->budget -= (size_t)got * MEMREAD_PIECE;
	r->st.bytes += (uint64_t)got * MEMREAD_PIECE;
	*out = sl->buf;
	return 0;
}

int memread_read(struct memread *r, uint64_t addr, void *buf, size_t len)
{
	uint8_t *dst = buf;

	if (len && addr + len - 1 < addr)
		return -EFAULT; /* wraps */
	while (len) {
		uint64_t base = addr & ~(uint64_t)(MEMREAD_PIECE - 1);
		size_t off = (size_t)(addr - base), n = MEMREAD_PIECE - off;
		const uint8_t *p;
		int err = piece(r, base, &p);

		if (err)
			return err;
		n = n < len ? n : len;
		memcpy(dst, p + off, n);
		dst += n;
		addr += n;
		len -= n;
	}
	return 0;
}

int memread_string(struct memread *r, uint64_t addr, char *buf, size_t size, bool *cut)
{
	size_t n = 0;

	*cut = false;
	while (n + 1 < size) {
		uint64_t base = (addr + n) & ~(uint64_t)(MEMREAD_PIECE - 1);
		size_t off = (size_t)(addr + n - base), avail = MEMREAD_PIECE - off;
		const uint8_t *p, *nul;
		int err = addr + n < addr ? -EFAULT : piece(r, base, &p);

		if (err) {
			if (!n)
				return err;
			*cut = true; /* readable up to here */
			break;
		}
		avail = avail < size - 1 - n ? avail : size - 1 - n;
		nul = memchr(p + off, 0, avail);
		if (nul) {
			memcpy(buf + n, p + off, (size_t)(nul - (p + off)));
			n += (size_t)(nul - (p + off));
			buf[n] = '\0';
			return 0;
		}
		memcpy(buf + n, p + off, avail);
		n += avail;
	}
	if (n + 1 >= size)
		*cut = true;
	buf[n] = '\0';
	return 0;
}

void memread_get_stats(const struct memread *r, struct memread_stats *out)
{
	*out = r->st;
}
