/** The simulator's summary table, as data and as text. */
import type { AlgorithmRun, SimulationResult } from './engine.js';
import { formatDuration, formatPercent, round } from './format.js';

/** One row of the summary table, as plain data (what `--json` prints). */
export interface SummaryRow {
  readonly algorithm: string;
  readonly admitted: number;
  readonly rejected: number;
  /** Most units admitted in any window of one period. */
  readonly peak: number;
  /** `peak / limit`. */
  readonly peakRatio: number;
  /** Leaky bucket: the peak counted when requests leave the queue. */
  readonly shapedPeak?: number;
  /** Sliding window: how often it decided differently from an exact sliding log. */
  readonly exact?: { wronglyAllowed: number; wronglyRejected: number; total: number; errorRate: number };
}

/** The whole summary, as plain data. */
export interface Summary {
  readonly trace: string;
  readonly requests: number;
  readonly spanMs: number;
  readonly limit: number;
  readonly periodMs: number;
  readonly burst: number;
  readonly rows: readonly SummaryRow[];
}

/** Summarises a simulation as plain data. */
export function summarize(result: SimulationResult): Summary {
  const events = result.trace.events;
  const first = events[0]?.atMs ?? 0;
  const last = events[events.length - 1]?.atMs ?? 0;
  return {
    trace: result.trace.name,
    requests: events.length,
    spanMs: last - first,
    limit: result.limit,
    periodMs: result.periodMs,
    burst: result.burst,
    rows: result.runs.map(rowOf),
  };
}

function rowOf(run: AlgorithmRun): SummaryRow {
  return {
    algorithm: run.algorithm,
    admitted: run.admitted,
    rejected: run.rejected,
    peak: run.peak.units,
    peakRatio: run.policy.limit === 0 ? 0 : round(run.peak.units / run.policy.limit, 3),
    ...(run.shapedPeak === undefined ? {} : { shapedPeak: run.shapedPeak.units }),
    ...(run.exact === undefined ? {} : { exact: { ...run.exact } }),
  };
}

/** One line saying what was simulated. */
export function describe(summary: Summary): string {
  const burst = summary.burst !== summary.limit ? ` (burst ${summary.burst} for the buckets)` : '';
  return `${summary.trace} trace: ${summary.requests} requests over ${formatDuration(summary.spanMs)}; limit ${summary.limit} per ${formatDuration(summary.periodMs)}${burst}`;
}

/** The summary's cells, one array per row, header first. */
export function tableCells(summary: Summary): string[][] {
  const header = ['algorithm', 'admitted', 'rejected', 'most admitted in one period', 'vs exact sliding log'];
  const rows = summary.rows.map((r) => [
    r.algorithm,
    String(r.admitted),
    String(r.rejected),
    `${r.peak} (${r.peakRatio}× limit)${r.shapedPeak === undefined ? '' : `; ${r.shapedPeak} leaving the queue`}`,
    r.exact === undefined
      ? '—'
      : `${formatPercent(r.exact.errorRate)} wrong (${r.exact.wronglyAllowed} allowed, ${r.exact.wronglyRejected} rejected)`,
  ]);
  return [header, ...rows];
}

/** The summary as a Markdown table, readable in a terminal and pasteable into docs. */
export function formatTable(summary: Summary): string {
  const cells = tableCells(summary);
  const widths = (cells[0] as string[]).map((_, c) => Math.max(...cells.map((row) => (row[c] as string).length)));
  const numeric = [false, true, true, false, false];
  const line = (row: string[]) =>
    `| ${row.map((cell, c) => (numeric[c] ? cell.padStart(widths[c] as number) : cell.padEnd(widths[c] as number))).join(' | ')} |`;
  const rule = `|${widths.map((w, c) => (numeric[c] ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  const [header, ...rows] = cells;
  return [describe(summary), '', line(header as string[]), rule, ...rows.map(line)].join('\n');
}
