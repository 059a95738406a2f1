import type { Lease, LeaseDecision } from '../store.js';

/**
 * In-flight leases per key for the concurrency limiter: lease id → expiry. Expired leases are dropped
 * whenever their key is touched, so a holder that crashed frees its place after `leaseMs`. Keys with
 * no live lease are deleted, and at most `maxKeys` keys hold leases at once.
 */
export class LeaseTable {
  private readonly byKey = new Map<string, Map<string, number>>();
  private sequence = 0;

  constructor(private readonly maxKeys: number) {}

  acquire(key: string, limit: number, leaseMs: number, nowMs: number): LeaseDecision {
    const held = this.live(key, nowMs);
    const inFlight = held?.size ?? 0;
    let soonest = Number.POSITIVE_INFINITY;
    let latest = nowMs;
    for (const expiresAt of held?.values() ?? []) {
      soonest = Math.min(soonest, expiresAt);
      latest = Math.max(latest, expiresAt);
    }
    soonest = inFlight > 0 ? soonest - nowMs : 0;
    latest -= nowMs;
    if (inFlight >= limit) {
      return {
        allowed: false,
        limit,
        remaining: 0,
        resetMs: latest,
        // A place frees up when the soonest lease lapses, if it is not released before.
        retryAfterMs: limit === 0 ? Number.POSITIVE_INFINITY : soonest,
        ...(limit === 0 ? { reason: 'cost-exceeds-capacity' as const } : {}),
      };
    }
    const id = `${nowMs.toString(36)}.${(++this.sequence).toString(36)}`;
    const expiresAt = nowMs + leaseMs;
    let leases = held;
    if (leases === undefined) {
      leases = new Map();
      this.byKey.set(key, leases);
      if (this.byKey.size > this.maxKeys) {
        const oldest = this.byKey.keys().next().value;
        if (oldest !== undefined) this.byKey.delete(oldest);
      }
    }
    leases.set(id, expiresAt);
    return {
      allowed: true,
      limit,
      remaining: limit - leases.size,
      resetMs: Math.max(latest, leaseMs),
      retryAfterMs: 0,
      lease: { key, id, expiresAt },
    };
  }

  release(lease: Lease, nowMs: number): boolean {
    const held = this.live(lease.key, nowMs);
    const released = held?.delete(lease.id) ?? false;
    if (held?.size === 0) this.byKey.delete(lease.key);
    return released;
  }

  /** The key's unexpired leases, or undefined when none. */
  private live(key: string, nowMs: number): Map<string, number> | undefined {
    const held = this.byKey.get(key);
    if (held === undefined) return undefined;
    for (const [id, expiresAt] of held) if (expiresAt <= nowMs) held.delete(id);
    if (held.size === 0) {
      this.byKey.delete(key);
      return undefined;
    }
    return held;
  }
}
