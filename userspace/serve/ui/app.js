// SPDX-License-Identifier: BSD-2-Clause
// ebprof's web UI: every view is its URL (service, type, from, to, labels
// as in profefe's API, plus range, filter, group, mode, base_from, base_to,
// search, class), so a link opens the same view; the page loads its data from
// GET /api/ui/data without a click. Text from profiles (function names,
// label values) only ever goes into textContent.
'use strict';

(() => {
	const $ = (id) => document.getElementById(id);
	const TYPES = ['cpu', 'heap', 'block', 'mutex', 'goroutine', 'threadcreate', 'trace', 'other'];
	const RANGES = { '5m': 300, '15m': 900, '1h': 3600, '6h': 21600, '24h': 86400, '7d': 604800 };
	const KEYS = ['service', 'type', 'range', 'from', 'to', 'labels', 'filter', 'group', 'mode',
		'base_from', 'base_to', 'search', 'idle', 'class'];
	let state = {}, data = null, unit = '', timer = null, seq = 0;
	const flame = new Flame.View($('flame'), $('tooltip'), (v) => fmt(v));

	// times of the API: 2006-01-02T15:04:05, UTC
	const iso = (ms) => new Date(ms).toISOString().slice(0, 19);
	const isoMs = (ms) => new Date(ms).toISOString().slice(0, 23);
	const parse = (s) => (s ? Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(s) ? s : s + 'Z') : NaN);

	function fmt(v) {
		if (unit === 'nanoseconds') {
			const s = v / 1e9;
			return s >= 1 ? s.toFixed(2) + ' s' : (v / 1e6).toFixed(1) + ' ms';
		}
		if (unit === 'bytes') {
			const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
			let i = 0;
			for (; v >= 1024 && i < u.length - 1; i++)
				v /= 1024;
			return v.toFixed(i ? 1 : 0) + ' ' + u[i];
		}
		return String(v) + (unit && unit !== 'count' ? ' ' + unit : '');
	}

	const pct = (v, t) => (t ? ((100 * v) / t).toFixed(2) : '0.00') + '%';

	function readURL() {
		const q = new URLSearchParams(location.search);
		state = {};
		for (const k of KEYS)
			if (q.get(k) !== null && q.get(k) !== '')
				state[k] = q.get(k);
		state.type = state.type || 'cpu';
		state.mode = ['flame', 'top', 'table', 'diff', 'load'].includes(state.mode) ? state.mode : 'flame';
		state.group = state.group || 'query';
	}

	function writeURL(push) {
		const q = new URLSearchParams();
		for (const k of KEYS)
			if (state[k])
				q.set(k, state[k]);
		const url = location.pathname + '?' + q.toString();
		if (push)
			history.pushState(null, '', url);
		else
			history.replaceState(null, '', url);
	}

	function rangeNow() {
		if (!RANGES[state.range])
			return;
		const now = Date.now();
		state.to = iso(now);
		state.from = iso(now - RANGES[state.range] * 1000);
	}

	function status(text, st) {
		$('status').textContent = text;
		document.body.dataset.state = st;
	}

	function apiQuery(extra) {
		const q = new URLSearchParams();
		for (const k of ['service', 'type', 'from', 'to', 'labels'])
			if (state[k])
				q.set(k, state[k]);
		for (const [k, v] of Object.entries(extra || {}))
			if (v)
				q.set(k, v);
		return q.toString();
	}

	// --token-file: kept for this tab only
	const auth = () => {
		const t = sessionStorage.getItem('ebprof-token');
		return t ? { Authorization: 'Bearer ' + t } : {};
	};

	async function getJSON(url) {
		const r = await fetch(url, { headers: auth() });
		if (r.status === 401) {
			$('token-form').hidden = false;
			throw new Error('the collector wants its token');
		}
		let j = null;
		try {
			j = await r.json();
		} catch (e) {
			throw new Error(`${url}: HTTP ${r.status}, not JSON`);
		}
		if (!r.ok || j.code !== 200)
			throw new Error(j.error || `HTTP ${r.status}`);
		return j.body;
	}

	function option(sel, value, text) {
		const o = document.createElement('option');
		o.value = value;
		o.textContent = text === undefined ? value : text;
		sel.appendChild(o);
	}

	function controls() {
		$('service').value = state.service || '';
		$('type').value = state.type;
		$('range').value = state.range || '';
		$('from').value = state.from || '';
		$('to').value = state.to || '';
		$('labels').value = state.labels || '';
		$('search').value = state.search || '';
		for (const b of document.querySelectorAll('button.mode'))
			b.classList.toggle('on', b.dataset.mode === state.mode);
		document.body.dataset.mode = state.mode;
		const f = $('filters');
		f.textContent = '';
		for (const kv of (state.filter || '').split(',').filter(Boolean)) {
			const chip = document.createElement('button');
			chip.type = 'button';
			chip.className = 'chip';
			chip.textContent = decodeLabel(kv) + ' \u00d7';
			chip.title = 'remove this filter';
			chip.addEventListener('click', () => {
				state.filter = state.filter.split(',').filter((x) => x !== kv).join(',');
				go(true);
			});
			f.appendChild(chip);
		}
		if (state.class) {
			// a band of the load: its samples only
			const chip = document.createElement('button');
			chip.type = 'button';
			chip.className = 'chip';
			chip.id = 'class-chip';
			chip.textContent = 'load: ' + state.class + ' \u00d7';
			chip.title = 'show every sample, not only this band of the database load';
			chip.addEventListener('click', () => { delete state.class; go(true); });
			f.appendChild(chip);
		}
		$('download').href = '/api/0/profiles/merge?' + apiQuery();
	}

	// label parts are %-escaped in the API (profefe's habit)
	const encodePart = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
	const decodeLabel = (kv) => kv.split('=').map((x) => { try { return decodeURIComponent(x); } catch (e) { return x; } }).join('=');

	async function load() {
		const my = ++seq;
		if (!state.service) {
			status('No profiles stored yet: push some (ebprof agent --push-profefe http://HOST:PORT).', 'ready');
			flame.set(null, null);
			return;
		}
		if (state.mode === 'load')
			return loadView(my);
		const extra = { filter: state.filter, group: state.group, buckets: '120', idle: state.idle,
			class: state.class };
		if (state.mode === 'diff') {
			extra.base_from = state.base_from;
			extra.base_to = state.base_to;
		}
		status('loading\u2026', 'loading');
		let body;
		try {
			body = await getJSON('/api/ui/data?' + apiQuery(extra));
		} catch (e) {
			if (my === seq)
				status(e.message, 'error');
			return;
		}
		if (my !== seq)
			return;
		data = body;
		render();
		const n = body.profiles, note = body.truncated ? ' (the newest only: narrow the range)' : '';
		const vs = state.mode === 'diff' ? ` against ${body.base_profiles} in the baseline` : '';
		const idle = body.idle_hidden ? '; idle backends waiting for their client hidden' : '';
		status(`${n} profile${n === 1 ? '' : 's'} merged${vs}${note}${idle}`, 'ready');
	}

	// the database load (load.js): a band opens the flamegraph of its
	// samples, a statement the flamegraph of that statement
	async function loadView(my) {
		status('loading\u2026', 'loading');
		let body;
		try {
			body = await getJSON('/api/ui/load?' + apiQuery({ buckets: '120', statements: '20' }));
		} catch (e) {
			if (my === seq)
				status(e.message, 'error');
			return;
		}
		if (my !== seq)
			return;
		Load.timeline($('load-timeline'), $('load-legend'), $('load-axis'), body, (cls, from, to) => {
			state.mode = 'flame';
			state.type = cls === 'CPU' ? 'cpu' : 'block';
			state.class = cls;
			state.from = isoMs(from);
			state.to = isoMs(to);
			delete state.range;
			go(true);
		});
		Load.table($('load-table'), body, (key) => {
			const k = /^[0-9a-f]{16}$/.test(key) ? 'query_fingerprint' : 'query';
			state.filter = encodePart(k) + '=' + encodePart(key);
			state.mode = 'flame';
			go(true);
		});
		const n = body.profiles, note = body.truncated ? ' (the newest only: narrow the range)' : '';
		status(`database load from ${n} CPU and off-CPU profile${n === 1 ? '' : 's'}${note}`, 'ready');
	}

	function render() {
		const fl = data.flame;
		unit = fl ? fl.unit : '';
		const zoomPath = [];
		for (let z = flame.zoom; z && z.parent; z = z.parent)
			zoomPath.unshift(z.name);
		flame.set(fl, state.mode === 'diff' ? data.base_flame || { names: [], kinds: [] } : null);
		// a refresh keeps the zoom
		let z = flame.root;
		for (const name of zoomPath) {
			const k = z && z.kids.find((x) => x.name === name);
			if (!k)
				break;
			z = k;
		}
		if (z && z !== flame.root)
			flame.zoomTo(z);
		flame.setSearch(state.search || '');
		matched();
		$('flame-note').textContent = fl && fl.pruned ? `${fl.pruned} frames under 0.01% not drawn` : '';
		timeline();
		topTable();
		groupTable();
		labelsList();
	}

	function matched() {
		$('matched').textContent = state.search && flame.root
			? `matched ${pct(flame.matched, flame.root.v)}` : '';
	}

	function timeline() {
		const svg = $('timeline'), tl = data.timeline;
		svg.textContent = '';
		if (!tl)
			return;
		const n = tl.values.length, max = Math.max(1, ...tl.values);
		svg.setAttribute('viewBox', `0 0 ${n} 100`);
		const ns = 'http://www.w3.org/2000/svg';
		const rect = (x, y, w, h, cls) => {
			const r = document.createElementNS(ns, 'rect');
			r.setAttribute('x', x);
			r.setAttribute('y', y);
			r.setAttribute('width', w);
			r.setAttribute('height', h);
			r.setAttribute('class', cls);
			svg.appendChild(r);
			return r;
		};
		const span = (from, to, cls) => {
			const a = (parse(from) - tl.from) / tl.step, b = (parse(to) - tl.from) / tl.step;
			if (Number.isFinite(a) && Number.isFinite(b))
				rect(Math.max(0, a), 0, Math.max(0.3, Math.min(n, b) - Math.max(0, a)), 100, cls);
		};
		if (state.mode === 'diff') {
			span(state.base_from, state.base_to, 'range base');
			span(state.from, state.to, 'range sel');
		}
		tl.values.forEach((v, i) => {
			const h = (95 * v) / max;
			if (v)
				rect(i + 0.1, 100 - h, 0.8, h, 'bar').dataset.value = v;
		});
		svg.dataset.buckets = n;
		svg.dataset.total = tl.values.reduce((a, b) => a + b, 0);
		$('timeline-axis').textContent =
			`${iso(tl.from)} \u2192 ${iso(tl.from + n * tl.step)} UTC, ${fmtStep(tl.step)} per bar; drag to select`;
	}

	const fmtStep = (ms) => (ms >= 60000 ? (ms / 60000).toFixed(1) + ' min' : (ms / 1000).toFixed(1) + ' s');

	function dragTimeline() {
		const svg = $('timeline');
		let x0 = null, sel = null;
		const time = (x) => {
			const tl = data && data.timeline, r = svg.getBoundingClientRect();
			return tl.from + ((x - r.left) / r.width) * tl.values.length * tl.step;
		};
		svg.addEventListener('mousedown', (e) => {
			if (!data || !data.timeline)
				return;
			x0 = e.clientX;
			sel = document.createElement('div');
			sel.className = 'drag';
			$('timeline-box').appendChild(sel);
			e.preventDefault();
		});
		window.addEventListener('mousemove', (e) => {
			if (x0 === null)
				return;
			const r = svg.getBoundingClientRect();
			const a = Math.max(r.left, Math.min(x0, e.clientX)), b = Math.min(r.right, Math.max(x0, e.clientX));
			sel.style.left = a - r.left + 'px';
			sel.style.width = b - a + 'px';
		});
		window.addEventListener('mouseup', (e) => {
			if (x0 === null)
				return;
			const a = Math.min(x0, e.clientX), b = Math.max(x0, e.clientX);
			x0 = null;
			sel.remove();
			if (b - a < 3)
				return;
			const from = iso(time(a)), to = iso(time(b));
			const which = document.querySelector('input[name=drag]:checked').value;
			if (state.mode === 'diff' && which === 'base') {
				state.base_from = from;
				state.base_to = to;
			} else {
				state.from = from;
				state.to = to;
			}
			delete state.range;
			go(true);
		});
	}

	function table(el, head, rows) {
		el.textContent = '';
		const tr = document.createElement('tr');
		for (const [text, key] of head) {
			const th = document.createElement('th');
			th.textContent = text;
			if (key)
				th.dataset.key = key;
			tr.appendChild(th);
		}
		const thead = document.createElement('thead'), tbody = document.createElement('tbody');
		thead.appendChild(tr);
		el.append(thead, tbody);
		for (const cells of rows) {
			const r = document.createElement('tr');
			for (const c of cells.cells) {
				const td = document.createElement('td');
				if (c instanceof Node)
					td.appendChild(c);
				else
					td.textContent = c;
				r.appendChild(td);
			}
			Object.assign(r.dataset, cells.data || {});
			if (cells.click) {
				r.classList.add('link');
				r.addEventListener('click', cells.click);
			}
			tbody.appendChild(r);
		}
	}

	let topSort = 'self';
	function topTable() {
		const fl = data.flame, el = $('top');
		if (!fl || !fl.top) {
			el.textContent = '';
			return;
		}
		const rows = fl.top.slice().sort((a, b) => (topSort === 'self' ? b[1] - a[1] : b[2] - a[2]));
		const reEsc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
		table(el, [['self', 'self'], ['self %'], ['total', 'total'], ['total %'], ['function']],
			rows.map(([f, self, total]) => ({
				cells: [fmt(self), pct(self, fl.total), fmt(total), pct(total, fl.total), fl.names[f]],
				data: { name: fl.names[f] },
				click: () => {
					state.search = '^' + reEsc(fl.names[f]) + '$';
					state.mode = 'flame';
					go(true, true);
				},
			})));
		for (const th of el.querySelectorAll('th[data-key]')) {
			th.classList.add('link');
			th.addEventListener('click', () => { topSort = th.dataset.key; topTable(); });
		}
	}

	function bar(v, total) {
		const d = document.createElement('div');
		d.className = 'share';
		d.style.width = Math.round((100 * v) / Math.max(1, total)) + '%';
		return d;
	}

	function groupTable() {
		const g = data.groups, el = $('groups'), total = data.flame ? data.flame.total : 0;
		if (!g) {
			el.textContent = '';
			return;
		}
		const rows = g.rows.map(([value, v]) => ({
			cells: [value === null ? `(no ${g.key})` : value, fmt(v), pct(v, total), bar(v, total)],
			data: { value: value === null ? '' : value },
			click: value === null ? null : () => {
				const kv = encodePart(g.key) + '=' + encodePart(value);
				const f = (state.filter || '').split(',').filter(Boolean);
				if (!f.includes(kv))
					f.push(kv);
				state.filter = f.join(',');
				state.mode = 'flame';
				go(true);
			},
		}));
		if (g.others)
			rows.push({ cells: ['(others)', fmt(g.others), pct(g.others, total), bar(g.others, total)] });
		table(el, [[g.key], [unit === 'nanoseconds' ? 'CPU' : 'value'], ['share'], ['']], rows);
		const sel = $('group');
		sel.textContent = '';
		const keys = new Set(['query', ...(data.label_keys || []), state.group]);
		for (const k of keys)
			option(sel, k);
		sel.value = state.group;
	}

	function labelsList() {
		const dl = $('label-list');
		dl.textContent = '';
		for (const [k, v] of data.profile_labels || [])
			option(dl, encodePart(k) + '=' + encodePart(v), `${k}=${v}`);
	}

	// state changed: URL, controls, data
	function go(push, keepData) {
		rangeNow();
		if (state.mode === 'diff' && !(state.base_from && state.base_to)) {
			// first time: the first half against the second
			const a = parse(state.from), b = parse(state.to), mid = a + (b - a) / 2;
			state.base_from = iso(a);
			state.base_to = iso(mid);
			state.from = iso(mid);
			delete state.range;
		}
		writeURL(push);
		controls();
		if (keepData && data) {
			flame.setSearch(state.search || '');
			matched();
			return;
		}
		load();
	}

	function live() {
		clearInterval(timer);
		timer = setInterval(() => {
			if (state.range && document.visibilityState === 'visible') {
				rangeNow();
				writeURL(false);
				controls();
				load();
			}
		}, 10000);
	}

	async function init() {
		// profefe's types, each named after the ebprof type filed under it
		let names = {};
		try {
			for (const t of await getJSON('/api/ui/types'))
				names[t.type] = t.type === t.name ? t.type : `${t.type} (${t.name})`;
		} catch (e) {
			names = {};
		}
		for (const t of TYPES)
			option($('type'), t, names[t]);
		readURL();
		if (!state.range && !(state.from && state.to))
			state.range = '1h';
		// a link that names its service loads its view while the list of
		// services comes: the first paint waits for one request, not two
		const listed = getJSON('/api/0/services'), early = !!state.service;
		if (early)
			go(false);
		let services = [];
		try {
			services = await listed;
		} catch (e) {
			status('cannot list services: ' + e.message, 'error');
			return;
		}
		for (const s of services)
			option($('service'), s);
		if (!state.service && services.length)
			state.service = services[0];
		if (state.service && !services.includes(state.service))
			option($('service'), state.service);

		$('apply').addEventListener('click', () => {
			state.service = $('service').value;
			state.type = $('type').value;
			state.from = $('from').value.trim();
			state.to = $('to').value.trim();
			state.labels = $('labels').value.trim();
			if ($('from').value !== (state.from || '') || $('to').value !== (state.to || ''))
				delete state.range;
			go(true);
		});
		for (const id of ['from', 'to'])
			$(id).addEventListener('change', () => { $('range').value = ''; delete state.range; });
		for (const id of ['from', 'to', 'labels'])
			$(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') $('apply').click(); });
		$('service').addEventListener('change', () => { state.service = $('service').value; go(true); });
		$('type').addEventListener('change', () => { state.type = $('type').value; go(true); });
		$('idle').checked = state.idle === '1';
		$('idle').addEventListener('change', () => {
			state.idle = $('idle').checked ? '1' : '';
			go(true);
		});
		$('range').addEventListener('change', () => {
			state.range = $('range').value;
			if (!state.range)
				delete state.range;
			go(true);
		});
		$('group').addEventListener('change', () => { state.group = $('group').value; go(true); });
		$('zoom-out').addEventListener('click', () => {
			const a = parse(state.from), b = parse(state.to), d = (b - a) / 2;
			state.from = iso(a - d);
			state.to = iso(Math.min(Date.now(), b + d));
			delete state.range;
			go(true);
		});
		for (const b of document.querySelectorAll('button.mode'))
			b.addEventListener('click', () => {
				const was = state.mode;
				state.mode = b.dataset.mode;
				go(true, was !== 'diff' && state.mode !== 'diff' && was !== 'load' && state.mode !== 'load');
			});
		$('search').addEventListener('input', () => {
			state.search = $('search').value;
			go(false, true);
		});
		$('reset-zoom').addEventListener('click', () => flame.reset());
		$('token-form').addEventListener('submit', (e) => {
			e.preventDefault();
			sessionStorage.setItem('ebprof-token', $('token').value);
			$('token').value = '';
			$('token-form').hidden = true;
			location.reload();
		});
		// with a token the download needs the header too
		$('download').addEventListener('click', async (e) => {
			if (!sessionStorage.getItem('ebprof-token'))
				return;
			e.preventDefault();
			const r = await fetch($('download').href, { headers: auth() });
			if (!r.ok)
				return status(`download: HTTP ${r.status}`, 'error');
			const a = document.createElement('a');
			a.href = URL.createObjectURL(await r.blob());
			a.download = 'profile.pb.gz';
			a.click();
			URL.revokeObjectURL(a.href);
		});
		window.addEventListener('popstate', () => { readURL(); controls(); load(); });
		dragTimeline();
		live();
		if (early)
			controls(); /* the service chosen, now that it is listed */
		else
			go(false);
	}

	window.ebprofUI = { get state() { return state; }, get data() { return data; }, flame };
	init();
})();
