/**
 * The multi-region store: a local Redis per region, kept within the limit across regions by escrow or eventual sync.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from '../../core/policy.js';
import { slotOf } from '../redis/keys.js';
import { createRedisStore } from '../redis/redis-store.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { CheckBatcher } from './batch.js';
import { type OverAdmissionBound, storeBound } from './bound.js';
import { checkAllOrNothing } from './check-all.js';
import { assertEventualItem, COUNTER_ALGORITHMS } from './eventual.js';
import { tagOf } from './keys.js';
import { type MultiRegionStoreOptions, type ResolvedMultiRegionOptions, resolveMultiRegionOptions } from './options.js';
import { openRegionConnections } from './region-connections.js';
import { createRegionMode, type RegionMode } from './region-mode.js';
import type { PeerStatus } from './sync-loop.js';

/** The multi-region store. */
export interface MultiRegionStore extends Store {
  readonly synchronous: false;
  /** This process's region. */
  readonly region: string;
  readonly mode: 'eventual' | 'escrow';
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Promise<Decision>;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision>;
  release(lease: Lease, nowMs: number): Promise<boolean>;
  /** True when this mode takes the policy's algorithm (eventual: fixed-window and sliding-window). */
  supports(policy: ResolvedPolicy | PolicyOptions): boolean;
  /**
   * The most a window can admit across every region, and how it was computed (see bound.ts and
   * docs/multi-region.md). `ratePerSecond` is the admitted rate of the other regions, when known.
   */
  bound(policy: ResolvedPolicy | PolicyOptions, traffic?: { ratePerSecond?: number }): OverAdmissionBound;
  /** Runs one sync round now and waits for it (tools and tests; the loop runs by itself). */
  sync(): Promise<void>;
  /** Every peer region: pushes, failures, the sync lag, keys waiting. */
  syncStatus(): PeerStatus[];
}

const asResolved = (p: ResolvedPolicy | PolicyOptions): ResolvedPolicy =>
  typeof (p as ResolvedPolicy).id === 'string' ? (p as ResolvedPolicy) : resolvePolicy(p as PolicyOptions);

/**
 * Creates a store for several data centres: every decision is answered by this region's Redis in one
 * round trip, and a sync loop replicates to the other regions' Redis in the background, never in the
 * way of a decision. One global limit, in two modes:
 *  - `'eventual'` (fixed-window, sliding-window): per-region G-counters, merged idempotently; over
 *    the limit by at most `store.bound(policy)` per window;
 *  - `'escrow'` (every algorithm): each region decides within its share of the limit; shares move
 *    to where the traffic is; never over the limit.
 * A region cut off from the others keeps deciding (on its view, or within its share) and converges
 * once the link is back. Concurrency leases (`acquire`) are per region.
 *
 * @example
 * import Redis from 'ioredis';
 * import { createLimiter } from 'sluice';
 * import { createMultiRegionStore } from 'sluice/multi-region';
 *
 * const store = createMultiRegionStore({
 *   region: 'eu',
 *   regions: { eu: new Redis('redis://redis.eu.internal:6379'), us: new Redis('redis://redis.us.internal:6379') },
 *   mode: 'escrow',
 *   syncIntervalMs: 500,
 * });
 * const limiter = createLimiter({ algorithm: 'token-bucket', limit: 100, period: '1m', store });
 */
export function createMultiRegionStore(options: MultiRegionStoreOptions): MultiRegionStore {
  const o = resolveMultiRegionOptions(options);
  const connections = openRegionConnections(o, options.regions);
  const { region, loop } = createRegionMode(o, connections);
  // Concurrency leases stay in the region: a lease is held for a request's lifetime, far shorter than a sync.
  const leases = createRedisStore({
    client: options.regions[o.region] as NonNullable<(typeof options.regions)[string]>,
    prefix: o.prefix,
    clock: 'client',
    timeoutMs: o.timeoutMs,
    localCache: false,
    ...(o.onError === undefined ? {} : { onError: o.onError }),
  });
  const single = createSingleChecks(o, region);
  if (o.autoSync) loop.start();
  let closed = false;

  const supports = (p: ResolvedPolicy | PolicyOptions) =>
    o.mode === 'escrow' || COUNTER_ALGORITHMS.has(asResolved(p).algorithm);

  const slotOfItem = o.local.cluster ? (item: StoreItem) => slotOf(tagOf(o.prefix, item.key)) : undefined;
  async function checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]> {
    if (closed) throw closedError();
    return checkAllOrNothing(region, items, nowMs, commit, slotOfItem);
  }

  return {
    name: 'multi-region',
    synchronous: false,
    region: o.region,
    mode: o.mode,

    // Not async: the batcher's promise is the answer (an async wrapper would add a promise per check).
    check(key, policy, cost, nowMs, commit) {
      return closed ? Promise.reject(closedError()) : single(key, policy, cost, nowMs, commit);
    },
    checkMany,

    async refund(key, policy, cost, nowMs, takenAtMs) {
      if (closed) throw closedError();
      await region.refund(key, policy, cost, nowMs, takenAtMs);
    },

    async reset(key, policy) {
      if (closed) throw closedError();
      await region.reset(key, policy);
    },

    acquire: (key, limit, leaseMs, nowMs) => leases.acquire(key, limit, leaseMs, nowMs),
    release: (lease, nowMs) => leases.release(lease, nowMs),

    supports,

    bound(policy, traffic = {}) {
      const { mode, syncIntervalMs, peerTimeoutMs } = o;
      const inputs = { mode, syncIntervalMs, peerTimeoutMs, regions: o.regionNames.length, peers: loop.status() };
      return storeBound(asResolved(policy).limit, inputs, traffic.ratePerSecond ?? null);
    },

    sync: () => loop.flush(),
    syncStatus: () => loop.status(),

    async close() {
      if (closed) return;
      closed = true;
      // Send what is still pending once (at most peerTimeoutMs), so the other regions count it.
      await loop.flush().catch(() => undefined);
      await loop.stop();
      await leases.close();
      await connections.close();
    },
  };
}

function closedError(): SluiceError {
  return new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the multi-region store was closed');
}

/**
 * Single checks, batched: checks arriving together share a script call (per Cluster slot), one round trip,
 * not one each. Eventual mode refuses an item it cannot merge alone, before the batch: in one, it would
 * fail every check sent with it.
 */
function createSingleChecks(
  o: ResolvedMultiRegionOptions,
  region: RegionMode['region'],
): (key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean) => Promise<Decision> {
  const singles = new CheckBatcher(
    (items, nowMs, commit) => region.check(items, nowMs, commit, false),
    o.local.cluster ? (key) => String(slotOf(tagOf(o.prefix, key))) : () => '',
  );
  return (key, policy, cost, nowMs, commit) => {
    if (o.mode === 'eventual') {
      try {
        assertEventualItem(policy, cost);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return singles.check({ key, policy, cost }, nowMs, commit);
  };
}
