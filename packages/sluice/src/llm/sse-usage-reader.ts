/**
 * A server-sent event stream's usage, read event by event from its bytes. An event of one `data:` line
 * (nearly every event) is measured where it lies by the byte scanner and decoded and parsed only when the
 * scanner says it must be (its usage, a malformed event); an event of several `data:` lines is joined as
 * text and parsed, as the format defines it.
 */
import { createEventTemplate } from './event-template.js';
import { asciiBytes, bytesAre, bytesStartWith } from './json-bytes.js';
import { createLineReader, type LineReader } from './line-reader.js';
import { applyStreamEvent, type UsageState } from './provider-usage.js';
import { measured, NEEDS_PARSE, scanStreamEvent } from './stream-event-scan.js';
import type { LlmProvider } from './usage.js';

/** An SSE reader fed chunk by chunk, writing what it learns into a `UsageState`. */
export interface SseUsageReader {
  push(chunk: Uint8Array): void;
  /** Reads a last line and event the body did not end. */
  end(): void;
  /** Lines longer than the bound, skipped. */
  readonly droppedLines: number;
  /** Events that were not JSON, or longer than the bound together. */
  readonly malformedEvents: number;
}

const DATA = asciiBytes('data:');
const DONE = asciiBytes('[DONE]');
const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;
// A byte-order mark inside a line is text (only one opening the line was dropped, as a decoder drops it).
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** The UTF-8 text of `bytes[start, end)`: Node's Buffer decodes a range in one call, with no view made. */
function textOf(bytes: Uint8Array, start: number, end: number): string {
  if (NodeBuffer !== undefined && bytes instanceof NodeBuffer) return bytes.toString('utf8', start, end);
  return decoder.decode(bytes.subarray(start, end));
}

/** A reader of `provider`'s events into `state`, holding at most `maxLineBytes` of any line or event. */
export function createSseUsageReader(provider: LlmProvider, maxLineBytes: number, state: UsageState): SseUsageReader {
  return new EventReader(provider, maxLineBytes, state);
}

class EventReader implements SseUsageReader {
  private readonly lines: LineReader;
  private readonly template = createEventTemplate();
  /** The event's only data line so far, where it lies (`dataStart`..`dataEnd` of `data`). */
  private data: Uint8Array | undefined = undefined;
  private dataStart = 0;
  private dataEnd = 0;
  /** Once the event has several data lines: its lines as text. */
  private texts: string[] | undefined = undefined;
  private eventBytes = 0;
  private malformed = 0;

  constructor(
    private readonly provider: LlmProvider,
    private readonly maxLineBytes: number,
    private readonly state: UsageState,
  ) {
    this.lines = createLineReader(maxLineBytes, (bytes, start, end) => this.line(bytes, start, end));
  }

  get droppedLines(): number {
    return this.lines.droppedLines;
  }

  get malformedEvents(): number {
    return this.malformed;
  }

  push(chunk: Uint8Array): void {
    this.lines.push(chunk);
    // The event's data line may lie in this chunk, whose memory is the caller's once push returns.
    if (this.data === chunk) {
      this.data = Uint8Array.prototype.slice.call(chunk, this.dataStart, this.dataEnd);
      this.dataEnd -= this.dataStart;
      this.dataStart = 0;
    }
  }

  end(): void {
    this.lines.end();
    this.dispatch();
  }

  private line(bytes: Uint8Array, start: number, end: number): void {
    if (start === end) {
      this.dispatch();
      return;
    }
    // event:, id:, retry: and comments say nothing about usage.
    if (!bytesStartWith(bytes, start, end, DATA)) return;
    const from = bytes[start + 5] === 0x20 && start + 5 < end ? start + 6 : start + 5;
    // Many data lines in one event are bounded together, like one long line: each counts its text and the line end
    // that joins it to the next, so empty `data:` lines cannot pile up without bound either.
    this.eventBytes += end - from + 1;
    if (this.eventBytes > this.maxLineBytes) {
      this.data = undefined;
      this.texts = [];
      this.malformed++;
    } else if (this.texts !== undefined) this.texts.push(textOf(bytes, from, end));
    else if (this.data === undefined) {
      this.data = bytes;
      this.dataStart = from;
      this.dataEnd = end;
    } else {
      this.texts = [textOf(this.data, this.dataStart, this.dataEnd), textOf(bytes, from, end)];
      this.data = undefined;
    }
  }

  /** The event ended (a blank line, or the body): what it says goes into the state. */
  private dispatch(): void {
    const { data: bytes, texts, dataStart: start, dataEnd: end } = this;
    this.data = undefined;
    this.texts = undefined;
    this.eventBytes = 0;
    if (texts !== undefined) {
      const text = texts.join('\n');
      if (text !== '' && text !== '[DONE]') this.parse(text);
      return;
    }
    if (bytes === undefined || start === end || bytesAre(bytes, start, end, DONE)) return;
    const matched = this.template.match(bytes, start, end);
    if (matched >= 0) {
      this.state.producedChars += matched;
      return;
    }
    const units = scanStreamEvent(bytes, start, end, this.provider);
    if (units === NEEDS_PARSE) {
      this.parse(textOf(bytes, start, end));
      return;
    }
    this.state.producedChars += units;
    if (measured.start >= 0) this.template.learn(bytes, start, end, measured.start, measured.end);
  }

  private parse(text: string): void {
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      this.malformed++;
      return;
    }
    applyStreamEvent(this.state, this.provider, event);
  }
}
