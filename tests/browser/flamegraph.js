// SPDX-License-Identifier: BSD-2-Clause
// Drives an ebprof SVG flamegraph in headless Chromium (Debian's
// /usr/bin/chromium) with playwright-core, for
// tests/integration/test_flamegraph_browser.c, which checks what this
// prints: one "key=value" line per observation. Screenshots go to
// OUTDIR/flamegraph-{initial,zoomed,search}.png.
// Usage: NODE_PATH=BUILD/browser/node_modules node flamegraph.js SVG OUTDIR
'use strict';
const path = require('path');
const { args, drive, say } = require('./chromium');

const { svg, outdir } = args('flamegraph.js', ['svg', 'outdir']);

async function frameInfo(page, name) {
	return page.evaluate((n) => {
		const g = [...document.querySelectorAll('g.frame')].find(
			(e) => e.getAttribute('data-name') === n);
		if (!g)
			return null;
		const r = g.querySelector('rect');
		return {
			x: r.getAttribute('x'),
			w: r.getAttribute('width'),
			cls: g.getAttribute('class'),
			display: getComputedStyle(g).display,
			fill: getComputedStyle(r).fill,
			label: g.querySelector('text').textContent,
		};
	}, name);
}

function report(prefix, f) {
	if (!f) {
		say(`${prefix}_missing`, 1);
		return;
	}
	say(`${prefix}_x`, f.x);
	say(`${prefix}_w`, f.w);
	say(`${prefix}_hidden`, f.display === 'none' ? 1 : 0);
	say(`${prefix}_parent`, / parent/.test(f.cls) ? 1 : 0);
	say(`${prefix}_match`, / match/.test(f.cls) ? 1 : 0);
	say(`${prefix}_fill`, f.fill.replace(/ /g, ''));
	say(`${prefix}_label`, f.label);
}

// The whole image: fullPage screenshots hang on SVG documents, so the
// viewport is made as tall as the SVG instead.
async function shot(page, name) {
	const h = await page.evaluate(() => +document.documentElement.getAttribute('height'));
	await page.setViewportSize({ width: 1280, height: Math.max(200, Math.ceil(h)) });
	await page.screenshot({ path: path.join(outdir, name) });
}

async function text(page, sel) {
	return page.$eval(sel, (e) => e.textContent.trim());
}

// a self-contained SVG asks for nothing: every request is foreign
drive({ viewport: { width: 1280, height: 900 }, origin: 'file:' }, async (page) => {
	await page.goto('file://' + path.resolve(svg));
	await page.waitForFunction(() => window.flamegraph !== undefined);
	await shot(page, 'flamegraph-initial.png');
	report('work0', await frameInfo(page, 'work'));

	// click zooms: work becomes the full width, main stays as a parent
	await page.click('g.frame[data-name="work"]');
	report('work1', await frameInfo(page, 'work'));
	report('helper1', await frameInfo(page, 'helper'));
	report('main1', await frameInfo(page, 'main'));
	report('alpha1', await frameInfo(page, 'alpha'));
	say('reset_off1', await page.$eval('#reset', (e) => e.classList.contains('off') ? 1 : 0));
	await shot(page, 'flamegraph-zoomed.png');

	// Reset Zoom
	await page.click('#reset');
	report('work2', await frameInfo(page, 'work'));
	report('alpha2', await frameInfo(page, 'alpha'));

	// hover shows the tooltip text in the details line
	await page.hover('g.frame[data-name="do_syscall_64"]');
	say('details', await text(page, '#details'));

	// search through the Search control (a prompt)
	page.once('dialog', (d) => d.accept('helper|do_syscall'));
	await page.click('#search');
	say('matched1', await text(page, '#matched'));
	say('search_label1', await text(page, '#search'));
	say('matches1', await page.$$eval('g.frame.match', (l) => l.length));
	report('helper3', await frameInfo(page, 'helper'));
	report('main3', await frameInfo(page, 'main'));
	await shot(page, 'flamegraph-search.png');

	// a second click on the control resets the search
	await page.click('#search');
	say('matched2', await text(page, '#matched'));
	say('matches2', await page.$$eval('g.frame.match', (l) => l.length));

	// Ctrl-F opens the search; nested matches count once
	page.once('dialog', (d) => d.accept('^(work|helper)$'));
	await page.keyboard.press('Control+f');
	say('matched3', await text(page, '#matched'));
	say('matches3', await page.$$eval('g.frame.match', (l) => l.length));

	// an invalid regex is reported, not thrown
	await page.click('#search');
	page.once('dialog', (d) => d.accept('(['));
	await page.click('#search');
	say('matched4', await text(page, '#matched'));

	// the deepest frame shows up when zoomed into it (labels refit)
	await page.click('g.frame[data-name="app+0x30ab"]');
	report('kun5', await frameInfo(page, '0xffffffff81002000'));
	say('screenshot', path.join(outdir, 'flamegraph-initial.png'));
});
