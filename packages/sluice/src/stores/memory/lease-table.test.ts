import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LEASE_BYTES, LeaseTable } from './lease-table.js';

/** The obvious table, scanning every lease on every call: what the heaps must agree with. */
class ScanningModel {
  readonly leases = new Map<string, Map<string, number>>();
  acquire(key: string, limit: number, leaseMs: number, nowMs: number, id: string) {
    const held = this.live(key, nowMs);
    const expiries = [...held.values()];
    if (held.size >= limit) {
      return { allowed: false, retryAfterMs: limit === 0 ? Number.POSITIVE_INFINITY : Math.min(...expiries) - nowMs };
    }
    held.set(id, nowMs + leaseMs);
    this.leases.set(key, held);
    return { allowed: true, remaining: limit - held.size };
  }
  release(key: string, id: string, nowMs: number): boolean {
    return this.live(key, nowMs).delete(id);
  }
  private live(key: string, nowMs: number): Map<string, number> {
    const held = this.leases.get(key) ?? new Map<string, number>();
    for (const [id, at] of held) if (at <= nowMs) held.delete(id);
    return held;
  }
}

describe('LeaseTable', () => {
  it('decides as a table that scans every lease, on random acquires, releases and time (property)', () => {
    const step = fc.oneof(
      fc.record({
        op: fc.constant('acquire' as const),
        key: fc.integer({ min: 0, max: 3 }),
        limit: fc.integer({ min: 0, max: 6 }),
        leaseMs: fc.integer({ min: 1, max: 5000 }),
      }),
      fc.record({ op: fc.constant('release' as const), key: fc.integer({ min: 0, max: 3 }), pick: fc.nat() }),
      fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300 }), (steps) => {
        const table = new LeaseTable(1000, 1 << 30);
        const model = new ScanningModel();
        const held: { key: string; id: string }[] = [];
        let now = 1_000_000;
        for (const s of steps) {
          if (s.op === 'wait') now += s.ms;
          else if (s.op === 'acquire') {
            const key = `k${s.key}`;
            const d = table.acquire(key, s.limit, s.leaseMs, now);
            const m = model.acquire(key, s.limit, s.leaseMs, now, d.lease?.id ?? '');
            assert.equal(d.allowed, m.allowed);
            if (d.lease) {
              assert.equal(d.remaining, m.remaining);
              held.push({ key, id: d.lease.id });
            } else assert.equal(d.retryAfterMs, m.retryAfterMs);
          } else if (held.length > 0) {
            const [lease] = held.splice(s.pick % held.length, 1);
            if (lease === undefined) continue;
            assert.equal(table.release({ ...lease, expiresAt: 0 }, now), model.release(lease.key, lease.id, now));
          }
        }
        const live = [...model.leases.values()].reduce(
          (n, m) => n + [...m.values()].filter((at) => at > now).length,
          0,
        );
        assert.ok(table.size >= live, 'never fewer leases than are live');
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a new lease once its bytes are spent, and frees lapsed ones without their key being touched', () => {
    // A hundred leases, plus the bookkeeping of their ten keys (about 200 bytes each).
    const table = new LeaseTable(1_000_000, 100 * LEASE_BYTES + 10 * 204);
    let admitted = 0;
    for (let i = 0; i < 1000; i++) if (table.acquire(`k${i % 10}`, 1000, 1000, 0).allowed) admitted++;
    assert.equal(admitted, 100);
    assert.equal(table.refused, 1000 - admitted);
    const full = table.acquire('other', 10, 1000, 500);
    assert.equal(full.allowed, false);
    assert.equal(full.retryAfterMs, 500, 'a place frees when the soonest lease anywhere lapses');
    // After the leases lapse, a new key gets a lease: the full table pruned them itself.
    assert.equal(table.acquire('other', 10, 1000, 1000).allowed, true);
    assert.ok(table.size < 100, `${table.size} leases left`);
  });

  it('refuses a new key past maxKeys instead of forgetting another holder', () => {
    const table = new LeaseTable(2, 1 << 30);
    assert.equal(table.acquire('a', 1, 1000, 0).allowed, true);
    assert.equal(table.acquire('b', 1, 1000, 0).allowed, true);
    assert.equal(table.acquire('c', 1, 1000, 0).allowed, false);
    assert.equal(table.acquire('a', 1, 1000, 0).allowed, false, "a's lease is still held");
  });

  it('gives lease ids of 128 random bits', () => {
    const table = new LeaseTable(10, 1 << 30);
    const ids = new Set<string>();
    for (let i = 0; i < 100; i++) ids.add(table.acquire('k', 1000, 1000, 0).lease?.id ?? '');
    assert.equal(ids.size, 100);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{22}$/);
  });
});
