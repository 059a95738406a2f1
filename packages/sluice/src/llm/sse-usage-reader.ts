/**
 * A server-sent event stream's usage, read event by event from its bytes. An event of one `data:` line
 * (nearly every event) is measured where it lies by the byte scanner and decoded and parsed only when the
 * scanner says it must be (its usage, a malformed event); an event of several `data:` lines is joined as
 * text and parsed, as the format defines it.
 */
import { createEventTemplate } from './event-template.js';
import { asciiBytes, bytesAre, bytesStartWith } from './json-bytes.js';
import { createLineReader } from './line-reader.js';
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
  // The event's only data line so far, where it lies; once it has several, its lines as text.
  let data: Uint8Array | undefined;
  let dataStart = 0;
  let dataEnd = 0;
  let texts: string[] | undefined;
  let eventBytes = 0;
  let malformed = 0;
  const template = createEventTemplate();

  const parse = (text: string) => {
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      malformed++;
      return;
    }
    applyStreamEvent(state, provider, event);
  };
  const dispatch = () => {
    const bytes = data;
    const lines = texts;
    data = undefined;
    texts = undefined;
    eventBytes = 0;
    if (lines !== undefined) {
      const text = lines.join('\n');
      if (text !== '' && text !== '[DONE]') parse(text);
      return;
    }
    if (bytes === undefined || dataStart === dataEnd || bytesAre(bytes, dataStart, dataEnd, DONE)) return;
    const matched = template.match(bytes, dataStart, dataEnd);
    if (matched >= 0) {
      state.producedChars += matched;
      return;
    }
    const units = scanStreamEvent(bytes, dataStart, dataEnd, provider);
    if (units === NEEDS_PARSE) {
      parse(textOf(bytes, dataStart, dataEnd));
      return;
    }
    state.producedChars += units;
    if (measured.start >= 0) template.learn(bytes, dataStart, dataEnd, measured.start, measured.end);
  };
  const lines = createLineReader(maxLineBytes, (bytes, start, end) => {
    if (start === end) {
      dispatch();
      return;
    }
    // event:, id:, retry: and comments say nothing about usage.
    if (!bytesStartWith(bytes, start, end, DATA)) return;
    const from = bytes[start + 5] === 0x20 && start + 5 < end ? start + 6 : start + 5;
    eventBytes += end - from;
    // Many data lines in one event are bounded together, like one long line.
    if (eventBytes > maxLineBytes) {
      data = undefined;
      texts = [];
      malformed++;
    } else if (texts !== undefined) texts.push(textOf(bytes, from, end));
    else if (data === undefined) {
      data = bytes;
      dataStart = from;
      dataEnd = end;
    } else {
      texts = [textOf(data, dataStart, dataEnd), textOf(bytes, from, end)];
      data = undefined;
    }
  });

  return {
    push(chunk) {
      lines.push(chunk);
      // The event's data line may lie in this chunk, whose memory is the caller's once push returns.
      if (data === chunk) {
        data = Uint8Array.prototype.slice.call(chunk, dataStart, dataEnd);
        dataEnd -= dataStart;
        dataStart = 0;
      }
    },
    end() {
      lines.end();
      dispatch();
    },
    get droppedLines() {
      return lines.droppedLines;
    },
    get malformedEvents() {
      return malformed;
    },
  };
}
