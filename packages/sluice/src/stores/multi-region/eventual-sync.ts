/** Eventual multi-region sync: each region's part of a window's G-counter, exchanged and merged. */
import { slotOf } from '../redis/keys.js';
import type { Runner } from '../redis/runner.js';
import { EVENTUAL_MERGE, EVENTUAL_READ_OWN } from './eventual-lua.js';
import { markerOfCounterKey, windowOfCounterKey } from './keys.js';
import type { PeerLink, Replicator } from './sync-loop.js';

/** A region's own part of one window's G-counter: what it took, what it gave back, and the TTL left. */
export interface CounterPart {
  readonly plus: number;
  readonly minus: number;
  readonly ttlMs: number;
}

/**
 * Most keys in one eventual sync script (read or merge). Each script runs alone in its Redis, and a
 * decision that arrives meanwhile waits for it: a merge costs a few µs of Redis time per key, so 32
 * keep one under a few hundred µs (500 at once held a region's Redis for milliseconds, the decisions'
 * p99). The groups are pipelined: no more round trips.
 */
export const SYNC_SCRIPT_KEYS = 32;

/** Keys grouped so that each group can go to one script: by hash slot on a Cluster, else `max` at a time. */
export function groupBySlot(keys: readonly string[], cluster: boolean, max = SYNC_SCRIPT_KEYS): string[][] {
  const groups: string[][] = [];
  if (!cluster) {
    for (let i = 0; i < keys.length; i += max) groups.push(keys.slice(i, i + max));
    return groups;
  }
  const bySlot = new Map<number, string[]>();
  for (const k of keys) {
    const slot = slotOf(k);
    let g = bySlot.get(slot);
    if (g === undefined || g.length >= max) {
      g = [];
      bySlot.set(slot, g);
      groups.push(g);
    }
    g.push(k);
  }
  return groups;
}

/**
 * Runs `each` on every group, starting one per turn of the event loop: building a sync script's
 * arguments for many keys takes CPU, and decisions waiting on this process get their turn in between.
 * Resolves when every one has finished; rejects with the first failure, after starting no more groups.
 *
 * Each group's promise is handled the moment it starts: one that rejects while a later group waits for
 * its turn would otherwise be an unhandled rejection, which ends a Node process (a peer's Redis answering
 * READONLY or OOM did exactly that).
 */
export async function eachGroup<T>(groups: readonly T[], each: (group: T) => Promise<unknown>): Promise<void> {
  const running: Promise<void>[] = [];
  let failure: { error: unknown } | undefined;
  for (const [i, group] of groups.entries()) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    if (failure !== undefined) break;
    running.push(
      each(group).then(
        () => undefined,
        (error: unknown) => {
          failure ??= { error };
        },
      ),
    );
  }
  await Promise.all(running);
  if (failure !== undefined) throw failure.error;
}

/** Sends this region's own counter fields to the others (eventual mode). */
export function createCounterReplicator(local: Runner, localCluster: boolean, region: string): Replicator<CounterPart> {
  return {
    async read(keys) {
      const out = new Map<string, CounterPart | undefined>();
      await eachGroup(groupBySlot(keys, localCluster), async (group) => {
        const r = (await local.script(EVENTUAL_READ_OWN, group, [region])) as unknown[];
        group.forEach((k, i) => {
          const plus = Number(r[i * 3]);
          const minus = Number(r[i * 3 + 1]);
          const ttlMs = Number(r[i * 3 + 2]);
          out.set(k, ttlMs > 0 && plus + minus > 0 ? { plus, minus, ttlMs } : undefined);
        });
      });
      return out;
    },

    async push(peer: PeerLink, items) {
      await eachGroup(groupBySlot([...items.keys()], peer.cluster), (group) => {
        const keys: string[] = [];
        const args = [region];
        for (const k of group) {
          const part = items.get(k) as CounterPart;
          keys.push(k, markerOfCounterKey(k));
          args.push(String(part.plus), String(part.minus), String(part.ttlMs), String(windowOfCounterKey(k)));
        }
        return peer.runner.script(EVENTUAL_MERGE, keys, args);
      });
    },
  };
}
