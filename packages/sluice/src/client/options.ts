/**
 * The client's options, their defaults and their validation, done once in `createClient` so that a wrong option fails
 * there, naming itself, before any request is sent.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import { type ResolvedPolicy, resolvePolicy } from '../core/policy.js';
import { type AdaptiveThrottleOptions, resolveAdaptiveThrottle } from './adaptive-throttle.js';
import { type RetryBudgetOptions, resolveRetryBudget } from './retry-budget.js';
import type { RetryHintSource } from './retry-hint.js';
import { abortable, type Sleep, timerSleep } from './sleep.js';

/** A sending rate for client-side pacing: `limit` requests per `period`, with an optional burst. */
export interface PaceOptions {
  limit: number;
  period: Duration;
  /** Requests that may go back to back before the rate applies. @default 1 (evenly spaced) */
  burst?: number;
}

/** What `onRetry` is told before each wait. */
export interface RetryInfo {
  /** 1 for the first retry, 2 for the second, … */
  readonly retry: number;
  /** The status that caused the retry (429, 503, …). */
  readonly status: number;
  /** How long the client will wait before sending again. */
  readonly waitMs: number;
  /** The header the wait came from, or `'backoff'` when the server gave none. */
  readonly source: RetryHintSource | 'backoff';
  readonly method: string;
  readonly url: string;
}

/** Options of `createClient`. All optional. */
export interface ClientOptions {
  /** The fetch to wrap. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Retries after the first attempt (so at most `retries + 1` requests). @default 3 */
  retries?: number;
  /**
   * Most time spent waiting between attempts, in total. A server that asks for a longer wait than is
   * left gets its answer returned to the caller straight away instead. @default 60_000
   */
  maxWaitMs?: number;
  /** Backoff ceiling of the first retry without a server hint; doubles each retry. @default 200 */
  baseDelayMs?: number;
  /** Largest single backoff wait (server hints are bounded by `maxWaitMs` only). @default 20_000 */
  maxDelayMs?: number;
  /** Statuses that are retried. @default [429, 503] */
  retryOn?: readonly number[];
  /**
   * Methods that are retried. Requests with other methods are retried only when they carry an
   * `Idempotency-Key` header (the IETF idempotency-key draft, as Stripe uses it).
   * @default the idempotent methods of RFC 9110: GET, HEAD, OPTIONS, TRACE, PUT, DELETE
   */
  retryMethods?: readonly string[];
  /** Pace requests so they never go out faster than this; a number is requests per second. @default none */
  rate?: PaceOptions | number;
  /** Called before each wait for a retry (for logs and metrics). */
  onRetry?: (info: RetryInfo) => void;
  /**
   * Client-side adaptive throttling: when the backend accepts less than it is sent (429, 503, network
   * errors, timeouts), refuse a share of requests locally — they fail at once with
   * ERR_SLUICE_CLIENT_THROTTLED — so clients stop piling onto an overloaded or dead backend.
   * @default off
   */
  adaptiveThrottle?: boolean | AdaptiveThrottleOptions;
  /** Retries at most a share of the requests sent over a window (`true`: 10 % plus 10 per 10 s). @default off */
  retryBudget?: boolean | RetryBudgetOptions;
  /** Where time comes from (tests inject a manual clock). @default the system clock */
  clock?: Clock;
  /** How to wait (tests inject one that advances a manual clock). @default a timer */
  sleep?: Sleep;
  /** Randomness of the backoff jitter, in [0, 1). @default Math.random */
  random?: () => number;
}

/** Client options after validation. */
export interface ResolvedClientOptions {
  readonly fetch: typeof fetch;
  readonly retries: number;
  readonly maxWaitMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly retryOn: ReadonlySet<number>;
  readonly retryMethods: ReadonlySet<string>;
  readonly pace: ResolvedPolicy | undefined;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
  readonly adaptiveThrottle: Required<AdaptiveThrottleOptions> | undefined;
  readonly retryBudget: Required<RetryBudgetOptions> | undefined;
  readonly clock: Clock;
  readonly sleep: Sleep;
  readonly random: () => number;
}

/** RFC 9110 §9.2.2: methods whose repetition has the same effect as sending once. */
export const IDEMPOTENT_METHODS = ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'] as const;

const KNOWN = new Set([
  'fetch',
  'retries',
  'maxWaitMs',
  'baseDelayMs',
  'maxDelayMs',
  'retryOn',
  'retryMethods',
  'rate',
  'onRetry',
  'adaptiveThrottle',
  'retryBudget',
  'clock',
  'sleep',
  'random',
]);

/** Validates client options once, at construction; every error names the option. */
export function resolveClientOptions(options: ClientOptions = {}): ResolvedClientOptions {
  if (options === null || typeof options !== 'object') {
    throw invalid('options', 'expected an options object');
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) {
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `${key}: unknown option (known: ${[...KNOWN].join(', ')})`, {
        option: key,
      });
    }
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw invalid('fetch', 'expected a fetch function');
  const userSleep = options.sleep ?? timerSleep;
  if (typeof userSleep !== 'function') throw invalid('sleep', 'expected a function (ms, signal) => Promise');
  const random = options.random ?? Math.random;
  if (typeof random !== 'function') throw invalid('random', 'expected a function returning a number in [0, 1)');
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function') throw invalid('clock', 'expected an object with a now() method');
  if (options.onRetry !== undefined && typeof options.onRetry !== 'function') {
    throw invalid('onRetry', 'expected a function');
  }
  const retryOn = options.retryOn ?? [429, 503];
  if (!Array.isArray(retryOn) || !retryOn.every((s) => Number.isInteger(s) && s >= 100 && s <= 599)) {
    throw invalid('retryOn', 'expected an array of HTTP status codes (100-599)');
  }
  const retryMethods = options.retryMethods ?? IDEMPOTENT_METHODS;
  if (!Array.isArray(retryMethods) || !retryMethods.every((m) => typeof m === 'string' && m !== '')) {
    throw invalid('retryMethods', "expected an array of method names, e.g. ['GET', 'POST']");
  }
  const baseDelayMs = whole(options.baseDelayMs, 'baseDelayMs', 200);
  const maxDelayMs = whole(options.maxDelayMs, 'maxDelayMs', 20_000);
  return {
    fetch: fetchImpl,
    retries: whole(options.retries, 'retries', 3),
    maxWaitMs: whole(options.maxWaitMs, 'maxWaitMs', 60_000),
    baseDelayMs,
    maxDelayMs,
    retryOn: new Set(retryOn),
    retryMethods: new Set(retryMethods.map((m) => m.toUpperCase())),
    pace: resolvePace(options.rate),
    onRetry: options.onRetry,
    adaptiveThrottle: resolveAdaptiveThrottle(options.adaptiveThrottle),
    retryBudget: resolveRetryBudget(options.retryBudget),
    clock,
    // Whatever the injected sleep does with the signal, an abort ends the wait at once.
    sleep: (ms, signal) => abortable(userSleep(ms, signal), signal),
    random,
  };
}

function resolvePace(rate: ClientOptions['rate']): ResolvedPolicy | undefined {
  if (rate === undefined) return undefined;
  if (typeof rate === 'number') {
    if (!Number.isInteger(rate) || rate < 1) {
      throw invalid(
        'rate',
        `${rate} is not a whole number of requests per second ≥ 1; use { limit, period } for slower rates`,
      );
    }
    return resolvePolicy({ algorithm: 'token-bucket', limit: rate, period: 1000, burst: 1 }, 'rate.');
  }
  if (rate === null || typeof rate !== 'object')
    throw invalid('rate', 'expected { limit, period, burst? } or a number');
  const { limit, period, burst = 1, ...rest } = rate;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      `rate.${unknown}: unknown option (known: limit, period, burst)`,
      {
        option: `rate.${unknown}`,
      },
    );
  }
  if (limit === 0) throw invalid('rate.limit', 'a rate of 0 would never send; leave rate out to send unpaced');
  return resolvePolicy({ algorithm: 'token-bucket', limit, period, burst }, 'rate.');
}

function whole(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(option, `${String(value)} is not a whole number ≥ 0`);
  }
  return value;
}

function invalid(option: string, why: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${why}`, { option });
}
