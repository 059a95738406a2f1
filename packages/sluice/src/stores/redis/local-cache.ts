/**
 * The over-limit cache of the Redis and remote stores: keys known to stay rejected for a while are answered in-process,
 * so a flood on one key does not become load on the shared store.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';

/**
 * The local over-limit cache (envoy ratelimit's local cache): keys known to be rejected until some
 * instant, answered in-process until then without a Redis round trip, so a flood on one key does not
 * become Redis load.
 *
 * It only keeps what stays true whatever other processes do, so its answers are the ones Redis would
 * give, to the number: a key over its limit stays over until the first unit-cost request could pass
 * (other requests are rejected too, and rejections write nothing), and a block lasts until it lapses.
 * Only `reset` and `refund` make a key less limited; the store drops the entry on both (other
 * processes' resets reach this cache when the entry lapses).
 */
interface Entry {
  /** Local ms until which the key is rejected. */
  until: number;
  /** Local ms at which the policy is back to full capacity. */
  resetAt: number;
  /** A block (rejects every cost) rather than an over-limit count (rejects unit costs). */
  blocked: boolean;
}

/** Bounded map of over-limit keys; the oldest entry goes first when full. */
export class LocalCache {
  private readonly entries = new Map<string, Entry>();
  hits = 0;

  constructor(private readonly maxKeys: number) {}

  /** The cached rejection of (key, policy) for a request of `cost` at `nowMs`, if there is one. */
  get(id: string, policy: ResolvedPolicy, cost: number, nowMs: number): Decision | undefined {
    // Mostly nothing is over its limit: then no lookup, which would hash the freshly built key.
    if (this.entries.size === 0) return undefined;
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.until <= nowMs) {
      this.entries.delete(id);
      return undefined;
    }
    if (!entry.blocked && cost !== 1) return undefined;
    this.hits++;
    const decision: Decision = {
      allowed: false,
      limit: policy.limit,
      remaining: 0,
      resetMs: Math.max(0, entry.resetAt - nowMs),
      retryAfterMs: entry.until - nowMs,
    };
    if (entry.blocked) decision.reason = 'blocked';
    return decision;
  }

  /**
   * Learns from a decision Redis just made for a request of `cost` at `nowMs` (`commit` false for a peek).
   * A unit-cost rejection with nothing remaining holds until its retry time; a block until it lapses.
   * `fromMany`: the decision came from a multi-limit check, where a committed rejection (re)blocks every
   * rejected limit that has a blockMs, even one already blocked (the memory store's checkMany).
   */
  learn(
    id: string,
    policy: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
    d: Decision,
    fromMany = false,
  ): void {
    if (d.allowed) return;
    let entry: Entry | undefined;
    const justBlocked = commit && policy.blockMs > 0 && (fromMany || d.reason !== 'blocked');
    if (justBlocked) {
      // The script has just blocked the key until now + blockMs.
      entry = { until: nowMs + policy.blockMs, resetAt: nowMs + policy.blockMs, blocked: true };
    } else if (d.reason === 'blocked') {
      entry = { until: nowMs + d.retryAfterMs, resetAt: nowMs + d.resetMs, blocked: true };
    } else if (policy.blockMs > 0) {
      // A peek blocked nothing, and the next committed check must reach Redis to write the block.
      return;
    } else if (d.reason === undefined && cost === 1 && d.remaining === 0 && d.retryAfterMs > 0) {
      entry = { until: nowMs + d.retryAfterMs, resetAt: nowMs + d.resetMs, blocked: false };
    }
    if (entry === undefined) return;
    this.entries.delete(id);
    this.entries.set(id, entry);
    if (this.entries.size > this.maxKeys) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** Forgets (key, policy): after a reset or a refund. */
  forget(id: string): void {
    this.entries.delete(id);
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * The `localCache` option of the Redis and remote stores: false turns the cache off (undefined), true or `{}` keeps
 * 10,000 keys, `{ maxKeys }` that many (a whole number ≥ 1).
 */
export function localCacheKeys(option: boolean | { maxKeys?: number } | undefined): number | undefined {
  if (option === false) return undefined;
  const maxKeys = typeof option === 'object' ? (option.maxKeys ?? 10_000) : 10_000;
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'localCache.maxKeys: expected a whole number ≥ 1', {
      option: 'localCache.maxKeys',
    });
  }
  return maxKeys;
}
