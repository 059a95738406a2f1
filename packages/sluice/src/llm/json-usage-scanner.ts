/**
 * Finds the top-level `usage` member of a JSON response body as the bytes pass, keeping only that
 * member's text (bounded) — a long completion's text is never held. Also notes a top-level `error`
 * member, so a missing usage can be explained.
 */
import { createUsageCapture } from './usage-capture.js';

/** A scanner fed chunk by chunk. */
export interface JsonUsageScanner {
  push(chunk: Uint8Array): void;
  /** The `usage` member's JSON text, when one was seen whole. */
  readonly usageText: string | undefined;
  /** True when the usage member was longer than the bound. */
  readonly usageTooLong: boolean;
  /** True when the body had a top-level `error` member. */
  readonly sawError: boolean;
  /** True when the top-level value closed (a truncated body never does). */
  readonly complete: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN = new Set([0x7b, 0x5b]);
const CLOSE = new Set([0x7d, 0x5d]);
/** Only short top-level keys matter (usage, error): a longer top-level string is not held. */
const MAX_KEY_BYTES = 16;

/** A scanner that keeps at most `maxUsageBytes` of the usage member. */
export function createJsonUsageScanner(maxUsageBytes: number): JsonUsageScanner {
  const decoder = new TextDecoder();
  const capture = createUsageCapture(maxUsageBytes, decoder);
  let depth = 0;
  let inString = false;
  let escaped = false;
  let keyBytes: number[] | undefined; // a top-level string being read (it may be a key)
  let lastString = '';
  let sawError = false;
  let complete = false;

  /** A byte inside a string: copied when nested in the usage value, kept when it may be a top-level key. */
  const stringByte = (byte: number) => {
    if (depth > 1) capture.byte(byte);
    if (escaped) escaped = false;
    else if (byte === BACKSLASH) escaped = true;
    else if (byte === QUOTE) {
      inString = false;
      if (depth === 1 && keyBytes !== undefined) {
        lastString = keyBytes.length <= MAX_KEY_BYTES ? decoder.decode(new Uint8Array(keyBytes)) : '';
        keyBytes = undefined;
      }
      return;
    }
    if (depth === 1 && keyBytes !== undefined && keyBytes.length <= MAX_KEY_BYTES) keyBytes.push(byte);
  };

  /** A byte at the top level between members: ':' starts a member's value, ',' ends it. */
  const memberByte = (byte: number) => {
    if (byte === COLON) {
      // The member's value starts: capture it when its key is usage (scalars end at ',' or '}').
      if (lastString === 'usage') capture.start();
      if (lastString === 'error') sawError = true;
    } else if (byte === COMMA) {
      capture.end();
      lastString = '';
    } else capture.byte(byte);
  };

  /** A byte outside strings: nesting, or a member boundary at the top level. */
  const structureByte = (byte: number) => {
    if (byte === QUOTE) {
      inString = true;
      if (depth === 1 && !capture.active) keyBytes = [];
      else capture.byte(byte);
    } else if (OPEN.has(byte)) {
      depth++;
      if (depth > 1) capture.byte(byte);
    } else if (CLOSE.has(byte)) {
      if (depth > 1) capture.byte(byte);
      depth--;
      if (depth === 1 || depth === 0) capture.end();
      if (depth === 0) complete = true;
    } else if (depth === 1) memberByte(byte);
    else if (depth > 1) capture.byte(byte);
  };

  return {
    push(chunk) {
      let backslash = chunk.indexOf(BACKSLASH);
      // Until this index the bytes go one by one (an escape was found ahead of a string's end).
      let slowUntil = 0;
      for (let i = 0; i < chunk.length; i++) {
        // A nested string nobody keeps (a completion's text, most of a JSON body) is skipped to its closing
        // quote with a native search, when no escape comes first: the same as reading it byte by byte.
        if (inString && !escaped && depth > 1 && !capture.active && i >= slowUntil) {
          if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
          const quote = chunk.indexOf(QUOTE, i);
          if (backslash === -1 || (quote !== -1 && backslash > quote)) {
            if (quote === -1) return; // the string goes on in the next chunk
            inString = false;
            i = quote;
            continue;
          }
          slowUntil = backslash + 2;
        }
        const byte = chunk[i] as number;
        if (inString) stringByte(byte);
        else structureByte(byte);
      }
    },
    get usageText() {
      return capture.text;
    },
    get usageTooLong() {
      return capture.tooLong;
    },
    get sawError() {
      return sawError;
    },
    get complete() {
      return complete;
    },
  };
}
