/**
 * An estimate of a request's input tokens for callers that have no tokenizer: about four characters a
 * token over the text the model reads, plus a few tokens per message. It is an estimate — use it to
 * reserve, and settle with the provider's reported usage.
 */

/** Tokens charged per message for its role and separators (OpenAI documents 3–4). */
const PER_MESSAGE = 4;
/** A rough charge for an image or file part: its bytes say little about its tokens. */
const PER_ATTACHMENT = 1000;
const CHARS_PER_TOKEN = 4;
/** Walking stops past this many values or this depth: a hostile body costs bounded work. */
const MAX_NODES = 100_000;
const MAX_DEPTH = 32;
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
  const tally = { chars: 0, attachments: 0, nodes: 0 };
  walk(body, tally, 0);
  const messages = countMessages(body);
  return Math.ceil(tally.chars / CHARS_PER_TOKEN) + tally.attachments * PER_ATTACHMENT + messages * PER_MESSAGE;
}

interface Tally {
  chars: number;
  attachments: number;
  nodes: number;
}

function walk(value: unknown, tally: Tally, depth: number): void {
  if (++tally.nodes > MAX_NODES || depth > MAX_DEPTH) return;
  if (typeof value === 'string') {
    tally.chars += value.length;
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) walk(item, tally, depth + 1);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const record = value as Record<string, unknown>;
  if (typeof record.type === 'string' && ATTACHMENT.has(record.type)) {
    tally.attachments++;
    return;
  }
  for (const [key, item] of Object.entries(record)) {
    if (NOT_TEXT.has(key)) continue;
    walk(item, tally, depth + 1);
  }
}

function countMessages(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const { messages, input } = body as { messages?: unknown; input?: unknown };
  if (Array.isArray(messages)) return messages.length;
  if (Array.isArray(input)) return input.length;
  return typeof input === 'string' ? 1 : 0;
}
