/**
 * `readUsage`: what an OpenAI or Anthropic response cost, read from its body (JSON or a server-sent
 * event stream) as it arrives, holding only bounded state.
 */
import { bodyChunks, type LlmBody } from './body-chunks.js';
import type { Usage } from './usage.js';
import { createUsageTap, type UsageReading, type UsageReadOptions } from './usage-tap.js';

/**
 * Reads the whole body and says what it reported, never rejecting for a body without usage (the reading
 * carries the error and what was seen). It rejects only when reading the body itself fails.
 */
export async function inspectUsage(body: LlmBody, options: UsageReadOptions): Promise<UsageReading> {
  const tap = createUsageTap(options);
  for await (const chunk of bodyChunks(body)) tap.push(chunk);
  return tap.end();
}

/**
 * The tokens a response used, as its provider reported them. Rejects with a coded `SluiceError` when
 * the body does not say: `ERR_SLUICE_LLM_USAGE_MISSING` (no usage: an error body, a cut stream, an
 * OpenAI stream without `stream_options.include_usage`), `ERR_SLUICE_LLM_INVALID_USAGE` (negative,
 * fractional or absurd counts), `ERR_SLUICE_LLM_MALFORMED_BODY` (a truncated JSON body).
 * Use `inspectUsage` or `tapUsage` for what was seen when it does not.
 *
 * @example
 * ```ts
 * const res = await fetch(url, { method: 'POST', body });
 * const { inputTokens, outputTokens } = await readUsage(res, { provider: 'openai' });
 * ```
 */
export async function readUsage(body: LlmBody, options: UsageReadOptions): Promise<Usage> {
  const reading = await inspectUsage(body, options);
  if (reading.usage === undefined) throw reading.error;
  return reading.usage;
}
