// Small DOM and formatting helpers. Every value from the server goes through textContent: keys and list
// entries are chosen by clients, so nothing is ever parsed as HTML.

/**
 * Creates an element. `attrs` keys starting with `on` become listeners, `dataset` sets data-*, `class`
 * the class name; children are nodes or text.
 * @param {string} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = String(value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** @param {string} id */
export function byId(id) {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`#${id} is missing from index.html`);
  return el;
}

/** Sets an element's text only when it changed (keeps selections and avoids layout work). */
export function setText(el, text) {
  const value = String(text);
  if (el.textContent !== value) el.textContent = value;
}

/** Replaces a tbody's rows. */
export function setRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** 12,345 */
export function fmtInt(n) {
  return integer.format(n);
}

/** A rate or small quantity: 1 decimal under 10, whole above. */
export function fmtRate(n) {
  return n < 10 ? decimal.format(n) : integer.format(n);
}

/** Milliseconds as a short duration: `850 ms`, `12.5 s`, `4m 05s`, `3h 12m`, `2d 4h`. */
export function fmtDuration(ms) {
  if (!Number.isFinite(ms)) return '∞';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${decimal.format(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** Latency in ms with a sensible precision: `0.04 ms`, `1.3 ms`, `25 ms`. */
export function fmtLatency(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 0.1) return `${ms.toFixed(2)} ms`;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  return `${Math.round(ms)} ms`;
}

/** `3 s ago`, `5 min ago` for an ISO date or epoch ms. */
export function fmtAgo(when, nowMs = Date.now()) {
  const t = typeof when === 'number' ? when : Date.parse(when);
  if (!Number.isFinite(t)) return '';
  const s = Math.max(0, Math.round((nowMs - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} days ago`;
}

/** Local wall-clock time of an ISO date: `14:03:27`. */
export function fmtClock(when) {
  const d = typeof when === 'number' ? new Date(when) : new Date(when);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString([], { hour12: false });
}
