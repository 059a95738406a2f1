/**
 * Finds the top-level `usage` member of a JSON response body as the bytes pass, keeping only that
 * member's text (bounded) — a long completion's text is never held. Also notes a top-level `error`
 * member, so a missing usage can be explained.
 */
import { createUsageCapture, type UsageCapture } from './usage-capture.js';

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
  return new UsageScanner(maxUsageBytes);
}

class UsageScanner implements JsonUsageScanner {
  private readonly decoder = new TextDecoder();
  private readonly capture: UsageCapture;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** A top-level string being read (it may be a key). */
  private keyBytes: number[] | undefined = undefined;
  private lastString = '';
  sawError = false;
  complete = false;

  constructor(maxUsageBytes: number) {
    this.capture = createUsageCapture(maxUsageBytes, this.decoder);
  }

  get usageText(): string | undefined {
    return this.capture.text;
  }

  get usageTooLong(): boolean {
    return this.capture.tooLong;
  }

  push(chunk: Uint8Array): void {
    let backslash = chunk.indexOf(BACKSLASH);
    // Until this index the bytes go one by one (an escape was found ahead of a string's end).
    let slowUntil = 0;
    for (let i = 0; i < chunk.length; i++) {
      // A nested string nobody keeps (a completion's text, most of a JSON body) is skipped to its closing
      // quote with a native search, when no escape comes first: the same as reading it byte by byte.
      if (this.inString && !this.escaped && this.depth > 1 && !this.capture.active && i >= slowUntil) {
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        const quote = chunk.indexOf(QUOTE, i);
        if (backslash === -1 || (quote !== -1 && backslash > quote)) {
          if (quote === -1) return; // the string goes on in the next chunk
          this.inString = false;
          i = quote;
          continue;
        }
        slowUntil = backslash + 2;
      }
      const byte = chunk[i] as number;
      if (this.inString) this.stringByte(byte);
      else this.structureByte(byte);
    }
  }

  /** A byte inside a string: copied when nested in the usage value, kept when it may be a top-level key. */
  private stringByte(byte: number): void {
    if (this.depth > 1) this.capture.byte(byte);
    if (this.escaped) this.escaped = false;
    else if (byte === BACKSLASH) this.escaped = true;
    else if (byte === QUOTE) {
      this.inString = false;
      if (this.depth === 1 && this.keyBytes !== undefined) {
        const key = this.keyBytes;
        this.lastString = key.length <= MAX_KEY_BYTES ? this.decoder.decode(new Uint8Array(key)) : '';
        this.keyBytes = undefined;
      }
      return;
    }
    if (this.depth === 1 && this.keyBytes !== undefined && this.keyBytes.length <= MAX_KEY_BYTES)
      this.keyBytes.push(byte);
  }

  /** A byte at the top level between members: ':' starts a member's value, ',' ends it. */
  private memberByte(byte: number): void {
    if (byte === COLON) {
      // The member's value starts: capture it when its key is usage (scalars end at ',' or '}').
      if (this.lastString === 'usage') this.capture.start();
      if (this.lastString === 'error') this.sawError = true;
    } else if (byte === COMMA) {
      this.capture.end();
      this.lastString = '';
    } else this.capture.byte(byte);
  }

  /** A byte outside strings: nesting, or a member boundary at the top level. */
  private structureByte(byte: number): void {
    if (byte === QUOTE) {
      this.inString = true;
      if (this.depth === 1 && !this.capture.active) this.keyBytes = [];
      else this.capture.byte(byte);
    } else if (OPEN.has(byte)) {
      this.depth++;
      if (this.depth > 1) this.capture.byte(byte);
    } else if (CLOSE.has(byte)) {
      if (this.depth > 1) this.capture.byte(byte);
      this.depth--;
      if (this.depth === 1 || this.depth === 0) this.capture.end();
      if (this.depth === 0) this.complete = true;
    } else if (this.depth === 1) this.memberByte(byte);
    else if (this.depth > 1) this.capture.byte(byte);
  }
}
