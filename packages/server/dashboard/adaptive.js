// The adaptive panel: the gateway's adaptive concurrency limit (sluice serve --upstream … --adaptive), from the
// `adaptive` part of GET /api/dashboard; hidden when the gateway runs without it. Per-second rates are the
// difference between two polls, as the page sees them.
import { byId, fmtInt, fmtRate, h, setRows, setText } from './dom.js';

/** The previous poll's counts per priority, for the rates. */
let previous;

/**
 * @param {null | undefined | { algorithm: string, limit: number, inFlight: number, queued: number,
 *   priorities: { name: string, share: number, guaranteed: number, inFlight: number, queued: number,
 *   admitted: number, shed: number }[] }} view
 * @param {number} nowMs the server's time of this answer
 */
export function renderAdaptive(view, nowMs) {
  const panel = byId('adaptive');
  panel.hidden = view === null || view === undefined;
  if (panel.hidden) {
    previous = undefined;
    return;
  }
  setText(byId('adaptive-algorithm'), view.algorithm);
  setText(byId('adaptive-limit'), fmtInt(view.limit));
  setText(byId('adaptive-in-flight'), fmtInt(view.inFlight));
  setText(byId('adaptive-queued'), fmtInt(view.queued));
  const seconds = previous === undefined ? 0 : (nowMs - previous.nowMs) / 1000;
  const rate = (name, field, value) => {
    const before = previous?.counts.get(name)?.[field];
    return seconds > 0 && before !== undefined && value >= before ? fmtRate((value - before) / seconds) : '–';
  };
  setRows(
    byId('adaptive-priorities').querySelector('tbody'),
    view.priorities.map((p) => {
      // Shedding now: more shed than at the previous poll.
      const shedding = p.shed > (previous?.counts.get(p.name)?.shed ?? p.shed);
      return h(
        'tr',
        { dataset: { testid: 'adaptive-row', priority: p.name, shedding: String(shedding) } },
        h('td', {}, h('code', {}, p.name)),
        h('td', { class: 'num' }, `${Math.round(p.share * 100)} %`),
        h('td', { class: 'num' }, fmtInt(p.guaranteed)),
        h('td', { class: 'num', dataset: { testid: 'adaptive-in-flight' } }, fmtInt(p.inFlight)),
        h('td', { class: 'num' }, fmtInt(p.queued)),
        h('td', { class: 'num', dataset: { testid: 'adaptive-admitted' } }, fmtInt(p.admitted)),
        h('td', { class: 'num' }, rate(p.name, 'admitted', p.admitted)),
        h('td', { class: 'num', dataset: { testid: 'adaptive-shed' } }, fmtInt(p.shed)),
        h('td', { class: 'num' }, rate(p.name, 'shed', p.shed)),
      );
    }),
  );
  previous = { nowMs, counts: new Map(view.priorities.map((p) => [p.name, { admitted: p.admitted, shed: p.shed }])) };
}
