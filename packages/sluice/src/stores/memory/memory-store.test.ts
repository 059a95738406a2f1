import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePolicy } from '../../core/policy.js';
import { LEASE_BYTES } from './lease-table.js';
import { createMemoryStore } from './memory-store.js';

describe('memory store', () => {
  const p = resolvePolicy({ algorithm: 'token-bucket', limit: 5, period: 1000 });

  it('rejected requests and peeks never add keys', () => {
    const store = createMemoryStore();
    const zero = resolvePolicy({ limit: 0, period: 1000 });
    for (let i = 0; i < 1000; i++) {
      store.check(`attacker${i}`, zero, 1, 0, true);
      store.check(`peek${i}`, p, 1, 0, false);
    }
    assert.equal(store.stats().keys, 0);
  });

  it('expires keys lazily and frees them in a sweep, without a timer per key', () => {
    const store = createMemoryStore({ sweepIntervalMs: 0 });
    for (let i = 0; i < 100; i++) store.check(`k${i}`, p, 1, 0, true);
    assert.equal(store.stats().keys, 100);
    assert.equal(store.sweep(100), 0, 'not expired yet: one token takes 200 ms to come back');
    assert.equal(store.sweep(200), 100);
    assert.equal(store.stats().keys, 0);
  });

  it('evicts the least recently used key past maxKeys and counts it', () => {
    const store = createMemoryStore({ maxKeys: 1000 });
    for (let i = 0; i < 1500; i++) store.check(`k${i}`, p, 1, 0, true);
    assert.equal(store.stats().keys, 1000);
    assert.equal(store.stats().evictions, 500);
    assert.equal(store.check('k1499', p, 1, 0, false).remaining, 4, 'recent key kept');
    assert.equal(store.check('k0', p, 1, 0, false).remaining, 5, 'oldest key forgotten');
  });

  it('counts leases in maxBytes: they take at most half, plain keys make room, a lease past it is refused', () => {
    const maxBytes = 64 * 1024;
    const store = createMemoryStore({ maxBytes, sweepIntervalMs: 0 });
    for (let i = 0; i < 1000; i++) store.check(`k${i}`, p, 1, 0, true);
    const keysBefore = store.stats().keys;
    let admitted = 0;
    for (let i = 0; i < 5000; i++) if (store.acquire(`job${i % 50}`, 1000, 86_400_000, 0).allowed) admitted++;
    const stats = store.stats();
    assert.ok(stats.bytes <= maxBytes, `${stats.bytes} bytes held`);
    assert.equal(stats.leases, admitted);
    assert.ok(admitted > 50 && admitted * LEASE_BYTES <= maxBytes / 2, `${admitted} leases`);
    assert.equal(stats.leasesRefused, 5000 - admitted);
    assert.ok(stats.keys < keysBefore, 'plain keys were forgotten to make room for the leases');
    // A refused lease reports when a place may free, and the leases held were not forgotten.
    const refused = store.acquire('job0', 1000, 1000, 0);
    assert.equal(refused.allowed, false);
    assert.ok(refused.retryAfterMs > 0);
    assert.equal(store.stats().leases, admitted);
  });

  it('validates its options', () => {
    assert.throws(() => createMemoryStore({ maxKeys: 0 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
    assert.throws(() => createMemoryStore({ sweepIntervalMs: -1 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  it('refuses use after close', async () => {
    const store = createMemoryStore();
    await store.close();
    assert.throws(() => store.check('k', p, 1, 0, true), { code: 'ERR_SLUICE_STORE_CLOSED' });
  });
  it('one store keeps policies of every kind apart when checks alternate between them', () => {
    // The store remembers how the policy it saw last is decided (numeric, log, under a block): a check
    // on another policy must not be decided the way of the previous one.
    const store = createMemoryStore();
    const window = resolvePolicy({ algorithm: 'fixed-window', limit: 2, period: 1000 });
    const log = resolvePolicy({ algorithm: 'sliding-log', limit: 1, period: 1000 });
    const blocking = resolvePolicy({ algorithm: 'gcra', limit: 1, period: 1000, blockDuration: 5000 });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      for (const [name, policy] of [
        ['window', window],
        ['log', log],
        ['blocking', blocking],
      ] as const) {
        const d = store.check('k', policy, 1, 100, true);
        seen.push(`${name}:${d.allowed}:${d.remaining}:${d.retryAfterMs}`);
      }
    }
    assert.deepEqual(seen, [
      'window:true:1:0',
      'log:true:0:0',
      'blocking:true:0:0',
      'window:true:0:0',
      'log:false:0:1000',
      'blocking:false:0:1000', // the rejection that blocks reports the algorithm's own wait
      'window:false:0:900',
      'log:false:0:1000',
      'blocking:false:0:5000',
    ]);
  });

  it('reports whole milliseconds on a clock with fractions, rounding waits up', () => {
    const store = createMemoryStore();
    const at = 1000.25;
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log'] as const) {
      const policy = resolvePolicy({ algorithm, limit: 1, period: 1000 });
      const allowed = store.check(algorithm, policy, 1, at, true);
      const rejected = store.check(algorithm, policy, 1, at, true);
      for (const d of [allowed, rejected]) {
        assert.ok(
          Number.isInteger(d.resetMs) && Number.isInteger(d.retryAfterMs),
          `${algorithm}: ${JSON.stringify(d)}`,
        );
      }
      assert.equal(rejected.allowed, false);
      // Retrying after retryAfterMs must pass: rounding down would be too early by a fraction of a ms.
      assert.equal(store.check(algorithm, policy, 1, at + rejected.retryAfterMs, false).allowed, true, algorithm);
    }
  });
});
