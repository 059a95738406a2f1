import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTrace } from '../../../../test/helpers/trace.js';

// 10 per second with a burst of 5: five at once, then one every 100 ms.
const policy = { limit: 10, period: 1000, burst: 5 } as const;
const trace = [[0], [0], [0], [0], [0], [0], [50], [100], [150], [200], [200]] as const;
const expected = [true, true, true, true, true, false, false, true, false, true, false];

describe('token-bucket and gcra', () => {
  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    it(`${algorithm}: a burst, then the steady rate`, () => {
      const ds = runTrace({ algorithm, ...policy }, trace);
      assert.deepEqual(
        ds.map((d) => d.allowed),
        expected,
      );
      assert.equal(ds[5]?.retryAfterMs, 100);
      assert.equal(ds[6]?.retryAfterMs, 50);
      assert.equal(ds[4]?.resetMs, 500, 'five tokens refill in 500 ms');
    });
  }
});

describe('leaky-bucket', () => {
  it('admits like a token bucket of the same burst', () => {
    const ds = runTrace({ algorithm: 'leaky-bucket', ...policy }, trace);
    assert.deepEqual(
      ds.map((d) => d.allowed),
      expected,
    );
  });

  it('delayMs grows with the queue: each request waits for the ones ahead to drain', () => {
    const ds = runTrace({ algorithm: 'leaky-bucket', ...policy }, [[0], [0], [0], [0], [0], [0], [100]]);
    assert.deepEqual(
      ds.map((d) => d.delayMs),
      [0, 100, 200, 300, 400, undefined, 400],
    );
  });

  it('handles rates that do not divide the period (3 per second)', () => {
    const ds = runTrace({ algorithm: 'leaky-bucket', limit: 3, period: 1000, burst: 1 }, [
      [0],
      [333],
      [334],
      [667],
      [668],
    ]);
    assert.deepEqual(
      ds.map((d) => d.allowed),
      [true, false, true, false, true],
    );
  });
});
