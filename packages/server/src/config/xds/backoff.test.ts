import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay } from './backoff.js';

describe('xDS reconnect backoff', () => {
  it('envoy’s defaults (10s, 60s, factor 0.5, jitter): every wait is 10 s', () => {
    const envoy = { initialMs: 10_000, maxMs: 60_000, factor: 0.5, jitter: true };
    for (const attempt of [0, 1, 5, 50]) {
      for (const r of [0, 0.5, 0.999])
        assert.equal(
          backoffDelay(envoy, attempt, () => r),
          10_000,
        );
    }
  });

  it('factor 2 doubles up to the max; jitter picks between the initial wait and that', () => {
    const b = { initialMs: 100, maxMs: 1000, factor: 2, jitter: false };
    assert.deepEqual(
      [0, 1, 2, 3, 4, 10, 5000].map((n) => backoffDelay(b, n)),
      [100, 200, 400, 800, 1000, 1000, 1000],
    );
    const j = { ...b, jitter: true };
    assert.equal(
      backoffDelay(j, 3, () => 0),
      100,
    );
    assert.equal(
      backoffDelay(j, 3, () => 0.5),
      450,
    );
    assert.equal(backoffDelay({ ...b, factor: 0 }, 1), 200);
    assert.equal(backoffDelay({ ...b, initialMs: 2000 }, 0), 1000);
  });
});
