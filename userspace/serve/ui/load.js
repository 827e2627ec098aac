// SPDX-License-Identifier: BSD-2-Clause
// ebprof's web UI, the database load view: GET /api/ui/load drawn as a
// timeline of average active sessions stacked by wait-event class (as
// Performance Insights draws it), each band of a bucket a link to the
// flamegraph of those samples, and a statement x wait-event table. Text
// from profiles only ever goes into textContent.
'use strict';

window.Load = (() => {
	// one hue per class, as the off-CPU flamegraph colours them
	const COLORS = {
		CPU: '#43a047', Lock: '#d32f2f', LWLock: '#c2185b', IO: '#1e88e5', IPC: '#7e57c2',
		Client: '#66bb6a', Timeout: '#f9a825', BufferPin: '#ef6c00', Extension: '#9e9d24',
		Other: '#8d6e63',
	};
	const ns = 'http://www.w3.org/2000/svg';
	const fmt = (v) => (v >= 10 ? v.toFixed(1) : v.toFixed(2));

	// the classes with load, in the API's order
	const present = (body) => body.classes.filter((c) => body.series[c]);

	function timeline(svg, legend, axis, body, open) {
		svg.textContent = '';
		legend.textContent = '';
		const classes = present(body), n = body.buckets;
		let max = 0;
		for (let i = 0; i < n; i++)
			max = Math.max(max, classes.reduce((a, c) => a + body.series[c][i], 0));
		max = Math.max(max, 1e-9);
		svg.setAttribute('viewBox', `0 0 ${n} 100`);
		svg.dataset.buckets = n;
		svg.dataset.max = max.toFixed(3);
		for (let i = 0; i < n; i++) {
			let y = 100;
			for (const c of classes) {
				const v = body.series[c][i];
				if (!v)
					continue;
				const h = (95 * v) / max;
				y -= h;
				const r = document.createElementNS(ns, 'rect');
				r.setAttribute('x', i + 0.05);
				r.setAttribute('y', y);
				r.setAttribute('width', 0.9);
				r.setAttribute('height', h);
				r.setAttribute('fill', COLORS[c] || COLORS.Other);
				r.setAttribute('class', 'band');
				Object.assign(r.dataset, { cls: c, bucket: i, value: v });
				const t = document.createElementNS(ns, 'title');
				const at = new Date(body.from + i * body.step).toISOString().slice(11, 19);
				t.textContent = `${c}: ${fmt(v)} sessions at ${at} (click: its flamegraph)`;
				r.appendChild(t);
				r.addEventListener('click', () => open(c, body.from + i * body.step, body.from + (i + 1) * body.step));
				svg.appendChild(r);
			}
		}
		for (const c of classes) {
			const s = document.createElement('span');
			s.className = 'key';
			const sw = document.createElement('i');
			sw.style.background = COLORS[c] || COLORS.Other;
			s.append(sw, `${c} ${fmt(body.average[c] || 0)}`);
			legend.appendChild(s);
		}
		const total = classes.reduce((a, c) => a + (body.average[c] || 0), 0);
		const step = body.step >= 60000 ? (body.step / 60000).toFixed(1) + ' min' : (body.step / 1000).toFixed(1) + ' s';
		axis.textContent = `average ${fmt(total)} active sessions (peak ${fmt(max)}), ${step} per bar; ` +
			'idle sessions and background main loops are not load; click a band for its flamegraph';
	}

	// rows: statements by load; columns: the classes with load
	function table(el, body, filter) {
		el.textContent = '';
		const classes = present(body);
		const head = document.createElement('tr');
		for (const h of ['statement', 'sessions', ...classes]) {
			const th = document.createElement('th');
			th.textContent = h;
			head.appendChild(th);
		}
		const thead = document.createElement('thead'), tbody = document.createElement('tbody');
		thead.appendChild(head);
		el.append(thead, tbody);
		const rows = body.statements.map((s) => ({ name: s.query || (s.key ? s.key : '(no statement)'), s }));
		if (body.others && body.others.statements)
			rows.push({ name: `(${body.others.statements} other statements)`, s: body.others });
		for (const { name, s } of rows) {
			const tr = document.createElement('tr');
			const td = (text) => {
				const d = document.createElement('td');
				d.textContent = text;
				tr.appendChild(d);
				return d;
			};
			td(name).title = s.key || '';
			td(fmt(s.aas));
			for (const c of classes) {
				const v = (s.classes || {})[c] || 0;
				const d = td(v ? fmt(v) : '');
				if (v)
					d.style.boxShadow = `inset ${Math.round((60 * v) / Math.max(s.aas, 1e-9))}px 0 0 ${COLORS[c] || COLORS.Other}55`;
			}
			if (s.key) {
				tr.classList.add('link');
				tr.dataset.key = s.key;
				tr.addEventListener('click', () => filter(s.key));
			}
			tbody.appendChild(tr);
		}
	}

	return { timeline, table, COLORS };
})();
