/**
 * `createLimiter`, the library's core: one policy, or several checked together all or nothing, decided by a store, with
 * the limiter's failure policy answering when the store fails.
 */
import type { Clock } from '../core/clock.js';
import { optionError, SluiceError } from '../core/errors.js';
import type { MaybePromise, Store } from '../stores/store.js';
import { chargeItems, type LimiterCharge, registerCharge } from './charge.js';
import { type DecisionSource, decisionChannel, publishedAsync, publishedSync } from './decision-channel.js';
import { explainItems, type LimiterExplanation } from './explain.js';
import { createFailurePolicy, type FailurePolicy } from './failure-policy.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';
import { itemsFor, keyFor, settle, withFailure, withResults } from './limiter-parts.js';
import { type CheckOptions, createLimiterRun, type LimiterRun } from './limiter-run.js';
import { connectOpenTelemetry } from './opentelemetry.js';
import {
  type LimiterOptions,
  type ResolvedLimit,
  type ResolvedLimiterOptions,
  resolveCost,
  resolveLimiterOptions,
} from './options.js';
import { createReservations, type Reservation, type ReservationOptions, type SettleResult } from './reservations.js';

export type { LimitExplanation, LimiterExplanation } from './explain.js';
export type { LimiterDecision, LimitResult } from './limiter-decision.js';
export type { LimiterKey } from './limiter-key.js';
export { keyFor, settle, withFailure, withResults } from './limiter-parts.js';
export type { CheckOptions } from './limiter-run.js';

/** Options of `refund`. */
export interface RefundOptions extends CheckOptions {
  /**
   * When the units were taken (ms since the epoch, on the limiter's clock): the time of the check that took them.
   * A window algorithm gives them back only to the window that counted them — none once that window has ended (a
   * sliding window: once it weighs nothing) — and a sliding log removes the newest entry at or before this time,
   * not a later request's. Buckets and GCRA ignore it (they never refill past full). A remote store refunds at the
   * service's time (its protocol has no field for this). @default now
   */
  takenAtMs?: number;
}

/** A rate limiter: one policy, or several checked together. */
export interface Limiter {
  readonly limits: readonly ResolvedLimit[];
  readonly store: Store;
  readonly clock: Clock;
  /** Decides a request and, if allowed, takes its cost. A rejection takes nothing. */
  check(key: LimiterKey, options?: CheckOptions): Promise<LimiterDecision>;
  /**
   * `check` without a promise, for synchronous stores (the memory store): the fastest path.
   * @throws SluiceError `ERR_SLUICE_STORE_NOT_SYNC` on an asynchronous store.
   */
  checkSync(key: LimiterKey, options?: CheckOptions): LimiterDecision;
  /** Whether a request of `cost` (default 1) would pass now, taking nothing. */
  peek(key: LimiterKey, options?: CheckOptions): Promise<LimiterDecision>;
  /**
   * Why the next check of `cost` (default 1) would pass or not, taking nothing: every limit's counter,
   * which one binds and when each resets.
   * @example
   * const why = await limiter.explain('user:42');
   * for (const l of why.limits) console.log(l.name, l.used, '/', l.capacity, l.binding ? '← binds' : '');
   */
  explain(key: LimiterKey, options?: CheckOptions): Promise<LimiterExplanation>;
  /**
   * Gives back `cost` units (default 1) that an earlier check took, at `takenAtMs` (default now): only to the window
   * that counted them, so a refund after the window rolled frees nothing in the new window.
   * @example
   * const at = limiter.clock.now();
   * const decision = await limiter.check('user:42');
   * if (decision.allowed && (await work()).failed) await limiter.refund('user:42', { takenAtMs: at });
   */
  refund(key: LimiterKey, options?: RefundOptions): Promise<void>;
  /**
   * Takes an estimated `cost` now (all or nothing across every limit, as `check` does) and settles the
   * real cost later: `settle(actual)` gives back the difference or takes the extra, `cancel()` gives all
   * back; an unsettled reservation lapses after the limiter's `reservationTtl` (`onExpire`).
   * @example
   * const r = await limiter.reserve('key-1', { cost: 1200 });
   * if (r.allowed) await r.settle(await run());
   */
  reserve(key: LimiterKey, options: { cost: number }): Promise<Reservation>;
  /**
   * Settles a reservation by its id — from another process too, when the limiter has a `reservationStore`. Bad
   * costs, unknown ids and second settles are coded answers (`ok: false`), never exceptions.
   */
  settle(id: string, actualCost: number): Promise<SettleResult>;
  /** Cancels a reservation by its id: all of it goes back. */
  cancel(id: string): Promise<SettleResult>;
  /** Forgets the key's counters (and block) under every limit of this limiter. */
  reset(key: LimiterKey): Promise<void>;
}

/**
 * Creates a limiter. Options are validated here, once; a bad one throws a SluiceError naming it.
 *
 * @example
 * const limiter = createLimiter({ algorithm: 'token-bucket', limit: 100, period: '1m', burst: 20 });
 * const d = await limiter.check('user:42');
 * if (!d.allowed) console.log(`retry in ${d.retryAfterMs} ms`);
 * @example
 * // Several limits, all or nothing: a rejected request consumes from none of them.
 * const both = createLimiter({ limits: [
 *   { name: 'second', limit: 10, period: '1s' },
 *   { name: 'day', limit: 10_000, period: '1d' },
 * ] });
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const resolved = resolveLimiterOptions(options);
  const { limits, store, clock, failure } = resolved;
  const runner = createLimiterRun(limits, store, clock, failure, options.limits !== undefined);
  const { check, checkSync, refund, reset } = checkingMethods(resolved, runner, options.name);
  const limiter: Limiter = {
    limits,
    store,
    clock,
    check,
    checkSync,
    peek: (key, o) => settle(() => runner.run(key, o, false)),
    explain: (key, o) =>
      settle(() => {
        const cost = resolveCost(o?.cost);
        return explainItems(store, failure, itemsFor(limits, key, cost), clock.now(), cost);
      }),
    refund,
    reset,
    reserve: (key, reservation) => reservations.reserve(key, reservation),
    settle: (id, actual) => reservations.settle(id, actual),
    cancel: (id) => reservations.cancel(id),
  };
  // Validated now (a bad reservationTtl, onExpire or reservationStore throws here); the book holds no timer.
  const charge = chargeOn(resolved);
  registerCharge(limiter, charge);
  const reservations = createReservations(
    { clock, check: limiter.check, refund: limiter.refund, charge },
    reservationOptions(options),
  );
  failures.set(limiter, failure);
  return limiter;
}

/** What an HTTP middleware asks of its limiters: checks, refunds and resets (no peek, explain or reservations). */
export type CheckingLimiter = Pick<Limiter, 'limits' | 'store' | 'clock' | 'check' | 'checkSync' | 'refund' | 'reset'>;

/**
 * A limiter with `createLimiter`'s checks, refunds and resets and nothing else, for the middleware's limits (private to
 * it): an edge bundle of `sluice/hono` then carries no reservation book, explain or debt charge. Its checks
 * are published on `sluice:decision` as every limiter's are.
 */
export function createCheckingLimiter(options: LimiterOptions): CheckingLimiter {
  const resolved = resolveLimiterOptions(options);
  const { limits, store, clock, failure } = resolved;
  const runner = createLimiterRun(limits, store, clock, failure, options.limits !== undefined);
  return { limits, store, clock, ...checkingMethods(resolved, runner, options.name) };
}

/** check, checkSync, refund and reset of a limiter, its checks published on `sluice:decision`. */
function checkingMethods(
  resolved: ResolvedLimiterOptions,
  runner: LimiterRun,
  name: string | undefined,
): Pick<Limiter, 'check' | 'checkSync' | 'refund' | 'reset'> {
  const { limits, store } = resolved;
  // Checks are published on `sluice:decision` while it has subscribers (OpenTelemetry's, once an SDK is there).
  const source: DecisionSource = { name, limits: limits.map((l) => l.name) };
  void connectOpenTelemetry();
  return {
    check: checkMethod(runner, store, source),
    checkSync: (key, o) =>
      decisionChannel.hasSubscribers
        ? publishedSync(source, key, o, () => checkSyncOf(runner, store, key, o))
        : checkSyncOf(runner, store, key, o),
    ...upkeep(resolved),
  };
}

/**
 * `check`: no closure per call (settle() would take one), since `await limiter.check()` is a hot path too. On a
 * synchronous store an async function is the cheapest promise: one allocation, and a throw (misuse) becomes the
 * rejection. One limit there calls runOne directly: no test.
 */
function checkMethod(runner: LimiterRun, store: Store, source: DecisionSource): Limiter['check'] {
  const { runOne, run } = runner;
  if (runner.oneSync)
    return async (key, options) => {
      if (decisionChannel.hasSubscribers) return publishedSync(source, key, options, () => runOne(key, options, true));
      const decision = runOne(key, options, true);
      // Resolving a promise with an object looks up its `then` (a generic lookup, ~300 instructions when V8 has not
      // inlined where the object was made). Reading a field here checks the decision's map, so V8 knows it has none
      // and fulfils the promise directly.
      decision.allowed;
      return decision;
    };
  if (store.synchronous)
    return async (key, options) =>
      decisionChannel.hasSubscribers
        ? publishedSync(source, key, options, () => run(key, options, true) as LimiterDecision)
        : (run(key, options, true) as LimiterDecision);
  const pending = (key: LimiterKey, options: CheckOptions | undefined): Promise<LimiterDecision> => {
    try {
      const result = run(key, options, true);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return (key, options) =>
    decisionChannel.hasSubscribers
      ? publishedAsync(source, key, options, pending(key, options))
      : pending(key, options);
}

function checkSyncOf(runner: LimiterRun, store: Store, key: LimiterKey, options?: CheckOptions): LimiterDecision {
  if (runner.oneSync) return runner.runOne(key, options, true);
  if (!store.synchronous) {
    throw new SluiceError(
      'ERR_SLUICE_STORE_NOT_SYNC',
      `checkSync needs a synchronous store (the memory store); the ${store.name} store is asynchronous, use check()`,
    );
  }
  return runner.run(key, options, true) as LimiterDecision;
}

/** `refund` and `reset`: on every limit the key carries. */
function upkeep({ limits, store, clock, failure }: ResolvedLimiterOptions): Pick<Limiter, 'refund' | 'reset'> {
  const eachLimit = (key: LimiterKey, act: (k: string, limit: ResolvedLimit) => MaybePromise<void>) => {
    const work = limits.flatMap((limit) => {
      const k = keyFor(key, limit.name);
      return k === undefined ? [] : [act(k, limit)];
    });
    return Promise.all(work).then(() => undefined);
  };
  return {
    refund: (key, options) =>
      settle(() => {
        const cost = resolveCost(options?.cost);
        const takenAtMs = resolveTakenAt(options?.takenAtMs);
        const taken = takenAtMs === undefined ? {} : { takenAtMs };
        if (store.refundMany !== undefined && limits.length > 1) {
          // Every limit in one call: one round trip on Redis (a reservation's settle under its estimate).
          const items = itemsFor(limits, key, cost).map((item) => ({ ...item, ...taken }));
          const nowMs = clock.now();
          return withFailure(
            () => (store.refundMany as NonNullable<Store['refundMany']>)(items, nowMs),
            () => {
              for (const item of items) failure.refund(item, nowMs);
            },
          );
        }
        return eachLimit(key, (k, limit) => {
          const nowMs = clock.now();
          // A refund the store cannot take is dropped (the stand-in takes it under insurance): failing the caller's
          // request over it would be worse.
          return withFailure(
            () => store.refund(k, limit.policy, cost, nowMs, takenAtMs),
            () => failure.refund({ key: k, policy: limit.policy, cost, ...taken }, nowMs),
          );
        });
      }),
    reset: (key) =>
      settle(() =>
        eachLimit(key, (k, limit) => {
          failure.reset(k, limit.policy);
          return store.reset(k, limit.policy);
        }),
      ),
  };
}

/** A settle's extra on every limit at once, even past them (debt; see limiter/charge.ts). */
function chargeOn({ limits, store, clock, failure }: ResolvedLimiterOptions): LimiterCharge {
  return async (key: LimiterKey, { cost }: { cost: number }) => {
    const items = itemsFor(limits, key, cost);
    const { decisions, took } = await chargeItems(store, failure, items, clock.now());
    return { decision: withResults(items, decisions), took };
  };
}

/** The reservation options a limiter passes on (only those given: the book has the defaults). */
function reservationOptions(options: LimiterOptions): ReservationOptions {
  return {
    ...(options.reservationTtl === undefined ? {} : { reservationTtl: options.reservationTtl }),
    ...(options.onExpire === undefined ? {} : { onExpire: options.onExpire }),
    ...(options.reservationStore === undefined ? {} : { reservationStore: options.reservationStore }),
    ...(options.maxOutstanding === undefined ? {} : { maxOutstanding: options.maxOutstanding }),
  };
}

/** Each limiter's failure policy, for checkAll (kept off the public Limiter type). */
const failures = new WeakMap<Limiter, FailurePolicy>();
/** The fail-open policy, made on first use: a call at module level would stay in every bundle, checkAll or not. */
let open: FailurePolicy | undefined;

/** The failure policy of a limiter made by createLimiter (fail-open for any other). */
export function failureOf(limiter: Limiter): FailurePolicy {
  const own = failures.get(limiter);
  if (own !== undefined) return own;
  open ??= createFailurePolicy({});
  return open;
}

/** A refund's `takenAtMs`: a time in ms, or undefined for now. */
function resolveTakenAt(takenAtMs: unknown): number | undefined {
  if (takenAtMs === undefined || (typeof takenAtMs === 'number' && Number.isFinite(takenAtMs))) return takenAtMs;
  throw optionError(
    'takenAtMs',
    `${String(takenAtMs)} is not a time in ms (the time of the check that took the units)`,
  );
}
