/**
 * `createClient`, the rate-limit-aware fetch of `sluice/client`: on a 429 or 503 it waits as long as the server asked
 * (or a jittered backoff) and sends again, within budgets of retries and total wait, and only when a retry is safe.
 */
import { SluiceError } from '../core/errors.js';
import { createAdaptiveThrottle } from './adaptive-throttle.js';
import { fullJitterBackoff } from './backoff.js';
import { type ClientOptions, resolveClientOptions } from './options.js';
import { createPacer } from './pacer.js';
import { createRetryBudget } from './retry-budget.js';
import { retryHint } from './retry-hint.js';

/** Answers that say the backend did not take the request (for adaptive throttling). */
const REFUSALS = new Set([429, 503]);

/** `fetch`'s options, plus per-request overrides of the client's retry budget. */
export interface ClientRequestInit extends RequestInit {
  /** Retries for this request. @default the client's `retries` */
  retries?: number;
  /** Total wait budget for this request. @default the client's `maxWaitMs` */
  maxWaitMs?: number;
}

/** A fetch that waits and retries when rate limited, and paces itself if given a rate. */
export interface Client {
  /**
   * Sends like `fetch`, retrying a 429/503 after the wait the server asked for (or a jittered backoff),
   * within the attempt and wait budgets. Resolves to the last response — a 429 included, when the budget
   * ran out or the server asked for a longer wait than is left; it never throws for a status.
   * Rejects like `fetch` on network errors, and with the signal's reason as soon as it aborts.
   */
  fetch(input: string | URL | Request, init?: ClientRequestInit): Promise<Response>;
}

/**
 * Creates a client for calling rate-limited APIs.
 *
 * Retried: the statuses in `retryOn` (429, 503), for idempotent methods — or any method when the
 * request carries an `Idempotency-Key` header — and only when the body can be sent again: a body that
 * is a stream (a `ReadableStream`, a Node stream, an async iterable, or a `Request` object's own body)
 * is sent once and its response returned as is.
 *
 * @example
 * import { createClient } from 'sluice/client';
 * const api = createClient({ retries: 4, maxWaitMs: 30_000, rate: { limit: 10, period: '1s' } });
 * const response = await api.fetch('https://api.example.com/v1/things');
 */
export function createClient(options: ClientOptions = {}): Client {
  const o = resolveClientOptions(options);
  const pacer = o.pace === undefined ? undefined : createPacer(o.pace, o.clock, o.sleep);
  const throttle = o.adaptiveThrottle && createAdaptiveThrottle(o.adaptiveThrottle, o.clock, o.random);
  const retryBudget = o.retryBudget && createRetryBudget(o.retryBudget, o.clock);

  /** Sends once, telling the throttle whether the backend took it. */
  async function attempt(input: string | URL | Request, init: RequestInit): Promise<Response> {
    if (throttle === undefined) return o.fetch(input, init);
    let response: Response;
    try {
      response = await o.fetch(input, init);
    } catch (error) {
      // Network errors and timeouts are the backend not taking it; the caller's own abort (not a
      // TimeoutError) says nothing of the backend, so it is taken back: it weighs on neither side.
      if ((error as { name?: string })?.name === 'AbortError') throttle.withdrawn();
      throw error;
    }
    if (!REFUSALS.has(response.status)) throttle.accepted();
    return response;
  }

  async function send(input: string | URL | Request, init: ClientRequestInit = {}): Promise<Response> {
    const { retries: retriesOverride, maxWaitMs: maxWaitOverride, ...fetchInit } = init;
    const retries = budget(retriesOverride, 'retries', o.retries);
    const maxWaitMs = budget(maxWaitOverride, 'maxWaitMs', o.maxWaitMs);
    const request = input instanceof Request ? input : undefined;
    const method = (fetchInit.method ?? request?.method ?? 'GET').toUpperCase();
    const signal = fetchInit.signal ?? request?.signal ?? undefined;
    const retryable =
      canSendAgain(request, fetchInit) && (o.retryMethods.has(method) || hasIdempotencyKey(request, fetchInit));
    let waited = 0;
    retryBudget?.request();
    if (throttle?.refuse()) throw throttled(throttle.probability());
    for (let retry = 0; ; retry++) {
      if (pacer !== undefined) await pacer.take(signal);
      const response = await attempt(input, fetchInit);
      if (!retryable || retry >= retries || !o.retryOn.has(response.status)) return response;
      // A retry the budget or the throttle refuses: the backend's own answer is the best one left.
      if (retryBudget?.tryRetry() === false || throttle?.refuse()) return response;
      const left = maxWaitMs - waited;
      const hint = retryHint(response.headers, o.clock.now());
      let waitMs: number;
      if (hint !== undefined) {
        // Retrying sooner than the server said would only be refused again.
        if (hint.waitMs > left) return response;
        waitMs = hint.waitMs;
      } else {
        if (left <= 0) return response;
        waitMs = Math.min(left, fullJitterBackoff(retry, o.baseDelayMs, o.maxDelayMs, o.random));
      }
      o.onRetry?.({
        retry: retry + 1,
        status: response.status,
        waitMs,
        source: hint?.source ?? 'backoff',
        method,
        url: request?.url ?? String(input),
      });
      // Free the connection: the body of a response we are not returning will never be read.
      await response.body?.cancel().catch(() => {});
      await o.sleep(waitMs, signal);
      waited += waitMs;
    }
  }

  return { fetch: send };
}

function throttled(probability: number): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_CLIENT_THROTTLED',
    `not sent: the backend has been refusing requests, so this client refuses ${Math.round(probability * 100)} % of them locally (adaptiveThrottle); it sends more as the backend accepts again`,
  );
}

function budget(value: number | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${String(value)} is not a whole number ≥ 0`, {
      option,
    });
  }
  return value;
}

/** False when the body is a stream: it is consumed by the first send and cannot be replayed. */
function canSendAgain(request: Request | undefined, init: RequestInit): boolean {
  const body: unknown = init.body;
  if (body === undefined || body === null) return request?.body === null || request === undefined;
  if (typeof body !== 'object') return true;
  if (body instanceof ReadableStream) return false;
  const b = body as { pipe?: unknown; [Symbol.asyncIterator]?: unknown };
  return typeof b.pipe !== 'function' && typeof b[Symbol.asyncIterator] !== 'function';
}

function hasIdempotencyKey(request: Request | undefined, init: RequestInit): boolean {
  if (init.headers !== undefined && new Headers(init.headers).has('idempotency-key')) return true;
  return request?.headers.has('idempotency-key') ?? false;
}
