/**
 * One captured decision as an NDJSON line, and the reader `sluice replay` uses: bad lines (truncated, corrupt, of the
 * wrong shape, too long) are reported with their line number and skipped; the rest is read on.
 */

import { CHECK_POLICY_FIELDS } from '../../observability/capture/capture-recorder.js';

/** One descriptor entry, as envoy ratelimit's `/json` body spells it. */
export interface CaptureEntry {
  readonly key: string;
  readonly value: string;
}

/** One captured decision. */
export interface CaptureRecord {
  /** The server's clock when it decided, in ms since the epoch. */
  readonly t: number;
  readonly domain: string;
  /** The request's descriptors, each a list of entries (envoy's `/json` shape). */
  readonly descriptors: readonly { readonly entries: readonly CaptureEntry[] }[];
  /** Units the request cost (hits_addend). @default 1 */
  readonly cost: number;
  /** What was decided live: `'OK'` or `'OVER_LIMIT'` (envoy's codes). */
  readonly outcome: 'OK' | 'OVER_LIMIT';
}

/** A `/v1/check` item as captured: its key (hashed unless raw keys) and the policy fields it was sent with. */
export interface CapturedCheck {
  readonly key: string;
  readonly [field: string]: string | number;
}

/** One captured `/v1/check` decision: the item's own policy decided it, not a rule. */
export interface CheckRecord {
  readonly t: number;
  readonly check: CapturedCheck;
  readonly cost: number;
  readonly outcome: 'OK' | 'OVER_LIMIT';
}

/** Any line of a capture: a descriptor record (gRPC, `/json`, the gateway) or a `/v1/check` record. */
export type ReplayRecord = CaptureRecord | CheckRecord;

/** True for a `/v1/check` record. */
export const isCheckRecord = (record: ReplayRecord): record is CheckRecord => 'check' in record;

/** One line that could not be read. */
export interface CaptureProblem {
  readonly source: string;
  /** 1-based. */
  readonly line: number;
  readonly message: string;
}

/** The longest line read: a longer one is a corrupt file (or not a capture), reported and skipped. */
export const MAX_CAPTURE_LINE = 64 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The entries of one descriptor as JSON gave it, checked; undefined when it is not a list of string pairs. */
export function entriesOf(d: unknown): CaptureEntry[] | undefined {
  if (!isObject(d) || !Array.isArray(d.entries) || d.entries.length === 0) return undefined;
  const entries: CaptureEntry[] = [];
  for (const e of d.entries) {
    if (!isObject(e) || typeof e.key !== 'string' || typeof e.value !== 'string') return undefined;
    entries.push({ key: e.key, value: e.value });
  }
  return entries;
}

const CHECK_FIELDS = new Set<string>(['key', ...CHECK_POLICY_FIELDS]);

/** A captured check as JSON gave it, checked (its policy is resolved when it is decided); else a message. */
export function checkOf(c: unknown): CapturedCheck | string {
  const problem = '"check": expected {"key", "limit", "period", ...} with a non-empty string key';
  if (!isObject(c) || typeof c.key !== 'string' || c.key === '') return problem;
  for (const [name, v] of Object.entries(c)) {
    if (!CHECK_FIELDS.has(name) || (typeof v !== 'string' && typeof v !== 'number')) return problem;
  }
  return c as CapturedCheck;
}

/** The latest time a Date holds (ECMA-262 §21.4.1.1): a later one has no date to report it under. */
const MAX_DATE_MS = 8.64e15;

/** True for a time in ms since the epoch that is a date: from 1970 to the last a Date holds. */
export const isCaptureTime = (t: unknown): t is number =>
  typeof t === 'number' && Number.isFinite(t) && t >= 0 && t <= MAX_DATE_MS;

const BAD_TIME = '"t": expected a time in ms since the epoch (0 to 8.64e15)';

/** The time, cost and outcome of a parsed line, or a message. */
function commonOf(value: Record<string, unknown>): { t: number; cost: number; outcome: 'OK' | 'OVER_LIMIT' } | string {
  const { t, cost = 1, outcome } = value;
  if (!isCaptureTime(t)) return BAD_TIME;
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0) return '"cost": expected an integer >= 0';
  if (outcome !== 'OK' && outcome !== 'OVER_LIMIT') return '"outcome": expected "OK" or "OVER_LIMIT"';
  return { t, cost, outcome };
}

/** Reads one line: the record, or a message saying what is wrong with it. */
export function parseCaptureLine(line: string): ReplayRecord | string {
  if (line.length > MAX_CAPTURE_LINE) return `line longer than ${MAX_CAPTURE_LINE} characters`;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'not JSON (a line cut short by a crash, or a corrupt file)';
  }
  if (!isObject(value)) return 'expected a JSON object';
  if (value.check !== undefined) {
    // A check is decided under its own policy, a descriptor record under the rules: a line cannot be both.
    if (value.domain !== undefined || value.descriptors !== undefined) {
      return 'expected either "check" or "domain" and "descriptors", not both';
    }
    const check = checkOf(value.check);
    if (typeof check === 'string') return check;
    const common = commonOf(value);
    return typeof common === 'string' ? common : { t: common.t, check, cost: common.cost, outcome: common.outcome };
  }
  const { t, domain, descriptors } = value;
  if (!isCaptureTime(t)) return BAD_TIME;
  if (typeof domain !== 'string' || domain === '') return '"domain": expected a non-empty string';
  if (!Array.isArray(descriptors) || descriptors.length === 0) return '"descriptors": expected a non-empty list';
  const read = descriptors.map(entriesOf);
  if (read.some((e) => e === undefined)) return '"descriptors": each needs "entries" of {"key","value"} strings';
  const common = commonOf(value);
  if (typeof common === 'string') return common;
  const { cost, outcome } = common;
  return { t, domain, descriptors: (read as CaptureEntry[][]).map((entries) => ({ entries })), cost, outcome };
}

/**
 * Reads the records of `lines` (one capture file, `source` naming it in problems), handing every bad line
 * to `onProblem` and going on. Blank lines are skipped silently (a file may end with one); `null` is a line
 * the splitter found too long (boundedLines). `parse` reads other formats (access logs).
 */
export async function* readCapture(
  lines: AsyncIterable<string | null> | Iterable<string | null>,
  source: string,
  onProblem: (problem: CaptureProblem) => void,
  parse: (line: string) => ReplayRecord | string = parseCaptureLine,
): AsyncGenerator<ReplayRecord> {
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line !== null && line.trim() === '') continue;
    const record = line === null ? `line longer than ${MAX_CAPTURE_LINE} bytes` : parse(line);
    if (typeof record === 'string') onProblem({ source, line: n, message: record });
    else yield record;
  }
}
