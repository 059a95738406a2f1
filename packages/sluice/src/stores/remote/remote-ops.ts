/**
 * The remote store's operations, as plain functions over what one store shares (its batcher, its local
 * over-limit cache, whether the caller's clock is sent): one check, a group of checks, a charge.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { LocalCache } from '../redis/local-cache.js';
import type { StoreItem } from '../store.js';
import type { Batcher } from './batcher.js';
import { policyPart, toDecision, type WireItem, type WireResult } from './wire.js';

/** What every operation of one remote store shares. */
export interface Remote {
  readonly batcher: Batcher;
  /** Decisions known to reject, answered without the service; undefined when `cacheKeys` is off. */
  readonly cache: LocalCache | undefined;
  /** Whether the service decides on the caller's clock (each item then carries `nowMs`). */
  readonly clientClock: boolean;
}

/** A counter's identity: its policy and key. */
export function idOf(key: string, policy: ResolvedPolicy): string {
  return `${policy.id}\u0000${key}`;
}

/** The item of one operation, with the caller's clock when the store runs on it. */
export function at(remote: Remote, item: WireItem, nowMs: number): WireItem {
  if (remote.clientClock) item.nowMs = nowMs;
  return item;
}

/** Sends one operation on its own and resolves with its result. */
export function sendOne(remote: Remote, item: WireItem): Promise<WireResult> {
  return remote.batcher.send([item]).then((results) => results[0] as WireResult);
}

/** A result that only says the operation was done. */
export function toOk(r: WireResult): void {
  if (r.error !== undefined || r.ok !== true) toDecision(r); // throws the result's error
}

/**
 * The store's check (or peek), the hot path: the local cache first, else one item in the next batch. Made once per
 * store as a closure over `remote`, so a call is one frame, as the check of a store built in one function was.
 */
export function checkOf(
  remote: Remote,
): (key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean) => Promise<Decision> {
  const { cache } = remote;
  return (key, policy, cost, nowMs, commit) => {
    const id = idOf(key, policy);
    const cached = cache?.get(id, policy, cost, nowMs);
    if (cached !== undefined) return Promise.resolve(cached);
    const item = at(remote, { key, op: commit ? 'check' : 'peek', cost, ...policyPart(policy) }, nowMs);
    return sendOne(remote, item).then((r) => {
      const d = toDecision(r);
      cache?.learn(id, policy, cost, nowMs, commit, d);
      return d;
    });
  };
}

/** Several checks decided all or nothing: sent as one group, which the batcher never splits. */
export async function checkGroup(
  remote: Remote,
  items: readonly StoreItem[],
  nowMs: number,
  commit: boolean,
): Promise<Decision[]> {
  const { cache, batcher } = remote;
  const ids = items.map((item) => idOf(item.key, item.policy));
  if (cache !== undefined && items.every((item) => item.policy.blockMs === 0)) {
    // Only when every limit is known to reject: the answer must be the one the service would give.
    const cached = items.map((item, i) => cache.get(ids[i] as string, item.policy, item.cost, nowMs));
    if (cached.every((d) => d !== undefined)) return cached as Decision[];
  }
  const group = batcher.nextGroup();
  const wire = items.map((item) =>
    at(
      remote,
      { key: item.key, op: commit ? 'check' : 'peek', cost: item.cost, group, ...policyPart(item.policy) },
      nowMs,
    ),
  );
  const decisions = (await batcher.send(wire)).map(toDecision);
  if (cache !== undefined && new Set(ids).size === ids.length) {
    items.forEach((item, i) => {
      cache.learn(ids[i] as string, item.policy, item.cost, nowMs, commit, decisions[i] as Decision, true);
    });
  }
  return decisions;
}

/** The service's op `charge`: several items as one group, charged in one step of its store. */
export async function chargeGroup(remote: Remote, items: readonly StoreItem[], nowMs: number): Promise<Decision[]> {
  const { cache, batcher } = remote;
  for (const item of items) cache?.forget(idOf(item.key, item.policy));
  const group = items.length > 1 ? batcher.nextGroup() : undefined;
  const wire = items.map((item) =>
    at(
      remote,
      {
        key: item.key,
        op: 'charge',
        cost: item.cost,
        ...(group === undefined ? {} : { group }),
        ...policyPart(item.policy),
      },
      nowMs,
    ),
  );
  return (await batcher.send(wire)).map(toDecision);
}
