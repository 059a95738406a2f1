import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePolicy } from '../core/policy.js';
import { slidingWindow } from './sliding-window.js';

describe('sliding-window', () => {
  // Cloudflare's worked example: 42 requests in the previous minute, 18 in the current one, 15 s into
  // it: estimate = 42 × (45/60) + 18 = 49.5.
  const period = 60_000;
  const window = 1000;
  const now = window * period + 15_000;
  const state = () => [window, 42, 18];

  it("matches Cloudflare's worked example (estimate 49.5)", () => {
    // A limit of 50 leaves room for 0.5 requests: the next one (estimate 50.5) is rejected…
    const at50 = slidingWindow.check(
      state(),
      0,
      now,
      resolvePolicy({ algorithm: 'sliding-window', limit: 50, period }),
      1,
      true,
    );
    assert.equal(at50.allowed, false);
    assert.equal(at50.remaining, 0);
    // …while with a limit of 51 it passes, and then nothing is left (51.5 > 51).
    const s = state();
    const at51 = slidingWindow.check(
      s,
      0,
      now,
      resolvePolicy({ algorithm: 'sliding-window', limit: 51, period }),
      1,
      true,
    );
    assert.equal(at51.allowed, true);
    assert.equal(at51.remaining, 0);
    assert.deepEqual(s, [window, 42, 19]);
  });

  it('retries when the previous window has faded enough', () => {
    const p = resolvePolicy({ algorithm: 'sliding-window', limit: 50, period });
    const d = slidingWindow.check(state(), 0, now, p, 1, true);
    // Needs 42 × (60000 − r)/60000 + 19 ≤ 50 → r ≥ 15715 ms (integer ms), i.e. 715 ms later.
    assert.equal(d.retryAfterMs, 715);
    assert.equal(slidingWindow.check(state(), 0, now + 714, p, 1, false).allowed, false);
    assert.equal(slidingWindow.check(state(), 0, now + 715, p, 1, false).allowed, true);
  });

  it('carries the current count into the next window as the previous one', () => {
    const p = resolvePolicy({ algorithm: 'sliding-window', limit: 10, period: 1000 });
    const s = [0, 0, 0];
    for (let i = 0; i < 10; i++) slidingWindow.check(s, 0, 500, p, 1, true);
    // At 1500: estimate = 10 × 0.5 + 0 = 5, so 5 more fit.
    assert.equal(slidingWindow.check(s, 0, 1500, p, 1, false).remaining, 5);
  });
});
