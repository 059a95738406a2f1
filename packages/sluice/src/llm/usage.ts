/**
 * What an LLM response cost in tokens, as sluice reads it, and the bounds a reported count must keep
 * (a provider's body is input from the network: a negative or absurd count must not reach a limiter).
 */
import { SluiceError } from '../core/errors.js';

/** The providers whose response bodies `readUsage` understands. */
export type LlmProvider = 'openai' | 'anthropic';

/** Tokens a request used, as its provider reported them. */
export interface Usage {
  /** Prompt tokens. For Anthropic this includes cache reads and cache writes (tokens the model processed). */
  inputTokens: number;
  /** Generated tokens (for OpenAI's reasoning models, reasoning tokens included). */
  outputTokens: number;
}

/**
 * The largest token count accepted from a body: far above any model's context (10 million), far below
 * the point where sums lose precision. A larger count is refused with `ERR_SLUICE_LLM_INVALID_USAGE`.
 */
export const MAX_TOKEN_COUNT = 100_000_000;

/** The providers, for validating options at the edge. */
export const LLM_PROVIDERS: readonly LlmProvider[] = ['openai', 'anthropic'];

/** Checks `provider` once, where options come in, with a message naming the choices. */
export function checkProvider(provider: unknown, option = 'provider'): LlmProvider {
  if (typeof provider === 'string' && (LLM_PROVIDERS as readonly string[]).includes(provider))
    return provider as LlmProvider;
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `${option} must be 'openai' or 'anthropic' (got ${JSON.stringify(provider)}): name the API whose bodies are read`,
    { option },
  );
}

/**
 * A token count from a body: absent (undefined) stays absent; anything but a whole number in
 * 0..MAX_TOKEN_COUNT is an `ERR_SLUICE_LLM_INVALID_USAGE` error (returned, not thrown: a reader mid-stream
 * records it and goes on forwarding).
 */
export function tokenCount(value: unknown, field: string): number | undefined | SluiceError {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT) return value;
  const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value).slice(0, 40);
  return new SluiceError(
    'ERR_SLUICE_LLM_INVALID_USAGE',
    `usage.${field} is ${shown}: a token count must be a whole number from 0 to ${MAX_TOKEN_COUNT}; the upstream sent a body sluice will not charge from (check the upstream, or settle with an estimate)`,
  );
}
