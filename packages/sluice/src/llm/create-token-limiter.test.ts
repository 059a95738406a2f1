/**
 * createTokenLimiter: reserve input + max output on every dimension at once, settle the reported usage,
 * cancel, expiry, coded answers, and the OpenAI-style and IETF headers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { isSluiceError } from '../core/errors.js';
import { createTokenLimiter } from './index.js';

const T0 = 1_700_000_000_000;
const setup = (extra: { onExpire?: 'charge' | 'refund' } = {}) => {
  const clock = createManualClock(T0);
  const limiter = createTokenLimiter({
    requests: { limit: 10, period: '1m' },
    inputTokens: { limit: 1000, period: '1m' },
    outputTokens: { limit: 500, period: '1m' },
    totalTokens: { limit: 1200, period: '1m' },
    clock,
    reservationTtl: '30s',
    ...extra,
  });
  return { clock, limiter };
};
const remaining = (d: { results?: { name: string; decision: { remaining: number } }[] }) =>
  Object.fromEntries((d.results ?? []).map((r) => [r.name, r.decision.remaining]));

describe('createTokenLimiter', () => {
  it('reserves input and max output on every limit, settles the reported usage', async () => {
    const { limiter } = setup();
    const r = await limiter.reserve('key', { inputTokens: 300, maxOutputTokens: 400 });
    assert.equal(r.allowed, true);
    assert.deepEqual(remaining(r.decision), { requests: 9, inputTokens: 700, outputTokens: 100, totalTokens: 500 });
    const s = await r.settle({ inputTokens: 280, outputTokens: 50 });
    assert.ok(s.ok);
    assert.deepEqual(s.refunded, { requests: 0, inputTokens: 20, outputTokens: 350, totalTokens: 370, cost: 0 });
    const next = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 });
    assert.deepEqual(remaining(next.decision), { requests: 8, inputTokens: 720, outputTokens: 450, totalTokens: 870 });
  });

  it('refuses a request over any one limit and takes from none', async () => {
    const { limiter } = setup();
    const r = await limiter.reserve('key', { inputTokens: 100, maxOutputTokens: 501 });
    assert.equal(r.allowed, false);
    // What readUsage can return always settles: two counts at the bound make a total of twice it.
    const most = await limiter.reserve('other key', { inputTokens: 1, maxOutputTokens: 1 });
    assert.ok((await most.settle({ inputTokens: 100_000_000, outputTokens: 100_000_000 })).ok);
    await assert.rejects(limiter.reserve('other key', null as never), (e) =>
      isSluiceError(e, 'ERR_SLUICE_INVALID_COST'),
    );
    const probe = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 });
    assert.deepEqual(remaining(probe.decision), {
      requests: 9,
      inputTokens: 1000,
      outputTokens: 500,
      totalTokens: 1200,
    });
  });

  it('cancel gives everything back, the request too; double settle and unknown ids are coded answers', async () => {
    const { limiter } = setup();
    const r = await limiter.reserve('key', { inputTokens: 100, maxOutputTokens: 100 });
    assert.ok((await r.cancel()).ok);
    assert.equal(
      ((await r.settle({ inputTokens: 1, outputTokens: 1 })) as { code: string }).code,
      'ERR_SLUICE_RESERVATION_SETTLED',
    );
    assert.equal(
      ((await limiter.settle('x', { inputTokens: 1, outputTokens: 1 })) as { code: string }).code,
      'ERR_SLUICE_RESERVATION_UNKNOWN',
    );
    const bad = await limiter.reserve('key', { inputTokens: 1, maxOutputTokens: 1 });
    assert.equal(
      ((await bad.settle({ inputTokens: -5, outputTokens: 1 })) as { code: string }).code,
      'ERR_SLUICE_INVALID_COST',
    );
    // What readUsage can return always settles: two counts at the bound make a total of twice it.
    const most = await limiter.reserve('other key', { inputTokens: 1, maxOutputTokens: 1 });
    assert.ok((await most.settle({ inputTokens: 100_000_000, outputTokens: 100_000_000 })).ok);
    await assert.rejects(limiter.reserve('other key', null as never), (e) =>
      isSluiceError(e, 'ERR_SLUICE_INVALID_COST'),
    );
    const probe = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 });
    assert.equal(remaining(probe.decision).requests, 8);
    await assert.rejects(limiter.reserve('key', { inputTokens: -1, maxOutputTokens: 1 }), (e) =>
      isSluiceError(e, 'ERR_SLUICE_INVALID_COST'),
    );
  });

  it('an unsettled reservation expires: charged by default, refunded when asked', async () => {
    for (const onExpire of ['charge', 'refund'] as const) {
      const { clock, limiter } = setup({ onExpire });
      await limiter.reserve('key', { inputTokens: 100, maxOutputTokens: 100 });
      clock.advance(31_000);
      assert.equal(await limiter.sweep(), 1);
      // What readUsage can return always settles: two counts at the bound make a total of twice it.
      const most = await limiter.reserve('other key', { inputTokens: 1, maxOutputTokens: 1 });
      assert.ok((await most.settle({ inputTokens: 100_000_000, outputTokens: 100_000_000 })).ok);
      await assert.rejects(limiter.reserve('other key', null as never), (e) =>
        isSluiceError(e, 'ERR_SLUICE_INVALID_COST'),
      );
      const probe = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 });
      assert.equal(remaining(probe.decision).totalTokens, onExpire === 'charge' ? 1000 : 1200);
    }
  });

  it('a settle above the reservation takes the whole extra, past the limit if need be: the key owes it', async () => {
    const { clock, limiter } = setup();
    const a = await limiter.reserve('key', { inputTokens: 100, maxOutputTokens: 100 });
    const s = await a.settle({ inputTokens: 100, outputTokens: 450 });
    assert.ok(s.ok && s.charged.outputTokens === 450 && s.extra?.allowed === true);
    const b = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 10 });
    const over = await b.settle({ inputTokens: 0, outputTokens: 200 });
    // 650 output tokens against 500 a minute: 150 owed, every dimension charged at once.
    assert.ok(over.ok && over.charged.outputTokens === 200 && over.charged.totalTokens === 200);
    assert.equal(over.extra?.allowed, false, 'in debt');
    const owedMs = over.extra?.retryAfterMs ?? 0;
    // Fixed windows (the default): a count past the limit is owed until the window ends, 40 s from T0.
    assert.equal(owedMs, 40_000);
    const refused = await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 });
    assert.equal(refused.allowed, false, 'even a request of no output waits out the debt');
    clock.advance(owedMs);
    assert.equal((await limiter.reserve('key', { inputTokens: 0, maxOutputTokens: 0 })).allowed, true);
  });

  it('headers in OpenAI convention beside the IETF fields naming each policy', async () => {
    const { limiter } = setup();
    const r = await limiter.reserve('key', { inputTokens: 100, maxOutputTokens: 100 });
    const h = limiter.headers(r.decision);
    assert.equal(h['x-ratelimit-limit-requests'], '10');
    assert.equal(h['x-ratelimit-remaining-requests'], '9');
    assert.equal(h['x-ratelimit-limit-tokens'], '1200');
    assert.equal(h['x-ratelimit-remaining-tokens'], '1000');
    assert.match(h['x-ratelimit-reset-tokens'] ?? '', /^\d+(m\d+)?s$/);
    assert.equal(
      h['ratelimit-policy'],
      '"requests";q=10;w=60, "input_tokens";q=1000;w=60, "output_tokens";q=500;w=60, "total_tokens";q=1200;w=60',
    );
    assert.match(h.ratelimit ?? '', /^"requests";r=9;t=\d+, "input_tokens";r=900;t=\d+/);
  });

  it('needs at least one limit', () => {
    assert.throws(
      () => createTokenLimiter({}),
      (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION'),
    );
  });
});
