/**
 * The tokenBudget stage without a server: coded option errors, hostile request bodies (odd or absurd
 * max_tokens, huge and malformed bodies) give a bounded reservation, and the IETF lists are merged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSluiceError } from '../core/errors.js';
import { createTokenLimiter } from '../llm/create-token-limiter.js';
import { MAX_TOKEN_COUNT } from '../llm/usage.js';
import { type HttpOutcome, PASS } from './outcome.js';
import type { RequestAccess } from './request.js';
import { createTokenBudget, maxOutputOf, mergeHeaders } from './token-budget.js';

type Req = { body: unknown };
const access: RequestAccess<Req> & { body(req: Req): unknown } = {
  peer: () => '10.0.0.1',
  header: () => undefined,
  method: () => 'POST',
  url: () => '/v1/chat/completions',
  headers: () => ({}),
  body: (req) => req.body,
};

describe('tokenBudget', () => {
  it('bad options are ERR_SLUICE_INVALID_OPTION at creation', () => {
    const limiter = createTokenLimiter({ totalTokens: { limit: 10, period: '1m' } });
    for (const budget of [
      {},
      { limiter: {} },
      { limiter, provider: 'gemini' },
      { limiter, key: 'x-api-key' },
      { limiter, onSettle: 1 },
      { limiter, defaultMaxOutputTokens: -1 },
      { limiter, defaultMaxOutputTokens: 1.5 },
      { limiter, defaultMaxOutputTokens: MAX_TOKEN_COUNT + 1 },
      null,
    ])
      assert.throws(
        () => createTokenBudget(budget as never, {}, access),
        (e) => isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION'),
        JSON.stringify(budget),
      );
  });

  it('max_tokens: a sane count is reserved, an absurd one capped, anything else falls back', () => {
    assert.equal(maxOutputOf({ max_tokens: 300 }, 4096), 300);
    assert.equal(maxOutputOf({ max_completion_tokens: 7 }, 4096), 7);
    assert.equal(maxOutputOf({ max_output_tokens: 1e15 }, 4096), MAX_TOKEN_COUNT);
    for (const max_tokens of [-5, 1.5, Number.NaN, '300', null, Number.POSITIVE_INFINITY])
      assert.equal(maxOutputOf({ max_tokens }, 4096), 4096, String(max_tokens));
    assert.equal(maxOutputOf('not json', 12), 12);
  });

  it('hostile bodies reserve a bounded amount and never throw', async () => {
    const limiter = createTokenLimiter({ totalTokens: { limit: 1_000_000_000, period: '1m' } });
    const budget = createTokenBudget({ limiter, defaultMaxOutputTokens: 0 }, {}, access);
    const many = { messages: Array.from({ length: 200_000 }, () => ({ role: 'user', content: 'x'.repeat(10) })) };
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 10_000; i++) at = at.a = {} as Record<string, unknown>;
    for (const body of [many, deep, '{"messages": [', new Uint8Array(3_000_000).fill(65), 42, undefined]) {
      const outcome = (await budget.admit({ body }, PASS)) as HttpOutcome;
      assert.equal(outcome.pass, true);
      const left = Number(outcome.headers[outcome.headers.indexOf('x-ratelimit-remaining-tokens') + 1]);
      assert.ok(left >= 1_000_000_000 - MAX_TOKEN_COUNT, `bounded reservation (${left})`);
      await outcome.meter?.end(200, true);
    }
  });

  it("merges the budget's IETF items into the rate limits' lists", () => {
    const merged = mergeHeaders(['ratelimit', '"default";r=9;t=60', 'x-ratelimit-limit', '10'], {
      ratelimit: '"requests";r=59;t=60',
      'x-ratelimit-limit-tokens': '1000',
    });
    assert.deepEqual(merged, [
      'ratelimit',
      '"default";r=9;t=60, "requests";r=59;t=60',
      'x-ratelimit-limit',
      '10',
      'x-ratelimit-limit-tokens',
      '1000',
    ]);
  });
});
