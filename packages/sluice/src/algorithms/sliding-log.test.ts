import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admitted, runTrace } from '../../../../test/helpers/trace.js';
import { resolvePolicy } from '../core/policy.js';
import { SlidingLogState, slidingLog } from './sliding-log.js';

describe('sliding-log', () => {
  it('does not let the boundary burst through', () => {
    const trace = [[997], [998], [999], [1000], [1001], [1002]] as const;
    assert.equal(admitted(runTrace({ algorithm: 'sliding-log', limit: 3, period: 1000 }, trace)), 3);
  });

  it('frees capacity exactly one period after each admitted request', () => {
    const ds = runTrace({ algorithm: 'sliding-log', limit: 2, period: 1000 }, [
      [0],
      [400],
      [500],
      [999],
      [1000],
      [1399],
      [1400],
    ]);
    assert.deepEqual(
      ds.map((d) => [d.allowed, d.remaining, d.retryAfterMs]),
      [
        [true, 1, 0],
        [true, 0, 0],
        [false, 0, 500], // the entry at 0 leaves the window (now − 1000, now] at 1000
        [false, 0, 1],
        [true, 0, 0],
        [false, 0, 1],
        [true, 0, 0],
      ],
    );
  });

  it('keeps at most `limit` entries per key however hard it is hit', () => {
    const p = resolvePolicy({ algorithm: 'sliding-log', limit: 5, period: 1000 });
    const log = new SlidingLogState();
    for (let t = 0; t < 100_000; t += 7) slidingLog.check(log, 0, t, p, 1, true);
    assert.ok(log.entries.length - log.head <= 2 * 5, `${(log.entries.length - log.head) / 2} live entries`);
    assert.ok(log.entries.length <= 4 * 5, `${log.entries.length / 2} stored entries`);
  });
});
