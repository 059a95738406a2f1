/**
 * The Redis store's checks of several limits, all or nothing: one script on one Redis or Cluster slot; across
 * slots, one script per slot sent together and the slots that took refunded when another rejected (many-slots.ts).
 */
import type { Decision } from '../../core/decision.js';
import type { StoreItem } from '../store.js';
import type { RedisTransport } from './client.js';
import { blockKey, keyIdOf, stateKey, tagOf } from './keys.js';
import type { LocalCache } from './local-cache.js';
import { checkAcrossSlots, groupBySlot, inItemOrder, type ManyItem, type SlotRuns, slotRuns } from './many-slots.js';
import type { Runner } from './runner.js';
import type { ScriptCalls } from './script-calls.js';

export type { ManyItem } from './many-slots.js';

/** What the store's checkMany and refunds run on. */
export interface ManyChecks {
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  /** Store.charge: one script per slot (one round trip on a single Redis). */
  charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]>;
  runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown>;
  /** Store.refundMany: one refund script per slot (one round trip on a single Redis). */
  refundMany(items: readonly StoreItem[], nowMs: number): Promise<void>;
}

/** What the operations share: the script runs, whether Redis is a Cluster, the key prefix, the local cache. */
interface Many {
  readonly runs: SlotRuns;
  readonly cluster: boolean;
  readonly prefix: string;
  readonly cache: LocalCache | undefined;
}

/** The all-or-nothing checks and refunds of one store. */
export function createManyChecks(
  runner: Runner,
  transport: RedisTransport,
  calls: ScriptCalls,
  prefix: string,
  cache: LocalCache | undefined,
): ManyChecks {
  const runs = slotRuns(runner, calls);
  const many: Many = { runs, cluster: transport.cluster, prefix, cache };
  return {
    checkMany: (items, nowMs, commit) => checkMany(many, items, nowMs, commit),
    charge: (items, nowMs) => charge(many, items, nowMs),
    runRefunds: runs.runRefunds,
    refundMany: (items, nowMs) => refundMany(many, items, nowMs),
  };
}

/** Each item with its state and block keys. */
const manyItems = (prefix: string, items: readonly StoreItem[]): ManyItem[] =>
  items.map((item) => {
    const tag = tagOf(prefix, item.key);
    return { key: stateKey(tag, keyIdOf(item.policy)), bkey: blockKey(tag, keyIdOf(item.policy)), item };
  });

/**
 * The hot path: the local cache when it knows every limit rejects, else one script on a single Redis (or
 * a Cluster whose keys share a slot), else one per slot (checkAcrossSlots); then the cache learns.
 */
async function checkMany(
  { runs, cluster, prefix, cache }: Many,
  items: readonly StoreItem[],
  nowMs: number,
  commit: boolean,
): Promise<Decision[]> {
  if (items.length === 0) return [];
  const all = manyItems(prefix, items);
  if (cache !== undefined && all.every((m) => m.item.policy.blockMs === 0)) {
    // Only when every limit is known to reject: the answer must be the one Redis would give for all.
    const cached = all.map((m) => cache.get(m.key, m.item.policy, m.item.cost, nowMs));
    if (cached.every((d) => d !== undefined)) return cached as Decision[];
  }
  const groups = groupBySlot(all, cluster);
  const result =
    groups.length === 1
      ? (await runs.runMany(all, nowMs, commit, false)).decisions
      : await checkAcrossSlots(all, groups, nowMs, commit, runs);
  if (cache !== undefined && new Set(all.map((m) => m.key)).size === all.length) {
    // (With a key twice, a rejection may have been followed by a refund: nothing to learn.)
    for (const [i, m] of all.entries()) {
      cache.learn(m.key, m.item.policy, m.item.cost, nowMs, commit, result[i] as Decision, true);
    }
  }
  return result;
}

/**
 * Every item charged in one script per slot, sent together. On a Cluster with keys in several slots, a slot that
 * failed makes the slots that charged give it back: the caller's failure policy answers for all of them.
 */
async function charge({ runs, cluster, prefix, cache }: Many, items: readonly StoreItem[], nowMs: number) {
  if (items.length === 0) return [];
  const all = manyItems(prefix, items);
  // The cache knows the key before its debt: it would end a rejection too early.
  for (const m of all) cache?.forget(m.key);
  const groups = groupBySlot(all, cluster);
  const settled = await Promise.allSettled(groups.map((g) => runs.runMany(g, nowMs, true, false, true)));
  const failure = settled.find((s) => s.status === 'rejected');
  if (failure !== undefined) {
    const back = groups.filter((_, i) => settled[i]?.status === 'fulfilled').map((g) => runs.runRefunds(g, nowMs));
    await Promise.allSettled(back);
    throw (failure as PromiseRejectedResult).reason;
  }
  return inItemOrder(
    all,
    groups,
    (i) => (settled[i] as PromiseFulfilledResult<{ decisions: Decision[] }>).value.decisions,
  );
}

/** Gives back what the items took: one refund script per slot; the cache forgets their keys. */
async function refundMany({ runs, cluster, prefix, cache }: Many, items: readonly StoreItem[], nowMs: number) {
  if (items.length === 0) return;
  const all = manyItems(prefix, items);
  for (const m of all) cache?.forget(m.key);
  await Promise.all(groupBySlot(all, cluster).map((g) => runs.runRefunds(g, nowMs)));
}
