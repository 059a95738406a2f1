import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admitted, runTrace } from '../../../../test/helpers/trace.js';

describe('fixed-window', () => {
  it('lets 2×limit through across a window boundary (the known weakness)', () => {
    // 3 requests at the end of window [0, 1000) and 3 at the start of [1000, 2000): 6 within 2 ms.
    const trace = [[997], [998], [999], [1000], [1001], [1002]] as const;
    const ds = runTrace({ algorithm: 'fixed-window', limit: 3, period: 1000 }, trace);
    assert.equal(admitted(ds), 6);
  });

  it('counts per aligned window and reports the window end', () => {
    const ds = runTrace({ algorithm: 'fixed-window', limit: 2, period: 1000 }, [[100], [200], [300], [1100]]);
    assert.deepEqual(
      ds.map((d) => [d.allowed, d.remaining, d.resetMs, d.retryAfterMs]),
      [
        [true, 1, 900, 0],
        [true, 0, 800, 0],
        [false, 0, 700, 700],
        [true, 1, 900, 0],
      ],
    );
  });
});
