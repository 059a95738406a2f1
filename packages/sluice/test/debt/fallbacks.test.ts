/**
 * When a settle's extra cannot be charged as debt (issue 40): on a store without charge (a multi-region store) the
 * extra is taken only while every limit has room, as before; when the store fails mid-charge the limiter's failure
 * policy answers the settle (degraded), which still succeeds with what was reserved — never an exception.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../../src/core/clock.js';
import { SluiceError } from '../../src/core/errors.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import type { Store } from '../../src/stores/store.js';

const T0 = 1_700_000_000_000;
const limits = [
  { name: 'minute', limit: 100, period: '1m' },
  { name: 'hour', limit: 1000, period: '1h' },
];

/** The memory store as a store that cannot charge, or whose charge fails as a dead Redis would. */
function memoryWithout(charge: 'none' | 'failing'): Store {
  const { charge: _charge, ...rest } = createMemoryStore({ sweepIntervalMs: 0 });
  if (charge === 'none') return rest;
  return {
    ...rest,
    charge: () => {
      throw new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'the store is down (test)');
    },
  };
}

describe('debt fallbacks', () => {
  it('a store without charge takes the extra on every limit while it fits, else none of it', async () => {
    const limiter = createLimiter({ limits, store: memoryWithout('none'), clock: createManualClock(T0) });
    const a = await limiter.reserve('k', { cost: 50 });
    const fits = await a.settle(80);
    assert.ok(fits.ok && fits.charged === 80 && fits.extra?.allowed === true);
    const b = await limiter.reserve('k', { cost: 10 });
    const over = await b.settle(40);
    assert.ok(over.ok && over.charged === 10, 'the extra did not fit: dropped, as before debt');
    assert.equal(over.extra?.allowed, false);
    const left = await limiter.peek('k', { cost: 0 });
    assert.deepEqual(
      left.results?.map((r) => r.decision.remaining),
      [10, 910],
      'no limit took the dropped extra',
    );
  });

  it("a store failing mid-charge: the failure policy answers ('open': degraded), the settle still succeeds", async () => {
    const limiter = createLimiter({
      limits,
      store: memoryWithout('failing'),
      clock: createManualClock(T0),
      fail: 'open',
    });
    const r = await limiter.reserve('k', { cost: 50 });
    const s = await r.settle(500);
    assert.ok(s.ok, 'an answer, not an exception');
    assert.equal(s.charged, 50, 'only what the reservation took');
    assert.equal(s.extra?.degraded, true);
  });
});
