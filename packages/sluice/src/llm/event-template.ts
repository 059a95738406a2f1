/**
 * The shape of a stream's text deltas, learnt from one and matched against the next: a provider sends
 * event after event that differ only in the text they carry and a counter or two
 * (`{"type":"response.output_text.delta","sequence_number":7,…,"delta":"` … `"}`). An event with the same
 * bytes around one valid string, but for other digits in place of digits, is the same JSON with another
 * string, so it adds that string's length — found by one walk over the bytes, with no parse.
 */
import { lastString, skipString } from './json-bytes.js';

/** The template of one reader's stream (each reader has its own: streams interleave in a gateway). */
export interface EventTemplate {
  /**
   * The UTF-16 length of the text of `bytes[start, end)` when it matches the template, else -1 (then the
   * scanner reads it, and may `learn` from it).
   */
  match(bytes: Uint8Array, start: number, end: number): number;
  /** Takes `bytes[start, end)`, whose only measured string is `bytes[textStart, textEnd)`, as the template. */
  learn(bytes: Uint8Array, start: number, end: number, textStart: number, textEnd: number): void;
}

const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;
const compare = NodeBuffer?.prototype.compare;
/** From this many bytes Buffer#compare (memcmp, after ~0.1 µs of argument checks) beats a loop here. */
const NATIVE_FROM = 64;

/** Whether `bytes[i, i + word.length)` is `word`. */
function same(bytes: Uint8Array, i: number, end: number, word: Uint8Array): boolean {
  const n = word.length;
  if (i + n > end) return false;
  if (n >= NATIVE_FROM && compare !== undefined && NodeBuffer !== undefined && bytes instanceof NodeBuffer)
    return compare.call(bytes, word, 0, n, i, i + n) === 0;
  for (let k = 0; k < n; k++) if (bytes[i + k] !== word[k]) return false;
  return true;
}

const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;

/**
 * Matches `word` at `bytes[i]`: the index after it, or -1. With `digits`, a run of digits in the word
 * matches any run of digits: in a number it is still a number (unless the new run would open with a
 * leading zero, which JSON forbids: refused), in a string still the same string's kind of text. (Not
 * inside an escape, where `\u0041` must keep four: a word with a backslash is matched exactly.)
 */
function walk(bytes: Uint8Array, i: number, end: number, word: Uint8Array, digits: boolean): number {
  const n = word.length;
  let j = 0;
  for (;;) {
    // Equal bytes, digits included, in one tight loop; a difference is looked at only where it is.
    while (j < n && i < end && bytes[i] === word[j]) {
      i++;
      j++;
    }
    if (j === n) return i;
    if (!digits || !(isDigit(word[j]) || isDigit(bytes[i]))) return -1;
    // A difference in a run of digits: the two runs are taken whole, from where they start.
    let back = 0;
    while (back < j && isDigit(word[j - back - 1])) back++;
    i -= back;
    j -= back;
    const from = i;
    const wordFrom = j;
    while (i < end && isDigit(bytes[i])) i++;
    while (j < n && isDigit(word[j])) j++;
    if (i === from || j === wordFrom) return -1;
    // The same run (an id's digits) may open with a zero; a new one with two digits or more may not.
    if (i - from > 1 && bytes[from] === 0x30 && !sameRun(bytes, from, word, wordFrom, j)) return -1;
  }
}

function sameRun(bytes: Uint8Array, from: number, word: Uint8Array, wordFrom: number, wordEnd: number): boolean {
  for (let k = wordFrom; k < wordEnd; k++) if (bytes[from + k - wordFrom] !== word[k]) return false;
  return !isDigit(bytes[from + wordEnd - wordFrom]);
}

/** An empty template (it matches nothing until it learns). */
export function createEventTemplate(): EventTemplate {
  // The bytes before the text (through its opening quote) and after it (from its closing quote).
  let before: Uint8Array | undefined;
  let after: Uint8Array | undefined;
  let digits = false;
  return {
    match(bytes, start, end) {
      if (before === undefined || after === undefined) return -1;
      // Most events repeat the template's bytes exactly (compared natively); a counter that moved is walked.
      const exact = same(bytes, start, end, before) && same(bytes, end - after.length, end, after);
      const textStart = exact ? start + before.length : walk(bytes, start, end, before, digits);
      if (textStart === -1) return -1;
      // The text must be one whole valid string, and the template's end must follow its closing quote.
      const closed = skipString(bytes, textStart, end, true);
      if (closed === -1) return -1;
      const units = lastString.units;
      if (exact) return closed - 1 === end - after.length ? units : -1;
      return walk(bytes, closed - 1, end, after, digits) === end ? units : -1;
    },
    learn(bytes, start, end, textStart, textEnd) {
      before = Uint8Array.prototype.slice.call(bytes, start, textStart);
      after = Uint8Array.prototype.slice.call(bytes, textEnd, end);
      digits = !before.includes(0x5c) && !after.includes(0x5c);
    },
  };
}
