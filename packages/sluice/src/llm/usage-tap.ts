/**
 * The incremental reader under `readUsage` and `tapUsage`: fed a response body's bytes as they pass
 * (JSON or server-sent events, told apart by the first byte), it keeps only bounded state and, at the
 * end, says what the request used — or why it cannot, with what was seen so far.
 */
import { SluiceError } from '../core/errors.js';
import { createJsonUsageScanner, type JsonUsageScanner } from './json-usage-scanner.js';
import { applyUsageObject, emptyUsageState, type UsageState } from './provider-usage.js';
import { createSseUsageReader, type SseUsageReader } from './sse-usage-reader.js';
import { checkProvider, type LlmProvider, type Usage } from './usage.js';

/** Options of the usage readers. */
export interface UsageReadOptions {
  /** Whose body it is. */
  provider: LlmProvider;
  /**
   * The longest event line held (bytes); a longer line is skipped and counted in `droppedLines`.
   * @default 262144 (256 KiB)
   */
  maxLineBytes?: number;
}

/** What a body said about its cost. */
export interface UsageReading {
  /** The provider's final usage; undefined when the body did not carry it (see `error`). */
  usage: Usage | undefined;
  /** Why `usage` is missing: ERR_SLUICE_LLM_USAGE_MISSING, ERR_SLUICE_LLM_INVALID_USAGE or ERR_SLUICE_LLM_MALFORMED_BODY. */
  error: SluiceError | undefined;
  /** Counts seen before the body ended (an Anthropic stream's input from message_start, say). */
  partial: { inputTokens: number | undefined; outputTokens: number | undefined };
  /** Output tokens estimated from the generated text that passed (about 4 characters a token). */
  estimatedOutputTokens: number;
  /** Lines longer than `maxLineBytes`, skipped. */
  droppedLines: number;
  /** How the body was sent. */
  format: 'json' | 'sse' | 'empty';
}

/** A reader fed chunk by chunk; `end()` may be called once, early when the body was cut. */
export interface UsageTap {
  push(chunk: Uint8Array): void;
  end(): UsageReading;
}

const DEFAULT_MAX_LINE_BYTES = 256 * 1024;
const MAX_USAGE_BYTES = 64 * 1024;
const CHARS_PER_TOKEN = 4;

function checkLineBound(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_LINE_BYTES;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1024 && value <= 64 * 1024 * 1024) return value;
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `maxLineBytes must be a whole number of bytes from 1024 to 67108864 (got ${String(value)})`,
    { option: 'maxLineBytes' },
  );
}

/** A `UsageTap` for `options.provider`. */
export function createUsageTap(options: UsageReadOptions): UsageTap {
  // Without options there is no provider to name: the same coded error as a wrong one, not a TypeError.
  const provider = checkProvider(options?.provider);
  const maxLineBytes = checkLineBound(options.maxLineBytes);
  const state = emptyUsageState();
  let json: JsonUsageScanner | undefined;
  let sse: SseUsageReader | undefined;
  let ended: UsageReading | undefined;
  return {
    push(chunk) {
      if (ended !== undefined) return;
      if (sse !== undefined) {
        sse.push(chunk);
        return;
      }
      if (json !== undefined) {
        json.push(chunk);
        return;
      }
      const at = firstSignificant(chunk);
      if (at === chunk.length) return;
      // A JSON body opens with { or [; anything else is read as an event stream.
      if (chunk[at] === 0x7b || chunk[at] === 0x5b) {
        json = createJsonUsageScanner(MAX_USAGE_BYTES);
        json.push(chunk.subarray(at));
      } else {
        sse = createSseUsageReader(provider, maxLineBytes, state);
        sse.push(chunk.subarray(at));
      }
    },
    end() {
      if (ended !== undefined) return ended;
      sse?.end();
      if (json?.usageText !== undefined) readJsonUsage(state, provider, json.usageText);
      const format = sse !== undefined ? 'sse' : json !== undefined ? 'json' : 'empty';
      ended = reading(state, format, {
        droppedLines: sse?.droppedLines ?? 0,
        malformedEvents: sse?.malformedEvents ?? 0,
        provider,
        json,
      });
      return ended;
    },
  };
}

/** Where the body's first significant byte is: past a byte-order mark and leading white space. */
function firstSignificant(chunk: Uint8Array): number {
  let i = 0;
  while (i < chunk.length) {
    const b = chunk[i];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0xef && b !== 0xbb && b !== 0xbf) return i;
    i++;
  }
  return i;
}

function readJsonUsage(state: UsageState, provider: LlmProvider, text: string): void {
  let usage: unknown;
  try {
    usage = JSON.parse(text);
  } catch {
    state.invalid ??= new SluiceError(
      'ERR_SLUICE_LLM_INVALID_USAGE',
      "the body's usage member is not valid JSON: the upstream sent a body sluice will not charge from",
    );
    return;
  }
  applyUsageObject(state, provider, usage, true);
}

interface Seen {
  droppedLines: number;
  malformedEvents: number;
  provider: LlmProvider;
  json: JsonUsageScanner | undefined;
}

function reading(state: UsageState, format: UsageReading['format'], seen: Seen): UsageReading {
  const base = {
    partial: { inputTokens: state.inputTokens, outputTokens: state.outputTokens },
    estimatedOutputTokens: Math.ceil(state.producedChars / CHARS_PER_TOKEN),
    droppedLines: seen.droppedLines,
    format,
  };
  if (state.final && state.inputTokens !== undefined && state.outputTokens !== undefined)
    return { ...base, usage: { inputTokens: state.inputTokens, outputTokens: state.outputTokens }, error: undefined };
  return { ...base, usage: undefined, error: state.invalid ?? missing(format, seen) };
}

function missing(format: UsageReading['format'], seen: Seen): SluiceError {
  if (format === 'empty')
    return new SluiceError(
      'ERR_SLUICE_LLM_USAGE_MISSING',
      'the body was empty: there is no usage to read (the upstream closed before answering)',
    );
  if (seen.json?.usageTooLong)
    return new SluiceError(
      'ERR_SLUICE_LLM_INVALID_USAGE',
      `the body's usage member is longer than ${MAX_USAGE_BYTES} bytes: the upstream sent a body sluice will not charge from`,
    );
  if (seen.json !== undefined && !seen.json.complete)
    return new SluiceError(
      'ERR_SLUICE_LLM_MALFORMED_BODY',
      'the JSON body ended before it closed and had no usage: the upstream was cut off or is not JSON',
    );
  if (seen.json?.sawError)
    return new SluiceError(
      'ERR_SLUICE_LLM_USAGE_MISSING',
      'the body is an error response with no usage: nothing was generated to charge for',
    );
  const hint =
    format === 'sse' && seen.provider === 'openai'
      ? ' (an OpenAI Chat Completions stream carries usage only when the request sets stream_options: { include_usage: true })'
      : '';
  const skipped =
    seen.droppedLines + seen.malformedEvents > 0
      ? `; ${seen.droppedLines} over-long line(s) and ${seen.malformedEvents} malformed event(s) were skipped`
      : '';
  return new SluiceError(
    'ERR_SLUICE_LLM_USAGE_MISSING',
    `the ${format === 'sse' ? 'stream ended' : 'body has'} without the provider's final usage${hint}${skipped}: settle with an estimate (reading.partial, reading.estimatedOutputTokens)`,
  );
}
