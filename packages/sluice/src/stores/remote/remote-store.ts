/**
 * The remote store: decisions asked of a running `sluice serve` over HTTP (`/v1/check`), batched, with bounded answers.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { LocalCache } from '../redis/local-cache.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { type Batcher, createBatcher } from './batcher.js';
import { type RemoteStoreOptions, resolveRemoteStoreOptions } from './remote-options.js';

export type { RemoteStoreOptions } from './remote-options.js';

import { at, chargeGroup, checkGroup, checkOf, idOf, type Remote, sendOne, toOk } from './remote-ops.js';
import { policyPart, releaseItem, toLeaseDecision } from './wire.js';

/** What a remote store did, for metrics, tests and benchmarks. */
export interface RemoteStoreStats {
  /** HTTP requests sent. */
  requests: number;
  /** Operations sent (checks, refunds, resets, leases). */
  operations: number;
  errors: number;
  timeouts: number;
  /** Decisions answered by the local over-limit cache, without the service. */
  localCacheHits: number;
}

/** A store whose counters live in a running `sluice serve`. */
export interface RemoteStore extends Store {
  readonly synchronous: false;
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Promise<Decision>;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): Promise<void>;
  charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision>;
  release(lease: Lease, nowMs: number): Promise<boolean>;
  stats(): RemoteStoreStats;
}

/**
 * Creates a store that asks a running `sluice serve` over HTTP (`POST /v1/check`): every instance that
 * points at the same service shares the same limits — edge functions, serverless instances, processes
 * in other languages. Uses `fetch` only, so it runs on Node, Bun, Deno and Cloudflare Workers.
 *
 * @example
 * import { createLimiter } from 'sluice';
 * import { createRemoteStore } from 'sluice/remote';
 *
 * const store = createRemoteStore({ url: 'http://127.0.0.1:8080' });
 * const limiter = createLimiter({ limit: 100, period: '1m', store, fail: 'open' });
 * const d = await limiter.check('user:42');
 */
export function createRemoteStore(options: RemoteStoreOptions): RemoteStore {
  const o = resolveRemoteStoreOptions(options);
  const batcher: Batcher = createBatcher({
    url: o.url,
    timeoutMs: o.timeoutMs,
    fetch: o.fetch,
    headers: options.headers ?? {},
    batch: options.batch ?? true,
    maxBatch: o.maxBatch,
    maxResponseBytesPerCheck: o.maxResponseBytesPerCheck,
    onError: options.onError,
  });
  const cache = o.cacheKeys === undefined ? undefined : new LocalCache(o.cacheKeys);
  const remote: Remote = { batcher, cache, clientClock: o.clientClock };

  return {
    name: 'remote',
    synchronous: false,

    check: checkOf(remote),

    async checkMany(items, nowMs, commit) {
      if (items.length === 0) return [];
      if (items.length === 1) {
        const only = items[0] as StoreItem;
        return [await this.check(only.key, only.policy, only.cost, nowMs, commit)];
      }
      return checkGroup(remote, items, nowMs, commit);
    },

    async charge(items, nowMs) {
      if (items.length === 0) return [];
      return chargeGroup(remote, items, nowMs);
    },

    // No takenAtMs: the /v1/check protocol has no field for when the units were taken, so the service refunds at its
    // own time (docs/limiter.md says so). The item's nowMs is no stand-in: it is sent only under --client-clock, and
    // it would move the whole operation's clock back, buckets included.
    async refund(key, policy, cost, nowMs) {
      cache?.forget(idOf(key, policy));
      toOk(await sendOne(remote, at(remote, { key, op: 'refund', cost, ...policyPart(policy) }, nowMs)));
    },

    async reset(key, policy) {
      cache?.forget(idOf(key, policy));
      toOk(await sendOne(remote, { key, op: 'reset', ...policyPart(policy) }));
    },

    async acquire(key, limit, leaseMs, nowMs) {
      return toLeaseDecision(await sendOne(remote, at(remote, { key, op: 'acquire', limit, leaseMs }, nowMs)), key);
    },

    async release(lease, nowMs) {
      const r = await sendOne(remote, at(remote, releaseItem(lease), nowMs));
      if (typeof r.released !== 'boolean') toOk(r);
      return r.released === true;
    },

    close: () => batcher.close(),
    stats: () => ({ ...batcher.stats, localCacheHits: cache?.hits ?? 0 }),
  };
}
