/**
 * envoy ratelimit's REDIS_PERSECOND: limits whose unit is one second live in a Redis of their own (they
 * are the busiest and the shortest-lived keys), every other limit in the main one. This store routes each
 * limit by its period and keeps the Store contract across the two: a request is decided all or nothing.
 */
import type { Decision, Lease, LeaseDecision, ResolvedPolicy, Store, StoreItem } from 'sluice';
import { isSluiceError, SluiceError } from 'sluice';

/** The period of envoy's `unit: second`. */
const SECOND_MS = 1000;

type AnyStore = Store & { stats?: () => unknown };

/**
 * Names which Redis failed: the failure policy still answers (the code is kept), and the log and the
 * error say where to look.
 */
function labelled(error: unknown, which: string): unknown {
  if (!isSluiceError(error)) return error;
  if (error.code !== 'ERR_SLUICE_STORE_UNAVAILABLE' && error.code !== 'ERR_SLUICE_STORE_TIMEOUT') return error;
  return new SluiceError(error.code, `${which}: ${error.message}`, { cause: error });
}

/**
 * A store that keeps per-second limits in `perSecond` and the rest in `main`. Concurrency leases stay
 * in `main`. Closing it closes both.
 *
 * A request with limits in both is checked in both at once (one round trip each, in parallel). Each
 * side is all or nothing by itself; when one side rejects, or fails, what the other side counted is
 * given back, so a rejected request still consumes nothing, and a failing Redis fails the whole request
 * into the failure policy.
 */
export function createPerSecondStore(main: Store, perSecond: Store): Store {
  const pick = (policy: ResolvedPolicy): Store => (policy.periodMs === SECOND_MS ? perSecond : main);
  const sides: Sides = { main, perSecond };
  const wrap = <T>(store: Store, call: () => T | Promise<T>) => callOn(sides, store, call);

  const stores = [main, perSecond] as AnyStore[];
  return {
    name: main.name,
    synchronous: false,
    check: (key, policy, cost, nowMs, commit) => {
      const store = pick(policy);
      return wrap(store, () => store.check(key, policy, cost, nowMs, commit));
    },
    checkMany(items, nowMs, commit) {
      const fast: number[] = [];
      const slow: number[] = [];
      for (const [i, item] of items.entries()) (item.policy.periodMs === SECOND_MS ? fast : slow).push(i);
      if (slow.length === 0) return wrap(perSecond, () => perSecond.checkMany(items, nowMs, commit));
      if (fast.length === 0) return wrap(main, () => main.checkMany(items, nowMs, commit));
      return checkBoth(sides, items, nowMs, commit, fast, slow);
    },
    refund: (key, policy, cost, nowMs) => {
      const store = pick(policy);
      return wrap(store, () => store.refund(key, policy, cost, nowMs));
    },
    reset: (key, policy) => {
      const store = pick(policy);
      return wrap(store, () => store.reset(key, policy));
    },
    acquire: (key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision> =>
      wrap(main, () => main.acquire(key, limit, leaseMs, nowMs)),
    release: (lease: Lease, nowMs: number) => wrap(main, () => main.release(lease, nowMs)),
    async close() {
      await Promise.all([main.close(), perSecond.close()]);
    },
    async ready(timeoutMs?: number) {
      await Promise.all(stores.map((s) => s.ready?.(timeoutMs)));
    },
    get isReady() {
      return stores.every((s) => s.isReady !== false);
    },
    // Summed, for the service's store counters (local cache hits, refused writes, ...).
    stats: () => sumStats(stores),
  } as Store;
}

/** The two Redis stores a request may be routed to. */
interface Sides {
  readonly main: Store;
  readonly perSecond: Store;
}

/** Calls one side, its failures labelled with which Redis failed (sync throws become rejections). */
function callOn<T>(sides: Sides, store: Store, call: () => T | Promise<T>): Promise<T> {
  const which = store === sides.perSecond ? 'per-second Redis' : 'main Redis';
  try {
    return Promise.resolve(call()).catch((error: unknown) => {
      throw labelled(error, which);
    });
  } catch (error) {
    return Promise.reject(labelled(error, which));
  }
}

/** Gives back what one side counted. Best effort: if this Redis fails too, its counters lapse with their window. */
async function giveBack(
  sides: Sides,
  store: Store,
  items: readonly StoreItem[],
  decisions: readonly Decision[],
  nowMs: number,
): Promise<void> {
  await Promise.all(
    items.map((item, i) =>
      decisions[i]?.allowed === true
        ? callOn(sides, store, () => store.refund(item.key, item.policy, item.cost, nowMs)).catch(() => {})
        : undefined,
    ),
  );
}

/**
 * A request with limits on both sides (`fast`: indexes of per-second items, `slow`: the others), checked on both
 * at once; what one side counted is given back when the other rejects or fails.
 */
async function checkBoth(
  sides: Sides,
  items: readonly StoreItem[],
  nowMs: number,
  commit: boolean,
  fast: number[],
  slow: number[],
): Promise<Decision[]> {
  const { main, perSecond } = sides;
  const fastItems = fast.map((i) => items[i] as StoreItem);
  const slowItems = slow.map((i) => items[i] as StoreItem);
  const [a, b] = await Promise.allSettled([
    callOn(sides, perSecond, () => perSecond.checkMany(fastItems, nowMs, commit)),
    callOn(sides, main, () => main.checkMany(slowItems, nowMs, commit)),
  ]);
  if (a.status === 'rejected' || b.status === 'rejected') {
    if (commit && a.status === 'fulfilled') await giveBack(sides, perSecond, fastItems, a.value, nowMs);
    if (commit && b.status === 'fulfilled') await giveBack(sides, main, slowItems, b.value, nowMs);
    throw a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason;
  }
  let fastDecisions = a.value;
  let slowDecisions = b.value;
  const passed = (ds: readonly Decision[]) => ds.every((d) => d.allowed);
  if (commit && passed(fastDecisions) !== passed(slowDecisions)) {
    // One side counted a request the other rejected: give it back, and report what is left without it.
    const [store, sideItems, ds] = passed(fastDecisions)
      ? [perSecond, fastItems, fastDecisions]
      : [main, slowItems, slowDecisions];
    await giveBack(sides, store, sideItems, ds, nowMs);
    const restored = ds.map((d, i) =>
      d.allowed ? { ...d, remaining: Math.min(d.limit, d.remaining + (sideItems[i] as StoreItem).cost) } : d,
    );
    if (store === perSecond) fastDecisions = restored;
    else slowDecisions = restored;
  }
  const out: Decision[] = new Array(items.length);
  for (const [j, i] of fast.entries()) out[i] = fastDecisions[j] as Decision;
  for (const [j, i] of slow.entries()) out[i] = slowDecisions[j] as Decision;
  return out;
}

/** Both stores' numeric stats summed, for the service's store counters (local cache hits, refused writes, ...). */
function sumStats(stores: readonly AnyStore[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const store of stores) {
    const value = typeof store.stats === 'function' ? store.stats() : undefined;
    if (typeof value !== 'object' || value === null) continue;
    for (const [k, v] of Object.entries(value)) if (typeof v === 'number') sum[k] = (sum[k] ?? 0) + v;
  }
  return sum;
}
