/**
 * `createLimiter`, the library's core: one policy, or several checked together all or nothing, decided by a store, with
 * the limiter's failure policy answering when the store fails.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import {
  type CheckWithFallback,
  type MaybePromise,
  type Store,
  type StoreItem,
  takesFallback,
} from '../stores/store.js';
import { combineDecisions, decisionWithResults } from './combine.js';
import { observeChecks } from './decision-channel.js';
import { explainItems, type LimiterExplanation } from './explain.js';
import { createFailurePolicy, type FailurePolicy, isStoreFailure } from './failure-policy.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';
import { connectOpenTelemetry } from './opentelemetry.js';
import type { LimiterOptions, ResolvedLimit } from './options.js';
import { createReservations, type Reservation, type Reservations } from './reservations.js';

export type { LimitExplanation, LimiterExplanation } from './explain.js';
export type { LimiterDecision, LimitResult } from './limiter-decision.js';

import { resolveCost, resolveLimiterOptions } from './options.js';

export type { LimiterKey } from './limiter-key.js';

/** Per-check options. */
export interface CheckOptions {
  /** Units this request takes (integer ≥ 0; 0 looks without taking). @default 1 */
  cost?: number;
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
  /** Gives back `cost` units (default 1) that an earlier check took. */
  refund(key: LimiterKey, options?: CheckOptions): Promise<void>;
  /**
   * Takes an estimated `cost` now (all or nothing across every limit, as `check` does) and settles the
   * real cost later: `settle(actual)` gives back the difference or takes the extra, `cancel()` gives all
   * back; an unsettled reservation lapses after the limiter's `reservationTtl` (`onExpire`).
   * @example
   * const r = await limiter.reserve('key-1', { cost: 1200 });
   * if (r.allowed) await r.settle(await run());
   */
  reserve(key: LimiterKey, options: { cost: number }): Promise<Reservation>;
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
  const { limits, store, clock, failure } = resolveLimiterOptions(options);
  const multi = options.limits !== undefined;
  const single = limits[0] as ResolvedLimit;
  const { policy } = single;
  const oneSync = !multi && store.synchronous;
  /** The store's check, when it answers failures with the failure policy itself (stores/store.ts). */
  const checkOrFallBack = !multi && takesFallback(store) ? (store.check as CheckWithFallback) : undefined;

  /**
   * One limit on a synchronous store (the memory store): the path `checkSync` and `await check()` take
   * most often, so it does only what that case needs — no promise test, no closure.
   */
  function runOne(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): Decision {
    const cost = options === undefined ? 1 : resolveCost(options.cost);
    const k = typeof key === 'string' ? key : singleKey(key, single.name);
    const nowMs = clock.now();
    try {
      return store.check(k, policy, cost, nowMs, commit) as Decision;
    } catch (error) {
      return failSingle(error, k, cost, nowMs, commit);
    }
  }

  function run(key: LimiterKey, options: CheckOptions | undefined, commit: boolean): MaybePromise<LimiterDecision> {
    if (oneSync) return runOne(key, options, commit);
    const cost = resolveCost(options?.cost);
    const nowMs = clock.now();
    if (!multi) {
      const k = singleKey(key, single.name);
      // The hot path: no closure and, on a synchronous store (memory), no promise either.
      try {
        // Redis: the store's own promise, resolved with the failure policy's answer if it fails.
        if (checkOrFallBack !== undefined) {
          return checkOrFallBack.call(store, k, single.policy, cost, nowMs, commit, failSingle);
        }
        const decision = store.check(k, single.policy, cost, nowMs, commit);
        return decision instanceof Promise
          ? decision.catch((error: unknown) => failSingle(error, k, cost, nowMs, commit))
          : decision;
      } catch (error) {
        return failSingle(error, k, cost, nowMs, commit);
      }
    }
    const items = itemsFor(limits, key, cost);
    return withFailure(
      () => {
        const decisions = store.checkMany(items, nowMs, commit);
        return decisions instanceof Promise
          ? decisions.then((ds) => withResults(items, ds))
          : withResults(items, decisions);
      },
      () => withResults(items, failure.decide(items, nowMs, commit)),
    );
  }

  /** The failure policy's answer for a single-limit check whose store call failed; misuse is rethrown. */
  function failSingle(error: unknown, key: string, cost: number, nowMs: number, commit: boolean): Decision {
    if (!isStoreFailure(error)) throw error;
    return failure.decide([{ key, policy: single.policy, cost }], nowMs, commit)[0] as Decision;
  }

  function eachLimit(key: LimiterKey, act: (k: string, limit: ResolvedLimit) => MaybePromise<void>): Promise<void> {
    const work = limits.flatMap((limit) => {
      const k = keyFor(key, limit.name);
      return k === undefined ? [] : [act(k, limit)];
    });
    return Promise.all(work).then(() => undefined);
  }

  const unobserved: Limiter = {
    limits,
    store,
    clock,
    // No closure per call (settle() would take one): `await limiter.check()` is a hot path too.
    // On a synchronous store an async function is the cheapest promise: one allocation, and a throw
    // (misuse) becomes the rejection. One limit there calls runOne directly: no test.
    check: oneSync
      ? async (key, options) => {
          const decision = runOne(key, options, true);
          // Resolving a promise with an object looks up its `then` (a generic lookup, ~300 instructions
          // when V8 has not inlined where the object was made). Reading a field here checks the
          // decision's map, so V8 knows it has none and fulfils the promise directly.
          decision.allowed;
          return decision;
        }
      : store.synchronous
        ? async (key, options) => run(key, options, true)
        : (key, options) => {
            try {
              const result = run(key, options, true);
              return result instanceof Promise ? result : Promise.resolve(result);
            } catch (error) {
              return Promise.reject(error);
            }
          },
    checkSync(key, options) {
      if (oneSync) return runOne(key, options, true);
      if (!store.synchronous) {
        throw new SluiceError(
          'ERR_SLUICE_STORE_NOT_SYNC',
          `checkSync needs a synchronous store (the memory store); the ${store.name} store is asynchronous, use check()`,
        );
      }
      return run(key, options, true) as LimiterDecision;
    },
    peek: (key, options) => settle(() => run(key, options, false)),
    explain: (key, options) =>
      settle(() => {
        const cost = resolveCost(options?.cost);
        return explainItems(store, failure, itemsFor(limits, key, cost), clock.now(), cost);
      }),
    refund: (key, options) =>
      settle(() => {
        const cost = resolveCost(options?.cost);
        return eachLimit(key, (k, limit) => {
          const nowMs = clock.now();
          // A refund the store cannot take is dropped (the stand-in takes it under insurance): failing
          // the caller's request over it would be worse.
          return withFailure(
            () => store.refund(k, limit.policy, cost, nowMs),
            () => failure.refund({ key: k, policy: limit.policy, cost }, nowMs),
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
    reserve: (key, reservation) => reservations.reserve(key, reservation),
  };
  // Checks published on `sluice:decision` while it has subscribers (OpenTelemetry's, once an SDK is there).
  const limiter = observeChecks(
    unobserved,
    options.name,
    limits.map((l) => l.name),
  );
  void connectOpenTelemetry();
  // Validated now (a bad reservationTtl or onExpire throws here); the book holds no timer.
  const reservations: Reservations = createReservations(limiter, {
    ...(options.reservationTtl === undefined ? {} : { reservationTtl: options.reservationTtl }),
    ...(options.onExpire === undefined ? {} : { onExpire: options.onExpire }),
  });
  failures.set(limiter, failure);
  return limiter;
}

/** Each limiter's failure policy, for checkAll (kept off the public Limiter type). */
const failures = new WeakMap<Limiter, FailurePolicy>();
const OPEN = createFailurePolicy({ fail: 'open' });

/** The failure policy of a limiter made by createLimiter (fail-open for any other). */
export function failureOf(limiter: Limiter): FailurePolicy {
  return failures.get(limiter) ?? OPEN;
}

/**
 * Runs a store call; when the store fails (not when it is misused), answers with `fallback` instead:
 * the limiter's failure policy.
 */
export function withFailure<T>(call: () => MaybePromise<T>, fallback: () => T): MaybePromise<T> {
  let result: MaybePromise<T>;
  try {
    result = call();
  } catch (error) {
    if (isStoreFailure(error)) return fallback();
    throw error;
  }
  return result instanceof Promise
    ? result.catch((error: unknown) => {
        if (isStoreFailure(error)) return fallback();
        throw error;
      })
    : result;
}

/** Runs `work` and always answers with a promise, turning a synchronous throw into a rejection. */
export function settle<T>(work: () => MaybePromise<T>): Promise<T> {
  try {
    const result = work();
    return result instanceof Promise ? result : Promise.resolve(result);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The key of limit `name`, or undefined when the request does not carry one. */
export function keyFor(key: LimiterKey, name: string): string | undefined {
  if (typeof key === 'string') return key;
  if (key === null || typeof key !== 'object') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      `key: expected a string or an object of strings, got ${typeof key}`,
    );
  }
  const k = key[name];
  if (k === null || k === undefined) return undefined;
  if (typeof k !== 'string') {
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `key.${name}: expected a string, got ${typeof k}`);
  }
  return k;
}

function singleKey(key: LimiterKey, name: string): string {
  const k = typeof key === 'string' ? key : keyFor(key, name);
  if (typeof k !== 'string') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      `key: expected a string, got ${k === undefined ? 'nothing' : typeof k}`,
    );
  }
  return k;
}

function itemsFor(limits: readonly ResolvedLimit[], key: LimiterKey, cost: number): (StoreItem & { name: string })[] {
  const items: (StoreItem & { name: string })[] = [];
  for (const limit of limits) {
    const k = keyFor(key, limit.name);
    if (k !== undefined) items.push({ key: k, policy: limit.policy, cost, name: limit.name });
  }
  return items;
}

/** The combined decision with each limit's own attached. */
export function withResults(
  items: readonly (StoreItem & { name: string })[],
  decisions: readonly Decision[],
): LimiterDecision {
  return decisionWithResults(
    combineDecisions(decisions),
    items.map((item, i) => ({ name: item.name, key: item.key, decision: decisions[i] as Decision })),
  );
}
