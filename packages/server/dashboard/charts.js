// Decisions per second per rule: one small uPlot chart per rule, fed incrementally from /api/dashboard.

import { byId, fmtClock, fmtInt, fmtRate, h, setText } from './dom.js';
import uPlot from './vendor/uPlot.esm.js';

const COLORS = { ok: '#2b8a3e', over: '#e03131', shadow: '#7048e8', grid: '#eef1f5', axis: '#6b7280' };
const HEIGHT = 150;

/**
 * The client-side copy of the last `windowS` seconds: one shared time axis and, per rule, three aligned
 * columns (allowed = ok + near_limit, over limit, shadow). Only new seconds travel on each poll.
 */
export function createCharts() {
  const container = byId('charts');
  const empty = byId('charts-empty');
  /** @type {number[]} */
  let xs = [];
  /** @type {Map<string, {allowed: number[], over: number[], shadow: number[], near: number[], totals: Record<string, number>, domain: string, rule: string, seen: boolean}>} */
  const columns = new Map();
  /** @type {Map<string, {card: HTMLElement, plot: uPlot | undefined, counters: Record<string, HTMLElement>, title: HTMLElement, subtitle: HTMLElement}>} */
  const cards = new Map();
  let lastToS;
  let windowS = 300;

  const width = () => {
    const first = container.querySelector('.chart-plot');
    return Math.max(240, (first?.clientWidth ?? 320) - 2);
  };
  new ResizeObserver(() => {
    const w = width();
    for (const c of cards.values()) c.plot?.setSize({ width: w, height: HEIGHT });
  }).observe(container);

  /** The `since` to ask for: the last second already held. */
  function since() {
    return lastToS;
  }

  /** Merges one /api/dashboard `stats` answer. */
  function update(stats, describe) {
    windowS = stats.windowS;
    if (lastToS !== undefined && stats.fromS !== lastToS + 1 && stats.toS >= stats.fromS) {
      // A gap (the tab slept longer than the window): start again from this full answer.
      xs = [];
      columns.clear();
    }
    const added = Math.max(0, stats.toS - stats.fromS + 1);
    for (let s = stats.fromS; s <= stats.toS; s++) xs.push(s);
    for (const col of columns.values()) col.seen = false;
    for (const r of stats.rules) {
      const id = `${r.domain}\u0000${r.rule}`;
      let col = columns.get(id);
      if (col === undefined) {
        const pad = () => new Array(xs.length - added).fill(0);
        col = {
          allowed: pad(),
          over: pad(),
          shadow: pad(),
          near: pad(),
          totals: r.totals,
          domain: r.domain,
          rule: r.rule,
        };
        columns.set(id, col);
      }
      col.seen = true;
      col.totals = r.totals;
      for (let i = 0; i < added; i++) {
        col.allowed.push((r.counts.ok[i] ?? 0) + (r.counts.near_limit[i] ?? 0));
        col.near.push(r.counts.near_limit[i] ?? 0);
        col.over.push(r.counts.over_limit[i] ?? 0);
        col.shadow.push(r.counts.shadow[i] ?? 0);
      }
    }
    for (const [id, col] of columns) {
      if (col.seen) continue;
      // The server forgot the rule (idle for a whole window): drop it here too.
      columns.delete(id);
    }
    const drop = Math.max(0, xs.length - windowS);
    if (drop > 0) {
      xs = xs.slice(drop);
      for (const col of columns.values()) {
        for (const k of ['allowed', 'over', 'shadow', 'near']) col[k] = col[k].slice(drop);
      }
    }
    if (stats.toS >= stats.fromS) lastToS = stats.toS;
    render(describe);
  }

  function render(describe) {
    empty.hidden = columns.size > 0;
    for (const [id, c] of cards) {
      if (columns.has(id)) continue;
      c.plot?.destroy();
      c.card.remove();
      cards.delete(id);
    }
    const ordered = [...columns.entries()].sort((a, b) => describe.order(a[1]) - describe.order(b[1]));
    for (const [id, col] of ordered) {
      let c = cards.get(id);
      if (c === undefined) {
        c = createCard(col);
        cards.set(id, c);
      }
      container.append(c.card); // keeps config order, moving only what moved
      const label = describe.label(col);
      setText(c.title, label.title);
      setText(c.subtitle, label.subtitle);
      const last = col.allowed.length - 1;
      setText(c.counters.allowedNow, fmtRate(col.allowed[last] ?? 0));
      setText(c.counters.overNow, fmtRate(col.over[last] ?? 0));
      setText(c.counters.shadowNow, fmtRate(col.shadow[last] ?? 0));
      setText(c.counters.allowedTotal, fmtInt(col.totals.ok + col.totals.near_limit));
      setText(c.counters.overTotal, fmtInt(col.totals.over_limit));
      setText(c.counters.shadowTotal, fmtInt(col.totals.shadow));
      c.counters.shadow.hidden = col.totals.shadow === 0;
      const data = [xs, col.allowed, col.over, col.shadow];
      if (c.plot === undefined) c.plot = createPlot(c.card.querySelector('.chart-plot'), data);
      else c.plot.setData(data);
    }
  }

  function createCard(col) {
    const counter = (testid) => h('b', { dataset: { testid } });
    const counters = {
      allowedNow: counter('allowed-now'),
      overNow: counter('over-now'),
      shadowNow: counter('shadow-now'),
      allowedTotal: counter('allowed-total'),
      overTotal: counter('over-total'),
      shadowTotal: counter('shadow-total'),
    };
    // The shadow figures show only for rules that produce shadow decisions.
    counters.shadow = h(
      'span',
      { class: 'counter shadow' },
      h('span', { class: 'dot' }),
      counters.shadowNow,
      '/s shadow ',
      h('span', { class: 'muted' }, '(', counters.shadowTotal, ')'),
    );
    const title = h('h3', { class: 'chart-title' });
    const subtitle = h('p', { class: 'chart-subtitle muted' });
    const card = h(
      'article',
      { class: 'chart-card', dataset: { testid: 'chart-card', domain: col.domain, rule: col.rule } },
      h('header', {}, title, subtitle),
      h(
        'p',
        { class: 'counters', title: 'now: the last complete second · in brackets: the last 5 minutes' },
        h(
          'span',
          { class: 'counter ok' },
          h('span', { class: 'dot' }),
          counters.allowedNow,
          '/s allowed ',
          h('span', { class: 'muted' }, '(', counters.allowedTotal, ')'),
        ),
        h(
          'span',
          { class: 'counter over' },
          h('span', { class: 'dot' }),
          counters.overNow,
          '/s over limit ',
          h('span', { class: 'muted' }, '(', counters.overTotal, ')'),
        ),
        counters.shadow,
      ),
      h('div', { class: 'chart-plot' }),
    );
    container.append(card);
    return { card, plot: undefined, counters, title, subtitle };
  }

  function createPlot(target, data) {
    const axis = {
      stroke: COLORS.axis,
      grid: { stroke: COLORS.grid, width: 1 },
      ticks: { show: false },
      font: '11px system-ui, sans-serif',
    };
    return new uPlot(
      {
        width: width(),
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: false, y: false }, points: { size: 5 } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
        series: [
          {},
          { label: 'allowed', stroke: COLORS.ok, fill: 'rgba(43,138,62,0.10)', width: 1.5, points: { show: false } },
          {
            label: 'over limit',
            stroke: COLORS.over,
            fill: 'rgba(224,49,49,0.10)',
            width: 1.5,
            points: { show: false },
          },
          { label: 'shadow', stroke: COLORS.shadow, width: 1.5, dash: [4, 3], points: { show: false } },
        ],
        axes: [
          { ...axis, space: 80, values: (_u, ticks) => ticks.map((t) => fmtClock(t * 1000)) },
          { ...axis, size: 42, values: (_u, ticks) => ticks.map((t) => fmtRate(t)) },
        ],
      },
      data,
      target,
    );
  }

  /** Decisions in the last complete second, over every rule: [allowed, over limit, shadow]. */
  function lastSecond() {
    let allowed = 0;
    let over = 0;
    let shadow = 0;
    for (const col of columns.values()) {
      allowed += col.allowed.at(-1) ?? 0;
      over += col.over.at(-1) ?? 0;
      shadow += col.shadow.at(-1) ?? 0;
    }
    return { allowed, over, shadow };
  }

  /** Per-rule decisions in the last complete second, by `domain\0rule`. */
  function nowOf(domain, rule) {
    const col = columns.get(`${domain}\u0000${rule}`);
    if (col === undefined) return undefined;
    return { allowed: col.allowed.at(-1) ?? 0, over: col.over.at(-1) ?? 0, shadow: col.shadow.at(-1) ?? 0 };
  }

  return { since, update, lastSecond, nowOf };
}
