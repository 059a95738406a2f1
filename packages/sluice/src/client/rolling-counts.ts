/**
 * Counts of events over a sliding window, kept in a ring of buckets so that old events fall out
 * without storing each one: the memory of adaptive throttling and of the retry budget.
 */
import type { Clock } from '../core/clock.js';

/** Buckets per window: the window slides in steps of a twentieth of its length. */
const BUCKETS = 20;

/** A few named counts over the last `windowMs`. */
export interface RollingCounts<K extends string> {
  /** Counts `n` events of `kind` now (-1 takes one back). @default 1 */
  add(kind: K, n?: number): void;
  /** The count of `kind` over the window. */
  sum(kind: K): number;
}

/** Creates rolling counts of `kinds` over `windowMs`, read from `clock`. */
export function createRollingCounts<K extends string>(
  kinds: readonly K[],
  windowMs: number,
  clock: Clock,
): RollingCounts<K> {
  const bucketMs = Math.max(1, windowMs / BUCKETS);
  const rings = new Map(kinds.map((k) => [k, new Array<number>(BUCKETS).fill(0)]));
  let current = Math.floor(clock.now() / bucketMs);
  const advance = () => {
    const now = Math.floor(clock.now() / bucketMs);
    // Clear the buckets the clock has passed since the last event (all of them after a long quiet).
    for (let b = current + 1; b <= Math.min(now, current + BUCKETS); b++)
      for (const ring of rings.values()) ring[b % BUCKETS] = 0;
    if (now > current) current = now;
  };
  return {
    add(kind, n = 1) {
      advance();
      const ring = rings.get(kind) as number[];
      ring[current % BUCKETS] = (ring[current % BUCKETS] as number) + n;
    },
    sum(kind) {
      advance();
      return (rings.get(kind) as number[]).reduce((a, b) => a + b, 0);
    },
  };
}
