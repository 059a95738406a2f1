import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { checkAll } from './check-all.js';
import { createConcurrencyLimiter } from './concurrency-limiter.js';
import { createLimiter } from './create-limiter.js';

describe('createLimiter', () => {
  it('checks, peeks, refunds and resets', async () => {
    const clock = createManualClock(0);
    const limiter = createLimiter({ limit: 2, period: '1s', clock });
    assert.equal((await limiter.check('a')).remaining, 1);
    assert.equal((await limiter.peek('a')).remaining, 1, 'peek takes nothing');
    assert.equal((await limiter.check('a')).allowed, true);
    assert.equal((await limiter.check('a')).allowed, false);
    await limiter.refund('a');
    assert.equal((await limiter.check('a')).allowed, true);
    await limiter.reset('a');
    assert.equal((await limiter.check('a', { cost: 2 })).allowed, true);
    clock.advance(1000);
    assert.equal(limiter.checkSync('a').remaining, 1);
  });

  it('refunds units taken at takenAtMs only to the window that counted them', async () => {
    const clock = createManualClock(900);
    const limiter = createLimiter({
      limits: [
        { name: 'second', limit: 2, period: '1s', algorithm: 'fixed-window' },
        { name: 'log', limit: 2, period: '1s', algorithm: 'sliding-log' },
      ],
      clock,
    });
    const takenAtMs = clock.now();
    assert.equal((await limiter.check('a')).allowed, true, 'a slow request, taken at 900');
    clock.set(1050);
    assert.equal((await limiter.check('a')).allowed, true);
    // Both limits in one refundMany: the window of 900 has ended, and the log keeps the request at 1050.
    await limiter.refund('a', { takenAtMs });
    const remaining = async () => (await limiter.peek('a')).results?.map((r) => [r.name, r.decision.remaining]);
    assert.deepEqual(await remaining(), [
      ['second', 1], // the window of 1000 still counts the request at 1050
      ['log', 1], // the log gave back the entry at 900, and keeps the one at 1050…
    ]);
    clock.set(1901);
    assert.deepEqual(await remaining(), [
      ['second', 1],
      ['log', 1], // …which is still in the log when 900 would have left it
    ]);
    await assert.rejects(limiter.refund('a', { takenAtMs: Number.NaN }), { code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  it('blocks a key for blockDuration once it is rejected (brute-force protection)', async () => {
    const clock = createManualClock(0);
    const login = createLimiter({ limit: 3, period: '1m', blockDuration: '15m', clock });
    for (let i = 0; i < 3; i++) await login.check('alice');
    assert.equal((await login.check('alice')).allowed, false);
    clock.advance(60_000); // the window is over, but the block is not
    const d = await login.check('alice');
    assert.equal(d.reason, 'blocked');
    assert.equal(d.retryAfterMs, 14 * 60_000);
    clock.advance(14 * 60_000);
    assert.equal((await login.check('alice')).allowed, true);
    await login.reset('alice');
  });

  it('several limits: all or nothing, per-limit keys, and a null key skips its limit', async () => {
    const clock = createManualClock(0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'per-ip', limit: 5, period: '1m' },
        { name: 'per-user', limit: 2, period: '1m', algorithm: 'sliding-log' },
      ],
    });
    const both = { 'per-ip': '10.0.0.1', 'per-user': 'u1' };
    assert.equal((await limiter.check(both)).allowed, true);
    assert.equal((await limiter.check(both)).allowed, true);
    const third = await limiter.check(both);
    assert.equal(third.allowed, false);
    assert.deepEqual(
      third.results?.map((r) => [r.name, r.decision.allowed]),
      [
        ['per-ip', true],
        ['per-user', false],
      ],
    );
    // The rejected request took nothing from per-ip: 3 of 5 left.
    assert.equal((await limiter.check({ 'per-ip': '10.0.0.1', 'per-user': null })).remaining, 2);
    // The combined decision describes the limit closest to exhaustion.
    assert.equal((await limiter.check({ 'per-ip': '10.0.0.2', 'per-user': 'u9' })).limit, 2);
  });

  it("several limits: the combined decision keeps the binding one's delay and reason", async () => {
    const clock = createManualClock(0);
    const limiter = createLimiter({
      clock,
      limits: [
        { name: 'queue', limit: 2, period: '1s', algorithm: 'leaky-bucket' },
        { name: 'minute', limit: 100, period: '1m' },
      ],
    });
    await limiter.check('k');
    const queued = await limiter.check('k');
    assert.equal(queued.allowed, true);
    assert.ok((queued.delayMs ?? 0) > 0, 'the leaky bucket queues the second request');
    assert.equal(queued.delayMs, queued.results?.[0]?.decision.delayMs);
    const huge = await limiter.check('other', { cost: 500 });
    assert.equal(huge.allowed, false);
    assert.equal(huge.reason, 'cost-exceeds-capacity');
  });

  it('checkAll combines limiters on one store, all or nothing', async () => {
    const store = createMemoryStore();
    const clock = createManualClock(0);
    const perIp = createLimiter({ limit: 10, period: '1m', store, clock, name: 'ip' });
    const perKey = createLimiter({ limit: 1, period: '1m', store, clock, name: 'key' });
    assert.equal(
      (
        await checkAll([
          { limiter: perIp, key: 'ip1' },
          { limiter: perKey, key: 'k1' },
        ])
      ).allowed,
      true,
    );
    assert.equal(
      (
        await checkAll([
          { limiter: perIp, key: 'ip1' },
          { limiter: perKey, key: 'k1' },
        ])
      ).allowed,
      false,
    );
    assert.equal((await perIp.peek('ip1')).remaining, 9);
    const elsewhere = createLimiter({ limit: 1, period: '1m' });
    await assert.rejects(
      checkAll([
        { limiter: perIp, key: 'x' },
        { limiter: elsewhere, key: 'x' },
      ]),
      { code: 'ERR_SLUICE_STORE_MISMATCH' },
    );
  });

  it('two limiters with the same policy on one store share counters unless named', async () => {
    const store = createMemoryStore();
    const a = createLimiter({ limit: 1, period: '1m', store, name: 'login' });
    const b = createLimiter({ limit: 1, period: '1m', store, name: 'api' });
    assert.equal((await a.check('k')).allowed, true);
    assert.equal((await b.check('k')).allowed, true);
  });

  it('rejects bad options and bad calls with codes', async () => {
    assert.throws(() => createLimiter({ limit: 5, period: '1s', limits: [{ limit: 1, period: 1 }] }), {
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
    assert.throws(() => createLimiter({ limits: [] }), { code: 'ERR_SLUICE_INVALID_OPTION' });
    assert.throws(
      () => createLimiter({ limits: [{ limit: 1, period: '1x' }] }),
      (e: unknown) => e instanceof SluiceError && e.option === 'limits[0].period',
    );
    assert.throws(() => createLimiter({ limit: 5, period: '1s', store: {} as Store }), {
      code: 'ERR_SLUICE_INVALID_STORE',
    });
    const limiter = createLimiter({ limit: 5, period: '1s' });
    await assert.rejects(limiter.check('k', { cost: -1 }), { code: 'ERR_SLUICE_INVALID_COST' });
    await assert.rejects(limiter.check('k', { cost: 1.5 }), { code: 'ERR_SLUICE_INVALID_COST' });
    await assert.rejects(limiter.check(42 as unknown as string), { code: 'ERR_SLUICE_INVALID_KEY' });
  });

  it('checkSync refuses an asynchronous store', () => {
    const memory = createMemoryStore();
    const asyncStore: Store = { ...memory, name: 'async', synchronous: false };
    assert.throws(() => createLimiter({ limit: 1, period: 1000, store: asyncStore }).checkSync('k'), {
      code: 'ERR_SLUICE_STORE_NOT_SYNC',
    });
  });
});

describe('createConcurrencyLimiter', () => {
  it('holds at most limit leases per key and frees them on release or lapse', async () => {
    const clock = createManualClock(0);
    const inFlight = createConcurrencyLimiter({ limit: 1, lease: '10s', clock });
    const first = await inFlight.acquire('job');
    assert.ok(first.lease);
    assert.equal((await inFlight.acquire('job')).allowed, false);
    assert.equal((await inFlight.acquire('other')).allowed, true);
    assert.equal(await inFlight.release(first.lease), true);
    const second = await inFlight.acquire('job');
    assert.equal(second.allowed, true);
    clock.advance(10_000); // never released: it lapses
    assert.equal((await inFlight.acquire('job')).allowed, true);
    assert.throws(() => createConcurrencyLimiter({ limit: -1 }), { code: 'ERR_SLUICE_INVALID_LIMIT' });
  });
});
