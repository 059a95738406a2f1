/** The report of `sluice simulate --overload`: a text table (with the limit over time as a sparkline) and an SVG chart. */
import { escapeXml, formatDuration } from './format.js';
import type { OverloadOptions, OverloadRow } from './overload.js';

const BARS = '▁▂▃▄▅▆▇█';

/** The limit over time in `width` characters, scaled to the row's own largest limit. */
function sparkline(row: OverloadRow, width: number): string {
  const points = row.timeline;
  const max = Math.max(1, ...points.map((p) => p.limit));
  let line = '';
  for (let i = 0; i < width; i++) {
    const p = points[Math.floor((i / width) * points.length)];
    line += BARS[Math.min(BARS.length - 1, Math.floor(((p?.limit ?? 0) / max) * BARS.length))];
  }
  return line;
}

const pct = (x: number) => (Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)} %`);

/** The table as text. */
export function formatOverloadTable(o: OverloadOptions, rows: readonly OverloadRow[]): string {
  const head = [
    'limiter',
    'goodput before',
    'goodput after',
    'critical ok before',
    'critical ok after',
    'limit settles',
    'final limit',
    'limit over time',
  ];
  const body = rows.map((r) => [
    r.name,
    pct(r.goodput[0]),
    pct(r.goodput[1]),
    pct(r.criticalOk[0]),
    pct(r.criticalOk[1]),
    r.name === 'no limiter' ? '-' : r.settleMs === undefined ? 'never' : `${formatDuration(r.settleMs)}`,
    r.name === 'no limiter' ? '-' : String(r.timeline[r.timeline.length - 1]?.limit ?? '-'),
    r.name === 'no limiter' ? '' : sparkline(r, 40),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  const intro =
    `A service of ${o.capacity} requests at once × ${o.serviceMs} ms, offered ${o.load}× its capacity ` +
    `(${Math.round(o.critical * 100)} % critical) for ${formatDuration(o.durationMs)}; its service time ×${o.slowdown} ` +
    `after ${formatDuration(o.durationMs / 2)}. Goodput: requests done within 10× the service time, as a share of capacity.`;
  return [intro, '', line(head), ...body.map(line)].join('\n');
}

/** The limit of each limiter over time, as one SVG chart. */
export function renderOverloadSvg(o: OverloadOptions, rows: readonly OverloadRow[]): string {
  const W = 760;
  const H = 320;
  const pad = { left: 52, right: 130, top: 40, bottom: 36 };
  const limited = rows.filter((r) => r.name !== 'no limiter');
  const max = Math.max(1, ...limited.flatMap((r) => r.timeline.map((p) => p.limit)));
  const x = (ms: number) => pad.left + (ms / o.durationMs) * (W - pad.left - pad.right);
  const y = (v: number) => H - pad.bottom - (v / max) * (H - pad.top - pad.bottom);
  const colors = ['#1a202c', '#2f855a', '#2b6cb0', '#805ad5'];
  const lines = limited.map((r, i) => {
    const points = r.timeline.map((p) => `${x(p.atMs).toFixed(1)},${y(p.limit).toFixed(1)}`).join(' ');
    const color = colors[i % colors.length] as string;
    return (
      `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points}"/>` +
      `<text x="${W - pad.right + 8}" y="${pad.top + 16 * i}" fill="${color}" font-size="12">${escapeXml(r.name)}</text>`
    );
  });
  const change = x(o.durationMs / 2);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif">`,
    `<text x="${pad.left}" y="20" font-size="14">Concurrency limit over time (service ×${o.slowdown} slower at the dashed line)</text>`,
    `<line x1="${change}" x2="${change}" y1="${pad.top}" y2="${H - pad.bottom}" stroke="#e53e3e" stroke-dasharray="4 3"/>`,
    `<text x="${pad.left - 6}" y="${y(max) + 4}" font-size="11" text-anchor="end">${max}</text>`,
    `<text x="${pad.left - 6}" y="${y(0) + 4}" font-size="11" text-anchor="end">0</text>`,
    `<text x="${W - pad.right}" y="${H - 12}" font-size="11" text-anchor="end">${escapeXml(formatDuration(o.durationMs))}</text>`,
    ...lines,
    '</svg>',
  ].join('\n');
}
