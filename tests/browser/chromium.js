// SPDX-License-Identifier: BSD-2-Clause
// Shared by the browser tests: Debian's /usr/bin/chromium, headless, with a
// new empty profile (playwright's), asking nothing of the network itself;
// say() prints one "key=value" observation for the C test to check
// (tests/lib/browser_env.c runs the scripts).
'use strict';
const { chromium } = require('playwright-core');

function launch() {
	return chromium.launch({
		executablePath: '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update',
			'--disable-sync'],
	});
}

function say(key, value) {
	console.log(`${key}=${value}`);
}

// The arguments after the script, named: exits 2 with a usage line when
// one is missing.
function args(script, names) {
	const v = process.argv.slice(2);
	if (v.length < names.length || v.slice(0, names.length).some((a) => !a)) {
		console.error(`usage: ${script} ${names.join(' ').toUpperCase()}`);
		process.exit(2);
	}
	return Object.fromEntries(names.map((n, i) => [n, v[i]]));
}

// Runs body(page) on a new page of its own browser. What the page logs as
// an error (but the expected answers matching `expected`) and every request
// it makes outside `origin` are said at the end as errors=N and foreign=N,
// each listed on a line of its own. A throw exits 1 with its stack.
function drive({ viewport, origin, expected }, body) {
	(async () => {
		const browser = await launch();
		try {
			const page = await browser.newPage({ viewport });
			const errors = [], foreign = [];
			page.on('pageerror', (e) => errors.push(String(e)));
			page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
			page.on('request', (r) => { if (!r.url().startsWith(origin)) foreign.push(r.url()); });
			await body(page);
			say('errors', errors.filter((e) => !(expected && expected.test(e))).length);
			errors.forEach((e) => say('error', e));
			say('foreign', foreign.length);
			foreign.forEach((u) => say('request', u));
		} finally {
			await browser.close();
		}
	})().catch((e) => {
		console.error(e && e.stack ? e.stack : String(e));
		process.exit(1);
	});
}

// The web UI of `ebprof serve`: done loading (body[data-state]); its status line.
async function settled(page) {
	await page.waitForFunction(() => document.body.dataset.state !== 'loading', null,
		{ timeout: 20000 });
	return page.evaluate(() => document.body.dataset.state);
}

const status = (page) => page.$eval('#status', (e) => e.textContent);

module.exports = { launch, say, args, drive, settled, status };
