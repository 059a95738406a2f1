/**
 * The store interface: where counters live. Every store (memory, Redis, multi-region, remote) makes the same decisions;
 * they differ in where the state is kept and how they fail.
 */
import type { Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';

/** A value, or a promise of it: the memory store answers synchronously, Redis asynchronously. */
export type MaybePromise<T> = T | Promise<T>;

/** One limit of a request: the key to count under and the policy to count it by. */
export interface StoreItem {
  readonly key: string;
  readonly policy: ResolvedPolicy;
  readonly cost: number;
  /**
   * For a refund: when the units were taken (ms since the epoch, on the caller's clock). A refund gives them back
   * only to the window that counted them, so one given after the window rolled frees nothing in the new one.
   * @default the refund's `nowMs`
   */
  readonly takenAtMs?: number;
}

/** A held concurrency slot. Give it back with `release`. */
export interface Lease {
  readonly key: string;
  readonly id: string;
  /** When the lease lapses by itself (ms since the epoch), so a crashed holder cannot leak capacity. */
  readonly expiresAt: number;
}

/** A concurrency decision: when allowed, it carries the lease. */
export interface LeaseDecision extends Decision {
  lease?: Lease;
}

/**
 * Where counters live. Every store makes the same decisions (the conformance suite in
 * `test/stores/suite.ts` holds them to it); they differ in where the state is and how they fail.
 *
 * `nowMs` is the caller's clock; a store with a clock of its own (Redis server time) may ignore it.
 * Counters are kept per (policy.id, key): two policies never share a counter.
 */
export interface Store {
  /** `'memory'`, `'redis'`, … — for logs, metrics and the dashboard. */
  readonly name: string;
  /**
   * True when every method returns plain values, never promises. Limiters use this to decide without
   * allocating a promise per call (`checkSync`).
   */
  readonly synchronous: boolean;
  /**
   * Decides one request against one policy; consumes only when allowed and `commit` (false = peek).
   * When the policy has a `blockMs`, a rejection blocks the key for that long.
   */
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): MaybePromise<Decision>;
  /**
   * Decides several limits of one request together, all or nothing: when any is rejected, none consumes.
   * Returns one decision per item, in order.
   */
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): MaybePromise<Decision[]>;
  /**
   * Takes each item's cost even past its limit, all items in one atomic step: a settle's extra, owed for a request
   * that already ran. A key past its limit is in debt (see `charge` in algorithms/types.ts): its later checks are
   * refused until the debt is paid off, so over a window it gets at most its limit plus one request's overshoot.
   * Returns per item what a cost-0 look sees afterwards: `allowed` iff the key is not in debt, `retryAfterMs` until
   * its debt is paid. Blocks are neither checked nor written. Absent on a store that cannot (a multi-region store):
   * the limiter then takes the extra with an ordinary check, as far as it fits.
   */
  charge?(items: readonly StoreItem[], nowMs: number): MaybePromise<Decision[]>;
  /**
   * Gives back units a check took (e.g. the request turned out not to count) at `takenAtMs` (default `nowMs`): only
   * to the window that counted them, none when that window has ended (see `takenAtMs` of StoreItem).
   */
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): MaybePromise<void>;
  /**
   * `refund` of several items in one call (one round trip on Redis): a multi-limit limiter's refund and a
   * reservation's settle under its estimate. Absent: the limiter refunds item by item.
   */
  refundMany?(items: readonly StoreItem[], nowMs: number): MaybePromise<void>;
  /** Forgets the key's counter and block under this policy. */
  reset(key: string, policy: ResolvedPolicy): MaybePromise<void>;
  /** Takes one of `limit` concurrent slots for `leaseMs`. */
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): MaybePromise<LeaseDecision>;
  /** Ends a lease early; false when it was unknown or had already expired. */
  release(lease: Lease, nowMs: number): MaybePromise<boolean>;
  /** Stops background work and releases resources. The store must not be used afterwards. */
  close(): Promise<void>;
  /**
   * Resolves once the store can decide (a Redis store: connected, scripts loaded); absent on stores
   * that always can (memory). Services report not-ready on their health check until then.
   */
  ready?(timeoutMs?: number): Promise<void>;
  /** False until {@link Store.ready} would resolve at once; absent on stores that are always ready. */
  readonly isReady?: boolean;
}

/**
 * A limiter's answer to a check its store could not make: the failure policy's decision, or the error
 * thrown again (misuse).
 */
export type CheckFallback = (error: unknown, key: string, cost: number, nowMs: number, commit: boolean) => Decision;

/** `Store.check` of a store that {@link takesFallback}: the sixth argument answers its failures. */
export type CheckWithFallback<R = MaybePromise<Decision>> = (
  key: string,
  policy: ResolvedPolicy,
  cost: number,
  nowMs: number,
  commit: boolean,
  fallback?: CheckFallback,
) => R;

/**
 * Stores whose `check` takes a {@link CheckFallback} as a sixth argument and resolve with its answer
 * instead of rejecting (sluice's Redis store). Their limiters return the store's promise as it is,
 * instead of chaining a `.catch` to it — one promise and one microtask less on every check's way
 * back. Internal: other stores are called with five arguments and caught as before.
 */
const fallbackStores = new WeakSet<object>();

/** Marks `store` as one whose `check` takes a fallback. */
export function acceptsFallback<S extends object>(store: S): S {
  fallbackStores.add(store);
  return store;
}

/** True for a store whose `check` takes a fallback. */
export const takesFallback = (store: Store): boolean => fallbackStores.has(store);
