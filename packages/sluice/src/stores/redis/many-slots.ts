/**
 * The all-or-nothing script on one Redis or Cluster slot and its refund (many-checks.ts builds the store's
 * operations on them), and the Cluster case: items grouped by slot, one script per slot, sent together.
 */
import type { Decision } from '../../core/decision.js';
import type { StoreItem } from '../store.js';
import { DECISION_WIDTH, decodeDecision, undecided } from './decode.js';
import { slotOf } from './keys.js';
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

/** What the multi-limit script answers for one slot: the decisions, and the looks when asked (else the decisions). */
export interface SlotAnswer {
  readonly decisions: Decision[];
  readonly looks: Decision[];
}

/** One slot's all-or-nothing script and its refund. */
export interface SlotRuns {
  /**
   * Runs the all-or-nothing script on items that share a slot; with `wantLooks`, also the looks; with
   * `charging`, the script's charge instead (Store.charge).
   */
  runMany(
    group: readonly ManyItem[],
    nowMs: number,
    commit: boolean,
    wantLooks: boolean,
    charging?: boolean,
  ): Promise<SlotAnswer>;
  /** Gives back what the items took (the refund script), on one slot. */
  runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown>;
}

const toScriptItem = ({ key, bkey, item }: ManyItem): ScriptItem => ({
  key,
  bkey,
  policy: item.policy,
  fields: [String(item.cost)],
});

/** A refund's item (refunds.lua): its cost and how long ago it was taken (an age: Redis's clock may be the one). */
const toRefundItem =
  (nowMs: number) =>
  ({ key, bkey, item }: ManyItem): ScriptItem => ({
    key,
    bkey,
    policy: item.policy,
    fields: [String(item.cost), refundAge(item, nowMs)],
  });

/** How long before `nowMs` a refund's units were taken (refunds.lua): 0 for now, and for a time still to come. */
export function refundAge(item: StoreItem, nowMs: number): string {
  return String(item.takenAtMs === undefined ? 0 : Math.max(0, nowMs - item.takenAtMs));
}

/** The script runs of one store: the multi-limit script through the batcher, refunds straight to the runner. */
export function slotRuns(runner: Runner, { batcher, queueKey, nowArg, grace }: ScriptCalls): SlotRuns {
  function runMany(
    group: readonly ManyItem[],
    nowMs: number,
    commit: boolean,
    wantLooks: boolean,
    charging = false,
  ): Promise<SlotAnswer> {
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
    return new Promise((resolve, reject) => {
      batcher.add({
        script: MANY_SCRIPT,
        queueKey: queueKey(MANY_SCRIPT, (group[0] as ManyItem).key, nowMs),
        nowMs,
        items,
        width: wantLooks ? 2 * group.length : group.length,
        settle(r, offset, refused) {
          // All or nothing: a request one of whose writes was refused is undecided as a whole.
          if (group.some((_, i) => undecided(r, offset + i * DECISION_WIDTH, false))) reject(refused());
          else resolve(decodeAnswer(group, r, offset, wantLooks));
        },
        fail: reject,
      });
    });
  }

  function runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown> {
    return runner.call(
      REFUND_SCRIPT,
      scriptCall(REFUND_SCRIPT, [nowArg(nowMs), grace], group.map(toRefundItem(nowMs))),
    );
  }

  return { runMany, runRefunds };
}

/** A request's decisions from the script's reply at `offset`, then its looks when asked for. */
function decodeAnswer(
  group: readonly ManyItem[],
  r: readonly unknown[],
  offset: number,
  wantLooks: boolean,
): SlotAnswer {
  const n = group.length;
  const decisions = group.map((g, i) => decodeDecision(r, offset + i * DECISION_WIDTH, g.item.policy.limit));
  const looks = wantLooks
    ? group.map((g, i) => decodeDecision(r, offset + (n + i) * DECISION_WIDTH, g.item.policy.limit))
    : decisions;
  return { decisions, looks };
}

/** The items by Cluster slot (all of them as one group on a single Redis). */
export function groupBySlot(all: readonly ManyItem[], cluster: boolean): ManyItem[][] {
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

/** Each item's answer from its group's, in the items' order. */
export function inItemOrder(
  all: readonly ManyItem[],
  groups: readonly ManyItem[][],
  answerOf: (group: number) => readonly Decision[],
): Decision[] {
  const byItem = new Map<ManyItem, Decision>();
  groups.forEach((g, i) => {
    const answer = answerOf(i);
    g.forEach((m, j) => {
      byItem.set(m, answer[j] as Decision);
    });
  });
  return all.map((m) => byItem.get(m) as Decision);
}

/**
 * Cluster, keys in several slots: one script per slot, all sent at once (one round trip), then the
 * slots that consumed are refunded when another slot rejected. The answer is the one a single
 * atomic step would have given: the looks of the refunded slots, the decisions of the others.
 */
export async function checkAcrossSlots(
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
  return inItemOrder(all, groups, (i) => {
    const s = settled[i] as PromiseFulfilledResult<SlotAnswer>;
    return commit && !allowed && consumed(i) ? s.value.looks : s.value.decisions;
  });
}
