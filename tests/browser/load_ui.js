// SPDX-License-Identifier: BSD-2-Clause
// Drives the database load view of `ebprof serve`'s web UI in headless
// Chromium for tests/integration/test_load_ui.c, which stored the
// profiles and checks what this prints (one "key=value" per observation):
// the timeline stacked by wait-event class, a click on a band (its
// flamegraph: that class, that bucket), the statement x wait-event table
// and a click on a statement. Screenshots go to OUTDIR/ui-load*.png.
// Usage: NODE_PATH=BUILD/browser/node_modules node load_ui.js BASE QUERY OUTDIR
'use strict';
const path = require('path');
const { args, drive, say, settled, status } = require('./chromium');

const { base, query, outdir } = args('load_ui.js', ['base', 'query', 'outdir']);

const names = (page) => page.$$eval('#flame .frame', (l) => l.map((e) => e.dataset.name));

drive({ viewport: { width: 1400, height: 900 }, origin: base, expected: /status of 400/ }, async (page) => {
	// 1. a shared URL of the load view renders without a click
	const t0 = Date.now();
	await page.goto(`${base}/?${query}&mode=load`);
	say('state1', await settled(page));
	say('first_paint_ms', Date.now() - t0);
	say('status1', await status(page));
	const bands = await page.$$eval('#load-timeline .band', (l) => l.map((r) => r.dataset.cls));
	say('bands', bands.length);
	say('classes', [...new Set(bands)].sort().join(','));
	say('legend', await page.$eval('#load-legend', (e) => e.textContent));
	say('axis', await page.$eval('#load-axis', (e) => e.textContent));
	// the tallest stack: bucket 100 (second half) holds CPU 1 + Lock 4
	say('stack100', await page.$$eval('#load-timeline .band[data-bucket="100"]',
		(l) => l.map((r) => `${r.dataset.cls}:${(+r.dataset.value).toFixed(2)}`).join(',')));
	const rows = await page.$$eval('#load-table tbody tr', (l) => l.map((r) =>
		[...r.children].map((c) => c.textContent).join(' ; ')));
	say('rows', rows.join(' | '));
	say('head', await page.$$eval('#load-table th', (l) => l.map((e) => e.textContent).join(',')));
	await page.screenshot({ path: path.join(outdir, 'ui-load.png') });

	// 2. a click on a Lock band: the flamegraph of those samples
	await page.click('#load-timeline .band[data-cls="Lock"][data-bucket="100"]');
	say('state2', await settled(page));
	const u2 = new URL(page.url()).searchParams;
	say('mode2', u2.get('mode'));
	say('type2', u2.get('type'));
	say('class2', u2.get('class'));
	say('range2', `${u2.get('from')} ${u2.get('to')}`);
	const n2 = await names(page);
	say('lock2', n2.includes('lock_wait') ? 1 : 0);
	say('idle2', n2.includes('read_client') ? 1 : 0);
	say('status2', await status(page));
	say('chip2', await page.$eval('#class-chip', (e) => e.textContent));
	await page.screenshot({ path: path.join(outdir, 'ui-load-band.png') });

	// 3. back to the load, a click on the CPU band: the CPU flamegraph
	await page.goBack();
	say('state3', await settled(page));
	await page.click('#load-timeline .band[data-cls="CPU"][data-bucket="10"]');
	say('state3b', await settled(page));
	const u3 = new URL(page.url()).searchParams;
	say('type3', u3.get('type'));
	say('scan3', (await names(page)).includes('scan_rows') ? 1 : 0);

	// 4. a statement of the table: its flamegraph
	await page.goBack();
	say('state4', await settled(page));
	await page.click('#load-table tbody tr[data-key="00000000000000aa"]');
	say('state4b', await settled(page));
	const u4 = new URL(page.url()).searchParams;
	say('mode4', u4.get('mode'));
	say('filter4', u4.get('filter'));

	// 5. bad input: the 400's reason on the status line
	await page.goto(`${base}/?service=pghost&from=2026-01-01T11:00:00&to=2026-01-01T10:00:00&mode=load`);
	say('state5', await settled(page));
	say('status5', await status(page));
});
