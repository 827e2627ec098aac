// SPDX-License-Identifier: BSD-2-Clause
/*
 * The web UI's files (ui_assets.h), embedded with the assembler's .incbin
 * (paths from the source tree's root, where make runs; the Makefile makes
 * this object depend on the files of userspace/serve/ui).
 */
#include <string.h>

#include "ui_assets.h"

#define EMBED(sym, file)                                                                           \
	__asm__(".section .rodata\n"                                                               \
		".balign 16\n"                                                                     \
		".global " #sym "\n" #sym ":\n"                                                    \
		".incbin \"userspace/serve/ui/" file "\"\n"                                        \
		".global " #sym "_end\n" #sym "_end:\n"                                            \
		".byte 0\n"                                                                        \
		".previous\n");                                                                    \
	extern const unsigned char sym[], sym##_end[]

EMBED(ui_index_html, "index.html");
EMBED(ui_app_js, "app.js");
EMBED(ui_flame_js, "flame.js");
EMBED(ui_load_js, "load.js");
EMBED(ui_style_css, "style.css");

const struct ui_asset *ui_asset_find(const char *url)
{
	static struct ui_asset assets[] = {
		{ "/", "text/html; charset=utf-8", NULL, 0 },
		{ "/app.js", "text/javascript; charset=utf-8", NULL, 0 },
		{ "/flame.js", "text/javascript; charset=utf-8", NULL, 0 },
		{ "/load.js", "text/javascript; charset=utf-8", NULL, 0 },
		{ "/style.css", "text/css; charset=utf-8", NULL, 0 },
	};
	const unsigned char *start[] = { ui_index_html, ui_app_js, ui_flame_js, ui_load_js,
					 ui_style_css };
	const unsigned char *end[] = { ui_index_html_end, ui_app_js_end, ui_flame_js_end,
				       ui_load_js_end, ui_style_css_end };

	if (!strcmp(url, "/index.html"))
		url = "/";
	for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (!strcmp(url, assets[i].url)) {
			assets[i].data = start[i];
			assets[i].len = (size_t)(end[i] - start[i]);
			return &assets[i];
		}
	return NULL;
}
