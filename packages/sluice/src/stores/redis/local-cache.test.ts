import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Decision } from '../../core/decision.js';
import { resolvePolicy } from '../../core/policy.js';
import { LocalCache } from './local-cache.js';

const over = (retryAfterMs: number, resetMs = retryAfterMs): Decision => ({
  allowed: false,
  limit: 3,
  remaining: 0,
  resetMs,
  retryAfterMs,
});

describe('local over-limit cache', () => {
  const p = resolvePolicy({ limit: 3, period: 1000 });

  it('answers a unit-cost request for a key over its limit until the retry time, to the ms', () => {
    const cache = new LocalCache(10);
    cache.learn('k', p, 1, 1000, true, over(400, 600));
    assert.deepEqual(cache.get('k', p, 1, 1100), {
      allowed: false,
      limit: 3,
      remaining: 0,
      resetMs: 500,
      retryAfterMs: 300,
    });
    assert.equal(cache.get('k', p, 2, 1100), undefined, 'another cost waits a different time: ask Redis');
    assert.equal(cache.get('k', p, 1, 1400), undefined, 'lapsed');
    assert.equal(cache.hits, 1);
  });

  it('learns nothing from allowed requests, larger costs, or rejections with room left', () => {
    const cache = new LocalCache(10);
    cache.learn('a', p, 1, 0, true, { allowed: true, limit: 3, remaining: 0, resetMs: 10, retryAfterMs: 0 });
    cache.learn('b', p, 2, 0, true, over(100));
    cache.learn('c', p, 1, 0, true, { ...over(100), remaining: 1 });
    cache.learn('d', p, 5, 0, true, { ...over(Number.POSITIVE_INFINITY), reason: 'cost-exceeds-capacity' });
    assert.equal(cache.size, 0);
  });

  it('answers a blocked key for every cost until the block lapses', () => {
    const blocking = resolvePolicy({ limit: 3, period: 1000, blockDuration: 5000 });
    const cache = new LocalCache(10);
    cache.learn('peeked', blocking, 1, 0, false, over(100));
    assert.equal(cache.size, 0, 'a peek blocked nothing: the next check must reach Redis');
    cache.learn('k', blocking, 1, 0, true, over(100));
    const d = cache.get('k', blocking, 7, 1000);
    assert.equal(d?.reason, 'blocked');
    assert.equal(d?.retryAfterMs, 4000);
    assert.equal(cache.get('k', blocking, 0, 5000), undefined);
  });

  it('is bounded and forgets on demand', () => {
    const cache = new LocalCache(2);
    for (const k of ['a', 'b', 'c']) cache.learn(k, p, 1, 0, true, over(100));
    assert.equal(cache.size, 2);
    assert.equal(cache.get('a', p, 1, 0), undefined, 'the oldest went first');
    cache.forget('b');
    assert.equal(cache.get('b', p, 1, 0), undefined);
  });
});
