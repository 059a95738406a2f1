/**
 * `sluice/client`: a fetch wrapper for calling rate-limited APIs. It waits as long as the server says
 * (`Retry-After`, `RateLimit`, `X-RateLimit-Reset`), backs off with full jitter when it says nothing,
 * keeps attempts and total waiting bounded, can pace itself with a token bucket, and stops waiting the
 * moment its signal aborts.
 *
 * @example
 * import { createClient } from 'sluice/client';
 * const api = createClient({ retries: 3, rate: { limit: 5, period: '1s' } });
 * const res = await api.fetch('https://api.example.com/items', { signal: AbortSignal.timeout(10_000) });
 * @packageDocumentation
 */
export type { AdaptiveThrottleOptions } from './adaptive-throttle.js';
export { fullJitterBackoff } from './backoff.js';
export type { Client, ClientRequestInit } from './create-client.js';
export { createClient } from './create-client.js';
export type { ClientOptions, PaceOptions, RetryInfo } from './options.js';
export { IDEMPOTENT_METHODS } from './options.js';
export type { Pacer } from './pacer.js';
export { createPacer } from './pacer.js';
export type { RetryBudgetOptions } from './retry-budget.js';
export type { HeaderReader, RetryHint, RetryHintSource } from './retry-hint.js';
export { parseRateLimitField, parseRetryAfter, parseXRateLimitReset, retryHint } from './retry-hint.js';
export type { Sleep } from './sleep.js';
export { timerSleep } from './sleep.js';
