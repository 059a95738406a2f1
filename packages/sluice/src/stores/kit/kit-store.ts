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
import type { Lease, LeaseDecision, Store, StoreItem } from '../store.js';
import {
  chargeOnState,
  decideOnState,
  decodeKeyState,
  encodeKeyState,
  type KeyState,
  keyStateExpiresAt,
  refundOnState,
} from './key-state.js';
import { acquireOnLeases, liveLeases, releaseOnLeases, storedLeases } from './lease-state.js';
import type { StateBackend, StateWrite, StoredState } from './state-backend.js';
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

/** The row id of (policy, key): the policy id's length first, so no key can pose as another policy's. */
export const stateId = (p: ResolvedPolicy, key: string) => `P${p.id.length}:${p.id}:${key}`;
const leaseId = (key: string) => `L:${key}`;

/** A stored state as a key's state at `nowMs`: an expired or absent row is a fresh key. */
const liveState = (row: StoredState | undefined, nowMs: number): KeyState =>
  row === undefined || row.expiresAt <= nowMs ? decodeKeyState(undefined) : decodeKeyState(row.state);

/** What to write for a state after a step: nothing changed, delete (as good as fresh), or the new state. */
function writeOf(before: StoredState | undefined, state: KeyState, p: ResolvedPolicy, nowMs: number): StateWrite {
  const expiresAt = keyStateExpiresAt(state, p);
  if (expiresAt <= nowMs) return before === undefined ? undefined : null;
  const text = encodeKeyState(state);
  if (before !== undefined && before.state === text && before.expiresAt === expiresAt) return undefined;
  return { state: text, expiresAt };
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

/**
 * Makes a {@link Store} of a {@link StateBackend}: the way to put sluice's limits on a database without writing an
 * algorithm. `sluice/postgres` is built this way; `sluice/testing`'s `storeConformance` checks a store so built.
 * @example const store = createKitStore(myBackend, { timeoutMs: 200 });
 */
export function createKitStore(backend: StateBackend, options: KitStoreOptions = {}): KitStore {
  const { timeoutMs, sweepEvery, cacheKeys } = kitOptions(options);
  const cache = cacheKeys > 0 ? new LocalCache(cacheKeys) : undefined;
  const stats = { decisions: 0, localCacheHits: 0, swept: 0, timeouts: 0 };
  let writes = 0;
  let closed = false;
  let readyDone = backend.ready === undefined;

  const update = timedUpdate(backend, timeoutMs, stats, () => closed);

  /** Counts a write and sweeps now and then, in the background (a failed sweep waits for the next). */
  function wrote(nowMs: number): void {
    if (sweepEvery === 0 || ++writes % sweepEvery !== 0) return;
    backend.sweep(nowMs, 1000).then(
      (n) => {
        stats.swept += n;
      },
      () => {},
    );
  }

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

  async function checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]> {
    const ids = [...new Set(items.map((item) => stateId(item.policy, item.key)))];
    const decisions = await update<Decision[]>(ids, nowMs, (rows, now) => {
      const states = ids.map((id, i) => [id, liveState(rows[i], now)] as const);
      const byId = new Map(states);
      const stateOf = (item: StoreItem) => byId.get(stateId(item.policy, item.key)) as KeyState;
      const result = decideMany(items, stateOf, now, commit);
      // Each id's policy, for its expiry: the last item naming it (every item of one id shares the policy).
      const policyOf = new Map(items.map((item) => [stateId(item.policy, item.key), item.policy]));
      const writesOut = states.map(([id, state], i) =>
        writeOf(rows[i], state, policyOf.get(id) as ResolvedPolicy, now),
      );
      return { writes: writesOut, result };
    });
    if (commit) wrote(nowMs);
    // A committed rejection re-blocks every rejected limit with a blockMs: the cache must learn the new end.
    for (const [i, item] of items.entries()) {
      const decision = decisions[i] as Decision;
      cache?.learn(stateId(item.policy, item.key), item.policy, item.cost, nowMs, commit, decision, true);
    }
    return decisions;
  }

  /** Every item's cost taken past its limit if need be, in one atomic update of their rows (Store.charge). */
  async function charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]> {
    if (items.length === 0) return [];
    const ids = [...new Set(items.map((item) => stateId(item.policy, item.key)))];
    for (const id of ids) cache?.forget(id);
    const decisions = await update<Decision[]>(ids, nowMs, (rows, now) => {
      const states = ids.map((_id, i) => liveState(rows[i], now));
      const stateOf = (item: StoreItem) => states[ids.indexOf(stateId(item.policy, item.key))] as KeyState;
      const result = items.map((item) => chargeOnState(stateOf(item), item.policy, item.cost, now));
      const policyOf = new Map(items.map((item) => [stateId(item.policy, item.key), item.policy]));
      const writesOut = states.map((state, i) =>
        writeOf(rows[i], state, policyOf.get(ids[i] as string) as ResolvedPolicy, now),
      );
      return { writes: writesOut, result };
    });
    wrote(nowMs);
    return decisions;
  }

  /** Several refunds in one atomic update of their rows (Store.refundMany): one transaction on SQL. */
  async function refundMany(items: readonly StoreItem[], nowMs: number): Promise<void> {
    if (items.length === 0) return;
    const ids = [...new Set(items.map((item) => stateId(item.policy, item.key)))];
    for (const id of ids) cache?.forget(id);
    await update<void>(ids, nowMs, (rows, now) => {
      const states = rows.map((row) =>
        row === undefined || row.expiresAt <= now ? undefined : decodeKeyState(row.state),
      );
      for (const item of items) {
        const state = states[ids.indexOf(stateId(item.policy, item.key))];
        if (state !== undefined) refundOnState(state, item.policy, item.cost, now);
      }
      const policyOf = new Map(items.map((item) => [stateId(item.policy, item.key), item.policy]));
      const writesOut = states.map((state, i) =>
        state === undefined
          ? undefined
          : writeOf(rows[i], state, policyOf.get(ids[i] as string) as ResolvedPolicy, now),
      );
      return { writes: writesOut, result: undefined };
    });
  }

  async function refund(key: string, p: ResolvedPolicy, cost: number, nowMs: number): Promise<void> {
    const id = stateId(p, key);
    cache?.forget(id);
    await update<void>([id], nowMs, (rows, now) => {
      const row = rows[0];
      if (row === undefined || row.expiresAt <= now) return { writes: [undefined], result: undefined };
      const state = decodeKeyState(row.state);
      refundOnState(state, p, cost, now);
      return { writes: [writeOf(row, state, p, now)], result: undefined };
    });
  }

  async function reset(key: string, p: ResolvedPolicy): Promise<void> {
    const id = stateId(p, key);
    cache?.forget(id);
    await update<void>([id], Date.now(), (rows) => ({
      writes: [rows[0] === undefined ? undefined : null],
      result: undefined,
    }));
  }

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
 * Several limits of one request on their states, all or nothing, as the memory store decides them: look at every
 * limit first; a rejection (committed) re-blocks each rejected limit that has a blockMs and takes nothing; otherwise
 * take each in order, and should one (key, policy) appear twice and the second not fit, give back what was taken.
 */
function decideMany(
  items: readonly StoreItem[],
  stateOf: (item: StoreItem) => KeyState,
  nowMs: number,
  commit: boolean,
): Decision[] {
  const looks = items.map((item) => decideOnState(stateOf(item), item.policy, item.cost, nowMs, false));
  if (!looks.every((d) => d.allowed)) {
    if (commit) {
      for (const [i, item] of items.entries())
        if (!looks[i]?.allowed && item.policy.blockMs > 0) stateOf(item).b = nowMs + item.policy.blockMs;
    }
    return looks;
  }
  if (!commit) return looks;
  const taken: Decision[] = [];
  for (const item of items) {
    const decision = decideOnState(stateOf(item), item.policy, item.cost, nowMs, true);
    taken.push(decision);
    if (!decision.allowed) {
      for (const done of items.slice(0, taken.length - 1)) refundOnState(stateOf(done), done.policy, done.cost, nowMs);
      return taken.concat(looks.slice(taken.length));
    }
  }
  return taken;
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
