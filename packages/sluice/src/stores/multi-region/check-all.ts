/**
 * A multi-region check of several items, all or nothing: items of one (key, policy) merged first, one script on one
 * Redis or Cluster slot, refunds across slots.
 */
import type { Decision } from '../../core/decision.js';
import type { StoreItem } from '../store.js';
import type { EventualRegion } from './eventual.js';

/**
 * All or nothing. On one Redis (or one Cluster slot) that is one script. Across Cluster slots (`slotOf` gives
 * an item's; undefined: not a Cluster) the slots are checked at once and the ones that took are refunded when
 * another rejected — the Redis store's way.
 */
export async function checkAllOrNothing(
  region: EventualRegion,
  items: readonly StoreItem[],
  nowMs: number,
  commit: boolean,
  slotOf: ((item: StoreItem) => number) | undefined,
): Promise<Decision[]> {
  if (items.length === 0) return [];
  const { unique, index } = mergeItems(items);
  let decisions: Decision[];
  const slots = slotOf === undefined ? new Set([0]) : new Set(unique.map(slotOf));
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

/** Items of one (key, policy) merged into one with their costs summed, so all-or-nothing scripts see each counter once. */
/** The unique items and, for each item given, the index of its unique item. */
function mergeItems(items: readonly StoreItem[]): { unique: StoreItem[]; index: number[] } {
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
