/**
 * createTokenLimiter's `cost` limit (a money budget priced from usage) and hostile settles: huge,
 * negative, fractional and NaN usage, unknown ids and settle floods get coded answers and change nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { isSluiceError } from '../core/errors.js';
import { createTokenLimiter, MAX_TOKEN_COUNT } from './index.js';

const clock = () => createManualClock(1_700_000_000_000);
const left = (d: { results?: { name: string; decision: { remaining: number } }[] }, name: string) =>
  d.results?.find((r) => r.name === name)?.decision.remaining;

describe('createTokenLimiter cost', () => {
  it('per-token prices: reserves the price of input and max output, settles the price of the usage', async () => {
    // Micro-dollars: $3 per million input tokens is 3 a token, $15 per million output is 15.
    const limiter = createTokenLimiter({
      cost: { limit: 100_000, period: '1d', price: { inputTokens: 3, outputTokens: 15 } },
      clock: clock(),
    });
    const r = await limiter.reserve('team', { inputTokens: 1000, maxOutputTokens: 2000 });
    assert.equal(left(r.decision, 'cost'), 100_000 - 3000 - 30_000);
    const s = await r.settle({ inputTokens: 900, outputTokens: 100 });
    assert.ok(s.ok);
    assert.equal(s.charged.cost, 2700 + 1500);
    const probe = await limiter.reserve('team', { inputTokens: 0, maxOutputTokens: 0 });
    assert.equal(left(probe.decision, 'cost'), 100_000 - 4200);
    assert.match(limiter.headers(probe.decision)['ratelimit-policy'] ?? '', /"cost";q=100000;w=86400/);
  });

  it('a price function is rounded up; a budget spent refuses the next request', async () => {
    const limiter = createTokenLimiter({
      requests: { limit: 100, period: '1m' },
      cost: { limit: 10, period: '1h', price: (u) => (u.inputTokens + u.outputTokens) / 1000 },
      clock: clock(),
    });
    const a = await limiter.reserve('k', { inputTokens: 1, maxOutputTokens: 8000 });
    assert.equal(left(a.decision, 'cost'), 10 - 9);
    const b = await limiter.reserve('k', { inputTokens: 1, maxOutputTokens: 8000 });
    assert.equal(b.allowed, false);
    assert.equal(left(b.decision, 'requests'), 99, 'a refused request takes from no limit');
  });

  it('bad prices are coded option errors; a price function answering NaN refuses the reserve', async () => {
    for (const price of [
      undefined,
      { inputTokens: -1, outputTokens: 1 },
      { inputTokens: Number.NaN, outputTokens: 1 },
      5,
    ])
      assert.throws(
        () => createTokenLimiter({ cost: { limit: 1, period: '1m', price: price as never } }),
        (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION'),
      );
    const limiter = createTokenLimiter({ cost: { limit: 9, period: '1m', price: () => Number.NaN } });
    await assert.rejects(limiter.reserve('k', { inputTokens: 1, maxOutputTokens: 1 }), (e) =>
      isSluiceError(e, 'ERR_SLUICE_INVALID_COST'),
    );
  });
});

describe('createTokenLimiter: hostile settles', () => {
  it('huge, negative, fractional, NaN usage and unknown ids are coded answers; the reservation stays open', async () => {
    const limiter = createTokenLimiter({ totalTokens: { limit: 1000, period: '1m' }, clock: clock() });
    const r = await limiter.reserve('k', { inputTokens: 10, maxOutputTokens: 90 });
    for (const usage of [
      { inputTokens: MAX_TOKEN_COUNT + 1, outputTokens: 0 },
      { inputTokens: -1, outputTokens: 0 },
      { inputTokens: 1.5, outputTokens: 0 },
      { inputTokens: Number.NaN, outputTokens: 0 },
      { inputTokens: 1, outputTokens: Number.POSITIVE_INFINITY },
      null,
      'lots',
    ]) {
      const s = await r.settle(usage as never);
      assert.equal(s.ok, false);
      assert.equal((s as { code: string }).code, 'ERR_SLUICE_INVALID_COST', JSON.stringify(usage));
    }
    assert.equal(limiter.outstanding, 1);
    for (const id of ['', 'nope', 'x'.repeat(10_000), '__proto__'])
      assert.equal(
        ((await limiter.settle(id, { inputTokens: 1, outputTokens: 1 })) as { code: string }).code,
        'ERR_SLUICE_RESERVATION_UNKNOWN',
      );
    assert.ok((await r.settle({ inputTokens: 10, outputTokens: 10 })).ok);
  });

  it('a settle flood on one id settles once; the rest are coded answers and charge nothing', async () => {
    const limiter = createTokenLimiter({ totalTokens: { limit: 1000, period: '1m' }, clock: clock() });
    const r = await limiter.reserve('k', { inputTokens: 100, maxOutputTokens: 100 });
    const answers = await Promise.all(
      Array.from({ length: 1000 }, () => limiter.settle(r.id, { inputTokens: 100, outputTokens: 900 })),
    );
    assert.equal(answers.filter((a) => a.ok).length, 1);
    assert.ok(answers.every((a) => a.ok || a.code === 'ERR_SLUICE_RESERVATION_SETTLED'));
    const probe = await limiter.reserve('k', { inputTokens: 0, maxOutputTokens: 0 });
    assert.equal(left(probe.decision, 'totalTokens'), 0, 'charged 1000 once (200 reserved + 800 extra)');
  });
});
