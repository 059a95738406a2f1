/**
 * The store kit's store: every Store operation (all algorithms, multi-limit all-or-nothing, costs, refunds, blocks,
 * leases) over any {@link StateBackend}, deciding with the algorithms' pure steps, with a timeout, the local
 * over-limit cache and an occasional sweep of expired rows (no timer per key).
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { randomLeaseId } from '../lease-id.js';
import { LocalCache } from '../redis/local-cache.js';
import type { Lease, LeaseDecision, Store } from '../store.js';
import { decideOnState } from './key-state.js';
import { multiRowOperations } from './kit-many.js';
import { leaseId, liveState, stateId, writeOf } from './kit-rows.js';
import { acquireOnLeases, liveLeases, releaseOnLeases, storedLeases } from './lease-state.js';
import type { StateBackend } from './state-backend.js';
import { readyWithin, timedUpdate } from './timed-backend.js';

/** Options of a store built with the kit. */
export interface KitStoreOptions {
  /** Longest wait for the backend, in ms; past it the call fails with ERR_SLUICE_STORE_TIMEOUT (the limiter's failure policy answers). @default 500 */
  timeoutMs?: number;
  /** Answer keys known to stay over their limit in-process, without a round trip. @default true */
  localCache?: boolean | { maxKeys?: number };
  /** Sweep expired rows once every this many writes (0: never; run `sweep()` yourself). @default 256 */
  sweepEvery?: number;
}

/** A store built with the kit: a Store plus its counters and a manual sweep. */
export interface KitStore extends Store {
  /** Resolves once the backend can decide (the SQL stores: connected, table present). */
  ready(timeoutMs?: number): Promise<void>;
  /** Deletes up to `max` expired rows now. */
  sweep(max?: number): Promise<number>;
  stats(): { decisions: number; localCacheHits: number; swept: number; timeouts: number };
}

/** Validates the kit's options. */
function kitOptions(options: KitStoreOptions) {
  const timeoutMs = options.timeoutMs ?? 500;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'timeoutMs: must be a number of ms > 0 (e.g. 500)', {
      option: 'timeoutMs',
    });
  const sweepEvery = options.sweepEvery ?? 256;
  if (!Number.isInteger(sweepEvery) || sweepEvery < 0)
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'sweepEvery: must be a whole number ≥ 0', {
      option: 'sweepEvery',
    });
  const cacheKeys =
    options.localCache === false ? 0 : ((options.localCache === true ? {} : options.localCache)?.maxKeys ?? 10_000);
  return { timeoutMs, sweepEvery, cacheKeys };
}

/** Counts writes and sweeps expired rows once every `sweepEvery` of them, in the background (a failed sweep waits for the next). */
function sweepOccasionally(backend: StateBackend, sweepEvery: number, stats: { swept: number }) {
  let writes = 0;
  return (nowMs: number): void => {
    if (sweepEvery === 0 || ++writes % sweepEvery !== 0) return;
    backend.sweep(nowMs, 1000).then(
      (n) => {
        stats.swept += n;
      },
      () => {},
    );
  };
}

/**
 * Makes a {@link Store} of a {@link StateBackend}: the way to put sluice's limits on a database without writing an
 * algorithm. `sluice/postgres` is built this way; `sluice/testing`'s `storeConformance` checks a store so built.
 * @example const store = createKitStore(myBackend, { timeoutMs: 200 });
 */
export function createKitStore(backend: StateBackend, options: KitStoreOptions = {}): KitStore {
  const { timeoutMs, sweepEvery, cacheKeys } = kitOptions(options);
  const cache = cacheKeys > 0 ? new LocalCache(cacheKeys) : undefined;
  const stats = { decisions: 0, localCacheHits: 0, swept: 0, timeouts: 0 };
  let closed = false;
  let readyDone = backend.ready === undefined;

  const update = timedUpdate(backend, timeoutMs, stats, () => closed);

  const wrote = sweepOccasionally(backend, sweepEvery, stats);

  const { check, reset } = singleRowOperations(update, cache, wrote, stats);
  const { checkMany, charge, refundMany } = multiRowOperations(update, cache, wrote);

  /** One refund is the one-row case of refundMany (same transaction shape, same cache forgetting). */
  const refund = (key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number) =>
    refundMany([{ key, policy, cost, ...(takenAtMs === undefined ? {} : { takenAtMs }) }], nowMs);

  const { acquire, release } = leaseOperations(update);

  return {
    name: backend.name,
    synchronous: false,
    check,
    checkMany,
    charge,
    refund,
    refundMany,
    reset,
    acquire,
    release,
    get isReady() {
      return readyDone;
    },
    async ready(waitMs = timeoutMs * 10) {
      if (readyDone) return;
      await readyWithin(backend, waitMs);
      readyDone = true;
    },
    async sweep(max = 10_000) {
      const n = await backend.sweep(Date.now(), max);
      stats.swept += n;
      return n;
    },
    stats: () => ({ ...stats }),
    async close() {
      closed = true;
      await backend.close();
    },
  };
}

/**
 * check (the hot path: the local cache first, else one row's read-decide-write) and reset over the kit's timed
 * update; `wrote` counts a write towards the next sweep.
 */
function singleRowOperations(
  update: ReturnType<typeof timedUpdate>,
  cache: LocalCache | undefined,
  wrote: (nowMs: number) => void,
  stats: { localCacheHits: number },
) {
  async function check(
    key: string,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
  ): Promise<Decision> {
    const id = stateId(p, key);
    const cached = cache?.get(id, p, cost, nowMs);
    if (cached !== undefined) {
      stats.localCacheHits++;
      return cached;
    }
    const decision = await update<Decision>([id], nowMs, (rows, now) => {
      const state = liveState(rows[0], now);
      const result = decideOnState(state, p, cost, now, commit);
      return { writes: [writeOf(rows[0], state, p, now)], result };
    });
    if (commit) wrote(nowMs);
    cache?.learn(id, p, cost, nowMs, commit, decision);
    return decision;
  }

  async function reset(key: string, p: ResolvedPolicy): Promise<void> {
    const id = stateId(p, key);
    cache?.forget(id);
    await update<void>([id], Date.now(), (rows) => ({
      writes: [rows[0] === undefined ? undefined : null],
      result: undefined,
    }));
  }
  return { check, reset };
}

/** Concurrency leases over the kit's timed update: one row per key holding its live leases. */
function leaseOperations(update: ReturnType<typeof timedUpdate>) {
  function acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision> {
    const newId = randomLeaseId();
    return update<LeaseDecision>([leaseId(key)], nowMs, (rows, now) => {
      const leases = liveLeases(rows[0]?.state, now);
      const before = leases.length;
      const result = acquireOnLeases(leases, key, limit, leaseMs, now, newId);
      const changed = leases.length !== before || (rows[0] !== undefined && before === 0);
      return { writes: [changed ? storedLeases(leases) : undefined], result };
    });
  }

  function release(lease: Lease, nowMs: number): Promise<boolean> {
    return update<boolean>([leaseId(lease.key)], nowMs, (rows, now) => {
      const leases = liveLeases(rows[0]?.state, now);
      const result = releaseOnLeases(leases, lease.id);
      return { writes: [result || rows[0] !== undefined ? storedLeases(leases) : undefined], result };
    });
  }
  return { acquire, release };
}
