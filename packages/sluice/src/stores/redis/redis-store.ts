/**
 * The Redis store: each decision one Lua script call (atomic, one round trip), with batching, deadlines and the local over-limit cache.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { acceptsFallback, type Lease, type LeaseDecision, type Store, type StoreItem } from '../store.js';
import { createTransport } from './client.js';
import { blockKey, keyIdOf, stateKey, tagOf } from './keys.js';
import { LocalCache } from './local-cache.js';
import { createManyChecks } from './many-checks.js';
import { createRedisLeases } from './redis-leases.js';
import { type RedisStoreOptions, resolveRedisStoreOptions } from './redis-options.js';

export type { RedisStoreOptions } from './redis-options.js';

import { Runner } from './runner.js';
import { createScriptCalls } from './script-calls.js';
import { ALL_SCRIPTS } from './scripts.js';
import { closedError, createSingleCheck } from './single-check.js';

/** What a Redis store did, for metrics, tests and benchmarks. */
export interface RedisStoreStats {
  /** Commands sent to Redis. */
  commands: number;
  /** Decisions made (by Redis or from the local cache). */
  decisions: number;
  /** Decisions answered by the local over-limit cache, without Redis. */
  localCacheHits: number;
  /** Keys the local cache holds now. */
  localCacheKeys: number;
  errors: number;
  timeouts: number;
  /** Scripts sent again in full after Redis forgot them. */
  scriptLoads: number;
  /**
   * Requests Redis could not decide because it refused the write they needed (maxmemory reached with
   * noeviction, a read-only replica): each went to the failure policy; the rest of its batch did not.
   */
  refused: number;
}

/** The Redis store. */
export interface RedisStore extends Store {
  readonly synchronous: false;
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Promise<Decision>;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): Promise<void>;
  charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]>;
  refundMany(items: readonly StoreItem[], nowMs: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision>;
  release(lease: Lease, nowMs: number): Promise<boolean>;
  /** Counters of commands, decisions, local cache hits and failures. */
  stats(): RedisStoreStats;
  /**
   * Resolves once the client has connected and the scripts are loaded — for applications that hold
   * traffic until the store can decide; rejects with ERR_SLUICE_STORE_TIMEOUT after `timeoutMs`.
   * @default timeoutMs: the store's connectTimeoutMs
   */
  ready(timeoutMs?: number): Promise<void>;
  /** True once the client has connected and the scripts are loaded (stays true through later outages). */
  readonly isReady: boolean;
}

/**
 * Creates a store that keeps counters in Redis: one script run (EVALSHA) per decision, atomic, with
 * every key under a TTL. Works with standalone Redis, Sentinel (through the client) and Cluster.
 *
 * @example
 * import Redis from 'ioredis';
 * import { createLimiter } from 'sluice';
 * import { createRedisStore } from 'sluice/redis';
 *
 * const store = createRedisStore({ client: new Redis('redis://127.0.0.1:6379') });
 * const limiter = createLimiter({ algorithm: 'sliding-window', limit: 100, period: '1m', store, fail: 'open' });
 * const d = await limiter.check('user:42');
 */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const o = resolveRedisStoreOptions(options);
  const transport = createTransport(options.client);
  const { prefix, serverClock } = o;
  const cache = o.cacheKeys === undefined ? undefined : new LocalCache(o.cacheKeys);
  const runner = new Runner(transport, o.timeoutMs, options.onError, ALL_SCRIPTS, o.connectTimeoutMs);
  const { batcher, queueKey, nowArg, grace } = createScriptCalls(runner, transport, serverClock, o.batch);
  const counts = { decisions: 0 };

  const check = createSingleCheck(runner, { batcher, queueKey }, prefix, cache, counts);
  const many = createManyChecks(runner, transport, { batcher, queueKey, nowArg, grace }, prefix, cache);
  const leases = createRedisLeases(runner, prefix, nowArg, grace);

  // ---- the rest of the Store interface

  return acceptsFallback({
    name: 'redis',
    synchronous: false,
    check,

    checkMany(items, nowMs, commit) {
      if (runner.closed) return Promise.reject(closedError());
      counts.decisions += items.length;
      return many.checkMany(items, nowMs, commit);
    },

    charge(items, nowMs) {
      if (runner.closed) return Promise.reject(closedError());
      return many.charge(items, nowMs);
    },

    refundMany(items, nowMs) {
      if (runner.closed) return Promise.reject(closedError());
      return many.refundMany(items, nowMs);
    },

    async refund(key, policy, cost, nowMs, takenAtMs) {
      const tag = tagOf(prefix, key);
      const key0 = stateKey(tag, keyIdOf(policy));
      cache?.forget(key0);
      const item = { key, policy, cost, ...(takenAtMs === undefined ? {} : { takenAtMs }) };
      await many.runRefunds([{ key: key0, bkey: blockKey(tag, keyIdOf(policy)), item }], nowMs);
    },

    async reset(key, policy) {
      const tag = tagOf(prefix, key);
      const key0 = stateKey(tag, keyIdOf(policy));
      cache?.forget(key0);
      await runner.command(['DEL', key0, blockKey(tag, keyIdOf(policy))], key0);
    },

    acquire: leases.acquire,
    release: leases.release,

    async close() {
      // Checks already queued still go out; close() resolves once every command has settled (at most
      // timeoutMs). The client is the caller's: it stays open.
      batcher.flush();
      await runner.close();
    },

    ready: (waitMs) => runner.readiness.wait(waitMs),
    get isReady() {
      return runner.readiness.isReady;
    },

    stats: () => ({
      ...runner.stats,
      decisions: counts.decisions,
      localCacheHits: cache?.hits ?? 0,
      localCacheKeys: cache?.size ?? 0,
    }),
  });
}
