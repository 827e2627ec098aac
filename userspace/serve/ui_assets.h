/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The web UI's files (userspace/serve/ui/), embedded in the binary at build
 * time: the page works with no network and nothing installed beside
 * ebprof. Read-only, static: nothing to free.
 */
#ifndef EBPROF_SERVE_UI_ASSETS_H
#define EBPROF_SERVE_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char *url;  /* "/", "/ui.js", ... */
	const char *type; /* Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The asset served at url (query string excluded), NULL if none. */
const struct ui_asset *ui_asset_find(const char *url);

#endif /* EBPROF_SERVE_UI_ASSETS_H */
