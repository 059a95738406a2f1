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
  const name = (store: Store) => (store === perSecond ? 'per-second Redis' : 'main Redis');
  const wrap = <T>(store: Store, call: () => T | Promise<T>): Promise<T> => {
    try {
      return Promise.resolve(call()).catch((error: unknown) => {
        throw labelled(error, name(store));
      });
    } catch (error) {
      return Promise.reject(labelled(error, name(store)));
    }
  };

  async function giveBack(store: Store, items: readonly StoreItem[], decisions: readonly Decision[], nowMs: number) {
    // Best effort: if this Redis fails too, its counters lapse with their window.
    await Promise.all(
      items.map((item, i) =>
        decisions[i]?.allowed === true
          ? wrap(store, () => store.refund(item.key, item.policy, item.cost, nowMs)).catch(() => {})
          : undefined,
      ),
    );
  }

  async function checkBoth(
    items: readonly StoreItem[],
    nowMs: number,
    commit: boolean,
    fast: number[],
    slow: number[],
  ): Promise<Decision[]> {
    const fastItems = fast.map((i) => items[i] as StoreItem);
    const slowItems = slow.map((i) => items[i] as StoreItem);
    const [a, b] = await Promise.allSettled([
      wrap(perSecond, () => perSecond.checkMany(fastItems, nowMs, commit)),
      wrap(main, () => main.checkMany(slowItems, nowMs, commit)),
    ]);
    if (a.status === 'rejected' || b.status === 'rejected') {
      if (commit && a.status === 'fulfilled') await giveBack(perSecond, fastItems, a.value, nowMs);
      if (commit && b.status === 'fulfilled') await giveBack(main, slowItems, b.value, nowMs);
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
      await giveBack(store, sideItems, ds, nowMs);
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
      return checkBoth(items, nowMs, commit, fast, slow);
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
    stats() {
      const sum: Record<string, number> = {};
      for (const store of stores) {
        const value = typeof store.stats === 'function' ? store.stats() : undefined;
        if (typeof value !== 'object' || value === null) continue;
        for (const [k, v] of Object.entries(value)) if (typeof v === 'number') sum[k] = (sum[k] ?? 0) + v;
      }
      return sum;
    },
  } as Store;
}
