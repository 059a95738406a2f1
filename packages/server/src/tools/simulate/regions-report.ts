/** The multi-region simulation's table and description. */
import { escapeXml, formatDuration, niceStep, round } from './format.js';
import type { RegionModeRun, RegionSimulationResult } from './regions.js';

/** A line describing the run, for the table's heading and the chart's title. */
export function describeRegions(r: RegionSimulationResult): string {
  return (
    `${r.trace.name} trace split ${r.split} over ${r.regions.length} regions (${r.regions.join(', ')}), ` +
    `${r.algorithm} ${r.limit} per ${formatDuration(r.periodMs)}, ${formatDuration(r.latencyMs)} one way, ` +
    `sync every ${formatDuration(r.syncIntervalMs)}`
  );
}

/** The rows of the accuracy table: header first. */
export function regionsTableCells(r: RegionSimulationResult): string[][] {
  const header = [
    'mode',
    'admitted',
    'most in a window',
    'max over',
    'mean over',
    'admitted / limit (windows offered ≥ limit)',
    'stated bound per window',
    'replication lag, max',
  ];
  const rows = r.runs.map((run) =>
    run.skipped !== undefined
      ? [run.mode, `skipped: ${run.skipped}`, '', '', '', '', '', '']
      : [
          run.mode,
          String(run.admitted),
          String(run.maxPerWindow),
          String(run.maxOver),
          run.meanOver === null ? '— (bucket: over burst + rate × time)' : String(round(run.meanOver, 1)),
          `${round(100 * run.useOfLimit, 1)} %`,
          boundOf(run, r.limit),
          run.maxLagMs === undefined ? `${formatDuration(r.latencyMs)} (one way)` : `${formatDuration(run.maxLagMs)}`,
        ],
  );
  return [header, ...rows];
}

function boundOf(run: RegionModeRun, limit: number): string {
  if (run.mode === 'escrow') return `${limit} (never over)`;
  if (run.statedBound !== undefined) return String(run.statedBound);
  return 'none stated';
}

/** The accuracy table as Markdown (it reads as plain text too), with the run described above it. */
export function formatRegionsTable(r: RegionSimulationResult): string {
  const cells = regionsTableCells(r);
  const line = (row: readonly string[]) => `| ${row.join(' | ')} |`;
  const [header, ...rows] = cells;
  return [
    describeRegions(r),
    '',
    line(header ?? []),
    line((header ?? []).map(() => '---')),
    ...rows.map(line),
    '',
  ].join('\n');
}

const COLORS: Record<string, string> = { eventual: '#dd6b20', escrow: '#2b6cb0', 'write-to-all': '#718096' };

/** An SVG chart: units admitted per window for each mode, the limit as a dashed line. */
export function renderRegionsSvg(r: RegionSimulationResult): string {
  const W = 760;
  const H = 320;
  const left = 48;
  const right = 150;
  const top = 40;
  const bottom = 40;
  const runs = r.runs.filter((run) => run.skipped === undefined);
  const windows = Math.max(1, ...runs.map((run) => run.perWindow.length));
  const yMax = Math.max(r.limit * 1.25, ...runs.map((run) => run.maxPerWindow)) || 1;
  const x = (w: number) => left + ((w + 0.5) / windows) * (W - left - right);
  const y = (v: number) => top + (1 - v / yMax) * (H - top - bottom);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${left}" y="16" font-size="12" font-weight="600">${escapeXml(`Admitted per window vs the limit — ${r.trace.name}, split ${r.split}`)}</text>`,
    `<text x="${left}" y="30" fill="#4a5568">${escapeXml(describeRegions(r))}</text>`,
  );
  const step = niceStep(yMax, 4);
  for (let v = 0; v <= yMax; v += step) {
    parts.push(
      `<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#edf2f7"/>`,
      `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end" fill="#4a5568">${v}</text>`,
    );
  }
  parts.push(
    `<line x1="${left}" x2="${W - right}" y1="${y(r.limit)}" y2="${y(r.limit)}" stroke="#c53030" stroke-dasharray="5 4"/>`,
    `<text x="${W - right + 6}" y="${y(r.limit) + 4}" fill="#c53030">limit ${r.limit}</text>`,
  );
  const labelEvery = Math.max(1, Math.ceil(windows / 12));
  for (let w = 0; w < windows; w += labelEvery) {
    parts.push(`<text x="${x(w)}" y="${H - bottom + 14}" text-anchor="middle" fill="#4a5568">${w + 1}</text>`);
  }
  parts.push(`<text x="${(left + W - right) / 2}" y="${H - 8}" text-anchor="middle" fill="#4a5568">window</text>`);
  runs.forEach((run, i) => {
    const color = COLORS[run.mode] ?? '#000';
    const points = run.perWindow.map((v, w) => `${round(x(w), 1)},${round(y(v), 1)}`).join(' ');
    parts.push(`<polyline points="${points}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [w, v] of run.perWindow.entries()) {
      parts.push(`<circle cx="${round(x(w), 1)}" cy="${round(y(v), 1)}" r="2.5" fill="${color}"/>`);
    }
    const ly = top + 14 + i * 16;
    parts.push(
      `<line x1="${W - right + 6}" x2="${W - right + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${W - right + 28}" y="${ly}">${escapeXml(run.mode)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** A self-contained HTML page: the table and the chart. */
export function renderRegionsHtml(r: RegionSimulationResult): string {
  const [header, ...rows] = regionsTableCells(r);
  const th = (header ?? []).map((h) => `<th>${escapeXml(h)}</th>`).join('');
  const tr = rows.map((row) => `<tr>${row.map((c) => `<td>${escapeXml(c)}</td>`).join('')}</tr>`).join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>sluice simulate: regions</title>
<style>body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 820px; } table { border-collapse: collapse; } td, th { border: 1px solid #e2e8f0; padding: 4px 8px; }</style>
</head>
<body>
<h1>sluice simulate: regions</h1>
<p>${escapeXml(describeRegions(r))}</p>
<table><tr>${th}</tr>
${tr}
</table>
<figure>
${renderRegionsSvg(r)}</figure>
</body>
</html>
`;
}
