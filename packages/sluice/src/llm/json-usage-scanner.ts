/**
 * Finds the top-level `usage` member of a JSON response body as the bytes pass, keeping only that
 * member's text (bounded) — a long completion's text is never held. Also notes a top-level `error`
 * member, so a missing usage can be explained.
 */

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
const OPEN = new Set([0x7b, 0x5b]);
const CLOSE = new Set([0x7d, 0x5d]);

/** A scanner that keeps at most `maxUsageBytes` of the usage member. */
export function createJsonUsageScanner(maxUsageBytes: number): JsonUsageScanner {
  const decoder = new TextDecoder();
  let depth = 0;
  let inString = false;
  let escaped = false;
  let keyBytes: number[] | undefined; // a top-level string being read (it may be a key)
  let lastString = '';
  let capturing = false;
  let captured: number[] = [];
  let usageText: string | undefined;
  let usageTooLong = false;
  let sawError = false;
  let complete = false;

  const capture = (byte: number) => {
    if (!capturing) return;
    if (captured.length >= maxUsageBytes) {
      usageTooLong = true;
      capturing = false;
      captured = [];
      return;
    }
    captured.push(byte);
  };
  const endCapture = () => {
    if (!capturing) return;
    capturing = false;
    usageText = decoder.decode(new Uint8Array(captured)).trim();
    captured = [];
  };

  const step = (byte: number) => {
    if (inString) {
      if (depth > 1) capture(byte);
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) {
        inString = false;
        if (depth === 1 && keyBytes !== undefined) {
          // Only short keys matter (usage, error); a long top-level string is not held.
          lastString = keyBytes.length <= 16 ? decoder.decode(new Uint8Array(keyBytes)) : '';
          keyBytes = undefined;
        }
        return;
      }
      if (depth === 1 && keyBytes !== undefined && keyBytes.length <= 16) keyBytes.push(byte);
      return;
    }
    if (byte === QUOTE) {
      inString = true;
      if (depth === 1 && !capturing) keyBytes = [];
      else capture(byte);
      return;
    }
    if (OPEN.has(byte)) {
      depth++;
      if (depth > 1) capture(byte);
      return;
    }
    if (CLOSE.has(byte)) {
      if (depth > 1) capture(byte);
      depth--;
      if (depth === 1) endCapture();
      if (depth === 0) {
        endCapture();
        complete = true;
      }
      return;
    }
    if (depth === 1 && byte === 0x3a /* : */) {
      // The member's value starts: capture it when its key is usage (scalars end at ',' or '}').
      if (lastString === 'usage') capturing = true;
      if (lastString === 'error') sawError = true;
      return;
    }
    if (depth === 1 && byte === 0x2c /* , */) {
      endCapture();
      lastString = '';
      return;
    }
    if (depth >= 1) capture(byte);
  };

  return {
    push(chunk) {
      for (const byte of chunk) step(byte);
    },
    get usageText() {
      return usageText;
    },
    get usageTooLong() {
      return usageTooLong;
    },
    get sawError() {
      return sawError;
    },
    get complete() {
      return complete;
    },
  };
}
