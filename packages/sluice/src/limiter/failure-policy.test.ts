import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { checkAll } from './check-all.js';
import { createLimiter } from './create-limiter.js';

/** A store that answers from memory until `down` is set, then fails like an unreachable Redis. */
function flakyStore(
  code: 'ERR_SLUICE_STORE_UNAVAILABLE' | 'ERR_SLUICE_STORE_TIMEOUT' = 'ERR_SLUICE_STORE_UNAVAILABLE',
) {
  const memory = createMemoryStore();
  const state = { down: false };
  const fail = () => Promise.reject(new SluiceError(code, 'redis is not connected'));
  const store: Store = {
    name: 'flaky',
    synchronous: false,
    check: (...args) => (state.down ? fail() : Promise.resolve(memory.check(...args))),
    checkMany: (...args) => (state.down ? fail() : Promise.resolve(memory.checkMany(...args))),
    refund: (...args) => (state.down ? fail() : Promise.resolve(memory.refund(...args))),
    reset: (...args) => (state.down ? fail() : Promise.resolve(memory.reset(...args))),
    acquire: (...args) => Promise.resolve(memory.acquire(...args)),
    release: (...args) => Promise.resolve(memory.release(...args)),
    close: () => memory.close(),
  };
  return { store, state };
}

describe('failure policy', () => {
  it("fail: 'open' allows while the store is down, marked degraded, and recovers", async () => {
    const { store, state } = flakyStore();
    const limiter = createLimiter({ limit: 1, period: '1m', store, fail: 'open' });
    assert.equal((await limiter.check('k')).allowed, true);
    assert.equal((await limiter.check('k')).allowed, false);
    state.down = true;
    const d = await limiter.check('k');
    assert.deepEqual(d, { allowed: true, limit: 1, remaining: 1, resetMs: 0, retryAfterMs: 0, degraded: true });
    await limiter.refund('k'); // swallowed, not thrown
    state.down = false;
    const back = await limiter.check('k');
    assert.equal(back.allowed, false);
    assert.equal(back.degraded, undefined);
  });

  it('fail-open is the default, and timeouts count as failures', async () => {
    const { store, state } = flakyStore('ERR_SLUICE_STORE_TIMEOUT');
    state.down = true;
    const limiter = createLimiter({ limit: 1, period: '1m', store });
    assert.equal((await limiter.check('k')).degraded, true);
  });

  it("fail: 'closed' rejects with reason store-unavailable", async () => {
    const { store, state } = flakyStore();
    state.down = true;
    const limiter = createLimiter({ limit: 5, period: 200, store, fail: 'closed' });
    const d = await limiter.check('k');
    assert.deepEqual(d, {
      allowed: false,
      limit: 5,
      remaining: 0,
      resetMs: 200,
      retryAfterMs: 200,
      reason: 'store-unavailable',
      degraded: true,
    });
  });

  it("fail: 'insurance' enforces the same policy in memory, scaled by insuranceShare", async () => {
    const { store, state } = flakyStore();
    const clock = createManualClock(0);
    const limiter = createLimiter({
      algorithm: 'token-bucket',
      limit: 10,
      period: '1s',
      store,
      clock,
      fail: 'insurance',
      insuranceShare: 0.3,
    });
    state.down = true;
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await limiter.check('k')).allowed);
    assert.deepEqual(seen, [true, true, true, false, false]);
    const rejected = await limiter.check('k');
    assert.equal(rejected.degraded, true);
    assert.equal(rejected.limit, 3);
    clock.advance(1000);
    assert.equal((await limiter.check('k')).allowed, true, 'the stand-in refills like the real policy');
    await limiter.refund('k');
    assert.equal((await limiter.peek('k')).remaining, 3, 'refund reaches the stand-in');
  });

  it('several limits fail together, all or nothing, with per-limit results', async () => {
    const { store, state } = flakyStore();
    state.down = true;
    const limiter = createLimiter({
      store,
      fail: 'insurance',
      limits: [
        { name: 'second', limit: 2, period: '1s' },
        { name: 'minute', limit: 3, period: '1m' },
      ],
    });
    for (let i = 0; i < 2; i++) assert.equal((await limiter.check('k')).allowed, true);
    const third = await limiter.check('k');
    assert.equal(third.allowed, false);
    assert.deepEqual(
      third.results?.map((r) => [r.name, r.decision.allowed, r.decision.degraded]),
      [
        ['second', false, true],
        ['minute', true, true],
      ],
    );
    assert.equal(third.results?.[1]?.decision.remaining, 1, 'the rejected request took nothing from minute');
    assert.equal(third.degraded, true, 'the combined decision says it was taken without the store');
  });

  it('checkAll applies each limiter its own policy, all or nothing', async () => {
    const { store, state } = flakyStore();
    const insured = createLimiter({ limit: 5, period: '1m', store, fail: 'insurance', name: 'a' });
    const closed = createLimiter({ limit: 5, period: '1m', store, fail: 'closed', name: 'b' });
    const open = createLimiter({ limit: 5, period: '1m', store, fail: 'open', name: 'c' });
    state.down = true;
    const both = await checkAll([
      { limiter: insured, key: 'k' },
      { limiter: closed, key: 'k' },
    ]);
    assert.equal(both.allowed, false);
    assert.equal(both.reason, 'store-unavailable');
    const alone = await checkAll([
      { limiter: insured, key: 'k' },
      { limiter: open, key: 'k' },
    ]);
    assert.equal(alone.allowed, true);
    assert.equal(alone.results?.[0]?.decision.remaining, 4, 'the closed rejection took nothing from insurance');
  });

  it('misuse is not a store failure: it still throws', async () => {
    const memory = createMemoryStore();
    const limiter = createLimiter({ limit: 1, period: '1m', store: memory, fail: 'open' });
    await memory.close();
    await assert.rejects(limiter.check('k'), { code: 'ERR_SLUICE_STORE_CLOSED' });
  });

  it('validates fail and insuranceShare', () => {
    const base = { limit: 1, period: 1000 };
    assert.throws(() => createLimiter({ ...base, fail: 'maybe' as 'open' }), { code: 'ERR_SLUICE_INVALID_OPTION' });
    for (const insuranceShare of [0, 1.5, Number.NaN]) {
      assert.throws(
        () => createLimiter({ ...base, fail: 'insurance', insuranceShare }),
        (e: unknown) => e instanceof SluiceError && e.option === 'insuranceShare',
      );
    }
    assert.throws(() => createLimiter({ ...base, insuranceShare: 0.5 }), { code: 'ERR_SLUICE_INVALID_OPTION' });
    assert.ok(createLimiter({ limits: [{ limit: 1, period: 1000 }], fail: 'closed' }));
  });
});
