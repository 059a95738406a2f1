/**
 * The Redis store's checks of several limits, all or nothing: one script on one Redis or Cluster slot; across
 * slots, one script per slot sent together and the slots that took refunded when another rejected.
 */
import type { Decision } from '../../core/decision.js';
import type { StoreItem } from '../store.js';
import type { RedisTransport } from './client.js';
import { DECISION_WIDTH, decodeDecision, undecided } from './decode.js';
import { blockKey, keyIdOf, slotOf, stateKey, tagOf } from './keys.js';
import type { LocalCache } from './local-cache.js';
import type { Runner } from './runner.js';
import { type ScriptItem, scriptCall } from './script-args.js';
import type { ScriptCalls } from './script-calls.js';
import { MANY_SCRIPT, REFUND_SCRIPT } from './scripts.js';

/** A limit of a request with its state and block keys. */
export interface ManyItem {
  readonly key: string;
  readonly bkey: string;
  readonly item: StoreItem;
}

/** What the store's checkMany and refunds run on. */
export interface ManyChecks {
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  /** Store.charge: one script per slot (one round trip on a single Redis). */
  charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]>;
  runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown>;
  /** Store.refundMany: one refund script per slot (one round trip on a single Redis). */
  refundMany(items: readonly StoreItem[], nowMs: number): Promise<void>;
}

/** The all-or-nothing checks and refunds of one store. */
export function createManyChecks(
  runner: Runner,
  transport: RedisTransport,
  calls: ScriptCalls,
  prefix: string,
  cache: LocalCache | undefined,
): ManyChecks {
  const { batcher, queueKey, nowArg, grace } = calls;
  const toScriptItem = ({ key, bkey, item }: ManyItem): ScriptItem => ({
    key,
    bkey,
    policy: item.policy,
    fields: [String(item.cost)],
  });

  /**
   * Runs the all-or-nothing script on items that share a slot; with `wantLooks`, also the looks; with `charging`,
   * the script's charge instead (Store.charge).
   */
  function runMany(
    group: readonly ManyItem[],
    nowMs: number,
    commit: boolean,
    wantLooks: boolean,
    charging = false,
  ): Promise<{ decisions: Decision[]; looks: Decision[] }> {
    const items = group.map(toScriptItem);
    // The request's header (commit, looks, item count) goes before its first item's fields.
    items[0] = {
      ...(items[0] as ScriptItem),
      fields: [
        charging ? '2' : commit ? '1' : '0',
        wantLooks ? '1' : '0',
        String(items.length),
        String((group[0] as ManyItem).item.cost),
      ],
    };
    const n = group.length;
    return new Promise((resolve, reject) => {
      batcher.add({
        script: MANY_SCRIPT,
        queueKey: queueKey(MANY_SCRIPT, (group[0] as ManyItem).key, nowMs),
        nowMs,
        items,
        width: wantLooks ? 2 * n : n,
        settle(r, offset, refused) {
          // All or nothing: a request one of whose writes was refused is undecided as a whole.
          if (group.some((_, i) => undecided(r, offset + i * DECISION_WIDTH, false))) {
            reject(refused());
            return;
          }
          const decisions = group.map((g, i) => decodeDecision(r, offset + i * DECISION_WIDTH, g.item.policy.limit));
          const looks = wantLooks
            ? group.map((g, i) => decodeDecision(r, offset + (n + i) * DECISION_WIDTH, g.item.policy.limit))
            : decisions;
          resolve({ decisions, looks });
        },
        fail: reject,
      });
    });
  }

  function runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown> {
    return runner.call(REFUND_SCRIPT, scriptCall(REFUND_SCRIPT, [nowArg(nowMs), grace], group.map(toScriptItem)));
  }

  const manyItems = (items: readonly StoreItem[]): ManyItem[] =>
    items.map((item) => {
      const tag = tagOf(prefix, item.key);
      return { key: stateKey(tag, keyIdOf(item.policy)), bkey: blockKey(tag, keyIdOf(item.policy)), item };
    });

  /**
   * Every item charged in one script per slot, sent together. On a Cluster with keys in several slots, a slot that
   * failed makes the slots that charged give it back: the caller's failure policy answers for all of them.
   */
  async function charge(items: readonly StoreItem[], nowMs: number): Promise<Decision[]> {
    if (items.length === 0) return [];
    const all = manyItems(items);
    // The cache knows the key before its debt: it would end a rejection too early.
    for (const m of all) cache?.forget(m.key);
    const groups = groupBySlot(all, transport.cluster);
    const settled = await Promise.allSettled(groups.map((g) => runMany(g, nowMs, true, false, true)));
    const failure = settled.find((s) => s.status === 'rejected');
    if (failure !== undefined) {
      const back = groups.filter((_, i) => settled[i]?.status === 'fulfilled').map((g) => runRefunds(g, nowMs));
      await Promise.allSettled(back);
      throw (failure as PromiseRejectedResult).reason;
    }
    const byItem = new Map<ManyItem, Decision>();
    groups.forEach((g, i) => {
      const s = settled[i] as PromiseFulfilledResult<{ decisions: Decision[] }>;
      g.forEach((m, j) => {
        byItem.set(m, s.value.decisions[j] as Decision);
      });
    });
    return all.map((m) => byItem.get(m) as Decision);
  }

  async function checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]> {
    if (items.length === 0) return [];
    const all = manyItems(items);
    if (cache !== undefined && all.every((m) => m.item.policy.blockMs === 0)) {
      // Only when every limit is known to reject: the answer must be the one Redis would give for all.
      const cached = all.map((m) => cache.get(m.key, m.item.policy, m.item.cost, nowMs));
      if (cached.every((d) => d !== undefined)) return cached as Decision[];
    }
    const groups = groupBySlot(all, transport.cluster);
    let result: Decision[];
    if (groups.length === 1) {
      result = (await runMany(all, nowMs, commit, false)).decisions;
    } else {
      result = await checkAcrossSlots(all, groups, nowMs, commit, { runMany, runRefunds });
    }
    if (cache !== undefined && new Set(all.map((m) => m.key)).size === all.length) {
      // (With a key twice, a rejection may have been followed by a refund: nothing to learn.)
      for (const [i, m] of all.entries()) {
        cache.learn(m.key, m.item.policy, m.item.cost, nowMs, commit, result[i] as Decision, true);
      }
    }
    return result;
  }

  async function refundMany(items: readonly StoreItem[], nowMs: number): Promise<void> {
    if (items.length === 0) return;
    const all = manyItems(items);
    for (const m of all) cache?.forget(m.key);
    await Promise.all(groupBySlot(all, transport.cluster).map((g) => runRefunds(g, nowMs)));
  }

  return { checkMany, charge, runRefunds, refundMany };
}

/** One slot's all-or-nothing script and its refund. */
interface SlotRuns {
  runMany(
    group: readonly ManyItem[],
    nowMs: number,
    commit: boolean,
    wantLooks: boolean,
  ): Promise<{ decisions: Decision[]; looks: Decision[] }>;
  runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown>;
}

function groupBySlot(all: readonly ManyItem[], cluster: boolean): ManyItem[][] {
  if (!cluster) return [all as ManyItem[]];
  const bySlot = new Map<number, ManyItem[]>();
  for (const m of all) {
    const slot = slotOf(m.key);
    const group = bySlot.get(slot);
    if (group === undefined) bySlot.set(slot, [m]);
    else group.push(m);
  }
  return [...bySlot.values()];
}

/**
 * Cluster, keys in several slots: one script per slot, all sent at once (one round trip), then the
 * slots that consumed are refunded when another slot rejected. The answer is the one a single
 * atomic step would have given: the looks of the refunded slots, the decisions of the others.
 */
async function checkAcrossSlots(
  all: readonly ManyItem[],
  groups: readonly ManyItem[][],
  nowMs: number,
  commit: boolean,
  { runMany, runRefunds }: SlotRuns,
): Promise<Decision[]> {
  const settled = await Promise.allSettled(groups.map((g) => runMany(g, nowMs, commit, commit)));
  const failure = settled.find((s) => s.status === 'rejected');
  const consumed = (i: number) => {
    const s = settled[i];
    return commit && s?.status === 'fulfilled' && s.value.decisions.every((d) => d.allowed);
  };
  const allowed = settled.every((s) => s.status === 'fulfilled' && s.value.decisions.every((d) => d.allowed));
  if (failure !== undefined || (commit && !allowed)) {
    const refunds = groups.flatMap((g, i) => (consumed(i) ? [runRefunds(g, nowMs)] : []));
    if (failure !== undefined) {
      // Give back what the slots that answered took, but do not wait: the request fails anyway.
      for (const r of refunds) r.catch(() => undefined);
      throw (failure as PromiseRejectedResult).reason;
    }
    await Promise.all(refunds);
  }
  const byItem = new Map<ManyItem, Decision>();
  groups.forEach((g, i) => {
    const s = settled[i] as PromiseFulfilledResult<{ decisions: Decision[]; looks: Decision[] }>;
    const chosen = commit && !allowed && consumed(i) ? s.value.looks : s.value.decisions;
    g.forEach((m, j) => {
      byItem.set(m, chosen[j] as Decision);
    });
  });
  return all.map((m) => byItem.get(m) as Decision);
}
