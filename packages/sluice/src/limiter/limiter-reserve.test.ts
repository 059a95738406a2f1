/** `limiter.reserve`: the limiter's own reservations, with `reservationTtl` and `onExpire` as limiter options. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import { createLimiter } from './create-limiter.js';
import { createReservations } from './reservations.js';

const T0 = 1_700_000_000_000;

describe('limiter.reserve', () => {
  it('takes the estimate now and settles the real cost: the difference goes back', async () => {
    const limiter = createLimiter({
      limit: 100,
      period: '1h',
      store: createMemoryStore(),
      clock: createManualClock(T0),
    });
    const r = await limiter.reserve('k', { cost: 60 });
    assert.equal(r.allowed, true);
    assert.equal((await limiter.peek('k')).remaining, 40);
    const settled = await r.settle(25);
    assert.equal(settled.ok, true);
    assert.equal((await limiter.peek('k')).remaining, 75);
    // A second settle is an answer, not an exception.
    assert.equal((await r.settle(25)).ok, false);
  });

  it('a refused reservation takes nothing, across every limit', async () => {
    const limiter = createLimiter({
      limits: [
        { name: 'minute', limit: 10, period: '1m' },
        { name: 'hour', limit: 100, period: '1h' },
      ],
      store: createMemoryStore(),
      clock: createManualClock(T0),
    });
    const r = await limiter.reserve('k', { cost: 11 });
    assert.equal(r.allowed, false);
    assert.equal((await limiter.peek('k')).remaining, 10);
  });

  it("onExpire: 'refund' gives an unsettled reservation back after reservationTtl", async () => {
    const clock = createManualClock(T0);
    const limiter = createLimiter({
      limit: 10,
      period: '1h',
      store: createMemoryStore(),
      clock,
      reservationTtl: '30s',
      onExpire: 'refund',
    });
    const r = await limiter.reserve('k', { cost: 8 });
    assert.equal(r.allowed, true);
    clock.advance(31_000);
    // The next reservation sees the lapsed one and refunds it first.
    assert.equal((await limiter.reserve('k', { cost: 9 })).allowed, true);
  });

  it('bad reservation options are refused when the limiter is made, with a code', () => {
    assert.throws(
      () => createLimiter({ limit: 1, period: '1s', onExpire: 'later' as never }),
      (e: unknown) => (e as { code?: string }).code === 'ERR_SLUICE_INVALID_OPTION',
    );
    assert.throws(
      () => createLimiter({ limit: 1, period: '1s', reservationTtl: 'soon' }),
      (e: unknown) => /^ERR_SLUICE_/.test(String((e as { code?: string }).code)),
    );
  });

  it('a settle past the limit is charged as debt, through limiter.reserve and createReservations(limiter) alike', async () => {
    for (const via of ['limiter', 'createReservations'] as const) {
      const clock = createManualClock(T0);
      const limiter = createLimiter({ algorithm: 'token-bucket', limit: 10, period: '10s', clock });
      const book = via === 'limiter' ? limiter : createReservations(limiter);
      const r = await book.reserve('k', { cost: 8 });
      const s = await r.settle(13);
      assert.ok(s.ok && s.charged === 13, via);
      assert.equal(s.extra?.allowed, false, `${via}: 3 owed`);
      assert.equal(s.extra?.retryAfterMs, 3000, `${via}: 3 units at 1 a second`);
      assert.equal((await limiter.peek('k')).allowed, false);
      clock.advance(4000);
      assert.equal((await limiter.peek('k')).allowed, true, `${via}: paid, and one more unit refilled`);
    }
  });
});
