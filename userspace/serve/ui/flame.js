// SPDX-License-Identifier: BSD-2-Clause
// The flamegraph of ebprof's web UI: the tree of GET /api/ui/data (root at
// the top), drawn as positioned <div>s (frames under a pixel are skipped);
// click zooms, search highlights, hover shows self and total. A diff merges
// the baseline's tree into the comparison's by path and colours each frame
// by the change of its share of the total.
'use strict';

const Flame = (() => {
	const ROW = 18;
	const KINDS = ['root', 'thread', 'user', 'kernel', 'inlined', 'unsym', 'cut'];

	// [frame, value, children...] into {name, kind, v, b, self, kids, parent, depth}
	function build(data, side, root, parent, depth) {
		if (!data || !data.tree)
			return root;
		const stack = [[data.tree, parent, depth]];
		let first = root;
		while (stack.length) {
			const [a, par, d] = stack.pop();
			const name = data.names[a[0]], kind = KINDS[data.kinds[a[0]]] || 'user';
			const key = kind + '\0' + name;
			let n = par ? par.idx.get(key) : first;
			if (!n) {
				n = { name, kind, v: 0, b: 0, kids: [], idx: new Map(), parent: par, depth: d };
				if (par) {
					par.kids.push(n);
					par.idx.set(key, n);
				} else {
					first = n;
				}
			}
			n[side] += a[1];
			for (let i = 2; i < a.length; i++)
				stack.push([a[i], n, d + 1]);
		}
		return first;
	}

	function finish(n) {
		const stack = [n];
		while (stack.length) {
			const x = stack.pop();
			x.kids.sort((p, q) => (p.name < q.name ? -1 : p.name > q.name ? 1 : 0));
			x.self = x.v - x.kids.reduce((s, k) => s + k.v, 0);
			x.bself = x.b - x.kids.reduce((s, k) => s + k.b, 0);
			stack.push(...x.kids);
		}
		return n;
	}

	// a stable warm colour per name, as flamegraph.pl does
	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++)
			h = Math.imul(h ^ s.charCodeAt(i), 16777619);
		return (h >>> 0) / 4294967296;
	}

	function colour(n, diff, totals) {
		if (diff) {
			const after = totals.v ? n.v / totals.v : 0, before = totals.b ? n.b / totals.b : 0;
			const d = after - before, k = Math.min(1, Math.abs(d) * 20);
			if (Math.abs(d) < 0.0005)
				return 'rgb(225,225,225)';
			const c = Math.round(225 - 150 * k);
			return d > 0 ? `rgb(245,${c},${c})` : `rgb(${c},${c},245)`;
		}
		const r = hash(n.name);
		switch (n.kind) {
		case 'kernel': return `rgb(${Math.round(80 + 50 * r)},${Math.round(150 + 50 * r)},220)`;
		case 'inlined': return `rgb(240,${Math.round(190 + 40 * r)},${Math.round(90 + 40 * r)})`;
		case 'unsym': return 'rgb(190,190,190)';
		case 'thread': return 'rgb(200,170,230)';
		case 'cut': return 'rgb(230,90,90)';
		case 'root': return 'rgb(210,210,210)';
		default: return `rgb(${Math.round(225 + 30 * r)},${Math.round(90 + 110 * r)},${Math.round(40 + 30 * r)})`;
		}
	}

	class View {
		constructor(el, tooltip, fmt) {
			this.el = el;
			this.tip = tooltip;
			this.fmt = fmt;
			this.root = null;
			this.zoom = null;
			this.search = '';
			this.onchange = null;
			el.addEventListener('click', (e) => {
				const f = e.target.closest('.frame');
				if (f && f.node)
					this.zoomTo(f.node);
			});
			el.addEventListener('mousemove', (e) => this.hover(e));
			el.addEventListener('mouseleave', () => { this.tip.hidden = true; });
			window.addEventListener('resize', () => this.draw());
		}

		// data: a flame object of the API; base: the baseline's (diff) or null
		set(data, base) {
			this.diff = !!base;
			let root = build(data, 'v', null, null, 0);
			if (base)
				root = build(base, 'b', root || null, null, 0);
			this.root = root ? finish(root) : null;
			this.totals = this.root ? { v: this.root.v, b: this.root.b } : { v: 0, b: 0 };
			this.zoom = this.root;
			this.draw();
		}

		zoomTo(n) {
			this.zoom = n;
			this.draw();
			if (this.onchange)
				this.onchange();
		}

		reset() {
			this.zoomTo(this.root);
		}

		setSearch(s) {
			this.search = s;
			this.draw();
		}

		matcher() {
			if (!this.search)
				return null;
			try {
				return new RegExp(this.search, 'i');
			} catch (e) {
				const s = this.search.toLowerCase();
				return { test: (x) => x.toLowerCase().includes(s) };
			}
		}

		draw() {
			const el = this.el;
			el.textContent = '';
			this.matched = 0;
			if (!this.root || !this.root.v) {
				el.style.height = '40px';
				const p = document.createElement('p');
				p.className = 'empty';
				p.textContent = 'No samples in this selection.';
				el.appendChild(p);
				return;
			}
			const W = el.clientWidth || 1200, z = this.zoom, re = this.matcher();
			const frag = document.createDocumentFragment();
			let rows = 0, drawn = 0;
			const put = (n, x, w, matchedAbove) => {
				const d = document.createElement('div');
				d.className = 'frame k-' + n.kind;
				d.node = n;
				d.dataset.name = n.name;
				d.style.left = x + 'px';
				d.style.width = Math.max(w - 1, 1) + 'px';
				d.style.top = n.depth * ROW + 'px';
				d.style.background = colour(n, this.diff, this.totals);
				if (this.diff) {
					const delta = (this.totals.v ? n.v / this.totals.v : 0) -
						(this.totals.b ? n.b / this.totals.b : 0);
					d.dataset.delta = delta.toFixed(6);
					d.classList.add(delta > 0.0005 ? 'grew' : delta < -0.0005 ? 'shrank' : 'same');
				}
				const m = re && re.test(n.name);
				if (m) {
					d.classList.add('match');
					if (!matchedAbove)
						this.matched += n.v;
				}
				if (w > 30)
					d.textContent = n.name;
				frag.appendChild(d);
				rows = Math.max(rows, n.depth + 1);
				drawn++;
				return m || matchedAbove;
			};
			// ancestors of the zoomed frame span the width
			const chain = [];
			for (let a = z.parent; a; a = a.parent)
				chain.unshift(a);
			let above = false;
			for (const a of chain)
				above = put(a, 0, W, above) || above;
			const stack = [[z, 0, above]];
			while (stack.length && drawn < 30000) {
				const [n, x, m] = stack.pop();
				const w = (n.v / z.v) * W;
				const mm = put(n, x, w, m);
				let cx = x;
				for (const k of n.kids) {
					const kw = (k.v / z.v) * W;
					if (kw >= 0.5)
						stack.push([k, cx, mm]);
					cx += kw;
				}
			}
			el.style.height = rows * ROW + 4 + 'px';
			el.appendChild(frag);
			el.dataset.zoomed = z === this.root ? '' : z.name;
		}

		describe(n) {
			const t = this.totals, f = this.fmt;
			const pct = (a, b) => (b ? ((100 * a) / b).toFixed(2) : '0.00') + '%';
			let s = `${n.name}\ntotal ${f(n.v)} (${pct(n.v, t.v)}), self ${f(n.self)} (${pct(n.self, t.v)})`;
			if (this.diff)
				s += `\nbaseline ${f(n.b)} (${pct(n.b, t.b)}), self ${f(n.bself)} (${pct(n.bself, t.b)})`;
			return s;
		}

		hover(e) {
			const f = e.target.closest('.frame');
			if (!f || !f.node) {
				this.tip.hidden = true;
				return;
			}
			this.tip.textContent = this.describe(f.node);
			this.tip.hidden = false;
			const x = Math.min(e.clientX + 12, window.innerWidth - this.tip.offsetWidth - 4);
			this.tip.style.left = x + 'px';
			this.tip.style.top = e.clientY + 14 + 'px';
		}
	}

	return { View };
})();
