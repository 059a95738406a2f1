/**
 * The multi-region store: a local Redis per region, kept within the limit across regions by escrow or eventual sync.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from '../../core/policy.js';
import { createTransport, type RedisClientLike, type RedisTransport } from '../redis/client.js';
import { slotOf } from '../redis/keys.js';
import { createRedisStore } from '../redis/redis-store.js';
import { Runner } from '../redis/runner.js';
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import { CheckBatcher } from './batch.js';
import { escrowBound, eventualBound, type OverAdmissionBound } from './bound.js';
import { DemandLedger } from './demand.js';
import { createEscrowRegion } from './escrow.js';
import { createRecordReplicator, type RecordPart } from './escrow-sync.js';
import { assertEventualItem, COUNTER_ALGORITHMS, createEventualRegion } from './eventual.js';
import { type CounterPart, createCounterReplicator } from './eventual-sync.js';
import { tagOf } from './keys.js';
import { type Duplicable, type Duplicate, type MultiRegionStoreOptions, resolveMultiRegionOptions } from './options.js';
import { limitReplyBytes, type ReplyWatcher } from './reply-bound.js';
import { type PeerStatus, SyncLoop, syncCauseOf } from './sync-loop.js';

/** The multi-region store. */
export interface MultiRegionStore extends Store {
  readonly synchronous: false;
  /** This process's region. */
  readonly region: string;
  readonly mode: 'eventual' | 'escrow';
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Promise<Decision>;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): Promise<void>;
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
  const onError = o.onError;
  // No scripts to preload (they load on first use); commands wait up to 5 s for a first connection.
  const local = new Runner(o.local, o.timeoutMs, onError, [], 5000);
  // The sync loop's reads and credits in this region go on a connection of their own (when there is
  // one): a sync batch is thousands of keys, and on the decisions' connection every decision sent
  // after it would wait for it (head-of-line). Its timeout is a peer's: nothing waits on it.
  const own =
    o.localSync === 'duplicate'
      ? lazyDuplicate(options.regions[o.region] as RedisClientLike & Duplicable, o.local.cluster)
      : undefined;
  const syncTransport = own?.transport ?? (o.localSync === 'duplicate' ? undefined : o.localSync);
  const syncLocal = syncTransport === undefined ? local : new Runner(syncTransport, o.peerTimeoutMs, onError, [], 5000);
  // Every reply a peer sends is bounded as it arrives (reply-bound.ts), unless the peer's client is
  // also this region's (one client counting decisions' replies too would trip the bound).
  const watchers: ReplyWatcher[] = [];
  const peers = o.peers.map((p) => {
    const client = options.regions[p.region] as RedisClientLike;
    const watcher =
      client === options.regions[o.region]
        ? undefined
        : limitReplyBytes(client, { maxBytes: o.maxPeerReplyBytes, region: p.region });
    if (watcher !== undefined) watchers.push(watcher);
    const transport = watcher === undefined ? p.transport : watcher.wrap(p.transport);
    return {
      region: p.region,
      runner: new Runner(transport, o.peerTimeoutMs, undefined, [], 5000),
      cluster: p.transport.cluster,
    };
  });
  const reportSync =
    onError === undefined
      ? undefined
      : (error: unknown, region: string) => {
          const cause = error instanceof Error ? error.message : String(error);
          // A failure of the sync's own (a reply too large, or not a MERGE answer) keeps its code,
          // wherever the Redis runner wrapped it; a peer's Redis refusing is ERR_SLUICE_MULTI_REGION_SYNC.
          const own = syncCauseOf(error);
          onError(
            own ??
              new SluiceError('ERR_SLUICE_MULTI_REGION_SYNC', `sync to region ${region} failed: ${cause}`, {
                cause: error,
              }),
          );
        };
  const loopOptions = {
    peers,
    intervalMs: o.syncIntervalMs,
    clock: o.clock,
    maxPendingKeys: o.maxPendingKeys,
    onError: reportSync,
  };

  let loop: SyncLoop<CounterPart> | SyncLoop<RecordPart>;
  let region: ReturnType<typeof createEventualRegion>;
  if (o.mode === 'eventual') {
    const counters = new SyncLoop<CounterPart>({
      ...loopOptions,
      replicator: createCounterReplicator(syncLocal, o.local.cluster, o.region),
    });
    loop = counters;
    region = createEventualRegion(local, o.prefix, o.region, o.graceMs, (k) => counters.touch(k), o.onDecided);
  } else {
    /** The policy of every record in use, for the sync loop (bounded like the pending sets). */
    const policies = new Map<string, ResolvedPolicy>();
    let records: SyncLoop<RecordPart> | undefined;
    const demand = new DemandLedger(o.maxPendingKeys);
    const touch = (rkey: string, policy: ResolvedPolicy, cost: number, atMs: number, tauMs: number) => {
      demand.add(rkey, cost, atMs, tauMs);
      if (policies.get(rkey) !== policy) {
        policies.delete(rkey);
        policies.set(rkey, policy);
        if (policies.size > o.maxPendingKeys) policies.delete(policies.keys().next().value as string);
      }
      records?.touch(rkey);
    };
    records = new SyncLoop<RecordPart>({
      ...loopOptions,
      replicator: createRecordReplicator({
        local: syncLocal,
        localCluster: o.local.cluster,
        region: o.region,
        regions: o.regionNames,
        graceMs: o.graceMs,
        clock: o.clock,
        policyOf: (k) => policies.get(k),
        takeDemand: (k) => demand.take(k),
        syncIntervalMs: o.syncIntervalMs,
        maxClockSkewMs: o.maxClockSkewMs,
        maxKeys: o.maxPendingKeys,
      }),
    });
    loop = records;
    region = createEscrowRegion(
      local,
      o.prefix,
      o.region,
      o.regionNames,
      o.graceMs,
      o.maxClockSkewMs,
      o.syncIntervalMs,
      touch,
      o.onDecided,
    );
  }
  // Concurrency leases stay in the region: a lease is held for a request's lifetime, far shorter than a sync.
  const leases = createRedisStore({
    client: options.regions[o.region] as NonNullable<(typeof options.regions)[string]>,
    prefix: o.prefix,
    clock: 'client',
    timeoutMs: o.timeoutMs,
    localCache: false,
    ...(onError === undefined ? {} : { onError }),
  });
  // Checks arriving together share a script call (per Cluster slot): one round trip, not one each.
  const singles = new CheckBatcher(
    (items, nowMs, commit) => region.check(items, nowMs, commit, false),
    o.local.cluster ? (key) => String(slotOf(tagOf(o.prefix, key))) : () => '',
  );
  if (o.autoSync) loop.start();
  let closed = false;

  const supports = (p: ResolvedPolicy | PolicyOptions) =>
    o.mode === 'escrow' || COUNTER_ALGORITHMS.has(asResolved(p).algorithm);

  function closedError(): SluiceError {
    return new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the multi-region store was closed');
  }

  /** Items of one (key, policy) merged, so all-or-nothing scripts see each counter once. */
  function merged(items: readonly StoreItem[]): { unique: StoreItem[]; index: number[] } {
    const at = new Map<string, number>();
    const unique: StoreItem[] = [];
    const index = items.map((item) => {
      const id = `${item.policy.id}\n${item.key}`;
      const i = at.get(id);
      if (i !== undefined) {
        const u = unique[i] as StoreItem;
        unique[i] = { ...u, cost: u.cost + item.cost };
        return i;
      }
      at.set(id, unique.length);
      unique.push(item);
      return unique.length - 1;
    });
    return { unique, index };
  }

  /**
   * All or nothing. On one Redis (or one Cluster slot) that is one script. Across Cluster slots the
   * slots are checked at once and the ones that took are refunded when another rejected — the Redis
   * store's way.
   */
  async function checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]> {
    if (closed) throw closedError();
    if (items.length === 0) return [];
    const { unique, index } = merged(items);
    let decisions: Decision[];
    const slots = o.local.cluster ? new Set(unique.map((i) => slotOf(tagOf(o.prefix, i.key)))) : new Set([0]);
    if (slots.size <= 1) {
      decisions = await region.check(unique, nowMs, commit, true);
    } else {
      const results = await Promise.all(unique.map((item) => region.check([item], nowMs, commit, true)));
      decisions = results.map((r) => r[0] as Decision);
      if (commit && decisions.some((d) => !d.allowed)) {
        await Promise.all(
          unique.map((item, i) =>
            decisions[i]?.allowed ? region.refund(item.key, item.policy, item.cost, nowMs) : undefined,
          ),
        );
      }
    }
    return index.map((i) => decisions[i] as Decision);
  }

  return {
    name: 'multi-region',
    synchronous: false,
    region: o.region,
    mode: o.mode,

    // Not async: the batcher's promise is the answer (an async wrapper would add a promise per check).
    check(key, policy, cost, nowMs, commit) {
      if (closed) return Promise.reject(closedError());
      // Refused alone, before the batch: in one, it would fail every check sent with it.
      if (o.mode === 'eventual') {
        try {
          assertEventualItem(policy, cost);
        } catch (e) {
          return Promise.reject(e);
        }
      }
      return singles.check({ key, policy, cost }, nowMs, commit);
    },
    checkMany,

    async refund(key, policy, cost, nowMs) {
      if (closed) throw closedError();
      await region.refund(key, policy, cost, nowMs);
    },

    async reset(key, policy) {
      if (closed) throw closedError();
      await region.reset(key, policy);
    },

    acquire: (key, limit, leaseMs, nowMs) => leases.acquire(key, limit, leaseMs, nowMs),
    release: (lease, nowMs) => leases.release(lease, nowMs),

    supports,

    bound(policy, traffic = {}) {
      const p = asResolved(policy);
      const n = o.regionNames.length;
      if (o.mode === 'escrow') return escrowBound(p.limit, n);
      const status = loop.status();
      // Δ as measured (change here → held there); before any push landed, the longest one allowed.
      const measured = status.reduce((m, s) => Math.max(m, s.maxLagMs), 0);
      const lag = measured > 0 ? measured : 2 * o.syncIntervalMs + 2 * o.peerTimeoutMs;
      const partitioned = status.some((s) => s.down);
      return eventualBound(p.limit, n, lag, traffic.ratePerSecond ?? null, partitioned);
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
      const runners = [local, ...peers.map((p) => p.runner)];
      if (syncLocal !== local) runners.push(syncLocal);
      await Promise.all(runners.map((r) => r.close()));
      for (const w of watchers) w.close();
      own?.close();
    },
  };
}

/**
 * A second connection like `client`'s, opened when the sync loop first sends (a store that never
 * syncs opens none), closed by `close()` — or when the caller ends `client` itself (ioredis' 'end'),
 * so a store the caller never closed does not keep a process alive with it.
 */
function lazyDuplicate(
  client: RedisClientLike & Duplicable,
  cluster: boolean,
): { transport: RedisTransport; close(): void } {
  let copy: Duplicate | undefined;
  let inner: RedisTransport | undefined;
  /**
   * Until the copy's first connection is up. A client made without an offline queue (as the service
   * makes them) fails a command sent before that at once: the first sync would fail and report the
   * region's Redis unreachable, while it only had to wait for the connection it just opened.
   */
  let connecting: Promise<void> | undefined;
  let closed = false;
  const close = () => {
    closed = true;
    client.off?.('end', close);
    copy?.disconnect();
  };
  const open = (): RedisTransport => {
    if (inner === undefined) {
      const opened = client.duplicate();
      copy = opened;
      inner = createTransport(opened);
      // A copy of a client made with lazyConnect (as the service makes them) waits for a command to
      // connect, and one without an offline queue fails that command: connect it now.
      if (opened.status === 'wait') opened.connect?.().catch(() => {});
      if (!inner.connected() && opened.once !== undefined) {
        connecting = new Promise((resolve) => {
          const done = () => {
            connecting = undefined;
            resolve();
          };
          opened.once?.('ready', done);
          // The first attempt failed, or the copy was closed: from then on commands go to the
          // transport, which fails them at once while it is down (nothing piles up here).
          opened.once?.('error', done);
          opened.once?.('end', done);
        });
      }
      if (closed) opened.disconnect();
      else client.once?.('end', close);
    }
    return inner;
  };
  /** Sends through the copy, once its first connection is up. */
  const whenOpen = <T>(send: (t: RedisTransport) => Promise<T>): Promise<T> => {
    const t = open();
    return connecting === undefined ? send(t) : connecting.then(() => send(t));
  };
  return {
    transport: {
      send: (args, firstKey) => whenOpen((t) => t.send(args, firstKey)),
      sendToAll: (args) => whenOpen((t) => t.sendToAll(args)),
      // Before it is opened, as ready as the decisions' connection: the first command opens it.
      ready: () => (inner === undefined ? !closed : inner.ready()),
      connected: () => (inner === undefined ? !closed : inner.connected()),
      cluster,
    },
    close,
  };
}
