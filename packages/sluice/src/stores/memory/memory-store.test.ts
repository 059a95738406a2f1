import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePolicy } from '../../core/policy.js';
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

  it('validates its options', () => {
    assert.throws(() => createMemoryStore({ maxKeys: 0 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
    assert.throws(() => createMemoryStore({ sweepIntervalMs: -1 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  it('refuses use after close', async () => {
    const store = createMemoryStore();
    await store.close();
    assert.throws(() => store.check('k', p, 1, 0, true), { code: 'ERR_SLUICE_STORE_CLOSED' });
  });
});
