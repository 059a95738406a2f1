/**
 * A capture line read without JSON.parse of every field: the layout `sluice serve --capture` writes —
 * `{"t":…,"domain":"…","descriptors":[…],"cost":…,"outcome":"…","rule":"…","src":"…"}`, or `"check":{…}` in
 * place of domain and descriptors — with the descriptors (or the check) left in the line for the caller to
 * look up, and parsed only the first time they are seen. Any other line (whitespace, escapes in the short
 * strings, fields in another order, numbers that are not plain integers) answers false, and JSON.parse reads it:
 * this path only accepts lines JSON.parse reads the same way.
 */

/** The fields of one scanned line; the descriptors' (or the check's) JSON text is `line` from `rawStart` to `rawEnd`. */
export interface ScannedLine {
  line: string;
  t: number;
  cost: number;
  outcome: 'OK' | 'OVER_LIMIT';
  /** The domain of a descriptor record; undefined for a `/v1/check` record. */
  domain: string | undefined;
  /** `descriptors` or `check`: which field the raw text is. */
  kind: 'descriptors' | 'check';
  rawStart: number;
  rawEnd: number;
}

/** An empty ScannedLine, to scan into (one per reader: a million lines allocate nothing here). */
export const scannedLine = (): ScannedLine => ({
  line: '',
  t: 0,
  cost: 1,
  outcome: 'OK',
  domain: undefined,
  kind: 'descriptors',
  rawStart: 0,
  rawEnd: 0,
});

/** True when `line` holds `text` at `i`. */
function holds(line: string, i: number, text: string): boolean {
  if (i + text.length > line.length) return false;
  for (let j = 0; j < text.length; j++) if (line.charCodeAt(i + j) !== text.charCodeAt(j)) return false;
  return true;
}

/** Where a scan is: the index after what was read. */
const at = { i: 0 };

/** The whole number of at most 15 digits at `at.i` (JSON's grammar: no leading zero, no fraction), else -1. */
function integer(line: string): number {
  const i = at.i;
  let j = i;
  let n = 0;
  for (; j < line.length && j - i < 16; j++) {
    const c = line.charCodeAt(j);
    if (c < 0x30 || c > 0x39) break;
    n = n * 10 + (c - 0x30);
  }
  if (j === i || j - i > 15 || (line.charCodeAt(i) === 0x30 && j - i > 1)) return -1;
  const next = line.charCodeAt(j);
  if (next === 0x2e || next === 0x65 || next === 0x45) return -1;
  at.i = j;
  return n;
}

/** The end (past its closing quote) of the string opening at `i` with no escape or control character in it, else -1. */
function plainString(line: string, i: number): number {
  const close = line.indexOf('"', i + 1);
  if (close === -1) return -1;
  for (let j = i + 1; j < close; j++) {
    const c = line.charCodeAt(j);
    if (c === 0x5c || c < 0x20) return -1;
  }
  return close + 1;
}

/** The domain opening at `i` (its quote) and ending at `end`: the last line's string again when it is the same. */
function domainAt(line: string, i: number, end: number, last: string | undefined): string {
  if (last !== undefined && last.length === end - i - 2 && holds(line, i + 1, last)) return last;
  return line.slice(i + 1, end - 1);
}

/** A tail read before: its cost and outcome. */
interface Tail {
  readonly cost: number;
  readonly outcome: 'OK' | 'OVER_LIMIT';
}

/**
 * Tails read before, by their text: a capture repeats a few (cost, outcome, rule and source vary little), and a
 * lookup hashes natively where reading one checks each character in JavaScript. Bounded: past MAX_TAILS the
 * tails are read each time.
 */
const tails = new Map<string, Tail>();
const MAX_TAILS = 4096;

/** Reads the tail of a line (see readTail), through the cache of tails read before. */
function tail(line: string, into: ScannedLine): boolean {
  const text = line.slice(into.rawEnd);
  const known = tails.get(text);
  if (known !== undefined) {
    into.cost = known.cost;
    into.outcome = known.outcome;
    return true;
  }
  if (!readTail(line, into)) return false;
  // A copy as the key: the slice would keep the chunk it came from alive.
  if (tails.size < MAX_TAILS && text.length <= 256)
    tails.set(Buffer.from(text).toString(), { cost: into.cost, outcome: into.outcome });
  return true;
}

/** Reads what follows the raw text: `,"cost":N,"outcome":"…"` and optional plain `rule` and `src`, to the line's end. */
function readTail(line: string, into: ScannedLine): boolean {
  at.i = into.rawEnd + 8;
  const cost = integer(line);
  if (cost === -1 || !holds(line, at.i, ',"outcome":"')) return false;
  let i = at.i + 12;
  if (holds(line, i, 'OK"')) {
    into.outcome = 'OK';
    i += 3;
  } else if (holds(line, i, 'OVER_LIMIT"')) {
    into.outcome = 'OVER_LIMIT';
    i += 11;
  } else return false;
  if (holds(line, i, ',"rule":"')) i = plainString(line, i + 8);
  if (i !== -1 && holds(line, i, ',"src":"')) i = plainString(line, i + 7);
  into.cost = cost;
  return i === line.length - 1 && line.charCodeAt(i) === 0x7d;
}

/** Reads `line` into `into`; false when it is not in the service's layout (JSON.parse then reads it). */
export function scanCaptureLine(line: string, into: ScannedLine): boolean {
  if (!holds(line, 0, '{"t":')) return false;
  at.i = 5;
  const t = integer(line);
  if (t === -1) return false;
  let i = at.i;
  if (holds(line, i, ',"domain":"')) {
    const end = plainString(line, i + 10);
    if (end === -1 || end === i + 12 || !holds(line, end, ',"descriptors":')) return false;
    into.domain = domainAt(line, i + 10, end, into.domain);
    into.kind = 'descriptors';
    i = end + 15;
  } else if (holds(line, i, ',"check":')) {
    into.domain = undefined;
    into.kind = 'check';
    i += 9;
  } else return false;
  // The raw text ends where the tail begins: the tail's strings hold no quote, so its `,"cost":` is the last.
  const rawEnd = line.lastIndexOf(',"cost":');
  if (rawEnd <= i) return false;
  into.line = line;
  into.t = t;
  into.rawStart = i;
  into.rawEnd = rawEnd;
  return tail(line, into);
}
