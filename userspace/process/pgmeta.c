// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "pgmeta.h"

/* Title prefixes of PostgreSQL's auxiliary processes, longest first where
 * one is a prefix of another. */
static const char *const aux_types[] = {
	"logical replication launcher",
	"logical replication parallel apply worker",
	"logical replication apply worker",
	"logical replication tablesync worker",
	"logical replication worker",
	"autovacuum launcher",
	"autovacuum worker",
	"background writer",
	"checkpointer",
	"walwriter",
	"walreceiver",
	"walsummarizer",
	"walsender",
	"archiver",
	"startup",
	"stats collector",
	"parallel worker",
	"slotsync worker",
	"io worker",
};

static void copy_word(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* "host(port)" or "[local]": the client address field of a backend title. */
static bool is_client_addr(const char *s, size_t len)
{
	const char *open;

	if (len == 7 && !memcmp(s, "[local]", 7))
		return true;
	open = memchr(s, '(', len);
	if (!open || s[len - 1] != ')' || open + 1 >= s + len - 1)
		return false;
	for (const char *c = open + 1; c < s + len - 1; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	return true;
}

/* Split the next space-separated token: returns its length, moves *p. */
static size_t next_token(const char **p, const char **tok)
{
	const char *s = *p;
	size_t n;

	while (*s == ' ')
		s++;
	*tok = s;
	n = strcspn(s, " ");
	*p = s + n;
	return n;
}

static void parse_body(const char *body, struct pg_title *out)
{
	const char *p = body, *user, *db, *addr;
	size_t ulen, dlen, alen;

	for (size_t i = 0; i < sizeof(aux_types) / sizeof(aux_types[0]); i++) {
		size_t n = strlen(aux_types[i]);

		if (strncmp(body, aux_types[i], n) || (body[n] && body[n] != ' '))
			continue;
		copy_word(out->backend_type, sizeof(out->backend_type), aux_types[i], n);
		p = body + n;
		if (!strcmp(aux_types[i], "autovacuum worker")) {
			dlen = next_token(&p, &db);
			copy_word(out->database, sizeof(out->database), db, dlen);
		} else if (!strcmp(aux_types[i], "walsender")) {
			ulen = next_token(&p, &user);
			copy_word(out->user, sizeof(out->user), user, ulen);
		}
		return;
	}
	/* client backend: USER DB ADDR STATE... */
	ulen = next_token(&p, &user);
	dlen = next_token(&p, &db);
	alen = next_token(&p, &addr);
	if (ulen && dlen && alen && is_client_addr(addr, alen)) {
		strcpy(out->backend_type, "client backend");
		copy_word(out->user, sizeof(out->user), user, ulen);
		copy_word(out->database, sizeof(out->database), db, dlen);
		return;
	}
	/* A background worker of an extension: its title is its type. */
	copy_word(out->backend_type, sizeof(out->backend_type), body, strlen(body));
}

static bool is_postgres_binary(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	return !strcmp(base, "postgres") || !strcmp(base, "postmaster");
}

int pg_parse_title(const char *cmdline, size_t len, struct pg_title *out)
{
	char buf[1024], *body, *colon;
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;

	memset(out, 0, sizeof(*out));
	if (!n)
		return -ENOENT;
	memcpy(buf, cmdline, n);
	buf[n] = '\0';
	/* The postmaster: real argv, first element is the binary. */
	if (strncmp(buf, "postgres: ", 10) && strncmp(buf, "postmaster: ", 12)) {
		if (!is_postgres_binary(buf))
			return -ENOENT;
		strcpy(out->backend_type, "postmaster");
		return 0;
	}
	/* A title: NULs and padding spaces after it are not part of it. */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\0'))
		buf[--n] = '\0';
	body = strchr(buf, ':') + 2;
	/* Optional "CLUSTER_NAME: " (no spaces in it, e.g. "15/main"). */
	colon = strstr(body, ": ");
	if (colon && !memchr(body, ' ', (size_t)(colon - body)))
		body = colon + 2;
	parse_body(body, out);
	return out->backend_type[0] ? 0 : -ENOENT;
}

int pg_read_title(uint32_t pid, struct pg_title *out)
{
	char path[64], buf[1025];
	size_t n;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	err = read_small_file(path, buf, sizeof(buf), &n);
	return err ? err : pg_parse_title(buf, n, out);
}
