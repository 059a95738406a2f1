/**
 * The kit store's operations on several rows at once — the limits of one request (all or nothing), a
 * settle's charge past the limit, several refunds — each one atomic update of every row it names.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { LocalCache } from '../redis/local-cache.js';
import type { StoreItem } from '../store.js';
import { chargeOnState, decideOnState, decodeKeyState, type KeyState, refundOnState } from './key-state.js';
import { liveState, stateId, writeOf } from './kit-rows.js';
import type { timedUpdate } from './timed-backend.js';

/** checkMany, charge and refundMany over the kit's timed update; `wrote` counts a write towards the next sweep. */
export function multiRowOperations(
  update: ReturnType<typeof timedUpdate>,
  cache: LocalCache | undefined,
  wrote: (nowMs: number) => void,
) {
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
        // The units' age, not their time: the update's clock (`now`) may be the database's, not the caller's.
        const takenAt = item.takenAtMs === undefined ? now : now - (nowMs - item.takenAtMs);
        if (state !== undefined) refundOnState(state, item.policy, item.cost, now, takenAt);
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

  return { checkMany, charge, refundMany };
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
