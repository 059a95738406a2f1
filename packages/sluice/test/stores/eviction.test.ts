/**
 * The memory store's eviction order (SPEC §2): forget least first — a key whose state equals a fresh
 * one, then the least quota used (sampled) — and a key at its limit or blocked last; every eviction is
 * counted. Bounded in keys and in bytes, with each policy's own state inside the same bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePolicy } from '../../src/core/policy.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';

const T0 = 1_700_000_040_000;

describe('memory store: eviction forgets least first', () => {
  it('a flood of fresh one-hit keys never evicts a key at its limit or blocked', () => {
    const store = createMemoryStore({ maxKeys: 100, sweepIntervalMs: 0 });
    const login = resolvePolicy({ limit: 5, period: '15m' });
    const strict = resolvePolicy({ limit: 1, period: '1m', blockDuration: '1h' });
    const api = resolvePolicy({ algorithm: 'token-bucket', limit: 100, period: '1m' });
    for (let i = 0; i < 5; i++) assert.equal(store.check('login:alice', login, 1, T0, true).allowed, true);
    store.check('mallory', strict, 1, T0, true);
    assert.equal(store.check('mallory', strict, 1, T0, true).reason, undefined, 'over: now blocked for an hour');
    for (let i = 0; i < 1_000_000 / 100; i++) store.check(`flood:${i}`, api, 1, T0 + 1, true);
    const stats = store.stats();
    assert.equal(stats.keys, 100);
    assert.equal(stats.evictions, 10_000 + 2 - 100, 'every eviction counted');
    assert.equal(stats.evictedAtLimit, 0);
    const alice = store.check('login:alice', login, 1, T0 + 2, true);
    assert.deepEqual([alice.allowed, alice.remaining], [false, 0], 'alice still used up: 5 of 5');
    assert.equal(store.check('mallory', strict, 1, T0 + 2, true).reason, 'blocked');
  });

  it('forgets a key as good as fresh first, then the least used of the oldest few, whatever the recency', () => {
    const store = createMemoryStore({ maxKeys: 4, sweepIntervalMs: 0 });
    const p = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: '1m' });
    const short = resolvePolicy({ algorithm: 'fixed-window', limit: 10, period: '1s' });
    const use = (key: string, n: number, policy = p) => {
      for (let i = 0; i < n; i++) store.check(key, policy, 1, T0, true);
    };
    use('heavy', 8); // oldest, 80% used
    use('light', 2); // 20% used
    use('expiring', 1, short); // 10% used, but its window ends in a second
    use('medium', 5);
    // Two seconds on, `expiring` equals a fresh key: it goes first, although it is not the oldest.
    store.check('new1', p, 9, T0 + 2000, true);
    assert.equal(store.check('expiring', short, 1, T0 + 2000, false).remaining, 10);
    assert.equal(store.check('heavy', p, 1, T0 + 2000, false).remaining, 2, 'heavy kept');
    // Then the least used among the oldest: `light` (20%), not the older `heavy` (80%).
    store.check('new2', p, 9, T0 + 2000, true);
    assert.equal(store.check('light', p, 1, T0 + 2000, false).remaining, 10, 'light forgotten');
    assert.equal(store.check('heavy', p, 1, T0 + 2000, false).remaining, 2, 'heavy kept');
    assert.equal(store.check('medium', p, 1, T0 + 2000, false).remaining, 5, 'medium kept');
    assert.equal(store.stats().evictions, 2);
  });

  it('keys at their limit go only when nothing else is left, and that is counted too', () => {
    const store = createMemoryStore({ maxKeys: 2, sweepIntervalMs: 0 });
    const p = resolvePolicy({ limit: 1, period: '1h' });
    store.check('a', p, 1, T0, true);
    store.check('b', p, 1, T0, true);
    store.check('c', p, 1, T0, true);
    assert.deepEqual([store.stats().evictions, store.stats().evictedAtLimit], [1, 1]);
  });

  it('stays within maxBytes, counting each policy with its keys, and drops a policy with its last key', () => {
    const maxBytes = 64 * 1024;
    const store = createMemoryStore({ maxBytes, sweepIntervalMs: 0 });
    // A client of /v1/check can make a new policy per request: policies must not escape the bound.
    for (let i = 0; i < 5_000; i++) {
      const p = resolvePolicy({ limit: 10 + i, period: 60_000 });
      store.check(`k${i}`, p, 1, T0, true);
      assert.ok(store.stats().bytes <= maxBytes, `${store.stats().bytes} bytes after ${i + 1} policies`);
    }
    assert.ok(store.stats().evictions > 4_000);
    const log = resolvePolicy({ algorithm: 'sliding-log', limit: 1000, period: '1h' });
    for (let i = 0; i < 20_000; i++) store.check(`log${i % 3}`, log, 1, T0 + i, true);
    assert.ok(store.stats().bytes <= maxBytes, 'sliding logs count as they grow');
    const fresh = createMemoryStore({ sweepIntervalMs: 0 });
    const p = resolvePolicy({ limit: 3, period: '1m' });
    fresh.check('only', p, 1, T0, true);
    assert.ok(fresh.stats().bytes > 0);
    fresh.reset('only', p);
    assert.equal(fresh.stats().bytes, 0, 'the policy went with its last key');
  });

  it('validates maxBytes', () => {
    assert.throws(() => createMemoryStore({ maxBytes: 100 }), {
      code: 'ERR_SLUICE_INVALID_OPTION',
      option: 'maxBytes',
    });
  });
});
