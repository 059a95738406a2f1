import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration } from './duration.js';
import { SluiceError } from './errors.js';
import { MAX_SLIDING_LOG_LIMIT, type PolicyOptions, resolvePolicy, ticksFor } from './policy.js';

function rejects(options: unknown, code: string, option: string) {
  assert.throws(
    () => resolvePolicy(options as PolicyOptions),
    (e: unknown) => {
      assert.ok(e instanceof SluiceError, 'a SluiceError');
      assert.equal(e.code, code);
      assert.match(e.message, new RegExp(option.replace('.', '\\.')));
      return true;
    },
  );
}

describe('policy validation', () => {
  it('names the option and gives each kind of mistake its own code', () => {
    rejects({ limit: -1, period: 1000 }, 'ERR_SLUICE_INVALID_LIMIT', 'limit');
    rejects({ limit: 1.5, period: 1000 }, 'ERR_SLUICE_INVALID_LIMIT', 'limit');
    rejects({ limit: '10', period: 1000 }, 'ERR_SLUICE_INVALID_LIMIT', 'limit');
    rejects({ limit: 10, period: 0 }, 'ERR_SLUICE_INVALID_PERIOD', 'period');
    rejects({ limit: 10 }, 'ERR_SLUICE_INVALID_PERIOD', 'period');
    rejects({ limit: 10, period: '10 parsecs' }, 'ERR_SLUICE_INVALID_DURATION', 'period');
    rejects({ limit: 10, period: '1s', algorithm: 'magic' }, 'ERR_SLUICE_INVALID_ALGORITHM', 'algorithm');
    rejects({ limit: 10, period: '1s', algorithm: 'token-bucket', burst: 0 }, 'ERR_SLUICE_INVALID_BURST', 'burst');
    rejects({ limit: 10, period: '1s', algorithm: 'fixed-window', burst: 5 }, 'ERR_SLUICE_INVALID_BURST', 'burst');
    rejects({ limit: 10, period: '1s', limt: 5 }, 'ERR_SLUICE_UNKNOWN_OPTION', 'limt');
    rejects(
      { limit: 1_000_000_000, period: '3650d', algorithm: 'sliding-window' },
      'ERR_SLUICE_INVALID_LIMIT',
      'limit',
    );
    rejects({ limit: 10, period: '1s', blockDuration: '3661d' }, 'ERR_SLUICE_INVALID_BLOCK', 'blockDuration');
  });

  it(`refuses a sliding log whose log could exceed ${MAX_SLIDING_LOG_LIMIT} entries, naming the sliding window`, () => {
    assert.equal(resolvePolicy({ algorithm: 'sliding-log', limit: MAX_SLIDING_LOG_LIMIT, period: '1d' }).limit, 10_000);
    assert.throws(
      () => resolvePolicy({ algorithm: 'sliding-log', limit: 1e9, period: '3650d' }, 'checks[0].'),
      (e: unknown) =>
        e instanceof SluiceError &&
        e.code === 'ERR_SLUICE_SLIDING_LOG_TOO_LARGE' &&
        e.option === 'checks[0].limit' &&
        /'sliding-window'/.test(e.message),
    );
    // The sliding window takes the same limit.
    assert.equal(resolvePolicy({ algorithm: 'sliding-window', limit: 100_000, period: '1h' }).limit, 100_000);
  });

  it('accepts durations as ms or strings', () => {
    assert.equal(resolvePolicy({ limit: 1, period: '500ms' }).periodMs, 500);
    assert.equal(resolvePolicy({ limit: 1, period: '5m' }).periodMs, 300_000);
    assert.equal(resolvePolicy({ limit: 1, period: 250 }).periodMs, 250);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('1h'), 3_600_000);
    assert.equal(parseDuration('1d'), 86_400_000);
    assert.throws(() => parseDuration(-5), /not a whole, non-negative/);
    assert.throws(() => parseDuration('1.0001ms'), /whole number/);
  });

  it('picks integer ticks so the emission interval is exact', () => {
    assert.deepEqual(ticksFor(100, 60_000), { scale: 1, intervalTicks: 600 });
    assert.deepEqual(ticksFor(3, 1000), { scale: 3, intervalTicks: 1000 });
    const { scale, intervalTicks } = ticksFor(999_983, 1000); // prime: no exact small scale
    assert.equal(scale, 1500);
    assert.ok(Math.abs(intervalTicks / scale - 1000 / 999_983) < 1 / scale);
  });
});
