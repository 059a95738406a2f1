/** recommendLimits: per-key peaks, their percentiles as limits, and the share each would refuse. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ObservedRequest, recommendLimits } from './recommend.js';

/** `n` unit requests of `key` inside the window starting at `startMs`. */
function burst(key: string, n: number, startMs: number): ObservedRequest[] {
  return Array.from({ length: n }, (_, i) => ({ t: startMs + i, key, cost: 1 }));
}

describe('recommendLimits', () => {
  it('suggests the percentiles of per-key peaks and what each would refuse', () => {
    // 100 keys: key i sends i+1 requests in one minute, and 1 in the next.
    const requests = Array.from({ length: 100 }, (_, i) => [
      ...burst(`k${i}`, i + 1, 0),
      ...burst(`k${i}`, 1, 60_000),
    ]).flat();
    const rec = recommendLimits(requests, 60_000);
    assert.equal(rec.keys, 100);
    assert.equal(rec.units, 5050 + 100);
    const byName = Object.fromEntries(rec.suggestions.map((s) => [s.percentile, s]));
    assert.equal(byName.p50?.limit, 50);
    assert.equal(byName.p90?.limit, 90);
    assert.equal(byName.p99?.limit, 99);
    assert.equal(byName.max?.limit, 100);
    assert.equal(byName.max?.keysRejected, 0);
    assert.equal(byName.max?.requestsRejected, 0);
    // At 50 a minute, keys 51..100 are refused: 50 keys, 1 + 2 + ... + 50 = 1275 requests.
    assert.equal(byName.p50?.keysRejected, 0.5);
    assert.equal(byName.p50?.requestsRejected, 1275 / 5150);
    assert.equal(byName.p99?.keysRejected, 0.01);
  });

  it('counts cost, and windows separately', () => {
    const rec = recommendLimits(
      [
        { t: 0, key: 'a', cost: 5 },
        { t: 999, key: 'a', cost: 5 },
        { t: 1000, key: 'a', cost: 3 },
      ],
      1000,
    );
    assert.deepEqual(
      rec.suggestions.find((s) => s.percentile === 'max'),
      {
        percentile: 'max',
        limit: 10,
        keysRejected: 0,
        requestsRejected: 0,
      },
    );
  });

  it('answers an empty trace with zeros', () => {
    const rec = recommendLimits([], 1000);
    assert.equal(rec.keys, 0);
    assert.ok(rec.suggestions.every((s) => s.limit === 0 && s.keysRejected === 0 && s.requestsRejected === 0));
  });
});
