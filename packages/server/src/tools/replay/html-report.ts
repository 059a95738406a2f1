/**
 * `sluice replay --out report.html`: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
 * fetched) with the totals, per-rule charts over time of rejected requests under each side and the flips,
 * the keys that flip most, and the suggested limits.
 */
import { evictionWarning, type ReplayResult, type ReplayTally } from './replay.js';
import { type ReplaySeries, rebin, type SeriesBin } from './replay-series.js';

/** What the report shows besides the replay itself. */
export interface ReplayReportInput {
  readonly result: ReplayResult;
  readonly series: ReplaySeries;
  /** `live` or `baseline`. */
  readonly side: string;
  readonly window: string;
  readonly flipped: readonly (readonly [string, ReplayTally])[];
  readonly problems: number;
}

const W = 720;
const H = 160;
const BINS = 120;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

function polyline(values: readonly number[], max: number, color: string, dash = ''): string {
  const step = values.length > 1 ? W / (values.length - 1) : W;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(H - (v / max) * H).toFixed(1)}`).join(' ');
  return `<polyline fill="none" stroke="${color}" stroke-width="1.5"${dash} points="${points}"/>`;
}

/** A time in seconds as an ISO date; a time no Date holds (the readers refuse those) is shown as a number. */
function isoOf(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? `${seconds} s` : date.toISOString();
}

/** One chart: rejected per bin under the baseline (dashed) and the candidate, flips as bars. */
function chart(title: string, bins: readonly SeriesBin[], fromS: number, toS: number): string {
  const max = Math.max(1, ...bins.map((b) => Math.max(b.rejected, b.baselineRejected, b.flips)));
  const bar = W / Math.max(1, bins.length);
  const flips = bins
    .map((b, i) =>
      b.flips === 0
        ? ''
        : `<rect x="${(i * bar).toFixed(1)}" y="${(H - (b.flips / max) * H).toFixed(1)}" width="${Math.max(1, bar - 1).toFixed(1)}" height="${((b.flips / max) * H).toFixed(1)}" fill="#f4b183"/>`,
    )
    .join('');
  const from = isoOf(fromS);
  const to = isoOf(toS);
  return `<figure><figcaption>${escapeHtml(title)}</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 -10 ${W} ${H + 30}" width="${W}" height="${H + 40}" role="img">
<line x1="0" y1="${H}" x2="${W}" y2="${H}" stroke="#999"/>${flips}
${polyline(
  bins.map((b) => b.baselineRejected),
  max,
  '#555',
  ' stroke-dasharray="4 3"',
)}${polyline(
  bins.map((b) => b.rejected),
  max,
  '#c00',
)}
<text x="0" y="${H + 16}" font-size="11">${from}</text><text x="${W}" y="${H + 16}" font-size="11" text-anchor="end">${to}</text>
<text x="0" y="0" font-size="11">max ${max} per bin</text></svg></figure>`;
}

const row = (name: string, t: ReplayTally) =>
  `<tr><td>${escapeHtml(name)}</td><td>${t.baselineAdmitted}</td><td>${t.baselineRejected}</td><td>${t.admitted}</td><td>${t.rejected}</td><td>+${t.newlyRejected}</td><td>-${t.newlyAdmitted}</td></tr>`;

function table(side: string, rows: string): string {
  return `<table><tr><th></th><th>${side} admitted</th><th>${side} rejected</th><th>candidate admitted</th><th>candidate rejected</th><th>newly rejected</th><th>newly admitted</th></tr>${rows}</table>`;
}

/** The warning that the outcomes are not exact: counters were forgotten (see ReplayResult.evictions). */
const evictions = (n: number) =>
  n === 0 ? '' : `<p style="color:#c00;font-weight:600">${escapeHtml(evictionWarning(n))}.</p>\n`;

/** The report as one HTML document. */
export function renderReplayHtml(input: ReplayReportInput): string {
  const { result, series, side } = input;
  const seconds = [...series.total.keys()];
  const fromS = seconds.length === 0 ? 0 : Math.min(...seconds);
  const toS = seconds.length === 0 ? 0 : Math.max(...seconds);
  const charts = [chart('all requests', rebin(series.total, fromS, toS, BINS), fromS, toS)];
  for (const [rule, s] of series.byRule) charts.push(chart(`rule ${rule}`, rebin(s, fromS, toS, BINS), fromS, toS));
  const rules = [row('(all)', result.total), ...[...result.byRule].map(([n, t]) => row(n, t))].join('');
  const keys = input.flipped.map(([k, t]) => row(k, t)).join('');
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const suggestions = [...result.recommendations]
    .flatMap(([rule, rec]) => {
      const names = [...(result.ruleNames.get(rule) ?? [])].join(', ');
      const title = `${escapeHtml(rule)}${names === '' ? '' : ` (${escapeHtml(names)})`}`;
      return rec.suggestions.map(
        (s, i) =>
          `<tr><td>${i === 0 ? `${title}<br>${rec.keys} keys, ${rec.units} requests` : ''}</td><td>${s.percentile}</td><td>${s.limit}</td><td>${pct(s.keysRejected)}</td><td>${pct(s.requestsRejected)}</td></tr>`,
      );
    })
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sluice replay</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}figure{margin:1em 0}
figcaption{font-weight:600}</style></head><body>
<h1>sluice replay</h1>
${evictions(result.evictions)}<p>${result.requests} requests replayed${input.problems > 0 ? `, ${input.problems} bad lines skipped` : ''}. Charts: rejected per time bin under the ${side} (dashed) and the candidate (red); flips as orange bars.</p>
<h2>Per rule</h2>${table(side, rules)}
<h2>Over time</h2>${charts.join('\n')}
<h2>Keys that flip (${input.flipped.length} shown)</h2>${table(side, keys)}
<h2>Suggested limits per ${escapeHtml(input.window)}</h2><p>Per rule, from the per-key peaks of the keys it counted.</p>
<table><tr><th>rule</th><th>percentile</th><th>limit</th><th>keys refused</th><th>requests refused</th></tr>${suggestions}</table>
</body></html>
`;
}
