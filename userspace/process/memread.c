// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading another process's memory (memread.h): aligned pieces fetched
 * once each with process_vm_readv(2), held by address until the reader is
 * freed, an unreadable piece held as unreadable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "memread.h"
#include "util/hashmap.h"

#define FAULT ((void *)1) /* a piece that cannot be read */
/* Pieces held at most (512 KiB): past that, all are let go and fetched
 * again as needed; a walk mostly reads near where it just read. */
#define MAX_HELD 128

struct memread {
	memread_fetch_fn fetch;
	void *ctx;
	pid_t pid;
	size_t budget;		/* bytes that may still be fetched */
	struct hashmap *pieces; /* piece address -> malloc'ed piece or FAULT */
	size_t held;		/* entries in pieces */
	uint64_t last_addr;	/* the piece of the last read, for runs of reads */
	const uint8_t *last;
	struct memread_stats st;
};

static int fetch_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct memread *r = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (n >= 0 || errno == EFAULT || errno == ENOMEM || errno == EINVAL)
		return -EFAULT; /* ENOMEM: the range is not mapped */
	return -errno;
}

int memread_new_fn(memread_fetch_fn fetch, void *ctx, size_t max_bytes, struct memread **out)
{
	struct memread *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->pieces = hm_new_u64();
	if (!r->pieces) {
		free(r);
		return -ENOMEM;
	}
	r->fetch = fetch;
	r->ctx = ctx;
	r->budget = max_bytes;
	r->last_addr = UINT64_MAX;
	*out = r;
	return 0;
}

int memread_new_pid(pid_t pid, size_t max_bytes, struct memread **out)
{
	int err = memread_new_fn(fetch_pid, NULL, max_bytes, out);

	if (!err) {
		(*out)->ctx = *out;
		(*out)->pid = pid;
	}
	return err;
}

static void let_go(struct memread *r)
{
	const void *k;
	void *v;

	for (size_t it = 0; hm_next(r->pieces, &it, &k, &v);)
		if (v != FAULT)
			free(v);
	hm_clear(r->pieces);
	r->held = 0;
	r->last_addr = UINT64_MAX;
}

void memread_free(struct memread *r)
{
	if (!r)
		return;
	let_go(r);
	hm_free(r->pieces);
	free(r);
}

/* Hold v (a piece or FAULT) as the piece at addr. 0 or -ENOMEM. */
static int hold(struct memread *r, uint64_t addr, void *v)
{
	if (r->held >= MAX_HELD)
		let_go(r);
	if (hm_set_u64(r->pieces, addr, v))
		return -ENOMEM;
	r->held++;
	return 0;
}

/* The piece at addr (aligned): held, or fetched now. */
static int piece(struct memread *r, uint64_t addr, const uint8_t **out)
{
	void *v;
	uint8_t *p;
	int err;

	if (addr == r->last_addr) {
		r->st.hits++;
		*out = r->last;
		return 0;
	}
	if (!hm_find_u64(r->pieces, addr, &v)) {
		if (v == FAULT)
			return -EFAULT;
		r->st.hits++;
	} else {
		if (r->budget < MEMREAD_PIECE)
			return -E2BIG;
		r->budget -= MEMREAD_PIECE;
		p = malloc(MEMREAD_PIECE);
		if (!p)
			return -ENOMEM;
		r->st.fetches++;
		err = r->fetch(r->ctx, addr, p, MEMREAD_PIECE);
		if (err) {
			free(p);
			if (err != -EFAULT)
				return err; /* gone, refused: nothing to remember */
			r->st.faults++;
			return hold(r, addr, FAULT) ?: -EFAULT;
		}
		r->st.bytes += MEMREAD_PIECE;
		if (hold(r, addr, p)) {
			free(p);
			return -ENOMEM;
		}
		v = p;
	}
	r->last_addr = addr;
	r->last = v;
	*out = v;
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
