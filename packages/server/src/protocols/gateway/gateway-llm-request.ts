/**
 * An LLM request as the gateway reserves it: its body read whole, within a bound (it is forwarded as it
 * came), its input tokens estimated and its largest output read from `max_tokens` and its kin.
 */
import type { IncomingMessage } from 'node:http';
import { SluiceError } from 'sluice';
import { estimateInputTokens, MAX_TOKEN_COUNT } from 'sluice/llm';

/** Largest request body the gateway holds to estimate (a prompt with images fits). */
export const MAX_LLM_REQUEST_BYTES = 8 * 1024 * 1024;
/** What an output is reserved at when the request sets no limit (OpenAI's may leave it out). */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;
/** The request fields that bound the output: Chat Completions, Responses, Anthropic Messages. */
const MAX_OUTPUT_FIELDS = ['max_completion_tokens', 'max_tokens', 'max_output_tokens'] as const;

/** What a request reserves. */
export interface LlmRequest {
  readonly body: Buffer;
  readonly inputTokens: number;
  readonly maxOutputTokens: number;
}

/** Reads `req`'s body whole; rejects with ERR_SLUICE_BODY_TOO_LARGE past `maxBytes` (the rest is not read). */
export function readLlmBody(req: IncomingMessage, maxBytes = MAX_LLM_REQUEST_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > maxBytes) {
      reject(tooLarge(maxBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
    req.once('aborted', () => reject(new SluiceError('ERR_SLUICE_CLIENT_GONE', 'the client left mid-request')));
  });
}

/** The reservation of a body: estimated input, and the output limit it sets (or the default). */
export function llmRequestOf(body: Buffer): LlmRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const inputTokens = Math.min(MAX_TOKEN_COUNT, estimateInputTokens(parsed ?? body.toString('utf8')));
  return { body, inputTokens, maxOutputTokens: maxOutputOf(parsed) };
}

function maxOutputOf(parsed: unknown): number {
  if (typeof parsed !== 'object' || parsed === null) return DEFAULT_MAX_OUTPUT_TOKENS;
  const fields = parsed as Record<string, unknown>;
  for (const name of MAX_OUTPUT_FIELDS) {
    const n = fields[name];
    // A bad value is the upstream's to refuse; the reservation takes the default and the upstream answers.
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) return Math.min(n, MAX_TOKEN_COUNT);
  }
  return DEFAULT_MAX_OUTPUT_TOKENS;
}

function tooLarge(maxBytes: number): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_BODY_TOO_LARGE',
    `an LLM request body may be at most ${maxBytes} bytes through the gateway (it is read whole to reserve its tokens)`,
  );
}
