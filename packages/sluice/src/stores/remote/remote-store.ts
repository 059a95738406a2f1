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

import { policyPart, releaseItem, toDecision, toLeaseDecision, type WireItem, type WireResult } from './wire.js';

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
  /** A counter's identity: its policy and key. */
  const idOf = (key: string, policy: ResolvedPolicy) => `${policy.id}\u0000${key}`;
  const clientClock = o.clientClock;
  /** The item of one operation, with the caller's clock when the store runs on it. */
  const at = (item: WireItem, nowMs: number): WireItem => {
    if (clientClock) item.nowMs = nowMs;
    return item;
  };
  const one = (item: WireItem) => batcher.send([item]).then((results) => results[0] as WireResult);

  return {
    name: 'remote',
    synchronous: false,

    check(key, policy, cost, nowMs, commit) {
      const id = idOf(key, policy);
      const cached = cache?.get(id, policy, cost, nowMs);
      if (cached !== undefined) return Promise.resolve(cached);
      const item = at({ key, op: commit ? 'check' : 'peek', cost, ...policyPart(policy) }, nowMs);
      return one(item).then((r) => {
        const d = toDecision(r);
        cache?.learn(id, policy, cost, nowMs, commit, d);
        return d;
      });
    },

    async checkMany(items, nowMs, commit) {
      if (items.length === 0) return [];
      if (items.length === 1) {
        const only = items[0] as StoreItem;
        return [await this.check(only.key, only.policy, only.cost, nowMs, commit)];
      }
      const ids = items.map((item) => idOf(item.key, item.policy));
      if (cache !== undefined && items.every((item) => item.policy.blockMs === 0)) {
        // Only when every limit is known to reject: the answer must be the one the service would give.
        const cached = items.map((item, i) => cache.get(ids[i] as string, item.policy, item.cost, nowMs));
        if (cached.every((d) => d !== undefined)) return cached as Decision[];
      }
      const group = batcher.nextGroup();
      const wire = items.map((item) =>
        at({ key: item.key, op: commit ? 'check' : 'peek', cost: item.cost, group, ...policyPart(item.policy) }, nowMs),
      );
      const decisions = (await batcher.send(wire)).map(toDecision);
      if (cache !== undefined && new Set(ids).size === ids.length) {
        items.forEach((item, i) => {
          cache.learn(ids[i] as string, item.policy, item.cost, nowMs, commit, decisions[i] as Decision, true);
        });
      }
      return decisions;
    },

    // The service's op `charge`: several items as one group, charged in one step of its store.
    async charge(items, nowMs) {
      if (items.length === 0) return [];
      for (const item of items) cache?.forget(idOf(item.key, item.policy));
      const group = items.length > 1 ? batcher.nextGroup() : undefined;
      const wire = items.map((item) =>
        at(
          {
            key: item.key,
            op: 'charge',
            cost: item.cost,
            ...(group === undefined ? {} : { group }),
            ...policyPart(item.policy),
          },
          nowMs,
        ),
      );
      return (await batcher.send(wire)).map(toDecision);
    },

    async refund(key, policy, cost, nowMs) {
      cache?.forget(idOf(key, policy));
      toOk(await one(at({ key, op: 'refund', cost, ...policyPart(policy) }, nowMs)));
    },

    async reset(key, policy) {
      cache?.forget(idOf(key, policy));
      toOk(await one({ key, op: 'reset', ...policyPart(policy) }));
    },

    async acquire(key, limit, leaseMs, nowMs) {
      return toLeaseDecision(await one(at({ key, op: 'acquire', limit, leaseMs }, nowMs)), key);
    },

    async release(lease, nowMs) {
      const r = await one(at(releaseItem(lease), nowMs));
      if (typeof r.released !== 'boolean') toOk(r);
      return r.released === true;
    },

    close: () => batcher.close(),
    stats: () => ({ ...batcher.stats, localCacheHits: cache?.hits ?? 0 }),
  };
}

/** A result that only says the operation was done. */
function toOk(r: WireResult): void {
  if (r.error !== undefined || r.ok !== true) toDecision(r); // throws the result's error
}
