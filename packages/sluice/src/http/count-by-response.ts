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
  /** Give back what a failed request took (status ≥ 400, or the client went away first). @default false */
  skipFailedRequests?: boolean;
  /**
   * Whether a response counts as successful, for the two options above. `status` is 0 when the
   * connection closed before the response was sent. @default status 1–399
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
    // A response that never went out (status 0) failed, whatever requestWasSuccessful would say.
    const ok = status !== 0 && (await wasSuccessful(req, status));
    return (ok && skipOk === true) || (!ok && skipFailed === true) ? -charged : 0;
  }

  return (req, limiter, key, charged) => {
    let done = false;
    return async (status) => {
      if (done) return;
      done = true;
      try {
        const d = await delta(req, status, charged);
        if (d < 0) await limiter.refund(key, { cost: -d });
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
  readonly destroyed?: boolean;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

/** Calls `after` once when a Node response is sent (its status) or abandoned (0). */
export function afterNodeResponse(res: NodeResponseLike, after: AfterResponse): void {
  // Decided after the client left (a queued or asynchronous decision): 'close' has been emitted
  // already and would never come, so the request is settled now.
  if (res.destroyed === true) {
    void after(res.writableFinished === true ? res.statusCode : 0);
    return;
  }
  res.once('finish', () => void after(res.statusCode));
  res.once('close', () => {
    if (res.writableFinished !== true) void after(0);
  });
}
