/**
 * JSON's scalar grammar read straight from UTF-8 bytes, as `JSON.parse` would accept it after decoding:
 * strings (with the UTF-16 length of their value), numbers and literals — for the stream-event scanner,
 * which must never accept what `JSON.parse` refuses.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** What the last string `skipString` read held (one object, written over: no allocation a string). */
export const lastString = {
  /** Its value's UTF-16 length (what `JSON.parse(...).length` would give). */
  units: 0,
  /** Whether it had an escape (its bytes are not its value). */
  escaped: false,
};

/**
 * From just after an opening quote, the index just after the closing quote, or -1 when the string is not
 * JSON (a raw control character, a bad escape, no closing quote). A `counted` string must also be valid
 * UTF-8: its length is then exact; an invalid sequence is replaced when decoding, with a count of
 * replacement characters this reader does not model, so it answers -1 and lets the full parse count.
 */
export function skipString(buf: Uint8Array, i: number, end: number, counted: boolean): number {
  let units = 0;
  let escaped = false;
  while (i < end) {
    const b = buf[i] as number;
    if (b === QUOTE) {
      lastString.units = units;
      lastString.escaped = escaped;
      return i + 1;
    }
    if (b < 0x80) {
      if (b < 0x20) return -1;
      if (b === BACKSLASH) {
        const n = escapeLength(buf, i + 1, end);
        if (n === 0) return -1;
        escaped = true;
        i += n;
      } else i++;
      units++;
    } else if (counted) {
      const n = utf8Length(buf, i, end);
      if (n === 0) return -1;
      // A code point past U+FFFF is two UTF-16 units (a surrogate pair), as a JS string counts it.
      units += n === 4 ? 2 : 1;
      i += n;
    } else i++;
  }
  return -1;
}

const isHex = (b: number | undefined) =>
  b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));

/** Bytes of the escape whose letter is at `i` (after the backslash), plus the backslash; 0 when it is not JSON's. */
function escapeLength(buf: Uint8Array, i: number, end: number): number {
  switch (buf[i]) {
    case 0x22: // "
    case 0x5c: // \
    case 0x2f: // /
    case 0x62: // b
    case 0x66: // f
    case 0x6e: // n
    case 0x72: // r
    case 0x74: // t
      return i < end ? 2 : 0;
    case 0x75: // u: four hex digits, one UTF-16 unit (a lone surrogate too, as JSON.parse keeps it)
      return i + 4 < end && isHex(buf[i + 1]) && isHex(buf[i + 2]) && isHex(buf[i + 3]) && isHex(buf[i + 4]) ? 6 : 0;
    default:
      return 0;
  }
}

const cont = (b: number | undefined, low = 0x80, high = 0xbf) => b !== undefined && b >= low && b <= high;

/** Bytes of the well-formed UTF-8 sequence at `i` (Unicode's table 3-7), 0 when it is not one. */
function utf8Length(buf: Uint8Array, i: number, end: number): number {
  const b = buf[i] as number;
  if (b >= 0xc2 && b <= 0xdf) return i + 1 < end && cont(buf[i + 1]) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    if (i + 2 >= end) return 0;
    const low = b === 0xe0 ? 0xa0 : 0x80; // no overlong forms
    const high = b === 0xed ? 0x9f : 0xbf; // no surrogates
    return cont(buf[i + 1], low, high) && cont(buf[i + 2]) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    if (i + 3 >= end) return 0;
    const low = b === 0xf0 ? 0x90 : 0x80;
    const high = b === 0xf4 ? 0x8f : 0xbf; // nothing past U+10FFFF
    return cont(buf[i + 1], low, high) && cont(buf[i + 2]) && cont(buf[i + 3]) ? 4 : 0;
  }
  return 0;
}

const isDigit = (b: number | undefined) => b !== undefined && b >= 0x30 && b <= 0x39;

/** The index after the digits from `i` (none: `i`). */
function skipDigits(buf: Uint8Array, i: number, end: number): number {
  while (i < end && isDigit(buf[i])) i++;
  return i;
}

/** From a number's first byte, the index after it, or -1 when it is not a JSON number (`01`, `1.`, `.5`, `+1`). */
export function skipNumber(buf: Uint8Array, i: number, end: number): number {
  if (i < end && buf[i] === 0x2d) i++; // -
  if (i < end && buf[i] === 0x30) i++;
  else if (i < end && isDigit(buf[i])) i = skipDigits(buf, i, end);
  else return -1;
  if (i < end && buf[i] === 0x2e) {
    const from = i + 1;
    i = skipDigits(buf, from, end);
    if (i === from) return -1;
  }
  if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
    i++;
    if (i < end && (buf[i] === 0x2b || buf[i] === 0x2d)) i++;
    const from = i;
    i = skipDigits(buf, from, end);
    if (i === from) return -1;
  }
  return i;
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

/** From a literal's first byte, the index after `true`, `false` or `null`, or -1. */
export function skipLiteral(buf: Uint8Array, i: number, end: number): number {
  const word = buf[i] === 0x74 ? TRUE : buf[i] === 0x66 ? FALSE : buf[i] === 0x6e ? NULL : undefined;
  if (word === undefined || i + word.length > end) return -1;
  for (let k = 1; k < word.length; k++) if (buf[i + k] !== word[k]) return -1;
  return i + word.length;
}

/** The bytes of an ASCII word, to compare with bytes as they lie (a string's charCodeAt costs more per byte). */
export const asciiBytes = (word: string): Uint8Array => Uint8Array.from(word, (c) => c.charCodeAt(0));

/** Whether `buf[start, end)` holds exactly `word`. */
export function bytesAre(buf: Uint8Array, start: number, end: number, word: Uint8Array): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (buf[start + k] !== word[k]) return false;
  return true;
}

/** Whether `buf[start, end)` starts with `word`. */
export function bytesStartWith(buf: Uint8Array, start: number, end: number, word: Uint8Array): boolean {
  return end - start >= word.length && bytesAre(buf, start, start + word.length, word);
}
