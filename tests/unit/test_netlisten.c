// SPDX-License-Identifier: BSD-2-Clause
/* Listen addresses (util/netlisten.c). */
#include <criterion/criterion.h>
#include <errno.h>

#include "util/netlisten.h"

Test(http_listen, addresses_the_http_listen_key_takes)
{
	char host[64];
	int port;

	cr_expect_eq(net_parse_listen("127.0.0.1:3080", host, sizeof(host), &port), 0);
	cr_expect_str_eq(host, "127.0.0.1");
	cr_expect_eq(port, 3080);
	cr_expect_eq(net_parse_listen("0.0.0.0:1", host, sizeof(host), &port), 0);
	cr_expect_eq(port, 1);
	cr_expect_eq(net_parse_listen("[::1]:65535", host, sizeof(host), &port), 0);
	cr_expect_str_eq(host, "::1");
	cr_expect_eq(port, 65535);
	cr_expect_eq(net_parse_listen("[::]:80", host, sizeof(host), &port), 0);
	cr_expect_str_eq(host, "::");
	cr_expect_eq(net_parse_listen("localhost:8080", host, sizeof(host), &port), 0);
	cr_expect_str_eq(host, "localhost");
	cr_expect_eq(net_parse_listen("localhost:8080", NULL, 0, &port), 0);
	cr_expect_eq(net_parse_listen("127.0.0.1:80", host, 4, &port), -EINVAL);
	cr_expect_eq(net_parse_listen("127.0.0.1:65536", host, sizeof(host), &port), -EINVAL);
	cr_expect_eq(net_parse_listen("127.0.0.1:-1", host, sizeof(host), &port), -EINVAL);
	cr_expect_eq(net_parse_listen("[::1]x:80", host, sizeof(host), &port), -EINVAL);
	cr_expect_eq(net_parse_listen("", host, sizeof(host), &port), -EINVAL);
}
