/**
 * An estimate of a request's input tokens for callers that have no tokenizer: about four characters a
 * token over the text the model reads, plus a few tokens per message. It is an estimate — use it to
 * reserve, and settle with the provider's reported usage.
 */
import { MAX_TOKEN_COUNT } from './usage.js';

/** Tokens charged per message for its role and separators (OpenAI documents 3–4). */
const PER_MESSAGE = 4;
/** A rough charge for an image or file part: its bytes say little about its tokens. */
const PER_ATTACHMENT = 1000;
const CHARS_PER_TOKEN = 4;
/** Values walked before a body counts as the largest request (a JSON body needs ≥ 2 bytes a value: 20 MB). */
const MAX_VALUES = 10_000_000;
/** Keys whose strings are not text the model reads. */
const NOT_TEXT = new Set([
  'model',
  'role',
  'type',
  'id',
  'tool_call_id',
  'user',
  'service_tier',
  'stop_reason',
  'detail',
  'media_type',
]);
const ATTACHMENT = new Set(['image_url', 'input_image', 'image', 'document', 'input_file', 'file', 'input_audio']);
/** An attachment whose source is text (an Anthropic plain-text or content document) is read as text. */
const TEXT_SOURCE = new Set(['text', 'content']);

/**
 * Estimated input tokens of a request: a prompt string, or an OpenAI (Chat Completions, Responses) or
 * Anthropic (Messages) request body, parsed or as JSON text. Never throws: text that is not JSON counts
 * as a prompt.
 *
 * @example
 * ```ts
 * estimateInputTokens({ model: 'x', messages: [{ role: 'user', content: 'Hello there' }] }); // 7
 * ```
 */
export function estimateInputTokens(request: unknown): number {
  let body = request;
  if (typeof request === 'string') {
    try {
      body = JSON.parse(request);
    } catch {
      return Math.ceil(request.length / CHARS_PER_TOKEN);
    }
    if (typeof body !== 'object' || body === null) return Math.ceil(request.length / CHARS_PER_TOKEN);
  }
  const tally = tallyText(body);
  const messages = countMessages(body);
  return Math.ceil(tally.chars / CHARS_PER_TOKEN) + tally.attachments * PER_ATTACHMENT + messages * PER_MESSAGE;
}

/**
 * Every string the model reads, at any depth: nothing is skipped, so padding a body (thousands of empty keys, deep
 * nesting) cannot hide its text. The walk keeps its own stack (no recursion to overflow); a parsed body is a tree, so
 * its work is linear in the body, as parsing it was. Past MAX_VALUES values (a body of tens of megabytes, or a cycle
 * in a hand-made object) the estimate is the largest count: such a request is charged as the most one can cost.
 */
function tallyText(body: unknown): { chars: number; attachments: number } {
  let chars = 0;
  let attachments = 0;
  let values = 0;
  const stack: unknown[] = [body];
  while (stack.length > 0) {
    if (++values > MAX_VALUES) return { chars: MAX_TOKEN_COUNT * CHARS_PER_TOKEN, attachments: 0 };
    const value = stack.pop();
    if (typeof value === 'string') chars += value.length;
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    if (typeof record.type === 'string' && ATTACHMENT.has(record.type)) {
      const source = record.source as { type?: unknown } | null | undefined;
      if (typeof source === 'object' && source !== null && TEXT_SOURCE.has(source.type as string)) stack.push(source);
      else attachments++;
      continue;
    }
    for (const key in record) if (!NOT_TEXT.has(key)) stack.push(record[key]);
  }
  return { chars, attachments };
}

function countMessages(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const { messages, input } = body as { messages?: unknown; input?: unknown };
  if (Array.isArray(messages)) return messages.length;
  if (Array.isArray(input)) return input.length;
  return typeof input === 'string' ? 1 : 0;
}
