/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Listen addresses of the HTTP servers (the agent's API, the collector):
 * parsing ADDR:PORT and the listening socket.
 */
#ifndef EBPROF_UTIL_NETLISTEN_H
#define EBPROF_UTIL_NETLISTEN_H

#include <stddef.h>

/* "127.0.0.1:3080", "[::1]:3080", "localhost:3080" -> host (without the
 * brackets, copied into host unless NULL) and port 1..65535. 0 or -EINVAL. */
int net_parse_listen(const char *s, char *host, size_t hostlen, int *port);
/* What net_parse_listen() accepts, and port 0 for a free one. */
int net_listen_socket_spec(const char *listen, char *host, size_t hostlen, int *port);
/* A listening socket on host:port (non-blocking, close-on-exec): the fd, or
 * a negative errno with "cannot listen on WHAT: ..." in err. */
int net_listen_on(const char *host, int port, const char *what, char *err, size_t errlen);
/* The port a bound socket listens on, -1 if unknown. */
int net_bound_port(int fd);

#endif /* EBPROF_UTIL_NETLISTEN_H */
