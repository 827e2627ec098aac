// SPDX-License-Identifier: BSD-2-Clause
// Drives the web UI of `ebprof serve` in headless Chromium (Debian's
// /usr/bin/chromium) with playwright-core, for
// tests/integration/test_serve_ui.c, which stored the profiles and checks
// what this prints: one "key=value" line per observation. Screenshots go
// to OUTDIR/ui-*.png.
// Usage: NODE_PATH=BUILD/browser/node_modules node serve_ui.js BASE QUERY OUTDIR
//   BASE  http://127.0.0.1:PORT   QUERY  service=...&from=...&to=...
'use strict';
const path = require('path');
const { args, drive, say, settled, status } = require('./chromium');

const { base, query, outdir } = args('serve_ui.js', ['base', 'query', 'outdir']);

async function frames(page) {
	return page.$$eval('#flame .frame', (l) => l.map((e) => ({
		name: e.dataset.name, w: parseFloat(e.style.width), cls: e.className,
		delta: e.dataset.delta,
	})));
}

async function frame(page, name) {
	return (await frames(page)).find((f) => f.name === name);
}

drive({ viewport: { width: 1400, height: 900 }, origin: base, expected: /status of 400/ }, async (page) => {
	// 1. a shared URL renders without a click
	const t0 = Date.now();
	await page.goto(`${base}/?${query}`);
	say('state1', await settled(page));
	say('first_paint_ms', Date.now() - t0);
	say('status1', await status(page));
	const fr = await frames(page);
	say('frames1', fr.length);
	say('has_scan1', fr.some((f) => f.name === 'scan_rows') ? 1 : 0);
	say('has_sort1', fr.some((f) => f.name === 'sort_tuples') ? 1 : 0);
	say('bars1', await page.$$eval('#timeline .bar', (l) => l.length));
	await page.screenshot({ path: path.join(outdir, 'ui-flame.png') });

	// 2. hover: self and total
	await page.hover('#flame .frame[data-name="scan_rows"]');
	say('tooltip', (await page.$eval('#tooltip', (e) => e.hidden ? '' : e.textContent))
		.replace(/\n/g, ' | '));

	// 3. click zooms: scan_rows spans the width
	const before = await frame(page, 'scan_rows');
	await page.click('#flame .frame[data-name="scan_rows"]');
	const after = await frame(page, 'scan_rows');
	say('zoom_widened', after.w > before.w ? 1 : 0);
	say('zoomed', await page.$eval('#flame', (e) => e.dataset.zoomed));
	say('sort_hidden', (await frame(page, 'sort_tuples')) ? 0 : 1);
	await page.click('#reset-zoom');
	say('sort_back', (await frame(page, 'sort_tuples')) ? 1 : 0);

	// 4. search
	await page.fill('#search', 'sort_');
	say('matched', await page.$eval('#matched', (e) => e.textContent));
	say('matches', (await frames(page)).filter((f) => / match/.test(f.cls)).length);
	say('url_search', new URL(page.url()).searchParams.get('search'));
	await page.fill('#search', '');

	// 5. drag on the timeline: the second half
	const box = await page.locator('#timeline').boundingBox();
	await page.mouse.move(box.x + box.width * 0.5 + 2, box.y + 20);
	await page.mouse.down();
	await page.mouse.move(box.x + box.width * 0.75, box.y + 20, { steps: 5 });
	await page.mouse.move(box.x + box.width - 1, box.y + 20, { steps: 5 });
	await page.mouse.up();
	say('state5', await settled(page));
	const u5 = new URL(page.url()).searchParams;
	say('from5', u5.get('from'));
	say('to5', u5.get('to'));
	say('status5', await status(page));
	say('bars5', await page.$$eval('#timeline .bar', (l) => l.length));

	// 6. back: the shared view again
	await page.goBack();
	say('state6', await settled(page));
	say('status6', await status(page));

	// 7. the table by query; a click opens that statement's flamegraph
	await page.click('button.mode[data-mode="table"]');
	const groups = await page.$$eval('#groups tbody tr', (l) => l.map((r) => r.dataset.value));
	say('groups', groups.join(' | '));
	await page.screenshot({ path: path.join(outdir, 'ui-table.png') });
	await page.click('#groups tbody tr[data-value="SELECT * FROM t ORDER BY x"]');
	say('state7', await settled(page));
	const u7 = new URL(page.url()).searchParams;
	say('mode7', u7.get('mode'));
	say('filter7', u7.get('filter'));
	const f7 = await frames(page);
	say('has_scan7', f7.some((f) => f.name === 'scan_rows') ? 1 : 0);
	say('has_sort7', f7.some((f) => f.name === 'sort_tuples') ? 1 : 0);

	// 8. top functions
	await page.goto(`${base}/?${query}&mode=top`);
	say('state8', await settled(page));
	say('top_first', await page.$eval('#top tbody tr', (r) => r.dataset.name));
	await page.screenshot({ path: path.join(outdir, 'ui-top.png') });

	// 9. a diff of the two halves: sort_tuples grew, scan_rows shrank
	await page.goto(`${base}/?${query}&mode=diff`);
	say('state9', await settled(page));
	const u9 = new URL(page.url()).searchParams;
	say('base9', `${u9.get('base_from')} ${u9.get('base_to')}`);
	say('sel9', `${u9.get('from')} ${u9.get('to')}`);
	const sort9 = await frame(page, 'sort_tuples'), scan9 = await frame(page, 'scan_rows');
	say('sort9', sort9 ? `${/grew/.test(sort9.cls) ? 'grew' : /shrank/.test(sort9.cls) ? 'shrank' : 'same'} ${sort9.delta}` : 'missing');
	say('scan9', scan9 ? `${/grew/.test(scan9.cls) ? 'grew' : /shrank/.test(scan9.cls) ? 'shrank' : 'same'} ${scan9.delta}` : 'missing');
	await page.screenshot({ path: path.join(outdir, 'ui-diff.png') });

	// 10. the download link is the merged pprof
	const href = await page.$eval('#download', (a) => a.href);
	const r = await page.request.get(href);
	say('download_status', r.status());
	say('download_gzip', (await r.body()).slice(0, 2).toString('hex'));

	// 11. bad input in the URL: an error line, no crash
	await page.goto(`${base}/?service=pghost&from=yesterday&to=now`);
	say('state11', await settled(page));
	say('status11', await status(page));
});
