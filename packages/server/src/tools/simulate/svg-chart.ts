/** SVG charts of simulated runs (admitted and rejected over time), without a charting library. */
import type { AlgorithmRun, SimulationResult } from './engine.js';
import { escapeXml, formatDuration, niceStep, round } from './format.js';
import { type RunSeries, seriesOf } from './series.js';

/** Size and colours of a chart. */
const W = 760;
const LEFT = 52;
const RIGHT = 64;
const PLOT_W = W - LEFT - RIGHT;
const TOP = 50;
const BARS_H = 120;
const GAP = 34;
const LINE_H = 100;
const AXIS_H = 26;
const LEGEND_H = 26;
/** Height of one algorithm's chart. */
export const CHART_HEIGHT = TOP + BARS_H + GAP + LINE_H + AXIS_H + LEGEND_H;

const COLOR = {
  admitted: '#2f855a',
  rejected: '#e53e3e',
  trailing: '#2b6cb0',
  shaped: '#805ad5',
  limit: '#1a202c',
  grid: '#e2e8f0',
  text: '#2d3748',
  muted: '#718096',
};

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

/**
 * Draws one algorithm's run as a standalone SVG document (plain SVG, no scripts, no external
 * references): requests admitted and rejected per bin on top; below, the units admitted in the
 * trailing period against the limit, which is where a fixed window's 2 × limit shows.
 */
export function renderRunSvg(result: SimulationResult, run: AlgorithmRun): string {
  return svgDocument(W, CHART_HEIGHT, titleOf(result, run), chartBody(result, run));
}

/** Draws every run of a simulation as one SVG, the charts stacked top to bottom. */
export function renderSimulationSvg(result: SimulationResult): string {
  const body = result.runs
    .map((run, i) => `<g transform="translate(0 ${i * CHART_HEIGHT})">\n${chartBody(result, run)}\n</g>`)
    .join('\n');
  const title = `${result.trace.name} trace through ${result.runs.map((r) => r.algorithm).join(', ')}`;
  return svgDocument(W, CHART_HEIGHT * result.runs.length, title, body);
}

function svgDocument(width: number, height: number, title: string, body: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" ${FONT} font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    body,
    '</svg>',
    '',
  ].join('\n');
}

function titleOf(result: SimulationResult, run: AlgorithmRun): string {
  return `${run.algorithm} on the ${result.trace.name} trace, limit ${result.limit} per ${formatDuration(result.periodMs)}`;
}

function policyText(result: SimulationResult, run: AlgorithmRun): string {
  const burst = run.policy.burst !== run.policy.limit ? `, burst ${run.policy.burst}` : '';
  return `limit ${result.limit} per ${formatDuration(result.periodMs)}${burst}`;
}

function chartBody(result: SimulationResult, run: AlgorithmRun): string {
  const s = seriesOf(result, run);
  const bins = s.admitted.length;
  const binW = PLOT_W / bins;
  const x = (b: number) => LEFT + b * binW;
  const parts: string[] = [];

  const peakTimes = round(run.peak.units / Math.max(1, result.limit), 2);
  parts.push(
    `<text x="${LEFT}" y="20" font-size="15" font-weight="600" fill="${COLOR.text}">${escapeXml(run.algorithm)}</text>`,
    `<text x="${LEFT}" y="38" fill="${COLOR.muted}">${escapeXml(
      `${result.trace.name} trace, ${policyText(result, run)}: ${run.admitted} admitted, ${run.rejected} rejected, ` +
        `peak ${run.peak.units} in one period (${peakTimes}× limit)`,
    )}</text>`,
  );

  // Top panel: requests per bin, admitted stacked under rejected.
  const perBin = Math.max(1, ...s.admitted.map((a, b) => a + (s.rejected[b] as number)));
  const barStep = niceStep(perBin);
  const barMax = Math.ceil(perBin / barStep) * barStep;
  const yBar = (v: number) => TOP + BARS_H - (v / barMax) * BARS_H;
  parts.push(...gridY(barMax, barStep, yBar));
  parts.push(...periodLines(result, s, TOP, TOP + BARS_H + GAP + LINE_H));
  const gap = binW > 3 ? 1 : 0;
  const bars: string[] = [];
  s.admitted.forEach((a, b) => {
    const r = s.rejected[b] as number;
    const w = round(Math.max(0.5, binW - gap), 2);
    if (a > 0) bars.push(rect(x(b), yBar(a), w, yBar(0) - yBar(a), COLOR.admitted));
    if (r > 0) bars.push(rect(x(b), yBar(a + r), w, yBar(a) - yBar(a + r), COLOR.rejected));
  });
  parts.push(`<g>${bars.join('')}</g>`);
  parts.push(
    `<text x="12" y="${TOP + BARS_H / 2}" fill="${COLOR.muted}" transform="rotate(-90 12 ${TOP + BARS_H / 2})" text-anchor="middle">per ${escapeXml(formatDuration(s.binMs))}</text>`,
  );

  // Bottom panel: admitted in the trailing period, against the limit.
  const lineTop = TOP + BARS_H + GAP;
  const highest = Math.max(result.limit * 1.25, ...s.trailing, ...(s.shapedTrailing ?? []));
  const lineStep = niceStep(highest);
  const lineMax = Math.ceil(highest / lineStep) * lineStep;
  const yLine = (v: number) => lineTop + LINE_H - (v / lineMax) * LINE_H;
  parts.push(...gridY(lineMax, lineStep, yLine));
  parts.push(
    `<text x="12" y="${lineTop + LINE_H / 2}" fill="${COLOR.muted}" transform="rotate(-90 12 ${lineTop + LINE_H / 2})" text-anchor="middle">in last ${escapeXml(formatDuration(result.periodMs))}</text>`,
  );
  const limitY = round(yLine(result.limit), 1);
  parts.push(
    `<line x1="${LEFT}" y1="${limitY}" x2="${LEFT + PLOT_W}" y2="${limitY}" stroke="${COLOR.limit}" stroke-width="1.2" stroke-dasharray="6 4"/>`,
  );
  if (s.shapedTrailing !== undefined) {
    parts.push(stepPath(s.shapedTrailing, x, yLine, COLOR.shaped, ' stroke-dasharray="4 3"'));
  }
  parts.push(stepPath(s.trailing, x, yLine, COLOR.trailing, ''));
  // In the right margin, where no data is drawn.
  parts.push(
    `<text x="${LEFT + PLOT_W + 6}" y="${limitY + 4}" fill="${COLOR.limit}" font-weight="600">limit ${result.limit}</text>`,
  );
  // Mark the peak: the number the table reports, where it happened.
  const peakBin = s.trailing.indexOf(Math.max(...s.trailing));
  if (peakBin >= 0 && run.peak.units > 0) {
    const px = round(x(peakBin + 0.5), 1);
    const py = round(yLine(s.trailing[peakBin] as number), 1);
    parts.push(
      `<circle cx="${px}" cy="${py}" r="3.5" fill="${COLOR.trailing}"/>`,
      label(px + 6, Math.max(lineTop + 10, py - 6), `peak ${s.trailing[peakBin]}`, COLOR.trailing),
    );
  }

  // Time axis and legend.
  const axisY = lineTop + LINE_H;
  parts.push(
    `<line x1="${LEFT}" y1="${axisY}" x2="${LEFT + PLOT_W}" y2="${axisY}" stroke="${COLOR.muted}"/>`,
    `<line x1="${LEFT}" y1="${TOP + BARS_H}" x2="${LEFT + PLOT_W}" y2="${TOP + BARS_H}" stroke="${COLOR.muted}"/>`,
    ...timeLabels(result, s, axisY + 16),
  );
  parts.push(legend(axisY + AXIS_H + 12, s.shapedTrailing !== undefined));
  return parts.join('\n');
}

/** A label drawn over lines, on a white patch so it stays readable (paint-order halos are not universal). */
function label(x: number, y: number, text: string, color: string, anchor: 'start' | 'end' = 'start'): string {
  const width = text.length * 7 + 6;
  const left = anchor === 'start' ? x - 3 : x - width + 3;
  return (
    `<rect x="${round(left, 1)}" y="${round(y - 11, 1)}" width="${width}" height="15" fill="#ffffff" fill-opacity="0.85"/>` +
    `<text x="${round(x, 1)}" y="${round(y, 1)}" text-anchor="${anchor}" fill="${color}" font-weight="600">${escapeXml(text)}</text>`
  );
}

function rect(x: number, y: number, w: number, h: number, fill: string): string {
  return `<rect x="${round(x, 2)}" y="${round(y, 2)}" width="${w}" height="${round(h, 2)}" fill="${fill}"/>`;
}

function gridY(max: number, step: number, y: (v: number) => number): string[] {
  const out: string[] = [];
  for (let v = 0; v <= max; v += step) {
    const yy = round(y(v), 1);
    out.push(
      `<line x1="${LEFT}" y1="${yy}" x2="${LEFT + PLOT_W}" y2="${yy}" stroke="${COLOR.grid}"/>`,
      `<text x="${LEFT - 6}" y="${yy + 4}" text-anchor="end" fill="${COLOR.muted}">${v}</text>`,
    );
  }
  return out;
}

/** Faint vertical lines at the policy's window boundaries (thinned out on long traces). */
function periodLines(result: SimulationResult, s: RunSeries, top: number, bottom: number): string[] {
  const spanMs = s.binMs * s.admitted.length;
  const every = labelEvery(spanMs / result.periodMs, 40);
  const out: string[] = [];
  for (let k = 0; k * result.periodMs <= spanMs; k += every) {
    const xx = round(LEFT + (k * result.periodMs * PLOT_W) / spanMs, 1);
    out.push(`<line x1="${xx}" y1="${top}" x2="${xx}" y2="${bottom}" stroke="${COLOR.grid}"/>`);
  }
  return out;
}

function timeLabels(result: SimulationResult, s: RunSeries, y: number): string[] {
  const spanMs = s.binMs * s.admitted.length;
  const every = labelEvery(spanMs / result.periodMs, 12);
  // One unit for the whole axis: the largest that writes every label step as a whole number.
  const stepMs = every * result.periodMs;
  let [unitMs, unit] = AXIS_UNITS.find(([size]) => stepMs % size === 0) ?? [1, 'ms'];
  // Unless the numbers get unreadable (a year in seconds): then the largest unit that fits, rounded.
  if (spanMs / unitMs >= 100_000) [unitMs, unit] = AXIS_UNITS.find(([size]) => spanMs / size >= 2) ?? [unitMs, unit];
  const out: string[] = [];
  for (let k = 0; k * result.periodMs <= spanMs; k += every) {
    const xx = round(LEFT + (k * result.periodMs * PLOT_W) / spanMs, 1);
    const label = k === 0 ? '0' : `${round((k * result.periodMs) / unitMs, 1)}${unit}`;
    out.push(`<text x="${xx}" y="${y}" text-anchor="middle" fill="${COLOR.muted}">${escapeXml(label)}</text>`);
  }
  return out;
}

const AXIS_UNITS: readonly [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1000, 's'],
  [1, 'ms'],
];

/** Every how many periods to draw a line or label so that at most `most` appear. */
function labelEvery(periods: number, most: number): number {
  return periods <= most ? 1 : niceStep(periods, most);
}

function stepPath(
  values: readonly number[],
  x: (b: number) => number,
  y: (v: number) => number,
  color: string,
  extra: string,
): string {
  const d: string[] = [];
  values.forEach((v, b) => {
    const yy = round(y(v), 1);
    d.push(`${b === 0 ? 'M' : 'L'}${round(x(b), 1)} ${yy}`, `L${round(x(b + 1), 1)} ${yy}`);
  });
  return `<path d="${d.join(' ')}" fill="none" stroke="${color}" stroke-width="1.6"${extra}/>`;
}

function legend(y: number, shaped: boolean): string {
  const items: [string, string, boolean][] = [
    ['admitted', COLOR.admitted, false],
    ['rejected', COLOR.rejected, false],
    ['admitted in the last period', COLOR.trailing, true],
    ...(shaped ? ([['leaving the queue (after delayMs)', COLOR.shaped, true]] as [string, string, boolean][]) : []),
    ['limit', COLOR.limit, true],
  ];
  let xx = LEFT;
  const out: string[] = [];
  for (const [label, color, isLine] of items) {
    out.push(
      isLine
        ? `<line x1="${xx}" y1="${y - 4}" x2="${xx + 14}" y2="${y - 4}" stroke="${color}" stroke-width="2"${label === 'limit' ? ' stroke-dasharray="4 2"' : ''}/>`
        : `<rect x="${xx}" y="${y - 10}" width="12" height="12" fill="${color}"/>`,
      `<text x="${xx + 18}" y="${y}" fill="${COLOR.text}">${escapeXml(label)}</text>`,
    );
    xx += 26 + label.length * 6.4;
  }
  return out.join('\n');
}
