// SPDX-License-Identifier: BSD-2-Clause
/* Listen addresses and listening sockets (netlisten.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "args.h"
#include "netlisten.h"

int net_parse_listen(const char *s, char *host, size_t hostlen, int *port)
{
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char buf[sizeof(struct in6_addr)];
	const char *colon;
	size_t len;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		len = (size_t)(close - s - 1);
		if (!len || len >= sizeof(addr))
			return -EINVAL;
		memcpy(addr, s + 1, len);
		addr[len] = '\0';
		if (inet_pton(AF_INET6, addr, buf) != 1)
			return -EINVAL;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		len = (size_t)(colon - s);
		if (!len || len >= sizeof(addr))
			return -EINVAL;
		memcpy(addr, s, len);
		addr[len] = '\0';
		if (strcmp(addr, "localhost") && inet_pton(AF_INET, addr, buf) != 1)
			return -EINVAL;
	}
	if (args_parse_port(colon + 1, strlen(colon + 1), port))
		return -EINVAL;
	if (host) {
		if (len >= hostlen)
			return -EINVAL;
		memcpy(host, addr, len + 1);
	}
	return 0;
}

/*
 * The listen address: what net_parse_listen() accepts, and port 0 for
 * a free port (tests read it back with http_port()).
 */
int net_listen_socket_spec(const char *listen, char *host, size_t hostlen, int *port)
{
	size_t n = listen ? strlen(listen) : 0;
	char tmp[300];

	if (!n || n >= sizeof(tmp) - 1)
		return -EINVAL;
	if (n >= 2 && !strcmp(listen + n - 2, ":0") && (n < 3 || listen[n - 3] != ':')) {
		snprintf(tmp, sizeof(tmp), "%.*s:1", (int)(n - 2), listen);
		if (net_parse_listen(tmp, host, hostlen, port))
			return -EINVAL;
		*port = 0;
		return 0;
	}
	return net_parse_listen(listen, host, hostlen, port);
}

int net_listen_on(const char *host, int port, const char *what, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char portstr[16];
	int fd = -1, ret, last = EADDRNOTAVAIL, one = 1, zero = 0;

	snprintf(portstr, sizeof(portstr), "%d", port);
	ret = getaddrinfo(host, portstr, &hints, &res);
	if (ret) {
		snprintf(err, errlen, "cannot listen on %s: %s", what, gai_strerror(ret));
		return -EADDRNOTAVAIL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* "[::]" means every address, IPv4 too, whatever the host's
		 * net.ipv6.bindv6only says. */
		if (ai->ai_family == AF_INET6 && !strcmp(host, "::"))
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, SOMAXCONN))
			break;
		last = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", what, strerror(last));
		return -last;
	}
	return fd;
}

int net_bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}
