// SPDX-License-Identifier: BSD-2-Clause
// Shared by the browser tests: Debian's /usr/bin/chromium, headless, with a
// new empty profile (playwright's), asking nothing of the network itself;
// say() prints one "key=value" observation for the C test to check.
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

module.exports = { launch, say };
