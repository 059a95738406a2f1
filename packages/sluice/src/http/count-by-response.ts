/**
 * Counting a request by its response: `skipSuccessfulRequests`, `skipFailedRequests` and `responseCost` settle what a
 * request took once its status is known, giving units back or taking more.
 */

import { optionError } from '../core/errors.js';
import type { CheckingLimiter, LimiterKey } from '../limiter/create-limiter.js';
import type { Awaitable } from './request.js';
import { warnOnce } from './warn.js';

/** Options that count a request by its response (express-rate-limit's names, same meaning). */
export interface ResponseCountingOptions<Req> {
  /** Give back what a successful request took: only failures count (e.g. failed logins). @default false */
  skipSuccessfulRequests?: boolean;
  /**
   * Give back what a failed request took (status ≥ 400). A request whose client went away before the response still
   * counts: the server did its work. @default false
   */
  skipFailedRequests?: boolean;
  /**
   * Whether a response counts as successful, for the two options above. Not asked when the connection closed
   * before the response was sent: such a request always counts. @default status 1–399
   */
  requestWasSuccessful?: (req: Req, status: number) => Awaitable<boolean>;
  /**
   * The request's real cost, known once the response is (e.g. the rows a query returned, the tokens
   * a model produced): the difference from what was taken is given back or taken as well, under every
   * limit of the request at once. Taking more is all or nothing: when it does not fit, nothing more is
   * taken and the next request over the limit is rejected as usual.
   */
  responseCost?: (req: Req, status: number) => Awaitable<number>;
}

/** Called once when the response is done (or abandoned, status 0); settles the count. */
export type AfterResponse = (status: number) => Promise<void>;

/** Each option's type, and what its message says it expects. */
const EXPECTED = [
  ['skipSuccessfulRequests', 'boolean', 'true or false'],
  ['skipFailedRequests', 'boolean', 'true or false'],
  ['requestWasSuccessful', 'function', 'a function (req, status)'],
  ['responseCost', 'function', 'a function (req, status)'],
] as const;

const defaultSuccess = (_req: unknown, status: number) => status > 0 && status < 400;

/**
 * Compiles the response-counting options; undefined when none is set (nothing to do after a response,
 * and the middleware keeps its fast path).
 */
export function createResponseCounting<Req>(
  options: ResponseCountingOptions<Req>,
): ((req: Req, limiter: CheckingLimiter, key: LimiterKey, charged: number) => AfterResponse) | undefined {
  const { skipSuccessfulRequests: skipOk, skipFailedRequests: skipFailed, responseCost } = options;
  for (const [name, type, expected] of EXPECTED) {
    const v = options[name];
    if (v !== undefined && typeof v !== type) throw optionError(name, `expected ${expected}`);
  }
  if (responseCost !== undefined && (skipOk === true || skipFailed === true)) {
    throw optionError(
      'responseCost',
      'give either responseCost or skipSuccessfulRequests/skipFailedRequests; responseCost can return 0 for what should not count',
    );
  }
  if (responseCost === undefined && skipOk !== true && skipFailed !== true) {
    if (options.requestWasSuccessful !== undefined) {
      throw optionError(
        'requestWasSuccessful',
        'only used with skipSuccessfulRequests or skipFailedRequests; set one of them',
      );
    }
    return undefined;
  }
  const wasSuccessful = options.requestWasSuccessful ?? defaultSuccess;

  async function delta(req: Req, status: number, charged: number): Promise<number> {
    if (responseCost !== undefined) {
      const real = await responseCost(req, status);
      if (!(Number.isInteger(real) && real >= 0 && real <= 1e9))
        throw optionError(
          'responseCost',
          `returned ${String(real)}, not a whole number ≥ 0`,
          'ERR_SLUICE_INVALID_COST',
        );
      return real - charged;
    }
    // A response that never went out (status 0: the client went away first) counts: the server did the work, and a
    // refund would make hanging up a free pass past the limit.
    if (status === 0) return 0;
    const ok = await wasSuccessful(req, status);
    return (ok && skipOk === true) || (!ok && skipFailed === true) ? -charged : 0;
  }

  return (req, limiter, key, charged) => {
    // Called as the check's decision arrives: the time its units were taken. A refund given after the window rolled
    // then frees nothing in the new window (else a slow failed request would let the next window pass extra ones).
    const takenAtMs = limiter.clock.now();
    let done = false;
    return async (status) => {
      if (done) return;
      done = true;
      try {
        const d = await delta(req, status, charged);
        if (d < 0) await limiter.refund(key, { cost: -d, takenAtMs });
        else if (d > 0) await limiter.check(key, { cost: d });
      } catch (error) {
        // After the response there is nobody to answer: report it instead of crashing the process.
        warnOnce(
          'SLUICE_RESPONSE_COUNTING_FAILED',
          `sluice: counting a request by its response failed: ${(error as Error)?.message ?? String(error)}`,
        );
      }
    };
  };
}

/** The events of a Node `ServerResponse` that end a request (structural: this module imports no node:*). */
export interface NodeResponseLike {
  readonly statusCode: number;
  readonly writableFinished?: boolean;
  readonly writableEnded?: boolean;
  readonly destroyed?: boolean;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  /** The handler's end of the response: after the client left, the request is settled when it is called. */
  end?(...args: unknown[]): unknown;
}

/**
 * Calls `after` once when a Node response is sent (its status) or abandoned (0). An abandoned request is settled once
 * the handler has ended the response, not when the client left: until then the handler is still running, and settling
 * earlier would give its concurrency place back while it runs (a client hanging up at once would get unlimited
 * handlers). A handler that never ends the response holds its place until the place's lease lapses.
 */
export function afterNodeResponse(res: NodeResponseLike, after: AfterResponse): void {
  // Decided after the client left (a queued or asynchronous decision): 'close' has been emitted
  // already and would never come, so the request is settled now, or when the handler ends it.
  if (res.destroyed === true) {
    afterAbandoned(res, after);
    return;
  }
  res.once('finish', () => void after(res.statusCode));
  res.once('close', () => {
    if (res.writableFinished !== true) afterAbandoned(res, after);
  });
}

/**
 * The client went away before the response was sent. A destroyed response emits no 'finish' when the handler ends it
 * later (Node sets writableEnded and nothing else), so its `end` is wrapped to tell when the handler is done.
 */
function afterAbandoned(res: NodeResponseLike, after: AfterResponse): void {
  if (res.writableFinished === true) {
    void after(res.statusCode);
    return;
  }
  const end = res.end;
  if (res.writableEnded === true || typeof end !== 'function') {
    void after(0);
    return;
  }
  res.end = function endThenSettle(this: unknown, ...args: unknown[]) {
    res.end = end;
    try {
      return end.apply(this, args);
    } finally {
      void after(0);
    }
  };
}
