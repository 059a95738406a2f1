/** Reads a CSV trace (time, cost) for `sluice simulate`, reporting bad lines. */
import { SluiceError } from 'sluice';
import type { Trace, TraceEvent } from './trace.js';

/** One bad line of a CSV trace. */
export interface TraceProblem {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly message: string;
}

/** A CSV trace that could not be read; `problems` lists every bad line, in order. */
export class TraceParseError extends SluiceError {
  readonly problems: readonly TraceProblem[];

  constructor(source: string, problems: readonly TraceProblem[]) {
    const shown = problems.slice(0, MAX_SHOWN).map((p) => `  ${source}:${p.line}: ${p.message}`);
    if (problems.length > MAX_SHOWN) shown.push(`  ... and ${problems.length - MAX_SHOWN} more`);
    const first = problems[0];
    super(
      'ERR_SLUICE_INVALID_TRACE',
      `${source}: ${problems.length === 1 ? '1 bad line' : `${problems.length} bad lines`}\n${shown.join('\n')}`,
      first === undefined ? undefined : { option: `${source}:${first.line}` },
    );
    this.problems = problems;
  }
}

const MAX_SHOWN = 20;
const HEADER_FIELD = /^[A-Za-z_][\w .-]*$/;
const NUMBER = /^\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;

/**
 * Reads a trace from CSV text: one request per line, `timestamp[,cost]`.
 *
 * - `timestamp`: milliseconds (since the epoch, or since any origin; fractions are dropped) or an ISO 8601
 *   date such as `2024-05-01T12:00:00.250Z`.
 * - `cost`: units the request takes, a whole number ≥ 0. @default 1
 * - An optional header line (`timestamp,cost`), blank lines and `#` comments are skipped.
 * - Lines need not be in order: the trace is sorted by time.
 *
 * @param source - the file name, used in error messages.
 * @throws TraceParseError (`ERR_SLUICE_INVALID_TRACE`) listing every bad line as `source:line: why`.
 * @example parseCsvTrace('timestamp,cost\n0\n250,2\n', 'trace.csv').events.length // 2
 */
export function parseCsvTrace(text: string, source = 'trace.csv'): Trace {
  const events: TraceEvent[] = [];
  const problems: TraceProblem[] = [];
  const lines = text.split(/\r?\n/);
  let seenData = false;
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const content = raw.trim();
    if (content === '' || content.startsWith('#')) return;
    const fields = content.split(',').map(unquote);
    if (!seenData) {
      seenData = true;
      if (fields.every((f) => HEADER_FIELD.test(f)) && Number.isNaN(Date.parse(fields[0] as string))) return;
    }
    if (fields.length > 2) {
      problems.push({ line: lineNo, message: `expected 'timestamp[,cost]', found ${fields.length} fields` });
      return;
    }
    const atMs = parseTimestamp(fields[0] as string);
    if (typeof atMs === 'string') {
      problems.push({ line: lineNo, message: atMs });
      return;
    }
    const costField = fields[1];
    let cost = 1;
    if (costField !== undefined) {
      if (!WHOLE.test(costField) || !Number.isSafeInteger(Number(costField))) {
        problems.push({ line: lineNo, message: `cost '${costField}' is not a whole number ≥ 0` });
        return;
      }
      cost = Number(costField);
    }
    events.push({ atMs, cost });
  });
  if (problems.length > 0) throw new TraceParseError(source, problems);
  if (events.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_TRACE', `${source}: no requests in the trace (one timestamp per line)`, {
      option: source,
    });
  }
  // Logs are often merged from several sources; sort rather than reject (the sort is stable).
  events.sort((a, b) => a.atMs - b.atMs);
  return { name: source, events };
}

function unquote(field: string): string {
  const f = field.trim();
  return f.length >= 2 && f.startsWith('"') && f.endsWith('"') ? f.slice(1, -1).trim() : f;
}

/** Milliseconds, or a message saying why the field is not a timestamp. */
function parseTimestamp(field: string): number | string {
  if (field === '') return 'empty timestamp';
  if (NUMBER.test(field)) {
    const ms = Math.floor(Number(field));
    return Number.isSafeInteger(ms) ? ms : `timestamp '${field}' is too large`;
  }
  // ISO dates only: Date.parse also accepts loose forms ("1 2 3") that are more likely typos.
  if (/^\d{4}-\d{2}-\d{2}/.test(field)) {
    const ms = Date.parse(field);
    if (!Number.isNaN(ms) && ms >= 0) return ms;
  }
  return `'${field}' is not a timestamp (milliseconds ≥ 0 or an ISO 8601 date)`;
}
