// SPDX-License-Identifier: BSD-2-Clause
// The web UI's first paint, for bench/serve.sh: milliseconds from page load
// to the view drawn (body[data-state=ready]), then what was drawn.
// Usage: NODE_PATH=BUILD/browser/node_modules node ui_paint.js URL
'use strict';
const { launch } = require('../tests/browser/chromium');

(async () => {
	const browser = await launch();
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		const t0 = Date.now();
		await page.goto(process.argv[2]);
		await page.waitForFunction(() => document.body.dataset.state !== 'loading', null,
			{ timeout: 60000 });
		const ms = Date.now() - t0;
		const frames = await page.$$eval('#flame .frame', (l) => l.length);
		const bands = await page.$$eval('#load-timeline .band', (l) => l.length);
		const status = await page.$eval('#status', (e) => e.textContent);
		console.log(`${ms} ${status}, ${frames} frames` + (bands ? `, ${bands} load bands` : '') + ' drawn');
	} finally {
		await browser.close();
	}
})().catch((e) => {
	console.error(e);
	process.exit(1);
});
